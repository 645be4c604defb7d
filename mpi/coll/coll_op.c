/* coll_op.c — the life of a started collective: creation (tag, element type, the caller's
 * chunking and waiting), the schedule's steps, launch (chunk counts, request windows, slots)
 * and free. Progress is coll_progress.c's. */
#include <stdlib.h>
#include <string.h>

#include "coll_internal.h"
#include "mpi/mpi_util.h"
#include "mpi/world_rank.h"
#include "src/core/spare_buffers.h"

/* A chained step trails the one before it by this many windows of chunks. */
enum { LAG_WINDOWS = 2 };

int ax_coll_create(AxColl **out, MPI_Comm comm, const AxCommConfig *cc, AxCommType type,
                   AxCommBytes *bytes) {
  *out = NULL;
  if (comm == MPI_COMM_NULL) return AX_FAIL("collective: MPI_COMM_NULL");
  int tag;
  AX_TRY(ax_coll_next_tag(comm, &tag));
  return ax_coll_create_on_tag(out, comm, cc, type, bytes, tag);
}

int ax_coll_create_on_tag(AxColl **out, MPI_Comm comm, const AxCommConfig *cc, AxCommType type,
                          AxCommBytes *bytes, int tag) {
  *out = NULL;
  if (type != AX_COMM_F32 && type != AX_COMM_BF16 && type != AX_COMM_F16)
    return AX_FAIL("collective: unknown element type %d", (int)type);
  if (comm == MPI_COMM_NULL) return AX_FAIL("collective: MPI_COMM_NULL");
  int rank, size;
  const int *world;
  AX_MPI(MPI_Comm_rank(comm, &rank));
  AX_MPI(MPI_Comm_size(comm, &size));
  AX_TRY(ax_mpi_world_ranks(comm, &world));
  AxColl *op = ax_calloc(1, sizeof *op);
  if (!op) return AX_ERR;
  op->comm = comm;
  op->cc = ax_comm_config_resolve(cc);
  op->rank = rank;
  op->size = size;
  op->tag = tag;
  op->world = world;
  op->type = type;
  op->esz = type == AX_COMM_F32 ? sizeof(float) : sizeof(uint16_t);
  op->dtype = type == AX_COMM_F32 ? MPI_FLOAT : MPI_UINT16_T;
  op->bytes = bytes;
  op->chunk = op->cc.chunk_bytes / op->esz ? op->cc.chunk_bytes / op->esz : 1;
  if (op->chunk > (size_t)1 << 30) op->chunk = (size_t)1 << 30; /* an int count per message */
  op->window = op->cc.window;
  op->lag = (size_t)op->window * LAG_WINDOWS;
  op->mpi_req = MPI_REQUEST_NULL;
  *out = op;
  return AX_OK;
}

int ax_coll_add_step(AxColl *op, const AxCollStep *step) {
  if (op->n_steps == op->cap_steps) {
    int cap = op->cap_steps ? 2 * op->cap_steps : 8;
    AxCollStep *grown = realloc(op->steps, (size_t)cap * sizeof *grown);
    if (!grown) return AX_FAIL("out of memory for a collective schedule of %d steps", cap);
    op->steps = grown;
    op->cap_steps = cap;
  }
  op->steps[op->n_steps++] = *step;
  return AX_OK;
}

AxCollStep ax_coll_step(int send_peer, const void *send_buf, size_t send_count, int recv_peer,
                        void *recv_buf, size_t recv_count, AxRecvMode mode) {
  AxCollStep s = {.send_peer = send_peer, .send_buf = send_buf, .send_count = send_count,
                  .recv_peer = recv_peer, .recv_buf = recv_buf, .recv_count = recv_count,
                  .mode = mode, .reuses_step = -1};
  return s;
}

static size_t n_chunks(size_t count, size_t chunk, int peer) {
  return peer == MPI_PROC_NULL ? 0 : (count + chunk - 1) / chunk;
}

static MPI_Request *null_requests(int n) {
  MPI_Request *r = ax_malloc((size_t)n * sizeof *r);
  for (int i = 0; r && i < n; i++) r[i] = MPI_REQUEST_NULL;
  return r;
}

static int chunk_before(const void *pa, const void *pb) {
  const AxChunk *a = pa, *b = pb;
  if (a->phase != b->phase) return a->phase < b->phase ? -1 : 1;
  if (a->key != b->key) return a->key < b->key ? -1 : 1;
  return (a->step > b->step) - (a->step < b->step);
}

/* All chunks of one direction in posting order: phase by phase; within a chained phase as a
 * wavefront, step t's chunk k next to step t+1's chunk k - lag. Every rank derives the same
 * order from the same schedule, which keeps sender and receiver in step. */
static int order_chunks(AxColl *op, const size_t *counts, AxChunk **out, size_t *n_out) {
  size_t n = 0;
  for (int t = 0; t < op->n_steps; t++) n += counts[t];
  *out = ax_malloc((n ? n : 1) * sizeof **out);
  if (!*out) return AX_ERR;
  int phase = 0, first = 0;
  size_t i = 0;
  for (int t = 0; t < op->n_steps; t++) {
    if (t > 0 && !op->steps[t].chained) phase++, first = t;
    for (size_t k = 0; k < counts[t]; k++)
      (*out)[i++] = (AxChunk){phase, t, k + (size_t)(t - first) * op->lag, k};
  }
  qsort(*out, n, sizeof **out, chunk_before);
  *n_out = n;
  return AX_OK;
}

/* Chunk counts and posting orders of every step, and the slot size: the largest chunk
 * received into a slot. */
static int plan_chunks(AxColl *op) {
  size_t steps = (size_t)(op->n_steps ? op->n_steps : 1);
  op->send_chunks = ax_calloc(steps, sizeof(size_t));
  op->recv_chunks = ax_calloc(steps, sizeof(size_t));
  op->sent_in_step = ax_calloc(steps, sizeof(size_t));
  op->received_in_step = ax_calloc(steps, sizeof(size_t));
  if (!op->send_chunks || !op->recv_chunks || !op->sent_in_step || !op->received_in_step)
    return AX_ERR;
  for (int t = 0; t < op->n_steps; t++) {
    const AxCollStep *s = &op->steps[t];
    op->send_chunks[t] = n_chunks(s->send_count, op->chunk, s->send_peer);
    op->recv_chunks[t] = n_chunks(s->recv_count, op->chunk, s->recv_peer);
    size_t need = s->recv_count < op->chunk ? s->recv_count : op->chunk;
    if (s->recv_peer != MPI_PROC_NULL && s->mode != AX_RECV_COPY && need > op->slot_elems)
      op->slot_elems = need;
  }
  AX_TRY(order_chunks(op, op->send_chunks, &op->send_order, &op->n_send));
  return order_chunks(op, op->recv_chunks, &op->recv_order, &op->n_recv);
}

static AxLinkSend *null_sends(int n) {
  AxLinkSend *s = ax_malloc((size_t)n * sizeof *s);
  for (int i = 0; s && i < n; i++) s[i] = AX_LINK_SEND_NULL;
  return s;
}

int ax_coll_launch(AxColl *op) {
  AX_TRY(plan_chunks(op));
  op->send_req = null_sends(op->window);
  op->recv_req = null_requests(op->window);
  if (!op->send_req || !op->recv_req) return AX_ERR;
  if (op->slot_elems) { /* kept between operations: src/core/spare_buffers.h says why */
    op->slots = ax_spare_take((size_t)op->window * op->slot_elems * op->esz, &op->slots_capacity);
    if (!op->slots) return AX_ERR;
  }
  int done;
  return ax_coll_test(op, &done);
}

/* Unfinished receives are cancelled and waited for (guaranteed to return once cancelled), so
 * no message lands in freed slots. */
static void drop_recvs(MPI_Request *reqs, int n) {
  for (int i = 0; reqs && i < n; i++) {
    if (reqs[i] == MPI_REQUEST_NULL) continue;
    MPI_Cancel(&reqs[i]);
    MPI_Wait(&reqs[i], MPI_STATUS_IGNORE);
  }
}

/* Unfinished sends are released to complete on their own; held ones are never posted. */
static void drop_sends(const AxCommConfig *cc, AxLinkSend *sends, int n) {
  for (int i = 0; sends && i < n; i++) ax_link_drop(cc, &sends[i]);
}

void ax_coll_free(AxColl *op) {
  if (!op) return;
  if (op->engine) op->engine->free(op);
  drop_recvs(op->recv_req, op->window);
  drop_sends(&op->cc, op->send_req, op->window);
  if (op->mpi_req != MPI_REQUEST_NULL) MPI_Request_free(&op->mpi_req);
  free(op->send_req);
  free(op->recv_req);
  ax_spare_give(op->slots, op->slots_capacity);
  free(op->send_order);
  free(op->recv_order);
  free(op->send_chunks);
  free(op->recv_chunks);
  free(op->sent_in_step);
  free(op->received_in_step);
  free(op->steps);
  free(op);
}
