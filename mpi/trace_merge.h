/* trace_merge.h — gathers every rank's trace events to rank 0, which writes one Chrome trace
 * file with a track per rank. Also aligns the ranks' trace origins to one instant. */
#ifndef AX_TRACE_MERGE_H
#define AX_TRACE_MERGE_H

#include <mpi.h>

#include "src/core/trace.h"

/* Collective: every rank's origin is the same instant, rank 0's clock after a barrier. On one
 * machine every rank reads the same CLOCK_MONOTONIC and takes rank 0's reading as it is (a
 * barrier alone, each rank reading its own clock as it leaves, put the origins of 4 ranks on 2
 * cores milliseconds apart, and a message in the trace arrived before it was sent); across
 * machines each rank's clock is timed against rank 0's first (ax_trace_clock_to_rank0). */
int ax_trace_align(AxTrace *t, MPI_Comm comm);
/* Collective: what this rank's clock reads ahead of rank 0's (*offset, seconds; 0 on rank 0)
 * and the round trip that timed it (*rtt, the offset is off by at most half of it): 0 and 0 on
 * one machine unless `measure`, else from ping-pongs with rank 0, the shortest of several. */
int ax_trace_clock_to_rank0(MPI_Comm comm, int measure, double *offset, double *rtt);
/* Collective: rank 0 writes path, its tracks named by their place in the layout. */
int ax_trace_merge_write(const AxTrace *t, MPI_Comm comm, const char *path,
                         const AxRankLayout *layout);

#endif
