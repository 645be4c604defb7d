/* tp_comm.c — tensor-parallel collectives over the grid's X, Y, Z communicators; see
 * tp_comm.h. An operation is one of our non-blocking collectives; wait drives it to the end. */
#include "tp_comm.h"

#include <stdlib.h>
#include <string.h>

#include "src/core/error.h"

struct AxTpReq {
  AxColl *op;
};

static AxTpMpi *self(AxTpComm *c) { return c->impl; }

/* Runs a started collective to the end now (req == NULL) or hands it to the caller. */
static int finish_or_hand(AxColl *op, AxTpReq **req) {
  if (!req) {
    int rc = ax_coll_wait(op);
    ax_coll_free(op);
    return rc;
  }
  AxTpReq *r = ax_malloc(sizeof *r);
  if (!r) {
    ax_coll_free(op);
    return AX_ERR;
  }
  r->op = op;
  *req = r;
  return AX_OK;
}

static AxCommBytes *count(AxTpComm *c, AxTpGroup g, AxTpOp op) { return &self(c)->bytes[g][op]; }

static int tp_all_reduce(AxTpComm *c, AxTpGroup g, float *buf, size_t n, AxTpReq **req) {
  AxColl *op;
  AX_TRY(ax_allreduce_start(&op, self(c)->grid->tpc[g], &self(c)->cc, buf, n, AX_COMM_F32,
                            AX_ALLREDUCE_RING, count(c, g, AX_TP_OP_ALLREDUCE)));
  return finish_or_hand(op, req);
}

static int tp_all_gather(AxTpComm *c, AxTpGroup g, const float *send, float *recv, size_t n,
                         AxTpReq **req) {
  AxColl *op;
  AX_TRY(ax_allgather_start(&op, self(c)->grid->tpc[g], &self(c)->cc, send, recv, n,
                            AX_COMM_F32, count(c, g, AX_TP_OP_ALLGATHER)));
  return finish_or_hand(op, req);
}

static int tp_reduce_scatter(AxTpComm *c, AxTpGroup g, const float *send, float *recv, size_t n,
                             AxTpReq **req) {
  AxColl *op;
  AX_TRY(ax_reduce_scatter_start(&op, self(c)->grid->tpc[g], &self(c)->cc, send, recv, n,
                                 AX_COMM_F32, count(c, g, AX_TP_OP_REDUCE_SCATTER)));
  return finish_or_hand(op, req);
}

static int tp_wait(AxTpComm *c, AxTpReq *req) {
  (void)c;
  int rc = ax_coll_wait(req->op);
  ax_coll_free(req->op);
  free(req);
  return rc;
}

static const AxTpCommOps TP_MPI_OPS = {tp_all_reduce, tp_all_gather, tp_reduce_scatter, tp_wait};

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
