/* mpitest_sparse_hier.c — Zen's hierarchical step (mpi/sparse/sparse_hier.h) on whatever number
 * of ranks it runs on, for every layout of 2 or more nodes of 2 or more ranks (blocked and
 * interleaved; none on 1 or 2 ranks: then only the refusal is checked).
 *
 * Every rank builds every rank's rows (skewed toward low rows, so they overlap as a batch's
 * tokens do) and values, so it knows the exact answer in the header's order: each node's ranks
 * added from +0 in rank order, then the nodes from +0 in node order. The hierarchical sum must
 * equal it bit for bit, with either cross-level owners; equal the two-level dense all-reduce
 * (two_level.h, ring middle) bit for bit on 2 nodes of 2 ranks (the same additions); and agree
 * with the flat Zen within fp32 rounding. Over a counting link (nodes known, nothing delayed):
 * the bytes between nodes are exactly the cross level's, and fewer than the flat Zen's. */
#include <check.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/link/link_emulator.h"
#include "mpi/mpi_util.h"
#include "mpi/sparse/sparse_hier.h"
#include "mpi/traffic.h"
#include "src/core/crng.h"
#include "src/core/error.h"
#include "mpitestutil.h"
#include "testutil.h"

enum { RUN_TIMEOUT_S = 120, ROWS = 4096, COLS = 8, DRAWS = 900 };

static MPI_Comm g_comm;
static AxCommConfig g_cc;

/* Rank r's rows (ascending, unique) and values (n x COLS). */
typedef struct {
  uint32_t idx[ROWS];
  size_t n;
  float *vals;
} Rows;

static void rows_of(int r, uint64_t salt, Rows *out) {
  AxCrng k = ax_crng_key(77 + salt, 1, (uint64_t)r);
  unsigned char *seen = mt_xmalloc(ROWS);
  memset(seen, 0, ROWS);
  for (uint64_t i = 0; i < DRAWS; i++) {
    float u = ax_crng_unit(k, i);
    seen[(uint32_t)((float)ROWS * u * u) % ROWS] = 1; /* skewed: low rows are hot */
  }
  out->n = 0;
  for (uint32_t v = 0; v < ROWS; v++)
    if (seen[v]) out->idx[out->n++] = v;
  out->vals = mt_xmalloc(out->n * COLS * sizeof *out->vals);
  for (size_t i = 0; i < out->n * COLS; i++)
    out->vals[i] = ax_crng_unit(k, DRAWS + i) - 0.5f;
  free(seen);
}

/* The header's order: nodes in ascending id, each from +0 over its ranks in rank order. */
static float *truth(const int *node_of, uint64_t salt) {
  float *sum = mt_xmalloc(ROWS * COLS * sizeof *sum), *part = mt_xmalloc(ROWS * COLS * sizeof *part);
  memset(sum, 0, ROWS * COLS * sizeof *sum);
  Rows *r = mt_xmalloc(sizeof *r);
  for (int id = -1;;) { /* the next node id above id */
    int next = -1;
    for (int q = 0; q < mt_size; q++)
      if (node_of[q] > id && (next < 0 || node_of[q] < next)) next = node_of[q];
    if (next < 0) break;
    id = next;
    memset(part, 0, ROWS * COLS * sizeof *part);
    for (int q = 0; q < mt_size; q++) {
      if (node_of[q] != id) continue;
      rows_of(q, salt, r);
      for (size_t j = 0; j < r->n; j++)
        for (size_t c = 0; c < COLS; c++) part[r->idx[j] * COLS + c] += r->vals[j * COLS + c];
      free(r->vals);
    }
    for (size_t i = 0; i < ROWS * COLS; i++) sum[i] += part[i];
  }
  free(r);
  free(part);
  return sum;
}

/* The first element where a != b (as floats: -0 equals +0), or n. */
static size_t first_unequal(const float *a, const float *b, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (a[i] != b[i]) return i;
  return n;
}

typedef struct {
  const char *name;
  int node_of[64];
} Layout;

static int usable_layouts(Layout *out) {
  int n = 0;
  for (int g = 2; g <= mt_size / 2 && mt_size <= 64; g++) {
    if (mt_size % g) continue;
    out[n].name = "blocked";
    for (int r = 0; r < mt_size; r++) out[n].node_of[r] = r / g;
    n++;
    out[n].name = "interleaved";
    for (int r = 0; r < mt_size; r++) out[n].node_of[r] = r % (mt_size / g);
    n++;
  }
  return n;
}

static float *run_hier(const AxTwoLevel *t, const AxCommConfig *cc, AxZenOwners owners,
                       uint64_t salt, AxSparseHierStats *st) {
  Rows *r = mt_xmalloc(sizeof *r);
  rows_of(mt_rank, salt, r);
  float *table = mt_xmalloc(ROWS * COLS * sizeof *table);
  for (size_t i = 0; i < ROWS * COLS; i++) table[i] = 99.0f; /* overwritten everywhere */
  AxSparseHier *h = NULL;
  ck_assert_msg(ax_sparse_hier_create(&h, t, ROWS, COLS, 3) == AX_OK, "%s", ax_error_message());
  ax_sparse_hier_set_owners(h, owners);
  AxSparseRows in = {r->idx, r->n, r->vals};
  mt_run_begin("hierarchical zen, owners %s", ax_zen_owners_name(owners));
  int rc = ax_sparse_hier_zen(h, cc, &in, table, st);
  mt_run_end();
  mt_expect(rc == AX_OK, "hierarchical zen: %s", ax_error_message());
  ax_sparse_hier_free(h);
  free(r->vals);
  free(r);
  return table;
}

START_TEST(sums_in_the_stated_order) {
  Layout l[32];
  int n = usable_layouts(l);
  for (int i = 0; i < n; i++) {
    AxTwoLevel t;
    ck_assert_int_eq(ax_two_level_new(g_comm, l[i].node_of, &t), AX_OK);
    ck_assert(t.usable);
    float *want = truth(l[i].node_of, 0);
    for (int o = AX_ZEN_OWNERS_HASH; o <= AX_ZEN_OWNERS_BALANCED; o++) {
      AxSparseHierStats st;
      float *got = run_hier(&t, &g_cc, (AxZenOwners)o, 0, &st);
      size_t bad = first_unequal(got, want, ROWS * COLS);
      mt_expect(bad == ROWS * COLS, "%s g=%d, %s owners: element %zu is %.9g, expected %.9g",
                l[i].name, t.g, ax_zen_owners_name((AxZenOwners)o), bad,
                bad < ROWS * COLS ? got[bad] : 0.0, bad < ROWS * COLS ? want[bad] : 0.0);
      free(got);
    }
    if (t.g == 2 && t.n_nodes == 2) { /* the dense two-level sum adds the same pairs */
      Rows *r = mt_xmalloc(sizeof *r);
      rows_of(mt_rank, 0, r);
      float *dense = mt_xmalloc(ROWS * COLS * sizeof *dense);
      memset(dense, 0, ROWS * COLS * sizeof *dense);
      for (size_t j = 0; j < r->n; j++)
        memcpy(dense + r->idx[j] * COLS, r->vals + j * COLS, COLS * sizeof *dense);
      AxTwoLevelInner ring = {.algo = AX_ALLREDUCE_RING};
      ck_assert_int_eq(ax_two_level_allreduce(&t, &g_cc, &ring, dense, ROWS * COLS, NULL), AX_OK);
      size_t bad = first_unequal(dense, want, ROWS * COLS);
      mt_expect(bad == ROWS * COLS, "%s: the dense two-level sum differs at %zu (%.9g, %.9g)",
                l[i].name, bad, bad < ROWS * COLS ? dense[bad] : 0.0,
                bad < ROWS * COLS ? want[bad] : 0.0);
      free(dense);
      free(r->vals);
      free(r);
    }
    free(want);
    ax_two_level_free(&t);
  }
  if (mt_rank == 0)
    printf("hierarchical zen on %d rank(s): %d layout(s) checked bit for bit\n", mt_size, n);
  mt_assert_all_ok("hierarchical zen's sums");
}
END_TEST

/* Flat Zen over the same ranks: within 2N 2^-24 sum|g| (both round at most N-1 times). */
START_TEST(agrees_with_flat_zen) {
  Layout l[32];
  int n = usable_layouts(l);
  for (int i = 0; i < n; i++) {
    AxTwoLevel t;
    ck_assert_int_eq(ax_two_level_new(g_comm, l[i].node_of, &t), AX_OK);
    AxSparseHierStats hs;
    float *hier = run_hier(&t, &g_cc, AX_ZEN_OWNERS_BALANCED, 1, &hs);
    Rows *r = mt_xmalloc(sizeof *r);
    rows_of(mt_rank, 1, r);
    AxSparseSync *s = NULL;
    ck_assert_int_eq(ax_sparse_sync_create(&s, g_comm, ROWS, COLS, 3), AX_OK);
    float *flat = mt_xmalloc(ROWS * COLS * sizeof *flat);
    AxSparseRows in = {r->idx, r->n, r->vals};
    ck_assert_int_eq(ax_sparse_sync_zen(s, &g_cc, &in, flat, NULL), AX_OK);
    double tol = 2.0 * mt_size * ldexp(1.0, -24) * mt_size * 0.5; /* |g| <= 0.5 */
    size_t bad = ROWS * COLS;
    for (size_t k = 0; k < ROWS * COLS && bad == ROWS * COLS; k++)
      if (!(fabs((double)hier[k] - flat[k]) <= tol)) bad = k;
    mt_expect(bad == ROWS * COLS, "%s: element %zu is %.9g, flat zen %.9g", l[i].name, bad,
              bad < ROWS * COLS ? hier[bad] : 0.0, bad < ROWS * COLS ? flat[bad] : 0.0);
    ax_sparse_sync_free(s);
    free(flat);
    free(hier);
    free(r->vals);
    free(r);
    ax_two_level_free(&t);
  }
  mt_assert_all_ok("hierarchical zen against the flat one");
}
END_TEST

/* Blocked nodes of 2 behind a counting link: what crosses is the cross level, less than flat. */
START_TEST(fewer_bytes_between_nodes) {
  if (mt_size < 4 || mt_size % 2) return;
  AxLinkEmuConfig lc = {.ranks_per_node = 2};
  AxLinkEmu *e = NULL;
  ck_assert_msg(ax_link_emu_create(&e, g_comm, &lc) == AX_OK, "%s", ax_error_message());
  int node_of[64];
  for (int r = 0; r < mt_size; r++) node_of[r] = ax_link_node_of(e, r);
  AxTwoLevel t;
  ck_assert_int_eq(ax_two_level_new(g_comm, node_of, &t), AX_OK);
  AxTraffic hier, flat;
  memset(&hier, 0, sizeof hier);
  memset(&flat, 0, sizeof flat);
  AxCommConfig cc = ax_comm_config_as(&g_cc, AX_TRAFFIC_EMBEDDING_SYNC);
  cc.links = e;
  cc.traffic = &hier;
  AxSparseHierStats hs;
  free(run_hier(&t, &cc, AX_ZEN_OWNERS_BALANCED, 2, &hs));
  Rows *r = mt_xmalloc(sizeof *r);
  rows_of(mt_rank, 2, r);
  AxSparseSync *s = NULL;
  ck_assert_int_eq(ax_sparse_sync_create(&s, g_comm, ROWS, COLS, 3), AX_OK);
  ax_sparse_sync_set_owners(s, AX_ZEN_OWNERS_BALANCED);
  float *table = mt_xmalloc(ROWS * COLS * sizeof *table);
  AxSparseRows in = {r->idx, r->n, r->vals};
  cc.traffic = &flat;
  ck_assert_int_eq(ax_sparse_sync_zen(s, &cc, &in, table, NULL), AX_OK);
  unsigned long long v[3] = {ax_traffic_crossed(&hier, AX_TRAFFIC_N_CLASSES),
                             ax_traffic_crossed(&flat, AX_TRAFFIC_N_CLASSES), hs.cross.sent};
  mt_expect(v[0] == v[2], "the bytes between nodes (%llu) are not the cross level's (%llu)",
            v[0], v[2]);
  MPI_Allreduce(MPI_IN_PLACE, v, 3, MPI_UNSIGNED_LONG_LONG, MPI_SUM, g_comm);
  if (mt_rank == 0)
    printf("hierarchical zen on %d ranks, nodes of 2: %llu bytes between nodes, flat zen %llu\n",
           mt_size, v[0], v[1]);
  mt_expect(v[0] < v[1], "hierarchical zen sent %llu bytes between nodes, flat zen %llu", v[0],
            v[1]);
  ax_sparse_sync_free(s);
  free(table);
  free(r->vals);
  free(r);
  ax_two_level_free(&t);
  ax_link_emu_destroy(e);
  mt_assert_all_ok("bytes between nodes");
}
END_TEST

START_TEST(refused_where_the_layout_has_no_two_levels) {
  int node_of[64];
  for (int r = 0; r < mt_size && r < 64; r++) node_of[r] = r; /* a node each */
  AxTwoLevel t;
  ck_assert_int_eq(ax_two_level_new(g_comm, node_of, &t), AX_OK);
  AxSparseHier *h = (AxSparseHier *)1;
  ck_assert_int_eq(ax_sparse_hier_create(&h, &t, ROWS, COLS, 3), AX_ERR);
  ck_assert_ptr_null(h);
  ck_assert_ptr_nonnull(strstr(ax_error_message(), "2 or more to a node"));
  ax_error_clear();
}
END_TEST

static Suite *hier_suite(void) {
  Suite *s = suite_create("sparse_hier");
  TCase *tc = tu_tcase(s, "sparse_hier", 600);
  tcase_add_test(tc, refused_where_the_layout_has_no_two_levels);
  tcase_add_test(tc, sums_in_the_stated_order);
  tcase_add_test(tc, agrees_with_flat_zen);
  tcase_add_test(tc, fewer_bytes_between_nodes);
  return s;
}

int main(int argc, char **argv) {
  mt_init(&argc, &argv);
  g_cc = mt_comm_config();
  MPI_Comm_dup(MPI_COMM_WORLD, &g_comm);
  int rc = mt_run_watched(hier_suite(), RUN_TIMEOUT_S);
  MPI_Comm_free(&g_comm);
  return mt_finish(rc);
}
