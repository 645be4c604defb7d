/* tp_mpi.c — tensor-parallel collectives over the grid's X, Y, Z communicators; see
 * tp_mpi.h. An operation is one of our non-blocking collectives; wait drives it to the end.
 * Device buffers are staged through pinned host buffers of a pool (tp_mpi.h). */
#include "tp_mpi.h"

#include <stdlib.h>
#include <string.h>

#include "mpi/link/link_emulator.h"
#include "src/core/error.h"
#include "src/core/timer.h"

struct AxTpStage {
  void *host; /* pinned, from the backend */
  size_t bytes;
  int busy;
};

/* What a staged operation copies back up to the device when it is done. */
typedef struct {
  AxTpStage *stage; /* NULL: nothing staged */
  void *dst;
  const void *src;
  size_t bytes;
} Upload;

struct AxTpReq {
  AxColl *op;
  AxTpGroup group;
  AxTpOp kind;
  Upload up;
  AxTpReq *prev, *next; /* in the in-flight list */
};

static AxTpMpi *self(AxTpComm *c) { return c->impl; }

/* ------------------------------------------------------------------ staging */

/* The smallest free pool buffer of at least `bytes`, or a new one; NULL with the error
 * recorded. */
static AxTpStage *stage_take(AxTpMpi *t, size_t bytes) {
  AxTpStage *best = NULL;
  for (int i = 0; i < t->n_pool; i++) {
    AxTpStage *s = &t->pool[i];
    if (!s->busy && s->bytes >= bytes && (!best || s->bytes < best->bytes)) best = s;
  }
  if (!best && !t->pool && !(t->pool = ax_calloc((size_t)t->cap_pool, sizeof *t->pool)))
    return NULL;
  if (!best) {
    if (t->n_pool == t->cap_pool) {
      /* requests point into the pool: it never moves, so its size is fixed at the first use */
      AX_FAIL("internal: more than %d tensor-parallel collectives staged at once", t->cap_pool);
      return NULL;
    }
    void *host = t->be->ops->host_alloc(t->be, bytes);
    if (!host) {
      ax_error_context("a pinned host buffer of %zu bytes to stage a tensor-parallel "
                       "collective", bytes);
      return NULL;
    }
    best = &t->pool[t->n_pool++];
    *best = (AxTpStage){.host = host, .bytes = bytes};
  }
  best->busy = 1;
  return best;
}

/* n bytes of device memory down into host memory, once the compute stream has written them. */
static int stage_down(AxTpMpi *t, void *host, const void *dev, size_t bytes) {
  t->stats.staged_down += bytes;
  return t->be->ops->copy(t->be, host, dev, bytes, AX_COPY_D2H, AX_STREAM_COMPUTE);
}

/* Before MPI touches a staging buffer or a device buffer: the copies down have landed, and the
 * copies up of earlier operations (from buffers now reused) have been read. */
static int compute_done(AxTpMpi *t) { return t->be->ops->sync(t->be, AX_STREAM_COMPUTE); }

/* A finished operation's result back up to the device; the buffer goes back to the pool (the
 * next operation that takes it synchronizes first). */
static int upload(AxTpMpi *t, Upload *u, int ok) {
  if (!u->stage) return AX_OK;
  int rc = AX_OK;
  if (ok) {
    t->stats.staged_up += u->bytes;
    rc = t->be->ops->copy(t->be, u->dst, u->src, u->bytes, AX_COPY_H2D, AX_STREAM_COMPUTE);
  }
  u->stage->busy = 0;
  u->stage = NULL;
  return rc;
}

/* ------------------------------------------------------------------ requests */

/* Drives a collective to its end, counting the time blocked as the group's; then its staged
 * result goes up. */
static int finish(AxTpComm *c, AxTpGroup g, AxColl *op, Upload *up) {
  double t0 = ax_now();
  int rc = ax_coll_wait(op);
  self(c)->stats.wait_s[g] += ax_now() - t0;
  ax_coll_free(op);
  int up_rc = upload(self(c), up, rc == AX_OK);
  return rc != AX_OK ? rc : up_rc;
}

static void link_in_flight(AxTpMpi *t, AxTpReq *r) {
  r->prev = NULL;
  r->next = t->in_flight;
  if (t->in_flight) t->in_flight->prev = r;
  t->in_flight = r;
  t->n_in_flight[r->kind]++;
  t->stats.started[r->kind]++;
  if (t->ahead) t->stats.started_ahead[r->kind]++;
}

static void unlink_in_flight(AxTpMpi *t, AxTpReq *r) {
  if (r->prev) r->prev->next = r->next;
  else t->in_flight = r->next;
  if (r->next) r->next->prev = r->prev;
  t->n_in_flight[r->kind]--;
}

/* Runs a started collective to the end now (req == NULL) or hands it to the caller, in flight
 * until it is waited for. A failed start (rc) gives its staging buffer back. */
static int finish_or_hand(AxTpComm *c, AxTpGroup g, AxTpOp kind, int rc, AxColl *op, Upload *up,
                          AxTpReq **req) {
  if (rc != AX_OK) {
    upload(self(c), up, 0);
    return rc;
  }
  if (!req) return finish(c, g, op, up);
  AxTpReq *r = ax_malloc(sizeof *r);
  if (!r) {
    ax_coll_free(op);
    upload(self(c), up, 0);
    return AX_ERR;
  }
  *r = (AxTpReq){.op = op, .group = g, .kind = kind, .up = *up};
  link_in_flight(self(c), r);
  *req = r;
  return AX_OK;
}

/* The byte counter of one operation on a group (and one more call of it). */
static AxCommBytes *count(AxTpComm *c, AxTpGroup g, AxTpOp op) {
  self(c)->stats.calls[g][op]++;
  return &self(c)->stats.bytes[g][op];
}

/* Where an operation's input and output are for MPI: the device buffers themselves (host
 * memory, or CUDA-aware MPI's all-reduce: direct), else a staging buffer of `bytes` with the
 * input's `in_bytes` copied down into it at offset `in_at` and, when it is done, `out_bytes` at
 * offset `out_at` going up to `out`. */
typedef struct {
  const void *in;
  size_t in_bytes, in_at;
  void *out;
  size_t out_bytes, out_at, bytes;
} StagePlan;

static int stage_in(AxTpMpi *t, const StagePlan *p, Upload *up, char **host) {
  *up = (Upload){0};
  *host = NULL;
  AxTpStage *s = stage_take(t, p->bytes);
  if (!s) return AX_ERR;
  *up = (Upload){.stage = s, .dst = p->out, .src = (char *)s->host + p->out_at,
                 .bytes = p->out_bytes};
  *host = s->host;
  int rc = stage_down(t, *host + p->in_at, p->in, p->in_bytes);
  if (rc == AX_OK) rc = compute_done(t);
  if (rc != AX_OK) upload(t, up, 0);
  return rc;
}

/* The collectives' element type of a tensor-parallel one. */
static AxCommType comm_type(AxTpType t) {
  return t == AX_TP_BF16 ? AX_COMM_BF16 : t == AX_TP_F16 ? AX_COMM_F16 : AX_COMM_F32;
}

static int tp_all_reduce(AxTpComm *c, AxTpGroup g, void *buf, size_t n, AxTpType type,
                         AxTpReq **req) {
  AxTpMpi *t = self(c);
  AxColl *op = NULL;
  Upload up = {0};
  void *where = buf;
  AxAllreduceAlgo algo = AX_ALLREDUCE_RING;
  if (t->on_device && t->device_all_reduce && type == AX_TP_F32) {
    AX_TRY(compute_done(t));
    algo = AX_ALLREDUCE_MPI;
  } else if (t->on_device) {
    size_t bytes = n * ax_tp_type_size(type);
    char *host;
    AX_TRY(stage_in(t, &(StagePlan){buf, bytes, 0, buf, bytes, 0, bytes}, &up, &host));
    where = host;
  }
  int rc = ax_allreduce_start(&op, t->grid->tpc[g], &t->cc, where, n, comm_type(type), algo,
                              count(c, g, AX_TP_OP_ALLREDUCE));
  return finish_or_hand(c, g, AX_TP_OP_ALLREDUCE, rc, op, &up, req);
}

static int tp_all_gather(AxTpComm *c, AxTpGroup g, const void *send, void *recv, size_t n,
                         AxTpType type, AxTpReq **req) {
  AxTpMpi *t = self(c);
  AxColl *op = NULL;
  Upload up = {0};
  const void *from = send;
  void *into = recv;
  if (t->on_device) { /* in place: this rank's block of the gathered buffer */
    size_t block = n * ax_tp_type_size(type), all = block * (size_t)c->size[g];
    size_t mine = block * (size_t)c->coord[g];
    char *host;
    AX_TRY(stage_in(t, &(StagePlan){send, block, mine, recv, all, 0, all}, &up, &host));
    from = host + mine;
    into = host;
  }
  int rc = ax_allgather_start(&op, t->grid->tpc[g], &t->cc, from, into, n, comm_type(type),
                              count(c, g, AX_TP_OP_ALLGATHER));
  return finish_or_hand(c, g, AX_TP_OP_ALLGATHER, rc, op, &up, req);
}

static int tp_reduce_scatter(AxTpComm *c, AxTpGroup g, const void *send, void *recv, size_t n,
                             AxTpType type, AxTpReq **req) {
  AxTpMpi *t = self(c);
  AxColl *op = NULL;
  Upload up = {0};
  const void *from = send;
  void *into = recv;
  if (t->on_device) { /* the group's blocks, then this rank's sum after them */
    size_t block = n * ax_tp_type_size(type), all = block * (size_t)c->size[g];
    char *host;
    AX_TRY(stage_in(t, &(StagePlan){send, all, 0, recv, block, all, all + block}, &up, &host));
    from = host;
    into = host + all;
  }
  int rc = ax_reduce_scatter_start(&op, t->grid->tpc[g], &t->cc, from, into, n, comm_type(type),
                                   count(c, g, AX_TP_OP_REDUCE_SCATTER));
  return finish_or_hand(c, g, AX_TP_OP_REDUCE_SCATTER, rc, op, &up, req);
}

/* A gather or reduce-scatter over a group of one: a copy within the buffers' memory. */
static int tp_local_copy(AxTpComm *c, void *dst, const void *src, size_t bytes) {
  AxTpMpi *t = self(c);
  if (!t->on_device) {
    memcpy(dst, src, bytes);
    return AX_OK;
  }
  return t->be->ops->copy(t->be, dst, src, bytes, AX_COPY_D2D, AX_STREAM_COMPUTE);
}

static int tp_wait(AxTpComm *c, AxTpReq *req) {
  unlink_in_flight(self(c), req);
  int rc = finish(c, req->group, req->op, &req->up);
  free(req);
  return rc;
}

static void tp_note_gemm(AxTpComm *c) {
  AxTpMpi *t = self(c);
  t->stats.gemms++;
  for (int k = 0; k < AX_TP_OPS; k++) t->stats.in_flight_at_gemm[k] += t->n_in_flight[k];
}

/* One test of every collective in flight: each moves on as far as its messages allow. */
static int tp_progress(AxTpComm *c) {
  AxTpMpi *t = self(c);
  if (!t->in_flight) return AX_OK;
  t->stats.progress_calls++;
  for (AxTpReq *r = t->in_flight; r; r = r->next) {
    int done;
    AX_TRY(ax_coll_test(r->op, &done));
  }
  return AX_OK;
}

static void tp_ahead(AxTpComm *c, int on) { self(c)->ahead = on; }

static const AxTpCommOps TP_MPI_OPS = {.all_reduce = tp_all_reduce,
                                       .all_gather = tp_all_gather,
                                       .reduce_scatter = tp_reduce_scatter,
                                       .wait = tp_wait,
                                       .note_gemm = tp_note_gemm,
                                       .progress = tp_progress,
                                       .local_copy = tp_local_copy,
                                       .ahead = tp_ahead};

void ax_tp_mpi_init(AxTpMpi *t, const AxGrid *grid) {
  memset(t, 0, sizeof *t);
  t->grid = grid;
  t->cc = ax_comm_config_as(&grid->comm_cfg, AX_TRAFFIC_TENSOR_PARALLEL);
  t->comm.ops = &TP_MPI_OPS;
  t->comm.impl = t;
  for (int d = 0; d < 3; d++) {
    t->comm.size[d] = grid->tp[d];
    t->comm.coord[d] = grid->tc[d];
  }
}

/* Staging buffers at most in use at once: every block's 4 deferred reduce-scatters (ORS) and
 * prefetched gathers (OAG) of a deep stage, with room to spare. */
enum { TP_STAGE_MAX = 4096 };

_Static_assert(AX_TP_BF16 == (int)AX_DTYPE_BF16 && AX_TP_F16 == (int)AX_DTYPE_F16 &&
                   AX_TP_F32 == (int)AX_DTYPE_F32,
               "tp_comm.h's element types are numbered as backend.h's");

void ax_tp_mpi_bind(AxTpMpi *t, AxBackend *be, int device_buffers) {
  t->be = be;
  t->comm.type = be ? (AxTpType)be->dtype : AX_TP_F32;
  t->on_device = be && !be->is_host;
  t->device_all_reduce = t->on_device && device_buffers && !ax_link_emulating(t->cc.links);
  t->cap_pool = t->on_device ? TP_STAGE_MAX : 0;
}

void ax_tp_mpi_release(AxTpMpi *t) {
  for (int i = 0; i < t->n_pool; i++) t->be->ops->host_free(t->be, t->pool[i].host);
  free(t->pool);
  t->pool = NULL;
  t->n_pool = 0;
}

const char *ax_tp_mpi_describe(const AxTpMpi *t) {
  if (!t->on_device) return "tensor-parallel collectives on the buffers in place (host memory)";
  if (t->device_all_reduce)
    return "tensor-parallel all-reduces on device buffers (CUDA-aware MPI_Iallreduce); "
           "all-gathers and reduce-scatters staged through pinned host buffers";
  return "tensor-parallel collectives staged through pinned host buffers (MPI takes no device "
         "buffers here)";
}

const char *ax_tp_op_name(AxTpOp op) {
  static const char *const NAMES[AX_TP_OPS] = {"all-reduce", "all-gather", "reduce-scatter"};
  return (unsigned)op < AX_TP_OPS ? NAMES[op] : "?";
}

void ax_tp_stats_add_delta(AxTpStats *sum, const AxTpStats *now, const AxTpStats *before) {
  for (int g = 0; g < 3; g++) {
    for (int op = 0; op < AX_TP_OPS; op++) {
      sum->bytes[g][op].sent += now->bytes[g][op].sent - before->bytes[g][op].sent;
      sum->bytes[g][op].received += now->bytes[g][op].received - before->bytes[g][op].received;
      sum->calls[g][op] += now->calls[g][op] - before->calls[g][op];
    }
    sum->wait_s[g] += now->wait_s[g] - before->wait_s[g];
  }
  for (int op = 0; op < AX_TP_OPS; op++) {
    sum->started[op] += now->started[op] - before->started[op];
    sum->started_ahead[op] += now->started_ahead[op] - before->started_ahead[op];
    sum->in_flight_at_gemm[op] += now->in_flight_at_gemm[op] - before->in_flight_at_gemm[op];
  }
  sum->gemms += now->gemms - before->gemms;
  sum->staged_down += now->staged_down - before->staged_down;
  sum->staged_up += now->staged_up - before->staged_up;
  sum->progress_calls += now->progress_calls - before->progress_calls;
}
