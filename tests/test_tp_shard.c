/* test_tp_shard.c — the tensor-parallel shard map (models/tp_shard.h) on every grid with Gx, Gy,
 * Gz in {1, 2} and 4 x 1 x 1: on 1 x 1 x 1 the layout is the stage layout and the copy the
 * identity; on every grid the shards of all ranks put back together are the whole stage, each
 * rank's shard sits where its replicas' do (same values), and the ranks that count a tensor
 * (ax_tp_param_counted) cover every element exactly once; each matrix's row length is its
 * shard's and the layout names the groups that replicate a tensor; the replicas' CRCs
 * (ax_tp_replica_crcs) agree over those groups and tell a changed copy apart. Refusals of grids
 * that do not fit. */
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

/* Each matrix's row length is its shard's (w[OC, IC]: IC over Y for qkvw, fcw, wte and wpe, over
 * X for the transposed attprojw and fcprojw); vectors none; the groups of more than one rank
 * that replicate each tensor. */
static void check_cols_and_replicas(const int size[3], const AxStageLayout *mine) {
  const size_t C = (size_t)MODEL.channels, Cx = C / (size_t)size[0], Cy = C / (size_t)size[1];
  const size_t want[AX_N_PARAMS] = {[AX_P_WTE] = Cy, [AX_P_WPE] = Cy, [AX_P_QKVW] = Cy,
                                    [AX_P_ATTPROJW] = Cx, [AX_P_FCW] = Cy,
                                    [AX_P_FCPROJW] = 4 * Cx};
  for (int id = 0; id < AX_N_PARAMS; id++) {
    if (!mine->has[id]) continue;
    ck_assert_msg(mine->cols[id] == want[id], "%dx%dx%d: %s rows of %zu, not %zu", size[0],
                  size[1], size[2], ax_param_name(id), mine->cols[id], want[id]);
    unsigned rep = 0;
    for (int g = 0; g < 3; g++)
      if (size[g] > 1) rep |= ax_tp_param_replicas(id) & (1u << g);
    ck_assert_uint_eq(mine->replicas[id], rep);
  }
}

static void check_grid(const int size[3], int first, int last) {
  AxStageLayout whole;
  ax_stage_layout(&whole, &MODEL, 0, 2, first, last);
  int ranks = size[0] * size[1] * size[2];
  float *w = tu_zeros(whole.total), *back = tu_zeros(whole.total);
  float *covered = tu_zeros(whole.total), *counted = tu_zeros(whole.total);
  AxTpComm lead = rank_of(size, 0);
  AxStageLayout lead_layout;
  ax_tp_stage_layout(&lead_layout, &MODEL, 0, 2, first, last, &lead);
  check_cols_and_replicas(size, &lead_layout);
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

/* Whether ranks a and b differ only in coordinates of groups in `mask`. */
static int differ_within(const AxTpComm *a, const AxTpComm *b, unsigned mask) {
  for (int g = 0; g < 3; g++)
    if (a->coord[g] != b->coord[g] && !(mask >> g & 1u)) return 0;
  return 1;
}

/* On 2 x 2 x 2, every rank's shards of one whole stage: a replicated tensor's CRC is the same on
 * the ranks of each group replicating it; changed on one rank, that rank's CRC differs. */
START_TEST(replica_crcs_say_replicas_are_alike) {
  const int size[3] = {2, 2, 2};
  AxStageLayout whole, mine;
  ax_stage_layout(&whole, &MODEL, 0, 2, 1, 1);
  float *w = tu_random(whole.total, 1.0f, 5);
  uint32_t crc[8][AX_N_PARAMS] = {{0}};
  float *shards[8];
  for (int r = 0; r < 8; r++) {
    AxTpComm c = rank_of(size, r);
    ax_tp_stage_layout(&mine, &MODEL, 0, 2, 1, 1, &c);
    shards[r] = tu_zeros(mine.total);
    ax_tp_shard_copy(&MODEL, &whole, &mine, &c, w, shards[r], AX_TP_EXTRACT);
    ax_tp_replica_crcs(&mine, shards[r], crc[r]);
  }
  int pairs = 0;
  for (int id = 0; id < AX_N_PARAMS; id++) {
    if (!ax_tp_param_replicas(id)) {
      ck_assert_uint_eq(crc[0][id], 0); /* not replicated: not fed */
      continue;
    }
    for (int a = 0; a < 8; a++)
      for (int b = a + 1; b < 8; b++) {
        AxTpComm ca = rank_of(size, a), cb = rank_of(size, b);
        if (!differ_within(&ca, &cb, ax_tp_param_replicas(id))) continue;
        ck_assert_msg(crc[a][id] == crc[b][id], "%s: ranks %d and %d differ", ax_param_name(id),
                      a, b);
        pairs++;
      }
  }
  ck_assert_int_gt(pairs, 0);
  /* rank 5 (x 1, y 0, z 1) and rank 0 (x 0, y 0, z 0) replicate wpe (over X and Z) */
  uint32_t changed[AX_N_PARAMS] = {0};
  shards[5][mine.offset[AX_P_WPE] + 3] += 1.0f;
  ax_tp_replica_crcs(&mine, shards[5], changed);
  ck_assert_uint_ne(changed[AX_P_WPE], crc[0][AX_P_WPE]);
  ck_assert_uint_eq(changed[AX_P_LN1W], crc[5][AX_P_LN1W]);
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
  tcase_add_test(tc, replica_crcs_say_replicas_are_alike);
  return tu_run(s);
}
