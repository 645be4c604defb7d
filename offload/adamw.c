/* adamw.c — scalar and vectorized AdamW; see adamw.h. */
#include "adamw.h"

#include <math.h>
#include <stdint.h>

#include "src/core/simd.h"

const AxAdamWHyper *ax_adamw_settings(const AxAdamWHyper *h, const AxParamSegment *s) {
  return s->codec && h->codec ? h->codec : h;
}

/* Appends [a, b) of segment s with codec flag `codec`. */
static int append_piece(AxParamSegment *out, int k, int cap, const AxParamSegment *s, size_t a,
                        size_t b, int codec) {
  if (out && k < cap) out[k] = (AxParamSegment){a, b - a, s->decay, codec};
  return k + 1;
}

int ax_param_segments_mark(const AxParamSegment *segs, int n, const AxParamSpan *spans,
                           int n_spans, AxParamSegment *out, int cap) {
  int k = 0, sp = 0;
  for (int i = 0; i < n; i++) {
    size_t at = segs[i].offset, end = at + segs[i].count;
    while (at < end) {
      while (sp < n_spans && spans[sp].hi <= at) sp++;
      size_t lo = sp < n_spans ? spans[sp].lo : end;
      int inside = lo <= at; /* in span sp, or plain up to it */
      size_t b = inside ? spans[sp].hi : lo;
      if (b > end) b = end;
      k = append_piece(out, k, cap, &segs[i], at, b, inside);
      at = b;
    }
  }
  return k;
}

AxAdamWCoef ax_adamw_coef(const AxAdamWHyper *h, int decay) {
  AxAdamWCoef c;
  c.lr = h->lr;
  c.b1 = h->beta1;
  c.b2 = h->beta2;
  c.one_b1 = 1.0f - h->beta1;
  c.one_b2 = 1.0f - h->beta2;
  c.c1 = (float)(1.0 / (1.0 - pow(h->beta1, h->step)));
  c.c2 = (float)(1.0 / (1.0 - pow(h->beta2, h->v_frozen_at > 0 ? h->v_frozen_at : h->step)));
  if (h->v_frozen_at > 0) c.b2 = 1.0f, c.one_b2 = 0.0f;
  c.eps = h->eps;
  c.wd = decay ? h->weight_decay : 0.0f;
  c.gs = h->grad_scale;
  return c;
}

void ax_adamw_ref(float *p, const float *g, float *m, float *v, size_t n, const AxAdamWHyper *h,
                  int decay) {
  int frozen = h->v_frozen_at > 0;
  double b1t = pow(h->beta1, h->step), b2t = pow(h->beta2, frozen ? h->v_frozen_at : h->step);
  for (size_t i = 0; i < n; i++) {
    double gi = (double)g[i] * h->grad_scale;
    double mi = h->beta1 * (double)m[i] + (1.0 - h->beta1) * gi;
    double vi = frozen ? (double)v[i] : h->beta2 * (double)v[i] + (1.0 - h->beta2) * gi * gi;
    double mhat = mi / (1.0 - b1t), vhat = vi / (1.0 - b2t);
    double wd = decay ? h->weight_decay : 0.0;
    p[i] = (float)(p[i] - h->lr * (mhat / (sqrt(vhat) + h->eps) + wd * p[i]));
    m[i] = (float)mi;
    v[i] = (float)vi;
  }
}

/* The scalar element. Where the AVX2 body exists, the tail uses the very same fused
 * operations, so results do not depend on where a range starts or is cut (chunking,
 * threads). Where the CPU has a fused multiply-add (__FP_FAST_FMAF: aarch64, POWER, x86 with
 * FMA) the scalar path fuses too, and so computes the AVX2 path's values bit for bit (fmaf,
 * sqrtf and the division are all correctly rounded); the compiler vectorizes it (NEON, VSX). */
#if defined(AX_SIMD_AVX2) || defined(__FP_FAST_FMAF)
#define MULADD(a, b, c) fmaf(a, b, c)
#else
#define MULADD(a, b, c) ((a) * (b) + (c))
#endif
/* One element from p, m, v into po, mo, vo (the same arrays for the in-place update), and into
 * keep too when it is not NULL. */
static inline void scalar_one(float *po, float *mo, float *vo, float *keep, const float *p,
                              const float *g, const float *m, const float *v, size_t i,
                              const AxAdamWCoef *c) {
  float gi = g[i] * c->gs;
  float mi = MULADD(c->b1, m[i], c->one_b1 * gi);
  float vi = MULADD(c->b2, v[i], (c->one_b2 * gi) * gi);
  float upd = MULADD(c->wd, p[i], (mi * c->c1) / (sqrtf(vi * c->c2) + c->eps));
  po[i] = MULADD(-c->lr, upd, p[i]);
  if (keep) keep[i] = po[i];
  mo[i] = mi;
  vo[i] = vi;
}

#ifdef AX_SIMD_AVX2
/* Elements from i on, 8 at a time, from p, m, v into po, mo, vo (and keep, ordinary stores,
 * when not NULL); returns where it stopped. stream: non-temporal stores (po, mo and vo 32-byte
 * aligned at i). */
static inline size_t vector_body(float *po, float *mo, float *vo, float *keep, const float *p,
                                 const float *g, const float *m, const float *v, size_t i,
                                 size_t n, const AxAdamWCoef *c, int stream) {
  const __m256 b1 = _mm256_set1_ps(c->b1), b2 = _mm256_set1_ps(c->b2);
  const __m256 ob1 = _mm256_set1_ps(c->one_b1), ob2 = _mm256_set1_ps(c->one_b2);
  const __m256 c1 = _mm256_set1_ps(c->c1), c2 = _mm256_set1_ps(c->c2);
  const __m256 eps = _mm256_set1_ps(c->eps), wd = _mm256_set1_ps(c->wd);
  const __m256 lr = _mm256_set1_ps(c->lr), gs = _mm256_set1_ps(c->gs);
  for (; i + 8 <= n; i += 8) {
    __m256 gi = _mm256_mul_ps(_mm256_loadu_ps(g + i), gs);
    __m256 mi = _mm256_fmadd_ps(b1, _mm256_loadu_ps(m + i), _mm256_mul_ps(ob1, gi));
    __m256 vi = _mm256_fmadd_ps(b2, _mm256_loadu_ps(v + i), _mm256_mul_ps(_mm256_mul_ps(ob2, gi), gi));
    __m256 pi = _mm256_loadu_ps(p + i);
    __m256 den = _mm256_add_ps(_mm256_sqrt_ps(_mm256_mul_ps(vi, c2)), eps);
    __m256 upd = _mm256_fmadd_ps(wd, pi, _mm256_div_ps(_mm256_mul_ps(mi, c1), den));
    __m256 pn = _mm256_fnmadd_ps(lr, upd, pi);
    if (keep) _mm256_storeu_ps(keep + i, pn);
    if (stream) {
      _mm256_stream_ps(po + i, pn);
      _mm256_stream_ps(mo + i, mi);
      _mm256_stream_ps(vo + i, vi);
    } else {
      _mm256_storeu_ps(po + i, pn);
      _mm256_storeu_ps(mo + i, mi);
      _mm256_storeu_ps(vo + i, vi);
    }
  }
  return i;
}
#endif

void ax_adamw_range_coef(float *p, const float *g, float *m, float *v, size_t n,
                         const AxAdamWCoef *c) {
  size_t i = 0;
#ifdef AX_SIMD_AVX2
  i = vector_body(p, m, v, NULL, p, g, m, v, 0, n, c, 0);
#endif
  for (; i < n; i++) scalar_one(p, m, v, NULL, p, g, m, v, i, c);
}

void ax_adamw_range(float *p, const float *g, float *m, float *v, size_t n,
                    const AxAdamWHyper *h, int decay) {
  AxAdamWCoef c = ax_adamw_coef(h, decay);
  ax_adamw_range_coef(p, g, m, v, n, &c);
}

void ax_adamw_range_to(float *po, float *mo, float *vo, float *keep, const float *p,
                       const float *g, const float *m, const float *v, size_t n,
                       const AxAdamWHyper *h, int decay) {
  AxAdamWCoef c = ax_adamw_coef(h, decay);
  size_t i = 0;
#ifdef AX_SIMD_AVX2
  uintptr_t phase = (uintptr_t)po & 31;
  int stream = ((uintptr_t)mo & 31) == phase && ((uintptr_t)vo & 31) == phase;
  for (; stream && i < n && ((uintptr_t)(po + i) & 31); i++)
    scalar_one(po, mo, vo, keep, p, g, m, v, i, &c);
  i = vector_body(po, mo, vo, keep, p, g, m, v, i, n, &c, stream);
  if (stream) _mm_sfence();
#endif
  for (; i < n; i++) scalar_one(po, mo, vo, keep, p, g, m, v, i, &c);
}

typedef struct {
  float *p, *m, *v;
  const AxAdamWOut *to; /* NULL: in place */
  const float *g;
  size_t lo, hi;
  const AxParamSegment *segs;
  int n_segs;
  const AxAdamWHyper *h;
} Job;

/* Applies the kernel to [lo, hi) cut along segment boundaries. */
static void update_span(const Job *j, size_t lo, size_t hi) {
  for (int s = 0; s < j->n_segs; s++) {
    size_t a = j->segs[s].offset, b = a + j->segs[s].count;
    if (a < lo) a = lo;
    if (b > hi) b = hi;
    if (a >= b) continue;
    const AxAdamWHyper *h = ax_adamw_settings(j->h, &j->segs[s]);
    if (j->to)
      ax_adamw_range_to(j->to->p + a, j->to->m + a, j->to->v + a, j->p + a, j->p + a, j->g + a,
                        j->m + a, j->v + a, b - a, h, j->segs[s].decay);
    else
      ax_adamw_range(j->p + a, j->g + a, j->m + a, j->v + a, b - a, h, j->segs[s].decay);
  }
}

static void update_task(void *ctx, int tid, int nt) {
  const Job *j = ctx;
  size_t lo, hi;
  ax_split(j->hi - j->lo, tid, nt, &lo, &hi);
  update_span(j, j->lo + lo, j->lo + hi);
}

void ax_adamw_update(AxPool *pool, float *p, const float *g, float *m, float *v, size_t lo,
                     size_t hi, const AxParamSegment *segs, int n_segs, const AxAdamWHyper *h) {
  ax_adamw_update_to(pool, NULL, p, g, m, v, lo, hi, segs, n_segs, h);
}

void ax_adamw_update_to(AxPool *pool, const AxAdamWOut *to, float *p, const float *g, float *m,
                        float *v, size_t lo, size_t hi, const AxParamSegment *segs, int n_segs,
                        const AxAdamWHyper *h) {
  Job j = {p, m, v, to, g, lo, hi, segs, n_segs, h};
  ax_pool_run(pool, update_task, &j);
}
