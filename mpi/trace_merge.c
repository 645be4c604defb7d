/* trace_merge.c — gather trace events to rank 0 and write them; see trace_merge.h. */
#include "trace_merge.h"

#include <stdlib.h>

#include "mpi_util.h"
#include "src/core/error.h"
#include "src/core/timer.h"

/* Exchanges between rank 0 and each other rank that time its clock (the shortest is kept). */
enum { CLOCK_EXCHANGES = 16, CLOCK_TAG = 7301 };

/* Whether every rank of comm is on this machine (one CLOCK_MONOTONIC), the same on all. */
static int one_machine(MPI_Comm comm, int *yes) {
  AxNodeRanks node;
  int size;
  AX_MPI(MPI_Comm_size(comm, &size));
  AX_TRY(ax_mpi_node_ranks(comm, &node));
  *yes = node.local_size == size; /* the same on every rank: one node holds all, or none does */
  return AX_OK;
}

/* Rank 0 times rank r's clock (ax_trace_clock_offset) and tells it: on r, *offset and *rtt. */
static int time_clock_of(MPI_Comm comm, int rank, int r, double *offset, double *rtt) {
  double t0[CLOCK_EXCHANGES], tr[CLOCK_EXCHANGES], t1[CLOCK_EXCHANGES], result[2];
  for (int i = 0; i < CLOCK_EXCHANGES; i++) {
    if (rank == 0) {
      t0[i] = ax_now();
      AX_MPI(MPI_Send(&t0[i], 1, MPI_DOUBLE, r, CLOCK_TAG, comm));
      AX_MPI(MPI_Recv(&tr[i], 1, MPI_DOUBLE, r, CLOCK_TAG, comm, MPI_STATUS_IGNORE));
      t1[i] = ax_now();
    } else {
      double ask;
      AX_MPI(MPI_Recv(&ask, 1, MPI_DOUBLE, 0, CLOCK_TAG, comm, MPI_STATUS_IGNORE));
      double now = ax_now();
      AX_MPI(MPI_Send(&now, 1, MPI_DOUBLE, 0, CLOCK_TAG, comm));
    }
  }
  if (rank == 0) {
    result[0] = ax_trace_clock_offset(t0, tr, t1, CLOCK_EXCHANGES, &result[1]);
    AX_MPI(MPI_Send(result, 2, MPI_DOUBLE, r, CLOCK_TAG, comm));
  } else {
    AX_MPI(MPI_Recv(result, 2, MPI_DOUBLE, 0, CLOCK_TAG, comm, MPI_STATUS_IGNORE));
  }
  *offset = result[0];
  *rtt = result[1];
  return AX_OK;
}

int ax_trace_clock_to_rank0(MPI_Comm comm, int measure, double *offset, double *rtt) {
  int rank, size, same = 0;
  AX_MPI(MPI_Comm_rank(comm, &rank));
  AX_MPI(MPI_Comm_size(comm, &size));
  *offset = *rtt = 0;
  if (!measure) AX_TRY(one_machine(comm, &same));
  if (same) return AX_OK;
  for (int r = 1; r < size; r++)
    if (rank == 0 || rank == r) AX_TRY(time_clock_of(comm, rank, r, offset, rtt));
  if (rank == 0) *offset = *rtt = 0;
  return AX_OK;
}

int ax_trace_align(AxTrace *t, MPI_Comm comm) {
  double offset, rtt, origin;
  AX_TRY(ax_trace_clock_to_rank0(comm, 0, &offset, &rtt));
  AX_MPI(MPI_Barrier(comm));
  origin = ax_now();
  AX_MPI(MPI_Bcast(&origin, 1, MPI_DOUBLE, 0, comm));
  ax_trace_set_origin(t, origin + offset); /* rank 0's "now", read on this rank's clock */
  return AX_OK;
}

int ax_trace_merge_write(const AxTrace *t, MPI_Comm comm, const char *path,
                         const AxRankLayout *layout) {
  int rank, size;
  AX_MPI(MPI_Comm_rank(comm, &rank));
  AX_MPI(MPI_Comm_size(comm, &size));
  int *counts = NULL, *displs = NULL, total = 0;
  AxTraceEvent *all = NULL;
  if (rank == 0) {
    counts = ax_calloc((size_t)size, sizeof *counts);
    displs = ax_calloc((size_t)size, sizeof *displs);
    if (!counts || !displs) return AX_ERR; /* (the job aborts on a failed collective) */
  }
  AX_MPI(MPI_Gather(&t->n, 1, MPI_INT, counts, 1, MPI_INT, 0, comm));
  if (rank == 0) {
    for (int r = 0; r < size; r++) {
      displs[r] = total * (int)sizeof(AxTraceEvent);
      total += counts[r];
      counts[r] *= (int)sizeof(AxTraceEvent);
    }
    all = ax_malloc((size_t)(total ? total : 1) * sizeof *all);
    if (!all) return AX_ERR;
  }
  AX_MPI(MPI_Gatherv(t->ev, t->n * (int)sizeof(AxTraceEvent), MPI_BYTE, all, counts, displs,
                     MPI_BYTE, 0, comm));
  int rc = AX_OK;
  if (rank == 0) {
    for (int r = 0; r < size; r++) counts[r] /= (int)sizeof(AxTraceEvent);
    rc = ax_trace_write_json(path, all, counts, size, layout);
  }
  free(all);
  free(counts);
  free(displs);
  return rc;
}
