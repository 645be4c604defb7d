/* sparse_sync.h — the sum of row-sparse gradients (the input embedding's wte gradient, whose
 * rows are the tokens a step saw) over a communicator, into every rank's dense table: Zen's
 * balanced parallelism (Wang's thesis, ch. 3: §3.3, Algorithms 3.2 and 3.3) and the naive
 * all-gather of everyone's rows, beside the dense all-reduce (collectives.h) they replace.
 * This module owns the wire protocol and the summation; which rows a rank owns and the hash
 * bitmap are mpi/compress/zen_hash.h.
 *
 * Input, on each rank: its touched rows, ascending and unique, each < rows, with their values
 * either given (n x cols) or read from the dense table itself (values NULL). Output: the whole
 * dense table, rows x cols, overwritten on every rank with the sum over the ranks of their
 * rows (a row no rank touched is 0). Rows a rank did not list count as zero wherever they are:
 * the result equals a dense all-reduce when untouched rows are zero, as a lookup's gradient is.
 *
 * Zen, on N ranks (rank r):
 *   1. counts: r cuts its rows by owner with Algorithm 3.2 (owner = h_0(row)) and sends each
 *      other rank j the count c_rj of its rows that j owns (uint32, 4 bytes).
 *   2. push: to each owner j with c_rj > 0, one message of c_rj uint32 row indices, ascending,
 *      then c_rj x cols floats (the rows in that order): c_rj (4 + 4 cols) bytes (COO: the
 *      thesis keeps COO for the push).
 *   3. the owner sums, for each row of U_r (the union of the rows pushed to r, its own
 *      included), the contributions of the ranks that hold it in ascending rank order 0..N-1
 *      starting from +0: ((0 + g_a) + g_b) + ... with a < b < ... . The rows of a rank that does
 *      not hold the row are zeros, so this is exactly the dense left-to-right sum
 *      (g_0 + g_1) + g_2 + ... of every element (adding +0 is exact; only a sum that is -0
 *      comes out +0, which compares equal). It is therefore bit-identical to every two-rank
 *      all-reduce and to a rank-ordered reduction; the ring, rhd and MPI all-reduces on 3 or
 *      more ranks add in other orders (ring: segment s starts at rank s), so against them it
 *      agrees to fp32 rounding: each sum is within (N-1) 2^-24 sum|g| of the exact one, the
 *      two within twice that (tests/mpitest_sparse_sync.c measures up to 2.1e-7 on 4 ranks).
 *   4. pull: to every other rank, the hash bitmap of U_r over r's owner set (Algorithm 3.3,
 *      ceil(|II_r| / 8) bytes, always sent when II_r is not empty), then |U_r| x cols floats,
 *      the rows in ascending order (sent when U_r is not empty). A receiver decodes the bitmap,
 *      which gives the count and the rows, and receives the values straight into its table.
 *   Bytes this rank sends (st->count_bytes, push_bytes, pull_bytes; C = cols):
 *      count = 4 (N - 1)
 *      push  = sum over j != r of c_rj (4 + 4 C)
 *      pull  = (N - 1) (ceil(|II_r| / 8) + 4 C |U_r|)
 *   and every rank receives sum over owners j != r of ceil(|II_j| / 8), about rows / 8 bytes of
 *   bitmaps (Theorem 3.3). Balance: the push loads c_rj and the pull loads |U_j| follow h_0
 *   (Theorem 3.2; st->push_max and st->owned measure them).
 *
 * Balanced owners (ax_sparse_sync_set_owners, AX_ZEN_OWNERS_BALANCED; not the thesis's): h_0
 * leaves the push imbalance at 1 + Θ(sqrt(N log N / n)) (Theorem 3.2), 1.16-1.21 on 8 and 16
 * ranks for 3.4K rows a rank, so instead step 1 sends every other rank this rank's rows as a
 * bitmap of ceil(rows / 8) bytes (the counts' place), and every rank computes the same owners
 * from all of them (mpi/compress/zen_balance.h; a row nobody holds keeps h_0's); the counts
 * are read from the bitmaps, Algorithm 3.2 is not run (the rows are cut by owner directly:
 * st->serial = 0), and steps 2-4 are as above over this step's owner sets. Bytes: count =
 * (N - 1) ceil(rows / 8); push and pull as above with this step's |II_r| and U_r. The sums
 * are the same, bit for bit (each row from +0 in rank order, whoever owns it). At most 255
 * ranks (AX_ERR beyond).
 *
 * All-gather (the naive baseline): every rank sends its count (4 bytes) and then all its rows
 * (n uint32 indices, then n x cols floats) to every other rank; each sums all of them in rank
 * order, the same order as Zen, so the two agree bit for bit. Bytes this rank sends:
 *      count = 4 (N - 1),  push = (N - 1) n (4 + 4 C),  pull = 0.
 * Dense: ax_allreduce of the whole table (collectives.h).
 *
 * Messages go through the link layer (link_emulator.h: ax_link_isend, waits through
 * ax_link_waitany) with the caller's AxCommConfig, so the emulated link carries them and
 * cc->traffic counts them as cc->traffic_class (the trainer passes embedding_sync). Each call
 * takes tags from the collectives' per-communicator sequence (collectives.h), so it may share
 * their communicator; every rank must make the same calls in the same order. Blocking; drive
 * it from one thread at a time. Every function returns AX_OK or AX_ERR with the error recorded
 * (src/core/error.h); a failure on one rank may leave the others waiting, as with any
 * collective. */
#ifndef AX_SPARSE_SYNC_H
#define AX_SPARSE_SYNC_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "mpi/coll/collectives.h"
#include "mpi/comm_config.h"
#include "mpi/compress/zen_hash.h"

typedef enum {
  AX_SPARSE_SYNC_ZEN = 0,
  AX_SPARSE_SYNC_ALLGATHER,
  AX_SPARSE_SYNC_DENSE
} AxSparseSyncAlgo;

typedef enum {
  AX_ZEN_OWNERS_HASH = 0, /* h_0, the thesis's (a new AxSparseSync's) */
  AX_ZEN_OWNERS_BALANCED  /* per step from every rank's rows (above; train's and bench's default) */
} AxZenOwners;

typedef struct {
  const uint32_t *idx;  /* this rank's touched rows: ascending, unique, each < rows */
  size_t n;
  const float *values;  /* n x cols, row j holding row idx[j]; NULL: read from the table */
} AxSparseRows;

typedef struct {
  unsigned long long count_bytes, push_bytes, pull_bytes; /* sent by this rank, by message */
  unsigned long long sent, received;                      /* payload bytes, all messages */
  size_t push_max;  /* Zen: most of this rank's rows going to one owner (itself included) */
  size_t owned;     /* Zen: |U_r|, the rows this rank summed as owner (its pull load) */
  size_t serial;    /* Zen: of this rank's rows, those Algorithm 3.2 wrote serially */
  int rehashed;     /* Zen: Algorithm 3.2 hashed again with a larger serial area */
} AxSparseSyncStats;

typedef struct AxSparseSync AxSparseSync;

/* Collective over comm: a table of rows x cols on every rank (the same shape everywhere, else
 * AX_ERR on every rank), the hash functions of rank 0's seed (broadcast, as Zen does) and the
 * owner sets (O(rows) memory). comm must outlive it. */
int ax_sparse_sync_create(AxSparseSync **out, MPI_Comm comm, uint32_t rows, size_t cols,
                          uint64_t seed);
void ax_sparse_sync_free(AxSparseSync *s); /* NULL is a no-op */
/* How Zen picks the owners from the next call on; every rank must set the same. */
void ax_sparse_sync_set_owners(AxSparseSync *s, AxZenOwners owners);
const char *ax_zen_owners_name(AxZenOwners o); /* "hash", "balanced" */
const AxZenHash *ax_sparse_sync_hash(const AxSparseSync *s);
const AxZenLayout *ax_sparse_sync_layout(const AxSparseSync *s);

/* The collectives above (st may be NULL; it is overwritten, not added to). */
int ax_sparse_sync_zen(AxSparseSync *s, const AxCommConfig *cc, const AxSparseRows *in,
                       float *table, AxSparseSyncStats *st);
int ax_sparse_sync_allgather(AxSparseSync *s, const AxCommConfig *cc, const AxSparseRows *in,
                             float *table, AxSparseSyncStats *st);
/* Zen with two additions, for the hierarchical step (sparse_hier.h). between (NULL: none) runs on
 * every rank after its owner's sums and before the pull: it gets the rows this rank summed
 * (ascending, its own) and their sums, and may replace them with any ascending rows of its
 * owner set and their values (o->rows and o->sums have room for all of them), which the pull
 * then sends to every other rank and writes into the table in their place. written (NULL:
 * not wanted; else room for rows) gets every row the call wrote into the table, ascending,
 * and *n_written their number: the rows of all owners' pulls, this rank's included. */
typedef struct {
  uint32_t *rows;   /* ascending, in this rank's owner set */
  size_t n;
  float *sums;      /* n x cols */
  const AxZenLayout *layout; /* this call's owners */
  int rank;
} AxZenOwnedRows;
typedef struct {
  int (*run)(void *ctx, AxZenOwnedRows *o);
  void *ctx;
} AxZenBetween;
int ax_sparse_zen_run(AxSparseSync *s, const AxCommConfig *cc, const AxSparseRows *in,
                      float *table, AxSparseSyncStats *st, const AxZenBetween *between,
                      uint32_t *written, size_t *n_written);
/* One of the three; dense: ax_allreduce of the table with dense_algo (in->values must be NULL:
 * the table is the input). */
int ax_sparse_sync(AxSparseSync *s, AxSparseSyncAlgo algo, AxAllreduceAlgo dense_algo,
                   const AxCommConfig *cc, const AxSparseRows *in, float *table,
                   AxSparseSyncStats *st);

/* Definition 3.6's imbalance ratios of one Zen call, from every rank's stats of it (collective
 * over comm, the same on every rank): push = max over ranks r and owners j of N c_rj / n_r
 * (n: this rank's rows, in->n; st->push_max is its max_j c_rj), pull = max over owners of
 * N |U_j| / |U| (|U| = sum of st->owned, the union). A ratio whose denominator is 0 is 1. */
int ax_sparse_sync_imbalance(MPI_Comm comm, const AxSparseSyncStats *st, size_t n, double *push,
                             double *pull);

const char *ax_sparse_sync_algo_name(AxSparseSyncAlgo a); /* "zen", "allgather", "dense" */
/* "zen|allgather|dense"; AX_ERR with a message otherwise. */
int ax_sparse_sync_algo_parse(const char *name, AxSparseSyncAlgo *out);

#endif
