/* cpu_storage16.c — the CPU backend over bf16/fp16 storage: each kernel widens its 16-bit
 * operands into fp32 scratch, runs the fp32 CPU backend's kernel, and rounds its outputs back;
 * see cpu_storage16.h. */
#include "cpu_storage16.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_impl.h"
#include "src/core/bf16.h"
#include "src/core/error.h"
#include "src/core/fp16.h"

typedef struct {
  AxBackend *f32; /* the fp32 CPU backend whose kernels run on the widened operands */
  int failed;     /* a kernel could not allocate its scratch (reported at the next sync) */
} Half;

static Half *half(AxBackend *be) { return be->impl; }
static AxBackend *inner(AxBackend *be) { return half(be)->f32; }

static void widen(AxDType t, float *dst, const void *src, size_t n) {
  if (t == AX_DTYPE_BF16)
    ax_bf16_to_f32_array(dst, src, n);
  else
    ax_f16_to_f32_array(dst, src, n);
}

static void narrow(AxDType t, void *dst, const float *src, size_t n) {
  if (t == AX_DTYPE_BF16)
    ax_f32_to_bf16_array(dst, src, n);
  else
    ax_f32_to_f16_array(dst, src, n);
}

/* ------------------------------------------------------------------ one kernel's operands */

enum { MAX_OPERANDS = 8 };

typedef struct {
  const void *dev; /* the 16-bit tensor */
  size_t n;
  float *f;        /* its widened copy */
  int out;         /* rounded back when the kernel is done */
} Operand;

typedef struct {
  AxBackend *be;
  Operand op[MAX_OPERANDS];
  int k, failed;
} Operands;

static Operands begin(AxBackend *be) {
  Operands s;
  memset(&s, 0, sizeof s);
  s.be = be;
  return s;
}

/* The widened copy of n elements at p (NULL for NULL); out: the kernel writes it. The same
 * tensor named twice (an operand the kernel reads and writes in place) is widened once. */
static float *operand(Operands *s, const void *p, size_t n, int out) {
  if (!p || s->failed) return NULL;
  for (int i = 0; i < s->k; i++)
    if (s->op[i].dev == p && s->op[i].n == n) {
      s->op[i].out |= out;
      return s->op[i].f;
    }
  float *f = s->k < MAX_OPERANDS ? malloc((n ? n : 1) * sizeof *f) : NULL;
  if (!f) {
    s->failed = 1;
    return NULL;
  }
  widen(s->be->dtype, f, p, n);
  s->op[s->k++] = (Operand){p, n, f, out};
  return f;
}

static const float *in(Operands *s, const void *p, size_t n) { return operand(s, p, n, 0); }
static float *io(Operands *s, void *p, size_t n) { return operand(s, p, n, 1); }
static int ready(const Operands *s) { return !s->failed; }

/* The kernel ran (or was skipped): its outputs rounded back, the scratch freed. */
static void end(Operands *s) {
  for (int i = 0; i < s->k; i++) {
    if (s->op[i].out && !s->failed)
      narrow(s->be->dtype, (void *)s->op[i].dev, s->op[i].f, s->op[i].n);
    free(s->op[i].f);
  }
  if (s->failed && !half(s->be)->failed) {
    half(s->be)->failed = 1;
    AX_FAIL("the %s CPU backend could not allocate a kernel's fp32 scratch",
            ax_dtype_name(s->be->dtype));
  }
}

/* ------------------------------------------------------------------ memory */

static void *h_alloc(AxBackend *be, size_t bytes) { return ax_alloc(inner(be), bytes); }
static void h_free(AxBackend *be, void *p) { ax_free(inner(be), p); }
static void *h_host_alloc(AxBackend *be, size_t bytes) {
  return inner(be)->ops->host_alloc(inner(be), bytes);
}
static void h_host_free(AxBackend *be, void *p) { inner(be)->ops->host_free(inner(be), p); }

static int h_sync(AxBackend *be, AxStream s) {
  if (half(be)->failed) return AX_ERR;
  return inner(be)->ops->sync(inner(be), s);
}

static int h_copy(AxBackend *be, void *dst, const void *src, size_t bytes, AxCopyKind kind,
                  AxStream s) {
  AX_TRY(h_sync(be, s));
  return inner(be)->ops->copy(inner(be), dst, src, bytes, kind, s);
}

static int h_zero(AxBackend *be, void *p, size_t bytes, AxStream s) {
  return inner(be)->ops->zero(inner(be), p, bytes, s);
}

static int h_upload_f32(AxBackend *be, void *dst, const float *src, size_t n, AxStream s) {
  AX_TRY(h_sync(be, s));
  narrow(be->dtype, dst, src, n);
  return AX_OK;
}

static int h_download_f32(AxBackend *be, float *dst, const void *src, size_t n, AxStream s) {
  AX_TRY(h_sync(be, s));
  widen(be->dtype, dst, src, n);
  return AX_OK;
}

/* ------------------------------------------------------------------ GEMM */

/* Elements a stored matrix (rows x cols, leading dimension ld, `batch` of them stride apart)
 * spans from its first element. */
static size_t span(int rows, int cols, int ld, int batch, long long stride) {
  if (rows <= 0 || cols <= 0) return 0;
  size_t one = (size_t)(rows - 1) * (size_t)ld + (size_t)cols;
  return batch > 1 ? (size_t)(batch - 1) * (size_t)stride + one : one;
}

/* C is read too when beta is 0: the elements a strided C skips are rounded back unchanged. */
static void h_gemm(AxBackend *be, const AxGemm *g, const void *a, const void *b, void *c) {
  Operands s = begin(be);
  const float *fa = in(&s, a, span(g->trans_a ? g->k : g->m, g->trans_a ? g->m : g->k, g->lda,
                                   g->batch, g->stride_a));
  const float *fb = in(&s, b, span(g->trans_b ? g->n : g->k, g->trans_b ? g->k : g->n, g->ldb,
                                   g->batch, g->stride_b));
  float *fc = io(&s, c, span(g->m, g->n, g->ldc, g->batch, g->stride_c));
  if (ready(&s)) inner(be)->ops->gemm(inner(be), g, fa, fb, fc);
  end(&s);
}

/* ------------------------------------------------------------------ GPT kernels */

/* Rows of wte the tokens address: the largest id + 1. */
static size_t token_rows(const int32_t *tokens, size_t n, int v0) {
  int32_t most = -1;
  for (size_t i = 0; i < n; i++)
    if (tokens[i] > most) most = tokens[i];
  return most >= v0 ? (size_t)(most - v0) + 1 : 0;
}

static void h_encoder_forward(AxBackend *be, void *out, const int32_t *tokens, const void *wte,
                              const void *wpe, int B, int T, int C) {
  size_t N = (size_t)B * T;
  Operands s = begin(be);
  float *o = io(&s, out, N * C);
  const float *te = in(&s, wte, token_rows(tokens, N, 0) * C);
  const float *pe = in(&s, wpe, (size_t)T * C);
  if (ready(&s)) inner(be)->ops->encoder_forward(inner(be), o, tokens, te, pe, B, T, C);
  end(&s);
}

static void h_encoder_backward(AxBackend *be, void *dwte, void *dwpe, const void *dout,
                               const int32_t *tokens, int B, int T, int C) {
  size_t N = (size_t)B * T;
  Operands s = begin(be);
  float *dte = io(&s, dwte, token_rows(tokens, N, 0) * C), *dpe = io(&s, dwpe, (size_t)T * C);
  const float *d = in(&s, dout, N * C);
  if (ready(&s)) inner(be)->ops->encoder_backward(inner(be), dte, dpe, d, tokens, B, T, C);
  end(&s);
}

static void h_layernorm_forward(AxBackend *be, void *out, float *mean, float *rstd,
                                const void *inp, const void *w, const void *b, int N, int C) {
  size_t NC = (size_t)N * C;
  Operands s = begin(be);
  float *o = io(&s, out, NC);
  const float *x = in(&s, inp, NC), *fw = in(&s, w, (size_t)C), *fb = in(&s, b, (size_t)C);
  if (ready(&s)) inner(be)->ops->layernorm_forward(inner(be), o, mean, rstd, x, fw, fb, N, C);
  end(&s);
}

static void h_layernorm_backward(AxBackend *be, void *dinp, void *dw, void *db,
                                 const void *dout, const void *inp, const void *w,
                                 const float *mean, const float *rstd, int N, int C) {
  size_t NC = (size_t)N * C;
  Operands s = begin(be);
  float *di = io(&s, dinp, NC), *fdw = io(&s, dw, (size_t)C), *fdb = io(&s, db, (size_t)C);
  const float *d = in(&s, dout, NC), *x = in(&s, inp, NC), *fw = in(&s, w, (size_t)C);
  if (ready(&s))
    inner(be)->ops->layernorm_backward(inner(be), di, fdw, fdb, d, x, fw, mean, rstd, N, C);
  end(&s);
}

static void h_bias_residual(AxBackend *be, void *out, const void *bias, const void *residual,
                            int N, int C) {
  Operands s = begin(be);
  float *o = io(&s, out, (size_t)N * C);
  const float *b = in(&s, bias, (size_t)C), *r = in(&s, residual, (size_t)N * C);
  if (ready(&s)) inner(be)->ops->bias_residual(inner(be), o, b, r, N, C);
  end(&s);
}

static void h_bias_backward(AxBackend *be, void *dbias, const void *dout, int N, int C) {
  Operands s = begin(be);
  float *db = io(&s, dbias, (size_t)C);
  const float *d = in(&s, dout, (size_t)N * C);
  if (ready(&s)) inner(be)->ops->bias_backward(inner(be), db, d, N, C);
  end(&s);
}

static void h_gelu_forward(AxBackend *be, void *out, const void *inp, size_t n) {
  Operands s = begin(be);
  float *o = io(&s, out, n);
  const float *x = in(&s, inp, n);
  if (ready(&s)) inner(be)->ops->gelu_forward(inner(be), o, x, n);
  end(&s);
}

static void h_gelu_backward(AxBackend *be, void *dinp, const void *inp, const void *dout,
                            size_t n) {
  Operands s = begin(be);
  float *di = io(&s, dinp, n);
  const float *x = in(&s, inp, n), *d = in(&s, dout, n);
  if (ready(&s)) inner(be)->ops->gelu_backward(inner(be), di, x, d, n);
  end(&s);
}

static void h_softmax_forward(AxBackend *be, void *att, int n_mats, int T) {
  Operands s = begin(be);
  float *a = io(&s, att, (size_t)n_mats * T * T);
  if (ready(&s)) inner(be)->ops->softmax_causal_forward(inner(be), a, n_mats, T);
  end(&s);
}

static void h_softmax_backward(AxBackend *be, void *datt, const void *att, int n_mats, int T) {
  size_t n = (size_t)n_mats * T * T;
  Operands s = begin(be);
  float *d = io(&s, datt, n);
  const float *a = in(&s, att, n);
  if (ready(&s)) inner(be)->ops->softmax_causal_backward(inner(be), d, a, n_mats, T);
  end(&s);
}

/* The logits are written back only when the kernel overwrites them (dloss != 0). */
static void h_crossentropy(AxBackend *be, float *losses, void *logits, const int32_t *targets,
                           int N, int V, int ldv, float dloss) {
  Operands s = begin(be);
  float *l = operand(&s, logits, (size_t)N * ldv, dloss != 0.0f);
  if (ready(&s)) inner(be)->ops->crossentropy(inner(be), losses, l, targets, N, V, ldv, dloss);
  end(&s);
}

/* ------------------------------------------------------------------ tensor-parallel pieces */

static void h_row_sums(AxBackend *be, float *out, const void *x, const float *center,
                       int C_total, int N, int C) {
  Operands s = begin(be);
  const float *fx = in(&s, x, (size_t)N * C);
  if (ready(&s)) inner(be)->ops->row_sums(inner(be), out, fx, center, C_total, N, C);
  end(&s);
}

static void h_layernorm_apply(AxBackend *be, void *out, float *mean, float *rstd, const void *x,
                              const void *w, const void *b, int C_total, int N, int C) {
  size_t NC = (size_t)N * C;
  Operands s = begin(be);
  float *o = io(&s, out, NC);
  const float *fx = in(&s, x, NC), *fw = in(&s, w, (size_t)C), *fb = in(&s, b, (size_t)C);
  if (ready(&s))
    inner(be)->ops->layernorm_apply(inner(be), o, mean, rstd, fx, fw, fb, C_total, N, C);
  end(&s);
}

static void h_layernorm_backward_sums(AxBackend *be, float *sums, const void *dout,
                                      const void *x, const void *w, const float *mean,
                                      const float *rstd, int N, int C) {
  size_t NC = (size_t)N * C;
  Operands s = begin(be);
  const float *d = in(&s, dout, NC), *fx = in(&s, x, NC), *fw = in(&s, w, (size_t)C);
  if (ready(&s))
    inner(be)->ops->layernorm_backward_sums(inner(be), sums, d, fx, fw, mean, rstd, N, C);
  end(&s);
}

static void h_layernorm_backward_apply(AxBackend *be, void *dinp, void *dw, void *db,
                                       const void *dout, const void *x, const void *w,
                                       const float *mean, const float *rstd, const float *sums,
                                       int C_total, int N, int C) {
  size_t NC = (size_t)N * C;
  Operands s = begin(be);
  float *di = io(&s, dinp, NC), *fdw = io(&s, dw, (size_t)C), *fdb = io(&s, db, (size_t)C);
  const float *d = in(&s, dout, NC), *fx = in(&s, x, NC), *fw = in(&s, w, (size_t)C);
  if (ready(&s))
    inner(be)->ops->layernorm_backward_apply(inner(be), di, fdw, fdb, d, fx, fw, mean, rstd,
                                             sums, C_total, N, C);
  end(&s);
}

static void h_embed_range_forward(AxBackend *be, void *out, const int32_t *tokens,
                                  const void *wte, const void *wpe, int v0, int v1, int N,
                                  int T, int C) {
  Operands s = begin(be);
  float *o = io(&s, out, (size_t)N * C);
  const float *te = in(&s, wte, (size_t)(v1 - v0) * C), *pe = in(&s, wpe, (size_t)T * C);
  if (ready(&s))
    inner(be)->ops->embed_range_forward(inner(be), o, tokens, te, pe, v0, v1, N, T, C);
  end(&s);
}

static void h_embed_range_backward(AxBackend *be, void *dwte, void *dwpe, const void *dout,
                                   const int32_t *tokens, int v0, int v1, int N, int T, int C) {
  Operands s = begin(be);
  float *dte = io(&s, dwte, (size_t)(v1 - v0) * C), *dpe = io(&s, dwpe, (size_t)T * C);
  const float *d = in(&s, dout, (size_t)N * C);
  if (ready(&s))
    inner(be)->ops->embed_range_backward(inner(be), dte, dpe, d, tokens, v0, v1, N, T, C);
  end(&s);
}

static void h_xent_row_max(AxBackend *be, float *mx, const void *logits, int N, int nv, int ld) {
  Operands s = begin(be);
  const float *l = in(&s, logits, (size_t)N * ld);
  if (ready(&s)) inner(be)->ops->xent_row_max(inner(be), mx, l, N, nv, ld);
  end(&s);
}

static void h_xent_sums(AxBackend *be, float *sums, float *mx, const float *maxima,
                        int n_maxima, const void *logits, const int32_t *targets, int v0, int N,
                        int nv, int ld) {
  Operands s = begin(be);
  const float *l = in(&s, logits, (size_t)N * ld);
  if (ready(&s))
    inner(be)->ops->xent_sums(inner(be), sums, mx, maxima, n_maxima, l, targets, v0, N, nv, ld);
  end(&s);
}

static void h_xent_finish(AxBackend *be, float *losses, void *logits, const float *mx,
                          const float *sums, const int32_t *targets, int v0, int N, int nv,
                          int ld, float dloss) {
  Operands s = begin(be);
  float *l = operand(&s, logits, (size_t)N * ld, dloss != 0.0f);
  if (ready(&s))
    inner(be)->ops->xent_finish(inner(be), losses, l, mx, sums, targets, v0, N, nv, ld, dloss);
  end(&s);
}

/* ------------------------------------------------------------------ vectors */

static double h_sumsq(AxBackend *be, const void *x, size_t n) {
  Operands s = begin(be);
  const float *f = in(&s, x, n);
  double r = ready(&s) ? inner(be)->ops->sumsq(inner(be), f, n) : 0.0;
  end(&s);
  return r;
}

static void h_dropout(AxBackend *be, void *out, const void *x, const void *residual,
                      const AxDropoutMask *m) {
  size_t n = (size_t)m->rows * (size_t)m->cols;
  Operands s = begin(be);
  float *o = io(&s, out, n);
  const float *fx = in(&s, x, n), *r = in(&s, residual, n);
  if (ready(&s)) inner(be)->ops->dropout(inner(be), o, fx, r, m);
  end(&s);
}

static void h_scale(AxBackend *be, void *x, float k, size_t n) {
  Operands s = begin(be);
  float *f = io(&s, x, n);
  if (ready(&s)) inner(be)->ops->scale(inner(be), f, k, n);
  end(&s);
}

static void h_add(AxBackend *be, void *dst, const void *src, size_t n) {
  Operands s = begin(be);
  float *d = io(&s, dst, n);
  const float *f = in(&s, src, n);
  if (ready(&s)) inner(be)->ops->add(inner(be), d, f, n);
  end(&s);
}

static void h_destroy(AxBackend *be) {
  inner(be)->ops->destroy(inner(be));
  free(be->impl);
  free(be);
}

/* No fused attention (the fp32 CPU backend has none) and no device AdamW (host memory: the
 * host optimizer keeps the fp32 master weights). */
static const AxBackendOps CPU16_OPS = {
    .name = "cpu",
    .destroy = h_destroy,
    .alloc = h_alloc,
    .free = h_free,
    .host_alloc = h_host_alloc,
    .host_free = h_host_free,
    .copy = h_copy,
    .zero = h_zero,
    .sync = h_sync,
    .upload_f32 = h_upload_f32,
    .download_f32 = h_download_f32,
    .gemm = h_gemm,
    .encoder_forward = h_encoder_forward,
    .encoder_backward = h_encoder_backward,
    .layernorm_forward = h_layernorm_forward,
    .layernorm_backward = h_layernorm_backward,
    .bias_residual = h_bias_residual,
    .bias_backward = h_bias_backward,
    .gelu_forward = h_gelu_forward,
    .gelu_backward = h_gelu_backward,
    .softmax_causal_forward = h_softmax_forward,
    .softmax_causal_backward = h_softmax_backward,
    .crossentropy = h_crossentropy,
    .sumsq = h_sumsq,
    .dropout = h_dropout,
    .scale = h_scale,
    .add = h_add,
    .row_sums = h_row_sums,
    .layernorm_apply = h_layernorm_apply,
    .layernorm_backward_sums = h_layernorm_backward_sums,
    .layernorm_backward_apply = h_layernorm_backward_apply,
    .embed_range_forward = h_embed_range_forward,
    .embed_range_backward = h_embed_range_backward,
    .xent_row_max = h_xent_row_max,
    .xent_sums = h_xent_sums,
    .xent_finish = h_xent_finish,
};

AxBackend *ax_backend_cpu16_create(const AxBackendConfig *cfg) {
  if (cfg->dtype != AX_DTYPE_BF16 && cfg->dtype != AX_DTYPE_F16) {
    AX_FAIL("internal: the 16-bit CPU backend takes bf16 or fp16, not %s",
            ax_dtype_name(cfg->dtype));
    return NULL;
  }
  AxBackendConfig f32cfg = *cfg;
  f32cfg.dtype = AX_DTYPE_F32;
  AxBackend *f32 = ax_backend_cpu_create(&f32cfg);
  if (!f32) return NULL;
  AxBackend *be = ax_calloc(1, sizeof *be);
  Half *h = ax_calloc(1, sizeof *h);
  if (!be || !h) {
    free(be);
    free(h);
    f32->ops->destroy(f32);
    return NULL;
  }
  h->f32 = f32;
  *be = (AxBackend){.ops = &CPU16_OPS, .dtype = cfg->dtype, .esz = ax_dtype_size(cfg->dtype),
                    .threads = f32->threads, .is_host = 1, .impl = h};
  static const char F32_DESC[] = "cpu, fp32, "; /* the fp32 backend's, before threads */
  const char *rest = f32->desc;
  if (!strncmp(rest, F32_DESC, sizeof F32_DESC - 1)) rest += sizeof F32_DESC - 1;
  snprintf(be->desc, sizeof be->desc, "cpu, %s storage over fp32 arithmetic (emulated), %.200s",
           ax_dtype_name(cfg->dtype), rest);
  return be;
}
