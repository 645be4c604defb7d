/* trace_merge.h — gathers every rank's trace events to rank 0, which writes one Chrome trace
 * file with a track per rank. Also aligns the ranks' trace origins with a barrier. */
#ifndef AX_TRACE_MERGE_H
#define AX_TRACE_MERGE_H

#include <mpi.h>

#include "src/core/trace.h"

/* Collective: barrier, then every rank's origin is "now" (clocks of one node agree; across
 * nodes the barrier skew, microseconds, is the alignment error). */
int ax_trace_align(AxTrace *t, MPI_Comm comm);
/* Collective: rank 0 writes path, its tracks named by their place in the layout. */
int ax_trace_merge_write(const AxTrace *t, MPI_Comm comm, const char *path,
                         const AxRankLayout *layout);

#endif
