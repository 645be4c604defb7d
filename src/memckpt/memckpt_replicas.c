/* memckpt_replicas.c — the replicas of a memory checkpoint on their way to the peer nodes
 * (Gemini, thesis §6.5; docs/memory-checkpoints.md "When replicas travel").
 *
 * A step's transfers (memckpt.c plans them: node K's stage files to the other nodes of
 * its replica group) begin with the copy: receivers post a receive for each file's size at
 * once. A sender starts when its copy thread has written the file and mapped it into
 * memory; a receiver's bytes land in its own slot's file, mapped. With --replica-schedule
 * idle it sends chunks only inside the idle spans of its link: at the start of every step the
 * spans of the previous step are learned from the link's log (the training's messages, by
 * every rank of the node, replicas left out) into a profile of the last AX_REPLICA_WINDOW
 * steps (each gap as long as its shortest there; restarted when the step changes shape), and each call
 * of the stage callbacks (ax_replicas_tick) that falls in a span sends what Algorithm 6.2
 * (replica_schedule.h) fits into mu of the span (split evenly between the ranks of the node
 * that send over that link), less what earlier chunks took. What does not
 * fit waits for the next step's spans, until the step at whose end the next checkpoint is
 * due: at its settle the leftover is sent at once, in the step's last span (the thesis's
 * unbounded last span), so the copy is complete before the next one starts (it is counted
 * late). At each settle every rank also says what interval its link's profile allows (the
 * replicas of a checkpoint against what the spans of a step hold): where one step's spans
 * cannot hold them, checkpoints are taken every so many steps (the smallest multiple of
 * --memory-checkpoint-every that can), rank 0 says so, and the due checkpoints between are
 * skipped (counted). With --replica-schedule end, and at the end of the run, everything left
 * is sent at once and waited for.
 *
 * The link model f(s) = alpha + s / B: the emulated link's own figures, or on real links a
 * ping-pong fitted between the first sender and its receiver (mpi/casync/casync_probe.c). A
 * receiver posts one receive at a time per file (a chunk's size is the sender's choice: the receive
 * is posted for the rest of the file, and MPI_Get_count says how much came).
 *
 * Between the step's ticks every wait of the main thread runs a pass too (ax_link_set_idle_work):
 * a receiver posts its next receive as soon as a chunk has landed, a sender hands chunks to
 * the spans as it waits in them, and MPI moves the bytes of both (over shared memory MPICH
 * moves a large message only inside calls of the sender's and the receiver's). With the ticks
 * alone (one at each forward and backward of a micro-batch) a receiver took about one chunk
 * a tick and the rest crossed at the settle, which the whole step then waited for
 * (docs/benchmarks.md, "Replicas that move while the ranks wait"). */
#include <limits.h>
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/mpi_util.h"
#include "src/core/error.h"
#include "src/core/log.h"
#include "src/core/watchdog.h"
#include "memckpt_store.h"
#include "memckpt_impl.h"

enum {
  MAX_CHUNK = 4 << 20,   /* R / p: the largest chunk */
  MIN_CHUNK = 256 << 10, /* the smallest worth a span of its own */
  TICK_CHUNKS = 64,      /* chunks cut at one call */
};

static AxCommConfig replica_cc(const AxMemCkpt *mc) {
  return ax_comm_config_as(&mc->v.grid->comm_cfg, AX_TRAFFIC_CHECKPOINT_REPLICA);
}

/* ------------------------------------------------------------------ setup */

/* The replicas' link: the emulated one's figures, or a ping-pong between the first transfer's
 * two ranks (every rank gets their fit). */
static int link_model(AxMemCkpt *mc, const AxMemTransfer *x, int n, AxLinearCost *f) {
  if (ax_link_emulating(mc->v.links) || n == 0) return mc->ops.link_cost(mc->ops.ctx, MPI_COMM_NULL, f);
  int me = mc->v.grid->rank, pair = me == x[0].from || me == x[0].to;
  MPI_Comm comm;
  AX_MPI(MPI_Comm_split(mc->comm, pair ? 0 : MPI_UNDEFINED, me, &comm));
  int rc = mc->ops.link_cost(mc->ops.ctx, comm, f);
  if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
  AX_TRY(ax_mpi_agree(mc->comm, rc));
  double v[2] = {f->latency_s, 1.0 / f->bytes_per_s};
  AX_MPI(MPI_Bcast(v, 2, MPI_DOUBLE, x[0].from, mc->comm));
  *f = (AxLinearCost){v[0], 1.0 / v[1]};
  return AX_OK;
}

/* Each link's share for this rank: the ranks of its node that send replicas over one link
 * split its idle spans evenly (they would fill mu of each span each, and queue). */
static void share_links(AxMemCkpt *mc, const AxMemTransfer *x, int n) {
  for (int k = 0; k < mc->n_nodes; k++) {
    int senders = 0;
    for (int i = 0; i < n; i++) {
      int from = x[i].from, first = 1;
      if (mc->node_of[from] != mc->node || mc->node_of[x[i].to] != k) continue;
      for (int j = 0; j < i; j++) /* each sender once */
        first &= !(x[j].from == from && mc->node_of[x[j].to] == k);
      senders += first;
    }
    mc->share[k] = senders > 1 ? 1.0 / senders : 1.0;
  }
}

int ax_replicas_setup(AxMemCkpt *mc, const AxMemTransfer *x, int n) {
  mc->idle = mc->v.opt.replica_schedule == AX_REPLICAS_IDLE && (mc->v.grid != NULL) && n > 0;
  mc->link = (AxReplicaLink){{0, INFINITY}, mc->v.opt.replica_idle_share, MAX_CHUNK, MIN_CHUNK};
  if (!mc->idle) return AX_OK;
  AX_TRY(link_model(mc, x, n, &mc->link.f));
  ax_link_set_model(mc->v.links, mc->link.f.latency_s, mc->link.f.bytes_per_s);
  size_t N = (size_t)mc->n_nodes;
  mc->profile = ax_calloc(N, sizeof *mc->profile);
  if (!mc->profile) return AX_ERR;
  for (size_t k = 0; k < N; k++)
    AX_TRY(ax_span_profile_init(&mc->profile[k], AX_REPLICA_WINDOW, AX_REPLICA_SPANS));
  mc->spans = ax_calloc(N * AX_REPLICA_SPANS, sizeof *mc->spans);
  mc->n_spans = ax_calloc(N, sizeof *mc->n_spans);
  mc->span_used = ax_calloc(N * AX_REPLICA_SPANS, sizeof *mc->span_used);
  mc->busy_until = ax_calloc(N, sizeof *mc->busy_until);
  mc->share = ax_calloc(N, sizeof *mc->share);
  if (!mc->share) return AX_ERR;
  share_links(mc, x, n);
  mc->uses = ax_calloc(AX_LINK_LOG_ENTRIES, sizeof *mc->uses);
  if (!mc->spans || !mc->n_spans || !mc->span_used || !mc->busy_until || !mc->uses) return AX_ERR;
  return AX_OK;
}

/* ------------------------------------------------------------------ a step's transfers */

static int pass(AxMemCkpt *mc, int send, int *all, int *handed);

/* A wait's pass (ax_link_set_idle_work): its failure kept for the next tick or settle. */
static void pass_while_waiting(void *ctx) {
  AxMemCkpt *mc = ctx;
  if (!mc->replicating || mc->completing || mc->wait_rc != AX_OK) return;
  int all, handed;
  /* --debug-hang-mode replica-error: this rank's pass in a wait of that step's copy fails */
  mc->wait_rc = ax_memckpt_debug_at(mc, mc->step, AX_DEBUG_HANG_REPLICA_ERROR)
                    ? AX_FAIL("a failure injected into a pass inside a wait "
                              "(--debug-hang-mode replica-error)")
                    : pass(mc, mc->idle ? 1 : 0, &all, &handed);
  if (mc->wait_rc == AX_OK) return;
  snprintf(mc->wait_err, sizeof mc->wait_err, "%s", ax_error_message());
  ax_error_clear();
}

/* The failure of a wait's pass, once, with its own origin. */
static int waits_failed(AxMemCkpt *mc) {
  if (mc->wait_rc == AX_OK) return AX_OK;
  mc->wait_rc = AX_OK;
  ax_fail_forwarded(mc->wait_err);
  return ax_error_context("memory checkpoint replicas, in a wait");
}

int ax_replicas_begin(AxMemCkpt *mc, const AxMemTransfer *x, int n) {
  int me = ax_memckpt_rank(mc), k = 0;
  mc->xfer = ax_calloc((size_t)n + 1, sizeof *mc->xfer);
  if (!mc->xfer) return AX_ERR;
  for (int i = 0; i < n; i++) {
    if (x[i].from != me && x[i].to != me) continue;
    AxReplicaXfer *r = &mc->xfer[k++];
    r->file = x[i].file;
    r->sends = x[i].from == me;
    r->peer = r->sends ? x[i].to : x[i].from;
    r->node = mc->node_of[r->peer];
    r->req = MPI_REQUEST_NULL;
  }
  mc->n_xfer = k;
  mc->replicating = 1;
  mc->wait_rc = AX_OK;
  atomic_store(&mc->file_ready, 0);
  if (k > 0) ax_link_set_idle_work(mc->v.links, pass_while_waiting, mc);
  return AX_OK;
}

/* Hands one message of the sender's to the link layer (kept to be completed). */
static int send_piece(AxMemCkpt *mc, AxReplicaXfer *r, const void *buf, int count,
                      MPI_Datatype type, size_t bytes) {
  if (r->n_chunks == r->cap_chunks) {
    int cap = r->cap_chunks ? 2 * r->cap_chunks : 16;
    AxLinkSend *c = realloc(r->chunks, (size_t)cap * sizeof *c);
    if (!c) return AX_FAIL("out of memory for replica chunks");
    r->chunks = c;
    r->cap_chunks = cap;
  }
  AxCommConfig cc = replica_cc(mc);
  AxLinkMsg m = {buf, count, type, bytes, r->peer, r->peer, ax_memckpt_tag(r->file), mc->comm,
                 AX_TRAFFIC_CHECKPOINT_REPLICA};
  r->chunks[r->n_chunks] = AX_LINK_SEND_NULL;
  return ax_link_isend(&cc, &m, &r->chunks[r->n_chunks++]);
}

/* The file's size, once: the receiver creates and maps the file and posts for the bytes. */
static int send_size(AxMemCkpt *mc, AxReplicaXfer *r) {
  if (r->size_known) return AX_OK;
  r->size = mc->send.size;
  r->size_known = 1;
  return send_piece(mc, r, &r->size, 1, MPI_UNSIGNED_LONG_LONG, sizeof r->size);
}

static int send_chunk(AxMemCkpt *mc, AxReplicaXfer *r, size_t len) {
  AX_TRY(send_piece(mc, r, mc->send.data + r->done, (int)len, MPI_BYTE, len));
  r->done += len;
  return AX_OK;
}

/* Everything of r not sent yet, in the largest chunks (--replica-schedule end, and flushes). */
static int send_rest(AxMemCkpt *mc, AxReplicaXfer *r) {
  AX_TRY(send_size(mc, r));
  while (r->done < r->size) {
    unsigned long long left = r->size - r->done;
    size_t len = left < MAX_CHUNK ? (size_t)left : MAX_CHUNK;
    AX_TRY(send_chunk(mc, r, len));
    mc->end_bytes += len;
  }
  return AX_OK;
}

/* What Algorithm 6.2 fits into the idle span the link is in now (if any). */
static int send_in_span(AxMemCkpt *mc, AxReplicaXfer *r, long long now_ns) {
  AX_TRY(send_size(mc, r));
  double now = (double)(now_ns - mc->step_begin_ns) * 1e-9;
  const AxSpan *sp = mc->spans + (size_t)r->node * AX_REPLICA_SPANS;
  int j = ax_span_at(sp, mc->n_spans[r->node], now);
  if (j < 0 || r->done >= r->size) return AX_OK;
  double *used = &mc->span_used[(size_t)r->node * AX_REPLICA_SPANS + j];
  double *busy = &mc->busy_until[r->node];
  double from = now > *busy ? now : *busy; /* our earlier chunks may still hold the link */
  double mu = mc->link.mu * mc->share[r->node]; /* this rank's part of the link's mu */
  double budget = mu * (sp[j].end_s - sp[j].start_s) - *used;
  if (budget > mu * (sp[j].end_s - from)) budget = mu * (sp[j].end_s - from);
  if (budget <= 0) return AX_OK;
  size_t sizes[TICK_CHUNKS], remain = (size_t)(r->size - r->done);
  double took;
  int k = ax_fill_span(&mc->link, budget, &remain, sizes, TICK_CHUNKS, &took);
  for (int i = 0; i < k; i++) {
    AX_TRY(send_chunk(mc, r, sizes[i]));
    mc->idle_bytes += sizes[i];
  }
  *used += took;
  *busy = from + took;
  return AX_OK;
}

/* A sender's sends: *all = 1 once every byte was handed over and every send completed. */
static int test_sends(AxMemCkpt *mc, AxReplicaXfer *r, int *all) {
  AxCommConfig cc = replica_cc(mc);
  *all = r->size_known && r->done == r->size;
  for (int c = 0; c < r->n_chunks; c++) {
    int done;
    AX_TRY(ax_link_test(&cc, &r->chunks[c], &done));
    if (!done) *all = 0;
  }
  return AX_OK;
}

/* A receiver's next receive: the size, then the rest of the file. */
static int post_receive(AxMemCkpt *mc, AxReplicaXfer *r) {
  if (!r->size_known)
    AX_MPI(MPI_Irecv(&r->size_msg, 1, MPI_UNSIGNED_LONG_LONG, r->peer, ax_memckpt_tag(r->file),
                     mc->comm, &r->req));
  else {
    unsigned long long left = r->size - r->done;
    int count = left > INT_MAX ? INT_MAX : (int)left;
    AX_MPI(MPI_Irecv(r->into.data + r->done, count, MPI_BYTE, r->peer, ax_memckpt_tag(r->file),
                     mc->comm, &r->req));
  }
  return AX_OK;
}

/* A receive that completed: the size (the file in the slot created at that size and mapped:
 * the slot has no manifest until every replica has landed), or bytes (landed once whole). */
static int received(AxMemCkpt *mc, AxReplicaXfer *r, MPI_Status *st) {
  if (!r->size_known) {
    r->size = r->size_msg;
    r->size_known = 1;
    AX_TRY(ax_memckpt_slot_map(mc, mc->slot, r->file, (size_t)r->size, &r->into, NULL));
  } else {
    int count;
    AX_MPI(MPI_Get_count(st, MPI_BYTE, &count));
    r->done += (unsigned long long)count;
  }
  if (r->done < r->size) return AX_OK;
  r->into = (AxFileMap){0}; /* a view: the map stays the trainer's */
  r->landed = 1;
  return AX_OK;
}

/* Whatever has arrived for r; never blocks. */
static int receive_some(AxMemCkpt *mc, AxReplicaXfer *r) {
  while (!r->landed) {
    if (r->req == MPI_REQUEST_NULL) AX_TRY(post_receive(mc, r));
    int flag;
    MPI_Status st;
    AX_MPI(MPI_Test(&r->req, &flag, &st));
    if (!flag) return AX_OK;
    AX_TRY(received(mc, r, &st));
  }
  return AX_OK;
}

/* One pass over this rank's transfers: receives advanced, sends tested. send: 0 nothing new
 * is sent, 1 what the schedule allows now, 2 everything. *all = every one landed; *handed =
 * every byte this rank sends has been handed to the link layer. */
static int pass(AxMemCkpt *mc, int send, int *all, int *handed) {
  AxCommConfig cc = replica_cc(mc);
  AX_TRY(ax_link_progress(&cc));
  int ready = atomic_load(&mc->file_ready);
  long long now = ax_link_now_ns();
  *all = *handed = 1;
  for (int i = 0; i < mc->n_xfer; i++) {
    AxReplicaXfer *r = &mc->xfer[i];
    if (!r->sends) {
      AX_TRY(receive_some(mc, r));
      *all &= r->landed;
      continue;
    }
    if (ready && send == 2) AX_TRY(send_rest(mc, r));
    if (ready && send == 1) AX_TRY(send_in_span(mc, r, now));
    if (!r->landed) AX_TRY(test_sends(mc, r, &r->landed));
    *all &= r->landed;
    *handed &= r->size_known && r->done == r->size;
  }
  return AX_OK;
}

/* Until every transfer of this rank has landed (sending what is left: send = 2). */
static int complete_all(AxMemCkpt *mc) {
  AxCommConfig cc = replica_cc(mc);
  AxLinkWaiter w = {0};
  int all, handed, rc = waits_failed(mc);
  mc->completing = 1;
  while (rc == AX_OK && (rc = pass(mc, 2, &all, &handed)) == AX_OK && !all) ax_link_pause(&cc, &w);
  mc->completing = 0;
  return rc;
}

/* ------------------------------------------------------------------ the step's calls */

int ax_replicas_step_begin(AxMemCkpt *mc) {
  long long now = ax_link_now_ns();
  mc->prev_begin_ns = mc->step_begin_ns;
  mc->step_begin_ns = now;
  if (!mc->idle) return AX_OK;
  for (int k = 0; k < mc->n_nodes; k++) {
    mc->n_spans[k] = 0;
    mc->busy_until[k] = 0;
    memset(mc->span_used + (size_t)k * AX_REPLICA_SPANS, 0,
           AX_REPLICA_SPANS * sizeof *mc->span_used);
  }
  if (!mc->prev_begin_ns) return AX_OK; /* the first step: nothing learned yet */
  double min_s = ax_linear_cost_at(&mc->link.f, MIN_CHUNK) / mc->link.mu;
  for (int i = 0; i < mc->n_xfer; i++) {
    const AxReplicaXfer *r = &mc->xfer[i];
    if (!r->sends || mc->n_spans[r->node]) continue;
    AxSpan *sp = mc->spans + (size_t)r->node * AX_REPLICA_SPANS;
    int n = ax_link_uses(mc->v.links, r->node, mc->prev_begin_ns, now, mc->uses, AX_LINK_LOG_ENTRIES);
    n = ax_idle_spans(mc->uses, n, mc->prev_begin_ns, now, AX_TRAFFIC_CHECKPOINT_REPLICA, min_s,
                      sp, AX_REPLICA_SPANS);
    mc->reprofiled += ax_span_profile_add(&mc->profile[r->node], sp, n);
    mc->n_spans[r->node] = ax_span_profile_min(&mc->profile[r->node], sp);
    mc->profile_steps = mc->profile[r->node].steps;
  }
  return AX_OK;
}

int ax_replicas_tick(AxMemCkpt *mc) {
  if (!mc->replicating) return AX_OK;
  int all, handed;
  AX_TRY(waits_failed(mc));
  return pass(mc, mc->idle ? 1 : 0, &all, &handed);
}

/* Idle schedule: what fits now is sent (ax_replicas_hand_over); when every rank has handed over
 * all its bytes the transfers are completed (they are on the link already), else they wait for
 * the next step's spans, unless a checkpoint is due at this step's end: then the leftover is
 * sent at once (the step's last span) and the copy is late. memckpt.c's settle learns whether
 * every rank has handed over, and the interval, in the one exchange it makes. */
int ax_replicas_hand_over(AxMemCkpt *mc, int flush, int *handed) {
  int all;
  *handed = 1;
  AX_TRY(waits_failed(mc));
  if (!mc->replicating || !mc->idle || flush) return AX_OK;
  return pass(mc, 1, &all, handed);
}

int ax_replicas_due(const AxMemCkpt *mc, int step) { return step % mc->interval == 0; }

int ax_replicas_may_land(const AxMemCkpt *mc, int flush, int handed) {
  return flush || !mc->idle || handed || ax_replicas_due(mc, mc->step_now);
}

int ax_replicas_land_now(AxMemCkpt *mc, int flush, int handed_everywhere) {
  if (!mc->replicating) return 1;
  int land = ax_replicas_may_land(mc, flush, handed_everywhere);
  mc->flights++;
  mc->late += land && mc->idle && !flush && !handed_everywhere; /* the leftover at the settle */
  return land;
}

/* This rank's part of the settle's note: the replicas of a checkpoint on each link it sends
 * on, against what that link's profiled spans hold a step, and the interval they allow (0: no
 * span holds a chunk); the run's interval where it has no view (sends nothing, no profile). */
void ax_replicas_interval(const AxMemCkpt *mc, AxSettleNote *note) {
  note->interval = mc->interval;
  note->ckpt_bytes = note->step_bytes = 0;
  if (!mc->idle || !mc->replicating || mc->interval_decided) return;
  for (int k = 0; k < mc->n_nodes; k++) {
    size_t bytes = 0;
    for (int i = 0; i < mc->n_xfer; i++)
      if (mc->xfer[i].sends && mc->xfer[i].node == k) bytes += mc->send.size;
    if (!bytes || !mc->profile[k].steps) continue;
    const AxSpan *sp = mc->spans + (size_t)k * AX_REPLICA_SPANS;
    AxReplicaLink l = mc->link;
    l.mu *= mc->share[k]; /* this rank's part of the link */
    int need = ax_replica_interval(&l, sp, mc->n_spans[k], bytes, mc->v.opt.memory_checkpoint_every);
    if (note->interval == 0 || (need != 0 && need <= note->interval)) continue;
    note->interval = need;
    note->ckpt_bytes = bytes;
    note->step_bytes = ax_step_fill(&l, sp, mc->n_spans[k], SIZE_MAX, NULL);
  }
}

/* Whether note a needs a wider interval than b (0: none is wide enough, the widest). */
static int wider(const AxSettleNote *a, int b) {
  return b != 0 && (a->interval == 0 || a->interval > b);
}

/* The run's interval from every rank's note: the widest any link needs, decided once, at the
 * first copy's first settle (from the profile then), and rank 0 says why when it widens (or
 * that no interval helps). The same on every rank. Deciding again at later settles widened it
 * without end: each gap's minimum over a window of noisy steps keeps shrinking
 * (docs/benchmarks.md, "Where replicas travel"). */
void ax_replicas_agree_interval(AxMemCkpt *mc, const AxSettleNote *notes, int n) {
  if (!mc->idle || !mc->replicating || mc->interval_decided) return;
  mc->interval_decided = 1;
  const AxSettleNote *w = NULL;
  for (int r = 0; r < n; r++)
    if (wider(&notes[r], w ? w->interval : mc->interval)) w = &notes[r];
  if (!w) return;
  int rank0 = mc->v.grid == NULL || mc->v.grid->rank == 0;
  if (w->interval == 0) {
    if (rank0 && !mc->none_fits)
      ax_log("memory checkpoints: at step %d no idle span of the link holds a chunk of %.0f KB "
             "(%.2f MB of replicas a checkpoint; spans profiled over %d step(s)): no interval "
             "replicates in idle spans, so each copy's replicas go at the settle before the next "
             "checkpoint (counted late)", mc->step_now, (double)mc->link.min_chunk / 1024,
             (double)w->ckpt_bytes / 1e6, mc->profile_steps);
    mc->none_fits = 1;
    return;
  }
  if (rank0)
    ax_log("memory checkpoints: at step %d the idle spans of a step (profiled over %d step(s)) "
           "hold %.2f MB of a link's %.2f MB of replicas a checkpoint: replication every %d "
           "step(s) is impossible; checkpoints are taken every %d steps from now on (the due "
           "ones between are skipped, counted)",
           mc->step_now, mc->profile_steps, (double)w->step_bytes / 1e6,
           (double)w->ckpt_bytes / 1e6, mc->interval, w->interval);
  mc->interval = w->interval;
}

int ax_replicas_complete(AxMemCkpt *mc) { return mc->replicating ? complete_all(mc) : AX_OK; }

void ax_replicas_free(AxMemCkpt *mc) {
  AxCommConfig cc = replica_cc(mc);
  if (mc->n_xfer > 0) ax_link_set_idle_work(mc->v.links, NULL, NULL);
  for (int i = 0; i < mc->n_xfer; i++) {
    AxReplicaXfer *r = &mc->xfer[i];
    for (int c = 0; c < r->n_chunks; c++) ax_link_drop(&cc, &r->chunks[c]);
    if (r->req != MPI_REQUEST_NULL) {
      MPI_Cancel(&r->req);
      MPI_Request_free(&r->req);
    }
    free(r->chunks);
    r->into = (AxFileMap){0};
  }
  free(mc->xfer);
  mc->xfer = NULL;
  mc->n_xfer = 0;
  mc->send = (AxFileMap){0}; /* views of the trainer's slot maps */
  mc->replicating = 0;
}

/* Rank 0, at the end: how the replicas travelled. */
void ax_replicas_report(const AxMemCkpt *mc) {
  if (((mc->v.grid != NULL) && mc->v.grid->rank != 0) || !mc->landed_copies) return;
  ax_log("memory checkpoints: %d cop%s replicated (%s schedule), %.1f step(s) each on average, "
         "%d late (the leftover sent at the settle before the next checkpoint); %d due "
         "checkpoint(s) skipped (taken every %d step(s), asked every %d); rank 0 sent %.1f MB "
         "in idle spans and %.1f MB at settles; its spans re-profiled %d time(s) (a step of "
         "another shape)",
         mc->landed_copies, mc->landed_copies == 1 ? "y" : "ies",
         mc->idle ? "idle-span" : "end-of-step", (double)mc->flights / mc->landed_copies,
         mc->late, mc->skipped, mc->interval, mc->v.opt.memory_checkpoint_every,
         (double)mc->idle_bytes / 1e6, (double)mc->end_bytes / 1e6, mc->reprofiled);
  char steady[96] = "";
  if (mc->steady_files)
    snprintf(steady, sizeof steady, "; %.1f ms each of the %d after each slot's first fill",
             1e3 * mc->steady_cpu_s / mc->steady_files, mc->steady_files);
  if (mc->files_written)
    ax_log("memory checkpoints: rank 0 wrote its stage file %d time(s), %.1f ms of its copy "
           "thread's CPU each (CRC and copy into the slot%s)", mc->files_written,
           1e3 * mc->copy_cpu_s / mc->files_written, steady);
}
