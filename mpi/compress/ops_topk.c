/* ops_topk.c — sort/select: the q-th largest of an array (deterministic quickselect), a
 * threshold estimated from a seeded sample (DGC's and GradDrop's), and the exact top-k by
 * magnitude built on both: the sampled threshold picks a few more candidates than k in one
 * read, and an exact selection among the candidates keeps k (ties to the lower index). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"
#include "src/core/error.h"

/* |x| with NaN as -1, below every magnitude. */
static inline float mag(float x) { return x == x ? fabsf(x) : -1.0f; }

static int desc(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x < y) - (x > y);
}

static void swapf(float *v, size_t i, size_t j) {
  float t = v[i];
  v[i] = v[j];
  v[j] = t;
}

static float median3(float a, float b, float c) {
  if (a > b) { float t = a; a = b; b = t; }
  if (b > c) b = c;
  return a > b ? a : b;
}

/* Three-way partition of v[lo, hi) around p, descending: [lo, *g) > p, [*g, *e) == p, the
 * rest < p. */
static void partition3(float *v, size_t lo, size_t hi, float p, size_t *g, size_t *e) {
  size_t a = lo, i = lo, b = hi;
  while (i < b) {
    if (v[i] > p) swapf(v, a++, i++);
    else if (v[i] < p) swapf(v, i, --b);
    else i++;
  }
  *g = a;
  *e = b;
}

/* NaN-free v here (callers map NaN to -1 through mag or clean it first). */
static float select_desc(float *v, size_t n, size_t q) {
  size_t lo = 0, hi = n, rounds = 0;
  while (hi - lo > 1) {
    if (++rounds > 64) { /* adversarial pivots: finish by sorting what is left */
      qsort(v + lo, hi - lo, sizeof *v, desc);
      return v[q];
    }
    float p = median3(v[lo], v[lo + (hi - lo) / 2], v[hi - 1]);
    size_t g, e;
    partition3(v, lo, hi, p, &g, &e);
    if (q < g) hi = g;
    else if (q < e) return p;
    else lo = e;
  }
  return v[lo];
}

float ax_op_nth_largest(float *v, size_t n, size_t q) {
  for (size_t i = 0; i < n; i++)
    if (v[i] != v[i]) v[i] = -INFINITY;
  return select_desc(v, n, q);
}

float ax_op_sample_threshold(const float *x, size_t n, size_t k, AxCrng r, size_t s,
                             double slack, float *scratch) {
  if (s >= n) {
    for (size_t i = 0; i < n; i++) scratch[i] = mag(x[i]);
    return select_desc(scratch, n, k - 1);
  }
  for (size_t j = 0; j < s; j++) scratch[j] = mag(x[ax_crng_below(r, j, n)]);
  double e = (double)s * (double)k / (double)n, q = ceil(e + slack * sqrt(e));
  size_t qi = q < 1 ? 0 : q > (double)s ? s - 1 : (size_t)q - 1;
  return select_desc(scratch, s, qi);
}

/* ---------------------------------------------------------------- exact top-k */

typedef struct {
  uint32_t *idx; /* candidates, ascending */
  size_t c, cap;
  float *m, *work;
} Cand;

/* The indices whose |x| reaches thr (one read when they fit the buffer, else a second). */
static int select_into(const float *x, size_t n, float thr, Cand *cd) {
  cd->c = ax_op_select_ge(x, n, thr, cd->idx, cd->cap);
  if (cd->c <= cd->cap) return AX_OK;
  free(cd->idx);
  cd->cap = cd->c;
  cd->idx = ax_malloc(cd->cap * sizeof *cd->idx);
  if (!cd->idx) return AX_ERR;
  ax_op_select_ge(x, n, thr, cd->idx, cd->cap);
  return AX_OK;
}

/* At least k candidates: the indices reaching a threshold sampled for k, 2k, 4k, ... values,
 * and when even the smallest fails (NaN), every index. */
static int find_candidates(const float *x, size_t n, size_t k, AxCrng r, Cand *cd) {
  size_t s = 8192 + n / 256;
  if (s > n) s = n;
  float *sample = ax_malloc(s * sizeof *sample);
  if (!sample) return AX_ERR;
  int rc = AX_OK;
  cd->c = 0;
  for (size_t want = k; rc == AX_OK && cd->c < k && want <= n;
       want = want > n / 2 && want < n ? n : 2 * want) {
    float t = ax_op_sample_threshold(x, n, want, r, s, 3.0, sample);
    rc = select_into(x, n, t, cd);
  }
  free(sample);
  if (rc != AX_OK || cd->c >= k) return rc;
  free(cd->idx);
  cd->idx = ax_malloc(n * sizeof *cd->idx);
  if (!cd->idx) return AX_ERR;
  for (size_t i = 0; i < n; i++) cd->idx[i] = (uint32_t)i;
  cd->c = cd->cap = n;
  return AX_OK;
}

/* The k largest candidates, ties to the lower index, in ascending order. */
static int keep_k(const float *x, Cand *cd, size_t k, uint32_t *idx) {
  cd->m = ax_malloc(cd->c * 2 * sizeof *cd->m);
  if (!cd->m) return AX_ERR;
  cd->work = cd->m + cd->c;
  for (size_t j = 0; j < cd->c; j++) cd->m[j] = cd->work[j] = mag(x[cd->idx[j]]);
  float t = select_desc(cd->work, cd->c, k - 1);
  size_t above = 0;
  for (size_t j = 0; j < cd->c; j++) above += cd->m[j] > t;
  size_t ties = k - above, out = 0;
  for (size_t j = 0; j < cd->c && out < k; j++) {
    int take = cd->m[j] > t || (cd->m[j] == t && ties > 0);
    if (take && cd->m[j] == t) ties--;
    if (take) idx[out++] = cd->idx[j];
  }
  return AX_OK;
}

int ax_op_topk(const float *x, size_t n, size_t k, AxCrng r, uint32_t *idx) {
  if (k == 0) return AX_OK;
  if (k >= n) {
    for (size_t i = 0; i < n; i++) idx[i] = (uint32_t)i;
    return AX_OK;
  }
  Cand cd = {NULL, 0, 2 * k + 1024, NULL, NULL};
  if (cd.cap > n) cd.cap = n;
  cd.idx = ax_malloc(cd.cap * sizeof *cd.idx);
  int rc = cd.idx ? find_candidates(x, n, k, r, &cd) : AX_ERR;
  if (rc == AX_OK) rc = keep_k(x, &cd, k, idx);
  free(cd.idx);
  free(cd.m);
  return rc;
}
