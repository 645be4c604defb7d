/* trace_merge.c — gather trace events to rank 0 and write them; see trace_merge.h. */
#include "trace_merge.h"

#include <stdlib.h>

#include "mpi_util.h"
#include "src/core/error.h"
#include "src/core/timer.h"

int ax_trace_align(AxTrace *t, MPI_Comm comm) {
  AX_MPI(MPI_Barrier(comm));
  ax_trace_set_origin(t, ax_now());
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
