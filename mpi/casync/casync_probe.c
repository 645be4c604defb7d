/* casync_probe.c — the link's costs for the cost model (casync_cost.h), measured: the send
 * cost by a ping-pong of three sizes between ranks 0 and 1 of a communicator (plain MPI: the
 * real path, not an emulated one), and the plain all-reduce the trainer runs, timed as it runs
 * (its algorithm, chunking, waits and emulated link; the ranks start together and report
 * their times without spinning, ax_link_barrier and ax_link_max) at seven sizes, alone or side
 * by side with CaSync and the run's codec (for CaSync's engine term); each kept as measured
 * and fitted to latency plus bytes over bandwidth by ax_linear_fit (the codec profile's fit). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "casync_cost.h"
#include "mpi/coll/collectives.h"
#include "mpi/link/link_emulator.h"
#include "mpi/mpi_util.h"
#include "src/backend/peak.h"
#include "src/core/rng.h"
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

int ax_casync_time_allreduce(MPI_Comm comm, const AxCommConfig *cc, AxAllreduceAlgo algo,
                             float *buf, size_t count, int reps, double *seconds) {
  AX_TRY(ax_allreduce(comm, cc, buf, count, AX_COMM_F32, algo, NULL));
  for (int i = 0; i < reps; i++) {
    AX_TRY(ax_link_barrier(cc, comm));
    double t0 = ax_now();
    AX_TRY(ax_allreduce(comm, cc, buf, count, AX_COMM_F32, algo, NULL));
    AX_TRY(ax_link_max(cc, comm, ax_now() - t0, &seconds[i]));
  }
  return AX_OK;
}

/* The least over `reps` runs of the slowest rank's seconds for one plain all-reduce of `count`
 * floats: other work on a shared machine only adds time. */
static int time_plain(MPI_Comm comm, const AxCommConfig *cc, AxAllreduceAlgo algo, float *buf,
                      size_t count, int reps, double *least) {
  double t[16];
  if (reps > 16) reps = 16;
  if (reps < 1) reps = 1;
  AX_TRY(ax_casync_time_allreduce(comm, cc, algo, buf, count, reps, t));
  double m = ax_least(t, reps);
  *least = m > 1e-9 ? m : 1e-9;
  return AX_OK;
}

/* The slowest rank's seconds for `ops` plain all-reduces of `count` floats each (in bufs,
 * one after another), started together and waited for in order, as the gradient sum runs a
 * chunk's operations (offload/interleave.c: start_group, wait_chunk). */
static int time_started_together(MPI_Comm comm, const AxCommConfig *cc, AxAllreduceAlgo algo,
                                 float *bufs, size_t count, int ops, double *seconds) {
  enum { MAX_OPS = 8 };
  AxColl *op[MAX_OPS] = {0};
  AX_TRY(ax_link_barrier(cc, comm));
  double t0 = ax_now();
  int rc = AX_OK;
  for (int k = 0; k < ops && rc == AX_OK; k++)
    rc = ax_allreduce_start(&op[k], comm, cc, bufs + (size_t)k * count, count, AX_COMM_F32,
                            algo, NULL);
  for (int k = 0; k < ops && rc == AX_OK; k++) rc = ax_coll_wait(op[k]);
  for (int k = 0; k < ops; k++) ax_coll_free(op[k]);
  AX_TRY(rc);
  return ax_link_max(cc, comm, ax_now() - t0, seconds);
}

int ax_casync_measure_overlap(MPI_Comm comm, const AxCommConfig *cc, AxAllreduceAlgo algo,
                              int reps, double *paid) {
  enum { OPS = 4, COUNT = 256, MAX_REPS = 32 };
  int size = 1;
  *paid = 0;
  if (comm == MPI_COMM_NULL) return AX_OK;
  AX_MPI(MPI_Comm_size(comm, &size));
  if (size < 2) return AX_OK;
  reps = reps > MAX_REPS ? MAX_REPS : reps < 1 ? 1 : reps;
  AxCommConfig quiet = ax_comm_config_resolve(cc);
  quiet.traffic = NULL; /* a probe, not the run's traffic */
  float *bufs = ax_calloc(OPS * COUNT, sizeof *bufs);
  AX_TRY(ax_mpi_agree(comm, bufs ? AX_OK : AX_ERR));
  double one, together, share[MAX_REPS];
  int rc = time_started_together(comm, &quiet, algo, bufs, COUNT, OPS, &together);
  for (int i = 0; i < reps && rc == AX_OK; i++) {
    rc = time_started_together(comm, &quiet, algo, bufs, COUNT, 1, &one);
    if (rc == AX_OK) rc = time_started_together(comm, &quiet, algo, bufs, COUNT, OPS, &together);
    share[i] = (together - one) / ((OPS - 1) * one);
  }
  free(bufs);
  AX_TRY(rc);
  /* each round's pair side by side, the median round: on ranks that share cores a round's
   * times swing several-fold, and a least of each (the other probes') pairs unlike rounds */
  double m = ax_median(share, reps);
  *paid = m < 0 ? 0 : m > 1 ? 1 : m;
  return AX_OK;
}

/* The probe's sizes: 1 KB x PROBE_STEP, AX_PROBE_SIZES of them (4 MB the largest). */
enum { PROBE_SMALLEST = 1024, PROBE_STEP = 4 };

static double probe_bytes(int i) {
  double b = PROBE_SMALLEST;
  while (i-- > 0) b *= PROBE_STEP;
  return b;
}

int ax_casync_measure_plain(MPI_Comm comm, const AxCommConfig *cc, AxAllreduceAlgo algo,
                            int reps, AxLinearCost *out, AxSizedTimes *at) {
  int size = 1;
  *out = (AxLinearCost){0, INFINITY};
  if (at) at->n = 0;
  if (comm == MPI_COMM_NULL) return AX_OK;
  AX_MPI(MPI_Comm_size(comm, &size));
  if (size < 2) return AX_OK;
  enum { N_SIZES = AX_PROBE_SIZES };
  AxCommConfig quiet = ax_comm_config_resolve(cc);
  quiet.traffic = NULL; /* a probe, not the run's traffic */
  float *buf = ax_calloc((size_t)probe_bytes(N_SIZES - 1) / sizeof(float), sizeof(float));
  AX_TRY(ax_mpi_agree(comm, buf ? AX_OK : AX_ERR));
  double bytes[N_SIZES], seconds[N_SIZES];
  int rc = AX_OK;
  for (int i = 0; i < N_SIZES && rc == AX_OK; i++) {
    bytes[i] = probe_bytes(i);
    rc = time_plain(comm, &quiet, algo, buf, (size_t)bytes[i] / sizeof(float), reps,
                    &seconds[i]);
  }
  free(buf);
  AX_TRY(rc);
  *out = ax_linear_fit(bytes, seconds, N_SIZES); /* the same figures on every rank */
  if (at) *at = ax_sized_times(bytes, seconds, N_SIZES);
  return AX_OK;
}

AxLinearCost ax_casync_send_from_plain(const AxLinearCost *plain, int ranks) {
  if (ranks < 2) return *plain;
  double steps = 2.0 * (ranks - 1);
  return (AxLinearCost){plain->latency_s / steps, plain->bytes_per_s * steps / ranks};
}

AxSizedTimes ax_casync_send_points(const AxSizedTimes *plain_at, int ranks) {
  AxSizedTimes send = *plain_at;
  double steps = ranks < 2 ? 1 : 2.0 * (ranks - 1), per = ranks < 2 ? 1 : ranks;
  for (int i = 0; i < send.n; i++) send.bytes[i] /= per, send.seconds[i] /= steps;
  return send;
}

/* ------------------------------------------------------------------ plain and CaSync, side by side */

/* Gradient-like values for the probe runs, different on every rank: normal, as the codec
 * profile's and `bench compress`'s. A pattern of 997 values that repeats (before 2026-11-30)
 * made the sparse codecs' selection several times cheaper than on gradients: topk's CaSync of
 * 64 KB over 10 Gb/s took 75-103 us on it and 336-382 us on normal values, as `bench
 * compress`'s rows take (docs/benchmarks.md, "The probe's values"). */
static void probe_values(float *values, size_t count, int rank) {
  AxRng rng;
  ax_rng_seed(&rng, 0x9e3779b9u + (uint64_t)rank);
  for (size_t j = 0; j < count; j++) values[j] = (float)(ax_rng_normal(&rng) * 1e-3);
}

/* One timed run, the slowest rank's seconds into *t (NULL: untimed): the plain all-reduce (st
 * NULL) or CaSync with codec c in st's partitions, on buf refilled from `values` (the same
 * values every run: what the last run summed in place is not what the next one sums). */
static int probe_run(MPI_Comm comm, const AxCommConfig *cc, AxAllreduceAlgo plain_algo,
                     const AxCodec *c, AxCasyncAlgo algo, AxCasyncState *st, float *buf,
                     const float *values, size_t count, double *t) {
  memcpy(buf, values, count * sizeof *buf);
  /* a step past any sparsity warm-up (dgc:ramp), so the codec's own ratio runs */
  AxCodecCtx ctx = {.seed = 1, .step = 1u << 30};
  AX_TRY(ax_link_barrier(cc, comm));
  double t0 = ax_now();
  AX_TRY(st ? ax_casync_allreduce(comm, cc, c, algo, st, &ctx, buf, count, NULL)
            : ax_allreduce(comm, cc, buf, count, AX_COMM_F32, plain_algo, NULL));
  double mine = ax_now() - t0, ignored;
  return ax_link_max(cc, comm, mine, t ? t : &ignored);
}

/* The least over `reps` rounds of the plain all-reduce's and CaSync's (in K = N partitions,
 * under each of algos[n_algos]) seconds for `count` floats, each round the plain run first,
 * then CaSync under each algorithm, after one untimed round: other work on a shared machine
 * only adds time, so the best round is the paths' own cost. casync_s[n_algos]. */
static int time_paths(MPI_Comm comm, const AxCommConfig *cc, AxAllreduceAlgo plain_algo,
                      const AxCodec *c, const AxCasyncAlgo *algos, int n_algos, float *buf,
                      size_t count, int reps, double *plain_s, double *casync_s) {
  enum { MAX_REPS = 16 };
  int size, rank;
  AX_MPI(MPI_Comm_size(comm, &size));
  AX_MPI(MPI_Comm_rank(comm, &rank));
  AxCasyncState *st;
  AX_TRY(ax_casync_state_new_parts(c, count, size, size, &st));
  double tp[MAX_REPS], tc[AX_PROBE_ALGOS][MAX_REPS];
  reps = reps > MAX_REPS ? MAX_REPS : reps < 1 ? 1 : reps;
  float *values = ax_malloc((count ? count : 1) * sizeof *values);
  int rc = ax_mpi_agree(comm, values ? AX_OK : AX_ERR);
  if (rc == AX_OK) probe_values(values, count, rank);
  for (int i = -1; i < reps && rc == AX_OK; i++) {
    rc = probe_run(comm, cc, plain_algo, c, algos[0], NULL, buf, values, count,
                   i < 0 ? NULL : &tp[i]);
    for (int a = 0; a < n_algos && rc == AX_OK; a++)
      rc = probe_run(comm, cc, plain_algo, c, algos[a], st, buf, values, count,
                     i < 0 ? NULL : &tc[a][i]);
  }
  free(values);
  ax_casync_state_free(st);
  AX_TRY(rc);
  double p = ax_least(tp, reps);
  *plain_s = p > 1e-9 ? p : 1e-9;
  for (int a = 0; a < n_algos; a++) {
    double q = ax_least(tc[a], reps);
    casync_s[a] = q > 1e-9 ? q : 1e-9;
  }
  return AX_OK;
}

int ax_casync_measure_paths(MPI_Comm comm, const AxCommConfig *cc, AxAllreduceAlgo plain_algo,
                            const AxCodec *c, const AxCasyncAlgo *algos, int n_algos, int reps,
                            AxLinearCost *plain, AxSizedTimes *plain_at, AxSizedTimes *casync) {
  int size = 1;
  *plain = (AxLinearCost){0, INFINITY};
  if (n_algos < 1 || n_algos > AX_PROBE_ALGOS)
    return AX_FAIL("CaSync probe: %d algorithms, expected 1 to %d", n_algos, AX_PROBE_ALGOS);
  for (int a = 0; a < n_algos; a++) casync[a].n = 0;
  if (plain_at) plain_at->n = 0;
  if (comm == MPI_COMM_NULL) return AX_OK;
  AX_MPI(MPI_Comm_size(comm, &size));
  if (size < 2) return AX_OK;
  enum { N_SIZES = AX_PROBE_SIZES, PROFILE_RANK = 128 };
  AxCodec *probe;
  int rank;
  AX_TRY(ax_codec_cap_rank(c, PROFILE_RANK, &probe, &rank));
  AxCommConfig quiet = ax_comm_config_resolve(cc);
  quiet.traffic = NULL; /* a probe, not the run's traffic */
  float *buf = ax_calloc((size_t)probe_bytes(N_SIZES - 1) / sizeof(float), sizeof(float));
  int rc = ax_mpi_agree(comm, buf ? AX_OK : AX_ERR);
  double bytes[N_SIZES], tp[N_SIZES], tc[AX_PROBE_ALGOS];
  for (int i = 0; i < N_SIZES && rc == AX_OK; i++) {
    bytes[i] = probe_bytes(i);
    rc = ax_mpi_agree(comm, time_paths(comm, &quiet, plain_algo, probe, algos, n_algos, buf,
                                       (size_t)bytes[i] / sizeof(float), reps, &tp[i], tc));
    for (int a = 0; a < n_algos; a++)
      casync[a].bytes[i] = bytes[i], casync[a].seconds[i] = tc[a];
  }
  free(buf);
  ax_codec_free(probe);
  AX_TRY(rc);
  *plain = ax_linear_fit(bytes, tp, N_SIZES); /* the same figures on every rank */
  if (plain_at) *plain_at = ax_sized_times(bytes, tp, N_SIZES);
  for (int a = 0; a < n_algos; a++) casync[a].n = N_SIZES;
  return AX_OK;
}
