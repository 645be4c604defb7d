/* test_tp_shard.c — the tensor-parallel shard map (models/tp_shard.h) on every grid with Gx, Gy,
 * Gz in {1, 2} and 4 x 1 x 1: on 1 x 1 x 1 the layout is the stage layout and the copy the
 * identity; on every grid the shards of all ranks put back together are the whole stage, each
 * rank's shard sits where its replicas' do (same values), and the ranks that count a tensor
 * (ax_tp_param_counted) cover every element exactly once. Refusals of grids that do not fit. */
#include <string.h>

#include "models/tp_shard.h"
#include "src/core/error.h"
#include "testutil.h"

/* L=2, C=16, NH=4, V=100 (Vp 128), maxT=8; stage of blocks [0, 2) with embedding and head. */
static const AxGptConfig MODEL = {.max_seq = 8, .vocab = 100, .padded_vocab = 128, .layers = 2,
                                  .heads = 4, .channels = 16};

static AxTpComm rank_of(const int size[3], int index) {
  AxTpComm c = {.size = {size[0], size[1], size[2]}};
  c.coord[0] = index % size[0];
  c.coord[1] = index / size[0] % size[1];
  c.coord[2] = index / (size[0] * size[1]);
  return c;
}

START_TEST(one_rank_is_the_identity) {
  AxStageLayout whole, mine;
  AxTpComm solo = {.size = {1, 1, 1}};
  ax_stage_layout(&whole, &MODEL, 0, 2, 1, 1);
  ax_tp_stage_layout(&mine, &MODEL, 0, 2, 1, 1, &solo);
  ck_assert(memcmp(&whole, &mine, sizeof whole) == 0);
  float *w = tu_random(whole.total, 1.0f, 3), *s = tu_zeros(whole.total);
  ax_tp_shard_copy(&MODEL, &whole, &mine, &solo, w, s, AX_TP_EXTRACT);
  ck_assert(memcmp(w, s, whole.total * sizeof *w) == 0);
}
END_TEST

static void check_grid(const int size[3], int first, int last) {
  AxStageLayout whole;
  ax_stage_layout(&whole, &MODEL, 0, 2, first, last);
  int ranks = size[0] * size[1] * size[2];
  float *w = tu_zeros(whole.total), *back = tu_zeros(whole.total);
  float *covered = tu_zeros(whole.total), *counted = tu_zeros(whole.total);
  AxTpComm lead = rank_of(size, 0);
  AxStageLayout lead_layout;
  ax_tp_stage_layout(&lead_layout, &MODEL, 0, 2, first, last, &lead);
  for (size_t i = 0; i < whole.total; i++) w[i] = (float)(i + 1);
  for (int r = 0; r < ranks; r++) {
    AxTpComm c = rank_of(size, r);
    AxStageLayout mine;
    ax_tp_stage_layout(&mine, &MODEL, 0, 2, first, last, &c);
    ck_assert_msg(memcmp(&mine, &lead_layout, sizeof mine) == 0,
                  "%dx%dx%d: rank %d's shard layout differs from rank 0's", size[0], size[1],
                  size[2], r);
    float *s = tu_zeros(mine.total + 1), *ones = tu_zeros(mine.total + 1);
    ax_tp_shard_copy(&MODEL, &whole, &mine, &c, w, s, AX_TP_EXTRACT);
    ax_tp_shard_copy(&MODEL, &whole, &mine, &c, back, s, AX_TP_INSERT);
    for (size_t i = 0; i < mine.total; i++) ones[i] = 1.0f;
    float *place = tu_zeros(whole.total);
    ax_tp_shard_copy(&MODEL, &whole, &mine, &c, place, ones, AX_TP_INSERT);
    for (size_t i = 0; i < whole.total; i++) covered[i] += place[i];
    for (int id = 0; id < AX_N_PARAMS; id++) {
      if (!whole.has[id] || !ax_tp_param_counted(&c, id)) continue;
      for (size_t i = whole.offset[id]; i < whole.offset[id] + whole.count[id]; i++)
        counted[i] += place[i];
    }
  }
  for (int id = 0; id < AX_N_PARAMS; id++) {
    if (!whole.has[id]) continue;
    unsigned rep = ax_tp_param_replicas(id);
    int copies = 1;
    for (int g = 0; g < 3; g++)
      if (rep >> g & 1u) copies *= size[g];
    for (size_t i = whole.offset[id]; i < whole.offset[id] + whole.count[id]; i++) {
      ck_assert_msg(back[i] == w[i], "%dx%dx%d: %s element %zu not put back", size[0], size[1],
                    size[2], ax_param_name(id), i - whole.offset[id]);
      ck_assert_msg(covered[i] == (float)copies, "%dx%dx%d: %s element %zu held %g times, not %d",
                    size[0], size[1], size[2], ax_param_name(id), i - whole.offset[id],
                    (double)covered[i], copies);
      ck_assert_msg(counted[i] == 1.0f, "%dx%dx%d: %s element %zu counted %g times", size[0],
                    size[1], size[2], ax_param_name(id), i - whole.offset[id],
                    (double)counted[i]);
    }
  }
}

START_TEST(every_grid_partitions_the_stage) {
  static const int grids[][3] = {{1, 1, 1}, {2, 1, 1}, {1, 2, 1}, {1, 1, 2}, {2, 2, 1},
                                 {2, 1, 2}, {1, 2, 2}, {2, 2, 2}, {4, 1, 1}, {1, 4, 2}};
  for (size_t g = 0; g < sizeof grids / sizeof *grids; g++) {
    check_grid(grids[g], 1, 1);
    check_grid(grids[g], 1, 0);
    check_grid(grids[g], 0, 1);
  }
}
END_TEST

static void expect_refused(int gx, int gy, int gz, int B, const char *words) {
  AxTpComm c = {.size = {gx, gy, gz}};
  ck_assert_int_eq(ax_tp_stage_check(&MODEL, &c, B), AX_ERR);
  ck_assert_msg(strstr(ax_error_message(), words), "%dx%dx%d: expected '%s' in: %s", gx, gy, gz,
                words, ax_error_message());
  ax_error_clear();
}

START_TEST(grids_that_do_not_fit_are_refused) {
  expect_refused(8, 1, 1, 2, "heads");
  expect_refused(1, 32, 1, 2, "hidden");
  expect_refused(1, 1, 2, 3, "sequences");
  AxGptConfig odd = MODEL;
  odd.padded_vocab = 130;
  AxTpComm c = {.size = {2, 1, 2}};
  ck_assert_int_eq(ax_tp_stage_check(&odd, &c, 2), AX_ERR);
  ck_assert_msg(strstr(ax_error_message(), "vocabulary"), "%s", ax_error_message());
  ax_error_clear();
  AxTpComm fits = {.size = {2, 2, 2}};
  ck_assert_int_eq(ax_tp_stage_check(&MODEL, &fits, 2), AX_OK);
}
END_TEST

int main(void) {
  Suite *s = suite_create("tp_shard");
  TCase *tc = tu_tcase(s, "shard map", 60);
  tcase_add_test(tc, one_rank_is_the_identity);
  tcase_add_test(tc, every_grid_partitions_the_stage);
  tcase_add_test(tc, grids_that_do_not_fit_are_refused);
  return tu_run(s);
}
