/* world_rank.h — which MPI_COMM_WORLD rank each member of a communicator is, so that messages
 * (the watchdog's "waiting for rank 5") can name a peer the way the user counts ranks. */
#ifndef AX_WORLD_RANK_H
#define AX_WORLD_RANK_H

#include <mpi.h>

/* *table gets one world rank per rank of comm. Computed on first use and kept as an attribute
 * of comm (freed with it), so later calls cost one attribute look-up; *table stays valid until
 * comm is freed. */
int ax_mpi_world_ranks(MPI_Comm comm, const int **table);
/* The world rank of rank r of comm; -1 for MPI_PROC_NULL (or an out-of-range r). */
int ax_mpi_world_rank_of(const int *table, int size, int r);

#endif
