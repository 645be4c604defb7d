/* trainer_link.c — the alpha-beta cost of the trainer's link, for the decisions that weigh
 * bytes against time (compression, the sparse embedding sync, replica scheduling): the
 * emulated link's own figures, or a ping-pong measured over a communicator. */
#include "mpi/casync/casync_cost.h"
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
