/* cpu_kernels.c — the CPU backend's element-wise kernels (fp32), split over the backend's
 * thread pool. Row-wise kernels split rows; column reductions (weight and bias gradients)
 * split columns, so every thread count gives a fixed summation order and reruns are
 * bit-identical. exp/tanh come from vecmath.h; the row reductions have an AVX2 body, an 8-lane
 * plain-C body with the same values where the CPU has FMA (AX_SIMD_LANES8), and a scalar one. */
#include "cpu_kernels.h"

#include <math.h>
#include <string.h>

#include "src/core/crng_simd.h"
#include "vecmath.h"

#define GELU_SCALE 0.7978845608028654f /* sqrt(2/pi) */
#define GELU_CUBE 0.044715f

typedef struct {
  float *out, *mean, *rstd, *dinp, *dw, *db, *dwte, *dwpe, *losses;
  const float *inp, *w, *b, *dout, *res, *att, *wte, *wpe;
  const int32_t *tokens;
  size_t n;
  int N, C, T, ldv, V;
  float s;
  double *partial;
  const AxDropoutMask *mask;
} Args;

static void run(AxPool *pool, AxPoolFn fn, Args *a) { ax_pool_run(pool, fn, a); }

/* ---------------------------------------------------------------- row helpers (fixed-order AVX2) */

static float row_max(const float *x, size_t n) {
  float m = -INFINITY;
  size_t i = 0;
#ifdef AX_SIMD_AVX2
  if (n >= 8) {
    __m256 vm = _mm256_set1_ps(-INFINITY);
    for (; i + 8 <= n; i += 8) vm = _mm256_max_ps(vm, _mm256_loadu_ps(x + i));
    m = ax_hmax8(vm);
  }
#elif defined(AX_SIMD_LANES8)
  if (n >= 8) {
    float l[8] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY,
                  -INFINITY};
    for (; i + 8 <= n; i += 8)
      for (int j = 0; j < 8; j++) l[j] = ax_max_ps(l[j], x[i + j]);
    m = ax_lanes8_max(l);
  }
#endif
  for (; i < n; i++) m = x[i] > m ? x[i] : m;
  return m;
}

/* y[i] = exp(x[i] - shift); returns the sum (x and y may alias). */
static float row_exp_sum(float *y, const float *x, size_t n, float shift) {
  float sum = 0;
  size_t i = 0;
#ifdef AX_SIMD_AVX2
  __m256 vs = _mm256_setzero_ps(), sh = _mm256_set1_ps(shift);
  for (; i + 8 <= n; i += 8) {
    __m256 e = ax_exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), sh));
    _mm256_storeu_ps(y + i, e);
    vs = _mm256_add_ps(vs, e);
  }
  sum = ax_hsum8(vs);
#elif defined(AX_SIMD_LANES8)
  float l[8] = {0};
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; j++) {
      y[i + j] = ax_expf(x[i + j] - shift);
      l[j] += y[i + j];
    }
  sum = ax_lanes8_sum(l);
#endif
  for (; i < n; i++) {
    y[i] = ax_expf(x[i] - shift);
    sum += y[i];
  }
  return sum;
}

static void row_scale(float *y, size_t n, float s) {
  for (size_t i = 0; i < n; i++) y[i] *= s;
}

static float row_dot(const float *x, const float *y, size_t n) {
  float sum = 0;
  size_t i = 0;
#ifdef AX_SIMD_AVX2
  __m256 vs = _mm256_setzero_ps();
  for (; i + 8 <= n; i += 8)
    vs = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i), vs);
  sum = ax_hsum8(vs);
#elif defined(AX_SIMD_LANES8)
  float l[8] = {0};
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; j++) l[j] = fmaf(x[i + j], y[i + j], l[j]);
  sum = ax_lanes8_sum(l);
#endif
  for (; i < n; i++) sum += x[i] * y[i];
  return sum;
}

static float row_sum(const float *x, size_t n) {
  float sum = 0;
  size_t i = 0;
#ifdef AX_SIMD_AVX2
  __m256 vs = _mm256_setzero_ps();
  for (; i + 8 <= n; i += 8) vs = _mm256_add_ps(vs, _mm256_loadu_ps(x + i));
  sum = ax_hsum8(vs);
#elif defined(AX_SIMD_LANES8)
  float l[8] = {0};
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; j++) l[j] += x[i + j];
  sum = ax_lanes8_sum(l);
#endif
  for (; i < n; i++) sum += x[i];
  return sum;
}

/* sum of w[i] * d[i] * (x[i] - m) */
static float row_dot3_centered(const float *w, const float *d, const float *x, float m,
                               size_t n) {
  float sum = 0;
  size_t i = 0;
#ifdef AX_SIMD_AVX2
  __m256 vs = _mm256_setzero_ps(), vm = _mm256_set1_ps(m);
  for (; i + 8 <= n; i += 8) {
    __m256 wd = _mm256_mul_ps(_mm256_loadu_ps(w + i), _mm256_loadu_ps(d + i));
    vs = _mm256_fmadd_ps(wd, _mm256_sub_ps(_mm256_loadu_ps(x + i), vm), vs);
  }
  sum = ax_hsum8(vs);
#elif defined(AX_SIMD_LANES8)
  float l[8] = {0};
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; j++) l[j] = fmaf(w[i + j] * d[i + j], x[i + j] - m, l[j]);
  sum = ax_lanes8_sum(l);
#endif
  for (; i < n; i++) sum += w[i] * d[i] * (x[i] - m);
  return sum;
}

/* sum of (x[i] - m)^2 */
static float row_centered_sumsq(const float *x, size_t n, float m) {
  float sum = 0;
  size_t i = 0;
#ifdef AX_SIMD_AVX2
  __m256 vs = _mm256_setzero_ps(), vm = _mm256_set1_ps(m);
  for (; i + 8 <= n; i += 8) {
    __m256 d = _mm256_sub_ps(_mm256_loadu_ps(x + i), vm);
    vs = _mm256_fmadd_ps(d, d, vs);
  }
  sum = ax_hsum8(vs);
#elif defined(AX_SIMD_LANES8)
  float l[8] = {0};
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; j++) l[j] = fmaf(x[i + j] - m, x[i + j] - m, l[j]);
  sum = ax_lanes8_sum(l);
#endif
  for (; i < n; i++) sum += (x[i] - m) * (x[i] - m);
  return sum;
}

/* ---------------------------------------------------------------- embedding */

static void encoder_fwd_task(void *ctx, int tid, int nt) {
  Args *a = ctx;
  size_t lo, hi;
  ax_split((size_t)a->N, tid, nt, &lo, &hi);
  for (size_t i = lo; i < hi; i++) {
    const float *we = a->wte + (size_t)a->tokens[i] * (size_t)a->C;
    const float *wp = a->wpe + (i % (size_t)a->T) * (size_t)a->C;
    float *o = a->out + i * (size_t)a->C;
    for (int c = 0; c < a->C; c++) o[c] = we[c] + wp[c];
  }
}

void ax_cpu_encoder_forward(AxPool *pool, float *out, const int32_t *tokens, const float *wte,
                            const float *wpe, int B, int T, int C) {
  Args a = {.out = out, .tokens = tokens, .wte = wte, .wpe = wpe, .N = B * T, .T = T, .C = C};
  run(pool, encoder_fwd_task, &a);
}

static void encoder_bwd_task(void *ctx, int tid, int nt) {
  Args *a = ctx;
  size_t lo, hi;
  ax_split((size_t)a->C, tid, nt, &lo, &hi); /* columns: no two threads touch one element */
  for (size_t i = 0; i < (size_t)a->N; i++) {
    const float *d = a->dout + i * (size_t)a->C;
    float *we = a->dwte + (size_t)a->tokens[i] * (size_t)a->C;
    float *wp = a->dwpe + (i % (size_t)a->T) * (size_t)a->C;
    for (size_t c = lo; c < hi; c++) {
      we[c] += d[c];
      wp[c] += d[c];
    }
  }
}

void ax_cpu_encoder_backward(AxPool *pool, float *dwte, float *dwpe, const float *dout,
                             const int32_t *tokens, int B, int T, int C) {
  Args a = {.dwte = dwte, .dwpe = dwpe, .dout = dout, .tokens = tokens, .N = B * T, .T = T,
            .C = C};
  run(pool, encoder_bwd_task, &a);
}

/* ---------------------------------------------------------------- layernorm */

static void layernorm_fwd_task(void *ctx, int tid, int nt) {
  Args *a = ctx;
  size_t lo, hi, C = (size_t)a->C;
  ax_split((size_t)a->N, tid, nt, &lo, &hi);
  for (size_t i = lo; i < hi; i++) {
    const float *x = a->inp + i * C;
    float m = row_sum(x, C) / (float)C;
    float r = 1.0f / sqrtf(row_centered_sumsq(x, C, m) / (float)C + 1e-5f);
    float *o = a->out + i * C;
    for (size_t c = 0; c < C; c++) o[c] = (x[c] - m) * r * a->w[c] + a->b[c];
    a->mean[i] = m;
    a->rstd[i] = r;
  }
}

void ax_cpu_layernorm_forward(AxPool *pool, float *out, float *mean, float *rstd,
                              const float *inp, const float *w, const float *b, int N, int C) {
  Args a = {.out = out, .mean = mean, .rstd = rstd, .inp = inp, .w = w, .b = b, .N = N, .C = C};
  run(pool, layernorm_fwd_task, &a);
}

static void layernorm_bwd_rows_task(void *ctx, int tid, int nt) {
  Args *a = ctx;
  size_t lo, hi, C = (size_t)a->C;
  ax_split((size_t)a->N, tid, nt, &lo, &hi);
  for (size_t i = lo; i < hi; i++) {
    const float *x = a->inp + i * C, *d = a->dout + i * C;
    float m = a->mean[i], r = a->rstd[i];
    /* with dnorm = w * dout: the means of dnorm and of dnorm * norm */
    float dnorm_mean = row_dot(a->w, d, C) / (float)C;
    float dnorm_norm_mean = row_dot3_centered(a->w, d, x, m, C) * r / (float)C;
    float *di = a->dinp + i * C;
    for (size_t c = 0; c < C; c++) {
      float norm = (x[c] - m) * r;
      di[c] += (a->w[c] * d[c] - dnorm_mean - norm * dnorm_norm_mean) * r;
    }
  }
}

static void layernorm_bwd_cols_task(void *ctx, int tid, int nt) {
  Args *a = ctx;
  size_t lo, hi, C = (size_t)a->C;
  ax_split(C, tid, nt, &lo, &hi);
  for (size_t i = 0; i < (size_t)a->N; i++) {
    const float *x = a->inp + i * C, *d = a->dout + i * C;
    float m = a->mean[i], r = a->rstd[i];
    for (size_t c = lo; c < hi; c++) {
      a->dw[c] += d[c] * (x[c] - m) * r;
      a->db[c] += d[c];
    }
  }
}

void ax_cpu_layernorm_param_grads(AxPool *pool, float *dw, float *db, const float *dout,
                                  const float *inp, const float *mean, const float *rstd, int N,
                                  int C) {
  Args a = {.dw = dw, .db = db, .dout = dout, .inp = inp, .mean = (float *)mean,
            .rstd = (float *)rstd, .N = N, .C = C};
  run(pool, layernorm_bwd_cols_task, &a);
}

void ax_cpu_layernorm_backward(AxPool *pool, float *dinp, float *dw, float *db,
                               const float *dout, const float *inp, const float *w,
                               const float *mean, const float *rstd, int N, int C) {
  Args a = {.dinp = dinp, .dw = dw, .db = db, .dout = dout, .inp = inp, .w = w,
            .mean = (float *)mean, .rstd = (float *)rstd, .N = N, .C = C};
  run(pool, layernorm_bwd_rows_task, &a);
  run(pool, layernorm_bwd_cols_task, &a);
}

/* ---------------------------------------------------------------- bias */

static void bias_residual_task(void *ctx, int tid, int nt) {
  Args *a = ctx;
  size_t lo, hi, C = (size_t)a->C;
  ax_split((size_t)a->N, tid, nt, &lo, &hi);
  for (size_t i = lo; i < hi; i++) {
    float *o = a->out + i * C;
    if (a->res) {
      const float *r = a->res + i * C;
      for (size_t c = 0; c < C; c++) o[c] = a->b[c] + r[c];
    } else {
      memcpy(o, a->b, C * sizeof *o);
    }
  }
}

void ax_cpu_bias_residual(AxPool *pool, float *out, const float *bias, const float *residual,
                          int N, int C) {
  Args a = {.out = out, .b = bias, .res = residual, .N = N, .C = C};
  run(pool, bias_residual_task, &a);
}

static void bias_bwd_task(void *ctx, int tid, int nt) {
  Args *a = ctx;
  size_t lo, hi, C = (size_t)a->C;
  ax_split(C, tid, nt, &lo, &hi);
  for (size_t i = 0; i < (size_t)a->N; i++) {
    const float *d = a->dout + i * C;
    for (size_t c = lo; c < hi; c++) a->db[c] += d[c];
  }
}

void ax_cpu_bias_backward(AxPool *pool, float *dbias, const float *dout, int N, int C) {
  Args a = {.db = dbias, .dout = dout, .N = N, .C = C};
  run(pool, bias_bwd_task, &a);
}

/* ---------------------------------------------------------------- dropout */

/* Columns [c0, c1) of row `row`, one draw at a time. */
static void dropout_span(const AxDropoutMask *m, int row, size_t c0, size_t c1, float *o,
                         const float *x, const float *r) {
  for (size_t c = c0; c < c1; c++) {
    float kept = ax_dropout_keeps(m, row, (int)c) ? x[c] * m->scale : 0.0f;
    o[c] = r ? r[c] + kept : kept;
  }
}

/* One row: eight draws at a time where AVX2 is (the same bits: crng_simd.h), the rest and
 * eight indices across a multiple of 2^32 one at a time. */
static void dropout_row(const AxDropoutMask *m, int row, float *o, const float *x,
                        const float *r) {
  size_t c = 0, C = (size_t)m->cols;
#ifdef AX_SIMD_AVX2
  uint64_t first = ax_dropout_index(m, row, 0);
  const __m256 scale = _mm256_set1_ps(m->scale);
  for (; c + 8 <= C; c += 8) {
    if (!ax_crng_x8_ok(first + c)) {
      dropout_span(m, row, c, c + 8, o, x, r);
      continue;
    }
    __m256i keep = ax_crng_at_leastx8(ax_crng_u32x8(m->key, first + c), m->threshold);
    __m256 kept = _mm256_and_ps(_mm256_castsi256_ps(keep),
                                _mm256_mul_ps(_mm256_loadu_ps(x + c), scale));
    if (r) kept = _mm256_add_ps(_mm256_loadu_ps(r + c), kept);
    _mm256_storeu_ps(o + c, kept);
  }
#endif
  dropout_span(m, row, c, C, o, x, r);
}

static void dropout_task(void *ctx, int tid, int nt) {
  Args *a = ctx;
  size_t lo, hi, C = (size_t)a->mask->cols;
  ax_split((size_t)a->mask->rows, tid, nt, &lo, &hi);
  for (size_t i = lo; i < hi; i++)
    dropout_row(a->mask, (int)i, a->out + i * C, a->inp + i * C, a->res ? a->res + i * C : NULL);
}

void ax_cpu_dropout(AxPool *pool, float *out, const float *x, const float *residual,
                    const AxDropoutMask *m) {
  Args a = {.out = out, .inp = x, .res = residual, .mask = m};
  run(pool, dropout_task, &a);
}

/* ---------------------------------------------------------------- GELU (tanh form) */

static void gelu_fwd_range(float *out, const float *x, size_t lo, size_t hi) {
  size_t i = lo;
#ifdef AX_SIMD_AVX2
  const __m256 half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.0f);
  const __m256 k = _mm256_set1_ps(GELU_SCALE), cube = _mm256_set1_ps(GELU_CUBE);
  for (; i + 8 <= hi; i += 8) {
    __m256 v = _mm256_loadu_ps(x + i);
    __m256 u = _mm256_mul_ps(k, _mm256_fmadd_ps(_mm256_mul_ps(cube, v), _mm256_mul_ps(v, v), v));
    __m256 t = ax_tanh8(u);
    _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_mul_ps(half, v), _mm256_add_ps(one, t)));
  }
#endif
  for (; i < hi; i++) {
    float v = x[i], u = GELU_SCALE * fmaf(GELU_CUBE * v, v * v, v);
    out[i] = 0.5f * v * (1.0f + ax_tanhf(u));
  }
}

static void gelu_bwd_range(float *dinp, const float *x, const float *dout, size_t lo,
                           size_t hi) {
  size_t i = lo;
#ifdef AX_SIMD_AVX2
  const __m256 half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.0f);
  const __m256 k = _mm256_set1_ps(GELU_SCALE), cube = _mm256_set1_ps(GELU_CUBE);
  const __m256 cube3 = _mm256_set1_ps(3.0f * GELU_CUBE);
  for (; i + 8 <= hi; i += 8) {
    __m256 v = _mm256_loadu_ps(x + i), v2 = _mm256_mul_ps(v, v);
    __m256 u = _mm256_mul_ps(k, _mm256_fmadd_ps(_mm256_mul_ps(cube, v), v2, v));
    __m256 t = ax_tanh8(u);
    __m256 sech2 = _mm256_fnmadd_ps(t, t, one);
    __m256 du = _mm256_mul_ps(k, _mm256_fmadd_ps(cube3, v2, one));
    __m256 g = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_mul_ps(half, v), sech2), du,
                               _mm256_mul_ps(half, _mm256_add_ps(one, t)));
    _mm256_storeu_ps(dinp + i, _mm256_mul_ps(g, _mm256_loadu_ps(dout + i)));
  }
#elif defined(AX_SIMD_LANES8)
  /* the AVX2 body's operations, lane by lane (its values, bit for bit) */
  for (; i + 8 <= hi; i += 8)
    for (int j = 0; j < 8; j++) {
      float v = x[i + j], v2 = v * v, u = GELU_SCALE * fmaf(GELU_CUBE * v, v2, v);
      float t = ax_tanhf(u), sech2 = fmaf(-t, t, 1.0f);
      float du = GELU_SCALE * fmaf(3.0f * GELU_CUBE, v2, 1.0f);
      dinp[i + j] = fmaf((0.5f * v) * sech2, du, 0.5f * (1.0f + t)) * dout[i + j];
    }
#endif
  for (; i < hi; i++) {
    float v = x[i], u = GELU_SCALE * fmaf(GELU_CUBE * v, v * v, v);
    float t = ax_tanhf(u), sech2 = 1.0f - t * t;
    float g = 0.5f * (1.0f + t) + 0.5f * v * sech2 * GELU_SCALE * (1.0f + 3.0f * GELU_CUBE * v * v);
    dinp[i] = g * dout[i];
  }
}

static void gelu_fwd_task(void *ctx, int tid, int nt) {
  Args *a = ctx;
  size_t lo, hi;
  ax_split(a->n, tid, nt, &lo, &hi);
  gelu_fwd_range(a->out, a->inp, lo, hi);
}

static void gelu_bwd_task(void *ctx, int tid, int nt) {
  Args *a = ctx;
  size_t lo, hi;
  ax_split(a->n, tid, nt, &lo, &hi);
  gelu_bwd_range(a->dinp, a->inp, a->dout, lo, hi);
}

void ax_cpu_gelu_forward(AxPool *pool, float *out, const float *inp, size_t n) {
  Args a = {.out = out, .inp = inp, .n = n};
  run(pool, gelu_fwd_task, &a);
}

void ax_cpu_gelu_backward(AxPool *pool, float *dinp, const float *inp, const float *dout,
                          size_t n) {
  Args a = {.dinp = dinp, .inp = inp, .dout = dout, .n = n};
  run(pool, gelu_bwd_task, &a);
}

/* ---------------------------------------------------------------- causal softmax */

static void softmax_fwd_task(void *ctx, int tid, int nt) {
  Args *a = ctx;
  size_t lo, hi, T = (size_t)a->T;
  ax_split((size_t)a->N * T, tid, nt, &lo, &hi);
  for (size_t r = lo; r < hi; r++) {
    float *row = a->out + r * T;
    size_t len = r % T + 1; /* row t attends to 0..t */
    float m = row_max(row, len), sum = row_exp_sum(row, row, len, m);
    row_scale(row, len, 1.0f / sum);
    memset(row + len, 0, (T - len) * sizeof *row);
  }
}

void ax_cpu_softmax_causal_forward(AxPool *pool, float *att, int n_mats, int T) {
  Args a = {.out = att, .N = n_mats, .T = T};
  run(pool, softmax_fwd_task, &a);
}

static void softmax_bwd_task(void *ctx, int tid, int nt) {
  Args *a = ctx;
  size_t lo, hi, T = (size_t)a->T;
  ax_split((size_t)a->N * T, tid, nt, &lo, &hi);
  for (size_t r = lo; r < hi; r++) {
    float *d = a->out + r * T;
    const float *p = a->att + r * T;
    size_t len = r % T + 1;
    float dot = row_dot(p, d, len);
    for (size_t j = 0; j < len; j++) d[j] = p[j] * (d[j] - dot);
    memset(d + len, 0, (T - len) * sizeof *d);
  }
}

void ax_cpu_softmax_causal_backward(AxPool *pool, float *datt, const float *att, int n_mats,
                                    int T) {
  Args a = {.out = datt, .att = att, .N = n_mats, .T = T};
  run(pool, softmax_bwd_task, &a);
}

/* ---------------------------------------------------------------- cross-entropy */

static void crossentropy_task(void *ctx, int tid, int nt) {
  Args *a = ctx;
  size_t lo, hi, V = (size_t)a->V;
  ax_split((size_t)a->N, tid, nt, &lo, &hi);
  for (size_t i = lo; i < hi; i++) {
    float *row = a->out + i * (size_t)a->ldv;
    int32_t y = a->tokens[i];
    float m = row_max(row, V), target = row[y];
    if (a->s == 0.0f) { /* loss only: do not touch the logits */
      float sum = 0;
      for (size_t j = 0; j < V; j++) sum += ax_expf(row[j] - m);
      a->losses[i] = logf(sum) + m - target;
      continue;
    }
    float sum = row_exp_sum(row, row, V, m);
    a->losses[i] = logf(sum) + m - target;
    row_scale(row, V, a->s / sum);
    row[y] -= a->s;
    memset(row + V, 0, ((size_t)a->ldv - V) * sizeof *row);
  }
}

void ax_cpu_crossentropy(AxPool *pool, float *losses, float *logits, const int32_t *targets,
                         int N, int V, int ldv, float dloss) {
  Args a = {.losses = losses, .out = logits, .tokens = targets, .N = N, .V = V, .ldv = ldv,
            .s = dloss};
  run(pool, crossentropy_task, &a);
}

/* ---------------------------------------------------------------- vector ops */

enum { MAX_PARTIALS = 256 };

static void sumsq_task(void *ctx, int tid, int nt) {
  Args *a = ctx;
  size_t lo, hi;
  ax_split(a->n, tid, nt, &lo, &hi);
  double total = 0;
  /* blocks of 4096 summed in float, blocks added in double: fast and accurate */
  for (size_t b = lo; b < hi; b += 4096) {
    size_t e = b + 4096 < hi ? b + 4096 : hi;
    total += (double)row_dot(a->inp + b, a->inp + b, e - b);
  }
  a->partial[tid] = total;
}

double ax_cpu_sumsq(AxPool *pool, const float *x, size_t n) {
  double partial[MAX_PARTIALS] = {0};
  Args a = {.inp = x, .n = n, .partial = partial};
  run(pool, sumsq_task, &a);
  double total = 0;
  for (int t = 0; t < ax_pool_size(pool) && t < MAX_PARTIALS; t++) total += partial[t];
  return total;
}

static void scale_task(void *ctx, int tid, int nt) {
  Args *a = ctx;
  size_t lo, hi;
  ax_split(a->n, tid, nt, &lo, &hi);
  for (size_t i = lo; i < hi; i++) a->out[i] *= a->s;
}

void ax_cpu_scale(AxPool *pool, float *x, float s, size_t n) {
  Args a = {.out = x, .s = s, .n = n};
  run(pool, scale_task, &a);
}

static void add_task(void *ctx, int tid, int nt) {
  Args *a = ctx;
  size_t lo, hi;
  ax_split(a->n, tid, nt, &lo, &hi);
  for (size_t i = lo; i < hi; i++) a->out[i] += a->inp[i];
}

void ax_cpu_add(AxPool *pool, float *dst, const float *src, size_t n) {
  Args a = {.out = dst, .inp = src, .n = n};
  run(pool, add_task, &a);
}
