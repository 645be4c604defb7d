/* scheduler.c — Algorithm 2 of axonn-ipdps22 over the p2p engine; see scheduler.h. */
#include "scheduler.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mpi/mpi_util.h"
#include "src/core/error.h"
#include "src/core/watchdog.h"

int ax_sched_slots(int stage, int P, int limit) { return stage == P - 1 ? 1 : limit; }

static int init(AxScheduler *s, const AxSchedConfig *c) {
  memset(s, 0, sizeof *s);
  if (c->limit < 1) return AX_FAIL("--pipeline-limit must be at least 1 (got %d)", c->limit);
  s->stage = c->stage;
  s->P = c->P;
  s->limit = c->limit;
  s->n_slots = ax_sched_slots(c->stage, c->P, c->limit);
  s->ops = c->ops;
  s->trace = c->trace;
  s->max_micro = c->max_micro;
  s->slot_of = ax_malloc((size_t)c->max_micro * sizeof *s->slot_of);
  s->slot_used = ax_calloc((size_t)s->n_slots, sizeof *s->slot_used);
  s->got[0] = ax_calloc((size_t)c->max_micro + 1, 1);
  s->got[1] = ax_calloc((size_t)c->max_micro + 1, 1);
  s->backprop = c->backprop;
  s->lockstep = c->lockstep ? *c->lockstep : MPI_COMM_NULL;
  for (int dir = 0; dir < 2; dir++) s->compressed[dir] = ax_calloc((size_t)c->max_micro + 1, 1);
  if (!s->slot_of || !s->slot_used || !s->got[0] || !s->got[1] || !s->compressed[0] ||
      !s->compressed[1])
    return AX_ERR;
  if (c->max_micro > (1 << 29)) return AX_FAIL("%d micro-batches cannot be tagged", c->max_micro);
  for (int i = 0; i < c->max_micro; i++) s->slot_of[i] = -1;
  if (c->P == 1) return AX_OK; /* no neighbours, no messages */
  AxP2PConfig pc = {.comm = c->pipe,
                    .prev = c->stage > 0 ? c->stage - 1 : MPI_PROC_NULL,
                    .next = c->stage < c->P - 1 ? c->stage + 1 : MPI_PROC_NULL,
                    .bytes = c->act_bytes,
                    .pool = c->limit + 1,
                    .be = c->be,
                    .cc = c->cc,
                    .device_buffers = c->device_buffers,
                    .sized = c->backprop != NULL};
  if (c->backprop && ax_backprop_max_bytes(c->backprop) > c->act_bytes)
    return AX_FAIL("--compress-backprop: a compressed message of %zu bytes is larger than the "
                   "%zu it replaces; use a lower rank", ax_backprop_max_bytes(c->backprop),
                   c->act_bytes);
  return ax_p2p_init(&s->p2p, &pc);
}

int ax_sched_init(AxScheduler *s, const AxSchedConfig *cfg) {
  int rc = init(s, cfg);
  if (rc != AX_OK) ax_sched_destroy(s); /* what was built so far */
  return rc;
}

void ax_sched_destroy(AxScheduler *s) {
  if (s->P > 1 && s->p2p.comm) ax_p2p_destroy(&s->p2p);
  free(s->slot_of);
  free(s->slot_used);
  free(s->got[0]);
  free(s->got[1]);
  free(s->compressed[0]);
  free(s->compressed[1]);
  memset(s, 0, sizeof *s);
}

static int take_slot(AxScheduler *s, int mb) {
  if (mb < 0 || mb >= s->max_micro)
    return AX_FAIL("internal: micro-batch %d outside 0..%d", mb, s->max_micro - 1);
  for (int i = 0; i < s->n_slots; i++) {
    if (!s->slot_used[i]) {
      s->slot_used[i] = 1;
      s->slot_of[mb] = i;
      return AX_OK;
    }
  }
  return AX_FAIL("internal: stage %d has all %d stash slots in use", s->stage, s->n_slots);
}

static void release_slot(AxScheduler *s, int mb) {
  s->slot_used[s->slot_of[mb]] = 0;
  s->slot_of[mb] = -1;
}

static void debug_delay(const AxScheduler *s, int forward) {
  int ms = s->delay_ms + (forward ? s->forward_ms : s->backward_ms);
  if (ms <= 0) return;
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* --debug-hang-mode sleep: a forward that never returns (the watchdog ends the job). */
static void debug_hang(const AxScheduler *s) {
  if (s->hang != AX_SCHED_HANG_SLEEP) return;
  for (;;) nanosleep(&(struct timespec){1, 0}, NULL);
}

/* Where received messages are (what the stage callbacks are told). */
static AxMemKind received_mem(const AxScheduler *s) { return s->P > 1 ? s->p2p.mem : AX_MEM_HOST; }

static int run_forward(AxScheduler *s, int mb, const void *input, const void **out) {
  AX_WD_NOTE(-1, "computing the forward of micro-batch %d", mb);
  debug_delay(s, 1);
  debug_hang(s);
  double t0 = ax_trace_begin(s->trace);
  AX_TRY(s->ops.forward(s->ops.ctx, mb, s->slot_of[mb], input, received_mem(s), out));
  ax_trace_end(s->trace, AX_EV_FORWARD, mb, t0);
  return AX_OK;
}

/* A gradient from the next stage as the backward callback takes it: rebuilt when it came
 * compressed. */
static int gradient_input(AxScheduler *s, int compressed, const void **dout, AxMemKind *mem) {
  *mem = received_mem(s);
  if (!compressed) return AX_OK;
  const float *rebuilt;
  AX_TRY(ax_backprop_decode(s->backprop, *dout, s->p2p.got_bytes, *mem, &rebuilt));
  *dout = rebuilt;
  *mem = AX_MEM_HOST;
  return AX_OK;
}

static int run_backward(AxScheduler *s, int mb, const void *dout, int compressed,
                        const void **din) {
  AX_WD_NOTE(-1, "computing the backward of micro-batch %d", mb);
  debug_delay(s, 0);
  double t0 = ax_trace_begin(s->trace);
  AxMemKind mem;
  AX_TRY(gradient_input(s, compressed, &dout, &mem));
  AX_TRY(s->ops.backward(s->ops.ctx, mb, s->slot_of[mb], dout, mem, din));
  ax_trace_end(s->trace, AX_EV_BACKWARD, mb, t0);
  release_slot(s, mb);
  return AX_OK;
}

/* A gradient to the previous stage the rule says goes compressed: encoded, sent from the host. */
static int send_compressed(AxScheduler *s, int mb, const void *data) {
  const void *msg;
  size_t bytes;
  AX_TRY(ax_backprop_encode(s->backprop, data, &msg, &bytes));
  s->compressed[0][mb] = 1;
  return ax_p2p_send_host(&s->p2p, 0, 2 * mb + 1, msg, bytes);
}

static int send(AxScheduler *s, int to_next, int mb, const void *data) {
  if (s->hang == AX_SCHED_HANG_DROP) { /* --debug-hang-mode drop: the message is lost */
    s->hang = AX_SCHED_HANG_NONE;
    return AX_OK;
  }
  double t0 = ax_trace_begin(s->trace);
  if (!to_next && ax_backprop_message_compressed(s->backprop, s->stage, mb, s->n_now))
    AX_TRY(send_compressed(s, mb, data));
  else
    AX_TRY(ax_p2p_send(&s->p2p, to_next, 2 * mb, data));
  ax_trace_end(s->trace, AX_EV_SEND, mb, t0);
  return AX_OK;
}

/* ------------------------------------------------------------------ what a wait waits for */

static void begin_pass(AxScheduler *s, int n_micro) {
  s->n_now = n_micro;
  for (int dir = 0; dir < 2; dir++) {
    memset(s->got[dir], 0, (size_t)n_micro);
    memset(s->compressed[dir], 0, (size_t)n_micro);
    s->low[dir] = 0;
  }
}

/* The lowest micro-batch still to come from direction dir (n_now when none). */
static int lowest_missing(AxScheduler *s, int dir) {
  while (s->low[dir] < s->n_now && s->got[dir][s->low[dir]]) s->low[dir]++;
  return s->low[dir];
}

/* The lowest micro-batch forwarded here whose gradient has not come back; -1 when none. */
static int awaited_gradient(AxScheduler *s) {
  for (int mb = lowest_missing(s, AX_FROM_NEXT); mb < s->n_now; mb++)
    if (!s->got[AX_FROM_NEXT][mb] && s->slot_of[mb] >= 0) return mb;
  return -1;
}

static void note_wait(AxScheduler *s) {
  int act = s->stage > 0 ? lowest_missing(s, AX_FROM_PREV) : s->n_now;
  int grad = s->stage < s->P - 1 ? awaited_gradient(s) : -1;
  int wp = s->p2p.world[AX_FROM_PREV], wn = s->p2p.world[AX_FROM_NEXT];
  if (act < s->n_now && grad >= 0)
    AX_WD_NOTE(wp, "waiting for the activation of micro-batch %d from stage %d (rank %d) or the "
               "gradient of micro-batch %d from stage %d (rank %d)", act, s->stage - 1, wp, grad,
               s->stage + 1, wn);
  else if (act < s->n_now)
    AX_WD_NOTE(wp, "waiting for the activation of micro-batch %d from stage %d (rank %d)", act,
               s->stage - 1, wp);
  else if (grad >= 0)
    AX_WD_NOTE(wn, "waiting for the gradient of micro-batch %d from stage %d (rank %d)", grad,
               s->stage + 1, wn);
  else
    AX_WD_NOTE(-1, "waiting for a pipeline message");
}

/* The form a message from direction dir for micro-batch mb must have: compressed (1) only for
 * the gradients the rule picks. */
static int expected_form(const AxScheduler *s, AxP2PDir dir, int mb) {
  return dir == AX_FROM_NEXT &&
         ax_backprop_message_compressed(s->backprop, s->stage + 1, mb, s->n_now);
}

/* A message must belong to a micro-batch of this pass, be the first from its direction for it
 * and have the form the rule says (its size checked as it is rebuilt): anything else (a stray,
 * repeated or disagreeing message) fails the pass before it is computed. */
static int check_arrival(AxScheduler *s, AxP2PDir dir, int mb, int form) {
  const char *what = dir == AX_FROM_PREV ? "activation" : "gradient";
  int from = dir == AX_FROM_PREV ? s->stage - 1 : s->stage + 1;
  if (mb < 0 || mb >= s->n_now)
    return AX_FAIL("stage %d: %s from stage %d tagged with micro-batch %d; this pass has "
                   "micro-batches 0..%d", s->stage, what, from, mb, s->n_now - 1);
  if (s->got[dir][mb])
    return AX_FAIL("stage %d: the %s of micro-batch %d arrived twice", s->stage, what, mb);
  if (form != expected_form(s, dir, mb))
    return AX_FAIL("stage %d: the %s of micro-batch %d from stage %d came %s; the rule says %s",
                   s->stage, what, mb, from, form ? "compressed" : "in full",
                   form ? "in full" : "compressed");
  if (!form && s->p2p.got_bytes != s->p2p.bytes)
    return AX_FAIL("stage %d: a %s of %zu bytes from stage %d, expected %zu", s->stage, what,
                   s->p2p.got_bytes, from, s->p2p.bytes);
  s->got[dir][mb] = 1;
  s->compressed[dir][mb] = (unsigned char)form;
  return AX_OK;
}

/* The next message from either side, or (lockstep, a stage between two others) from the side
 * the lead's next message came from. */
static int wait_message(AxScheduler *s, AxP2PDir *dir, int *tag, const void **data) {
  int both = s->stage > 0 && s->stage < s->P - 1;
  if (s->lockstep == MPI_COMM_NULL || !both) return ax_p2p_wait(&s->p2p, dir, tag, data);
  int lead_rank, side = -1;
  AX_MPI(MPI_Comm_rank(s->lockstep, &lead_rank));
  if (lead_rank == 0) {
    AX_TRY(ax_p2p_wait(&s->p2p, dir, tag, data));
    side = (int)*dir;
  }
  AX_WD_NOTE(-1, "agreeing with the stage's tensor-parallel ranks on the next message's side");
  /* waited as the engines wait: over an emulated link this rank's held sends go out meanwhile
   * (a blocking MPI_Bcast kept them: a follower that had just sent waited for its lead, whose
   * next message needed that send, a deadlock of 4 x 2 x 1 over --emulate-link) */
  MPI_Request req;
  AX_MPI(MPI_Ibcast(&side, 1, MPI_INT, 0, s->lockstep, &req));
  AX_TRY(ax_link_wait_collective(&s->p2p.cc, s->lockstep, &req));
  if (lead_rank == 0) return AX_OK;
  note_wait(s);
  return ax_p2p_wait_from(&s->p2p, side, dir, tag, data);
}

/* The next message: its direction, micro-batch, data and form (1: compressed). */
static int receive(AxScheduler *s, AxP2PDir *dir, int *mb, const void **data, int *form) {
  note_wait(s);
  double t0 = ax_trace_begin(s->trace);
  int tag;
  AX_TRY(wait_message(s, dir, &tag, data));
  *mb = tag >> 1;
  *form = tag & 1;
  ax_trace_end(s->trace, *dir == AX_FROM_NEXT ? AX_EV_RECV_WAIT_GRAD : AX_EV_RECV_WAIT, *mb, t0);
  return check_arrival(s, *dir, *mb, *form);
}

static int flush(AxScheduler *s) {
  AX_WD_NOTE(-1, "completing this pass's pipeline sends");
  return ax_p2p_flush(&s->p2p);
}

/* One action of the rule (sched_rule.h). The input of a forward is the activation being
 * handled (none on the first stage); of a backward, the gradient being handled (none on the
 * last stage, which computes its loss); a send sends the output of the compute before it. */
static int execute(void *ctx, AxAction a) {
  AxScheduler *s = ctx;
  int first = s->stage == 0, last = s->stage == s->P - 1;
  switch (a.kind) {
  case AX_ACT_FORWARD:
    AX_TRY(take_slot(s, a.mb));
    return run_forward(s, a.mb, first ? NULL : s->msg, &s->out);
  case AX_ACT_BACKWARD:
    if (s->slot_of[a.mb] < 0)
      return AX_FAIL("stage %d: gradient for micro-batch %d, which it has not forwarded",
                     s->stage, a.mb);
    return run_backward(s, a.mb, last ? NULL : s->msg, last ? 0 : s->msg_form, &s->out);
  case AX_ACT_SEND_NEXT: return send(s, 1, a.mb, s->out);
  case AX_ACT_SEND_PREV: return send(s, 0, a.mb, s->out);
  }
  return AX_FAIL("internal: unknown scheduler action %d", (int)a.kind);
}

int ax_sched_train(AxScheduler *s, int n_micro) {
  if (n_micro > s->max_micro) return AX_FAIL("internal: %d micro-batches exceed %d", n_micro, s->max_micro);
  begin_pass(s, n_micro);
  AxSchedRule rule;
  ax_rule_begin(&rule, s->stage, s->P, s->limit, n_micro);
  s->msg = NULL;
  AX_TRY(ax_rule_start(&rule, execute, s));
  while (!ax_rule_done(&rule)) {
    AxP2PDir dir;
    int mb;
    AX_TRY(receive(s, &dir, &mb, &s->msg, &s->msg_form));
    AX_TRY(ax_rule_on_message(&rule, dir == AX_FROM_NEXT, mb, execute, s));
  }
  return s->P > 1 ? flush(s) : AX_OK;
}

int ax_sched_forward(AxScheduler *s, int n_micro) {
  if (n_micro > s->max_micro) return AX_FAIL("internal: %d micro-batches exceed %d", n_micro, s->max_micro);
  begin_pass(s, n_micro);
  for (int i = 0; i < n_micro; i++) {
    AxP2PDir dir = AX_FROM_PREV;
    int mb = i;
    const void *data = NULL, *out;
    int form;
    if (s->stage > 0) AX_TRY(receive(s, &dir, &mb, &data, &form));
    if (dir != AX_FROM_PREV) return AX_FAIL("internal: gradient message during a forward-only pass");
    AX_TRY(take_slot(s, mb));
    AX_TRY(run_forward(s, mb, data, &out));
    release_slot(s, mb);
    if (s->stage < s->P - 1) AX_TRY(send(s, 1, mb, out));
  }
  return s->P > 1 ? flush(s) : AX_OK;
}
