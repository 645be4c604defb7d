/* test_fusion.c — Cupcake's tensor fusion (src/plan/fusion.h): Algorithm 5.1 against brute
 * force on seeded random jobs of 1..16 tensors (continuous costs over several orders of
 * magnitude, and small integers, whose ties and exact equalities probe the pruning rules'
 * boundaries), how much the two pruning rules save, larger jobs against an independent dynamic
 * program, the cost against a timeline worked by hand, answers known in advance, the
 * fixed-size buckets and `--fusion`, bad inputs, and the search time on a 48-layer GPT. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "src/core/error.h"
#include "src/core/rng.h"
#include "src/core/timer.h"
#include "src/plan/fusion.h"
#include "testutil.h"

enum { MAXN = 640 };

typedef struct {
  AxFusionTensor t[MAXN];
  AxFusionJob job;
} Instance;

/* 10^u, u uniform in [lo, hi]; 0 with probability `zero`. */
static double log_uniform(AxRng *r, double lo, double hi, double zero) {
  if (ax_rng_double(r) < zero) return 0;
  return pow(10, lo + (hi - lo) * ax_rng_double(r));
}

/* Continuous costs: tensors of 1 B to 64 MB, backward 1 us to 10 ms, compression and network
 * coefficients spread so that either side can dominate, some fixed costs zero. */
static void random_continuous(Instance *in, int n, AxRng *r) {
  for (int i = 0; i < n; i++) {
    in->t[i].bytes = (long long)log_uniform(r, 0, 7.8, 0.05);
    in->t[i].backward_s = log_uniform(r, -6, -2, 0.05);
  }
  in->job = (AxFusionJob){in->t, n, log_uniform(r, -4, -1, 0.2), log_uniform(r, -6, -2, 0.1),
                          log_uniform(r, -12, -9, 0.1), log_uniform(r, -6, -2, 0.1),
                          log_uniform(r, -12, -8, 0.1)};
}

/* Small integers: exact arithmetic, many ties. */
static void random_integer(Instance *in, int n, AxRng *r) {
  for (int i = 0; i < n; i++) {
    in->t[i].bytes = (long long)ax_rng_below(r, 9);
    in->t[i].backward_s = (double)ax_rng_below(r, 6);
  }
  in->job = (AxFusionJob){in->t, n, (double)ax_rng_below(r, 3), (double)ax_rng_below(r, 5),
                          (double)ax_rng_below(r, 2), (double)ax_rng_below(r, 5),
                          (double)ax_rng_below(r, 3)};
}

static void random_instance(Instance *in, int n, AxRng *r, int integer) {
  if (integer)
    random_integer(in, n, r);
  else
    random_continuous(in, n, r);
}

static void expect_grouping(const AxFusionJob *job, const int *end, int groups, double cost) {
  double again;
  ck_assert_int_eq(ax_fusion_cost(job, end, groups, &again), AX_OK);
  ck_assert_msg(again == cost, "the grouping costs %.17g, reported %.17g", again, cost);
}

static void expect_same_cost(double got, double want, const char *what) {
  ck_assert_msg(fabs(got - want) <= 1e-12 * fabs(want), "%s: %.17g, expected %.17g", what, got,
                want);
}

/* A search with these rules that must finish: its grouping, checked against the reference
 * cost. */
static double search_with(const AxFusionJob *job, int rules, int *end, int *groups,
                          AxFusionStats *st) {
  double cost;
  AxFusionSearchOpts opts = {rules, 0};
  ck_assert_int_eq(ax_fusion_search(job, &opts, end, groups, &cost, st), AX_OK);
  ck_assert(st->optimal);
  expect_grouping(job, end, *groups, cost);
  return cost;
}

static double search(const AxFusionJob *job, int *end, int *groups, AxFusionStats *st) {
  return search_with(job, AX_FUSION_ALL_RULES, end, groups, st);
}

typedef struct {
  long long nodes, leaves, rule1, rule2, dominated;
} Totals;

static void add_stats(Totals *t, const AxFusionStats *st) {
  t->nodes += st->nodes, t->leaves += st->leaves, t->rule1 += st->pruned_bound;
  t->rule2 += st->pruned_jstar, t->dominated += st->pruned_dominated;
}

static void print_totals(const char *what, const Totals *t, int jobs) {
  printf("  %-26s %8.1f nodes %8.1f complete groupings (cut: rule 1 %.1f, rule 2 %.1f, "
         "dominated %.1f)\n",
         what, (double)t->nodes / jobs, (double)t->leaves / jobs, (double)t->rule1 / jobs,
         (double)t->rule2 / jobs, (double)t->dominated / jobs);
}

/* Every N of 1..16, 300 jobs each (half continuous, half integer), every combination of the
 * pruning rules (N > 12: none, 1, 2, 1 + 2, all): the search's cost is brute force's. The
 * nodes visited and complete groupings reached per job are printed for N = 16 against brute
 * force's 2^15 groupings. */
START_TEST(search_equals_brute_force) {
  enum { JOBS = 300 };
  AxRng r;
  ax_rng_seed(&r, 20);
  int end[16], bend[16], groups, bgroups;
  for (int n = 1; n <= 16; n++) {
    Totals tot[AX_FUSION_ALL_RULES + 1] = {{0}};
    for (int rep = 0; rep < JOBS; rep++) {
      Instance in;
      random_instance(&in, n, &r, rep & 1);
      AxFusionStats st, bst;
      double bcost;
      ck_assert_int_eq(ax_fusion_brute_force(&in.job, bend, &bgroups, &bcost, &bst), AX_OK);
      expect_grouping(&in.job, bend, bgroups, bcost);
      ck_assert_int_eq(bst.leaves, 1LL << (n - 1));
      for (int rules = 0; rules <= AX_FUSION_ALL_RULES; rules++) {
        if (n > 12 && rules > AX_FUSION_ALG51 && rules != AX_FUSION_ALL_RULES) continue;
        double cost = search_with(&in.job, rules, end, &groups, &st);
        char what[64];
        snprintf(what, sizeof what, "N=%d job %d rules %d", n, rep, rules);
        expect_same_cost(cost, bcost, what);
        ck_assert_int_le(st.leaves, bst.leaves);
        if (rules == 0) ck_assert_int_eq(st.leaves, bst.leaves); /* the whole tree */
        add_stats(&tot[rules], &st);
      }
    }
    ck_assert_int_lt(tot[AX_FUSION_ALG51].leaves, tot[0].leaves + (n == 1));
    if (n == 16) {
      printf("N=16, %d jobs, per job: brute force %lld groupings; depth-first search:\n", JOBS,
             1LL << 15);
      print_totals("no pruning", &tot[0], JOBS);
      print_totals("rule 1 (Eq. 5.4)", &tot[AX_FUSION_RULE_BOUND], JOBS);
      print_totals("rule 2 (Eq. 5.5)", &tot[AX_FUSION_RULE_JSTAR], JOBS);
      print_totals("Algorithm 5.1 (1 + 2)", &tot[AX_FUSION_ALG51], JOBS);
      print_totals("all (1 + 2 + tail + dom.)", &tot[AX_FUSION_ALL_RULES], JOBS);
      ck_assert_int_lt(tot[AX_FUSION_ALG51].nodes, tot[0].nodes);
      ck_assert_int_lt(tot[AX_FUSION_ALL_RULES].nodes, tot[AX_FUSION_ALG51].nodes);
    }
  }
}
END_TEST

/* A node budget: a valid grouping, no better than the optimum, flagged as not optimal. */
START_TEST(node_budget_stops_the_search) {
  AxRng r;
  ax_rng_seed(&r, 3);
  Instance in;
  random_integer(&in, 16, &r);
  int end[16], groups;
  double cost, best;
  AxFusionStats st;
  AxFusionSearchOpts opts = {0, 100};
  best = search(&in.job, end, &groups, &st);
  ck_assert_int_eq(ax_fusion_search(&in.job, &opts, end, &groups, &cost, &st), AX_OK);
  ck_assert(!st.optimal && st.nodes == 100);
  expect_grouping(&in.job, end, groups, cost);
  ck_assert(cost >= best);
}
END_TEST

/* An independent exact method for jobs too large for brute force: after k tensors in a groups
 * the GPU is free at B(0,k-1) + a alpha_h + beta_h bytes(0,k-1) whatever the groups, and the
 * rest costs no less when the network is free later, so the least network time per (k, a)
 * suffices: O(N^3). */
static double dynamic_program(const AxFusionJob *job) {
  int n = job->n;
  static double pb[MAXN + 1], px[MAXN + 1], best[MAXN + 1][MAXN + 1];
  for (int k = 0; k < n; k++) {
    pb[k + 1] = pb[k] + job->tensors[k].backward_s;
    px[k + 1] = px[k] + (double)job->tensors[k].bytes;
  }
  for (int k = 0; k <= n; k++)
    for (int a = 0; a <= n; a++) best[k][a] = INFINITY;
  best[0][0] = 0;
  double result = INFINITY;
  for (int k = 0; k < n; k++)
    for (int a = 0; a <= k; a++) {
      if (best[k][a] == INFINITY) continue;
      double comp = pb[k] + a * job->alpha_h + job->beta_h * px[k];
      for (int j = k + 1; j <= n; j++) {
        double x = px[j] - px[k];
        double c = comp + pb[j] - pb[k] + job->alpha_h + job->beta_h * x;
        double m = fmax(c, best[k][a]) + job->alpha_g + job->beta_g * x;
        if (m < best[j][a + 1]) best[j][a + 1] = m;
      }
    }
  for (int a = 1; a <= n; a++) result = fmin(result, best[n][a]);
  return job->forward_s + result;
}

/* 120 jobs of 17..80 tensors and 10 of 580. */
START_TEST(search_equals_dynamic_program_on_larger_jobs) {
  AxRng r;
  ax_rng_seed(&r, 5);
  static int end[MAXN];
  int groups;
  for (int rep = 0; rep < 130; rep++) {
    static Instance in;
    int n = rep < 120 ? 17 + (int)ax_rng_below(&r, 64) : 580;
    random_instance(&in, n, &r, rep & 1);
    AxFusionStats st;
    double cost = search(&in.job, end, &groups, &st);
    char what[64];
    snprintf(what, sizeof what, "N=%d job %d", n, rep);
    expect_same_cost(cost, dynamic_program(&in.job), what);
  }
}
END_TEST

/* Three tensors worked by hand: B = 1, 2, 3; 10, 20, 30 bytes; A = 5; h(x) = 0.5 + 0.01x;
 * g(x) = 1 + beta_g x. */
START_TEST(cost_matches_a_hand_timeline) {
  AxFusionTensor t[3] = {{10, 1}, {20, 2}, {30, 3}};
  AxFusionJob job = {t, 3, 5, 0.5, 0.01, 1, 0.1};
  double cost;
  /* Alone: comp 1.6, 4.3, 8.1; comm 3.6, max(4.3, 3.6) + 3 = 7.3, max(8.1, 7.3) + 4 = 12.1. */
  int alone[3] = {1, 2, 3};
  ck_assert_int_eq(ax_fusion_cost(&job, alone, 3, &cost), AX_OK);
  expect_same_cost(cost, 5 + 12.1, "each alone");
  /* {T0}, {T1, T2}: comp 1.6, 1.6 + 5 + 1 = 7.6; comm 3.6, max(7.6, 3.6) + 6 = 13.6. */
  int split[2] = {1, 3};
  ck_assert_int_eq(ax_fusion_cost(&job, split, 2, &cost), AX_OK);
  expect_same_cost(cost, 5 + 13.6, "T0 | T1 T2");
  /* A slow network (beta_g = 0.5), where each group waits for the one before: alone, comm
   * 1.6 + 6 = 7.6, max(4.3, 7.6) + 11 = 18.6, max(8.1, 18.6) + 16 = 34.6; all fused: comp
   * 6 + 1.1 = 7.1, comm 7.1 + 31 = 38.1. */
  job.beta_g = 0.5;
  ck_assert_int_eq(ax_fusion_cost(&job, alone, 3, &cost), AX_OK);
  expect_same_cost(cost, 5 + 34.6, "each alone, slow network");
  int all[1] = {3};
  ck_assert_int_eq(ax_fusion_cost(&job, all, 1, &cost), AX_OK);
  expect_same_cost(cost, 5 + 38.1, "all fused, slow network");
  /* {T0, T1}, {T2}: comp 3 + 0.8 = 3.8, comm 3.8 + 16 = 19.8; comp 3.8 + 3 + 0.8 = 7.6, comm
   * max(7.6, 19.8) + 16 = 35.8. */
  int pair[2] = {2, 3};
  ck_assert_int_eq(ax_fusion_cost(&job, pair, 2, &cost), AX_OK);
  expect_same_cost(cost, 5 + 35.8, "T0 T1 | T2, slow network");
}
END_TEST

/* No fixed costs: splitting a group never delays anything, so every tensor alone is optimal.
 * A fixed compression cost far above everything else: one group. */
START_TEST(known_answers) {
  AxRng r;
  ax_rng_seed(&r, 7);
  static int end[MAXN];
  int groups;
  for (int rep = 0; rep < 50; rep++) {
    Instance in;
    int n = 1 + (int)ax_rng_below(&r, 200);
    random_continuous(&in, n, &r);
    AxFusionStats st;
    in.job.alpha_h = in.job.alpha_g = 0;
    double cost = search(&in.job, end, &groups, &st), none;
    ck_assert_int_eq(ax_fusion_fixed_bytes(&in.job, 0, end, &groups), AX_OK);
    ck_assert_int_eq(groups, n);
    ck_assert_int_eq(ax_fusion_cost(&in.job, end, groups, &none), AX_OK);
    expect_same_cost(cost, none, "no fixed costs: every tensor alone");
    in.job.alpha_h = 1e3;
    search(&in.job, end, &groups, &st);
    ck_assert_int_eq(groups, 1);
    ck_assert_int_eq(end[0], n);
  }
}
END_TEST

START_TEST(fixed_buckets_and_the_option) {
  AxFusionTensor t[5] = {{3, 1}, {3, 1}, {3, 1}, {10, 1}, {1, 1}};
  AxFusionJob job = {t, 5, 0, 1, 0, 1, 0};
  int end[5], groups;
  ck_assert_int_eq(ax_fusion_fixed_bytes(&job, 6, end, &groups), AX_OK);
  ck_assert_int_eq(groups, 4);
  ck_assert(end[0] == 2 && end[1] == 3 && end[2] == 4 && end[3] == 5);
  ck_assert_int_eq(ax_fusion_fixed_bytes(&job, 100, end, &groups), AX_OK);
  ck_assert(groups == 1 && end[0] == 5);
  AxFusionSpec spec;
  ck_assert_int_eq(ax_fusion_parse("auto", &spec), AX_OK);
  ck_assert_int_eq(spec.mode, AX_FUSION_AUTO);
  ck_assert_int_eq(ax_fusion_parse("none", &spec), AX_OK);
  ck_assert_int_eq(spec.mode, AX_FUSION_NONE);
  ck_assert_int_eq(ax_fusion_parse("4K", &spec), AX_OK);
  ck_assert(spec.mode == AX_FUSION_BYTES && spec.bytes == 4096);
  double cost, want;
  AxFusionStats st;
  const char *modes[3] = {"auto", "none", "7"};
  for (int m = 0; m < 3; m++) {
    ck_assert_int_eq(ax_fusion_parse(modes[m], &spec), AX_OK);
    ck_assert_int_eq(ax_fusion_plan(&job, &spec, end, &groups, &cost, &st), AX_OK);
    expect_grouping(&job, end, groups, cost);
    ck_assert_int_eq(groups, (m == 0 ? 1 : m == 1 ? 5 : 4)); /* auto: costs all fixed */
  }
  ck_assert_int_eq(ax_fusion_brute_force(&job, end, &groups, &want, &st), AX_OK);
  expect_same_cost(want, 5 + 1 + 1, "one group: B 5, h 1, g 1");
}
END_TEST

START_TEST(bad_inputs_are_refused) {
  AxFusionTensor t[21] = {{1, 1}, {2, 1}, {3, 1}};
  AxFusionJob job = {t, 0, 0, 1, 0, 1, 0};
  int end[21] = {1, 2, 3}, groups;
  double cost;
  AxFusionSpec spec;
  tu_expect_error(ax_fusion_search(&job, NULL, end, &groups, &cost, NULL), "0 tensors");
  job.n = 3;
  t[1].bytes = -2;
  tu_expect_error(ax_fusion_search(&job, NULL, end, &groups, &cost, NULL), "tensor 1 has -2 bytes");
  t[1].bytes = 2;
  t[2].backward_s = -1;
  tu_expect_error(ax_fusion_cost(&job, end, 3, &cost), "tensor 2: backward time -1");
  t[2].backward_s = 1;
  job.beta_g = NAN;
  tu_expect_error(ax_fusion_fixed_bytes(&job, 4, end, &groups), "beta_g");
  job.beta_g = 0;
  job.alpha_h = -1;
  tu_expect_error(ax_fusion_brute_force(&job, end, &groups, &cost, NULL), "alpha_h = -1");
  job.alpha_h = 1;
  AxFusionSearchOpts opts = {AX_FUSION_ALG51, -1};
  tu_expect_error(ax_fusion_search(&job, &opts, end, &groups, &cost, NULL), "max_nodes");
  opts = (AxFusionSearchOpts){16, 0};
  tu_expect_error(ax_fusion_search(&job, &opts, end, &groups, &cost, NULL), "unknown rules 0x10");
  int twice[3] = {1, 1, 3}, short_[2] = {1, 2};
  tu_expect_error(ax_fusion_cost(&job, twice, 3, &cost), "group 1 ends at 1 after 1");
  tu_expect_error(ax_fusion_cost(&job, short_, 2, &cost), "not at tensor 3");
  tu_expect_error(ax_fusion_cost(&job, end, 0, &cost), "0 groups");
  tu_expect_error(ax_fusion_fixed_bytes(&job, -1, end, &groups), "-1 bytes");
  job.n = 21;
  tu_expect_error(ax_fusion_brute_force(&job, end, &groups, &cost, NULL), "up to 20");
  tu_expect_error(ax_fusion_parse("lots", &spec), "--fusion expects auto, none or a byte count "
                                                   "of at least 1 (K, M, G suffixes), got 'lots'");
  tu_expect_error(ax_fusion_parse("0", &spec), "byte count of at least 1 (K, M, G suffixes), got '0'");
  tu_expect_error(ax_fusion_parse("99999999999999999999", &spec), "got '99999999999999999999'");
  spec = (AxFusionSpec){AX_FUSION_BYTES, 0};
  job.n = 3;
  tu_expect_error(ax_fusion_plan(&job, &spec, end, &groups, &cost, NULL), "at least 1 byte");
}
END_TEST

/* A GPT of 48 layers, C = 1600 (GPT-2 XL's shape), fp32 gradients in backward order (final
 * LayerNorm, then each block from the last: fcproj b, W, fc b, W, ln2 b, w, attproj b, W, qkv b,
 * W, ln1 b, w; then wpe, wte): 580 tensors. Backward time: 4 flops per parameter and token,
 * 4096 tokens, 100 Tflop/s; LayerNorm and biases 10 us. h: 250 us + 0.25 ms per 4 MB (Fig. 5.2);
 * g: 30 us + `wire` bytes sent per gradient byte at 25 Gb/s. */
static AxFusionTensor gpt_tensor(long long params, int matrix) {
  return (AxFusionTensor){4 * params, matrix ? 4.0 * (double)params * 4096 / 1e14 : 10e-6};
}

static int gpt48(Instance *in, double wire) {
  const long long C = 1600, per_layer[12] = {C, 4 * C * C, 4 * C, 4 * C * C, C, C,
                                             C, C * C, 3 * C, 3 * C * C, C, C};
  int n = 0;
  in->t[n++] = gpt_tensor(C, 0);
  in->t[n++] = gpt_tensor(C, 0);
  for (int l = 0; l < 48; l++)
    for (int p = 0; p < 12; p++) in->t[n++] = gpt_tensor(per_layer[p], per_layer[p] >= C * C);
  in->t[n++] = gpt_tensor(1024 * C, 0);
  in->t[n++] = gpt_tensor(50304 * C, 1);
  in->job = (AxFusionJob){in->t, n, 0.2, 250e-6, 0.25e-3 / (4 << 20), 30e-6, wire * 8 / 25e9};
  return n;
}

static double cost_of_buckets(const AxFusionJob *job, long long bytes, int *end) {
  int groups;
  double cost;
  ck_assert_int_eq(ax_fusion_fixed_bytes(job, bytes, end, &groups), AX_OK);
  ck_assert_int_eq(ax_fusion_cost(job, end, groups, &cost), AX_OK);
  return cost;
}

/* Every rule (what `--fusion auto` runs) against the dynamic program, timed; Algorithm 5.1's
 * two rules alone, under a budget of a million nodes. */
START_TEST(gpt48_search_time) {
  static Instance in;
  static int end[MAXN], other[MAXN];
  /* sparsified to ~2% (DGC with indices), 1-bit (1/32), 8-bit (1/4), none */
  const double wires[4] = {0.02, 1.0 / 32, 0.25, 1};
  for (int w = 0; w < 4; w++) {
    int n = gpt48(&in, wires[w]), groups, groups51;
    AxFusionStats st, st51;
    double t0 = ax_now();
    double cost = search(&in.job, end, &groups, &st);
    double dt = ax_now() - t0, cost51;
    expect_same_cost(cost, dynamic_program(&in.job), "GPT-48 against the dynamic program");
    AxFusionSearchOpts alg51 = {AX_FUSION_ALG51, 1000000};
    t0 = ax_now();
    ck_assert_int_eq(ax_fusion_search(&in.job, &alg51, other, &groups51, &cost51, &st51), AX_OK);
    double dt51 = ax_now() - t0;
    ck_assert(cost51 >= cost * (1 - 1e-12));
    printf("GPT-48, %d tensors, %.3g wire bytes a byte: %d groups, %.4f s an iteration (none "
           "%.4f s, 25 MB buckets %.4f s); search %.4f s, %lld nodes; Algorithm 5.1 alone: %s "
           "after %lld nodes, %.3f s, %.4f s an iteration\n",
           n, wires[w], groups, cost, cost_of_buckets(&in.job, 0, other),
           cost_of_buckets(&in.job, 25 << 20, other), dt, st.nodes,
           st51.optimal ? "done" : "stopped", st51.nodes, dt51, cost51);
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("fusion");
  TCase *tc = tu_tcase(s, "fusion", 300);
  tcase_add_test(tc, search_equals_brute_force);
  tcase_add_test(tc, node_budget_stops_the_search);
  tcase_add_test(tc, search_equals_dynamic_program_on_larger_jobs);
  tcase_add_test(tc, cost_matches_a_hand_timeline);
  tcase_add_test(tc, known_answers);
  tcase_add_test(tc, fixed_buckets_and_the_option);
  tcase_add_test(tc, bad_inputs_are_refused);
  tcase_add_test(tc, gpt48_search_time);
  int rc = tu_run(s);
  tu_cleanup();
  return rc;
}
