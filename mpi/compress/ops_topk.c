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

/* Memory of one top-k: the sample, the candidate indices and their magnitudes twice. */
typedef struct {
  float *sample;
  size_t s;
  uint32_t *idx; /* candidates, ascending */
  size_t c, cap;
  float *m, *work; /* cap floats each */
  void *owned;     /* an allocation replacing the caller's scratch (too small, or too many
                      candidates), freed at the end */
} Cand;

static size_t sample_size(size_t n) {
  size_t s = 8192 + n / 256;
  return s < n ? s : n;
}

static size_t first_cap(size_t n, size_t k) {
  size_t cap = 2 * k + 1024;
  return cap < n ? cap : n;
}

static size_t bytes_for(size_t s, size_t cap) {
  return s * sizeof(float) + cap * (sizeof(uint32_t) + 2 * sizeof(float));
}

size_t ax_op_topk_scratch(size_t n, size_t k) {
  return k == 0 || k >= n ? 0 : bytes_for(sample_size(n), first_cap(n, k));
}

/* Lays out s sample floats and cap candidates in mem (bytes_for(s, cap) bytes). */
static void lay_out(Cand *cd, void *mem, size_t s, size_t cap) {
  cd->sample = mem;
  cd->s = s;
  cd->m = cd->sample + s;
  cd->work = cd->m + cap;
  cd->idx = (uint32_t *)(cd->work + cap);
  cd->cap = cap;
}

/* Room for cap candidates (keeping the sample's size): a fresh allocation. */
static int grow(Cand *cd, size_t cap) {
  void *mem = ax_malloc(bytes_for(cd->s, cap));
  if (!mem) return AX_ERR;
  free(cd->owned);
  cd->owned = mem;
  lay_out(cd, mem, cd->s, cap);
  return AX_OK;
}

/* The indices whose |x| reaches thr (one read when they fit, else a second). */
static int select_into(const float *x, size_t n, float thr, Cand *cd) {
  cd->c = ax_op_select_ge(x, n, thr, cd->idx, cd->cap);
  if (cd->c <= cd->cap) return AX_OK;
  AX_TRY(grow(cd, cd->c));
  ax_op_select_ge(x, n, thr, cd->idx, cd->cap);
  return AX_OK;
}

/* At least k candidates: the indices reaching a threshold sampled for k, 2k, 4k, ... values,
 * and when even the smallest fails (NaN), every index. */
static int find_candidates(const float *x, size_t n, size_t k, AxCrng r, Cand *cd) {
  cd->c = 0;
  for (size_t want = k; cd->c < k && want <= n;
       want = want > n / 2 && want < n ? n : 2 * want) {
    float t = ax_op_sample_threshold(x, n, want, r, cd->s, 3.0, cd->sample);
    AX_TRY(select_into(x, n, t, cd));
  }
  if (cd->c >= k) return AX_OK;
  if (cd->cap < n) AX_TRY(grow(cd, n));
  for (size_t i = 0; i < n; i++) cd->idx[i] = (uint32_t)i;
  cd->c = n;
  return AX_OK;
}

/* The k largest candidates, ties to the lower index, in ascending order. */
static void keep_k(const float *x, Cand *cd, size_t k, uint32_t *idx) {
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
}

int ax_op_topk(const float *x, size_t n, size_t k, AxCrng r, uint32_t *idx, void *scratch,
               size_t scratch_bytes) {
  if (k == 0) return AX_OK;
  if (k >= n) {
    for (size_t i = 0; i < n; i++) idx[i] = (uint32_t)i;
    return AX_OK;
  }
  Cand cd = {0};
  size_t need = ax_op_topk_scratch(n, k);
  if (scratch && scratch_bytes >= need) lay_out(&cd, scratch, sample_size(n), first_cap(n, k));
  else if (!(cd.owned = ax_malloc(need))) return AX_ERR;
  else lay_out(&cd, cd.owned, sample_size(n), first_cap(n, k));
  int rc = find_candidates(x, n, k, r, &cd);
  if (rc == AX_OK) keep_k(x, &cd, k, idx);
  free(cd.owned);
  return rc;
}
