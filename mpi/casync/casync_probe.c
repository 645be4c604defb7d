/* casync_probe.c — the link's costs for the cost model (casync_cost.h), measured: the send
 * cost by a ping-pong of three sizes between ranks 0 and 1 of a communicator (plain MPI: the
 * real path, not an emulated one), and the plain all-reduce the trainer runs, timed as it runs
 * (its algorithm, chunking, waits and emulated link) at four sizes; each fitted to latency plus
 * bytes over bandwidth by ax_linear_fit (the codec profile's fit). */
#include <math.h>
#include <stdlib.h>

#include "casync_cost.h"
#include "mpi/coll/collectives.h"
#include "mpi/mpi_util.h"
#include "src/backend/peak.h"
#include "src/core/timer.h"

enum { PROBE_REPS = 5, PROBE_TAG = 31 };

/* Median one-way seconds of a message of `bytes` between ranks 0 and 1 (rank 0's figure). */
static int ping_pong(MPI_Comm comm, int rank, char *buf, int bytes, double *one_way) {
  double t[PROBE_REPS];
  int peer = 1 - rank;
  for (int i = 0; i < PROBE_REPS; i++) {
    double t0 = ax_now();
    if (rank == 0) {
      AX_MPI(MPI_Send(buf, bytes, MPI_BYTE, peer, PROBE_TAG, comm));
      AX_MPI(MPI_Recv(buf, bytes, MPI_BYTE, peer, PROBE_TAG, comm, MPI_STATUS_IGNORE));
    } else {
      AX_MPI(MPI_Recv(buf, bytes, MPI_BYTE, peer, PROBE_TAG, comm, MPI_STATUS_IGNORE));
      AX_MPI(MPI_Send(buf, bytes, MPI_BYTE, peer, PROBE_TAG, comm));
    }
    t[i] = (ax_now() - t0) / 2;
  }
  double m = ax_median(t, PROBE_REPS);
  *one_way = m > 1e-9 ? m : 1e-9;
  return AX_OK;
}

int ax_casync_measure_send(MPI_Comm comm, AxLinearCost *out) {
  int rank = 0, size = 1;
  *out = (AxLinearCost){0, INFINITY};
  if (comm == MPI_COMM_NULL) return AX_OK;
  AX_MPI(MPI_Comm_rank(comm, &rank));
  AX_MPI(MPI_Comm_size(comm, &size));
  if (size < 2) return AX_OK;
  static const int SIZES[] = {8, 4096, 4 << 20};
  enum { N_SIZES = sizeof SIZES / sizeof SIZES[0], LARGE = 4 << 20 };
  double fit[2] = {0, 0};
  char *buf = rank < 2 ? ax_calloc(LARGE, 1) : NULL;
  int ok = rank >= 2 || buf != NULL;
  if (ok && rank < 2) {
    double bytes[N_SIZES], seconds[N_SIZES];
    for (int i = 0; i < N_SIZES && ok; i++) {
      bytes[i] = SIZES[i];
      ok = ping_pong(comm, rank, buf, SIZES[i], &seconds[i]) == AX_OK;
    }
    AxLinearCost c = ok ? ax_linear_fit(bytes, seconds, N_SIZES) : (AxLinearCost){0, 1};
    fit[0] = c.latency_s;
    fit[1] = 1.0 / c.bytes_per_s;
  }
  free(buf);
  AX_TRY(ax_mpi_agree(comm, ok ? AX_OK : AX_ERR));
  AX_MPI(MPI_Bcast(fit, 2, MPI_DOUBLE, 0, comm));
  *out = (AxLinearCost){fit[0], 1.0 / fit[1]};
  return AX_OK;
}

/* ------------------------------------------------------------------ the plain all-reduce */

/* Median over `reps` of the slowest rank's seconds for one plain all-reduce of `count` floats
 * (after one untimed run). */
static int time_plain(MPI_Comm comm, const AxCommConfig *cc, AxAllreduceAlgo algo, float *buf,
                      size_t count, int reps, double *median) {
  double t[16];
  if (reps > 16) reps = 16;
  if (reps < 1) reps = 1;
  AX_TRY(ax_allreduce(comm, cc, buf, count, AX_COMM_F32, algo, NULL));
  for (int i = 0; i < reps; i++) {
    AX_MPI(MPI_Barrier(comm));
    double t0 = ax_now();
    AX_TRY(ax_allreduce(comm, cc, buf, count, AX_COMM_F32, algo, NULL));
    double mine = ax_now() - t0;
    AX_MPI(MPI_Allreduce(&mine, &t[i], 1, MPI_DOUBLE, MPI_MAX, comm));
  }
  double m = ax_median(t, reps);
  *median = m > 1e-9 ? m : 1e-9;
  return AX_OK;
}

int ax_casync_measure_plain(MPI_Comm comm, const AxCommConfig *cc, AxAllreduceAlgo algo,
                            int reps, AxLinearCost *out) {
  int size = 1;
  *out = (AxLinearCost){0, INFINITY};
  if (comm == MPI_COMM_NULL) return AX_OK;
  AX_MPI(MPI_Comm_size(comm, &size));
  if (size < 2) return AX_OK;
  enum { N_SIZES = 4, SMALLEST = 1024, STEP = 16 };
  AxCommConfig quiet = ax_comm_config_resolve(cc);
  quiet.traffic = NULL; /* a probe, not the run's traffic */
  size_t largest = (size_t)SMALLEST * STEP * STEP * STEP;
  float *buf = ax_calloc(largest / sizeof(float), sizeof(float));
  AX_TRY(ax_mpi_agree(comm, buf ? AX_OK : AX_ERR));
  double bytes[N_SIZES], seconds[N_SIZES];
  int rc = AX_OK;
  size_t b = SMALLEST;
  for (int i = 0; i < N_SIZES && rc == AX_OK; i++, b *= STEP) {
    bytes[i] = (double)b;
    rc = time_plain(comm, &quiet, algo, buf, b / sizeof(float), reps, &seconds[i]);
  }
  free(buf);
  AX_TRY(rc);
  *out = ax_linear_fit(bytes, seconds, N_SIZES); /* the same figures on every rank */
  return AX_OK;
}

AxLinearCost ax_casync_send_from_plain(const AxLinearCost *plain, int ranks) {
  if (ranks < 2) return *plain;
  double steps = 2.0 * (ranks - 1);
  return (AxLinearCost){plain->latency_s / steps, plain->bytes_per_s * steps / ranks};
}

/* ------------------------------------------------------------------ CaSync's engine */

/* Median over `reps` of the slowest rank's seconds for one compressed all-reduce of `count`
 * floats in K = N partitions (after one untimed run), on fresh values each time. */
static int time_casync(MPI_Comm comm, const AxCommConfig *cc, const AxCodec *c,
                       AxCasyncAlgo algo, float *buf, size_t count, int reps, double *median) {
  int rank, size;
  AX_MPI(MPI_Comm_rank(comm, &rank));
  AX_MPI(MPI_Comm_size(comm, &size));
  AxCasyncState *st;
  AX_TRY(ax_casync_state_new_parts(c, count, size, size, &st));
  /* a step past any sparsity warm-up (dgc:ramp), so the codec's own ratio runs */
  AxCodecCtx ctx = {.seed = 1, .step = 1u << 30};
  double t[16];
  if (reps > 16) reps = 16;
  if (reps < 1) reps = 1;
  int rc = AX_OK;
  for (int i = -1; i < reps && rc == AX_OK; i++) {
    for (size_t j = 0; j < count; j++) buf[j] = (float)((j * 2654435761u + (size_t)rank) % 997) * 1e-6f - 5e-4f;
    if (MPI_Barrier(comm) != MPI_SUCCESS) rc = AX_FAIL("MPI_Barrier failed in the CaSync probe");
    double t0 = ax_now();
    if (rc == AX_OK) rc = ax_casync_allreduce(comm, cc, c, algo, st, &ctx, buf, count, NULL);
    double mine = ax_now() - t0;
    if (rc == AX_OK && i >= 0 &&
        MPI_Allreduce(&mine, &t[i], 1, MPI_DOUBLE, MPI_MAX, comm) != MPI_SUCCESS)
      rc = AX_FAIL("MPI_Allreduce failed in the CaSync probe");
  }
  ax_casync_state_free(st);
  AX_TRY(rc);
  double m = ax_median(t, reps);
  *median = m > 1e-9 ? m : 1e-9;
  return AX_OK;
}

int ax_casync_measure_engine(MPI_Comm comm, const AxCommConfig *cc, const AxCodec *c,
                             AxCasyncAlgo algo, const AxCasyncCosts *model, int reps,
                             AxLinearCost *engine, AxLinearCost *measured) {
  int size = 1;
  *engine = (AxLinearCost){0, 0};
  if (measured) *measured = (AxLinearCost){0, INFINITY};
  if (comm == MPI_COMM_NULL) return AX_OK;
  AX_MPI(MPI_Comm_size(comm, &size));
  if (size < 2) return AX_OK;
  enum { N_SIZES = 4, SMALLEST = 1024, STEP = 16, PROFILE_RANK = 128 };
  AxCodec *probe;
  int rank;
  AX_TRY(ax_codec_cap_rank(c, PROFILE_RANK, &probe, &rank));
  AxCommConfig quiet = ax_comm_config_resolve(cc);
  quiet.traffic = NULL; /* a probe, not the run's traffic */
  size_t largest = (size_t)SMALLEST * STEP * STEP * STEP;
  float *buf = ax_calloc(largest / sizeof(float), sizeof(float));
  int rc = ax_mpi_agree(comm, buf ? AX_OK : AX_ERR);
  double bytes[N_SIZES], seconds[N_SIZES];
  size_t b = SMALLEST;
  for (int i = 0; i < N_SIZES && rc == AX_OK; i++, b *= STEP) {
    bytes[i] = (double)b;
    rc = ax_mpi_agree(comm, time_casync(comm, &quiet, probe, algo, buf, b / sizeof(float), reps,
                                        &seconds[i]));
  }
  free(buf);
  AxCasyncCosts m = *model;
  m.ratio = ax_codec_ratio(probe, m.linear ? largest / sizeof(float)
                                           : largest / sizeof(float) / (size_t)size + 1);
  ax_codec_free(probe);
  AX_TRY(rc);
  AxLinearCost fit = ax_linear_fit(bytes, seconds, N_SIZES); /* the same on every rank */
  m.engine = (AxLinearCost){0, 0};
  *engine = ax_casync_engine_from(&m, algo, size, &fit);
  if (measured) *measured = fit;
  return AX_OK;
}
