/* casync_probe.c — the link's send cost for the cost model (casync_cost.h): a ping-pong of
 * three sizes between ranks 0 and 1 of a communicator, fitted to latency plus bytes over
 * bandwidth by ax_linear_fit (the codec profile's fit). Plain MPI: it measures the real path,
 * not an emulated one (an emulated link's figures are known without measuring). */
#include <math.h>
#include <stdlib.h>

#include "casync_cost.h"
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
