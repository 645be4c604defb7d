/* check_cuda.c — the CUDA backend against the CPU backend (make check-cuda; not a tests/test_*
 * suite because it needs a GPU). Every op of AxBackendOps runs on the same random data on
 * both; the GPU's inputs are rounded to its compute type first and the CPU gets the same
 * rounded values, so the differences left are the GPU's arithmetic and output rounding.
 * Tolerances, as |gpu - cpu| <= atol + rtol * |cpu| per element:
 *   fp32  atol 1e-5, rtol 1e-4   (summation order, expf/tanhf against the CPU's vecmath)
 *   bf16  atol 1e-2, rtol 1e-2   (8 significant bits: one rounding is up to 2^-8 = 0.4%)
 *   fp16  atol 2e-3, rtol 2e-3   (11 significant bits: up to 2^-11 = 0.05% per rounding)
 * fp32 results (LayerNorm mean/rstd, token losses, sums of squares) are compared at 1e-5
 * relative in every precision. One training step of a 2-block GPT (forward, loss, backward)
 * gives the same loss within 1e-5 (fp32), 5e-3 (fp16), 2e-2 (bf16) relative, and gradients
 * within 1e-4 / 2e-2 / 1e-1 of each tensor's largest gradient; a rerun gives the same bits.
 * The fused (flash-style) attention of bf16 and fp16 is held against the CPU's explicit path
 * and the GPU's own (check_attention); the training step takes it in bf16 and fp16.
 * The tensor-parallel pieces (row_sums ... xent_finish, cpu_tp_kernels.c against
 * cuda_tp_kernels.cu) take the same tolerances: compute-type outputs the precision's, their
 * fp32 row statistics 1e-5 (absolute and relative: sums over a slice of a row, in another
 * order), column sums (weight gradients) as the serial kernels'.
 *
 * The CUDA backend is reached the way bin/axonn reaches it: through the registry, which loads
 * the plugin libaxonn-cuda.so from $AXONN_PLUGIN_DIR (check_cuda.sh points it at bin/), so this
 * program links no CUDA code itself; a plugin that cannot be loaded fails the test.
 * Without a GPU (no driver or no device) it prints "skipped: no GPU" and exits 0; built
 * without CUDA it prints "skipped: built without CUDA" and exits 0. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/gpt_init.h"
#include "models/gpt_stage.h"
#include "models/layers.h"
#include "offload/adamw.h"
#include "src/backend/backend.h"
#include "src/core/error.h"
#include "src/core/rng.h"
#include "src/core/simd.h"
#include "tests/testutil.h"

#ifdef AX_HAVE_CUDA

typedef struct {
  AxDType dtype;
  const char *name;
  double atol, rtol;      /* element-wise, values of order 1 */
  double loss_rel, grad_rel; /* training step */
} Precision;

static const Precision PRECISIONS[] = {
    {AX_DTYPE_F32, "fp32", 1e-5, 1e-4, 1e-5, 1e-4},
    {AX_DTYPE_BF16, "bf16", 1e-2, 1e-2, 2e-2, 1e-1},
    {AX_DTYPE_F16, "fp16", 2e-3, 2e-3, 5e-3, 2e-2},
};
enum { N_PRECISIONS = 3, MAX_DEV = 64 };

static AxBackend *g_cpu, *g_gpu[N_PRECISIONS];

/* The pair of backends under test, and the device buffers of the current test. */
typedef struct {
  AxBackend *cpu, *gpu;
  const Precision *p;
  void *dev[MAX_DEV];
  int n_dev;
} Ctx;

static Ctx ctx_for(int i) {
  Ctx c = {.cpu = g_cpu, .gpu = g_gpu[i], .p = &PRECISIONS[i]};
  return c;
}

static void *dev(Ctx *c, size_t bytes) {
  ck_assert_int_lt(c->n_dev, MAX_DEV);
  void *d = ax_alloc(c->gpu, bytes);
  ck_assert_msg(d != NULL, "%s", ax_error_message());
  return c->dev[c->n_dev++] = d;
}

static void dev_free_all(Ctx *c) {
  while (c->n_dev > 0) ax_free(c->gpu, c->dev[--c->n_dev]);
}

/* Host floats -> new device tensor of the compute type. */
static void *up(Ctx *c, const float *h, size_t n) {
  void *d = dev(c, n * c->gpu->esz);
  ck_assert_msg(c->gpu->ops->upload_f32(c->gpu, d, h, n, AX_STREAM_COMPUTE) == AX_OK, "%s",
                ax_error_message());
  return d;
}

/* Device tensor of the compute type -> new host floats. */
static float *down(Ctx *c, const void *d, size_t n) {
  float *h = tu_alloc(n * sizeof *h);
  ck_assert_msg(c->gpu->ops->download_f32(c->gpu, h, d, n, AX_STREAM_COMPUTE) == AX_OK, "%s",
                ax_error_message());
  return h;
}

/* Raw bytes both ways (fp32 statistics, int32 tokens). */
static void *up_raw(Ctx *c, const void *h, size_t bytes) {
  void *d = dev(c, bytes);
  ck_assert_msg(c->gpu->ops->copy(c->gpu, d, h, bytes, AX_COPY_H2D, AX_STREAM_COMPUTE) == AX_OK,
                "%s", ax_error_message());
  return d;
}
static float *down_f32(Ctx *c, const float *d, size_t n) {
  float *h = tu_alloc(n * sizeof *h);
  ck_assert_msg(c->gpu->ops->copy(c->gpu, h, d, n * sizeof *h, AX_COPY_D2H, AX_STREAM_COMPUTE) ==
                    AX_OK, "%s", ax_error_message());
  return h;
}

/* n random values in [-scale, scale] as the GPU stores them (rounded to its type). */
static float *rnd(Ctx *c, size_t n, float scale, uint64_t seed) {
  float *h = tu_random(n, scale, seed);
  void *d = up(c, h, n);
  ck_assert(c->gpu->ops->download_f32(c->gpu, h, d, n, AX_STREAM_COMPUTE) == AX_OK);
  return h;
}

static float *copy_of(const float *h, size_t n) {
  return memcpy(tu_alloc(n * sizeof *h), h, n * sizeof *h);
}

static int32_t *tokens(size_t n, int below, uint64_t seed) {
  int32_t *t = tu_alloc(n * sizeof *t);
  AxRng r;
  ax_rng_seed(&r, seed);
  for (size_t i = 0; i < n; i++) t[i] = (int32_t)ax_rng_below(&r, (uint64_t)below);
  return t;
}

static void same_tol(Ctx *c, const char *what, const float *gpu, const float *cpu, size_t n,
                     double atol, double rtol) {
  double worst = tu_max_rel(gpu, cpu, n, atol, rtol);
  size_t at = 0;
  double d = -1;
  for (size_t i = 0; i < n; i++) {
    double e = fabs((double)gpu[i] - cpu[i]);
    if (e > d || e != e) d = e != e ? INFINITY : e, at = i;
  }
  ck_assert_msg(worst <= 1.0, "%s %s: %.3g of tolerance (element %zu: gpu %.9g cpu %.9g)",
                c->p->name, what, worst, at, gpu[at], cpu[at]);
}

/* Compute-type results: the precision's tolerance. */
static void same(Ctx *c, const char *what, const float *gpu, const float *cpu, size_t n) {
  same_tol(c, what, gpu, cpu, n, c->p->atol, c->p->rtol);
}

/* Sums over `rows` rows (column reductions, added in another order than the CPU's): beyond
 * 64 rows the absolute part of the tolerance grows as sqrt(rows / 32), as the rounding of a sum
 * does; up to 64, the precision's own tolerance. */
static void same_sums(Ctx *c, const char *what, const float *gpu, const float *cpu, size_t n,
                      int rows) {
  double grow = rows > 64 ? sqrt(rows / 32.0) : 1.0;
  same_tol(c, what, gpu, cpu, n, c->p->atol * grow, c->p->rtol);
}

/* fp32 results computed from identical inputs. */
static void same_f32(Ctx *c, const char *what, const float *gpu, const float *cpu, size_t n) {
  same_tol(c, what, gpu, cpu, n, 1e-6, 1e-5);
}

/* Runs the block once per precision whose GPU backend exists, as `Ctx c`; frees its buffers. */
#define FOR_EACH_PRECISION(c)                                                                    \
  for (int pi_ = 0; pi_ < N_PRECISIONS; pi_++)                                                   \
    if (g_gpu[pi_])                                                                              \
      for (Ctx c = ctx_for(pi_), *once_ = &c; once_; dev_free_all(&c), once_ = NULL)

/* ------------------------------------------------------------------ memory and conversions */

/* bf16 round to nearest even, on the host, for the conversion check. */
static float bf16_round(float x) {
  uint32_t u;
  memcpy(&u, &x, 4);
  u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
  memcpy(&x, &u, 4);
  return x;
}

START_TEST(memory_copies_and_conversions) {
  FOR_EACH_PRECISION(c) {
    size_t n = 1000;
    float *h = tu_random(n, 3.0f, 1), *back = down(&c, up(&c, h, n), n);
    /* fp32 exact, bf16 rounded to nearest even; unit roundoff u: bf16 2^-8, fp16 2^-11 */
    double u = c.p->dtype == AX_DTYPE_F32    ? 0
               : c.p->dtype == AX_DTYPE_BF16 ? 1.0 / 256
                                             : 1.0 / 2048;
    for (size_t i = 0; i < n; i++) {
      float want = c.p->dtype == AX_DTYPE_BF16 ? bf16_round(h[i]) : h[i];
      if (c.p->dtype != AX_DTYPE_F16)
        ck_assert_msg(back[i] == want, "%s: upload/download of %.9g gave %.9g", c.p->name, h[i],
                      back[i]);
      ck_assert_msg(fabs((double)back[i] - h[i]) <= u * fabs(h[i]) + 1e-7,
                    "%s: %.9g -> %.9g", c.p->name, h[i], back[i]);
    }
    /* device to device on the copy stream, zero on the comm stream, pinned host memory */
    void *a = up(&c, h, n), *b = dev(&c, n * c.gpu->esz);
    AxBackendOps const *o = c.gpu->ops;
    ck_assert_int_eq(o->copy(c.gpu, b, a, n * c.gpu->esz, AX_COPY_D2D, AX_STREAM_COPY), AX_OK);
    ck_assert_int_eq(o->sync(c.gpu, AX_STREAM_COPY), AX_OK);
    float *pinned = o->host_alloc(c.gpu, n * sizeof(float));
    ck_assert_ptr_nonnull(pinned);
    ck_assert_int_eq(o->download_f32(c.gpu, pinned, b, n, AX_STREAM_COPY), AX_OK);
    ck_assert_mem_eq(pinned, back, n * sizeof(float));
    ck_assert_int_eq(o->zero(c.gpu, b, n * c.gpu->esz, AX_STREAM_COMM), AX_OK);
    ck_assert_int_eq(o->sync(c.gpu, AX_STREAM_COMM), AX_OK);
    ck_assert_int_eq(o->download_f32(c.gpu, pinned, b, n, AX_STREAM_COMPUTE), AX_OK);
    for (size_t i = 0; i < n; i++) ck_assert_float_eq(pinned[i], 0.0f);
    o->host_free(c.gpu, pinned);
    ck_assert_int_eq(ax_sync(c.gpu), AX_OK);
  }
}
END_TEST

/* ------------------------------------------------------------------ GEMM */

static void check_gemm(Ctx *c, int ta, int tb, int batch, float beta) {
  int M = 37, N = 29, K = 64, pad = 3;
  int ra = ta ? K : M, ca = ta ? M : K, rb = tb ? N : K, cb = tb ? K : N; /* stored shapes */
  AxGemm g = {.trans_a = ta, .trans_b = tb, .m = M, .n = N, .k = K, .alpha = 0.5f, .beta = beta,
              .lda = ca + pad, .ldb = cb + pad, .ldc = N + pad, .batch = batch,
              .stride_a = (long long)ra * (ca + pad), .stride_b = (long long)rb * (cb + pad),
              .stride_c = (long long)M * (N + pad)};
  int nb = batch > 1 ? batch : 1;
  size_t na = (size_t)nb * g.stride_a, nbb = (size_t)nb * g.stride_b, nc = (size_t)nb * g.stride_c;
  float *a = rnd(c, na, 1.0f, 11), *b = rnd(c, nbb, 1.0f, 12), *cc = rnd(c, nc, 1.0f, 13);
  void *da = up(c, a, na), *db = up(c, b, nbb), *dc = up(c, cc, nc);
  ax_gemm(c->cpu, &g, a, b, cc);
  ax_gemm(c->gpu, &g, da, db, dc);
  char what[64];
  snprintf(what, sizeof what, "gemm ta=%d tb=%d batch=%d beta=%g", ta, tb, batch, beta);
  same(c, what, down(c, dc, nc), cc, nc);
}

START_TEST(gemm_transposes_strides_batches) {
  FOR_EACH_PRECISION(c) {
    for (int ta = 0; ta < 2; ta++)
      for (int tb = 0; tb < 2; tb++) {
        check_gemm(&c, ta, tb, 1, 0.0f);
        check_gemm(&c, ta, tb, 3, 1.0f);
      }
  }
}
END_TEST

/* ------------------------------------------------------------------ embedding, LayerNorm, bias */

START_TEST(encoder_forward_backward) {
  FOR_EACH_PRECISION(c) {
    int B = 2, T = 9, C = 40, V = 13;
    size_t N = (size_t)B * T;
    int32_t *tok = tokens(N, V, 3);
    int32_t *dtok = up_raw(&c, tok, N * sizeof *tok);
    float *wte = rnd(&c, (size_t)V * C, 1.0f, 1), *wpe = rnd(&c, (size_t)T * C, 1.0f, 2);
    float *out = tu_zeros(N * C);
    void *dout = dev(&c, N * C * c.gpu->esz);
    c.cpu->ops->encoder_forward(c.cpu, out, tok, wte, wpe, B, T, C);
    c.gpu->ops->encoder_forward(c.gpu, dout, dtok, up(&c, wte, (size_t)V * C),
                                up(&c, wpe, (size_t)T * C), B, T, C);
    same(&c, "encoder_forward", down(&c, dout, N * C), out, N * C);
    float *d = rnd(&c, N * C, 1.0f, 4), *dwte = rnd(&c, (size_t)V * C, 1.0f, 5);
    float *dwpe = rnd(&c, (size_t)T * C, 1.0f, 6);
    void *ddwte = up(&c, dwte, (size_t)V * C), *ddwpe = up(&c, dwpe, (size_t)T * C);
    c.cpu->ops->encoder_backward(c.cpu, dwte, dwpe, d, tok, B, T, C);
    c.gpu->ops->encoder_backward(c.gpu, ddwte, ddwpe, up(&c, d, N * C), dtok, B, T, C);
    same(&c, "encoder_backward dwte (+=)", down(&c, ddwte, (size_t)V * C), dwte, (size_t)V * C);
    same(&c, "encoder_backward dwpe (+=)", down(&c, ddwpe, (size_t)T * C), dwpe, (size_t)T * C);
  }
}
END_TEST

/* N = 2311: the column sums of dw and db run over several spans of rows, the last partial */
START_TEST(layernorm_forward_backward) {
  FOR_EACH_PRECISION(c) for (int pass = 0; pass < 2; pass++) {
    int N = pass ? 2311 : 37, C = 100;
    size_t nc = (size_t)N * C;
    float *x = rnd(&c, nc, 2.0f, 1), *w = rnd(&c, C, 1.0f, 2), *b = rnd(&c, C, 1.0f, 3);
    float *out = tu_zeros(nc), *mean = tu_zeros(N), *rstd = tu_zeros(N);
    void *dx = up(&c, x, nc), *dw_ = up(&c, w, C), *dout = dev(&c, nc * c.gpu->esz);
    float *dmean = dev(&c, N * sizeof(float)), *drstd = dev(&c, N * sizeof(float));
    c.cpu->ops->layernorm_forward(c.cpu, out, mean, rstd, x, w, b, N, C);
    c.gpu->ops->layernorm_forward(c.gpu, dout, dmean, drstd, dx, dw_, up(&c, b, C), N, C);
    same(&c, "layernorm_forward out", down(&c, dout, nc), out, nc);
    same_f32(&c, "layernorm_forward mean", down_f32(&c, dmean, N), mean, N);
    same_f32(&c, "layernorm_forward rstd", down_f32(&c, drstd, N), rstd, N);
    /* backward from the CPU's statistics on both sides, so only the backward differs */
    float *d = rnd(&c, nc, 1.0f, 4), *dinp = rnd(&c, nc, 1.0f, 5);
    float *gw = rnd(&c, C, 1.0f, 6), *gb = rnd(&c, C, 1.0f, 7);
    void *ddinp = up(&c, dinp, nc), *dgw = up(&c, gw, C), *dgb = up(&c, gb, C);
    c.cpu->ops->layernorm_backward(c.cpu, dinp, gw, gb, d, x, w, mean, rstd, N, C);
    c.gpu->ops->layernorm_backward(c.gpu, ddinp, dgw, dgb, up(&c, d, nc), dx, dw_,
                                   up_raw(&c, mean, N * sizeof(float)),
                                   up_raw(&c, rstd, N * sizeof(float)), N, C);
    same(&c, "layernorm_backward dinp (+=)", down(&c, ddinp, nc), dinp, nc);
    same_sums(&c, "layernorm_backward dw (+=)", down(&c, dgw, C), gw, C, N);
    same_sums(&c, "layernorm_backward db (+=)", down(&c, dgb, C), gb, C, N);
  }
}
END_TEST

START_TEST(bias_residual_and_backward) {
  FOR_EACH_PRECISION(c) for (int pass = 0; pass < 2; pass++) {
    int N = pass ? 1500 : 45, C = 70;
    size_t nc = (size_t)N * C;
    float *bias = rnd(&c, C, 1.0f, 1), *res = rnd(&c, nc, 1.0f, 2), *out = tu_zeros(nc);
    void *dbias = up(&c, bias, C), *dres = up(&c, res, nc), *dout = dev(&c, nc * c.gpu->esz);
    for (int with_res = 0; with_res < 2; with_res++) {
      c.cpu->ops->bias_residual(c.cpu, out, bias, with_res ? res : NULL, N, C);
      c.gpu->ops->bias_residual(c.gpu, dout, dbias, with_res ? dres : NULL, N, C);
      same(&c, with_res ? "bias_residual" : "bias_residual (no residual)", down(&c, dout, nc), out,
           nc);
    }
    float *db = rnd(&c, C, 1.0f, 3);
    void *ddb = up(&c, db, C);
    c.cpu->ops->bias_backward(c.cpu, db, res, N, C);
    c.gpu->ops->bias_backward(c.gpu, ddb, dres, N, C);
    same_sums(&c, "bias_backward (+=)", down(&c, ddb, C), db, C, N);
  }
}
END_TEST

/* Dropout: the GPU's masks are the CPU's (the same counter-based draw, crng.h), in place with
 * a residual (the forward) and without (the backward), on a piece placed inside a wider tensor. */
START_TEST(dropout_same_mask) {
  FOR_EACH_PRECISION(c) {
    int N = 300, C = 70;
    size_t nc = (size_t)N * C;
    float *x = rnd(&c, nc, 1.0f, 1), *res = rnd(&c, nc, 1.0f, 2), *out = tu_zeros(nc);
    void *dx = up(&c, x, nc), *dres = up(&c, res, nc);
    AxDropout d = {.p = 0.3f, .seed = 5, .step = 9, .row0 = 640, .col0 = 70, .width = 210,
                   .layer = 1};
    ax_dropout_apply(c.cpu, &d, AX_DROP_MLP, out, x, res, N, C);
    ax_dropout_apply(c.gpu, &d, AX_DROP_MLP, dx, dx, dres, N, C);
    same(&c, "dropout (forward, in place)", down(&c, dx, nc), out, nc);
    ax_dropout_apply(c.cpu, &d, AX_DROP_EMBEDDING, out, x, NULL, N, C);
    void *dy = up(&c, x, nc), *dout = dev(&c, nc * c.gpu->esz);
    ax_dropout_apply(c.gpu, &d, AX_DROP_EMBEDDING, dout, dy, NULL, N, C);
    same(&c, "dropout (backward)", down(&c, dout, nc), out, nc);
  }
}
END_TEST

/* ------------------------------------------------------------------ GELU, softmax, xent */

START_TEST(gelu_forward_backward) {
  FOR_EACH_PRECISION(c) {
    size_t n = 5003;
    float *x = rnd(&c, n, 4.0f, 1), *out = tu_zeros(n);
    void *dx = up(&c, x, n), *dout = dev(&c, n * c.gpu->esz);
    c.cpu->ops->gelu_forward(c.cpu, out, x, n);
    c.gpu->ops->gelu_forward(c.gpu, dout, dx, n);
    same(&c, "gelu_forward", down(&c, dout, n), out, n);
    float *d = rnd(&c, n, 1.0f, 2), *din = tu_zeros(n);
    void *dd = up(&c, d, n), *ddin = dev(&c, n * c.gpu->esz);
    c.cpu->ops->gelu_backward(c.cpu, din, x, d, n);
    c.gpu->ops->gelu_backward(c.gpu, ddin, dx, dd, n);
    same(&c, "gelu_backward", down(&c, ddin, n), din, n);
    c.gpu->ops->gelu_backward(c.gpu, dd, dx, dd, n); /* dinp aliasing dout */
    same(&c, "gelu_backward in place", down(&c, dd, n), din, n);
  }
}
END_TEST

START_TEST(softmax_causal_forward_backward) {
  FOR_EACH_PRECISION(c) {
    int mats = 3, T = 37; /* rows longer than a warp */
    size_t n = (size_t)mats * T * T;
    float *s = rnd(&c, n, 3.0f, 1), *p = copy_of(s, n);
    void *ds = up(&c, s, n);
    c.cpu->ops->softmax_causal_forward(c.cpu, p, mats, T);
    c.gpu->ops->softmax_causal_forward(c.gpu, ds, mats, T);
    same(&c, "softmax_causal_forward", down(&c, ds, n), p, n);
    /* backward from the CPU's probabilities, as the GPU stores them */
    void *dp = up(&c, p, n);
    float *pr = down(&c, dp, n), *d = rnd(&c, n, 1.0f, 2), *dcpu = copy_of(d, n);
    void *dd = up(&c, d, n);
    c.cpu->ops->softmax_causal_backward(c.cpu, dcpu, pr, mats, T);
    c.gpu->ops->softmax_causal_backward(c.gpu, dd, dp, mats, T);
    same(&c, "softmax_causal_backward", down(&c, dd, n), dcpu, n);
  }
}
END_TEST

/* ------------------------------------------------------------------ fused attention */

/* Largest |a - b| over the largest |b|, and where the largest |a - b| is. */
static double rel_to_largest(const float *a, const float *b, size_t n, size_t *at) {
  double big = 0, diff = -1;
  for (size_t i = 0; i < n; i++) {
    double e = fabs((double)a[i] - b[i]);
    big = fmax(big, fabs(b[i]));
    if (e > diff || e != e) diff = e != e ? INFINITY : e, *at = i;
  }
  return diff / (big > 0 ? big : 1);
}

/* Channels j*C .. j*C + C - 1 (q, k or v) of N rows of 3C, as N rows of C. */
static float *qkv_part(const float *x, int N, int C, int j) {
  float *p = tu_alloc((size_t)N * C * sizeof(float));
  for (size_t r = 0; r < (size_t)N; r++)
    memcpy(p + r * C, x + r * 3 * C + (size_t)j * C, (size_t)C * sizeof(float));
  return p;
}

static void same_to_largest(Ctx *c, const char *what, const float *gpu, const float *ref,
                            size_t n, double tol) {
  size_t at = 0;
  double r = rel_to_largest(gpu, ref, n, &at);
  ck_assert_msg(r <= tol, "%s %s: largest difference %.3g of the largest value (tolerance %.3g; "
                "element %zu: %.6g against %.6g)", c->p->name, what, r, tol, at, gpu[at], ref[at]);
}

/* The attention layer of models/layers.c on the GPU's fused kernels (flash-style) against the
 * CPU backend's explicit path (GEMMs, stored softmax) in fp32 and against the GPU's own explicit
 * path, forward and backward, at head sizes 16-128 and lengths that leave a partial tile; the
 * fused result, rerun, gives the same bits. Tolerance: the largest difference within 2e-2
 * (bf16) or 4e-3 (fp16) of the largest value of each output. */
static void check_attention(Ctx *c, int B, int T, int C, int NH) {
  AxBackend *gpu = c->gpu;
  ck_assert_msg(ax_backend_fused_attention(gpu, C, NH), "%s: no fused attention for C %d, NH %d",
                c->p->name, C, NH);
  double tol = c->p->dtype == AX_DTYPE_BF16 ? 2e-2 : 4e-3;
  size_t nq = (size_t)B * T * 3 * C, no = (size_t)B * T * C;
  float *qkv = rnd(c, nq, 2.0f, (uint64_t)T), *dout = rnd(c, no, 1.0f, (uint64_t)T + 1);
  /* the CPU, fp32, explicit */
  float *out = tu_alloc(no * sizeof(float)), *att = tu_alloc((size_t)B * NH * T * T * 4);
  float *datt = tu_alloc((size_t)NH * T * T * 4), *dqkv = tu_alloc(nq * sizeof(float));
  ax_attention_forward(c->cpu, out, att, qkv, B, T, C, NH, NULL);
  ax_attention_backward(c->cpu, dqkv, datt, dout, out, att, qkv, B, T, C, NH, NULL);
  /* the GPU, fused, twice, then explicit */
  void *g_qkv = up(c, qkv, nq), *g_dout = up(c, dout, no);
  float *runs[3][4];
  for (int run = 0; run < 3; run++) {
    gpu->fused_attention = run != 2;
    void *g_out = dev(c, no * gpu->esz), *g_dqkv = dev(c, nq * gpu->esz);
    int fused = ax_backend_fused_attention(gpu, C, NH);
    void *g_att = dev(c, ax_attention_bytes(fused, gpu->esz, B, T, NH));
    void *g_scratch = dev(c, ax_attention_scratch_bytes(fused, gpu->esz, B, T, NH));
    ax_attention_forward(gpu, g_out, g_att, g_qkv, B, T, C, NH, NULL);
    ax_attention_backward(gpu, g_dqkv, g_scratch, g_dout, g_out, g_att, g_qkv, B, T, C, NH, NULL);
    ck_assert_msg(ax_sync(gpu) == AX_OK, "%s", ax_error_message());
    float *d = down(c, g_dqkv, nq);
    runs[run][0] = down(c, g_out, no);
    for (int j = 0; j < 3; j++) runs[run][1 + j] = qkv_part(d, B * T, C, j);
  }
  gpu->fused_attention = 1;
  dev_free_all(c); /* a shape's buffers */
  char what[120];
  const char *names[4] = {"out", "dq", "dk", "dv"};
  const float *cpu[4] = {out, qkv_part(dqkv, B * T, C, 0), qkv_part(dqkv, B * T, C, 1),
                         qkv_part(dqkv, B * T, C, 2)};
  size_t n[4] = {no, no, no, no};
  for (int k = 0; k < 4; k++) {
    snprintf(what, sizeof what, "attention B%d T%d C%d NH%d %s, fused against the CPU", B, T,
             C, NH, names[k]);
    same_to_largest(c, what, runs[0][k], cpu[k], n[k], tol);
    snprintf(what, sizeof what, "attention B%d T%d C%d NH%d %s, fused against explicit", B, T,
             C, NH, names[k]);
    same_to_largest(c, what, runs[0][k], runs[2][k], n[k], tol);
    ck_assert_mem_eq(runs[0][k], runs[1][k], n[k] * sizeof(float));
  }
  size_t at = 0;
  printf("check_cuda: fused attention %s B%d T%d C%d NH%d, largest difference from the CPU over "
         "the largest value, fused (explicit GPU path):", c->p->name, B, T, C, NH);
  for (int k = 0; k < 4; k++)
    printf(" %s %.2g (%.2g)", names[k], rel_to_largest(runs[0][k], cpu[k], n[k], &at),
           rel_to_largest(runs[2][k], cpu[k], n[k], &at));
  printf("\n");
}

START_TEST(attention_fused_matches_explicit) {
  FOR_EACH_PRECISION(c) {
    if (c.p->dtype == AX_DTYPE_F32) {
      ck_assert(!ax_backend_fused_attention(c.gpu, 768, 12)); /* fp32 stays explicit */
      continue;
    }
    ck_assert(!ax_backend_fused_attention(c.gpu, 96, 4)); /* head size 24: explicit */
    check_attention(&c, 2, 200, 256, 2); /* head size 128, a partial last tile */
    check_attention(&c, 1, 128, 128, 2); /* 64, two whole tiles */
    check_attention(&c, 2, 77, 64, 4);   /* 16 */
    check_attention(&c, 1, 130, 96, 3);  /* 32 */
    check_attention(&c, 1, 1, 128, 2);   /* one token */
  }
}
END_TEST

/* --attention-dropout on the GPU's explicit attention (its dropout kernel draws the CPU's
 * mask) against the CPU's fp32, forward and backward, within the precision's tolerance as
 * above; the dropped output differs from the whole one. */
static void check_attention_dropout(Ctx *c, int B, int T, int C, int NH) {
  AxBackend *gpu = c->gpu;
  double tol = c->p->dtype == AX_DTYPE_BF16 ? 2e-2 : c->p->dtype == AX_DTYPE_F16 ? 4e-3 : 1e-5;
  size_t nq = (size_t)B * T * 3 * C, no = (size_t)B * T * C, tt = (size_t)NH * T * T;
  float *qkv = rnd(c, nq, 2.0f, 41), *dout = rnd(c, no, 1.0f, 42);
  AxDropout d = {.p_att = 0.2f, .seed = 9, .step = 2, .row0 = (uint64_t)3 * T, .head0 = 0,
                 .heads = (uint64_t)NH, .layer = 1, .probs = tu_alloc(tt * 4)};
  float *out = tu_alloc(no * 4), *whole = tu_alloc(no * 4), *att = tu_alloc((size_t)B * tt * 4);
  float *datt = tu_alloc(tt * 4), *dqkv = tu_alloc(nq * 4);
  ax_attention_forward(c->cpu, whole, att, qkv, B, T, C, NH, NULL);
  ax_attention_forward(c->cpu, out, att, qkv, B, T, C, NH, &d);
  ax_attention_backward(c->cpu, dqkv, datt, dout, out, att, qkv, B, T, C, NH, &d);
  ck_assert_double_gt(rel_to_largest(out, whole, no, &(size_t){0}), 1e-2);
  gpu->fused_attention = 0;
  void *g_qkv = up(c, qkv, nq), *g_dout = up(c, dout, no);
  void *g_out = dev(c, no * gpu->esz), *g_dqkv = dev(c, nq * gpu->esz);
  void *g_att = dev(c, ax_attention_bytes(0, gpu->esz, B, T, NH));
  void *g_scratch = dev(c, ax_attention_scratch_bytes(0, gpu->esz, B, T, NH));
  AxDropout g = d;
  g.probs = dev(c, tt * gpu->esz);
  ax_attention_forward(gpu, g_out, g_att, g_qkv, B, T, C, NH, &g);
  ax_attention_backward(gpu, g_dqkv, g_scratch, g_dout, g_out, g_att, g_qkv, B, T, C, NH, &g);
  ck_assert_msg(ax_sync(gpu) == AX_OK, "%s", ax_error_message());
  gpu->fused_attention = 1;
  same_to_largest(c, "attention dropout out", down(c, g_out, no), out, no, tol);
  same_to_largest(c, "attention dropout dqkv", down(c, g_dqkv, nq), dqkv, nq, tol);
  dev_free_all(c);
}

START_TEST(attention_dropout_same_mask) {
  FOR_EACH_PRECISION(c) {
    check_attention_dropout(&c, 2, 33, 64, 4);
  }
}
END_TEST

static void check_crossentropy(Ctx *c, int N, int V, float dloss) {
  int ldv = V + 6; /* padded columns: untouched for the loss alone, else 0 */
  size_t n = (size_t)N * ldv;
  float *logits = rnd(c, n, 4.0f, (uint64_t)V), *cpu = copy_of(logits, n);
  int32_t *tgt = tokens((size_t)N, V, 9);
  float *losses = tu_zeros((size_t)N), *dlosses = dev(c, (size_t)N * sizeof(float));
  void *dlog = up(c, logits, n);
  c->cpu->ops->crossentropy(c->cpu, losses, cpu, tgt, N, V, ldv, dloss);
  c->gpu->ops->crossentropy(c->gpu, dlosses, dlog, up_raw(c, tgt, (size_t)N * sizeof *tgt), N, V,
                            ldv, dloss);
  char what[80];
  snprintf(what, sizeof what, "crossentropy V=%d dloss=%g losses", V, dloss);
  same_f32(c, what, down_f32(c, dlosses, (size_t)N), losses, (size_t)N);
  snprintf(what, sizeof what, "crossentropy V=%d dloss=%g logits", V, dloss);
  float *g = down(c, dlog, n);
  same(c, what, g, cpu, n);
  for (int i = 0; i < N; i++)
    for (int j = V; j < ldv; j++)
      ck_assert_float_eq(g[(size_t)i * ldv + j], dloss == 0.0f ? logits[(size_t)i * ldv + j] : 0);
}

START_TEST(crossentropy_losses_and_gradients) {
  FOR_EACH_PRECISION(c) {
    check_crossentropy(&c, 7, 50, 0.0f);
    check_crossentropy(&c, 7, 50, 0.25f);
    check_crossentropy(&c, 3, 5000, 1.0f / 3); /* the wide-block path */
  }
}
END_TEST

/* ------------------------------------------------------------------ tensor-parallel pieces */

/* fp32 row statistics of identical inputs, summed in another order. */
static void same_stats(Ctx *c, const char *what, const float *gpu, const float *cpu, size_t n) {
  same_tol(c, what, gpu, cpu, n, 1e-5, 1e-5);
}

/* Positive values (centred sums of squares, softmax sums). */
static float *positive(size_t n, float lo, uint64_t seed) {
  float *x = tu_random(n, 1.0f, seed);
  for (size_t i = 0; i < n; i++) x[i] = lo + fabsf(x[i]) * lo;
  return x;
}

START_TEST(tp_layernorm_pieces) {
  FOR_EACH_PRECISION(c) {
    int N = 45, C = 70, Ct = 140; /* a slice of 70 of each row's 140 channels */
    size_t nc = (size_t)N * C;
    float *x = rnd(&c, nc, 2.0f, 1), *w = rnd(&c, C, 1.0f, 2), *b = rnd(&c, C, 1.0f, 3);
    void *dx = up(&c, x, nc), *dw = up(&c, w, C), *db = up(&c, b, C);
    /* row sums, then centred on a whole row's sum */
    float *sums = tu_zeros(N), *center = tu_random(N, 40.0f, 4);
    float *dsums = dev(&c, N * sizeof(float)), *dcenter = up_raw(&c, center, N * sizeof(float));
    c.cpu->ops->row_sums(c.cpu, sums, x, NULL, Ct, N, C);
    c.gpu->ops->row_sums(c.gpu, dsums, dx, NULL, Ct, N, C);
    same_stats(&c, "row_sums", down_f32(&c, dsums, N), sums, N);
    c.cpu->ops->row_sums(c.cpu, sums, x, center, Ct, N, C);
    c.gpu->ops->row_sums(c.gpu, dsums, dx, dcenter, Ct, N, C);
    same_stats(&c, "row_sums centred", down_f32(&c, dsums, N), sums, N);
    /* apply: mean and rstd in as whole-row sums, out as the statistics */
    float *mean = copy_of(center, N), *rstd = positive(N, 50.0f, 5), *out = tu_zeros(nc);
    float *dmean = up_raw(&c, mean, N * sizeof(float)), *drstd = up_raw(&c, rstd, N * sizeof(float));
    void *dout = dev(&c, nc * c.gpu->esz);
    c.cpu->ops->layernorm_apply(c.cpu, out, mean, rstd, x, w, b, Ct, N, C);
    c.gpu->ops->layernorm_apply(c.gpu, dout, dmean, drstd, dx, dw, db, Ct, N, C);
    same(&c, "layernorm_apply out", down(&c, dout, nc), out, nc);
    same_stats(&c, "layernorm_apply mean", down_f32(&c, dmean, N), mean, N);
    same_stats(&c, "layernorm_apply rstd", down_f32(&c, drstd, N), rstd, N);
    /* backward from the CPU's statistics */
    dmean = up_raw(&c, mean, N * sizeof(float));
    drstd = up_raw(&c, rstd, N * sizeof(float));
    float *d = rnd(&c, nc, 1.0f, 6), *bsums = tu_zeros(2 * N);
    void *dd = up(&c, d, nc);
    float *dbsums = dev(&c, 2 * N * sizeof(float));
    c.cpu->ops->layernorm_backward_sums(c.cpu, bsums, d, x, w, mean, rstd, N, C);
    c.gpu->ops->layernorm_backward_sums(c.gpu, dbsums, dd, dx, dw, dmean, drstd, N, C);
    same_stats(&c, "layernorm_backward_sums", down_f32(&c, dbsums, 2 * N), bsums, 2 * N);
    float *wsums = tu_random(2 * N, 10.0f, 7), *dinp = rnd(&c, nc, 1.0f, 8);
    float *gw = rnd(&c, C, 1.0f, 9), *gb = rnd(&c, C, 1.0f, 10);
    void *ddinp = up(&c, dinp, nc), *dgw = up(&c, gw, C), *dgb = up(&c, gb, C);
    c.cpu->ops->layernorm_backward_apply(c.cpu, dinp, gw, gb, d, x, w, mean, rstd, wsums, Ct, N,
                                         C);
    c.gpu->ops->layernorm_backward_apply(c.gpu, ddinp, dgw, dgb, dd, dx, dw, dmean, drstd,
                                         up_raw(&c, wsums, 2 * N * sizeof(float)), Ct, N, C);
    same(&c, "layernorm_backward_apply dinp (+=)", down(&c, ddinp, nc), dinp, nc);
    same_sums(&c, "layernorm_backward_apply dw (+=)", down(&c, dgw, C), gw, C, N);
    same_sums(&c, "layernorm_backward_apply db (+=)", down(&c, dgb, C), gb, C, N);
  }
}
END_TEST

START_TEST(tp_embedding_range) {
  FOR_EACH_PRECISION(c) for (int with_wpe = 0; with_wpe < 2; with_wpe++) {
    int T = 16, N = 4 * T, C = 40, v0 = 30, v1 = 60; /* tokens below 90: some in the range */
    size_t nc = (size_t)N * C, nw = (size_t)(v1 - v0) * C, np = (size_t)T * C;
    int32_t *tok = tokens(N, 90, 3);
    float *wte = rnd(&c, nw, 1.0f, 1), *wpe = rnd(&c, np, 1.0f, 2), *out = tu_zeros(nc);
    void *dtok = up_raw(&c, tok, N * sizeof *tok), *dwte = up(&c, wte, nw), *dwpe = up(&c, wpe, np);
    void *dout = dev(&c, nc * c.gpu->esz);
    c.cpu->ops->embed_range_forward(c.cpu, out, tok, wte, with_wpe ? wpe : NULL, v0, v1, N, T, C);
    c.gpu->ops->embed_range_forward(c.gpu, dout, dtok, dwte, with_wpe ? dwpe : NULL, v0, v1, N, T,
                                    C);
    same(&c, with_wpe ? "embed_range_forward" : "embed_range_forward (no wpe)",
         down(&c, dout, nc), out, nc);
    float *d = rnd(&c, nc, 1.0f, 4), *gte = rnd(&c, nw, 1.0f, 5), *gpe = rnd(&c, np, 1.0f, 6);
    void *dd = up(&c, d, nc), *dgte = up(&c, gte, nw), *dgpe = up(&c, gpe, np);
    c.cpu->ops->embed_range_backward(c.cpu, gte, with_wpe ? gpe : NULL, d, tok, v0, v1, N, T, C);
    c.gpu->ops->embed_range_backward(c.gpu, dgte, with_wpe ? dgpe : NULL, dd, dtok, v0, v1, N, T,
                                     C);
    same_sums(&c, "embed_range_backward dwte (+=)", down(&c, dgte, nw), gte, nw, N);
    same_sums(&c, "embed_range_backward dwpe (+=)", down(&c, dgpe, np), gpe, np, N / T);
  }
}
END_TEST

/* One vocabulary slice [v0, v0 + nv) of a row of V ids, nv real columns of ld; the other slice's
 * maxima are random. */
static void check_xent_slice(Ctx *c, int N, int nv, int ld, int v0, int V, float dloss) {
  size_t n = (size_t)N * ld;
  float *logits = rnd(c, n, 4.0f, (uint64_t)nv), *cpu = copy_of(logits, n);
  int32_t *tgt = tokens((size_t)N, V, 11);
  void *dlog = up(c, logits, n), *dtgt = up_raw(c, tgt, (size_t)N * sizeof *tgt);
  float *maxima = tu_random(2 * (size_t)N, 4.0f, 12), *dmaxima = dev(c, 2 * N * sizeof(float));
  float *dmine = dmaxima; /* the slice's own maxima first, the other slice's after them */
  float *mx = tu_zeros(N), *sums = tu_zeros(2 * N), *losses = tu_zeros(N);
  float *dmx = dev(c, N * sizeof(float)), *dsums = dev(c, 2 * N * sizeof(float));
  float *dlosses = dev(c, N * sizeof(float));
  char what[96];
  c->cpu->ops->xent_row_max(c->cpu, maxima, cpu, N, nv, ld);
  c->gpu->ops->xent_row_max(c->gpu, dmine, dlog, N, nv, ld);
  snprintf(what, sizeof what, "xent_row_max nv=%d", nv);
  float *got = down_f32(c, dmine, N);
  if (nv == 0) /* no column: -inf */
    for (int i = 0; i < N; i++) ck_assert_msg(isinf(got[i]) && got[i] < 0, "%s: %g", what, got[i]);
  else
    same_stats(c, what, got, maxima, N);
  ck_assert(c->gpu->ops->copy(c->gpu, dmaxima, maxima, 2 * N * sizeof(float), AX_COPY_H2D,
                              AX_STREAM_COMPUTE) == AX_OK);
  c->cpu->ops->xent_sums(c->cpu, sums, mx, maxima, 2, cpu, tgt, v0, N, nv, ld);
  c->gpu->ops->xent_sums(c->gpu, dsums, dmx, dmaxima, 2, dlog, dtgt, v0, N, nv, ld);
  snprintf(what, sizeof what, "xent_sums nv=%d", nv);
  same_stats(c, what, down_f32(c, dsums, 2 * N), sums, 2 * N);
  same_stats(c, what, down_f32(c, dmx, N), mx, N);
  /* finish from the CPU's sums plus the other slice's (as the all-reduce gives every rank) */
  float *other = positive((size_t)N, 1.0f, 13);
  for (int i = 0; i < N; i++) sums[2 * i] += other[i];
  ck_assert(c->gpu->ops->copy(c->gpu, dsums, sums, 2 * N * sizeof(float), AX_COPY_H2D,
                              AX_STREAM_COMPUTE) == AX_OK);
  c->cpu->ops->xent_finish(c->cpu, losses, cpu, mx, sums, tgt, v0, N, nv, ld, dloss);
  c->gpu->ops->xent_finish(c->gpu, dlosses, dlog, dmx, dsums, dtgt, v0, N, nv, ld, dloss);
  snprintf(what, sizeof what, "xent_finish nv=%d dloss=%g losses", nv, dloss);
  same_f32(c, what, down_f32(c, dlosses, N), losses, N);
  snprintf(what, sizeof what, "xent_finish nv=%d dloss=%g logits", nv, dloss);
  same(c, what, down(c, dlog, n), cpu, n);
}

START_TEST(tp_crossentropy_slices) {
  FOR_EACH_PRECISION(c) {
    check_xent_slice(&c, 7, 50, 56, 50, 100, 0.0f);   /* the slice of ids 50..99 */
    check_xent_slice(&c, 7, 50, 56, 0, 100, 0.25f);   /* ids 0..49: half the targets */
    check_xent_slice(&c, 3, 2500, 2560, 2500, 5000, 1.0f / 3); /* wide rows */
    check_xent_slice(&c, 5, 0, 64, 100, 100, 0.5f);   /* a slice of padding only */
  }
}
END_TEST

/* ------------------------------------------------------------------ vector ops */

START_TEST(sumsq_scale_add) {
  FOR_EACH_PRECISION(c) {
    size_t n = 100003;
    float *x = rnd(&c, n, 1.0f, 1), *y = rnd(&c, n, 1.0f, 2);
    void *dx = up(&c, x, n), *dy = up(&c, y, n);
    double want = 0;
    for (size_t i = 0; i < n; i++) want += (double)x[i] * x[i];
    double got = c.gpu->ops->sumsq(c.gpu, dx, n);
    ck_assert_msg(fabs(got - want) <= 1e-5 * want, "%s sumsq %.12g vs %.12g", c.p->name, got, want);
    ck_assert_msg(fabs(c.cpu->ops->sumsq(c.cpu, x, n) - want) <= 1e-5 * want, "cpu sumsq");
    ck_assert_double_eq(c.gpu->ops->sumsq(c.gpu, dx, n), got); /* same bits again */
    c.cpu->ops->scale(c.cpu, x, 0.37f, n);
    c.gpu->ops->scale(c.gpu, dx, 0.37f, n);
    same(&c, "scale", down(&c, dx, n), x, n);
    c.cpu->ops->add(c.cpu, y, x, n);
    c.gpu->ops->add(c.gpu, dy, dx, n);
    same(&c, "add (+=)", down(&c, dy, n), y, n);
  }
}
END_TEST

/* ------------------------------------------------------------------ the device optimizer */

/* The device AdamW against the host's (the kernel --optimizer host runs): the same fp32 master
 * weights and moments bit for bit (with AVX2 the host fuses exactly the operations the device
 * does), with and without decay, a frozen second moment, and the compute-type copy of the new
 * weights within the precision's rounding. */
START_TEST(adamw_matches_the_host_kernel) {
  FOR_EACH_PRECISION(c) {
    size_t n = 100003;
    float *g = rnd(&c, n, 0.05f, 3); /* as the device holds them */
    for (int variant = 0; variant < 3; variant++) {
      AxAdamWHyper h = {.lr = 3e-3f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f,
                        .weight_decay = 0.1f, .step = 1 + 6 * variant, .grad_scale = 0.7f,
                        .v_frozen_at = variant == 2 ? 4 : 0};
      int decay = variant != 1;
      float *p = tu_random(n, 1.0f, 10 + variant), *m = tu_random(n, 0.01f, 20 + variant);
      float *v = tu_random(n, 1e-4f, 30 + variant);
      for (size_t i = 0; i < n; i++) v[i] = fabsf(v[i]);
      float *dp = up_raw(&c, p, n * 4), *dm = up_raw(&c, m, n * 4), *dv = up_raw(&c, v, n * 4);
      void *dg = up(&c, g, n), *dw = dev(&c, n * c.gpu->esz);
      AxAdamWCoef k = ax_adamw_coef(&h, decay);
      c.gpu->ops->adamw(c.gpu, dp, dm, dv, dg, dw, n, &k);
      ax_adamw_range(p, g, m, v, n, &h, decay);
      float *gp = down_f32(&c, dp, n), *gm = down_f32(&c, dm, n), *gv = down_f32(&c, dv, n);
#ifdef AX_SIMD_AVX2
      for (size_t i = 0; i < n; i++)
        ck_assert_msg(gp[i] == p[i] && gm[i] == m[i] && gv[i] == v[i],
                      "%s adamw variant %d element %zu: p %.9g/%.9g m %.9g/%.9g v %.9g/%.9g",
                      c.p->name, variant, i, gp[i], p[i], gm[i], m[i], gv[i], v[i]);
#else
      same_f32(&c, "adamw p", gp, p, n);
      same_f32(&c, "adamw m", gm, m, n);
      same_f32(&c, "adamw v", gv, v, n);
#endif
      same(&c, "adamw compute copy", down(&c, dw, n), p, n);
    }
  }
}
END_TEST

/* ------------------------------------------------------------------ one training step */

typedef struct {
  AxGptStage *st;
  double loss;
  float *grads; /* host fp32 */
} StepResult;

static const AxGptConfig MODEL = {.max_seq = 16, .vocab = 96, .padded_vocab = 128, .layers = 2,
                                  .heads = 4, .channels = 64};
static const AxStageSpec SPEC = {.l0 = 0, .l1 = 2, .first = 1, .last = 1, .B = 2, .T = 16,
                                 .n_slots = 1};

/* Forward, loss and backward of one micro-batch on `be` from host fp32 parameters. */
static void train_step(AxBackend *be, const float *params, const int32_t *in, const int32_t *tgt,
                       StepResult *r) {
  ck_assert_msg(ax_stage_create(&r->st, be, &MODEL, &SPEC) == AX_OK, "%s", ax_error_message());
  const AxStageLayout *lay = ax_stage_layout_of(r->st);
  ck_assert(be->ops->upload_f32(be, ax_stage_params(r->st), params, lay->total,
                                AX_STREAM_COMPUTE) == AX_OK);
  ck_assert(ax_stage_zero_grads(r->st) == AX_OK);
  int n = SPEC.B * SPEC.T;
  ck_assert_msg(ax_stage_forward(r->st, 0, in, NULL, AX_MEM_HOST) == AX_OK, "%s",
                ax_error_message());
  ck_assert_msg(ax_stage_loss_backward(r->st, 0, tgt, 1.0f / n, &r->loss) == AX_OK, "%s",
                ax_error_message());
  r->grads = tu_alloc(lay->total * sizeof(float));
  ck_assert(be->ops->download_f32(be, r->grads, ax_stage_grads(r->st), lay->total,
                                  AX_STREAM_COMPUTE) == AX_OK);
  ck_assert_int_eq(ax_sync(be), AX_OK);
}

START_TEST(training_step_matches_cpu) {
  AxStageLayout lay;
  ax_stage_layout(&lay, &MODEL, 0, MODEL.layers, 1, 1);
  float *params = tu_alloc(lay.total * sizeof(float));
  ax_gpt_init_stage(&MODEL, &lay, 7, params);
  int n = SPEC.B * SPEC.T;
  int32_t *in = tokens((size_t)n, MODEL.vocab, 1), *tgt = tokens((size_t)n, MODEL.vocab, 2);
  StepResult ref;
  train_step(g_cpu, params, in, tgt, &ref);
  for (int i = 0; i < N_PRECISIONS; i++) {
    const Precision *p = &PRECISIONS[i];
    StepResult r, again;
    if (!g_gpu[i]) continue;
    train_step(g_gpu[i], params, in, tgt, &r);
    ck_assert_msg(fabs(r.loss - ref.loss) <= p->loss_rel * ref.loss, "%s loss %.9g vs cpu %.9g",
                  p->name, r.loss, ref.loss);
    for (int id = 0; id < AX_N_PARAMS; id++) {
      const float *g = r.grads + lay.offset[id], *w = ref.grads + lay.offset[id];
      double big = 0, diff = 0;
      for (size_t k = 0; k < lay.count[id]; k++) {
        big = fmax(big, fabs(w[k]));
        diff = fmax(diff, fabs((double)g[k] - w[k]));
      }
      ck_assert_msg(diff <= p->grad_rel * big + 1e-12, "%s d%s: largest difference %.3g, largest "
                    "gradient %.3g", p->name, ax_param_name(id), diff, big);
    }
    train_step(g_gpu[i], params, in, tgt, &again);
    ck_assert_double_eq(again.loss, r.loss);
    ck_assert_mem_eq(again.grads, r.grads, lay.total * sizeof(float));
    printf("check_cuda: one step, %s: loss %.7f (cpu fp32 %.7f)\n", p->name, r.loss, ref.loss);
    ax_stage_destroy(r.st);
    ax_stage_destroy(again.st);
  }
  ax_stage_destroy(ref.st);
}
END_TEST

static int run_suite(void) {
  AxBackendConfig bc = {.device = "cpu", .dtype = AX_DTYPE_F32, .threads = 2, .local_size = 1};
  g_cpu = ax_backend_create(&bc);
  bc.device = "cuda";
  bc.fused_attention = 1; /* the training step takes it in bf16 and fp16 */
  for (int i = 0; i < N_PRECISIONS && g_cpu; i++) {
    bc.dtype = PRECISIONS[i].dtype;
    g_gpu[i] = ax_backend_create(&bc);
    if (g_gpu[i]) continue;
    /* bf16 needs compute capability 8.0: an older GPU skips it, and only it */
    int skip = PRECISIONS[i].dtype == AX_DTYPE_BF16 && strstr(ax_error_text(), "8.0 or newer");
    printf("check_cuda: %s %s: %s\n", PRECISIONS[i].name, skip ? "skipped" : "backend failed",
           ax_error_message());
    if (!skip) return 1;
    ax_error_clear();
  }
  if (!g_cpu) return 1;
  printf("check_cuda: %s\n", g_gpu[0]->desc);
  Suite *s = suite_create("cuda");
  TCase *tc = tu_tcase(s, "cuda-vs-cpu", 300);
  tcase_add_test(tc, memory_copies_and_conversions);
  tcase_add_test(tc, gemm_transposes_strides_batches);
  tcase_add_test(tc, encoder_forward_backward);
  tcase_add_test(tc, layernorm_forward_backward);
  tcase_add_test(tc, bias_residual_and_backward);
  tcase_add_test(tc, dropout_same_mask);
  tcase_add_test(tc, attention_dropout_same_mask);
  tcase_add_test(tc, gelu_forward_backward);
  tcase_add_test(tc, softmax_causal_forward_backward);
  tcase_add_test(tc, attention_fused_matches_explicit);
  tcase_add_test(tc, crossentropy_losses_and_gradients);
  tcase_add_test(tc, tp_layernorm_pieces);
  tcase_add_test(tc, tp_embedding_range);
  tcase_add_test(tc, tp_crossentropy_slices);
  tcase_add_test(tc, sumsq_scale_add);
  tcase_add_test(tc, adamw_matches_the_host_kernel);
  tcase_add_test(tc, training_step_matches_cpu);
  int rc = tu_run_nofork(s); /* CUDA does not survive fork() */
  for (int i = 0; i < N_PRECISIONS; i++) ax_backend_destroy(g_gpu[i]);
  ax_backend_destroy(g_cpu);
  return rc;
}
#endif /* AX_HAVE_CUDA */

int main(void) {
#ifndef AX_HAVE_CUDA
  printf("skipped: built without CUDA\n");
  return 0;
#else
  char why[200];
  int n = ax_backend_device_count("cuda", why, sizeof why); /* loads libaxonn-cuda.so */
  if (n < 0) {
    printf("check_cuda: %s\n", ax_error_message());
    return 1;
  }
  if (n < 1) {
    printf("skipped: no GPU (%s)\n", why);
    return 0;
  }
  return run_suite();
#endif
}
