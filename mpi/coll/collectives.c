/* collectives.c — the public entry points of collectives.h: argument checks, algorithm names
 * and the automatic choice, then the schedule (ring.c, rhd.c) or MPI_Iallreduce (coll_mpi.c),
 * run by the engine (coll_progress.c); also the internal starters on a tag taken earlier
 * (coll_internal.h). */
#include <string.h>

#include "coll_internal.h"
#include "mpi/mpi_util.h"

static const char *const ALGO_NAMES[] = {"auto", "mpi", "ring", "rhd"};

const char *ax_allreduce_algo_name(AxAllreduceAlgo a) {
  return a >= AX_ALLREDUCE_AUTO && a <= AX_ALLREDUCE_RHD ? ALGO_NAMES[a] : "?";
}

int ax_allreduce_algo_parse(const char *name, AxAllreduceAlgo *out) {
  for (int a = AX_ALLREDUCE_AUTO; name && a <= AX_ALLREDUCE_RHD; a++)
    if (!strcmp(name, ALGO_NAMES[a])) {
      *out = (AxAllreduceAlgo)a;
      return AX_OK;
    }
  return AX_FAIL("unknown all-reduce algorithm '%s' (auto, mpi, ring, rhd)", name ? name : "");
}

/* What auto runs, from `axonn bench allreduce` on 2, 3 and 4 ranks of the 2-core dev machine
 * (docs/benchmarks.md, "All-reduce (issue 4)", 2026-11-22):
 *  - MPI_Iallreduce never won a size: on 2 ranks it trails the better of ring/rhd everywhere
 *    (1.15-1.4x from 32 KB to 16 MB, 2.2-2.3x from 32 MB up), on 3 and 4 ranks it ties at
 *    best. So auto never picks it.
 *  - 2 ranks: ring and rhd are the same two exchanges; they measure within noise of each other.
 *  - 4 ranks (a power of two): rhd's 2·log2(p) steps beat or tie the ring's 2(p-1) up to
 *    512 KB (1.0-3.8x); from 1 MB on they are within noise, and the ring is the one whose
 *    steps overlap (chained), so it should pull ahead on larger groups. Threshold: rhd up to
 *    1 MiB.
 *  - 3 ranks (not a power of two): rhd pays two extra full-buffer transfers to fold the odd
 *    rank in and loses to the ring by 1.2-1.5x from 8 MB on; below that both sit at the
 *    scheduler's granularity (3 ranks on 2 cores). So non-powers of two use the ring.
 * Groups of 5 or more ranks could not be measured here (2 cores); revisit on a cluster. */
enum { RHD_MAX_BYTES = 1024 * 1024 };

static int is_power_of_two(int p) { return p > 0 && (p & (p - 1)) == 0; }

AxAllreduceAlgo ax_allreduce_choose(size_t bytes, int group_size) {
  if (bytes <= RHD_MAX_BYTES && is_power_of_two(group_size)) return AX_ALLREDUCE_RHD;
  return AX_ALLREDUCE_RING;
}

/* Finishes a start: launch the schedule, or on failure free what was built. */
static int launch_or_free(AxColl **op, int rc) {
  if (rc == AX_OK && !(*op)->uses_mpi) rc = ax_coll_launch(*op);
  if (rc != AX_OK) {
    ax_coll_free(*op);
    *op = NULL;
  }
  return rc;
}

/* Checked before the operation takes its tag. */
static int check_allreduce(const void *buf, size_t count, AxAllreduceAlgo algo) {
  if (algo < AX_ALLREDUCE_AUTO || algo > AX_ALLREDUCE_RHD)
    return AX_FAIL("all-reduce: unknown algorithm %d", (int)algo);
  if (count && !buf) return AX_FAIL("all-reduce: no buffer for %zu elements", count);
  return AX_OK;
}

/* The all-reduce's schedule (or MPI_Iallreduce) on a created operation, launched. */
static int allreduce_on(AxColl **op, void *buf, size_t count, AxAllreduceAlgo algo) {
  if (algo == AX_ALLREDUCE_AUTO) algo = ax_allreduce_choose(count * (*op)->esz, (*op)->size);
  int rc = AX_OK;
  if (algo == AX_ALLREDUCE_MPI)
    rc = ax_mpi_allreduce_start(*op, buf, count);
  else if (algo == AX_ALLREDUCE_RING)
    rc = ax_ring_allreduce(*op, buf, count);
  else
    rc = ax_rhd_allreduce(*op, buf, count);
  return launch_or_free(op, rc);
}

int ax_allreduce_start(AxColl **op, MPI_Comm comm, const AxCommConfig *cc, void *buf,
                       size_t count, AxCommType type, AxAllreduceAlgo algo, AxCommBytes *bytes) {
  *op = NULL;
  AX_TRY(check_allreduce(buf, count, algo));
  AX_TRY(ax_coll_create(op, comm, cc, type, bytes));
  return allreduce_on(op, buf, count, algo);
}

int ax_allreduce_start_on_tag(AxColl **op, MPI_Comm comm, int tag, const AxCommConfig *cc,
                              void *buf, size_t count, AxCommType type, AxAllreduceAlgo algo,
                              AxCommBytes *bytes) {
  *op = NULL;
  AX_TRY(check_allreduce(buf, count, algo));
  AX_TRY(ax_coll_create_on_tag(op, comm, cc, type, bytes, tag));
  return allreduce_on(op, buf, count, algo);
}

static int check_blocks(const char *what, const void *send, const void *recv, size_t count) {
  if (count && (!send || !recv)) return AX_FAIL("%s: missing buffer for %zu elements", what, count);
  return AX_OK;
}

/* An in-place ring schedule over buf's own segments (ring.c's `build`) on a reserved tag. */
static int segments_start_on_tag(AxColl **op, MPI_Comm comm, int tag, const AxCommConfig *cc,
                                 void *buf, size_t count, AxCommType type, AxCommBytes *bytes,
                                 const char *what, int (*build)(AxColl *, void *, size_t)) {
  *op = NULL;
  AX_TRY(check_blocks(what, buf, buf, count));
  AX_TRY(ax_coll_create_on_tag(op, comm, cc, type, bytes, tag));
  return launch_or_free(op, build(*op, buf, count));
}

int ax_reduce_scatter_segments_start_on_tag(AxColl **op, MPI_Comm comm, int tag,
                                            const AxCommConfig *cc, void *buf, size_t count,
                                            AxCommType type, AxCommBytes *bytes) {
  return segments_start_on_tag(op, comm, tag, cc, buf, count, type, bytes, "reduce-scatter",
                               ax_ring_reduce_scatter_segments);
}

int ax_allgather_segments_start_on_tag(AxColl **op, MPI_Comm comm, int tag,
                                       const AxCommConfig *cc, void *buf, size_t count,
                                       AxCommType type, AxCommBytes *bytes) {
  return segments_start_on_tag(op, comm, tag, cc, buf, count, type, bytes, "all-gather",
                               ax_ring_allgather_segments);
}

int ax_reduce_scatter_start(AxColl **op, MPI_Comm comm, const AxCommConfig *cc,
                            const void *send, void *recv, size_t recv_count, AxCommType type,
                            AxCommBytes *bytes) {
  *op = NULL;
  AX_TRY(check_blocks("reduce-scatter", send, recv, recv_count));
  AX_TRY(ax_coll_create(op, comm, cc, type, bytes));
  return launch_or_free(op, ax_ring_reduce_scatter(*op, send, recv, recv_count));
}

int ax_allgather_start(AxColl **op, MPI_Comm comm, const AxCommConfig *cc, const void *send,
                       void *recv, size_t send_count, AxCommType type, AxCommBytes *bytes) {
  *op = NULL;
  AX_TRY(check_blocks("all-gather", send, recv, send_count));
  AX_TRY(ax_coll_create(op, comm, cc, type, bytes));
  return launch_or_free(op, ax_ring_allgather(*op, send, recv, send_count));
}

int ax_allreduce(MPI_Comm comm, const AxCommConfig *cc, void *buf, size_t count, AxCommType type,
                 AxAllreduceAlgo algo, AxCommBytes *bytes) {
  AxColl *op = NULL;
  AX_TRY(ax_allreduce_start(&op, comm, cc, buf, count, type, algo, bytes));
  int rc = ax_coll_wait(op);
  ax_coll_free(op);
  return rc;
}
