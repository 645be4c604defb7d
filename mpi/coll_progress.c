/* coll_progress.c — drives a started collective as far as completed requests allow, without
 * blocking: posts the next sends and receives (schedule order, at most `window` in flight per
 * direction, each only once what it depends on is done), retires completed ones in order and
 * reduces each received chunk as soon as it is there. Also ax_coll_test and ax_coll_wait.
 *
 * Ordering is what makes one tag per operation enough: every rank posts its sends and its
 * receives in schedule order, and MPI matches messages of one tag from one source in the order
 * they were posted, so the i-th chunk a rank receives from a peer is the i-th that peer sent it.
 * Every wait below is for something earlier in schedule order (or a peer's receive of the same
 * chunk, which itself waits only for earlier ones), so the schedule cannot deadlock. */
#include "coll_internal.h"
#include "mpi_util.h"
#include "reduce_local.h"

static size_t linear(const size_t *base, const AxCursor *c) { return base[c->step] + c->k; }

/* Moves c past steps that have no (more) chunks in this direction. */
static void settle(const AxColl *op, const size_t *base, AxCursor *c) {
  while (c->step < op->n_steps && base[c->step] + c->k >= base[c->step + 1]) {
    c->step++;
    c->k = 0;
  }
}

static void advance(const AxColl *op, const size_t *base, AxCursor *c) {
  c->k++;
  settle(op, base, c);
}

void ax_coll_cursors_start(AxColl *op) {
  AxCursor zero = {0, 0};
  op->send_posted = op->send_done = op->recv_posted = op->recv_done = zero;
  settle(op, op->send_base, &op->send_posted);
  settle(op, op->send_base, &op->send_done);
  settle(op, op->recv_base, &op->recv_posted);
  settle(op, op->recv_base, &op->recv_done);
}

static size_t chunk_len(size_t count, size_t chunk, size_t k) {
  size_t off = k * chunk;
  return count - off < chunk ? count - off : chunk;
}

static int sent(const AxColl *op, int t, size_t k) {
  return linear(op->send_base, &op->send_done) > op->send_base[t] + k;
}
static int received(const AxColl *op, int t, size_t k) {
  return linear(op->recv_base, &op->recv_done) > op->recv_base[t] + k;
}
static int step_finished(const AxColl *op, int t) {
  return linear(op->send_base, &op->send_done) >= op->send_base[t + 1] &&
         linear(op->recv_base, &op->recv_done) >= op->recv_base[t + 1];
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

/* Where received chunk k of step s lands: in place, or in the slot of chunk number i. */
static char *recv_target(const AxColl *op, const AxCollStep *s, size_t k, size_t i) {
  if (s->mode == AX_RECV_COPY) return s->recv_buf + k * op->chunk * op->esz;
  return op->slots + (i % (size_t)op->window) * op->slot_elems * op->esz;
}

static int post_sends(AxColl *op, int *moved) {
  const size_t total = op->send_base[op->n_steps];
  size_t i;
  while ((i = linear(op->send_base, &op->send_posted)) < total &&
         i - linear(op->send_base, &op->send_done) < (size_t)op->window) {
    int t = op->send_posted.step;
    size_t k = op->send_posted.k;
    const AxCollStep *s = &op->steps[t];
    if (!send_ready(op, t, k)) break;
    AX_MPI(MPI_Isend(s->send_buf + k * op->chunk * op->esz,
                     (int)chunk_len(s->send_count, op->chunk, k), op->dtype, s->send_peer,
                     op->tag, op->comm, &op->send_req[i % (size_t)op->window]));
    advance(op, op->send_base, &op->send_posted);
    *moved = 1;
  }
  return AX_OK;
}

static int post_recvs(AxColl *op, int *moved) {
  const size_t total = op->recv_base[op->n_steps];
  size_t i;
  while ((i = linear(op->recv_base, &op->recv_posted)) < total &&
         i - linear(op->recv_base, &op->recv_done) < (size_t)op->window) {
    int t = op->recv_posted.step;
    size_t k = op->recv_posted.k;
    const AxCollStep *s = &op->steps[t];
    if (!recv_ready(op, t, k)) break;
    AX_MPI(MPI_Irecv(recv_target(op, s, k, i), (int)chunk_len(s->recv_count, op->chunk, k),
                     op->dtype, s->recv_peer, op->tag, op->comm,
                     &op->recv_req[i % (size_t)op->window]));
    advance(op, op->recv_base, &op->recv_posted);
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
  size_t i;
  while ((i = linear(op->send_base, &op->send_done)) < linear(op->send_base, &op->send_posted)) {
    int done = 0;
    AX_MPI(MPI_Test(&op->send_req[i % (size_t)op->window], &done, MPI_STATUS_IGNORE));
    if (!done) break;
    const AxCollStep *s = &op->steps[op->send_done.step];
    count_bytes(op, chunk_len(s->send_count, op->chunk, op->send_done.k) * op->esz, 0);
    advance(op, op->send_base, &op->send_done);
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
  else
    ax_reduce_sum_bf16((uint16_t *)dst, (const uint16_t *)slot, (const uint16_t *)other, n);
}

/* Receives are retired (and reduced) in schedule order. */
static int retire_recvs(AxColl *op, int *moved) {
  size_t i;
  while ((i = linear(op->recv_base, &op->recv_done)) < linear(op->recv_base, &op->recv_posted)) {
    int t = op->recv_done.step;
    size_t k = op->recv_done.k;
    const AxCollStep *s = &op->steps[t];
    if (s->write_after_send && !sent(op, t, k)) break;
    int done = 0;
    AX_MPI(MPI_Test(&op->recv_req[i % (size_t)op->window], &done, MPI_STATUS_IGNORE));
    if (!done) break;
    size_t n = chunk_len(s->recv_count, op->chunk, k);
    if (s->mode != AX_RECV_COPY) reduce_chunk(op, s, k, i, n);
    count_bytes(op, 0, n * op->esz);
    advance(op, op->recv_base, &op->recv_done);
    *moved = 1;
  }
  return AX_OK;
}

static int progress(AxColl *op) {
  int moved = 1;
  while (moved) {
    moved = 0;
    AX_TRY(post_recvs(op, &moved));
    AX_TRY(post_sends(op, &moved));
    AX_TRY(retire_sends(op, &moved));
    AX_TRY(retire_recvs(op, &moved));
  }
  op->finished = op->send_done.step == op->n_steps && op->recv_done.step == op->n_steps;
  return AX_OK;
}

int ax_coll_test(AxColl *op, int *done) {
  *done = 0;
  if (!op) return AX_FAIL("ax_coll_test: no operation");
  if (op->failed) return AX_FAIL("ax_coll_test: the operation failed earlier");
  int rc = op->uses_mpi ? ax_mpi_allreduce_test(op, done) : progress(op);
  if (rc != AX_OK) {
    op->failed = 1;
    return AX_ERR;
  }
  *done = op->finished;
  return AX_OK;
}

int ax_coll_wait(AxColl *op) {
  for (;;) {
    int done = 0;
    AX_TRY(ax_coll_test(op, &done));
    if (done) return AX_OK;
    ax_mpi_relax();
  }
}
