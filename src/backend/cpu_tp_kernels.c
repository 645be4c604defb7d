/* cpu_tp_kernels.c — CPU kernels of the tensor-parallel layers; see cpu_tp_kernels.h. */
#include "cpu_tp_kernels.h"

#include <math.h>
#include <stddef.h>

#include "cpu_kernels.h"
#include "vecmath.h"

typedef struct {
  float *out, *dinp, *dw, *db, *aux;
  const float *x, *w, *b, *dout, *mean, *rstd, *center, *sums, *wte, *wpe;
  const int32_t *tokens;
  int N, C, T, Ct, v0, v1, ld;
  float s;
} TpArgs;

#define ROWS(a, lo, hi, tid, nt) \
  size_t lo, hi;                 \
  ax_split((size_t)(a)->N, tid, nt, &lo, &hi)

/* ---------------------------------------------------------------- LayerNorm */

static void row_sums_task(void *ctx, int tid, int nt) {
  TpArgs *a = ctx;
  ROWS(a, lo, hi, tid, nt);
  for (size_t i = lo; i < hi; i++) {
    const float *x = a->x + i * a->C;
    float s = 0;
    if (a->center) {
      float m = a->center[i] / (float)a->Ct;
      for (int c = 0; c < a->C; c++) s += (x[c] - m) * (x[c] - m);
    } else {
      for (int c = 0; c < a->C; c++) s += x[c];
    }
    a->out[i] = s;
  }
}

void ax_cpu_row_sums(AxPool *pool, float *out, const float *x, const float *center, int C_total,
                     int N, int C) {
  TpArgs a = {.out = out, .x = x, .center = center, .Ct = C_total, .N = N, .C = C};
  ax_pool_run(pool, row_sums_task, &a);
}

static void ln_apply_task(void *ctx, int tid, int nt) {
  TpArgs *a = ctx;
  ROWS(a, lo, hi, tid, nt);
  for (size_t i = lo; i < hi; i++) {
    const float *x = a->x + i * a->C;
    float m = a->dinp[i] / (float)a->Ct, r = 1.0f / sqrtf(a->db[i] / (float)a->Ct + 1e-5f);
    a->dinp[i] = m;
    a->db[i] = r;
    float *o = a->out + i * a->C;
    for (int c = 0; c < a->C; c++) o[c] = (x[c] - m) * r * a->w[c] + a->b[c];
  }
}

void ax_cpu_layernorm_apply(AxPool *pool, float *out, float *mean, float *rstd, const float *x,
                            const float *w, const float *b, int C_total, int N, int C) {
  TpArgs a = {.out = out, .dinp = mean, .db = rstd, .x = x, .w = w, .b = b, .Ct = C_total,
              .N = N, .C = C};
  ax_pool_run(pool, ln_apply_task, &a);
}

static void ln_bwd_sums_task(void *ctx, int tid, int nt) {
  TpArgs *a = ctx;
  ROWS(a, lo, hi, tid, nt);
  for (size_t i = lo; i < hi; i++) {
    const float *x = a->x + i * a->C, *d = a->dout + i * a->C;
    float m = a->mean[i], r = a->rstd[i], s0 = 0, s1 = 0;
    for (int c = 0; c < a->C; c++) {
      float dn = a->w[c] * d[c];
      s0 += dn;
      s1 += dn * (x[c] - m) * r;
    }
    a->out[2 * i] = s0;
    a->out[2 * i + 1] = s1;
  }
}

void ax_cpu_layernorm_backward_sums(AxPool *pool, float *sums, const float *dout, const float *x,
                                    const float *w, const float *mean, const float *rstd, int N,
                                    int C) {
  TpArgs a = {.out = sums, .dout = dout, .x = x, .w = w, .mean = mean, .rstd = rstd, .N = N,
              .C = C};
  ax_pool_run(pool, ln_bwd_sums_task, &a);
}

static void ln_bwd_rows_task(void *ctx, int tid, int nt) {
  TpArgs *a = ctx;
  ROWS(a, lo, hi, tid, nt);
  for (size_t i = lo; i < hi; i++) {
    const float *x = a->x + i * a->C, *d = a->dout + i * a->C;
    float m = a->mean[i], r = a->rstd[i];
    float dn_mean = a->sums[2 * i] / (float)a->Ct, dnx_mean = a->sums[2 * i + 1] / (float)a->Ct;
    float *di = a->dinp + i * a->C;
    for (int c = 0; c < a->C; c++) {
      float norm = (x[c] - m) * r;
      di[c] += (a->w[c] * d[c] - dn_mean - norm * dnx_mean) * r;
    }
  }
}

void ax_cpu_layernorm_backward_apply(AxPool *pool, float *dinp, float *dw, float *db,
                                     const float *dout, const float *x, const float *w,
                                     const float *mean, const float *rstd, const float *sums,
                                     int C_total, int N, int C) {
  TpArgs a = {.dinp = dinp, .dout = dout, .x = x, .w = w, .mean = mean, .rstd = rstd,
              .sums = sums, .Ct = C_total, .N = N, .C = C};
  ax_pool_run(pool, ln_bwd_rows_task, &a);
  ax_cpu_layernorm_param_grads(pool, dw, db, dout, x, mean, rstd, N, C);
}

/* ---------------------------------------------------------------- embedding */

static void embed_fwd_task(void *ctx, int tid, int nt) {
  TpArgs *a = ctx;
  ROWS(a, lo, hi, tid, nt);
  for (size_t i = lo; i < hi; i++) {
    float *o = a->out + i * a->C;
    int32_t t = a->tokens[i];
    const float *e = t >= a->v0 && t < a->v1 ? a->wte + (size_t)(t - a->v0) * a->C : NULL;
    const float *p = a->wpe ? a->wpe + (i % (size_t)a->T) * a->C : NULL;
    for (int c = 0; c < a->C; c++) o[c] = (e ? e[c] : 0.0f) + (p ? p[c] : 0.0f);
  }
}

void ax_cpu_embed_range_forward(AxPool *pool, float *out, const int32_t *tokens, const float *wte,
                                const float *wpe, int v0, int v1, int N, int T, int C) {
  TpArgs a = {.out = out, .tokens = tokens, .wte = wte, .wpe = wpe, .v0 = v0, .v1 = v1, .N = N,
              .T = T, .C = C};
  ax_pool_run(pool, embed_fwd_task, &a);
}

/* Columns split over threads: every row adds into the rows of its token, in row order. */
static void embed_bwd_task(void *ctx, int tid, int nt) {
  TpArgs *a = ctx;
  size_t lo, hi;
  ax_split((size_t)a->C, tid, nt, &lo, &hi);
  for (size_t i = 0; i < (size_t)a->N; i++) {
    const float *d = a->dout + i * a->C;
    int32_t t = a->tokens[i];
    if (t >= a->v0 && t < a->v1) {
      float *g = a->dw + (size_t)(t - a->v0) * a->C;
      for (size_t c = lo; c < hi; c++) g[c] += d[c];
    }
    if (a->db) {
      float *g = a->db + (i % (size_t)a->T) * a->C;
      for (size_t c = lo; c < hi; c++) g[c] += d[c];
    }
  }
}

void ax_cpu_embed_range_backward(AxPool *pool, float *dwte, float *dwpe, const float *dout,
                                 const int32_t *tokens, int v0, int v1, int N, int T, int C) {
  TpArgs a = {.dw = dwte, .db = dwpe, .dout = dout, .tokens = tokens, .v0 = v0, .v1 = v1,
              .N = N, .T = T, .C = C};
  ax_pool_run(pool, embed_bwd_task, &a);
}

/* ---------------------------------------------------------------- cross-entropy */

static void xent_max_task(void *ctx, int tid, int nt) {
  TpArgs *a = ctx;
  ROWS(a, lo, hi, tid, nt);
  for (size_t i = lo; i < hi; i++) {
    const float *row = a->x + i * a->ld;
    float m = -INFINITY;
    for (int j = 0; j < a->C; j++) m = row[j] > m ? row[j] : m;
    a->out[i] = m;
  }
}

void ax_cpu_xent_row_max(AxPool *pool, float *mx, const float *logits, int N, int nv, int ld) {
  TpArgs a = {.out = mx, .x = logits, .N = N, .C = nv, .ld = ld};
  ax_pool_run(pool, xent_max_task, &a);
}

static void xent_sums_task(void *ctx, int tid, int nt) {
  TpArgs *a = ctx;
  ROWS(a, lo, hi, tid, nt);
  for (size_t i = lo; i < hi; i++) {
    const float *row = a->x + i * a->ld;
    float s = 0, m = -INFINITY;
    for (int k = 0; k < a->T; k++) m = a->mean[(size_t)k * a->N + i] > m ? a->mean[(size_t)k * a->N + i] : m;
    a->aux[i] = m;
    for (int j = 0; j < a->C; j++) s += ax_expf(row[j] - m);
    int t = a->tokens[i] - a->v0;
    a->out[2 * i] = s;
    a->out[2 * i + 1] = t >= 0 && t < a->C ? row[t] : 0.0f;
  }
}

void ax_cpu_xent_sums(AxPool *pool, float *sums, float *mx, const float *maxima, int n_maxima,
                      const float *logits, const int32_t *targets, int v0, int N, int nv, int ld) {
  TpArgs a = {.out = sums, .aux = mx, .mean = maxima, .T = n_maxima, .x = logits,
              .tokens = targets, .v0 = v0, .N = N, .C = nv, .ld = ld};
  ax_pool_run(pool, xent_sums_task, &a);
}

static void xent_finish_task(void *ctx, int tid, int nt) {
  TpArgs *a = ctx;
  ROWS(a, lo, hi, tid, nt);
  for (size_t i = lo; i < hi; i++) {
    float m = a->mean[i], sum = a->sums[2 * i];
    a->aux[i] = logf(sum) + m - a->sums[2 * i + 1];
    if (a->s == 0.0f) continue;
    float *row = a->out + i * a->ld;
    for (int j = 0; j < a->C; j++) row[j] = a->s * ax_expf(row[j] - m) / sum;
    int t = a->tokens[i] - a->v0;
    if (t >= 0 && t < a->C) row[t] -= a->s;
  }
}

void ax_cpu_xent_finish(AxPool *pool, float *losses, float *logits, const float *mx,
                        const float *sums, const int32_t *targets, int v0, int N, int nv, int ld,
                        float dloss) {
  TpArgs a = {.aux = losses, .out = logits, .mean = mx, .sums = sums, .tokens = targets,
              .v0 = v0, .N = N, .C = nv, .ld = ld, .s = dloss};
  ax_pool_run(pool, xent_finish_task, &a);
}
