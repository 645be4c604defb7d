/* sim_measure_comm.c — what the profile times between ranks: the data-parallel all-reduce of
 * this host's ranks as the trainer runs it (see sim_profile.h). Half the memcpy bandwidth, the
 * link the simulator gave the host's ranks before, priced a 2-rank all-reduce of a 13 MB
 * gradient at 1.9 ms where the trainer took 4.5-6.6 ms: MPI's shared-memory path, the chunking
 * and the waits cost more than a copy (docs/benchmarks.md, "Why 1x2 is predicted too fast").
 * Timed at the sizes a gradient has (1, 4 and 16 MB), each the median over a few rounds of the
 * slowest rank (a typical step's cost, where the start-up probes of casync_probe.c take the
 * least: the paths' own cost for a decision). */
#include "sim_profile.h"

#include <stdlib.h>

#include "mpi/casync/casync_cost.h"
#include "mpi/comm_config.h"
#include "mpi/mpi_util.h"
#include "src/backend/peak.h"
#include "src/core/error.h"

enum { ALLREDUCE_ROUNDS = 7, N_SIZES = 3 };
static const size_t SIZES[N_SIZES] = {1 << 20, 4 << 20, 16 << 20};

/* The median over ALLREDUCE_ROUNDS of the slowest rank's seconds. */
static int time_allreduce(MPI_Comm comm, const AxCommConfig *cc, AxAllreduceAlgo algo,
                          float *buf, size_t count, double *seconds) {
  double t[ALLREDUCE_ROUNDS];
  AX_TRY(ax_casync_time_allreduce(comm, cc, algo, buf, count, ALLREDUCE_ROUNDS, t));
  *seconds = ax_median(t, ALLREDUCE_ROUNDS);
  return AX_OK;
}

int ax_sim_profile_measure_allreduce(MPI_Comm comm, const AxTrainConfig *cfg, AxSimProfile *p) {
  int size;
  AX_MPI(MPI_Comm_size(comm, &size));
  p->allreduce_ranks = 0;
  p->allreduce_latency_s = p->allreduce_bytes_per_s = 0;
  if (size < 2) return AX_OK;
  AxCommConfig cc = ax_comm_config_default();
  cc.polite = ax_mpi_auto_polite(comm);
  float *buf = ax_calloc(SIZES[N_SIZES - 1] / sizeof(float), sizeof(float));
  AX_TRY(ax_mpi_agree(comm, buf ? AX_OK : AX_ERR));
  double bytes[N_SIZES], seconds[N_SIZES];
  int rc = AX_OK;
  for (int i = 0; i < N_SIZES && rc == AX_OK; i++) {
    bytes[i] = (double)SIZES[i];
    rc = ax_mpi_agree(comm, time_allreduce(comm, &cc, (AxAllreduceAlgo)cfg->grid.allreduce, buf,
                                           SIZES[i] / sizeof(float), &seconds[i]));
  }
  free(buf);
  AX_TRY(rc);
  AxLinearCost fit = ax_linear_fit(bytes, seconds, N_SIZES); /* the same on every rank */
  p->allreduce_ranks = size;
  p->allreduce_latency_s = fit.latency_s;
  p->allreduce_bytes_per_s = fit.bytes_per_s;
  return AX_OK;
}
