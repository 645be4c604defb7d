/* mpitest_two_level.c — the two-level all-reduce (mpi/sparse/two_level.h) on whatever number of
 * ranks it runs on: every node layout of >= 2 nodes of g >= 2 ranks that divides the job (blocked,
 * interleaved, and blocked with sparse descending node ids), and the layouts that cannot be
 * used (one node, one rank per node, nodes of different sizes), which are refused. Checks the
 * communicators and shards; plain middle steps (ring, rhd) against MPI_Allreduce's sum, with
 * bitwise identical replicas and the bytes the header's formula gives; CaSync middle steps,
 * ring, PS and all-gather (identity: MPI's sum, and through the ring and the all-gather the
 * plain ring's result bit for bit; onebit with error feedback: identical replicas aligned with
 * the sum); operations in flight together with other collectives on the
 * same communicators; bad arguments. Random non-integer inputs; no timing asserts.
 * Every rank checks its own results and prints what failed with its rank; then all ranks agree
 * on pass/fail (so none is left waiting in a collective when another one fails). */
#include <check.h>
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/sparse/two_level.h"
#include "mpi/mpi_util.h"
#include "src/core/error.h"
#include "src/core/rng.h"
#include "mpitestutil.h"
#include "testutil.h"

enum { RUN_TIMEOUT_S = 120, MAX_RANKS = 64, MAX_LAYOUTS = 64 };

static MPI_Comm g_comm;   /* a duplicate of MPI_COMM_WORLD the communicators are made from */
static AxCommConfig g_cc; /* polite waiting where ranks outnumber cores; default chunking */

/* ------------------------------------------------------------------ layouts */

typedef struct {
  char name[48];
  int node_of[MAX_RANKS];
  int usable, g, n_nodes; /* what ax_two_level_new should say */
} Layout;

static Layout g_layouts[MAX_LAYOUTS];
static int g_n_layouts, g_n_usable;

static void add_layout(const char *name, int g, int usable, int (*node)(int r, int g)) {
  if (g_n_layouts == MAX_LAYOUTS) return; /* 3 per divisor of at most 64 ranks: never */
  Layout *l = &g_layouts[g_n_layouts++];
  snprintf(l->name, sizeof l->name, "%s", name);
  for (int r = 0; r < mt_size; r++) l->node_of[r] = node(r, g);
  l->usable = usable;
  g_n_usable += usable;
  l->g = g;
  l->n_nodes = 0;
  for (int r = 0; r < mt_size; r++) { /* distinct ids */
    int seen = 0;
    for (int q = 0; q < r; q++) seen |= l->node_of[q] == l->node_of[r];
    l->n_nodes += !seen;
  }
}

static int blocked(int r, int g) { return r / g; }
static int interleaved(int r, int g) { return r % (mt_size / g); }
static int sparse_descending(int r, int g) { return 1000 - 7 * (r / g); }
static int one_node(int r, int g) { return (void)r, (void)g, 3; }
static int own_node(int r, int g) { return (void)g, r; }
static int last_alone(int r, int g) { return (void)g, r == mt_size - 1; }

/* Every layout to check on mt_size ranks; the uneven ones expect g = 0. */
static void make_layouts(void) {
  char name[48];
  for (int g = 2; g <= mt_size / 2; g++) {
    if (mt_size % g) continue;
    snprintf(name, sizeof name, "blocked g=%d", g);
    add_layout(name, g, 1, blocked);
    snprintf(name, sizeof name, "interleaved g=%d", g);
    add_layout(name, g, 1, interleaved);
    snprintf(name, sizeof name, "blocked g=%d, ids 1000,993,...", g);
    add_layout(name, g, 1, sparse_descending);
  }
  add_layout("one node", mt_size, 0, one_node);
  if (mt_size > 1) add_layout("one rank per node", 1, 0, own_node);
  if (mt_size > 2) add_layout("the last rank alone", 0, 0, last_alone);
}

/* "{0,1}{2,3}": the ranks of each node, nodes in ascending id. */
static void describe(const Layout *l, char *out, size_t cap) {
  size_t at = 0;
  out[0] = 0;
  int prev_set = 0, prev = 0;
  for (int k = 0; k < l->n_nodes; k++) {
    int id = 0, found = 0; /* the smallest id above prev */
    for (int r = 0; r < mt_size; r++)
      if ((!prev_set || l->node_of[r] > prev) && (!found || l->node_of[r] < id))
        id = l->node_of[r], found = 1;
    at += (size_t)snprintf(out + at, at < cap ? cap - at : 0, "{");
    for (int r = 0, first = 1; r < mt_size; r++)
      if (l->node_of[r] == id) {
        at += (size_t)snprintf(out + at, at < cap ? cap - at : 0, first ? "%d" : ",%d", r);
        first = 0;
      }
    at += (size_t)snprintf(out + at, at < cap ? cap - at : 0, "}");
    prev = id, prev_set = 1;
  }
}

static void print_layouts(void) {
  if (mt_rank != 0) return;
  char d[512];
  for (int i = 0; i < g_n_layouts; i++) {
    describe(&g_layouts[i], d, sizeof d);
    printf("two-level on %d rank(s): layout %-30s %s: %s\n", mt_size, g_layouts[i].name, d,
           g_layouts[i].usable ? "runs" : "not usable (checked that it is refused)");
  }
  if (!g_n_usable)
    printf("two-level on %d rank(s): no layout of >= 2 nodes of >= 2 ranks is possible; only "
           "the refusals are checked\n", mt_size);
  fflush(stdout);
}

static void open_layout(const Layout *l, AxTwoLevel *t) {
  ck_assert_msg(ax_two_level_new(g_comm, l->node_of, t) == AX_OK, "%s: %s", l->name,
                ax_error_message());
}

/* ------------------------------------------------------------------ helpers */

/* Collective: MPI_Allreduce's fp32 sum of x and the sum of |x| (the scale of rounding). */
static void mpi_sums(const float *x, size_t n, float **sum, float **abs_sum) {
  *sum = mt_copy(x, n);
  *abs_sum = mt_copy(x, n);
  for (size_t i = 0; i < n; i++) (*abs_sum)[i] = fabsf(x[i]);
  MPI_Allreduce(MPI_IN_PLACE, *sum, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, *abs_sum, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}

/* Both sums round at most p-1 times, each by at most 2^-24 of the sum of |x|, so they differ
 * by less than 2p·2^-24 of it: 1e-6 on up to 8 ranks. The first element off by more, or n. */
static size_t first_off(const float *got, const float *sum, const float *abs_sum, size_t n) {
  double tol = fmax(1e-6, 2.0 * mt_size * ldexp(1.0, -24));
  for (size_t i = 0; i < n; i++)
    if (!(fabs((double)got[i] - sum[i]) <= tol * abs_sum[i] + 1e-30)) return i;
  return n;
}

static size_t segment(size_t n, int parts, int b) {
  b = ((b % parts) + parts) % parts;
  return n / (size_t)parts + ((size_t)b < n % (size_t)parts ? 1 : 0);
}

/* The header's formula for the two intra-node steps. */
static AxCommBytes intra_bytes(const AxTwoLevel *t, size_t n) {
  int g = t->g, r = t->local;
  AxCommBytes b;
  b.sent = (unsigned long long)(2 * n - segment(n, g, r) - segment(n, g, r + 1)) * 4;
  b.received = (unsigned long long)(2 * n - segment(n, g, r - 1) - segment(n, g, r)) * 4;
  return b;
}

static AxCommConfig tuned(size_t chunk_bytes, int window) {
  AxCommConfig cc = g_cc;
  cc.chunk_bytes = chunk_bytes;
  cc.window = window;
  return cc;
}

static AxCodec *codec(const char *spec) {
  AxCodec *c = NULL;
  ck_assert_msg(ax_codec_parse(spec, &c) == AX_OK, "%s: %s", spec, ax_error_message());
  return c;
}

static int run_2l(const Layout *l, const AxTwoLevel *t, const AxCommConfig *cc,
                  const AxTwoLevelInner *in, float *buf, size_t n, AxCommBytes *bytes) {
  mt_run_begin("two-level %s, middle %s, n=%zu chunk=%zu", l->name,
               in->codec ? ax_codec_spec(in->codec) : ax_allreduce_algo_name(in->algo), n,
               cc->chunk_bytes);
  int rc = ax_two_level_allreduce(t, cc, in, buf, n, bytes);
  mt_run_end();
  return rc;
}

/* ------------------------------------------------------------------ communicators */

static int world_rank_of(MPI_Comm comm, int r) {
  MPI_Group g, w;
  int out;
  MPI_Comm_group(comm, &g);
  MPI_Comm_group(MPI_COMM_WORLD, &w);
  MPI_Group_translate_ranks(g, 1, &r, w, &out);
  MPI_Group_free(&g);
  MPI_Group_free(&w);
  return out;
}

/* node: the ranks on this rank's node in world order; cross: one per node, ascending node id,
 * each of this rank's local index; shards: contiguous, covering the range. */
static void check_communicators(const Layout *l, const AxTwoLevel *t) {
  int ns, cs, nr, cr, mine = l->node_of[mt_rank];
  MPI_Comm_size(t->node, &ns);
  MPI_Comm_size(t->cross, &cs);
  MPI_Comm_rank(t->node, &nr);
  MPI_Comm_rank(t->cross, &cr);
  mt_expect(ns == l->g && cs == l->n_nodes, "%s: node of %d, cross of %d ranks", l->name, ns, cs);
  mt_expect(nr == t->local && cr == t->node_index, "%s: ranks %d, %d; local %d, node index %d",
            l->name, nr, cr, t->local, t->node_index);
  for (int r = 0, prev = -1; r < ns; r++) {
    int w = world_rank_of(t->node, r);
    mt_expect(l->node_of[w] == mine && w > prev, "%s: node rank %d is world rank %d", l->name, r,
              w);
    prev = w;
  }
  for (int r = 0, prev_id = 0; r < cs; r++) {
    int w = world_rank_of(t->cross, r), local = 0;
    for (int q = 0; q < w; q++) local += l->node_of[q] == l->node_of[w];
    mt_expect(local == t->local && (r == 0 || l->node_of[w] > prev_id),
              "%s: cross rank %d is world rank %d (local index %d)", l->name, r, w, local);
    prev_id = l->node_of[w];
  }
  const size_t counts[] = {0, 1, (size_t)l->g - 1, 10007};
  for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
    size_t off, len = ax_two_level_shard(t, counts[i], &off), before = 0, total = 0;
    unsigned long long mine_len = len, ex = 0;
    MPI_Exscan(&mine_len, &ex, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, t->node);
    before = nr ? (size_t)ex : 0;
    MPI_Allreduce(&mine_len, &ex, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, t->node);
    total = (size_t)ex;
    mt_expect(off == before && total == counts[i] && len + 1 >= counts[i] / (size_t)l->g,
              "%s: shard of %zu at %zu, %zu long; %zu before it, %zu in all", l->name,
              counts[i], off, len, before, total);
  }
}

START_TEST(layouts_make_the_right_communicators) {
  for (int i = 0; i < g_n_layouts; i++) {
    const Layout *l = &g_layouts[i];
    AxTwoLevel t;
    open_layout(l, &t);
    mt_expect(t.usable == l->usable && t.g == l->g && t.n_nodes == l->n_nodes,
              "%s: usable %d g %d nodes %d, expected %d, %d, %d", l->name, t.usable, t.g,
              t.n_nodes, l->usable, l->g, l->n_nodes);
    if (t.usable) {
      check_communicators(l, &t);
    } else {
      mt_expect(t.node == MPI_COMM_NULL && t.cross == MPI_COMM_NULL,
                "%s: communicators made though not usable", l->name);
      size_t off = 9;
      mt_expect(ax_two_level_shard(&t, 10, &off) == 10 && off == 0,
                "%s: not usable, yet the shard is not the whole range", l->name);
    }
    ax_two_level_free(&t);
    mt_expect(t.node == MPI_COMM_NULL && !t.usable, "%s: not reset by free", l->name);
  }
  mt_assert_all_ok("two-level communicators");
}
END_TEST

/* ------------------------------------------------------------------ plain middle steps */

typedef struct {
  size_t chunk_bytes;
  int window;
} Tuning;
static const Tuning TUNINGS[] = {{0, 0}, {1000, 1}};

/* What the middle step moves on its own: the ring's formula, or (rhd) what an rhd all-reduce of
 * the shard on cross counts. Collective over cross. */
static AxCommBytes middle_bytes(const AxTwoLevel *t, const AxCommConfig *cc,
                                AxAllreduceAlgo algo, size_t n) {
  size_t shard = ax_two_level_shard(t, n, NULL);
  AxCommBytes b = {0, 0};
  if (algo == AX_ALLREDUCE_RING) {
    ax_ring_allreduce_bytes(shard, 4, t->node_index, t->n_nodes, &b);
    return b;
  }
  float *dummy = mt_inputs(shard, mt_rank, 99);
  mt_expect(ax_allreduce(t->cross, cc, dummy, shard, AX_COMM_F32, algo, &b) == AX_OK,
            "rhd on cross: %s", ax_error_message());
  free(dummy);
  return b;
}

static void check_plain(const Layout *l, const AxTwoLevel *t, AxAllreduceAlgo algo, size_t n,
                        const Tuning *tu) {
  AxCommConfig cc = tuned(tu->chunk_bytes, tu->window);
  AxTwoLevelInner in = {.algo = algo};
  float *got = mt_inputs(n, mt_rank, n + 1), *sum, *abs_sum;
  mpi_sums(got, n, &sum, &abs_sum);
  AxCommBytes bytes = {3, 5}; /* operations add to what is there */
  int rc = run_2l(l, t, &cc, &in, got, n, &bytes);
  const char *a = ax_allreduce_algo_name(algo);
  mt_expect(rc == AX_OK, "%s %s n=%zu: %s", l->name, a, n, ax_error_message());
  size_t bad = first_off(got, sum, abs_sum, n);
  mt_expect(bad == n, "%s %s n=%zu chunk %zu: element %zu is %.9g, MPI_Allreduce gives %.9g",
            l->name, a, n, tu->chunk_bytes, bad, bad < n ? got[bad] : 0.0,
            bad < n ? sum[bad] : 0.0);
  mt_expect(mt_replicas_agree(got, n), "%s %s n=%zu: the ranks' results differ", l->name, a, n);
  AxCommBytes want = intra_bytes(t, n), mid = middle_bytes(t, &cc, algo, n);
  want.sent += mid.sent + 3;
  want.received += mid.received + 5;
  mt_expect(bytes.sent == want.sent && bytes.received == want.received,
            "%s %s n=%zu: sent %llu received %llu, expected %llu and %llu", l->name, a, n,
            bytes.sent - 3, bytes.received - 5, want.sent - 3, want.received - 5);
  unsigned long long all[2], mine[2] = {bytes.sent - 3, bytes.received - 5};
  MPI_Allreduce(mine, all, 2, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  mt_expect(all[0] == all[1], "%s %s n=%zu: ranks sent %llu bytes but received %llu", l->name,
            a, n, all[0], all[1]);
  free(got);
  free(sum);
  free(abs_sum);
}

START_TEST(plain_middle_matches_mpi_allreduce) {
  const AxAllreduceAlgo algos[] = {AX_ALLREDUCE_RING, AX_ALLREDUCE_RHD};
  for (int i = 0; i < g_n_layouts; i++) {
    const Layout *l = &g_layouts[i];
    if (!l->usable) continue;
    AxTwoLevel t;
    open_layout(l, &t);
    size_t g = (size_t)t.g;
    const size_t counts[] = {0, 1, g - 1, g + 1, 1000, 10007};
    for (size_t u = 0; u < sizeof TUNINGS / sizeof TUNINGS[0]; u++)
      for (int a = 0; a < 2; a++)
        for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++)
          check_plain(l, &t, algos[a], counts[k], &TUNINGS[u]);
    ax_two_level_free(&t);
  }
  mt_assert_all_ok("two-level with plain middle steps against MPI_Allreduce");
}
END_TEST

/* ------------------------------------------------------------------ CaSync middle steps */

static double dot(const float *a, const float *b, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; i++) s += (double)a[i] * b[i];
  return s;
}

/* What identity through PS moves on cross: this rank pushes every other segment of its shard
 * and sends its own to every peer, and receives the converse. */
static unsigned long long ps_identity_bytes(const AxTwoLevel *t, size_t n) {
  size_t shard = ax_two_level_shard(t, n, NULL), own = segment(shard, t->n_nodes, t->node_index);
  return (unsigned long long)((shard - own) + (size_t)(t->n_nodes - 1) * own) * 4;
}

/* identity: within rounding of MPI's sum; through the ring, the plain-ring two-level result and
 * bytes bit for bit; through PS, the intra bytes plus PS's. */
static void check_identity(const Layout *l, const AxTwoLevel *t, const AxCodec *id,
                           AxCasyncAlgo algo, size_t n, const AxCommConfig *cc) {
  float *got = mt_inputs(n, mt_rank, n + 2), *ref = mt_copy(got, n), *sum, *abs_sum;
  mpi_sums(got, n, &sum, &abs_sum);
  AxCasyncState *st = NULL;
  ck_assert_int_eq(ax_casync_state_new(id, ax_two_level_shard(t, n, NULL), t->n_nodes, cc, &st),
                   AX_OK);
  AxTwoLevelInner plain = {.algo = AX_ALLREDUCE_RING},
                  in = {.codec = id, .casync_algo = algo, .state = st};
  AxCommBytes pb = {0, 0}, bytes = {0, 0};
  int rc = run_2l(l, t, cc, &plain, ref, n, &pb);
  if (rc == AX_OK) rc = run_2l(l, t, cc, &in, got, n, &bytes);
  const char *a = ax_casync_algo_name(algo);
  mt_expect(rc == AX_OK, "%s identity %s n=%zu: %s", l->name, a, n, ax_error_message());
  size_t bad = first_off(got, sum, abs_sum, n);
  mt_expect(bad == n, "%s identity %s n=%zu: element %zu is %.9g, MPI gives %.9g", l->name, a,
            n, bad, bad < n ? got[bad] : 0.0, bad < n ? sum[bad] : 0.0);
  mt_expect(mt_replicas_agree(got, n), "%s identity %s n=%zu: the results differ", l->name, a, n);
  AxCommBytes want = pb;
  if (algo != AX_CASYNC_PS) { /* the ring and the all-gather sum in the plain ring's order */
    bad = mt_first_difference(got, ref, n);
    mt_expect(bad == n, "%s identity %s n=%zu: element %zu is %.9g, the plain ring gives %.9g",
              l->name, a, n, bad, bad < n ? got[bad] : 0.0, bad < n ? ref[bad] : 0.0);
  }
  if (algo != AX_CASYNC_RING) { /* PS: its pushes and pulls; all-gather: the shard to each */
    unsigned long long middle = algo == AX_CASYNC_PS
                                    ? ps_identity_bytes(t, n)
                                    : (unsigned long long)ax_two_level_shard(t, n, NULL) *
                                          (unsigned long long)(t->n_nodes - 1) * 4;
    want = intra_bytes(t, n);
    want.sent += middle;
    want.received += middle;
  }
  mt_expect(bytes.sent == want.sent && bytes.received == want.received,
            "%s identity %s n=%zu: sent %llu received %llu, expected %llu and %llu", l->name, a,
            n, bytes.sent, bytes.received, want.sent, want.received);
  ax_casync_state_free(st);
  free(got);
  free(ref);
  free(sum);
  free(abs_sum);
}

/* onebit with error feedback, two steps on one state: identical replicas, finite, aligned with
 * the sum, every byte sent received. */
static void check_onebit(const Layout *l, const AxTwoLevel *t, const AxCodec *c,
                         AxCasyncAlgo algo, size_t n, const AxCommConfig *cc) {
  AxCasyncState *st = NULL;
  ck_assert_int_eq(ax_casync_state_new(c, ax_two_level_shard(t, n, NULL), t->n_nodes, cc, &st),
                   AX_OK);
  const char *a = ax_casync_algo_name(algo);
  for (uint64_t step = 0; step < 2; step++) {
    float *got = mt_inputs(n, mt_rank, n + 3 + step), *sum, *abs_sum;
    mpi_sums(got, n, &sum, &abs_sum);
    AxTwoLevelInner in = {.codec = c, .casync_algo = algo, .state = st,
                          .ctx = {.seed = 42, .step = step, .range = 7}};
    AxCommBytes bytes = {0, 0};
    int rc = run_2l(l, t, cc, &in, got, n, &bytes);
    mt_expect(rc == AX_OK, "%s onebit %s n=%zu: %s", l->name, a, n, ax_error_message());
    mt_expect(mt_replicas_agree(got, n), "%s onebit %s n=%zu step %d: the results differ", l->name,
              a, n, (int)step);
    size_t bad = n;
    for (size_t i = 0; i < n && bad == n; i++)
      if (!isfinite(got[i])) bad = i;
    mt_expect(bad == n, "%s onebit %s n=%zu: element %zu is not finite", l->name, a, n, bad);
    if (n >= 1000)
      mt_expect(dot(got, sum, n) > 0, "%s onebit %s n=%zu step %d: not aligned with the sum",
                l->name, a, n, (int)step);
    unsigned long long all[2], mine[2] = {bytes.sent, bytes.received};
    MPI_Allreduce(mine, all, 2, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    mt_expect(all[0] == all[1], "%s onebit %s n=%zu: ranks sent %llu bytes, received %llu",
              l->name, a, n, all[0], all[1]);
    free(got);
    free(sum);
    free(abs_sum);
  }
  ax_casync_state_free(st);
}

START_TEST(casync_middle_steps) {
  AxCodec *id = codec("identity"), *ef = codec("onebit:ef=1");
  const AxCasyncAlgo algos[] = {AX_CASYNC_RING, AX_CASYNC_PS, AX_CASYNC_AG};
  const AxCommConfig ccs[] = {tuned(0, 0), tuned(4096, 2)};
  for (int i = 0; i < g_n_layouts; i++) {
    const Layout *l = &g_layouts[i];
    if (!l->usable) continue;
    AxTwoLevel t;
    open_layout(l, &t);
    size_t g = (size_t)t.g;
    const size_t counts[] = {0, 1, g + 1, 1003, 10007};
    for (int c = 0; c < 2; c++)
      for (size_t a = 0; a < sizeof algos / sizeof algos[0]; a++)
        for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
          check_identity(l, &t, id, algos[a], counts[k], &ccs[c]);
          check_onebit(l, &t, ef, algos[a], counts[k], &ccs[c]);
        }
    ax_two_level_free(&t);
  }
  ax_codec_free(id);
  ax_codec_free(ef);
  mt_assert_all_ok("two-level with CaSync middle steps");
}
END_TEST

/* ------------------------------------------------------------------ in flight together */

enum { N_FLIGHT = 5 };
static const size_t FLIGHT_N[N_FLIGHT] = {40009, 777, 20011, 5003, 3};

/* Operation i of the set: two-level ring, rhd, onebit PS, a plain ring on t->node (started
 * after the others: its tag comes after theirs) and a tiny two-level ring. */
static int start_flight(int i, AxColl **op, const AxTwoLevel *t, const AxCommConfig *cc,
                        const AxCodec *ef, AxCasyncState *st, float *x) {
  AxTwoLevelInner in = {.algo = i == 1 ? AX_ALLREDUCE_RHD : AX_ALLREDUCE_RING};
  if (i == 2) in = (AxTwoLevelInner){.codec = ef, .casync_algo = AX_CASYNC_PS, .state = st};
  if (i == 3)
    return ax_allreduce_start(op, t->node, cc, x, FLIGHT_N[i], AX_COMM_F32, AX_ALLREDUCE_RING,
                              NULL);
  return ax_two_level_allreduce_start(op, t, cc, &in, x, FLIGHT_N[i], NULL);
}

static AxCasyncState *flight_state(const AxTwoLevel *t, const AxCodec *ef,
                                   const AxCommConfig *cc) {
  AxCasyncState *st = NULL;
  ck_assert_int_eq(
      ax_casync_state_new(ef, ax_two_level_shard(t, FLIGHT_N[2], NULL), t->n_nodes, cc, &st),
      AX_OK);
  return st;
}

/* All in flight, driven by ax_coll_test round-robin: odd ranks visit them in reverse order,
 * so their steps start at different times on different ranks. */
static int drive_together(AxColl **ops) {
  int rc = AX_OK, pending = N_FLIGHT;
  while (rc == AX_OK && pending > 0) {
    pending = 0;
    for (int j = 0; j < N_FLIGHT && rc == AX_OK; j++) {
      int i = mt_rank % 2 ? N_FLIGHT - 1 - j : j, done = 0;
      rc = ax_coll_test(ops[i], &done);
      pending += !done;
    }
    if (pending) ax_coll_pause(ops[0], 0);
  }
  for (int i = 0; i < N_FLIGHT && rc == AX_OK; i++) rc = ax_coll_wait(ops[i]); /* done */
  return rc;
}

static void check_in_flight(const Layout *l, const AxTwoLevel *t, const AxCodec *ef) {
  AxCommConfig cc = tuned(4096, 2);
  float *x[N_FLIGHT], *ref[N_FLIGHT];
  for (int i = 0; i < N_FLIGHT; i++) {
    x[i] = mt_inputs(FLIGHT_N[i], mt_rank, 30 + (uint64_t)i);
    ref[i] = mt_copy(x[i], FLIGHT_N[i]);
  }
  AxCasyncState *st_one = flight_state(t, ef, &cc), *st_all = flight_state(t, ef, &cc);
  AxColl *ops[N_FLIGHT] = {NULL};
  int rc = AX_OK;
  mt_run_begin("%s: one at a time", l->name);
  for (int i = 0; i < N_FLIGHT && rc == AX_OK; i++) {
    rc = start_flight(i, &ops[i], t, &cc, ef, st_one, ref[i]);
    if (rc == AX_OK) rc = ax_coll_wait(ops[i]);
    ax_coll_free(ops[i]);
    ops[i] = NULL;
  }
  mt_run_end();
  mt_expect(rc == AX_OK, "%s one at a time: %s", l->name, ax_error_message());
  mt_run_begin("%s: %d operations in flight", l->name, N_FLIGHT);
  for (int i = 0; i < N_FLIGHT && rc == AX_OK; i++)
    rc = start_flight(i, &ops[i], t, &cc, ef, st_all, x[i]);
  if (rc == AX_OK) rc = drive_together(ops);
  mt_run_end();
  mt_expect(rc == AX_OK, "%s in flight: %s", l->name, ax_error_message());
  for (int i = 0; i < N_FLIGHT; i++) {
    ax_coll_free(ops[i]);
    size_t bad = mt_first_difference(x[i], ref[i], FLIGHT_N[i]);
    mt_expect(bad == FLIGHT_N[i], "%s: operation %d in flight with others: element %zu differs",
              l->name, i, bad);
    free(x[i]);
    free(ref[i]);
  }
  ax_casync_state_free(st_one);
  ax_casync_state_free(st_all);
}

START_TEST(operations_in_flight_together) {
  AxCodec *ef = codec("onebit:ef=1");
  for (int i = 0; i < g_n_layouts; i++) {
    if (!g_layouts[i].usable) continue;
    AxTwoLevel t;
    open_layout(&g_layouts[i], &t);
    check_in_flight(&g_layouts[i], &t, ef);
    ax_two_level_free(&t);
  }
  ax_codec_free(ef);
  mt_assert_all_ok("two-level operations in flight together");
}
END_TEST

/* ------------------------------------------------------------------ arguments */

/* The refusals of a usable layout; afterwards an operation still runs (no tag was taken). */
static void check_usable_refusals(const Layout *l) {
  AxTwoLevel t;
  open_layout(l, &t);
  float x[64];
  for (int i = 0; i < 64; i++) x[i] = 0.5f * (float)i - 7.0f;
  AxColl *op = NULL;
  tu_expect_error(ax_two_level_allreduce_start(&op, &t, &g_cc, NULL, NULL, 64, NULL),
                  "no buffer");
  AxTwoLevelInner bad = {.algo = (AxAllreduceAlgo)9};
  tu_expect_error(ax_two_level_allreduce(&t, &g_cc, &bad, x, 64, NULL), "unknown all-reduce");
  /* a state laid out for 64 values used for 8: every rank's shard differs, so all refuse */
  AxCodec *c = codec("onebit");
  AxCasyncState *st = NULL;
  ck_assert_int_eq(ax_casync_state_new(c, ax_two_level_shard(&t, 64, NULL), t.n_nodes, &g_cc, &st),
                   AX_OK);
  AxTwoLevelInner in = {.codec = c, .casync_algo = AX_CASYNC_RING, .state = st};
  tu_expect_error(ax_two_level_allreduce_start(&op, &t, &g_cc, &in, x, 8, NULL), "middle step");
  ck_assert_ptr_null(op);
  in.state = NULL;
  tu_expect_error(ax_two_level_allreduce(&t, &g_cc, &in, x, 64, NULL), "no state");
  in.state = st;
  int rc = ax_two_level_allreduce(&t, &g_cc, &in, x, 64, NULL);
  mt_expect(rc == AX_OK, "%s: after the refusals: %s", l->name, ax_error_message());
  rc = ax_two_level_allreduce(&t, &g_cc, NULL, x, 64, NULL); /* inner NULL: plain, auto */
  mt_expect(rc == AX_OK && mt_replicas_agree(x, 64), "%s: inner NULL: %s", l->name,
            ax_error_message());
  ax_casync_state_free(st);
  ax_codec_free(c);
  ax_two_level_free(&t);
}

START_TEST(bad_arguments_and_unusable_layouts) {
  AxTwoLevel t;
  int node_of[MAX_RANKS];
  for (int r = 0; r < mt_size; r++) node_of[r] = r / 2;
  tu_expect_error(ax_two_level_new(g_comm, NULL, &t), "node_of_rank is NULL");
  ck_assert(t.node == MPI_COMM_NULL && !t.usable);
  if (mt_size > 1) { /* rank 0 alone puts rank 1 on a node of its own */
    if (mt_rank == 0) node_of[1] = 12345;
    tu_expect_error(ax_two_level_new(g_comm, node_of, &t), "different node layouts");
    ck_assert(t.node == MPI_COMM_NULL && !t.usable);
  }
  float x[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  AxColl *op = NULL;
  tu_expect_error(ax_two_level_allreduce_start(&op, NULL, &g_cc, NULL, x, 8, NULL), "NULL");
  for (int i = 0; i < g_n_layouts; i++) {
    if (g_layouts[i].usable) continue;
    open_layout(&g_layouts[i], &t);
    op = (AxColl *)&t; /* reset by the refusal */
    tu_expect_error(ax_two_level_allreduce_start(&op, &t, &g_cc, NULL, x, 8, NULL), "not usable");
    ck_assert_ptr_null(op);
    ax_two_level_free(&t);
  }
  ax_two_level_free(NULL);
  for (int i = 0; i < g_n_layouts; i++)
    if (g_layouts[i].usable) {
      check_usable_refusals(&g_layouts[i]);
      break;
    }
  mt_assert_all_ok("two-level bad arguments");
}
END_TEST

static Suite *two_level_suite(void) {
  Suite *s = suite_create("two_level");
  TCase *tc = tu_tcase(s, "two_level", 600);
  tcase_add_test(tc, bad_arguments_and_unusable_layouts);
  tcase_add_test(tc, layouts_make_the_right_communicators);
  tcase_add_test(tc, plain_middle_matches_mpi_allreduce);
  tcase_add_test(tc, casync_middle_steps);
  tcase_add_test(tc, operations_in_flight_together);
  return s;
}

int main(int argc, char **argv) {
  mt_init(&argc, &argv);
  if (mt_size > MAX_RANKS) {
    if (mt_rank == 0) fprintf(stderr, "mpitest_two_level: at most %d ranks\n", MAX_RANKS);
    return mt_finish(1);
  }
  g_cc = mt_comm_config();
  MPI_Comm_dup(MPI_COMM_WORLD, &g_comm);
  make_layouts();
  print_layouts();
  int rc = mt_run_watched(two_level_suite(), RUN_TIMEOUT_S);
  MPI_Comm_free(&g_comm);
  return mt_finish(rc);
}
