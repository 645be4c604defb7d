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
static int gather_peers(int size, AxProcId *all) {
  AxProcId me;
  ax_proc_self(&me);
  if (size == 1) {
    all[0] = me;
    return AX_OK;
  }
  AX_MPI(MPI_Allgather(&me, sizeof me, MPI_BYTE, all, sizeof me, MPI_BYTE, MPI_COMM_WORLD));
  return AX_OK;
}

static int timeout_ms(double seconds) {
  if (seconds <= 0) return 0;
  double ms = ceil(seconds * 1e3);
  return ms > 2e9 ? 2000000000 : (int)ms;
}

int ax_train_watchdog_start(const AxTrainConfig *cfg) {
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  AxProcId *all = ax_calloc((size_t)size, sizeof *all);
  int rc = all ? gather_peers(size, all) : AX_ERR;
  AxRankLayout layout = {cfg->grid.g_inter, {cfg->grid.gx, cfg->grid.gy, cfg->grid.gz}}; /* as mpi/grid.c places */
  AxWatchdogConfig c = {.timeout_ms = timeout_ms(cfg->debug.step_timeout),
                        .setup_timeout_ms = timeout_ms(cfg->debug.startup_timeout), .rank = rank,
                        .size = size, .layout = layout, .peers = all, .signals = size > 1,
                        .end_job = abort_job};
  if (rc == AX_OK) rc = ax_watchdog_start(&c);
  free(all);
  rc = ax_mpi_agree(MPI_COMM_WORLD, rc);
  if (rc == AX_OK) ax_wd_phase(AX_WD_SETUP, 0);
  return rc;
}

void ax_train_watchdog_stop(void) { ax_watchdog_stop(); }
