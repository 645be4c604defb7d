/* tp_mpi.h — the tensor-parallel communication interface (src/core/tp_comm.h) over the grid's
 * X, Y and Z communicators and axonn's own collectives (collectives.h), counting every byte sent
 * per group and operation, and as tensor-parallel traffic in the grid's counters. */
#ifndef AX_MPI_TP_MPI_H
#define AX_MPI_TP_MPI_H

#include "collectives.h"
#include "mpi/grid.h"
#include "src/core/tp_comm.h"

typedef enum { AX_TP_OP_ALLREDUCE = 0, AX_TP_OP_ALLGATHER, AX_TP_OP_REDUCE_SCATTER, AX_TP_OPS } AxTpOp;

/* What this rank's collectives moved and waited, per group (X, Y, Z) and operation. */
typedef struct {
  AxCommBytes bytes[3][AX_TP_OPS]; /* payload bytes sent and received */
  unsigned long long calls[3][AX_TP_OPS];
  double wait_s[3]; /* seconds blocked finishing the group's collectives (not overlapped) */
  /* The overlaps' evidence (deterministic counts, not times), per operation over all groups */
  unsigned long long started[AX_TP_OPS]; /* started with a request: left running (overlapped) */
  unsigned long long started_ahead[AX_TP_OPS]; /* of those, prefetches started ahead of the
                                                * step's compute (the first weights, OAG) */
  unsigned long long gemms;              /* GEMMs the layers began */
  unsigned long long in_flight_at_gemm[AX_TP_OPS]; /* over those GEMMs: started, not waited */
  unsigned long long progress_calls;     /* progress calls made with a collective in flight */
} AxTpStats;

typedef struct {
  AxTpComm comm;         /* hand &comm to the layers */
  const AxGrid *grid;    /* must outlive this */
  AxCommConfig cc;       /* the grid's configuration, counting as tensor-parallel traffic */
  AxTpStats stats;
  AxTpReq *in_flight;          /* the started collectives not yet waited for, newest first */
  int n_in_flight[AX_TP_OPS];  /* how many of them per operation */
  int ahead;                   /* starting prefetches ahead of the compute (ahead(c, 1)) */
} AxTpMpi;

/* Binds t to the grid's tensor-parallel communicators (grid->comm_cfg is copied now). */
void ax_tp_mpi_init(AxTpMpi *t, const AxGrid *grid);
const char *ax_tp_op_name(AxTpOp op);
/* sum += now - before, field by field (what a step added). */
void ax_tp_stats_add_delta(AxTpStats *sum, const AxTpStats *now, const AxTpStats *before);

#endif
