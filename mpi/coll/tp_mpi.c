/* tp_mpi.c — tensor-parallel collectives over the grid's X, Y, Z communicators; see
 * tp_mpi.h. An operation is one of our non-blocking collectives; wait drives it to the end. */
#include "tp_mpi.h"

#include <stdlib.h>
#include <string.h>

#include "src/core/error.h"
#include "src/core/timer.h"

struct AxTpReq {
  AxColl *op;
  AxTpGroup group;
  AxTpOp kind;
  AxTpReq *prev, *next; /* in the in-flight list */
};

static AxTpMpi *self(AxTpComm *c) { return c->impl; }

/* Drives a collective to its end, counting the time blocked as the group's. */
static int finish(AxTpComm *c, AxTpGroup g, AxColl *op) {
  double t0 = ax_now();
  int rc = ax_coll_wait(op);
  self(c)->stats.wait_s[g] += ax_now() - t0;
  ax_coll_free(op);
  return rc;
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
 * until it is waited for. */
static int finish_or_hand(AxTpComm *c, AxTpGroup g, AxTpOp kind, AxColl *op, AxTpReq **req) {
  if (!req) return finish(c, g, op);
  AxTpReq *r = ax_malloc(sizeof *r);
  if (!r) {
    ax_coll_free(op);
    return AX_ERR;
  }
  *r = (AxTpReq){.op = op, .group = g, .kind = kind};
  link_in_flight(self(c), r);
  *req = r;
  return AX_OK;
}

/* The byte counter of one operation on a group (and one more call of it). */
static AxCommBytes *count(AxTpComm *c, AxTpGroup g, AxTpOp op) {
  self(c)->stats.calls[g][op]++;
  return &self(c)->stats.bytes[g][op];
}

static int tp_all_reduce(AxTpComm *c, AxTpGroup g, float *buf, size_t n, AxTpReq **req) {
  AxColl *op;
  AX_TRY(ax_allreduce_start(&op, self(c)->grid->tpc[g], &self(c)->cc, buf, n, AX_COMM_F32,
                            AX_ALLREDUCE_RING, count(c, g, AX_TP_OP_ALLREDUCE)));
  return finish_or_hand(c, g, AX_TP_OP_ALLREDUCE, op, req);
}

static int tp_all_gather(AxTpComm *c, AxTpGroup g, const float *send, float *recv, size_t n,
                         AxTpReq **req) {
  AxColl *op;
  AX_TRY(ax_allgather_start(&op, self(c)->grid->tpc[g], &self(c)->cc, send, recv, n,
                            AX_COMM_F32, count(c, g, AX_TP_OP_ALLGATHER)));
  return finish_or_hand(c, g, AX_TP_OP_ALLGATHER, op, req);
}

static int tp_reduce_scatter(AxTpComm *c, AxTpGroup g, const float *send, float *recv, size_t n,
                             AxTpReq **req) {
  AxColl *op;
  AX_TRY(ax_reduce_scatter_start(&op, self(c)->grid->tpc[g], &self(c)->cc, send, recv, n,
                                 AX_COMM_F32, count(c, g, AX_TP_OP_REDUCE_SCATTER)));
  return finish_or_hand(c, g, AX_TP_OP_REDUCE_SCATTER, op, req);
}

static int tp_wait(AxTpComm *c, AxTpReq *req) {
  unlink_in_flight(self(c), req);
  int rc = finish(c, req->group, req->op);
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

static const AxTpCommOps TP_MPI_OPS = {tp_all_reduce, tp_all_gather, tp_reduce_scatter, tp_wait,
                                       tp_note_gemm, tp_progress, tp_ahead};

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
  sum->progress_calls += now->progress_calls - before->progress_calls;
}
