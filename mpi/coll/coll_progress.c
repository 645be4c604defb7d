/* coll_progress.c — drives a started collective as far as completed requests allow, without
 * blocking: posts the next sends and receives (in the posting order coll_op.c fixed, at most
 * `window` in flight per direction, each once what it depends on is done), retires completed
 * ones in that order and reduces each received chunk as soon as it is there. Also
 * ax_coll_test and ax_coll_wait.
 *
 * Ordering is what makes one tag per operation enough: every rank posts its sends and its
 * receives in the same order, and MPI matches messages of one tag from one source in the order
 * they were posted, so the i-th chunk a rank receives from a peer is the i-th that peer sent it.
 * Every dependency below points at a chunk earlier in that order (or at a peer's receive of the
 * same chunk, which itself waits only for earlier ones), so a schedule cannot deadlock.
 *
 * Sends go through the link layer (link_emulator.h); with an emulated link ax_coll_test also
 * posts this rank's held sends that are due, and ax_coll_wait sleeps between polls.
 *
 * An operation run by an engine of its own (AxCollEngine: CaSync) is driven by that engine's
 * test instead, and noted and freed by it.
 *
 * While ax_coll_wait waits, it tells the watchdog (src/core/watchdog.h) which world rank the oldest
 * unfinished receive (or, when all have arrived, send) is waiting for. */
#include <sched.h>

#include "coll_internal.h"
#include "mpi/mpi_util.h"
#include "mpi/world_rank.h"
#include "reduce_local.h"
#include "src/core/watchdog.h"

static size_t chunk_len(size_t count, size_t chunk, size_t k) {
  size_t off = k * chunk;
  return count - off < chunk ? count - off : chunk;
}

static int sent(const AxColl *op, int t, size_t k) { return op->sent_in_step[t] > k; }
static int received(const AxColl *op, int t, size_t k) { return op->received_in_step[t] > k; }
static int step_finished(const AxColl *op, int t) {
  return op->sent_in_step[t] == op->send_chunks[t] &&
         op->received_in_step[t] == op->recv_chunks[t];
}

static int send_ready(const AxColl *op, int t, size_t k) {
  if (t == 0) return 1;
  return op->steps[t].chained ? received(op, t - 1, k) : step_finished(op, t - 1);
}

static int recv_ready(const AxColl *op, int t, size_t k) {
  const AxCollStep *s = &op->steps[t];
  if (t > 0 && !s->chained && !step_finished(op, t - 1)) return 0;
  return s->reuses_step < 0 || sent(op, s->reuses_step, k);
}

/* Where received chunk k of step s lands: in place, or in the slot of receive number i. */
static char *recv_target(const AxColl *op, const AxCollStep *s, size_t k, size_t i) {
  if (s->mode == AX_RECV_COPY) return s->recv_buf + k * op->chunk * op->esz;
  return op->slots + (i % (size_t)op->window) * op->slot_elems * op->esz;
}

static int post_sends(AxColl *op, int *moved) {
  while (op->send_posted < op->n_send && op->send_posted - op->send_done < (size_t)op->window) {
    const AxChunk *c = &op->send_order[op->send_posted];
    const AxCollStep *s = &op->steps[c->step];
    if (!send_ready(op, c->step, c->k)) break;
    size_t n = chunk_len(s->send_count, op->chunk, c->k);
    AxLinkMsg m = {.buf = s->send_buf + c->k * op->chunk * op->esz, .count = (int)n,
                   .type = op->dtype, .bytes = n * op->esz, .dest = s->send_peer,
                   .dest_world = ax_mpi_world_rank_of(op->world, op->size, s->send_peer),
                   .tag = op->tag, .comm = op->comm, .cls = op->cc.traffic_class};
    AX_TRY(ax_link_isend(&op->cc, &m, &op->send_req[op->send_posted % (size_t)op->window]));
    op->send_posted++;
    *moved = 1;
  }
  return AX_OK;
}

static int post_recvs(AxColl *op, int *moved) {
  while (op->recv_posted < op->n_recv && op->recv_posted - op->recv_done < (size_t)op->window) {
    const AxChunk *c = &op->recv_order[op->recv_posted];
    const AxCollStep *s = &op->steps[c->step];
    if (!recv_ready(op, c->step, c->k)) break;
    AX_MPI(MPI_Irecv(recv_target(op, s, c->k, op->recv_posted),
                     (int)chunk_len(s->recv_count, op->chunk, c->k), op->dtype, s->recv_peer,
                     op->tag, op->comm, &op->recv_req[op->recv_posted % (size_t)op->window]));
    op->recv_posted++;
    *moved = 1;
  }
  return AX_OK;
}

static void count_bytes(AxColl *op, size_t sent_bytes, size_t received_bytes) {
  if (!op->bytes) return;
  op->bytes->sent += sent_bytes;
  op->bytes->received += received_bytes;
}

/* Sends are retired in the order they were posted (only the oldest is tested). */
static int retire_sends(AxColl *op, int *moved) {
  while (op->send_done < op->send_posted) {
    int done = 0;
    AX_TRY(ax_link_test(&op->cc, &op->send_req[op->send_done % (size_t)op->window], &done));
    if (!done) break;
    const AxChunk *c = &op->send_order[op->send_done];
    count_bytes(op, chunk_len(op->steps[c->step].send_count, op->chunk, c->k) * op->esz, 0);
    op->sent_in_step[c->step]++;
    op->send_done++;
    *moved = 1;
  }
  return AX_OK;
}

/* recv_buf[chunk k] = slot + (addend or recv_buf)[chunk k] */
static void reduce_chunk(const AxColl *op, const AxCollStep *s, size_t k, size_t i, size_t n) {
  size_t off = k * op->chunk * op->esz;
  char *dst = s->recv_buf + off;
  const char *other = s->mode == AX_RECV_SUM ? s->addend + off : dst;
  const char *slot = recv_target(op, s, k, i);
  if (op->type == AX_COMM_F32)
    ax_reduce_sum_f32((float *)dst, (const float *)slot, (const float *)other, n);
  else if (op->type == AX_COMM_BF16)
    ax_reduce_sum_bf16((uint16_t *)dst, (const uint16_t *)slot, (const uint16_t *)other, n);
  else
    ax_reduce_sum_f16((uint16_t *)dst, (const uint16_t *)slot, (const uint16_t *)other, n);
}

/* Receives are retired (and reduced) in the order they were posted. */
static int retire_recvs(AxColl *op, int *moved) {
  while (op->recv_done < op->recv_posted) {
    const AxChunk *c = &op->recv_order[op->recv_done];
    const AxCollStep *s = &op->steps[c->step];
    if (s->write_after_send && !sent(op, c->step, c->k)) break;
    int done = 0;
    AX_MPI(MPI_Test(&op->recv_req[op->recv_done % (size_t)op->window], &done,
                    MPI_STATUS_IGNORE));
    if (!done) break;
    size_t n = chunk_len(s->recv_count, op->chunk, c->k);
    if (s->mode != AX_RECV_COPY) reduce_chunk(op, s, c->k, op->recv_done, n);
    count_bytes(op, 0, n * op->esz);
    op->received_in_step[c->step]++;
    op->recv_done++;
    *moved = 1;
  }
  return AX_OK;
}

static int progress(AxColl *op) {
  int moved = 1;
  AX_TRY(ax_link_progress(&op->cc)); /* this rank's held sends, of any operation */
  while (moved) {
    moved = 0;
    AX_TRY(post_recvs(op, &moved));
    AX_TRY(post_sends(op, &moved));
    AX_TRY(retire_sends(op, &moved));
    AX_TRY(retire_recvs(op, &moved));
  }
  op->finished = op->send_done == op->n_send && op->recv_done == op->n_recv;
  return AX_OK;
}

int ax_coll_test(AxColl *op, int *done) {
  *done = 0;
  if (!op) return AX_FAIL("ax_coll_test: no operation");
  if (op->failed) return AX_FAIL("ax_coll_test: the operation failed earlier");
  int rc = op->engine     ? op->engine->test(op)
           : op->uses_mpi ? ax_mpi_allreduce_test(op, done)
                          : progress(op);
  if (rc != AX_OK) {
    op->failed = 1;
    return AX_ERR;
  }
  *done = op->finished;
  return AX_OK;
}

/* The peer the operation waits for: the oldest unfinished receive's, else the oldest send's
 * (noted when that changes, not on every poll). */
void ax_coll_note_pending(AxColl *op) {
  if (op->engine) {
    if (op->engine->note_pending) op->engine->note_pending(op);
    return;
  }
  size_t at = 1 + op->recv_done + op->send_done;
  if (op->noted == at) return;
  op->noted = at;
  if (op->uses_mpi) {
    ax_wd_detail("inside MPI_Iallreduce", 0, -1);
  } else if (op->recv_done < op->n_recv) {
    const AxCollStep *s = &op->steps[op->recv_order[op->recv_done].step];
    int w = ax_mpi_world_rank_of(op->world, op->size, s->recv_peer);
    ax_wd_detail("waiting for data from rank %d", w, w);
  } else if (op->send_done < op->n_send) {
    const AxCollStep *s = &op->steps[op->send_order[op->send_done].step];
    int w = ax_mpi_world_rank_of(op->world, op->size, s->send_peer);
    ax_wd_detail("waiting for rank %d to take its data", w, w);
  }
}

int ax_coll_wait(AxColl *op) {
  AxLinkWaiter w = {0};
  for (;;) {
    int done = 0;
    AX_TRY(ax_coll_test(op, &done));
    if (done) return AX_OK;
    ax_coll_note_pending(op);
    ax_link_pause(&op->cc, &w);
  }
}

void ax_coll_pause(const AxColl *op, int yield) {
  if (op && ax_link_emulating(op->cc.links)) {
    AxLinkWaiter w = AX_LINK_NO_SPIN;
    ax_link_pause(&op->cc, &w);
  } else if (yield) {
    sched_yield();
  } else {
    ax_mpi_relax(op ? &op->cc : NULL);
  }
}
