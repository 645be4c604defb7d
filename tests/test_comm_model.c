/* test_comm_model.c — the communication model of `axonn plan --rank-grids` against hand counts:
 * bytes per class of a small model on three grids (every collective of docs/tensor-parallel.md
 * counted by hand below), nothing at all on one rank, Eq. 10's bandwidths on the paper's example,
 * the grid search against a brute-force count of the rules, and machine files: the shipped ones
 * are the built-ins to the bit, bad ones are one error each. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "src/core/error.h"
#include "src/plan/comm_model.h"
#include "src/plan/machine.h"
#include "src/plan/rank_grids.h"
#include "testutil.h"

/* L=2, C=64, NH=4, V=256 (Vp 256), T=16, B=8 sequences, fp32. */
static AxCommSetup small_setup(void) {
  AxCommSetup s = {.model = {.max_seq = 16, .vocab = 256, .padded_vocab = 256, .layers = 2,
                             .heads = 4, .channels = 64},
                   .seq = 16, .batch = 8, .elem_size = 4, .placement_aware = 1};
  return s;
}

/* 4 GPUs a node, 100 GB/s inside, 25 GB/s across. */
static AxMachine test_machine(void) {
  AxMachine m = {.name = "test", .gpus_per_node = 4, .intra_bytes_per_s = 100e9,
                 .inter_bytes_per_s = 25e9};
  return m;
}

static AxCommPrediction predict(const AxCommSetup *s, AxRankGrid g) {
  AxMachine m = test_machine();
  AxCommPrediction p;
  ck_assert_msg(ax_comm_predict(s, &m, &g, &p) == AX_OK, "%s", ax_error_text());
  return p;
}

static void expect_bytes(const AxCommPrediction *p, const unsigned long long want[AX_N_CLASSES]) {
  unsigned long long sum = 0;
  for (int c = 0; c < AX_N_CLASSES; c++) {
    ck_assert_msg(p->class_bytes[c] == want[c], "%s: %llu bytes, expected %llu",
                  ax_comm_class_name(c), p->class_bytes[c], want[c]);
    sum += want[c];
  }
  ck_assert_uint_eq(p->bytes, sum);
}

static void expect_close(double got, double want) {
  ck_assert_msg(fabs(got - want) <= 1e-12 * fabs(want), "%.12g, expected %.12g", got, want);
}

/* Gx = 2 only: every all-reduce over X sends n·e (p = 2). Per block: attproj and fcproj
 * forward, fc and qkv backward, each (N/Gz)·(C/Gy) = 128·64 = 8192 floats = 32768 bytes: 4
 * x 2 blocks; the embedding and the head's backward 32768 each; the loss: all-gather of 128
 * row maxima (512 bytes) and all-reduce of 256 sums (1024). */
START_TEST(x_only) {
  AxCommSetup s = small_setup();
  AxCommPrediction p = predict(&s, (AxRankGrid){1, 2, 1, 1, 1});
  const unsigned long long want[AX_N_CLASSES] = {[AX_CLASS_AR_X] = 8 * 32768 + 2 * 32768 +
                                                                     512 + 1024};
  expect_bytes(&p, want);
  ck_assert_int_eq(p.micro_batch, 8);
  ck_assert_int_eq(p.n_micro, 1);
  expect_close(p.seconds, 329216 / 100e9); /* X inside a node */
}
END_TEST

/* Gx = Gy = Gz = 2: N/Gz = 64 rows; C/Gx = C/Gy = 32; a C x C block shard is 64·64/8 = 512. */
START_TEST(x_y_z) {
  AxCommSetup s = small_setup();
  AxCommPrediction p = predict(&s, (AxRankGrid){1, 2, 2, 2, 1});
  /* Y per block: ln1 and ln2 forward 2 x 64 floats each (4 x 256 bytes), qkv forward 64·96
   * (24576), fc forward 64·128 (32768), fcproj backward 64·128 (32768), ln2 and ln1 backward
   * 128 floats (2 x 512), attproj backward 64·32 (8192); the head: lnf 2 x 256 + 512, logits
   * 64·128 (32768). */
  const unsigned long long y_block = 4 * 256 + 24576 + 32768 + 32768 + 2 * 512 + 8192;
  /* X per block: 4 all-reduces of 64·32 (8192 bytes); embedding and head backward 8192 each;
   * loss: 64 maxima gathered (256), 128 sums (512). */
  const unsigned long long x_block = 4 * 8192;
  /* Z: all-gathers and reduce-scatters send their shard once (p = 2): qkv 1536, attproj 512,
   * fc 2048, fcproj 2048 elements per block, wte 256·64/8 = 2048 once (one stage holds both
   * the embedding and the head). AR_z: the block vectors 6·32 + 96 + 128 = 416, wpe 16·32,
   * lnf 64, the loss's one double. */
  const unsigned long long z_block = (1536 + 512 + 2048 + 2048) * 4;
  const unsigned long long want[AX_N_CLASSES] = {
      [AX_CLASS_AG_Z] = 2 * z_block + 2048 * 4,
      [AX_CLASS_RS_Z] = 2 * z_block + 2048 * 4,
      [AX_CLASS_AR_Y] = 2 * y_block + 512 + 512 + 32768,
      [AX_CLASS_AR_X] = 2 * x_block + 8192 + 8192 + 256 + 512,
      [AX_CLASS_AR_Z] = 2 * 416 * 4 + 512 * 4 + 64 * 4 + 8,
  };
  expect_bytes(&p, want);
  ck_assert_int_eq(p.micro_batch, 8);
}
END_TEST

/* G_inter = 2, Gy = 2, G_data = 2: rows of a data-parallel row 4, micro-batches of 2 (the
 * largest leaving 2 micro-batches), N/Gz = 32 rows, one block a stage. Stage 1 (the head) is
 * the busiest: its data-parallel all-reduce is smaller than stage 0's (no wpe, lnf instead) but
 * it adds the head's all-reduces over Y. */
START_TEST(pipeline_and_data) {
  AxCommSetup s = small_setup();
  AxCommPrediction p = predict(&s, (AxRankGrid){2, 1, 2, 1, 2});
  ck_assert_int_eq(p.micro_batch, 2);
  ck_assert_int_eq(p.n_micro, 2);
  ck_assert_int_eq(p.stage, 1);
  /* Y per block and micro-batch: ln 4 x 128 bytes, qkv 32·192 (24576), fc 32·256 (32768),
   * fcproj backward 32768, ln backward 2 x 256, attproj backward 32·64 (8192); the head per
   * micro-batch: lnf 2 x 128 + 256, logits 32·256 (32768). */
  const unsigned long long y = 2 * (4 * 128 + 24576 + 32768 + 32768 + 2 * 256 + 8192) +
                               2 * (2 * 128 + 256 + 32768);
  /* the block's 12C² / 2 + vectors 6·32 + 7·64, lnf 2·32, the last stage's wte 256·32 */
  const unsigned long long stored = 24576 + 640 + 64 + 8192;
  const unsigned long long want[AX_N_CLASSES] = {
      [AX_CLASS_AR_Y] = y,
      [AX_CLASS_AR_DATA] = stored * 4,
      [AX_CLASS_P2P] = 2 * 32 * 32 * 4, /* gradients back to stage 0, 2 micro-batches */
      [AX_CLASS_TIED] = 8192 * 4,
  };
  expect_bytes(&p, want);
  /* Y, pipe and tied inside a node (2·2 <= 4); data: 8 > 4, so 25 GB/s / min(4, 4) */
  double intra = (double)(y + want[AX_CLASS_P2P] + want[AX_CLASS_TIED]) / 100e9;
  expect_close(p.seconds, intra + (double)want[AX_CLASS_AR_DATA] / (25e9 / 4));
}
END_TEST

/* With checkpointing the blocks' forward all-reduces run twice; their all-gathers too, unless
 * the cache keeps the gathered weights. */
START_TEST(checkpointing_repeats_the_forward) {
  AxCommSetup s = small_setup();
  AxRankGrid g = {1, 2, 2, 2, 1};
  AxCommPrediction plain = predict(&s, g);
  s.checkpoint = 1;
  AxCommPrediction twice = predict(&s, g);
  s.ag_cache = 1;
  AxCommPrediction cached = predict(&s, g);
  const unsigned long long ag_blocks = 2 * (1536 + 512 + 2048 + 2048) * 4;
  ck_assert_uint_eq(twice.class_bytes[AX_CLASS_AG_Z], plain.class_bytes[AX_CLASS_AG_Z] + ag_blocks);
  ck_assert_uint_eq(cached.class_bytes[AX_CLASS_AG_Z], plain.class_bytes[AX_CLASS_AG_Z]);
  ck_assert_uint_eq(cached.class_bytes[AX_CLASS_RS_Z], plain.class_bytes[AX_CLASS_RS_Z]);
  /* forward over X per block: attproj and fcproj, 8192 bytes each, once more */
  ck_assert_uint_eq(cached.class_bytes[AX_CLASS_AR_X], plain.class_bytes[AX_CLASS_AR_X] +
                                                           2 * 2 * 8192);
}
END_TEST

/* The cache keeps the gathered weights for the step's later micro-batches: with 4 micro-batches
 * a step the blocks' and wte's all-gathers run once a step, a quarter of the bytes. */
START_TEST(cache_gathers_once_a_step) {
  AxCommSetup s = small_setup();
  s.micro_batch = 2;
  AxRankGrid g = {1, 2, 2, 2, 1};
  AxCommPrediction plain = predict(&s, g);
  s.ag_cache = 1;
  AxCommPrediction cached = predict(&s, g);
  ck_assert_int_eq(plain.n_micro, 4);
  ck_assert_uint_gt(cached.class_bytes[AX_CLASS_AG_Z], 0);
  ck_assert_uint_eq(plain.class_bytes[AX_CLASS_AG_Z], 4 * cached.class_bytes[AX_CLASS_AG_Z]);
  ck_assert_uint_eq(cached.class_bytes[AX_CLASS_RS_Z], plain.class_bytes[AX_CLASS_RS_Z]);
}
END_TEST

START_TEST(one_rank_sends_nothing) {
  AxCommSetup s = small_setup();
  AxCommPrediction p = predict(&s, (AxRankGrid){1, 1, 1, 1, 1});
  ck_assert_int_eq(p.n_entries, 0);
  ck_assert_uint_eq(p.bytes, 0);
  ck_assert(p.seconds == 0);
  for (int c = 0; c < AX_N_CLASSES; c++) ck_assert(p.class_seconds[c] == 0);
}
END_TEST

/* An all-reduce whose count the group does not divide: the busiest rank's bytes of the ring
 * (collectives.h: rank r sends 2n - |seg r+1| - |seg r+2|). LayerNorm's row sums over Gy = 4 with
 * N/Gz = 6 rows (T = 6, one sequence): segments 2, 2, 1, 1; rank 0 sends 12 - 2 - 1 = 9 floats,
 * rank 1 12 - 1 - 1 = 10 (the most), rank 2 9, rank 3 8. */
START_TEST(uneven_allreduce_takes_the_busiest_rank) {
  AxCommSetup s = small_setup();
  s.seq = s.model.max_seq = 6;
  s.batch = 1;
  AxCommPrediction p = predict(&s, (AxRankGrid){1, 1, 4, 1, 1});
  int found = 0;
  for (int i = 0; i < p.n_entries; i++)
    if (!strcmp(p.entries[i].name, "AR_y ln1 fwd")) {
      ck_assert_uint_eq(p.entries[i].elems, 6);
      ck_assert_uint_eq(p.entries[i].calls, 4); /* twice a block, 2 blocks */
      ck_assert_uint_eq(p.entries[i].bytes, 4 * 10 * 4);
      found = 1;
    }
  ck_assert(found);
}
END_TEST

/* The paper's example (§V-B): Gx = Gy = Gz = G_data = 2 on nodes of 4 GPUs. X (2) and Y (4)
 * fit in a node; Z spans two nodes with 4 rings crossing: beta_inter / min(4, 4); so does data
 * (levels below: 2·2·2 = 8, capped at 4). Placement-agnostic: beta_inter everywhere. */
START_TEST(eq10_bandwidths) {
  AxMachine m = test_machine();
  AxRankGrid g = {1, 2, 2, 2, 2};
  double beta[AX_N_GROUPS];
  ax_comm_bandwidths(&m, &g, 1, beta);
  expect_close(beta[AX_GROUP_X], 100e9);
  expect_close(beta[AX_GROUP_Y], 100e9);
  expect_close(beta[AX_GROUP_Z], 25e9 / 4);
  expect_close(beta[AX_GROUP_DATA], 25e9 / 4);
  /* one group across nodes with nothing below it: the whole inter-node bandwidth */
  g = (AxRankGrid){1, 1, 1, 8, 1};
  ax_comm_bandwidths(&m, &g, 1, beta);
  expect_close(beta[AX_GROUP_Z], 25e9);
  /* two rings crossing: half */
  g = (AxRankGrid){1, 2, 1, 4, 1};
  ax_comm_bandwidths(&m, &g, 1, beta);
  expect_close(beta[AX_GROUP_Z], 25e9 / 2);
  ax_comm_bandwidths(&m, &g, 0, beta);
  for (int k = 0; k < AX_N_GROUPS; k++) expect_close(beta[k], 25e9);
}
END_TEST

/* The rules of docs/tensor-parallel.md, written out again for the brute-force count. */
static int valid_by_hand(const AxCommSetup *s, int P, int x, int y, int z, int d) {
  const int C = s->model.channels, Vp = s->model.padded_vocab, NH = s->model.heads;
  if (P > s->model.layers || C % x || C % y || NH % x) return 0;
  if ((3 * C / x) % z || (4 * C / x) % z || (C / y) % z) return 0;
  if (Vp % x || (Vp / x) % z) return 0;
  if (s->batch % d || (s->batch / d) % z) return 0;
  return 1;
}

static int count_by_hand(const AxCommSetup *s, int ranks) {
  int n = 0;
  for (int P = 1; P <= ranks; P++)
    for (int x = 1; x <= ranks; x++)
      for (int y = 1; y <= ranks; y++)
        for (int z = 1; z <= ranks; z++)
          for (int d = 1; d <= ranks; d++)
            if ((long long)P * x * y * z * d == ranks) n += valid_by_hand(s, P, x, y, z, d);
  return n;
}

START_TEST(grid_search_lists_exactly_the_valid_grids) {
  AxGridQuery q = {.setup = small_setup(), .machine = test_machine(), .ranks = 16};
  q.setup.model.heads = 2; /* Gx of 4 and more breaks the heads rule */
  AxRankGridList l;
  ck_assert_int_eq(ax_rank_grids(&q, &l), AX_OK);
  ck_assert_int_eq(l.n, count_by_hand(&q.setup, 16));
  ck_assert_int_lt(l.n, l.n_considered); /* some grids broke a rule */
  for (int i = 0; i < l.n; i++) {
    const AxRankGrid *g = &l.grids[i].comm.grid;
    ck_assert_int_eq(g->inter * g->x * g->y * g->z * g->data, 16);
    ck_assert(valid_by_hand(&q.setup, g->inter, g->x, g->y, g->z, g->data));
    if (i) ck_assert(l.grids[i - 1].step_s <= l.grids[i].step_s);
  }
  ax_rank_grids_free(&l);
  /* 7 ranks, a prime: every grid puts all 7 on one dimension, and 7 divides none of C, the 2
   * layers, the heads, the vocabulary or the batch of 8 */
  q.ranks = 7;
  ck_assert_int_eq(ax_rank_grids(&q, &l), AX_ERR);
  ck_assert_ptr_nonnull(strstr(ax_error_text(), "no grid of 7 ranks"));
  ax_error_clear();
}
END_TEST

START_TEST(shipped_machine_files_are_the_builtins) {
  static const char *const names[] = {"summit", "perlmutter", "frontier", "h100"};
  for (int i = 0; i < 4; i++) {
    char path[128];
    snprintf(path, sizeof path, "data/machines/%s.machine", names[i]);
    AxMachine built, loaded;
    ck_assert_int_eq(ax_machine_builtin(names[i], &built), AX_OK);
    ck_assert_msg(ax_machine_load(path, &loaded) == AX_OK, "%s", ax_error_text());
    ck_assert_str_eq(loaded.name, built.name);
    ck_assert_int_eq(loaded.gpus_per_node, built.gpus_per_node);
    ck_assert(loaded.intra_bytes_per_s == built.intra_bytes_per_s);
    ck_assert(loaded.inter_bytes_per_s == built.inter_bytes_per_s);
    ck_assert(loaded.latency_s == built.latency_s);
    ck_assert_str_eq(loaded.device, built.device);
    ck_assert(loaded.host_bytes_per_s == built.host_bytes_per_s);
    ck_assert(loaded.host_link_bytes_per_s == built.host_link_bytes_per_s &&
              built.host_link_bytes_per_s > 0);
    ck_assert(loaded.peak_tflops == built.peak_tflops && loaded.efficiency == built.efficiency);
    ck_assert(loaded.device_memory_bytes == built.device_memory_bytes &&
              built.device_memory_bytes > 0);
  }
  AxMachine p;
  ck_assert_int_eq(ax_machine_resolve("perlmutter", &p), AX_OK);
  ck_assert_int_eq(p.gpus_per_node, 4);
  ck_assert(p.intra_bytes_per_s == 100e9 && p.inter_bytes_per_s == 25e9);
}
END_TEST

static void expect_bad_file(const char *text, const char *needle) {
  const char *path = tu_path("bad.machine");
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  fclose(f);
  AxMachine m;
  ck_assert_int_eq(ax_machine_resolve(path, &m), AX_ERR);
  ck_assert_msg(strstr(ax_error_text(), needle) != NULL, "error '%s' lacks '%s'",
                ax_error_text(), needle);
  ax_error_clear();
}

START_TEST(bad_machine_files_are_one_error) {
  const char *good = "name = m\ngpus_per_node = 4\nintra_bw = 100GB/s\ninter_bw = 10Gbps\n";
  AxMachine m;
  char text[256];
  expect_bad_file("name = m\ngpus_per_node = 4\nintra_bw = 100GB/s\n", "no 'inter_bw");
  snprintf(text, sizeof text, "%scolour = blue\n", good);
  expect_bad_file(text, "unknown option --colour");
  expect_bad_file("name = m\ngpus_per_node = four\nintra_bw = 1GB/s\ninter_bw = 1GB/s\n",
                  "expects an integer");
  expect_bad_file("name = m\ngpus_per_node = 0\nintra_bw = 1GB/s\ninter_bw = 1GB/s\n",
                  "out of range");
  expect_bad_file("name = m\ngpus_per_node = 4\nintra_bw = fast\ninter_bw = 1GB/s\n",
                  "intra_bw: 'fast' is not a bandwidth");
  snprintf(text, sizeof text, "%slatency = 5\n", good);
  expect_bad_file(text, "latency '5' has no unit");
  snprintf(text, sizeof text, "%sdevice = TPU\n", good);
  expect_bad_file(text, "device 'TPU' is not one of");
  snprintf(text, sizeof text, "%sefficiency = 1.5\n", good);
  expect_bad_file(text, "out of range");
  snprintf(text, sizeof text, "%shost_link_bw = 8\n", good);
  expect_bad_file(text, "host_link_bw");
  snprintf(text, sizeof text, "%sdevice_mem_bw = fast\n", good);
  expect_bad_file(text, "device_mem_bw: 'fast' is not a bandwidth");
  ck_assert_int_eq(ax_machine_resolve("/nonexistent/m.machine", &m), AX_ERR);
  ck_assert_ptr_nonnull(strstr(ax_error_text(), "unknown machine"));
  ax_error_clear();
  ck_assert_int_eq(ax_machine_load("/nonexistent/m.machine", &m), AX_ERR);
  ck_assert_ptr_nonnull(strstr(ax_error_text(), "cannot open"));
  ax_error_clear();
  /* and a good one with a latency */
  const char *path = tu_path("good.machine");
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fprintf(f, "%slatency = 2us\n", good);
  fclose(f);
  ck_assert_int_eq(ax_machine_load(path, &m), AX_OK);
  ck_assert(m.inter_bytes_per_s == 10e9 / 8 && fabs(m.latency_s - 2e-6) < 1e-18);
}
END_TEST

int main(void) {
  Suite *s = suite_create("comm_model");
  TCase *tc = tu_tcase(s, "comm_model", 30);
  tcase_add_test(tc, x_only);
  tcase_add_test(tc, x_y_z);
  tcase_add_test(tc, pipeline_and_data);
  tcase_add_test(tc, checkpointing_repeats_the_forward);
  tcase_add_test(tc, cache_gathers_once_a_step);
  tcase_add_test(tc, one_rank_sends_nothing);
  tcase_add_test(tc, uneven_allreduce_takes_the_busiest_rank);
  tcase_add_test(tc, eq10_bandwidths);
  tcase_add_test(tc, grid_search_lists_exactly_the_valid_grids);
  tcase_add_test(tc, shipped_machine_files_are_the_builtins);
  tcase_add_test(tc, bad_machine_files_are_one_error);
  int rc = tu_run(s);
  tu_cleanup();
  return rc;
}
