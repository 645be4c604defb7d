/* test_simulate.c — the schedule simulator (src/sim/sim_engine.h) against timelines worked by
 * hand: 2 stages and 2 micro-batches with fixed costs (every event's start and end), the
 * link queue, the emulated link's held sends, the interleaved all-reduce and AdamW chunks,
 * processor sharing on a CPU with fewer cores than ranks (pooled, waiters sharing it, and per
 * core when pinned), the trainer's binding rule, one stage; the cost model's tail on a GPU
 * machine (the offload's copies over the host link, the uploads' queue) and on a CPU one; the
 * cost model from a synthetic profile (each stage's compute, sends, links, the tied sum, the
 * norm and AdamW, priced by hand), and a message's wait for its receiver on an oversubscribed
 * host. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "models/gpt_stage.h"
#include "src/sim/sim_engine.h"
#include "src/backend/binding_rule.h"
#include "src/core/error.h"
#include "src/sim/sim_costs.h"
#include "testutil.h"

typedef struct {
  int kind, mb;
  double t0, t1;
} Ev;

/* The first events of stage s equal want[0..n) (kinds, micro-batches, exact times); all of
 * them when `all`. */
static void expect_prefix(const AxSimResult *r, int s, const Ev *want, int n, int all) {
  int got;
  const AxTraceEvent *ev = ax_sim_events(r, s, &got);
  for (int i = 0; i < n && i < got; i++) {
    ck_assert_msg(ev[i].kind == want[i].kind && ev[i].mb == want[i].mb,
                  "stage %d event %d: %s mb %d, expected %s mb %d", s, i,
                  ax_trace_kind_name(ev[i].kind), ev[i].mb, ax_trace_kind_name(want[i].kind),
                  want[i].mb);
    ck_assert_msg(ev[i].t0 == want[i].t0 && ev[i].t1 == want[i].t1,
                  "stage %d event %d (%s mb %d): [%g, %g], expected [%g, %g]", s, i,
                  ax_trace_kind_name(ev[i].kind), ev[i].mb, ev[i].t0, ev[i].t1, want[i].t0,
                  want[i].t1);
  }
  ck_assert_int_eq(all ? got : n, n);
  ck_assert_int_ge(got, n);
}

static void expect_events(const AxSimResult *r, int s, const Ev *want, int n) {
  expect_prefix(r, s, want, n, 1);
}

enum { F = AX_EV_FORWARD, B = AX_EV_BACKWARD, S = AX_EV_SEND, W = AX_EV_RECV_WAIT,
       WG = AX_EV_RECV_WAIT_GRAD, AR = AX_EV_ALLREDUCE, OPT = AX_EV_OPTIMIZER,
       PIPE = AX_EV_PIPELINE, STEP = AX_EV_STEP };

/* Two stages, two micro-batches, limit 2: forward 1 s, backward 2 s, a send 0.5 s of the
 * sender's time, the link 0.25 s of latency and no bandwidth term; then two chunks of 1 s of
 * all-reduce and 0.5 s of AdamW each, window 2, and 0.5 s to end the step. */
/* speed: NULL, or each rank's speed when 1 and 2 compute at once. */
static AxSimConfig two_by_two(AxSimTail tail[2], AxSimLink *link, const double *speed) {
  static const double fwd[2] = {1, 1}, bwd[2] = {2, 2}, send[2] = {0.5, 0.5};
  static const double ar[2] = {1, 1}, upd[2] = {0.5, 0.5};
  *link = (AxSimLink){0.25, 0, 0};
  for (int s = 0; s < 2; s++) tail[s] = (AxSimTail){0, 0, 2, ar, upd, 2, 0};
  return (AxSimConfig){.P = 2, .n_micro = 2, .limit = 2, .fwd_s = fwd, .bwd_s = bwd,
                       .send_s = send, .msg_bytes = 1024, .link = link, .speed = speed,
                       .n_speed = speed ? 2 : 0, .copies = 1,
                       .tail = tail, .end_s = 0.5};
}

START_TEST(two_stages_two_micro_batches_exact) {
  AxSimTail tail[2];
  AxSimLink link;
  AxSimConfig c = two_by_two(tail, &link, NULL);
  AxSimResult r;
  ck_assert_int_eq(ax_sim_run(&c, 1, &r), AX_OK);
  /* stage 0 injects both; their activations reach stage 1 at 1.75 and 3.25; the gradients
   * come back at 5.5 and 9; stage 1 runs forward then backward of each at once */
  const Ev s0[] = {{F, 0, 0, 1},       {S, 0, 1, 1.5},    {F, 1, 1.5, 2.5}, {S, 1, 2.5, 3},
                   {WG, 0, 3, 5.5},    {B, 0, 5.5, 7.5},  {WG, 1, 7.5, 9},  {B, 1, 9, 11},
                   {AR, 0, 11, 12},    {OPT, 0, 12, 12.5}, {AR, 1, 12.5, 13}, {OPT, 1, 13, 13.5},
                   {PIPE, -1, 0, 11},  {STEP, -1, 0, 14}};
  const Ev s1[] = {{W, 0, 0, 1.75},      {F, 0, 1.75, 2.75},  {B, 0, 2.75, 4.75},
                   {S, 0, 4.75, 5.25},   {W, 1, 5.25, 5.25},  {F, 1, 5.25, 6.25},
                   {B, 1, 6.25, 8.25},   {S, 1, 8.25, 8.75},  {AR, 0, 8.75, 9.75},
                   {OPT, 0, 9.75, 10.25}, {AR, 1, 10.25, 10.75}, {OPT, 1, 10.75, 11.25},
                   {PIPE, -1, 0, 8.75},  {STEP, -1, 0, 14}};
  expect_events(&r, 0, s0, (int)(sizeof s0 / sizeof s0[0]));
  expect_events(&r, 1, s1, (int)(sizeof s1 / sizeof s1[0]));
  ck_assert(r.step_s == 14 && r.pipeline_s == 11);
  ck_assert(r.pipe_busy_s[0] == 7 && r.pipe_busy_s[1] == 7);
  ck_assert(r.busy_s[0] == 8 && r.busy_s[1] == 8);
  ck_assert_int_eq((int)r.n_events, 16); /* 12 computes and sends, 4 receives */
  ax_sim_result_free(&r);
}
END_TEST

/* The same with a bandwidth term: 1024 bytes at 1/1024 s a byte hold the link 1 s, so the
 * second activation queues behind the first (sent at 1.5 and 3, the link busy until 2.5 and
 * 4). And without recording, the same step time. */
START_TEST(link_serializes_messages) {
  AxSimTail tail[2];
  AxSimLink link;
  AxSimConfig c = two_by_two(tail, &link, NULL);
  link.s_per_byte = 1.0 / 1024;
  AxSimResult r;
  ck_assert_int_eq(ax_sim_run(&c, 1, &r), AX_OK);
  /* activations arrive at 1.5+1+0.25 = 2.75 and max(3, 2.5)+1+0.25 = 4.25 */
  const Ev s1[] = {{W, 0, 0, 2.75},   {F, 0, 2.75, 3.75}, {B, 0, 3.75, 5.75},
                   {S, 0, 5.75, 6.25}, {W, 1, 6.25, 6.25}, {F, 1, 6.25, 7.25},
                   {B, 1, 7.25, 9.25}, {S, 1, 9.25, 9.75}};
  expect_prefix(&r, 1, s1, 8, 0); /* the pipeline part */
  double step = r.step_s;
  ax_sim_result_free(&r);
  ck_assert_int_eq(ax_sim_run(&c, 0, &r), AX_OK);
  ck_assert(r.step_s == step);
  ax_sim_result_free(&r);
}
END_TEST

/* The link emulator's link (held): a message goes out at its sender's next call into the
 * engines (a send or a wait) after it has crossed. Activation 0 is due at 2.75 while stage 0
 * sends activation 1 (2.5-3): out at 3. Activation 1, due at 4.25, finds stage 0 waiting: out
 * then. Gradient 0, due at 7.75, finds stage 1 in its forward and backward of micro-batch 1
 * (6.5-9.5), which make no call: out at the end of the next send (10). Gradient 1 (link 10-11,
 * due 11.25) finds stage 1 done with its pipeline: out then. */
START_TEST(emulated_link_posts_at_the_senders_next_call) {
  AxSimTail tail[2];
  AxSimLink link;
  AxSimConfig c = two_by_two(tail, &link, NULL);
  link.s_per_byte = 1.0 / 1024;
  link.held = 1;
  AxSimResult r;
  ck_assert_int_eq(ax_sim_run(&c, 1, &r), AX_OK);
  const Ev s0[] = {{F, 0, 0, 1},      {S, 0, 1, 1.5},     {F, 1, 1.5, 2.5},  {S, 1, 2.5, 3},
                   {WG, 0, 3, 10},    {B, 0, 10, 12},     {WG, 1, 12, 12},   {B, 1, 12, 14}};
  const Ev s1[] = {{W, 0, 0, 3},       {F, 0, 3, 4},       {B, 0, 4, 6},
                   {S, 0, 6, 6.5},     {W, 1, 6.5, 6.5},   {F, 1, 6.5, 7.5},
                   {B, 1, 7.5, 9.5},   {S, 1, 9.5, 10}};
  expect_prefix(&r, 0, s0, 8, 0);
  expect_prefix(&r, 1, s1, 8, 0);
  ck_assert(r.pipeline_s == 14);
  ax_sim_result_free(&r);
}
END_TEST

/* Clipping: every chunk summed first, then, once the row has the norm (the later stage's sums
 * end at 13), every chunk updated on both stages. */
START_TEST(sums_then_updates) {
  AxSimTail tail[2];
  AxSimLink link;
  AxSimConfig c = two_by_two(tail, &link, NULL);
  tail[0].separate = tail[1].separate = 1;
  AxSimResult r;
  ck_assert_int_eq(ax_sim_run(&c, 1, &r), AX_OK);
  const Ev s0[] = {{AR, 0, 11, 12}, {AR, 1, 12, 13}, {OPT, 0, 13, 13.5}, {OPT, 1, 13.5, 14}};
  const Ev s1[] = {{AR, 0, 8.75, 9.75}, {AR, 1, 9.75, 10.75}, {OPT, 0, 13, 13.5},
                   {OPT, 1, 13.5, 14}};
  int n0, n1;
  const AxTraceEvent *e0 = ax_sim_events(&r, 0, &n0), *e1 = ax_sim_events(&r, 1, &n1);
  for (int i = 0; i < 4; i++) {
    ck_assert(e0[8 + i].kind == s0[i].kind && e0[8 + i].mb == s0[i].mb);
    ck_assert(e0[8 + i].t0 == s0[i].t0 && e0[8 + i].t1 == s0[i].t1);
    ck_assert(e1[8 + i].kind == s1[i].kind && e1[8 + i].mb == s1[i].mb);
    ck_assert(e1[8 + i].t0 == s1[i].t0 && e1[8 + i].t1 == s1[i].t1);
  }
  ck_assert(r.step_s == 14.5);
  ax_sim_result_free(&r);
}
END_TEST

/* One core for the two ranks: when both compute, each runs at half speed. */
START_TEST(processor_sharing) {
  AxSimTail tail[2];
  AxSimLink link;
  static const double half[2] = {1, 0.5};
  AxSimConfig c = two_by_two(tail, &link, half);
  AxSimResult r;
  ck_assert_int_eq(ax_sim_run(&c, 1, &r), AX_OK);
  /* stage 1's first forward starts at 1.75, while stage 0 runs its second (from 1.5, alone
   * until then): both at half speed, stage 0's 0.75 s left end at 3.25, when stage 1 has
   * 0.25 s left; stage 0's send (0.5 s) shares the core with it: it ends at 3.75 */
  const Ev s0[] = {{F, 0, 0, 1}, {S, 0, 1, 1.5}, {F, 1, 1.5, 3.25}};
  const Ev s1[] = {{W, 0, 0, 1.75}, {F, 0, 1.75, 3.75}};
  expect_prefix(&r, 0, s0, 3, 0);
  expect_prefix(&r, 1, s1, 2, 0);
  ck_assert(r.step_s > 14);
  ax_sim_result_free(&r);
}
END_TEST

/* Pinned to cores (speeds 1 and 1: two cores, no slowdown between them): on one core the two
 * stages share it, so the timeline is processor_sharing's; each on its own core, it is the
 * unshared one of two_stages_two_micro_batches_exact (step 14). */
START_TEST(per_core_sharing) {
  AxSimTail tail[2];
  AxSimLink link;
  static const double two_cores[2] = {1, 1};
  static const int same[2] = {0, 0}, own[2] = {1, 0};
  AxSimConfig c = two_by_two(tail, &link, two_cores);
  c.core = same;
  AxSimResult r;
  ck_assert_int_eq(ax_sim_run(&c, 1, &r), AX_OK);
  const Ev s0[] = {{F, 0, 0, 1}, {S, 0, 1, 1.5}, {F, 1, 1.5, 3.25}};
  const Ev s1[] = {{W, 0, 0, 1.75}, {F, 0, 1.75, 3.75}};
  expect_prefix(&r, 0, s0, 3, 0);
  expect_prefix(&r, 1, s1, 2, 0);
  /* the updates: both stages on the core, 0.5 s each at half speed */
  int n;
  const AxTraceEvent *ev = ax_sim_events(&r, 1, &n);
  for (int i = 0; i < n; i++)
    if (ev[i].kind == OPT) ck_assert(ev[i].t1 - ev[i].t0 == 1);
  ax_sim_result_free(&r);
  c.core = own;
  ck_assert_int_eq(ax_sim_run(&c, 1, &r), AX_OK);
  const Ev u0[] = {{F, 0, 0, 1}, {S, 0, 1, 1.5}, {F, 1, 1.5, 2.5}, {S, 1, 2.5, 3}};
  expect_prefix(&r, 0, u0, 4, 0);
  ck_assert(r.step_s == 14);
  ax_sim_result_free(&r);
}
END_TEST

/* When stage 0's first event, a forward, ends. */
static double first_forward_end(const AxSimConfig *c) {
  AxSimResult r;
  ck_assert_int_eq(ax_sim_run(c, 1, &r), AX_OK);
  int n;
  const AxTraceEvent *ev = ax_sim_events(&r, 0, &n);
  ck_assert(n > 0 && ev[0].kind == F);
  double t1 = ev[0].t1;
  ax_sim_result_free(&r);
  return t1;
}

/* Not pinned, cores oversubscribed, weight 1: a waiting rank takes its share as a computing one
 * does, so both stages run at speed[2] = 0.5 throughout (stage 0's forward 1 s takes 2, its send 1;
 * the activation lands at 3.25). */
START_TEST(waiters_share_the_host) {
  AxSimTail tail[2];
  AxSimLink link;
  static const double half[2] = {1, 0.5};
  AxSimConfig c = two_by_two(tail, &link, half);
  c.waiter_weight = 1;
  AxSimResult r;
  ck_assert_int_eq(ax_sim_run(&c, 1, &r), AX_OK);
  const Ev s0[] = {{F, 0, 0, 2}, {S, 0, 2, 3}, {F, 1, 3, 5}};
  const Ev s1[] = {{W, 0, 0, 3.25}, {F, 0, 3.25, 5.25}};
  expect_prefix(&r, 0, s0, 3, 0);
  expect_prefix(&r, 1, s1, 2, 0);
  ax_sim_result_free(&r);
  /* at weight 0.5, one computing and one waiting: k = 1.5, speed 0.75 (between 1 and 0.5):
   * stage 0's first forward takes 4/3 s */
  c.waiter_weight = 0.5;
  ck_assert(fabs(first_forward_end(&c) - 4.0 / 3) < 1e-12);
}
END_TEST

/* The profile's waiting speeds (an emulated link) replace the weight: one stage computing
 * beside one waiting runs at waiting[0], both at waiting[1]; with two copies of the row the
 * host has twice the computing ranks (one stage computing: waiting[1]). */
START_TEST(waiting_speeds_measured) {
  AxSimTail tail[2];
  AxSimLink link;
  static const double half[2] = {1, 0.5}, waiting[4] = {0.8, 0.5, 0.4, 0.25};
  AxSimConfig c = two_by_two(tail, &link, half);
  c.waiter_weight = 1;
  c.waiting = waiting;
  AxSimResult r;
  ck_assert_int_eq(ax_sim_run(&c, 1, &r), AX_OK);
  /* stage 0's forward alone (1 s at 0.8), its send (0.5 s at 0.8) to 1.875, the activation
   * at stage 1 at 2.125; stage 0's next forward meanwhile from 1.875 */
  const Ev s0[] = {{F, 0, 0, 1.25}, {S, 0, 1.25, 1.875}};
  const Ev s1[] = {{W, 0, 0, 2.125}};
  expect_prefix(&r, 0, s0, 2, 0);
  expect_prefix(&r, 1, s1, 1, 0);
  ax_sim_result_free(&r);
  c.copies = 2;
  ck_assert(fabs(first_forward_end(&c) - 2.0) < 1e-12);
}
END_TEST

/* The trainer's binding rule (binding_rule.h): own cores when the ranks' threads fit, else
 * none pinned. */
START_TEST(binding_rule) {
  ck_assert_int_eq(ax_binding_first_core(2, 1, 0, 2, 1), 0);
  ck_assert_int_eq(ax_binding_first_core(2, 1, 1, 2, 1), 1);
  ck_assert_int_eq(ax_binding_first_core(8, 2, 3, 4, 1), 6);
  ck_assert_int_eq(ax_binding_first_core(2, 1, 2, 4, 1), -1); /* 4 ranks on 2 cores */
  ck_assert_int_eq(ax_binding_first_core(4, 2, 1, 3, 1), -1); /* 6 threads on 4 cores */
  ck_assert_int_eq(ax_binding_first_core(2, 1, 0, 1, 0), -1); /* --bind 0 */
  ck_assert_int_eq(ax_binding_first_core(0, 1, 0, 1, 1), -1); /* no whole core */
}
END_TEST

/* One stage: forwards and backwards one after another, no messages. */
START_TEST(one_stage) {
  static const double fwd[1] = {1}, bwd[1] = {2}, send[1] = {0}, ar[1] = {0}, upd[1] = {0.5};
  AxSimTail tail = {0.25, 0, 1, ar, upd, 2, 0};
  AxSimConfig c = {.P = 1, .n_micro = 3, .limit = 1, .fwd_s = fwd, .bwd_s = bwd,
                   .send_s = send, .tail = &tail};
  AxSimResult r;
  ck_assert_int_eq(ax_sim_run(&c, 1, &r), AX_OK);
  const Ev s0[] = {{F, 0, 0, 1},   {B, 0, 1, 3},   {F, 1, 3, 4},       {B, 1, 4, 6},
                   {F, 2, 6, 7},   {B, 2, 7, 9},   {OPT, 0, 9.25, 9.75}, {PIPE, -1, 0, 9},
                   {STEP, -1, 0, 9.75}};
  expect_events(&r, 0, s0, (int)(sizeof s0 / sizeof s0[0]));
  ax_sim_result_free(&r);
}
END_TEST

/* The cost model of one 1x1 step of a tiny model in chunks of 1000 parameters on machine m,
 * with `more` options. */
static void build_one_rank(AxSimModel *sm, const AxMachine *m, const char *more, size_t *n) {
  char args[512];
  snprintf(args, sizeof args, "--layers 2 --hidden 64 --heads 2 --seq 16 --vocab 256 --batch 4 "
           "--bucket-size 1000 --coarsening 1 --precision bf16 %s", more);
  AxTrainConfig cfg;
  tu_train_config(&cfg, args);
  ck_assert_msg(ax_sim_model_build(sm, &cfg, m, NULL) == AX_OK, "%s", ax_error_message());
  AxStageLayout lay;
  ax_stage_layout(&lay, &sm->model, 0, sm->model.layers, 1, 1);
  *n = lay.total;
  ax_train_config_free(&cfg);
}

/* A GPU: the gradients go down as fp32 over the host link, then the norm (clipping) before any
 * update; each chunk's AdamW (28 bytes over host_bw), and the uploads (fp32 over the link)
 * queued behind the AdamWs: with uploads slower than AdamW they end one AdamW plus every upload
 * after the start. A CPU machine copies nothing. */
START_TEST(host_copies_and_the_uploads_queue) {
  AxMachine m = {.name = "g", .gpus_per_node = 1, .intra_bytes_per_s = 1e12,
                 .inter_bytes_per_s = 1e12, .device = "H100", .host_bytes_per_s = 28e9,
                 .host_link_bytes_per_s = 2e9, .peak_tflops = 100};
  AxSimModel sm;
  size_t n;
  build_one_rank(&sm, &m, "", &n);
  const AxSimTail *t = &sm.tail[0];
  int k = t->n_chunks;
  ck_assert_int_eq(k, (int)((n + 999) / 1000));
  ck_assert(t->separate);
  ck_assert_double_eq_tol(t->before_s, n * (4 / 2e9 + 4 / 28e9), 1e-15);
  double adamw = 1000 * 1e-9, upload = 1000 * 2e-9, last = (double)(n - 1000 * (k - 1));
  for (int c = 0; c < k - 1; c++) ck_assert_double_eq_tol(t->update_s[c], adamw, 1e-15);
  double sum = 0;
  for (int c = 0; c < k; c++) sum += t->update_s[c];
  /* the first AdamW, then k - 1 full uploads back to back and the last, shorter one */
  ck_assert_double_eq_tol(sum, adamw + (k - 1) * upload + last * 2e-9, 1e-12);
  ax_sim_model_free(&sm);

  snprintf(m.device, sizeof m.device, "cpu");
  m.cores_per_node = 2;
  build_one_rank(&sm, &m, "", &n);
  t = &sm.tail[0];
  ck_assert_double_eq_tol(t->before_s, n * 4 / 28e9, 1e-15);
  sum = 0;
  for (int c = 0; c < t->n_chunks; c++) sum += t->update_s[c];
  ck_assert_double_eq_tol(sum, n * 28 / 28e9, 1e-12);
  ax_sim_model_free(&sm);
}
END_TEST

/* --optimizer device on a GPU: the norm (the bf16 gradient read) then one AdamW over the stage
 * (fp32 weights and moments in and out, the gradient in, the bf16 weights out) at the device's
 * memory bandwidth; nothing crosses the host link. A device of unknown memory is an error. */
START_TEST(device_optimizer_in_device_memory) {
  AxMachine m = {.name = "g", .gpus_per_node = 1, .intra_bytes_per_s = 1e12,
                 .inter_bytes_per_s = 1e12, .device = "H100", .host_bytes_per_s = 28e9,
                 .host_link_bytes_per_s = 2e9, .device_mem_bytes_per_s = 1e12, .peak_tflops = 100};
  AxSimModel sm;
  size_t n;
  build_one_rank(&sm, &m, "--optimizer device", &n);
  const AxSimTail *t = &sm.tail[0];
  ck_assert_int_eq(t->n_chunks, 1);
  ck_assert(t->separate);
  ck_assert_double_eq_tol(t->before_s, n * 2 / 1e12, 1e-15);
  ck_assert_double_eq_tol(t->update_s[0], n * 28 / 1e12, 1e-15);
  ck_assert_double_eq(t->allreduce_s[0], 0);
  ax_sim_model_free(&sm);
  m.device_mem_bytes_per_s = 0;
  AxTrainConfig cfg;
  tu_train_config(&cfg, "--layers 2 --hidden 64 --heads 2 --seq 16 --vocab 256 --batch 4 "
                        "--optimizer device");
  tu_expect_error(ax_sim_model_build(&sm, &cfg, &m, NULL), "no device memory bandwidth");
  ax_train_config_free(&cfg);
}
END_TEST

/* The cost model from a synthetic profile, priced by hand: 4 blocks on a 2 x 1 grid (2 blocks a
 * stage) at the profile's per-block seconds plus what each end adds; a send's copy at the
 * profile's copy bandwidth and the link within the profiled host at half of it; the tied
 * embedding's ring of 2 with its local sums; clipping: the norm over the stage before any
 * update, then AdamW per parameter; the speeds as measured. A profile of another shape is
 * refused. */
START_TEST(pricing_from_a_profile) {
  AxSimProfile p = {.device = "cpu", .threads = 1, .micro_batch = 1, .seq = 16, .hidden = 64,
                    .heads = 2, .vocab = 256, .stage_blocks = 2, .block_forward_s = 1e-3,
                    .block_backward_s = 2e-3, .first_forward_s = 0.25e-3,
                    .first_backward_s = 0.5e-3, .last_forward_s = 0.75e-3,
                    .last_backward_s = 4e-3, .adamw_s_per_elem = 2e-9, .norm_s_per_elem = 1e-9,
                    .reduce_s_per_elem = 0.5e-9, .copy_bytes_per_s = 8e9,
                    .concurrency_speed = "1,0.75", .waiting_speed = "none"};
  AxMachine m;
  ax_sim_profile_machine(&p, 2, &m);
  m.cores_per_node = 2; /* a core a rank, whatever this host has: no hand-off wait */
  AxTrainConfig cfg;
  tu_train_config(&cfg, "--layers 4 --hidden 64 --heads 2 --seq 16 --vocab 256 --batch 4 "
                        "--micro-batch 1 --g-inter 2 --threads 1 --bucket-size 1000 "
                        "--coarsening 1");
  AxSimModel sm;
  ck_assert_msg(ax_sim_model_build(&sm, &cfg, &m, &p) == AX_OK, "%s", ax_error_message());
  ck_assert_double_eq_tol(sm.fwd[0], 2 * 1e-3 + 0.25e-3, 1e-15);
  ck_assert_double_eq_tol(sm.bwd[0], 2 * 2e-3 + 0.5e-3, 1e-15);
  ck_assert_double_eq_tol(sm.fwd[1], 2 * 1e-3 + 0.75e-3, 1e-15);
  ck_assert_double_eq_tol(sm.bwd[1], 2 * 2e-3 + 4e-3, 1e-15);
  double msg = 16 * 64 * 4; /* one micro-batch's activation, fp32 */
  ck_assert_double_eq_tol(sm.send[0], msg / 8e9, 1e-18);
  ck_assert_double_eq_tol(sm.link[0].s_per_byte, 1 / 4e9, 1e-21);
  ck_assert_double_eq(sm.link[0].alpha_s, 0);
  ck_assert_int_eq(sm.n_speed, 2);
  ck_assert_double_eq(sm.speed[1], 0.75);
  for (int s = 0; s < 2; s++) {
    AxStageLayout lay;
    ax_stage_layout(&lay, &sm.model, 2 * s, 2 * s + 2, s == 0, s == 1);
    const AxSimTail *t = &sm.tail[s];
    double n = (double)lay.total, tied = 256.0 * 64;
    ck_assert(t->separate);
    ck_assert_int_eq(t->n_chunks, (int)ceil(n / 1000));
    ck_assert_double_eq_tol(t->before_s, n * 1e-9, 1e-15);
    ck_assert_double_eq_tol(t->update_s[0], 1000 * 2e-9, 1e-15);
    ck_assert_double_eq(t->allreduce_s[0], 0); /* one row */
    /* a ring of 2: 2 steps of half the embedding over the link, and half of it summed */
    ck_assert_double_eq_tol(t->tied_s, 2 * (tied * 4 / 2 / 4e9) + tied / 2 * 0.5e-9, 1e-15);
  }
  ax_sim_model_free(&sm);
  p.seq = 32;
  tu_expect_error(ax_sim_model_build(&sm, &cfg, &m, &p), "measured at --seq 32");
  ax_train_config_free(&cfg);
}
END_TEST

/* A profile that timed the host's all-reduce (2 ranks, 100 us + bytes / 2 GB/s; sums at 0.4
 * ns an element): a ring message's share of it by hand, 1 / 2e9 - (1/2) 0.4e-9 / 4 = 0.45 ns a
 * byte, over 2 (N - 1) / N = 1: the column ring of a 1 x 2 grid takes it, where half the
 * memcpy bandwidth (1 / 4e9 = 0.25 ns) priced it before; on 4 ranks, 0.5 ns - (3/4) 0.1 ns
 * over 6/4; not measured (or sums above the measurement): the machine's link, as before. */
START_TEST(column_ring_from_the_measured_allreduce) {
  AxSimProfile p = {.device = "cpu", .threads = 1, .micro_batch = 1, .seq = 16, .hidden = 64,
                    .heads = 2, .vocab = 256, .stage_blocks = 4, .block_forward_s = 1e-3,
                    .block_backward_s = 2e-3, .adamw_s_per_elem = 2e-9, .norm_s_per_elem = 1e-9,
                    .reduce_s_per_elem = 0.4e-9, .copy_bytes_per_s = 8e9,
                    .concurrency_speed = "1,1", .waiting_speed = "none", .allreduce_ranks = 2,
                    .allreduce_latency_s = 100e-6, .allreduce_bytes_per_s = 2e9};
  ck_assert_double_eq_tol(ax_sim_profile_ring_s_per_byte(&p), 0.45e-9, 1e-21);
  AxMachine m;
  ax_sim_profile_machine(&p, 2, &m);
  m.cores_per_node = 2;
  AxTrainConfig cfg;
  tu_train_config(&cfg, "--layers 4 --hidden 64 --heads 2 --seq 16 --vocab 256 --batch 4 "
                        "--micro-batch 1 --g-data 2 --threads 1 --bucket-size 1000 "
                        "--coarsening 1");
  AxSimModel sm;
  ck_assert_msg(ax_sim_model_build(&sm, &cfg, &m, &p) == AX_OK, "%s", ax_error_message());
  /* a full chunk of 1000 elements: 2 messages of 2000 bytes, 500 elements summed */
  ck_assert_double_eq_tol(sm.tail[0].allreduce_s[0], 2 * 2000 * 0.45e-9 + 500 * 0.4e-9, 1e-15);
  ax_sim_model_free(&sm);
  p.allreduce_ranks = 4;
  ck_assert_double_eq_tol(ax_sim_profile_ring_s_per_byte(&p),
                          (0.5e-9 - 0.75 * 0.1e-9) * 4 / 6, 1e-21);
  p.allreduce_bytes_per_s = 1e12; /* the sums alone take longer: nothing left for a message */
  ck_assert(ax_sim_profile_ring_s_per_byte(&p) == 0);
  p.allreduce_ranks = 0;
  p.allreduce_bytes_per_s = 2e9;
  ck_assert(ax_sim_profile_ring_s_per_byte(&p) == 0);
  ck_assert_msg(ax_sim_model_build(&sm, &cfg, &m, &p) == AX_OK, "%s", ax_error_message());
  ck_assert_double_eq_tol(sm.tail[0].allreduce_s[0], 2 * 2000 / 4e9 + 500 * 0.4e-9, 1e-15);
  ax_sim_model_free(&sm);
  ax_train_config_free(&cfg);
}
END_TEST

/* An oversubscribed host (4 ranks of 1 thread on 2 cores): every message waits 0.5 ms for its
 * receiver to be scheduled, priced by hand: the pipeline link's latency, each of the column
 * ring's 2 (D - 1) steps, each round of the step's agreements at its end, 2 (log2 P + log2
 * ranks); over the emulated link (waits that sleep on a doorbell) on top of the link's own
 * latency (0 in "1Gbps"). With a core a rank, no such wait. */
START_TEST(oversubscribed_handoff) {
  AxSimProfile p = {.device = "cpu", .threads = 1, .micro_batch = 1, .seq = 16, .hidden = 64,
                    .heads = 2, .vocab = 256, .stage_blocks = 2, .block_forward_s = 1e-3,
                    .block_backward_s = 2e-3, .adamw_s_per_elem = 2e-9, .norm_s_per_elem = 1e-9,
                    .reduce_s_per_elem = 0.5e-9, .copy_bytes_per_s = 8e9,
                    .concurrency_speed = "1,0.75,0.6,0.5", .waiting_speed = "none"};
  const char *grid = "--layers 4 --hidden 64 --heads 2 --seq 16 --vocab 256 --batch 4 "
                     "--micro-batch 1 --g-inter 2 --g-data 2 --threads 1 --bucket-size 1000 "
                     "--coarsening 1";
  static const struct {
    int cores;
    const char *more;
    double handoff, column_s_per_byte; /* the ring's: within the host, or the emulated link */
  } cases[] = {{2, "", 0.5e-3, 2 / 8e9},
               {4, "", 0, 2 / 8e9},
               {2, "--ranks-per-node 2 --emulate-link 1Gbps", 0.5e-3, 1 / 1.25e8}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    AxMachine m;
    ax_sim_profile_machine(&p, 4, &m);
    m.cores_per_node = cases[i].cores;
    char args[512];
    snprintf(args, sizeof args, "%s %s", grid, cases[i].more);
    AxTrainConfig cfg;
    tu_train_config(&cfg, args);
    AxSimModel sm;
    ck_assert_msg(ax_sim_model_build(&sm, &cfg, &m, &p) == AX_OK, "%s", ax_error_message());
    double h = cases[i].handoff;
    ck_assert_double_eq_tol(sm.handoff_s, h, 1e-18);
    ck_assert_double_eq_tol(sm.link[0].alpha_s, h, 1e-18);
    /* a full chunk of 1000 fp32 elements over the column's ring of 2 */
    double ring = 2 * (h + 1000 * 4 / 2 * cases[i].column_s_per_byte) + 1000 / 2 * 0.5e-9;
    ck_assert_double_eq_tol(sm.tail[0].allreduce_s[0], ring, 1e-15);
    ck_assert_double_eq_tol(sm.sim.end_s, 2 * (1 + 2) * h, 1e-15);
    ax_sim_model_free(&sm);
    ax_train_config_free(&cfg);
  }
}
END_TEST

/* The profile times AdamW, the norm and the copies over the largest stage's parameters (a
 * rank's share), counted here by hand: the embedding 50304 x 512 (the padded vocabulary), the
 * positions 64 x 512, a block 12 C^2 + 13 C, the final LayerNorm 2 C; the last of two stages
 * holds its copy of the tied embedding. Clamped to [4M, 128M]. */
START_TEST(profile_elements_follow_the_largest_stage) {
  const size_t wte = 50304 * 512, wpe = 64 * 512, block = 12 * 512 * 512 + 13 * 512, lnf = 1024;
  static const char *shape = "--layers 4 --hidden 512 --heads 8 --seq 64 --vocab 50257 "
                             "--batch 4 --micro-batch 2";
  const struct {
    const char *more;
    size_t elems;
  } cases[] = {{"", wte + wpe + 4 * block + lnf},
               {"--g-inter 2", wte + wpe + 2 * block},
               {"--g-inter 2 --stage-layers 1,3", 3 * block + lnf + wte},
               {"--gx 2", (wte + wpe + 4 * block + lnf) / 2},
               {"--gx 8 --gy 4", AX_SIM_PROFILE_MIN_ELEMS}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char args[256];
    snprintf(args, sizeof args, "%s %s", shape, cases[i].more);
    AxTrainConfig cfg;
    tu_train_config(&cfg, args);
    ck_assert_msg(ax_sim_profile_elems(&cfg) == cases[i].elems, "%s: %zu, not %zu", args,
                  ax_sim_profile_elems(&cfg), cases[i].elems);
    ax_train_config_free(&cfg);
  }
  AxTrainConfig big;
  tu_train_config(&big, "--layers 24 --hidden 2048 --heads 16 --seq 1024 --vocab 50257 --batch 8");
  ck_assert_uint_eq(ax_sim_profile_elems(&big), AX_SIM_PROFILE_MAX_ELEMS);
  ax_train_config_free(&big);
}
END_TEST

int main(void) {
  Suite *s = suite_create("simulate");
  TCase *tc = tu_tcase(s, "simulate", 120);
  tcase_add_test(tc, two_stages_two_micro_batches_exact);
  tcase_add_test(tc, link_serializes_messages);
  tcase_add_test(tc, emulated_link_posts_at_the_senders_next_call);
  tcase_add_test(tc, sums_then_updates);
  tcase_add_test(tc, processor_sharing);
  tcase_add_test(tc, per_core_sharing);
  tcase_add_test(tc, waiters_share_the_host);
  tcase_add_test(tc, waiting_speeds_measured);
  tcase_add_test(tc, binding_rule);
  tcase_add_test(tc, one_stage);
  tcase_add_test(tc, host_copies_and_the_uploads_queue);
  tcase_add_test(tc, device_optimizer_in_device_memory);
  tcase_add_test(tc, pricing_from_a_profile);
  tcase_add_test(tc, column_ring_from_the_measured_allreduce);
  tcase_add_test(tc, oversubscribed_handoff);
  tcase_add_test(tc, profile_elements_follow_the_largest_stage);
  int rc = tu_run(s);
  tu_cleanup();
  return rc;
}
