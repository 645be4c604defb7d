/* vnodes.c — virtual nodes from --ranks-per-node or the real nodes; see vnodes.h. */
#include "vnodes.h"

#include <stdlib.h>
#include <string.h>

#include "mpi/mpi_util.h"
#include "src/core/error.h"

/* Real nodes: every rank learns the lowest world rank of each rank's node. */
static int real_leaders(MPI_Comm world, int rank, int *leader_of) {
  MPI_Comm shared;
  AX_MPI(MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &shared));
  int mine = rank, leader = rank;
  int rc = MPI_Allreduce(&mine, &leader, 1, MPI_INT, MPI_MIN, shared);
  MPI_Comm_free(&shared);
  if (rc != MPI_SUCCESS)
    return ax_mpi_fail_at(rc, "MPI_Allreduce(node leader)", __FILE__, __LINE__);
  AX_MPI(MPI_Allgather(&leader, 1, MPI_INT, leader_of, 1, MPI_INT, world));
  return AX_OK;
}

/* Node ids 0, 1, ... in the order of their lowest rank. */
static void number_nodes(AxVNodes *v, const int *leader_of) {
  v->n_nodes = 0;
  for (int r = 0; r < v->size; r++)
    v->node_of[r] = leader_of[r] == r ? v->n_nodes++ : v->node_of[leader_of[r]];
}

int ax_vnodes_check(int size, int ranks_per_node) {
  if (ranks_per_node < 0)
    return AX_FAIL("--ranks-per-node %d is negative (0: the real nodes)", ranks_per_node);
  if (ranks_per_node > 0 && size % ranks_per_node)
    return AX_FAIL("--ranks-per-node %d does not divide the job's %d rank(s)", ranks_per_node,
                   size);
  return AX_OK;
}

static int build(AxVNodes *v, MPI_Comm world, int ranks_per_node) {
  int rank;
  AX_MPI(MPI_Comm_rank(world, &rank));
  AX_MPI(MPI_Comm_size(world, &v->size));
  AX_TRY(ax_vnodes_check(v->size, ranks_per_node));
  if (!(v->node_of = ax_malloc((size_t)v->size * sizeof *v->node_of))) return AX_ERR;
  if (ranks_per_node > 0) {
    for (int r = 0; r < v->size; r++) v->node_of[r] = r / ranks_per_node;
    v->n_nodes = v->size / ranks_per_node;
  } else {
    int *leader_of = ax_malloc((size_t)v->size * sizeof *leader_of);
    if (!leader_of) return AX_ERR;
    int rc = real_leaders(world, rank, leader_of);
    if (rc == AX_OK) number_nodes(v, leader_of);
    free(leader_of);
    AX_TRY(rc);
  }
  v->my_node = v->node_of[rank];
  AX_MPI(MPI_Comm_split(world, v->my_node, rank, &v->node));
  return AX_OK;
}

int ax_vnodes_create(AxVNodes *v, MPI_Comm world, int ranks_per_node) {
  memset(v, 0, sizeof *v);
  v->node = MPI_COMM_NULL;
  v->ranks_per_node = ranks_per_node;
  int rc = build(v, world, ranks_per_node);
  if (rc != AX_OK) ax_vnodes_destroy(v);
  return rc;
}

void ax_vnodes_destroy(AxVNodes *v) {
  if (v->node != MPI_COMM_NULL) MPI_Comm_free(&v->node);
  free(v->node_of);
  memset(v, 0, sizeof *v);
  v->node = MPI_COMM_NULL;
}

int ax_vnodes_node_shares_memory(const AxVNodes *v, int *yes) {
  MPI_Comm shared;
  int node_size, shared_size, mine, all;
  AX_MPI(MPI_Comm_size(v->node, &node_size));
  AX_MPI(MPI_Comm_split_type(v->node, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shared));
  int rc = MPI_Comm_size(shared, &shared_size);
  MPI_Comm_free(&shared);
  if (rc != MPI_SUCCESS) return ax_mpi_fail_at(rc, "MPI_Comm_size(shared)", __FILE__, __LINE__);
  mine = shared_size == node_size;
  AX_MPI(MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, v->node));
  *yes = all;
  return AX_OK;
}
