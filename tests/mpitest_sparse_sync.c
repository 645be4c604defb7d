/* mpitest_sparse_sync.c — Zen's sparse synchronization and the all-gather baseline
 * (mpi/sparse/sparse_sync.h) on whatever number of ranks it runs on, for random row sets, heavily
 * overlapping ones, empty ones on some or all ranks, every row on every rank, and real-batch
 * ones: the bytes of data/tinyshakespeare.txt as row indices (vocabulary 256) and Zipf(1)
 * token batches over GPT-2's 50257 rows.
 *
 * Every rank builds every rank's rows and values (seeded), so it knows the exact answer: the
 * rank-ordered sum ((0 + g_0) + g_1) + ... that sparse_sync.h documents. Zen and all-gather
 * must equal it bit for bit, from given values and from the table; MPI_Allreduce and the ring
 * all-reduce of the dense tables must agree with it exactly on 1 and 2 ranks and within
 * 1e-6 sum|g| on more (they add in other orders). The bytes sent equal sparse_sync.h's
 * formulas, computed here from the sets, and the traffic counters saw them as embedding_sync;
 * the owners' loads (|U_r|) add up to the union (no row lost or summed twice) and their
 * imbalance (largest / mean) is below 1.1 on the Zipf batches (printed, not asserted, for the
 * 256-row text: a few dozen distinct bytes cannot balance). Then the same over an emulated
 * link, and inputs refused. */
#include <check.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/link/link_emulator.h"
#include "mpi/mpi_util.h"
#include "mpi/sparse/sparse_sync.h"
#include "mpi/traffic.h"
#include "src/core/crng.h"
#include "src/core/error.h"
#include "mpitestutil.h"
#include "testutil.h"
#include "zipf_rows.h"

enum { RUN_TIMEOUT_S = 120, TEXT_BATCH = 4096, ZIPF_BATCH = 8192 };
#define SHAKESPEARE "data/tinyshakespeare.txt" /* ships with the repository */

static MPI_Comm g_comm;
static AxCommConfig g_cc;
static unsigned char *g_text; /* the play's bytes */
static size_t g_text_n;
static AxZipf g_zipf;

typedef enum { RANDOM, OVERLAP, SOME_EMPTY, ALL_EMPTY, ALL_ROWS, TEXT, ZIPF } SetKind;

typedef struct {
  SetKind kind;
  const char *name;
  uint32_t rows;
  size_t cols;
  int salt; /* another batch of the same kind */
} Case;

/* ------------------------------------------------------------------ the ranks' rows */

static uint32_t *random_rows(uint32_t rows, size_t m, uint64_t seed, size_t *n) {
  uint32_t *x = mt_xmalloc(m * sizeof *x);
  AxRng r;
  ax_rng_seed(&r, seed);
  for (size_t i = 0; i < m; i++) x[i] = (uint32_t)ax_rng_below(&r, rows);
  *n = ax_zen_sort_unique(x, m);
  return x;
}

/* Rank r's rows, ascending and unique (malloc'd); *n their number. */
static uint32_t *rows_of(const Case *c, int r, size_t *n) {
  uint64_t seed = (uint64_t)c->salt * 1000 + (uint64_t)r;
  size_t cap = c->rows + (size_t)TEXT_BATCH + ZIPF_BATCH;
  uint32_t *x;
  switch (c->kind) {
  case RANDOM: return random_rows(c->rows, 200 + 97 * (size_t)r, seed, n);
  case OVERLAP: /* a shared 90% core and a few of its own */
    x = mt_xmalloc(cap * sizeof *x);
    for (size_t i = 0; i < 900; i++) x[i] = (uint32_t)((i * 7) % c->rows);
    for (size_t i = 900; i < 1000; i++) x[i] = (uint32_t)((i * 131 + (size_t)r * 17) % c->rows);
    *n = ax_zen_sort_unique(x, 1000);
    return x;
  case SOME_EMPTY:
    if (r % 2 == 0) return *n = 0, mt_xmalloc(4);
    return random_rows(c->rows, 500, seed, n);
  case ALL_EMPTY: return *n = 0, mt_xmalloc(4);
  case ALL_ROWS:
    x = mt_xmalloc(c->rows * sizeof *x);
    for (uint32_t i = 0; i < c->rows; i++) x[i] = i;
    return *n = c->rows, x;
  case TEXT: { /* the batch of rank r at this step: TEXT_BATCH consecutive bytes */
    x = mt_xmalloc(TEXT_BATCH * sizeof *x);
    size_t step = (size_t)c->salt * (size_t)mt_size + (size_t)r;
    size_t at = step * TEXT_BATCH % (g_text_n - TEXT_BATCH);
    for (size_t i = 0; i < TEXT_BATCH; i++) x[i] = g_text[at + i];
    *n = ax_zen_sort_unique(x, TEXT_BATCH);
    return x;
  }
  case ZIPF: {
    x = mt_xmalloc(ZIPF_BATCH * sizeof *x);
    AxRng rng;
    ax_rng_seed(&rng, seed * 7919 + 1);
    *n = tz_zipf_batch(&g_zipf, &rng, ZIPF_BATCH, x);
    return x;
  }
  }
  return *n = 0, mt_xmalloc(4);
}

/* Rank r's gradient at (row, col): 24 random bits in [-1, 1) times 2^e, e in [-6, 6], so that
 * sums in different orders round differently (on one grid they would mostly be exact). */
static float value(int salt, int r, uint32_t row, size_t col) {
  uint64_t h = ax_crng_mix64(((uint64_t)(unsigned)salt << 48) ^ ((uint64_t)(unsigned)r << 40) ^
                             ((uint64_t)row << 12) ^ col);
  return ldexpf((float)((double)(h >> 40) / 8388608.0 - 1.0), (int)(h % 13) - 6);
}

/* ------------------------------------------------------------------ one case */

typedef struct {
  int n;
  uint32_t **rows; /* [n]: each rank's rows */
  size_t *m;       /* [n] */
  float *vals;     /* this rank's, m[me] x cols */
  float *dense;    /* this rank's dense table: its rows, zeros elsewhere */
  float *ref;      /* the rank-ordered sum */
  float *mag;      /* sum over ranks of |g| */
  size_t cells;
} Truth;

static void truth_build(const Case *c, Truth *t) {
  int me = mt_rank;
  t->n = mt_size;
  t->cells = (size_t)c->rows * c->cols;
  t->rows = mt_xmalloc((size_t)t->n * sizeof *t->rows);
  t->m = mt_xmalloc((size_t)t->n * sizeof *t->m);
  t->dense = calloc(t->cells + 1, sizeof *t->dense);
  t->ref = calloc(t->cells + 1, sizeof *t->ref);
  t->mag = calloc(t->cells + 1, sizeof *t->mag);
  ck_assert(t->dense && t->ref && t->mag);
  for (int r = 0; r < t->n; r++) {
    t->rows[r] = rows_of(c, r, &t->m[r]);
    for (size_t j = 0; j < t->m[r]; j++)
      for (size_t k = 0; k < c->cols; k++) {
        size_t e = (size_t)t->rows[r][j] * c->cols + k;
        float g = value(c->salt, r, t->rows[r][j], k);
        t->ref[e] += g;
        t->mag[e] += fabsf(g);
        if (r == me) t->dense[e] = g;
      }
  }
  t->vals = mt_xmalloc(t->m[me] * c->cols * sizeof *t->vals);
  for (size_t j = 0; j < t->m[me]; j++)
    memcpy(t->vals + j * c->cols, t->dense + (size_t)t->rows[me][j] * c->cols,
           c->cols * sizeof *t->vals);
}

static void truth_free(Truth *t) {
  for (int r = 0; r < t->n; r++) free(t->rows[r]);
  free(t->rows);
  free(t->m);
  free(t->vals);
  free(t->dense);
  free(t->ref);
  free(t->mag);
}

/* Largest |got - ref| / sum|g| (0 where both are 0). */
static double worst_rel(const Truth *t, const float *got) {
  double worst = 0;
  for (size_t e = 0; e < t->cells; e++) {
    double d = fabs((double)got[e] - (double)t->ref[e]);
    if (d > 0) worst = fmax(worst, t->mag[e] > 0 ? d / t->mag[e] : INFINITY);
  }
  return worst;
}

/* Runs one sync (values given, or read from a copy of this rank's dense table) into a table
 * first filled with NaN, and checks it is the reference bit for bit. */
static void run_exact(AxSparseSync *s, AxSparseSyncAlgo algo, const AxCommConfig *cc,
                      const Case *c, const Truth *t, int from_table, AxSparseSyncStats *st) {
  float *table = mt_xmalloc((t->cells + 1) * sizeof *table);
  if (from_table) memcpy(table, t->dense, t->cells * sizeof *table);
  else for (size_t e = 0; e < t->cells; e++) table[e] = NAN;
  AxSparseRows in = {t->rows[mt_rank], t->m[mt_rank], from_table ? NULL : t->vals};
  int rc = ax_sparse_sync(s, algo, AX_ALLREDUCE_AUTO, cc, &in, table, st);
  mt_expect(rc == AX_OK, "%s %s: %s", ax_sparse_sync_algo_name(algo), c->name, ax_error_message());
  size_t bad = t->cells;
  for (size_t e = 0; e < t->cells && bad == t->cells; e++)
    if (memcmp(&table[e], &t->ref[e], sizeof *table)) bad = e;
  mt_expect(bad == t->cells, "%s %s (%s): element %zu (row %zu) is %.9g, the rank-ordered sum "
            "%.9g", ax_sparse_sync_algo_name(algo), c->name, from_table ? "table" : "values",
            bad, bad / c->cols, bad < t->cells ? table[bad] : 0.0,
            bad < t->cells ? t->ref[bad] : 0.0);
  free(table);
}

/* A dense all-reduce of this rank's table: exact on 1 and 2 ranks, else within 1e-6 sum|g|. */
static double run_dense(AxSparseSync *s, int mpi, const Case *c, const Truth *t) {
  float *table = mt_xmalloc((t->cells + 1) * sizeof *table);
  memcpy(table, t->dense, t->cells * sizeof *table);
  AxSparseRows in = {NULL, 0, NULL};
  int rc = mpi ? MPI_Allreduce(MPI_IN_PLACE, table, (int)t->cells, MPI_FLOAT, MPI_SUM, g_comm)
               : ax_sparse_sync(s, AX_SPARSE_SYNC_DENSE, AX_ALLREDUCE_RING, &g_cc, &in, table,
                                NULL);
  mt_expect(rc == 0, "dense %s: %s", c->name, ax_error_message());
  double w = worst_rel(t, table);
  mt_expect(w <= (mt_size <= 2 ? 0 : 1e-6), "%s %s: off by %.3g sum|g|",
            mpi ? "MPI_Allreduce" : "ring", c->name, w);
  free(table);
  return w;
}

/* sparse_sync.h's byte formulas from the sets; U_me and its size. */
static void expect_zen_bytes(AxSparseSync *s, const Case *c, const Truth *t,
                             const AxSparseSyncStats *st) {
  const AxZenLayout *l = ax_sparse_sync_layout(s);
  int n = t->n, me = mt_rank;
  unsigned long long C = c->cols, push = 0, most = 0, per[64] = {0};
  for (size_t j = 0; j < t->m[me]; j++) per[l->owner[t->rows[me][j]]]++;
  for (int j = 0; j < n; j++) {
    if (j != me) push += per[j] * (4 + 4 * C);
    if (per[j] > most) most = per[j];
  }
  uint8_t *mine = calloc(ax_zen_owned(l, me) + 1, 1);
  unsigned long long u = 0;
  for (int r = 0; r < n; r++)
    for (size_t j = 0; j < t->m[r]; j++)
      if ((int)l->owner[t->rows[r][j]] == me && !mine[l->pos[t->rows[r][j]]]++) u++;
  free(mine);
  unsigned long long pull = (unsigned long long)(n - 1) * (ax_zen_bitmap_bytes(l, me) + 4 * C * u);
  unsigned long long count = 4ULL * (unsigned long long)(n - 1);
  mt_expect(st->count_bytes == count && st->push_bytes == push && st->pull_bytes == pull &&
                st->sent == count + push + pull,
            "zen %s: sent %llu + %llu + %llu = %llu bytes (count, push, pull); the formulas "
            "give %llu + %llu + %llu", c->name, st->count_bytes, st->push_bytes, st->pull_bytes,
            st->sent, count, push, pull);
  mt_expect(st->owned == u && st->push_max == most, "zen %s: owns %zu rows (want %llu), pushes "
            "at most %zu to one owner (want %llu)", c->name, st->owned, u, st->push_max, most);
}

static void expect_allgather_bytes(const Case *c, const Truth *t, const AxSparseSyncStats *st) {
  unsigned long long n1 = (unsigned long long)(t->n - 1);
  unsigned long long push = n1 * t->m[mt_rank] * (4 + 4 * (unsigned long long)c->cols);
  mt_expect(st->count_bytes == 4 * n1 && st->push_bytes == push && st->pull_bytes == 0 &&
                st->sent == 4 * n1 + push,
            "allgather %s: sent %llu bytes (count %llu, push %llu), the formula gives %llu",
            c->name, st->sent, st->count_bytes, st->push_bytes, 4 * n1 + push);
}

/* Every byte sent was received; the owners' loads add up to the union; their imbalance. */
static double owners_balance(const Case *c, const Truth *t, const AxSparseSyncStats *st) {
  unsigned long long mine[3] = {st->sent, st->received, st->owned}, sum[3], most;
  MPI_Allreduce(mine, sum, 3, MPI_UNSIGNED_LONG_LONG, MPI_SUM, g_comm);
  MPI_Allreduce(&mine[2], &most, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, g_comm);
  size_t total = 0;
  for (int r = 0; r < t->n; r++) total += t->m[r];
  uint32_t *all = mt_xmalloc(total * sizeof *all);
  size_t k = 0;
  for (int r = 0; r < t->n; r++) {
    memcpy(all + k, t->rows[r], t->m[r] * sizeof *all);
    k += t->m[r];
  }
  size_t u = ax_zen_sort_unique(all, k);
  free(all);
  mt_expect(sum[0] == sum[1], "zen %s: %llu bytes sent, %llu received", c->name, sum[0], sum[1]);
  mt_expect(sum[2] == u, "zen %s: the owners hold %llu rows, the union is %zu", c->name, sum[2],
            u);
  return u ? (double)most * t->n / (double)u : 1.0;
}

/* Everything above for one case; returns the owners' imbalance. */
static double check_case(const Case *c) {
  mt_run_begin("sparse sync %s, %u rows x %zu", c->name, c->rows, c->cols);
  Truth t;
  truth_build(c, &t);
  AxSparseSync *s = NULL;
  ck_assert_msg(ax_sparse_sync_create(&s, g_comm, c->rows, c->cols, 77 + (uint64_t)mt_rank) ==
                    AX_OK, "%s", ax_error_message());
  AxTraffic traffic;
  memset(&traffic, 0, sizeof traffic);
  AxCommConfig cc = ax_comm_config_as(&g_cc, AX_TRAFFIC_EMBEDDING_SYNC);
  cc.traffic = &traffic;
  AxSparseSyncStats zen, zen2, ag, ag2;
  run_exact(s, AX_SPARSE_SYNC_ZEN, &cc, c, &t, 0, &zen);
  mt_expect(ax_traffic_bytes(&traffic, AX_TRAFFIC_EMBEDDING_SYNC) == zen.sent &&
                ax_traffic_bytes(&traffic, AX_TRAFFIC_N_CLASSES) == zen.sent,
            "zen %s: the counters saw %llu bytes, it sent %llu", c->name,
            ax_traffic_bytes(&traffic, AX_TRAFFIC_N_CLASSES), zen.sent);
  run_exact(s, AX_SPARSE_SYNC_ZEN, &cc, c, &t, 1, &zen2);
  run_exact(s, AX_SPARSE_SYNC_ALLGATHER, &cc, c, &t, 0, &ag);
  run_exact(s, AX_SPARSE_SYNC_ALLGATHER, &cc, c, &t, 1, &ag2);
  expect_zen_bytes(s, c, &t, &zen);
  mt_expect(zen2.sent == zen.sent, "zen %s: %llu bytes from the table, %llu from values",
            c->name, zen2.sent, zen.sent);
  expect_allgather_bytes(c, &t, &ag);
  expect_allgather_bytes(c, &t, &ag2);
  double w_mpi = run_dense(s, 1, c, &t), w_ring = run_dense(s, 0, c, &t);
  double imbalance = owners_balance(c, &t, &zen);
  unsigned long long sent[2] = {zen.sent, ag.sent}, all[2];
  MPI_Allreduce(sent, all, 2, MPI_UNSIGNED_LONG_LONG, MPI_SUM, g_comm);
  if (mt_rank == 0)
    printf("%d ranks, %-26s: zen %9llu B, allgather %9llu B; owners' imbalance %.3f; "
           "MPI_Allreduce off by %.1e, ring %.1e sum|g|\n", mt_size, c->name, all[0], all[1],
           imbalance, w_mpi, w_ring);
  ax_sparse_sync_free(s);
  truth_free(&t);
  mt_run_end();
  return imbalance;
}

/* Zen with balanced owners on one case: the exact sums (values and table), the rows as bitmaps
 * in the counts' place, the owners' loads adding up to the union; Definition 3.6's ratios
 * into push and pull (ax_sparse_sync_imbalance, its pull checked against owners_balance's). */
static void check_balanced(const Case *c, double *push, double *pull) {
  mt_run_begin("sparse sync %s, balanced owners, %u rows x %zu", c->name, c->rows, c->cols);
  Truth t;
  truth_build(c, &t);
  AxSparseSync *s = NULL;
  ck_assert_msg(ax_sparse_sync_create(&s, g_comm, c->rows, c->cols, 77) == AX_OK, "%s",
                ax_error_message());
  ax_sparse_sync_set_owners(s, AX_ZEN_OWNERS_BALANCED);
  AxSparseSyncStats zen, zen2;
  run_exact(s, AX_SPARSE_SYNC_ZEN, &g_cc, c, &t, 0, &zen);
  run_exact(s, AX_SPARSE_SYNC_ZEN, &g_cc, c, &t, 1, &zen2);
  unsigned long long count = (unsigned long long)(t.n - 1) * ((c->rows + 7) / 8);
  mt_expect(zen.count_bytes == count && zen.serial == 0 && zen2.sent == zen.sent,
            "zen balanced %s: %llu count bytes (want %llu), %zu serial, %llu vs %llu bytes "
            "sent from values and table", c->name, zen.count_bytes, count, zen.serial, zen.sent,
            zen2.sent);
  double pull_check = owners_balance(c, &t, &zen);
  int rc = ax_sparse_sync_imbalance(g_comm, &zen, t.m[mt_rank], push, pull);
  mt_expect(rc == AX_OK, "%s", ax_error_message());
  mt_expect(fabs(*pull - pull_check) < 1e-12, "zen balanced %s: pull imbalance %.6f, the "
            "union gives %.6f", c->name, *pull, pull_check);
  if (mt_rank == 0)
    printf("%d ranks, %-26s, balanced owners: push imbalance %.3f, pull %.3f\n", mt_size,
           c->name, *push, *pull);
  ax_sparse_sync_free(s);
  truth_free(&t);
  mt_run_end();
}

/* ------------------------------------------------------------------ tests */

START_TEST(synthetic_sets_sum_exactly) {
  const Case cases[] = {
      {RANDOM, "random (5000 rows)", 5000, 3, 1},
      {RANDOM, "random (1000 rows, 1 col)", 1000, 1, 2},
      {OVERLAP, "overlapping 90%", 3000, 5, 3},
      {SOME_EMPTY, "empty on even ranks", 4000, 4, 4},
      {ALL_EMPTY, "empty everywhere", 100, 2, 5},
      {ALL_ROWS, "every row everywhere", 300, 6, 6},
      {RANDOM, "random (7 rows)", 7, 2, 7},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) check_case(&cases[i]);
  mt_assert_all_ok("synthetic row sets");
}
END_TEST

/* Three steps of 4096 bytes a rank: the result is exact; the imbalance is reported only. */
START_TEST(shakespeare_bytes_sum_exactly) {
  for (int step = 0; step < 3; step++) {
    Case c = {TEXT, "tinyshakespeare bytes", 256, 8, step};
    check_case(&c);
  }
  mt_assert_all_ok("tinyshakespeare batches");
}
END_TEST

/* Zipf(1) batches of 8192 tokens a rank over 50257 rows: exact, and the owners' loads within
 * 10% of their mean (on 2 ranks and more). */
START_TEST(zipf_batches_sum_exactly_and_balance) {
  for (int step = 0; step < 3; step++) {
    Case c = {ZIPF, "zipf(1) over 50257 rows", 50257, 4, 10 + step};
    double imbalance = check_case(&c);
    mt_expect(imbalance < 1.1, "zipf step %d: owners' imbalance %.3f", step, imbalance);
  }
  mt_assert_all_ok("zipf batches");
}
END_TEST

/* Balanced owners: exact on the synthetic sets (empty ones included), and Zipf(1) batches of
 * 8192 tokens over 50257 rows with push and pull imbalance below 1.1 on any number of ranks
 * (h_0 reaches 1.16-1.21 on 8 and 16; tests/mpi_zen_balance.sh runs 2, 4, 8 and 16). */
START_TEST(balanced_owners_sum_exactly_and_balance) {
  const Case cases[] = {
      {RANDOM, "random (5000 rows)", 5000, 3, 1},
      {OVERLAP, "overlapping 90%", 3000, 5, 3},
      {SOME_EMPTY, "empty on even ranks", 4000, 4, 4},
      {ALL_EMPTY, "empty everywhere", 100, 2, 5},
      {ALL_ROWS, "every row everywhere", 300, 6, 6},
      {RANDOM, "random (7 rows)", 7, 2, 7},
  };
  double push, pull;
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) check_balanced(&cases[i], &push, &pull);
  for (int step = 0; step < 3; step++) {
    Case c = {ZIPF, "zipf(1) over 50257 rows", 50257, 4, 10 + step};
    check_balanced(&c, &push, &pull);
    mt_expect(push < 1.1 && pull < 1.1, "zipf step %d, balanced owners: push imbalance %.3f, "
              "pull %.3f", step, push, pull);
  }
  mt_assert_all_ok("balanced owners");
}
END_TEST

/* Every rank its own node behind an emulated link: the same sums, every byte counted as
 * crossed embedding_sync traffic, every held send posted. */
START_TEST(emulated_link_changes_nothing_but_time) {
  AxLinkEmuConfig lc = {.ranks_per_node = 1};
  ck_assert_int_eq(ax_link_spec_parse("1Gbps,50us", &lc.link), AX_OK);
  AxLinkEmu *e = NULL;
  ck_assert_msg(ax_link_emu_create(&e, g_comm, &lc) == AX_OK, "%s", ax_error_message());
  Case c = {ZIPF, "zipf over an emulated link", 50257, 2, 20};
  mt_run_begin("sparse sync over an emulated link");
  Truth t;
  truth_build(&c, &t);
  AxSparseSync *s = NULL;
  ck_assert_int_eq(ax_sparse_sync_create(&s, g_comm, c.rows, c.cols, 5), AX_OK);
  AxTraffic traffic;
  memset(&traffic, 0, sizeof traffic);
  AxCommConfig cc = ax_comm_config_as(&g_cc, AX_TRAFFIC_EMBEDDING_SYNC);
  cc.links = e;
  cc.traffic = &traffic;
  AxSparseSyncStats zen, ag;
  run_exact(s, AX_SPARSE_SYNC_ZEN, &cc, &c, &t, 1, &zen);
  run_exact(s, AX_SPARSE_SYNC_ALLGATHER, &cc, &c, &t, 0, &ag);
  expect_zen_bytes(s, &c, &t, &zen);
  unsigned long long sent = zen.sent + ag.sent;
  mt_expect(ax_traffic_bytes(&traffic, AX_TRAFFIC_EMBEDDING_SYNC) == sent &&
                ax_traffic_crossed(&traffic, AX_TRAFFIC_N_CLASSES) == sent,
            "emulated: %llu bytes counted (%llu crossed), %llu sent",
            ax_traffic_bytes(&traffic, AX_TRAFFIC_N_CLASSES),
            ax_traffic_crossed(&traffic, AX_TRAFFIC_N_CLASSES), sent);
  AxLinkStats ls = ax_link_stats(e);
  mt_expect(ls.posted == ls.held && (mt_size == 1 || ls.held > 0), "%llu sends held, %llu posted",
            ls.held, ls.posted);
  ax_sparse_sync_free(s);
  truth_free(&t);
  mt_run_end();
  ax_link_emu_destroy(e);
  mt_assert_all_ok("over an emulated link");
}
END_TEST

/* Rows out of order, repeated or out of range are refused before anything is sent (on every
 * rank alike here); tables of different shapes are refused by create on every rank. */
START_TEST(bad_inputs_are_refused) {
  AxSparseSync *s = NULL;
  ck_assert_int_eq(ax_sparse_sync_create(&s, g_comm, 10, 2, 1), AX_OK);
  float table[20] = {0};
  const uint32_t bad[][3] = {{3, 1, 5}, {1, 1, 5}, {1, 2, 10}};
  for (int i = 0; i < 3; i++) {
    AxSparseRows in = {bad[i], 3, NULL};
    ck_assert_int_ne(ax_sparse_sync_zen(s, &g_cc, &in, table, NULL), AX_OK);
    ck_assert_msg(strstr(ax_error_text(), "out of range"), "%s", ax_error_text());
    ax_error_clear();
    ck_assert_int_ne(ax_sparse_sync_allgather(s, &g_cc, &in, table, NULL), AX_OK);
    ax_error_clear();
  }
  AxSparseSyncAlgo a;
  ck_assert_int_eq(ax_sparse_sync_algo_parse("zen", &a), AX_OK);
  ck_assert_int_eq(a, AX_SPARSE_SYNC_ZEN);
  ck_assert_int_eq(ax_sparse_sync_algo_parse("allgather", &a), AX_OK);
  ck_assert_int_eq(ax_sparse_sync_algo_parse("dense", &a), AX_OK);
  ck_assert_int_ne(ax_sparse_sync_algo_parse("zip", &a), AX_OK);
  ax_error_clear();
  ax_sparse_sync_free(s);
  AxSparseSync *odd = NULL;
  int rc = ax_sparse_sync_create(&odd, g_comm, 10 + (mt_rank == 1), 2, 1);
  if (mt_size > 1) {
    ck_assert_int_ne(rc, AX_OK);
    ck_assert_ptr_null(odd);
    ck_assert_msg(strstr(ax_error_text(), "tables differ"), "%s", ax_error_text());
  } else {
    ck_assert_int_eq(rc, AX_OK);
  }
  ax_sparse_sync_free(odd);
  ax_error_clear();
  mt_assert_all_ok("bad inputs");
}
END_TEST

static Suite *sparse_sync_suite(void) {
  Suite *s = suite_create("sparse_sync");
  TCase *tc = tu_tcase(s, "sparse_sync", 300);
  tcase_add_test(tc, synthetic_sets_sum_exactly);
  tcase_add_test(tc, shakespeare_bytes_sum_exactly);
  tcase_add_test(tc, zipf_batches_sum_exactly_and_balance);
  tcase_add_test(tc, balanced_owners_sum_exactly_and_balance);
  tcase_add_test(tc, emulated_link_changes_nothing_but_time);
  tcase_add_test(tc, bad_inputs_are_refused);
  return s;
}

static int load_text(void) {
  FILE *f = fopen(SHAKESPEARE, "rb");
  if (!f) return 0;
  g_text = malloc(2u << 20);
  g_text_n = g_text ? fread(g_text, 1, 2u << 20, f) : 0;
  fclose(f);
  return g_text_n > 16 * TEXT_BATCH;
}

int main(int argc, char **argv) {
  mt_init(&argc, &argv);
  if (!load_text() || !ax_zipf_init(&g_zipf, 50257, 1.0, 2024)) {
    fprintf(stderr, "mpitest_sparse_sync: cannot read %s (run from the repository root)\n",
            SHAKESPEARE);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  g_cc = mt_comm_config();
  MPI_Comm_dup(MPI_COMM_WORLD, &g_comm);
  int rc = mt_run_watched(sparse_sync_suite(), RUN_TIMEOUT_S);
  MPI_Comm_free(&g_comm);
  free(g_text);
  ax_zipf_free(&g_zipf);
  return mt_finish(rc);
}
