/* test_espresso.c — Espresso's compression strategy (src/plan/espresso.h, wang-thesis ch. 4):
 * the option table, the timeline evaluator against timelines computed by hand and against its
 * invariants on random strategies, the greedy search (Alg. 4.1 with Remove(), then Alg. 4.2)
 * against compress-nothing and the exhaustive search on seeded random 8-tensor instances
 * (never worse than compress-nothing; within 5% of the best on all but a few, see
 * greedy_within_5_percent_of_exhaustive), instances with a known answer (a free link, a slow
 * link with a cheap codec, a tensor sent before a bubble; the same tensors with and without
 * the backward between them plan differently; the offloading moves codec work off a GPU whose
 * computation it delays), bad inputs, and a 48-layer model
 * decided (its time printed, not asserted). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "src/core/error.h"
#include "src/core/rng.h"
#include "src/core/timer.h"
#include "src/plan/espresso.h"
#include "testutil.h"

enum { MAX_N = 600 };

static const double MS = 1e-3;

static void expect_near(double got, double want, const char *what) {
  ck_assert_msg(fabs(got - want) <= 1e-12 + 1e-9 * fabs(want), "%s: %.15g, expected %.15g",
                what, got, want);
}

/* A problem on `ranks` ranks, `per_node` to a node: 1 GB/s links without latency, a GPU codec
 * at 10 GB/s, a CPU one at 1 GB/s, ratio 1/4; the tensors are the caller's. */
static AxEspressoProblem problem(int n, const double *bytes, const double *compute, int ranks,
                                 int per_node) {
  AxLinearCost gb = {0, 1e9};
  return (AxEspressoProblem){.n = n, .bytes = bytes, .compute_s = compute, .ranks = ranks,
                             .ranks_per_node = per_node, .intra = gb, .inter = gb,
                             .gpu = {.enc = {0, 1e10}, .dec = {0, 1e10}},
                             .cpu = {.enc = gb, .dec = gb}, .ratio = 0.25};
}

static double time_of(const AxEspressoProblem *p, const int *S) {
  double f;
  ck_assert_int_eq(ax_espresso_iteration_time(p, S, &f), AX_OK);
  return f;
}

/* F(S) with every tensor's timeline in d. */
static double timeline(const AxEspressoProblem *p, const int *S, AxEspressoDecision *d) {
  double f;
  ck_assert_int_eq(ax_espresso_timeline(p, S, d, &f), AX_OK);
  return f;
}

static AxEspressoPlace place(int o) { return ax_espresso_option(o)->place; }

START_TEST(option_table) {
  for (int o = 0; o < AX_ESPRESSO_N_OPTIONS; o++) {
    const AxEspressoOption *a = ax_espresso_option(o);
    ck_assert_ptr_nonnull(a);
    ck_assert_int_eq(ax_espresso_option_find(a->name), o);
    ck_assert_int_eq(a->place, o < 4 ? AX_ESP_PLAIN : o < 16 ? AX_ESP_GPU : AX_ESP_CPU);
    if (a->place == AX_ESP_GPU) {
      const AxEspressoOption *twin = ax_espresso_option(o + AX_ESPRESSO_CPU_TWIN);
      ck_assert(twin->place == AX_ESP_CPU && twin->levels == a->levels &&
                twin->scheme == a->scheme);
    }
  }
  ck_assert_ptr_null(ax_espresso_option(AX_ESPRESSO_N_OPTIONS));
  ck_assert_int_eq(ax_espresso_option_find("gpu/2l+intra/a2a+ag"), 14);
  ck_assert_int_eq(ax_espresso_option_find("zip"), -1);
  double b = 1, c = 1;
  AxEspressoProblem one = problem(1, &b, &c, 8, 8), two = problem(1, &b, &c, 16, 8);
  AxEspressoProblem solo = problem(1, &b, &c, 1, 1), flat = problem(1, &b, &c, 4, 1);
  int n1 = 0, n2 = 0, n0 = 0, nf = 0;
  for (int o = 0; o < AX_ESPRESSO_N_OPTIONS; o++) {
    n1 += ax_espresso_option_applies(&one, o);
    n2 += ax_espresso_option_applies(&two, o);
    n0 += ax_espresso_option_applies(&solo, o);
    nf += ax_espresso_option_applies(&flat, o);
  }
  ck_assert_int_eq(n1, 10); /* one node: flat only */
  ck_assert_int_eq(n2, 28);
  ck_assert_int_eq(n0, 1);  /* one rank: nothing to send */
  ck_assert_int_eq(nf, 10); /* one rank a node: flat only */
  two.allowed = 1u << 2 | 1u << 9;
  ck_assert(ax_espresso_option_applies(&two, 9) && !ax_espresso_option_applies(&two, 0));
}
END_TEST

/* Two ranks on one node, 1 MB tensors computing 1 ms and 0.5 ms: the ring all-reduce sends
 * 2 x 0.5 MB at 1 GB/s = 1 ms. */
START_TEST(evaluator_by_hand) {
  double bytes[2] = {1e6, 1e6}, compute[2] = {1 * MS, 0.5 * MS};
  AxEspressoProblem p = problem(2, bytes, compute, 2, 2);
  AxEspressoDecision d[2];
  /* plain: T0 [1, 2], T1 ready at 1.5 waits for the link: [2, 3] */
  expect_near(timeline(&p, (int[]){0, 0}, d), 3 * MS, "plain");
  expect_near(d[1].ready_s, 1.5 * MS, "plain ready 1");
  expect_near(d[1].comm_start_s, 2 * MS, "plain T1 waits");
  /* T0 gpu/flat/ag: encode 0.1 [1, 1.1], all-gather 0.25 MB [1.1, 1.35], decode 0.025
   * [1.35, 1.375]; T1's computation yields to both: ends 1.625, sent [1.625, 2.625] */
  expect_near(timeline(&p, (int[]){7, 0}, d), 2.625 * MS, "gpu ag");
  expect_near(d[0].comm_start_s, 1.1 * MS, "ag sends");
  expect_near(d[0].comm_end_s, 1.35 * MS, "ag sent");
  expect_near(d[0].done_s, 1.375 * MS, "ag decoded");
  expect_near(d[0].alone_s, 0.375 * MS, "ag alone");
  expect_near(d[1].ready_s, 1.625 * MS, "GPU codec delays the computation");
  /* on the CPU instead: encode 1 ms [1, 2], [2, 2.25], decode [2.25, 2.5]; T1 computes
   * undisturbed but waits for the link until 2.25: [2.25, 3.25] */
  expect_near(timeline(&p, (int[]){19, 0}, d), 3.25 * MS, "cpu ag");
  expect_near(d[1].ready_s, 1.5 * MS, "CPU codec leaves the GPU alone");
  /* CaSync ring (alpha = beta = gamma = 2): link 2 x 0.125 MB, codec 2 x 0.05 + 2 x 0.0125:
   * one stage [1, 1.375], its codec part [1, 1.125] on the GPU; T1 ends 1.625 */
  expect_near(timeline(&p, (int[]){4, 0}, d), 2.625 * MS, "casync ring then plain");
  expect_near(d[0].comm_end_s, 1.375 * MS, "casync ring");
  expect_near(d[1].ready_s, 1.625 * MS, "casync ring's codec delays the computation");
  expect_near(time_of(&p, (int[]){4, 0}), 2.625 * MS, "iteration_time = timeline");
}
END_TEST

/* One 4 MB tensor on 2 nodes of 2: intra 10 GB/s, inter 1 GB/s + 10 us. */
START_TEST(collective_costs_by_hand) {
  double bytes = 4e6, compute = 0;
  AxEspressoProblem p = problem(1, &bytes, &compute, 4, 2);
  p.intra = (AxLinearCost){0, 1e10};
  p.inter = (AxLinearCost){1e-5, 1e9};
  /* flat ring: 6 steps of 1 MB, each the slower link: 6 x 1.01 ms */
  int S = 0;
  expect_near(time_of(&p, &S), 6.06 * MS, "flat ring");
  /* flat rhd: 2 MB to the partner 2 away (another node, 2 flows: 4.01 ms), 1 MB to the one 1
   * away (same node: 0.1 ms), each twice */
  S = 1;
  expect_near(time_of(&p, &S), 8.22 * MS, "flat rhd");
  /* two-level: intra reduce-scatter 0.2, ring between the nodes on 2 MB shards with 2 flows:
   * 2 x (10 us + 2 x 1 MB / 1 GB/s) = 4.02, intra all-gather 0.2 */
  S = 2;
  expect_near(time_of(&p, &S), 4.42 * MS, "two-level ring");
}
END_TEST

/* Random 8-tensor instances: sizes 1 KB .. 64 MB (a third repeat the one before, as equal
 * layers do), 0.1 .. 5 ms of computation, links of 1 .. 100 GB/s inside a node and 0.1 .. 10
 * GB/s between nodes, GPU codecs of 50 .. 500 GB/s (a GPU kernel's speed), CPU codecs of 1 ..
 * 20 GB/s, ratios 1/2 .. 1/64. On two nodes of 4 ranks the search space is narrowed to the
 * ring all-reduces (flat, two-level) and the all-gather schemes (flat, two-level, two-level
 * with intra compressed) on either device, 8 options, so that the exhaustive search stays
 * short; one node has all 10 of its options. */
static AxEspressoProblem random_problem(AxRng *r, double *bytes, double *compute, int nodes) {
  for (int i = 0; i < 8; i++) {
    bytes[i] = i > 0 && ax_rng_below(r, 3) == 0 ? bytes[i - 1]
                                                 : floor(1024 * pow(2, 16 * ax_rng_double(r)));
    compute[i] = (0.1 + 4.9 * ax_rng_double(r)) * MS;
  }
  AxEspressoProblem p = problem(8, bytes, compute, 4 * nodes, 4);
  p.intra = (AxLinearCost){5e-6, 1e9 * pow(10, 2 * ax_rng_double(r))};
  p.inter = (AxLinearCost){2e-5, 1e8 * pow(10, 2 * ax_rng_double(r))};
  double gpu = 5e10 * pow(10, ax_rng_double(r)), cpu = 1e9 * pow(10, 1.3 * ax_rng_double(r));
  p.gpu = (AxEspressoCodecCost){.enc = {2e-5, gpu}, .dec = {1e-5, 2 * gpu}};
  p.cpu = (AxEspressoCodecCost){.enc = {5e-5, cpu}, .dec = {2e-5, 2 * cpu}};
  p.ratio = pow(2, -1 - 5 * ax_rng_double(r));
  for (int o = 0; nodes > 1 && o < AX_ESPRESSO_N_OPTIONS; o++) {
    AxEspressoScheme sc = ax_espresso_option(o)->scheme;
    if (sc == AX_ESP_AR_RING || sc == AX_ESP_AG) p.allowed |= 1u << o;
  }
  return p;
}

/* One instance: Espresso's F against compress-nothing and the exhaustive search; returns
 * Espresso's F over the best. */
static double check_instance(AxRng *r, int nodes, int *compressed) {
  double bytes[8], compute[8], f_nothing, f_best;
  AxEspressoProblem p = random_problem(r, bytes, compute, nodes);
  AxEspressoDecision d[8];
  AxEspressoSummary sum;
  int nothing[8], best[8], chosen[8];
  ck_assert_int_eq(ax_espresso_decide(&p, d, &sum), AX_OK);
  for (int i = 0; i < 8; i++) chosen[i] = d[i].option, *compressed += place(chosen[i]) != 0;
  ck_assert_int_eq(ax_espresso_nothing(&p, nothing), AX_OK);
  ck_assert_int_eq(ax_espresso_exhaustive(&p, best, &f_best), AX_OK);
  f_nothing = time_of(&p, nothing);
  expect_near(sum.nothing_s, f_nothing, "compress-nothing");
  expect_near(time_of(&p, chosen), sum.iteration_s, "the decisions' F");
  expect_near(time_of(&p, best), f_best, "the exhaustive F");
  ck_assert_msg(sum.iteration_s <= sum.greedy_s && sum.greedy_s <= f_nothing,
                "F rose: nothing %g, greedy %g, offloaded %g", f_nothing, sum.greedy_s,
                sum.iteration_s);
  ck_assert_msg(f_best <= sum.iteration_s, "exhaustive %g above greedy %g", f_best,
                sum.iteration_s);
  return sum.iteration_s / f_best;
}

/* The "within 5% of exhaustive search", on every instance. Algorithm 4.1 + 4.2 as the
 * thesis gives them are not always: over 3000 one-node and 2000 two-node instances of these
 * families (other seeds), 0.1-0.2% and 0.8-1.1% of them were beyond 5%, the worst 10.0% and
 * 11.6% — where a tensor Remove() ruled out early would be worth compressing once others are,
 * or where the best CPU placement uses another scheme than the GPU option's twin, the only
 * move Alg. 4.2 has. Our refinement (espresso_search.c: one tensor's option at a time, then on
 * up to 12 tensors pairs of them) closes that: seeds 20-23, 1000 instances each of one and two
 * nodes, none beyond 5%, the worst 3.5%. Every instance is also never worse than
 * compress-nothing (check_instance). */
START_TEST(greedy_within_5_percent_of_exhaustive) {
  enum { INSTANCES = 200 };
  AxRng r;
  ax_rng_seed(&r, 20);
  for (int nodes = 1; nodes <= 2; nodes++) {
    double worst = 1, t0 = ax_now();
    int beyond = 0, compressed = 0;
    for (int k = 0; k < INSTANCES; k++) {
      double ratio = check_instance(&r, nodes, &compressed);
      ck_assert_msg(ratio <= 1.05, "%d node(s), instance %d: %.2f%% above the best", nodes, k,
                    100 * (ratio - 1));
      beyond += ratio > 1.05;
      worst = fmax(worst, ratio);
    }
    printf("espresso: %d node(s): worst greedy / exhaustive %.4f over %d instances, %d beyond "
           "5%% (%d tensors compressed), %.2f s\n",
           nodes, worst, INSTANCES, beyond, compressed, ax_now() - t0);
    fflush(stdout);
  }
}
END_TEST

/* No GPU codec engine (cpu_only, the trainer's case: its codecs run on the host's CPU
 * threads): Algorithm 4.1 searches the CPU options in place of the GPU ones, so the same
 * instances still compress, never on the GPU, within 10% of the exhaustive search over the
 * options that exist (the exhaustive search honours cpu_only too; the count beyond 5% is
 * printed: on seed 31, 1 of 60 at 6.5%, where the GPU case's refinement keeps all within 5%);
 * switched off, the same instances put codec work on the GPU. */
START_TEST(cpu_only_engine) {
  enum { INSTANCES = 60 };
  AxRng r;
  ax_rng_seed(&r, 31);
  int compressed = 0, on_gpu_without = 0, beyond = 0;
  double worst = 1;
  for (int k = 0; k < INSTANCES; k++) {
    double bytes[8], compute[8], f_best;
    AxEspressoProblem p = random_problem(&r, bytes, compute, 1 + k % 2);
    AxEspressoDecision d[8];
    AxEspressoSummary sum;
    int best[8];
    ck_assert_int_eq(ax_espresso_decide(&p, d, &sum), AX_OK);
    for (int i = 0; i < 8; i++) on_gpu_without += place(d[i].option) == AX_ESP_GPU;
    p.cpu_only = 1;
    ck_assert_int_eq(ax_espresso_decide(&p, d, &sum), AX_OK);
    ck_assert_int_eq(ax_espresso_exhaustive(&p, best, &f_best), AX_OK);
    for (int i = 0; i < 8; i++) {
      ck_assert_msg(place(d[i].option) != AX_ESP_GPU, "instance %d tensor %d: %s", k, i,
                    ax_espresso_option(d[i].option)->name);
      ck_assert_msg(place(best[i]) != AX_ESP_GPU, "exhaustive: instance %d tensor %d", k, i);
      compressed += place(d[i].option) == AX_ESP_CPU;
    }
    ck_assert_msg(sum.iteration_s <= 1.10 * f_best, "instance %d: %g against the best %g", k,
                  sum.iteration_s, f_best);
    worst = fmax(worst, sum.iteration_s / f_best);
    beyond += sum.iteration_s > 1.05 * f_best;
  }
  printf("espresso cpu_only: %d tensor(s) compressed on the CPU over %d instances (%d on the "
         "GPU with both engines); worst F / exhaustive %.4f, %d beyond 5%%\n", compressed,
         INSTANCES, on_gpu_without, worst, beyond);
  ck_assert_int_gt(compressed, 0);
  ck_assert_int_gt(on_gpu_without, 0);
}
END_TEST

/* Random strategies on the random instances: every tensor is ready after its computation and
 * done after its communication, a link serves the tensors in order (one node: every option
 * holds the intra link), the computation is delayed only by GPU codec work (never with
 * nothing on the GPU), and F is the last end. */
START_TEST(timeline_invariants) {
  AxRng r;
  ax_rng_seed(&r, 4);
  for (int k = 0; k < 300; k++) {
    double bytes[8], compute[8], f, sum_c = 0, gpu_chain = 0, last = 0;
    AxEspressoProblem p = random_problem(&r, bytes, compute, 1);
    int S[8], on_gpu = 0;
    AxEspressoDecision d[8];
    for (int i = 0; i < 8; i++) {
      do S[i] = (int)ax_rng_below(&r, AX_ESPRESSO_N_OPTIONS);
      while (!ax_espresso_option_applies(&p, S[i]));
    }
    f = timeline(&p, S, d);
    for (int i = 0; i < 8; i++) {
      sum_c += compute[i];
      ck_assert(d[i].ready_s >= sum_c * (1 - 1e-12));
      ck_assert(d[i].ready_s <= (sum_c + gpu_chain) * (1 + 1e-12) + 1e-15);
      if (!on_gpu) expect_near(d[i].ready_s, sum_c, "no GPU codec, no delay");
      ck_assert(d[i].comm_start_s >= d[i].ready_s && d[i].comm_end_s >= d[i].comm_start_s);
      ck_assert(d[i].done_s >= d[i].comm_end_s);
      ck_assert(d[i].done_s - d[i].ready_s >= d[i].alone_s * (1 - 1e-12));
      if (i > 0) ck_assert(d[i].comm_start_s >= d[i - 1].comm_end_s);
      on_gpu |= place(S[i]) == AX_ESP_GPU;
      if (place(S[i]) == AX_ESP_GPU) gpu_chain += d[i].alone_s;
      last = fmax(last, fmax(d[i].done_s, d[i].ready_s));
    }
    ck_assert_double_eq(f, last);
  }
}
END_TEST

START_TEST(free_link_compresses_nothing) {
  double bytes[6] = {64e6, 4e6, 4e6, 1e6, 1e3, 16e6}, compute[6] = {1, 2, 1, 1, 1, 3};
  for (int i = 0; i < 6; i++) compute[i] *= MS;
  AxEspressoProblem p = problem(6, bytes, compute, 16, 8);
  p.intra = p.inter = (AxLinearCost){0, INFINITY};
  AxEspressoDecision d[6];
  AxEspressoSummary sum;
  ck_assert_int_eq(ax_espresso_decide(&p, d, &sum), AX_OK);
  for (int i = 0; i < 6; i++) ck_assert_int_eq(place(d[i].option), AX_ESP_PLAIN);
  expect_near(sum.iteration_s, 9 * MS, "the computation alone");
  ck_assert_int_eq(sum.compressed, 0);
}
END_TEST

/* A slow link (1 Gb/s, 50 us) and a cheap GPU codec (100 GB/s, 50 us a launch): the large
 * tensors are compressed; the tiny ones, first (each finds the link free), are not, their
 * latencies being the plain rhd all-reduce's 6 against at least 7 for every compressed
 * scheme, plus the codec's. */
START_TEST(slow_link_compresses_large_tensors) {
  double bytes[8] = {256, 512, 128, 64, 64e6, 32e6, 16e6, 64e6}, compute[8];
  for (int i = 0; i < 8; i++) compute[i] = 0.5 * MS;
  AxEspressoProblem p = problem(8, bytes, compute, 8, 8);
  p.intra = (AxLinearCost){50e-6, 125e6};
  p.gpu = (AxEspressoCodecCost){.enc = {50e-6, 1e11}, .dec = {50e-6, 1e11}};
  p.ratio = 1.0 / 32;
  AxEspressoDecision d[8];
  AxEspressoSummary sum;
  ck_assert_int_eq(ax_espresso_decide(&p, d, &sum), AX_OK);
  for (int i = 0; i < 8; i++)
    ck_assert_msg((place(d[i].option) != AX_ESP_PLAIN) == (bytes[i] > 1e6),
                  "tensor %d of %g bytes: %s", i, bytes[i],
                  ax_espresso_option(d[i].option)->name);
  ck_assert(sum.iteration_s < 0.25 * sum.nothing_s);
}
END_TEST

/* A tensor queued behind another on the link has its messages' latency in flight while it
 * waits (the trainer progresses a chunk's operations together): a tiny plain tensor ready
 * while a large one is on the link ends its bytes after it, not its ring's 14 latencies;
 * ready after the link is free, it pays them; with a share of its latency paid while
 * queued, that share. */
START_TEST(queued_tensor_pays_its_share_of_latency) {
  double bytes[2] = {8e6, 64}, compute[2] = {1 * MS, 0};
  AxEspressoProblem p = problem(2, bytes, compute, 8, 8);
  p.intra = (AxLinearCost){50e-6, 1e9};
  int S[2] = {0, 0};
  AxEspressoDecision d[2];
  timeline(&p, S, d);
  double ring_latency = 14 * 50e-6, tiny_bytes = 14 * 8 / 1e9; /* 2(p-1) steps of m/p */
  ck_assert_double_eq_tol(d[0].done_s, 1 * MS + ring_latency + 14 * 1e6 / 1e9, 1e-12);
  ck_assert_double_eq_tol(d[1].done_s, d[0].done_s + tiny_bytes, 1e-12);
  compute[1] = 20 * MS; /* ready once the link is free: all of its latency */
  timeline(&p, S, d);
  ck_assert_double_eq_tol(d[1].done_s, 21 * MS + ring_latency + tiny_bytes, 1e-12);
  /* the share of it a queued tensor still pays (measured by the trainer at start-up,
   * ax_casync_measure_overlap): a quarter, then all of it (the thesis's model) */
  compute[1] = 0;
  for (int k = 0; k < 2; k++) {
    p.latency_paid = k ? 1 : 0.25;
    timeline(&p, S, d);
    ck_assert_double_eq_tol(d[1].done_s, d[0].done_s + tiny_bytes + p.latency_paid * ring_latency,
                            1e-12);
  }
  p.latency_paid = 1.5;
  ck_assert_int_eq(ax_espresso_check(&p), AX_ERR);
  ax_error_clear();
}
END_TEST

/* One tensor of `bytes` alone under option o: its time (nothing before it, nothing after). */
static double alone(AxEspressoProblem *p, double bytes, int o) {
  double compute = 0;
  p->n = 1, p->bytes = &bytes, p->compute_s = &compute;
  return time_of(p, &o);
}

/* A compressed scheme timed alone at three sizes (as the trainer times CaSync at start-up)
 * takes what was measured there, alone, with its stages scaled by measured / modelled: at 2x
 * and 0.5x the model's time at 1 KB and 100 KB, the factor runs linearly between them, stays
 * at the nearest size's beyond them; another scheme and the plain ones are not touched. */
START_TEST(timed_scheme_takes_its_measured_time_alone) {
  double b = 1;
  AxEspressoProblem p = problem(1, &b, &b, 4, 1);
  p.inter = (AxLinearCost){20e-6, 1e9};
  int ring = ax_espresso_option_find("cpu/flat/casync-ring");
  int ps = ax_espresso_option_find("cpu/flat/casync-ps");
  double sizes[3] = {1e3, 1e5, 1e7}, ratio[3] = {2, 0.5, 1}, model[3];
  double ps_before = alone(&p, 5e4, ps), plain_before = alone(&p, 5e4, 0);
  AxSizedTimes *t = &p.timed[AX_ESP_CASYNC_RING];
  for (int i = 0; i < 3; i++) model[i] = alone(&p, sizes[i], ring);
  for (int i = 0; i < 3; i++) t->bytes[i] = sizes[i], t->seconds[i] = ratio[i] * model[i];
  t->n = 3;
  AxEspressoProblem untimed = p;
  untimed.timed[AX_ESP_CASYNC_RING].n = 0;
  for (int i = 0; i < 3; i++)
    expect_near(alone(&p, sizes[i], ring), t->seconds[i], "alone at a timed size");
  double m = 0.25 * sizes[0] + 0.75 * sizes[1], w = 0.75;
  double factor = (1 - w) * ratio[0] + w * ratio[1];
  expect_near(ax_espresso_timed_factor(&p, ring, m), factor, "factor between sizes");
  expect_near(alone(&p, m, ring), factor * alone(&untimed, m, ring), "alone between sizes");
  expect_near(alone(&p, 100, ring), 2 * alone(&untimed, 100, ring), "below the smallest");
  expect_near(alone(&p, 4e7, ring), alone(&untimed, 4e7, ring), "beyond the largest");
  expect_near(alone(&p, 5e4, ps), ps_before, "an untimed scheme");
  expect_near(alone(&p, 5e4, 0), plain_before, "the plain ring");
  expect_near(ax_espresso_timed_factor(&p, 0, 5e4), 1, "the plain ring's factor");
}
END_TEST

/* Messages read off measured points: with a message's points the plain all-reduce's measured
 * ones imply (ax_casync_send_points: m / N bytes, t / 2(N-1) seconds), the plain flat ring
 * takes exactly the measured all-reduce at each measured size and runs linearly between
 * them. */
START_TEST(plain_ring_takes_the_measured_all_reduce) {
  double b = 1;
  AxEspressoProblem p = problem(1, &b, &b, 4, 1);
  p.inter = (AxLinearCost){20e-6, 1e9};
  AxSizedTimes plain = {.n = 3, .bytes = {1024, 65536, 4194304}, .seconds = {300e-6, 900e-6, 40e-3}};
  p.inter_at = ax_casync_send_points(&plain, 4);
  ck_assert_int_eq(p.inter_at.n, 3);
  expect_near(p.inter_at.bytes[1], 65536 / 4.0, "a message's bytes");
  expect_near(p.inter_at.seconds[1], 900e-6 / 6, "a message's seconds");
  for (int i = 0; i < 3; i++) expect_near(alone(&p, plain.bytes[i], 0), plain.seconds[i], "measured");
  expect_near(alone(&p, (1024 + 65536) / 2.0, 0), 600e-6, "halfway");
}
END_TEST

/* Fig. 4.9: T0 is sent before a bubble (T1 computes long), T1 and T2 (equal sizes) after it
 * queue on the link. Compressing T0 cannot help: Remove() rules it out and it stays plain. */
START_TEST(tensor_before_a_bubble_needs_no_compression) {
  double bytes[3] = {4e6, 4e6, 4e6}, compute[3] = {1 * MS, 10 * MS, 0.5 * MS};
  AxEspressoProblem p = problem(3, bytes, compute, 2, 2);
  p.gpu = (AxEspressoCodecCost){.enc = {1e-5, 1e11}, .dec = {1e-5, 1e11}};
  int nothing[3], removed[3], greedy[3];
  AxEspressoDecision d[3];
  ck_assert_int_eq(ax_espresso_nothing(&p, nothing), AX_OK);
  ck_assert_int_eq(ax_espresso_timeline(&p, nothing, d, NULL), AX_OK);
  ck_assert(d[1].comm_start_s > d[0].comm_end_s + 1 * MS); /* the bubble */
  ck_assert_int_eq(ax_espresso_greedy(&p, greedy, removed), AX_OK);
  ck_assert_int_eq(removed[0], 1);
  ck_assert_int_eq(place(greedy[0]), AX_ESP_PLAIN);
  ck_assert(place(greedy[1]) != AX_ESP_PLAIN || place(greedy[2]) != AX_ESP_PLAIN);
  ck_assert(time_of(&p, greedy) < time_of(&p, nothing));
  /* compressing T0 as well changes nothing after the bubble and delays T1 on the GPU */
  int also[3] = {greedy[1], greedy[1], greedy[2]};
  ck_assert(time_of(&p, also) >= time_of(&p, greedy));
}
END_TEST

/* The same three tensors all ready at once (no backward between them, AxoNN's late sum): no
 * bubble, nothing removed, and T0 compressed as well; with the backward's timeline, Remove()
 * rules T0 out and the plan differs (Espresso's whole decision too). */
START_TEST(bubbles_change_the_plan) {
  double bytes[3] = {4e6, 4e6, 4e6}, compute[3] = {1 * MS, 10 * MS, 0.5 * MS}, none[3] = {0};
  AxEspressoProblem p = problem(3, bytes, compute, 2, 2), q;
  p.gpu = (AxEspressoCodecCost){.enc = {1e-5, 1e11}, .dec = {1e-5, 1e11}};
  q = p, q.compute_s = none;
  int S[3], removed[3], T[3], gone[3];
  ck_assert_int_eq(ax_espresso_greedy(&p, S, removed), AX_OK);
  ck_assert_int_eq(ax_espresso_greedy(&q, T, gone), AX_OK);
  ck_assert_int_eq(removed[0], 1);
  ck_assert_int_eq(gone[0] + gone[1] + gone[2], 0);
  ck_assert_int_eq(place(S[0]), AX_ESP_PLAIN);
  ck_assert_int_ne(place(T[0]), AX_ESP_PLAIN);
  AxEspressoDecision d[3];
  AxEspressoSummary with, without;
  ck_assert_int_eq(ax_espresso_decide(&p, d, &with), AX_OK);
  ck_assert_int_eq(d[0].removed, 1);
  ck_assert_int_eq(ax_espresso_decide(&q, d, &without), AX_OK);
  ck_assert_int_eq(with.removed, 1);
  ck_assert_int_eq(without.removed, 0);
  ck_assert_int_gt(without.compressed, with.compressed);
}
END_TEST

/* Algorithm 4.2 (Fig. 4.2(c)): GPU codec work delays the computation of the tensors after it;
 * a CPU codec as fast does not, so the offloading moves some GPU-compressed tensors to their
 * CPU twins and F falls; with every tensor ready at once there is no computation to delay. */
START_TEST(offload_moves_codec_work_off_the_gpu) {
  double bytes[4] = {4e6, 4e6, 4e6, 4e6}, compute[4] = {2 * MS, 2 * MS, 2 * MS, 2 * MS};
  AxEspressoProblem p = problem(4, bytes, compute, 2, 2);
  p.gpu = (AxEspressoCodecCost){.enc = {0, 2e9}, .dec = {0, 2e9}};
  p.cpu = p.gpu;
  int S[4];
  ck_assert_int_eq(ax_espresso_greedy(&p, S, NULL), AX_OK);
  int gpu = 0, cpu = 0;
  for (int i = 0; i < 4; i++) gpu += place(S[i]) == AX_ESP_GPU;
  ck_assert_int_gt(gpu, 0);
  double before = time_of(&p, S);
  ck_assert_int_eq(ax_espresso_offload(&p, S), AX_OK);
  for (int i = 0; i < 4; i++) cpu += place(S[i]) == AX_ESP_CPU;
  ck_assert_int_gt(cpu, 0);
  ck_assert(time_of(&p, S) < before);
  AxEspressoDecision d[4];
  AxEspressoSummary sum;
  ck_assert_int_eq(ax_espresso_decide(&p, d, &sum), AX_OK);
  ck_assert_int_gt(sum.offloaded, 0);
}
END_TEST

START_TEST(bad_inputs_are_refused) {
  double bytes[13] = {1e6, 1e6}, compute[13] = {1e-3, 1e-3};
  int S[13] = {0};
  double f;
  AxEspressoDecision d[13];
  AxEspressoProblem p = problem(2, bytes, compute, 8, 8), q;
  q = p, q.n = 0;
  tu_expect_error(ax_espresso_iteration_time(&q, S, &f), "0 tensors");
  q = p, q.bytes = NULL;
  tu_expect_error(ax_espresso_decide(&q, d, NULL), "no tensor sizes");
  bytes[1] = -1;
  tu_expect_error(ax_espresso_decide(&p, d, NULL), "tensor 1 has -1 bytes");
  bytes[1] = 1e6, compute[0] = NAN;
  tu_expect_error(ax_espresso_greedy(&p, S, NULL), "tensor 0 computes");
  compute[0] = 1e-3;
  q = p, q.ranks = 0;
  tu_expect_error(ax_espresso_check(&q), "0 ranks");
  q = p, q.ranks = 6, q.ranks_per_node = 4;
  tu_expect_error(ax_espresso_check(&q), "nodes of 4");
  q = p, q.inter.bytes_per_s = 0;
  tu_expect_error(ax_espresso_check(&q), "inter-node link");
  q = p, q.cpu.dec.latency_s = -1;
  tu_expect_error(ax_espresso_check(&q), "CPU decode");
  q = p, q.ratio = 0;
  tu_expect_error(ax_espresso_check(&q), "ratio");
  q = p, q.allowed = 1u << 4;
  tu_expect_error(ax_espresso_nothing(&q, S), "no uncompressed option");
  S[1] = 2; /* two-level on one node */
  tu_expect_error(ax_espresso_iteration_time(&p, S, &f), "tensor 1: option 2");
  S[1] = AX_ESPRESSO_N_OPTIONS;
  tu_expect_error(ax_espresso_offload(&p, S), "tensor 1: option 28");
  tu_expect_error(ax_espresso_iteration_time(&p, NULL, &f), "no choices");
  tu_expect_error(ax_espresso_decide(&p, NULL, NULL), "no room");
  q = p, q.n = 13;
  for (int i = 0; i < 13; i++) bytes[i] = 1e6, compute[i] = 1e-3;
  tu_expect_error(ax_espresso_exhaustive(&q, S, &f), "at most 12");
}
END_TEST

/* A 48-layer GPT (C = 1600, the GPT-2 XL shape): 12 tensors a layer and 4 more, on 2 nodes of
 * 8 ranks (100 GB/s inside a node, 100 Gb/s between), a 1/32 codec. */
START_TEST(forty_eight_layers_decided) {
  enum { L = 48, N = L * 12 + 4 };
  static double bytes[N], compute[N];
  static AxEspressoDecision d[N];
  const double C = 1600, layer[12] = {C, C, 3 * C * C, 3 * C, C * C, C, C, C, 4 * C * C, 4 * C,
                                      4 * C * C, C};
  int k = 0;
  bytes[k++] = C, bytes[k++] = C; /* the final layer norm, first in backward order */
  for (int l = 0; l < L; l++)
    for (int j = 11; j >= 0; j--) bytes[k++] = layer[j];
  bytes[k++] = 1024 * C, bytes[k++] = 50257 * C;
  for (int i = 0; i < N; i++) bytes[i] *= 4, compute[i] = 20e-6 + bytes[i] * 1.5e-11;
  AxEspressoProblem p = problem(N, bytes, compute, 16, 8);
  p.intra = (AxLinearCost){5e-6, 100e9};
  p.inter = (AxLinearCost){2e-5, 12.5e9};
  p.gpu = (AxEspressoCodecCost){.enc = {2e-5, 200e9}, .dec = {1e-5, 400e9}};
  p.cpu = (AxEspressoCodecCost){.enc = {5e-5, 5e9}, .dec = {2e-5, 10e9}};
  p.ratio = 1.0 / 32;
  AxEspressoSummary sum;
  double t0 = ax_now();
  ck_assert_int_eq(ax_espresso_decide(&p, d, &sum), AX_OK);
  double wall = ax_now() - t0;
  int S[N];
  for (int i = 0; i < N; i++) S[i] = d[i].option;
  expect_near(time_of(&p, S), sum.iteration_s, "the decisions' F");
  ck_assert(sum.iteration_s <= sum.greedy_s && sum.greedy_s <= sum.nothing_s);
  printf("espresso: %d tensors decided in %.3f s (%lld timelines): F %.2f ms, compress-nothing "
         "%.2f ms, after Alg. 4.1 %.2f ms; %d compressed, %d on the CPU, %d removed\n",
         N, wall, sum.evaluations, sum.iteration_s / MS, sum.nothing_s / MS, sum.greedy_s / MS,
         sum.compressed, sum.offloaded, sum.removed);
}
END_TEST

int main(void) {
  Suite *s = suite_create("espresso");
  TCase *tc = tu_tcase(s, "espresso", 300);
  tcase_add_test(tc, option_table);
  tcase_add_test(tc, evaluator_by_hand);
  tcase_add_test(tc, collective_costs_by_hand);
  tcase_add_test(tc, timeline_invariants);
  tcase_add_test(tc, free_link_compresses_nothing);
  tcase_add_test(tc, slow_link_compresses_large_tensors);
  tcase_add_test(tc, queued_tensor_pays_its_share_of_latency);
  tcase_add_test(tc, timed_scheme_takes_its_measured_time_alone);
  tcase_add_test(tc, plain_ring_takes_the_measured_all_reduce);
  tcase_add_test(tc, tensor_before_a_bubble_needs_no_compression);
  tcase_add_test(tc, bubbles_change_the_plan);
  tcase_add_test(tc, offload_moves_codec_work_off_the_gpu);
  tcase_add_test(tc, bad_inputs_are_refused);
  tcase_add_test(tc, greedy_within_5_percent_of_exhaustive);
  tcase_add_test(tc, cpu_only_engine);
  tcase_add_test(tc, forty_eight_layers_decided);
  return tu_run(s);
}
