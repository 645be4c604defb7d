/* vnodes.h — virtual nodes: which ranks share a node as far as the link emulator and the
 * traffic counters are concerned. --ranks-per-node N puts world rank r on node r / N (N must
 * divide the job); N = 0 takes the real nodes (ranks sharing memory, MPI_COMM_TYPE_SHARED),
 * numbered by their lowest rank. Each rank also gets a communicator of its own node's ranks
 * (world order), on which the emulator shares the node's link state (link_table.h). */
#ifndef AX_VNODES_H
#define AX_VNODES_H

#include <mpi.h>

typedef struct {
  int ranks_per_node; /* as asked: 0 = the real nodes */
  int size;           /* ranks of the job */
  int *node_of;       /* [size]: the virtual node of every world rank */
  int n_nodes, my_node;
  MPI_Comm node;      /* this rank's virtual node */
} AxVNodes;

/* Collective over world (MPI_COMM_WORLD or a duplicate: its ranks are world ranks). Fails on
 * every rank alike when ranks_per_node is negative or does not divide the job. On failure
 * nothing is left to destroy. */
int ax_vnodes_create(AxVNodes *v, MPI_Comm world, int ranks_per_node);
void ax_vnodes_destroy(AxVNodes *v);
/* The check ax_vnodes_create makes, without MPI (to refuse a bad --ranks-per-node before
 * anything is printed): one line when ranks_per_node is negative or does not divide size. */
int ax_vnodes_check(int size, int ranks_per_node);
/* Whether the ranks of this rank's virtual node share memory (one machine): collective over
 * v->node; *yes is the same on all of them. */
int ax_vnodes_node_shares_memory(const AxVNodes *v, int *yes);

#endif
