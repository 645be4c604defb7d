/* trainer_link.c — the trainer's link as the decisions that weigh bytes against time see it
 * (compression, the sparse embedding sync, replica scheduling): what carries the data-parallel
 * sum (shared memory, a real network, or the emulated link between virtual nodes), and its
 * alpha-beta cost: the emulated link's own figures, or a ping-pong measured over a
 * communicator. */
#include "mpi/casync/casync_cost.h"
#include "mpi/mpi_util.h"
#include "src/core/error.h"
#include "trainer_impl.h"

int ax_trainer_link_cost(AxTrainer *t, MPI_Comm probe, AxLinearCost *out) {
  if (ax_link_emulating(t->links)) {
    AxLinkSpec s = ax_link_spec_of(t->links);
    *out = (AxLinearCost){s.latency_s, s.bytes_per_s};
    return AX_OK;
  }
  return ax_casync_measure_send(probe, out);
}

/* This rank's column: 1 when its data-parallel ranks sit on more than one virtual node. */
static int column_spans_nodes(const AxTrainer *t, int *spans) {
  int node = ax_link_node_of(t->links, t->grid.rank), lo = node, hi = node;
  AX_MPI(MPI_Allreduce(&node, &lo, 1, MPI_INT, MPI_MIN, t->grid.data));
  AX_MPI(MPI_Allreduce(&node, &hi, 1, MPI_INT, MPI_MAX, t->grid.data));
  *spans = lo != hi;
  return AX_OK;
}

/* This rank's column: 1 when all its data-parallel ranks share one machine's memory. */
static int column_in_memory(const AxTrainer *t, int *shared) {
  MPI_Comm local;
  int size = 0, all = 0;
  AX_MPI(MPI_Comm_split_type(t->grid.data, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local));
  int rc = MPI_Comm_size(local, &size);
  MPI_Comm_free(&local);
  if (rc != MPI_SUCCESS) return ax_mpi_fail_at(rc, "MPI_Comm_size(shared)", __FILE__, __LINE__);
  int mine = size == t->grid.D;
  AX_MPI(MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, t->grid.data));
  *shared = all;
  return AX_OK;
}

int ax_trainer_data_link(AxTrainer *t, AxDataLink *out) {
  int kind = AX_DP_MEMORY, spans = 0, shared = 1;
  if (t->grid.D > 1) {
    AX_TRY(column_spans_nodes(t, &spans));
    if (ax_link_emulating(t->links) && spans) kind = AX_DP_EMULATED;
    else {
      AX_TRY(column_in_memory(t, &shared));
      kind = shared ? AX_DP_MEMORY : AX_DP_MEASURED;
    }
  }
  AX_MPI(MPI_Allreduce(MPI_IN_PLACE, &kind, 1, MPI_INT, MPI_MAX, t->grid.world));
  *out = (AxDataLink)kind;
  return AX_OK;
}

int ax_trainer_data_nodes(AxTrainer *t, int *node, int *g) {
  int D = t->grid.D, mine = ax_link_node_of(t->links, t->grid.rank);
  node[0] = mine;
  if (D > 1) AX_MPI(MPI_Allgather(&mine, 1, MPI_INT, node, 1, MPI_INT, t->grid.data));
  *g = D;
  for (int i = 0; i < D; i++) {
    int same = 0;
    for (int j = 0; j < D; j++) same += node[j] == node[i];
    if (same < *g) *g = same;
  }
  if (D % *g) *g = 1;
  return AX_OK;
}
