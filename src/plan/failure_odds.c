/* failure_odds.c — Gemini's checkpoint placements (group and ring, wang-thesis §6.4) and the
 * exact odds of recovering from CPU memory after k simultaneous node failures; see
 * failure_odds.h. */
#include "failure_odds.h"

#include <float.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/error.h"

/* The counts reach C(4096, 2048) ~ 1e1232: a floating type with a 15-bit exponent holds them.
 * long double is one on x86 (80-bit) and aarch64 (quad); on POWER it is double-double, with
 * double's range, so the counting uses _Float128 there. */
#if LDBL_MAX_EXP >= 16384
typedef long double OddsReal;
#elif defined(__FLT128_MAX__)
typedef _Float128 OddsReal;
#else
#error "failure_odds.c needs long double or _Float128 with a 15-bit exponent"
#endif

const char *ax_placement_name(AxPlacement p) { return p == AX_PLACE_RING ? "ring" : "group"; }

static int check_placement(int N, int m, AxPlacement p) {
  if (p != AX_PLACE_GROUP && p != AX_PLACE_RING) return AX_FAIL("unknown placement %d", (int)p);
  if (N < 1) return AX_FAIL("%d nodes: need at least 1", N);
  if (m < 1) return AX_FAIL("%d copies of each shard: need at least 1 (the node's own)", m);
  if (m > N)
    return AX_FAIL("%d copies of each shard need %d distinct nodes, but there are %d", m, m, N);
  return AX_OK;
}

static int check_counting(int N, int m, AxPlacement p) {
  AX_TRY(check_placement(N, m, p));
  if (N > AX_FAILURE_ODDS_MAX_NODES)
    return AX_FAIL("%d nodes: the failure odds are counted for up to %d", N,
                   AX_FAILURE_ODDS_MAX_NODES);
  return AX_OK;
}

static int check_failed(int N, int k) {
  if (k < 0 || k > N) return AX_FAIL("%d failed nodes of %d: expected 0 to %d", k, N, N);
  return AX_OK;
}

/* Ring: one block of N. Group: blocks of m, except that the last group also takes the N mod m
 * leftover nodes (Algorithm 6.1) and is then a ring of m + N mod m. */
static void block_of(int N, int m, AxPlacement p, int node, int *first, int *size) {
  int last = (N / m - 1) * m; /* the last group's first node */
  if (p == AX_PLACE_RING) {
    *first = 0;
    *size = N;
  } else if (node >= last) {
    *first = last;
    *size = N - last;
  } else {
    *first = node / m * m;
    *size = m;
  }
}

int ax_replica_block(int N, int m, AxPlacement p, int node, int *first, int *size) {
  AX_TRY(check_placement(N, m, p));
  if (node < 0 || node >= N) return AX_FAIL("node %d is not one of 0..%d", node, N - 1);
  block_of(N, m, p, node, first, size);
  return AX_OK;
}

int ax_replica_holders(int N, int m, AxPlacement p, int node, int *holders) {
  int first, size;
  AX_TRY(ax_replica_block(N, m, p, node, &first, &size));
  for (int t = 0; t < m; t++) holders[t] = first + (node - first + t) % size;
  return AX_OK;
}

/* C(n, r): exact while C(n, i) * (n - i) stays below 2^64 (2^113 with _Float128). */
static OddsReal binomial(int n, int r) {
  if (r < 0 || r > n) return 0;
  if (r > n - r) r = n - r;
  OddsReal c = 1;
  for (int i = 0; i < r; i++) c = c * (n - i) / (i + 1);
  return c;
}

/* u[s] = v[s] + v[s-1] + ... + v[s-m+1] for s < len (v times 1 + x + ... + x^(m-1)), by
 * additions only, O(len log m): from m's top bit down, B_1 = 1, B_2a = B_a (1 + x^a) and
 * B_2a+1 = B_2a + x^2a. */
static void window_sums(const OddsReal *v, OddsReal *u, int len, int m) {
  int top = 0;
  while (m >> (top + 1)) top++;
  memcpy(u, v, (size_t)len * sizeof *u);
  int a = 1;
  for (int b = top - 1; b >= 0; b--) {
    for (int s = len - 1; s >= a; s--) u[s] += u[s - a];
    a *= 2;
    if ((m >> b) & 1) {
      for (int s = a; s < len; s++) u[s] += v[s - a];
      a++;
    }
  }
}

/* g[j], j = 0..n: the j-subsets of a ring of n nodes (each shard on m consecutive nodes) that
 * leave every shard a copy: no m cyclically consecutive failed nodes. With z = n - j > 0
 * survivors, the failed nodes fill the z gaps that follow the survivors, each gap below m:
 * W(z, j) compositions of j into z parts in 0..m-1, and each subset arises from z of the n
 * starting points, so g[j] = n W(z, j) / z. Rows W(z, .) by window sums; j = n loses all. */
static int ring_poly(int n, int m, OddsReal *g) {
  OddsReal *w = ax_calloc((size_t)n + 1, sizeof *w);
  OddsReal *next = ax_calloc((size_t)n + 1, sizeof *next);
  if (!w || !next) {
    free(w);
    free(next);
    return AX_ERR;
  }
  w[0] = 1; /* W(0, 0) */
  g[n] = 0;
  for (int z = 1; z <= n; z++) {
    window_sums(w, next, n - z + 1, m);
    g[n - z] = next[n - z] * n / z;
    OddsReal *t = w;
    w = next;
    next = t;
  }
  free(w);
  free(next);
  return AX_OK;
}

/* a[0..da] times b[0..db] into a (room for da + db + 1), through tmp; returns da + db. */
static int poly_mul(OddsReal *a, int da, const OddsReal *b, int db, OddsReal *tmp) {
  for (int i = 0; i <= da + db; i++) tmp[i] = 0;
  for (int i = 0; i <= da; i++)
    for (int j = 0; j <= db; j++) tmp[i + j] += a[i] * b[j];
  memcpy(a, tmp, (size_t)(da + db + 1) * sizeof *a);
  return da + db;
}

/* good[k], k = 0..N: the recoverable k-subsets, the product of the blocks' polynomials (a
 * group placement has blocks of at most two sizes, each size's polynomial made once). */
static int recoverable_poly(int N, int m, AxPlacement p, OddsReal *good) {
  OddsReal *block = ax_calloc((size_t)N + 1, sizeof *block);
  OddsReal *tmp = ax_calloc((size_t)N + 1, sizeof *tmp);
  int rc = block && tmp ? AX_OK : AX_ERR, deg = 0, made = 0;
  good[0] = 1;
  for (int first = 0, size = 0; first < N && rc == AX_OK; first += size) {
    int at;
    block_of(N, m, p, first, &at, &size);
    if (size != made) rc = ring_poly(size, m, block);
    made = size;
    if (rc == AX_OK) deg = poly_mul(good, deg, block, size, tmp);
  }
  free(block);
  free(tmp);
  return rc;
}

/* The counts for every k (N + 1 entries, free() them). */
static int counts_of(int N, int m, AxPlacement p, OddsReal **good) {
  AX_TRY(check_counting(N, m, p));
  *good = ax_calloc((size_t)N + 1, sizeof **good);
  if (!*good) return AX_ERR;
  if (recoverable_poly(N, m, p, *good) == AX_OK) return AX_OK;
  free(*good);
  return AX_ERR;
}

int ax_failure_odds_all(int N, int m, AxPlacement p, double *prob) {
  OddsReal *good;
  AX_TRY(counts_of(N, m, p, &good));
  for (int k = 0; k <= N; k++) prob[k] = (double)(good[k] / binomial(N, k));
  free(good);
  return AX_OK;
}

static int count_at(int N, int m, int k, AxPlacement p, OddsReal *count) {
  OddsReal *good;
  AX_TRY(check_failed(N, k));
  AX_TRY(counts_of(N, m, p, &good));
  *count = good[k];
  free(good);
  return AX_OK;
}

/* Exact for N <= 62; beyond long double's range (C(N, k) > 1e308 on POWER) the count is inf,
 * while ax_failure_odds divides in the counting type and stays finite. */
int ax_recoverable_sets(int N, int m, int k, AxPlacement p, long double *count) {
  OddsReal c;
  AX_TRY(count_at(N, m, k, p, &c));
  *count = (long double)c;
  return AX_OK;
}

int ax_failure_odds(int N, int m, int k, AxPlacement p, double *prob) {
  OddsReal c;
  AX_TRY(count_at(N, m, k, p, &c));
  *prob = (double)(c / binomial(N, k));
  return AX_OK;
}

/* Bit i of holders[n]: node i holds a copy of node n's shard. */
static int holder_masks(int N, int m, AxPlacement p, uint32_t *masks) {
  int holders[AX_FAILURE_ENUM_MAX_NODES];
  for (int n = 0; n < N; n++) {
    AX_TRY(ax_replica_holders(N, m, p, n, holders));
    masks[n] = 0;
    for (int t = 0; t < m; t++) masks[n] |= 1u << holders[t];
  }
  return AX_OK;
}

static int survives(const uint32_t *masks, int N, uint32_t failed) {
  for (int n = 0; n < N; n++)
    if (!(masks[n] & ~failed)) return 0;
  return 1;
}

int ax_failure_odds_enumerate(int N, int m, int k, AxPlacement p, unsigned long long *count,
                              double *prob) {
  uint32_t masks[AX_FAILURE_ENUM_MAX_NODES];
  AX_TRY(check_placement(N, m, p));
  AX_TRY(check_failed(N, k));
  if (N > AX_FAILURE_ENUM_MAX_NODES)
    return AX_FAIL("%d nodes: enumeration goes up to %d", N, AX_FAILURE_ENUM_MAX_NODES);
  AX_TRY(holder_masks(N, m, p, masks));
  unsigned long long good = 0, all = 0;
  /* every k-bit subset of N bits in increasing order (Gosper's hack) */
  for (uint32_t set = (1u << k) - 1; set < (1u << N);) {
    good += (unsigned long long)survives(masks, N, set);
    all++;
    if (k == 0) break;
    uint32_t low = set & -set, ripple = set + low;
    set = (((ripple ^ set) >> 2) / low) | ripple;
  }
  *count = good;
  if (prob) *prob = (double)good / (double)all;
  return AX_OK;
}

int ax_failure_odds_group_formula(int N, int m, int k, double *prob) {
  AX_TRY(check_counting(N, m, AX_PLACE_GROUP));
  AX_TRY(check_failed(N, k));
  if (N % m)
    return AX_FAIL("the group closed form needs m to divide N (%d nodes, %d copies)", N, m);
  int groups = N / m;
  if (k > groups * (m - 1)) { /* some group has all m nodes failed */
    *prob = 0;
    return AX_OK;
  }
  OddsReal lost = 0, magnitude = 0;
  for (int j = 1; j <= groups && j * m <= k; j++) {
    OddsReal term = binomial(groups, j) * binomial(N - j * m, k - j * m);
    lost += j % 2 ? term : -term;
    magnitude += term;
  }
  OddsReal total = binomial(N, k), kept = total - lost;
  if (magnitude > kept * (1 << 24))
    return AX_FAIL("the inclusion-exclusion sum for %d nodes, %d copies, %d failed cancels "
                   "beyond the counting type's precision (ax_failure_odds counts it exactly)",
                   N, m, k);
  *prob = (double)(kept / total);
  return AX_OK;
}
