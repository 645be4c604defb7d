/* train_watchdog.c — the watchdog wiring of `axonn train`; see train_watchdog.h. */
#include "train_watchdog.h"

#include <math.h>
#include <mpi.h>
#include <stdlib.h>

#include "mpi/mpi_util.h"
#include "src/core/error.h"
#include "src/core/watchdog.h"

void ax_train_mpi_errors_return(void) {
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
}

/* The job-ending action the watchdog calls (from its own thread; see watchdog.h). */
static void abort_job(int code) { MPI_Abort(MPI_COMM_WORLD, code); }

/* Every rank's pid, start time and boot id, so that each can watch its node's others. */
static int gather_peers(const AxGrid *g, AxProcId *all) {
  AxProcId me;
  ax_proc_self(&me);
  if (g->world == MPI_COMM_NULL) {
    all[0] = me;
    return AX_OK;
  }
  AX_MPI(MPI_Allgather(&me, sizeof me, MPI_BYTE, all, sizeof me, MPI_BYTE, g->world));
  return AX_OK;
}

static int timeout_ms(double seconds) {
  if (seconds <= 0) return 0;
  double ms = ceil(seconds * 1e3);
  return ms > 2e9 ? 2000000000 : (int)ms;
}

int ax_train_watchdog_start(const AxTrainer *t, double timeout_s) {
  const AxGrid *g = ax_trainer_grid(t);
  AxProcId *all = ax_calloc((size_t)g->size, sizeof *all);
  int rc = all ? gather_peers(g, all) : AX_ERR;
  AxWatchdogConfig c = {.timeout_ms = timeout_ms(timeout_s), .rank = g->rank, .size = g->size,
                        .layout = ax_grid_layout(g), .peers = all, .signals = g->size > 1,
                        .end_job = abort_job};
  if (rc == AX_OK) rc = ax_watchdog_start(&c);
  free(all);
  return ax_grid_agree(g, rc);
}

void ax_train_watchdog_stop(void) { ax_watchdog_stop(); }
