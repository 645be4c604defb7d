/* test_rank_grids_fit.c — what `axonn plan --rank-grids` ranks besides communication: each
 * grid's device memory per rank (the trainer's own plan, src/train/train_plan_grid.h) against
 * counts by hand, a grid over the machine's device memory listed apart with its reason and not
 * ranked, the optimizer counted only on the device, the pipeline's bubble, and the tie rule. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "offload/device_opt.h"
#include "src/core/error.h"
#include "src/plan/rank_grids.h"
#include "src/train/train_plan_grid.h"
#include "testutil.h"

/* L=2, C=64, NH=4, V=256 (Vp 256), T=16, B=8 sequences, fp32, 2 sequences a micro-batch. */
static AxCommSetup small_setup(void) {
  AxCommSetup s = {.model = {.max_seq = 16, .vocab = 256, .padded_vocab = 256, .layers = 2,
                             .heads = 4, .channels = 64},
                   .seq = 16, .batch = 8, .micro_batch = 2, .elem_size = 4,
                   .placement_aware = 1};
  return s;
}

/* parameters by hand: a block 12C^2 + 13C (LayerNorms 4C, qkv 3C^2 + 3C, projection C^2 + C,
 * fc 4C^2 + 4C, fc projection 4C^2 + C) */
enum { C = 64, BLOCK = 12 * C * C + 13 * C, WTE = 256 * C, WPE = 16 * C, LNF = 2 * C };
enum { ALL = WTE + WPE + 2 * BLOCK + LNF };

static AxGridMemory memory_of(AxPlanGridCtx *ctx, const AxCommSetup *s, AxRankGrid g) {
  AxGridMemory m;
  ck_assert_msg(ax_plan_grid_memory(ctx, s, &g, s->micro_batch, &m) == AX_OK, "%s",
                ax_error_text());
  return m;
}

/* one rank of 1x1x1x1x2 holds the whole model; the stages of 2x1x1x1x1 split it */
START_TEST(memory_per_rank_by_hand) {
  AxCommSetup s = small_setup();
  AxPlanGridCtx ctx;
  ck_assert_int_eq(ax_plan_grid_ctx_init(&ctx, &s, 0), AX_OK);
  AxGridMemory data = memory_of(&ctx, &s, (AxRankGrid){1, 1, 1, 1, 2});
  ck_assert_double_eq(data.weights, 4.0 * ALL);
  ck_assert_double_eq(data.grads, 4.0 * ALL);
  ck_assert_double_eq(data.optimizer, 0); /* host by default */
  ck_assert(data.act > 0);
  ck_assert_double_eq(data.total, data.weights + data.grads + data.act);
  AxGridMemory pipe = memory_of(&ctx, &s, (AxRankGrid){2, 1, 1, 1, 1});
  ck_assert(pipe.weights < data.weights && pipe.weights >= 4.0 * (BLOCK + LNF));
  ax_plan_grid_ctx_free(&ctx);
  /* --optimizer device: two fp32 Adam moments beside the fp32 weights (their own master) */
  ck_assert_int_eq(ax_plan_grid_ctx_init(&ctx, &s, 1), AX_OK);
  AxGridMemory dev = memory_of(&ctx, &s, (AxRankGrid){1, 1, 1, 1, 2});
  ck_assert_double_eq(dev.optimizer, (double)ax_device_opt_bytes(ALL, 4, 0));
  ck_assert(dev.optimizer >= 8.0 * ALL && dev.optimizer <= 8.0 * ALL * 1.05); /* + padding */
  ck_assert_double_eq(dev.total, data.total + dev.optimizer);
  ax_plan_grid_ctx_free(&ctx);
}
END_TEST

static AxGridQuery query(AxPlanGridCtx *ctx, int ranks) {
  AxGridQuery q = {.setup = small_setup(), .ranks = ranks, .memory = ax_plan_grid_memory,
                   .memory_ctx = ctx, .flops_per_s = 1e12};
  q.machine = (AxMachine){.name = "test", .gpus_per_node = 4, .intra_bytes_per_s = 100e9,
                          .inter_bytes_per_s = 25e9};
  return q;
}

static int find(const AxGridEstimate *list, int n, AxRankGrid g) {
  for (int i = 0; i < n; i++)
    if (!memcmp(&list[i].comm.grid, &g, sizeof g)) return i;
  return -1;
}

/* device memory between the two grids' needs: 1x1x2x1x1 (weights split over Y) fits,
 * 1x1x1x1x2 (the whole model a rank) does not, and is listed apart saying why */
START_TEST(a_grid_over_device_memory_is_listed_apart) {
  AxCommSetup s = small_setup();
  AxPlanGridCtx ctx;
  ck_assert_int_eq(ax_plan_grid_ctx_init(&ctx, &s, 0), AX_OK);
  AxGridQuery q = query(&ctx, 2);
  const AxRankGrid whole = {1, 1, 1, 1, 2}, split = {1, 1, 2, 1, 1};
  AxGridMemory mw = memory_of(&ctx, &s, whole), ms = memory_of(&ctx, &s, split);
  ck_assert(ms.total < mw.total);
  q.machine.device_memory_bytes = (ms.total + mw.total) / 2;
  AxRankGridList l;
  ck_assert_msg(ax_rank_grids(&q, &l) == AX_OK, "%s", ax_error_text());
  ck_assert_int_ge(find(l.grids, l.n, split), 0);
  ck_assert_int_lt(find(l.grids, l.n, whole), 0);
  int u = find(l.unfit, l.n_unfit, whole);
  ck_assert_int_ge(u, 0);
  char want[64];
  snprintf(want, sizeof want, "%.1f GB a rank > %.1f GB of device memory", mw.total / 1e9,
           q.machine.device_memory_bytes / 1e9);
  ck_assert_msg(strstr(l.unfit[u].unfit, want), "'%s' lacks '%s'", l.unfit[u].unfit, want);
  for (int i = 0; i < l.n; i++) ck_assert(l.grids[i].mem.total <= q.machine.device_memory_bytes);
  ax_rank_grids_free(&l);
  /* no device memory figure: nothing excluded */
  q.machine.device_memory_bytes = 0;
  ck_assert_int_eq(ax_rank_grids(&q, &l), AX_OK);
  ck_assert_int_eq(l.n_unfit, 0);
  ck_assert_int_ge(find(l.grids, l.n, whole), 0);
  ax_rank_grids_free(&l);
  ax_plan_grid_ctx_free(&ctx);
}
END_TEST

/* step = communication + compute + bubble, the bubble (P - 1) / m of the compute (the share of it
 * that costs on a CPU machine with fewer cores than ranks a node below) */
START_TEST(the_bubble_and_compute_are_priced) {
  AxCommSetup s = small_setup();
  AxPlanGridCtx ctx;
  ck_assert_int_eq(ax_plan_grid_ctx_init(&ctx, &s, 0), AX_OK);
  AxGridQuery q = query(&ctx, 2);
  AxGridEstimate e;
  ck_assert_int_eq(ax_rank_grid_estimate(&q, &(AxRankGrid){2, 1, 1, 1, 1}, &e), AX_OK);
  double flops = ax_gpt_train_flops(&s.model, 8, 16, 0);
  ck_assert_double_eq_tol(e.compute_s, flops / 2 / 1e12, 1e-15);
  ck_assert_int_eq(e.comm.n_micro, 4); /* 8 sequences in micro-batches of 2 */
  ck_assert_double_eq_tol(e.bubble_s, e.compute_s * 1 / 4, 1e-15);
  ck_assert_double_eq(e.step_s, e.comm.seconds + e.compute_s + e.bubble_s);
  ck_assert_int_eq(ax_rank_grid_estimate(&q, &(AxRankGrid){1, 1, 1, 1, 2}, &e), AX_OK);
  ck_assert_double_eq(e.bubble_s, 0);
  /* a CPU machine whose node's ranks outnumber its cores: a waiting stage's core goes to the
   * others; 2 ranks a node on 1 core, no bubble; 3 on 2, half of it; a core a rank, all */
  const struct { int ranks, cores; double share; } cpu[] = {{2, 1, 0}, {3, 2, 0.5}, {2, 2, 1},
                                                           {2, 0, 1}, {8, 2, 0}};
  for (size_t i = 0; i < sizeof cpu / sizeof cpu[0]; i++) {
    q.machine.gpus_per_node = cpu[i].ranks;
    q.machine.cores_per_node = cpu[i].cores;
    ck_assert_double_eq(ax_rank_grids_bubble_share(&q.machine), cpu[i].share);
    ck_assert_int_eq(ax_rank_grid_estimate(&q, &(AxRankGrid){2, 1, 1, 1, 1}, &e), AX_OK);
    ck_assert_double_eq_tol(e.bubble_s, e.compute_s / 4 * cpu[i].share, 1e-15);
  }
  ax_plan_grid_ctx_free(&ctx);
}
END_TEST

static AxGridEstimate est(double step, double mem, AxRankGrid g) {
  AxGridEstimate e;
  memset(&e, 0, sizeof e);
  e.step_s = step;
  e.mem.total = mem;
  e.comm.grid = g;
  return e;
}

/* faster first; step times within 1e-9 relative tie: less memory first, then grid order */
START_TEST(tie_rule) {
  const AxRankGrid a = {1, 2, 1, 1, 4}, b = {1, 1, 2, 1, 4};
  AxGridEstimate fast = est(1.0, 9e9, a), slow = est(1.0 + 1e-6, 1e9, b);
  ck_assert_int_lt(ax_rank_grid_compare(&fast, &slow), 0);
  AxGridEstimate lean = est(1.0 + 1e-12, 1e9, a), fat = est(1.0, 2e9, b);
  ck_assert_int_lt(ax_rank_grid_compare(&lean, &fat), 0); /* a tie: less memory first */
  ck_assert_int_gt(ax_rank_grid_compare(&fat, &lean), 0);
  AxGridEstimate ga = est(1.0, 1e9, a), gb = est(1.0, 1e9, b);
  ck_assert_int_lt(ax_rank_grid_compare(&gb, &ga), 0); /* Gx 1 before Gx 2 */
  ck_assert_int_eq(ax_rank_grid_compare(&ga, &ga), 0);
  ck_assert_ptr_nonnull(strstr(AX_RANK_GRIDS_TIE_RULE, "less device memory"));
}
END_TEST

int main(void) {
  Suite *s = suite_create("rank_grids_fit");
  TCase *tc = tu_tcase(s, "rank_grids_fit", 30);
  tcase_add_test(tc, memory_per_rank_by_hand);
  tcase_add_test(tc, a_grid_over_device_memory_is_listed_apart);
  tcase_add_test(tc, the_bubble_and_compute_are_priced);
  tcase_add_test(tc, tie_rule);
  return tu_run(s);
}
