/* backend_cpu.c — the CPU implementation of the device interface: fp32 everywhere, GEMMs
 * through CBLAS (OpenBLAS), element-wise kernels from cpu_kernels.c on a pinned thread pool.
 * "Device" memory is ordinary host memory, so copies are memcpy and streams are labels. */
#include <cblas.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "backend.h"
#include "backend_impl.h"
#include "binding.h"
#include "cpu_kernels.h"
#include "cpu_tp_kernels.h"
#include "src/core/error.h"

typedef struct {
  AxPool *pool;
  AxBinding *binding;
} CpuImpl;

static AxPool *pool_of(AxBackend *be) { return ((CpuImpl *)be->impl)->pool; }

enum { CPU_ALIGN = 64 };

static void *cpu_alloc(AxBackend *be, size_t bytes) {
  (void)be;
  void *p = NULL;
  size_t rounded = (bytes + CPU_ALIGN - 1) / CPU_ALIGN * CPU_ALIGN;
  if (posix_memalign(&p, CPU_ALIGN, rounded ? rounded : CPU_ALIGN) != 0) {
    AX_FAIL("out of memory allocating %zu bytes", bytes);
    return NULL;
  }
  return p;
}

static void cpu_free(AxBackend *be, void *p) {
  (void)be;
  free(p);
}

/* Page-aligned and locked where the OS allows (the CPU stand-in for pinned memory). */
typedef struct {
  size_t bytes;
  int locked;
} HostHeader;

static void *cpu_host_alloc(AxBackend *be, size_t bytes) {
  (void)be;
  size_t page = (size_t)sysconf(_SC_PAGESIZE), total = bytes + page;
  void *base = NULL;
  if (posix_memalign(&base, page, total) != 0) {
    AX_FAIL("out of memory allocating %zu bytes of host memory", bytes);
    return NULL;
  }
  HostHeader *h = base;
  h->bytes = total;
  h->locked = mlock(base, total) == 0;
  return (char *)base + page;
}

static void cpu_host_free(AxBackend *be, void *p) {
  (void)be;
  if (!p) return;
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  HostHeader *h = (HostHeader *)((char *)p - page);
  if (h->locked) munlock(h, h->bytes);
  free(h);
}

static int cpu_copy(AxBackend *be, void *dst, const void *src, size_t bytes, AxCopyKind kind,
                    AxStream s) {
  (void)be, (void)kind, (void)s;
  if (dst != src && bytes) memmove(dst, src, bytes);
  return AX_OK;
}

static int cpu_zero(AxBackend *be, void *p, size_t bytes, AxStream s) {
  (void)be, (void)s;
  memset(p, 0, bytes);
  return AX_OK;
}

static int cpu_sync(AxBackend *be, AxStream s) {
  (void)be, (void)s;
  return AX_OK;
}

static int cpu_upload_f32(AxBackend *be, void *dst, const float *src, size_t n, AxStream s) {
  return cpu_copy(be, dst, src, n * sizeof(float), AX_COPY_H2D, s);
}

static int cpu_download_f32(AxBackend *be, float *dst, const void *src, size_t n, AxStream s) {
  return cpu_copy(be, dst, src, n * sizeof(float), AX_COPY_D2H, s);
}

/* One SGEMM on the slice [m0, m0+m) x [n0, n0+n) of C (all of K), on the calling thread. */
static void sgemm_slice(const AxGemm *g, const float *a, const float *b, float *c, int m0, int m,
                        int n0, int n) {
  if (m <= 0 || n <= 0) return;
  const float *as = g->trans_a ? a + m0 : a + (size_t)m0 * g->lda;
  const float *bs = g->trans_b ? b + (size_t)n0 * g->ldb : b + n0;
  cblas_sgemm(CblasRowMajor, g->trans_a ? CblasTrans : CblasNoTrans,
              g->trans_b ? CblasTrans : CblasNoTrans, m, n, g->k, g->alpha, as, g->lda, bs,
              g->ldb, g->beta, c + (size_t)m0 * g->ldc + n0, g->ldc);
}

typedef struct {
  const AxGemm *g;
  const float *a, *b;
  float *c;
} GemmJob;

enum { GEMM_GRAIN = 16 }; /* split M or N in multiples of this (whole micro-kernel tiles) */

static void split_grains(int total, int tid, int nt, int *lo, int *n) {
  size_t blocks = (size_t)(total + GEMM_GRAIN - 1) / GEMM_GRAIN, b0, b1;
  ax_split(blocks, tid, nt, &b0, &b1);
  *lo = (int)b0 * GEMM_GRAIN;
  int hi = (int)b1 * GEMM_GRAIN < total ? (int)b1 * GEMM_GRAIN : total;
  *n = hi - *lo;
}

/* Every thread takes whole matrices of a batch when there are enough of them; otherwise a
 * slice of rows (or columns, whichever is longer) of every matrix. */
static void gemm_task(void *ctx, int tid, int nt) {
  const GemmJob *j = ctx;
  const AxGemm *g = j->g;
  int batch = g->batch > 1 ? g->batch : 1;
  if (batch >= nt) {
    size_t lo, hi;
    ax_split((size_t)batch, tid, nt, &lo, &hi);
    for (size_t i = lo; i < hi; i++)
      sgemm_slice(g, j->a + i * g->stride_a, j->b + i * g->stride_b, j->c + i * g->stride_c, 0,
                  g->m, 0, g->n);
    return;
  }
  int lo, n;
  split_grains(g->m >= g->n ? g->m : g->n, tid, nt, &lo, &n);
  for (int i = 0; i < batch; i++) {
    const float *a = j->a + i * g->stride_a, *b = j->b + i * g->stride_b;
    float *c = j->c + i * g->stride_c;
    if (g->m >= g->n)
      sgemm_slice(g, a, b, c, lo, n, 0, g->n);
    else
      sgemm_slice(g, a, b, c, 0, g->m, lo, n);
  }
}

static void cpu_gemm(AxBackend *be, const AxGemm *g, const void *a, const void *b, void *c) {
  GemmJob j = {g, a, b, c};
  double work = 2.0 * g->m * g->n * (double)g->k * (g->batch > 1 ? g->batch : 1);
  if (work < 1e6) /* too small to be worth waking threads */
    gemm_task(&j, 0, 1);
  else
    ax_pool_run(pool_of(be), gemm_task, &j);
}

static void cpu_encoder_forward(AxBackend *be, void *out, const int32_t *tokens, const void *wte,
                                const void *wpe, int B, int T, int C) {
  ax_cpu_encoder_forward(pool_of(be), out, tokens, wte, wpe, B, T, C);
}
static void cpu_encoder_backward(AxBackend *be, void *dwte, void *dwpe, const void *dout,
                                 const int32_t *tokens, int B, int T, int C) {
  ax_cpu_encoder_backward(pool_of(be), dwte, dwpe, dout, tokens, B, T, C);
}
static void cpu_layernorm_forward(AxBackend *be, void *out, float *mean, float *rstd,
                                  const void *inp, const void *w, const void *b, int N, int C) {
  ax_cpu_layernorm_forward(pool_of(be), out, mean, rstd, inp, w, b, N, C);
}
static void cpu_layernorm_backward(AxBackend *be, void *dinp, void *dw, void *db,
                                   const void *dout, const void *inp, const void *w,
                                   const float *mean, const float *rstd, int N, int C) {
  ax_cpu_layernorm_backward(pool_of(be), dinp, dw, db, dout, inp, w, mean, rstd, N, C);
}
static void cpu_bias_residual(AxBackend *be, void *out, const void *bias, const void *residual,
                              int N, int C) {
  ax_cpu_bias_residual(pool_of(be), out, bias, residual, N, C);
}
static void cpu_bias_backward(AxBackend *be, void *dbias, const void *dout, int N, int C) {
  ax_cpu_bias_backward(pool_of(be), dbias, dout, N, C);
}
static void cpu_gelu_forward(AxBackend *be, void *out, const void *inp, size_t n) {
  ax_cpu_gelu_forward(pool_of(be), out, inp, n);
}
static void cpu_gelu_backward(AxBackend *be, void *dinp, const void *inp, const void *dout,
                              size_t n) {
  ax_cpu_gelu_backward(pool_of(be), dinp, inp, dout, n);
}
static void cpu_softmax_fwd(AxBackend *be, void *att, int n_mats, int T) {
  ax_cpu_softmax_causal_forward(pool_of(be), att, n_mats, T);
}
static void cpu_softmax_bwd(AxBackend *be, void *datt, const void *att, int n_mats, int T) {
  ax_cpu_softmax_causal_backward(pool_of(be), datt, att, n_mats, T);
}
static void cpu_crossentropy(AxBackend *be, float *losses, void *logits, const int32_t *targets,
                             int N, int V, int ldv, float dloss) {
  ax_cpu_crossentropy(pool_of(be), losses, logits, targets, N, V, ldv, dloss);
}
static void cpu_dropout(AxBackend *be, void *out, const void *x, const void *residual,
                        const AxDropoutMask *m) {
  ax_cpu_dropout(pool_of(be), out, x, residual, m);
}
static double cpu_sumsq(AxBackend *be, const void *x, size_t n) {
  return ax_cpu_sumsq(pool_of(be), x, n);
}
static void cpu_scale(AxBackend *be, void *x, float s, size_t n) {
  ax_cpu_scale(pool_of(be), x, s, n);
}
static void cpu_add(AxBackend *be, void *dst, const void *src, size_t n) {
  ax_cpu_add(pool_of(be), dst, src, n);
}

static void cpu_destroy(AxBackend *be) {
  CpuImpl *impl = be->impl;
  ax_pool_destroy(impl->pool);
  ax_binding_destroy(impl->binding);
  free(impl);
  free(be);
}

static void cpu_row_sums(AxBackend *be, float *out, const void *x, const float *center,
                         int C_total, int N, int C) {
  ax_cpu_row_sums(pool_of(be), out, x, center, C_total, N, C);
}
static void cpu_ln_apply(AxBackend *be, void *out, float *mean, float *rstd, const void *x,
                         const void *w, const void *b, int C_total, int N, int C) {
  ax_cpu_layernorm_apply(pool_of(be), out, mean, rstd, x, w, b, C_total, N, C);
}
static void cpu_ln_bwd_sums(AxBackend *be, float *sums, const void *dout, const void *x,
                            const void *w, const float *mean, const float *rstd, int N, int C) {
  ax_cpu_layernorm_backward_sums(pool_of(be), sums, dout, x, w, mean, rstd, N, C);
}
static void cpu_ln_bwd_apply(AxBackend *be, void *dinp, void *dw, void *db, const void *dout,
                             const void *x, const void *w, const float *mean, const float *rstd,
                             const float *sums, int C_total, int N, int C) {
  ax_cpu_layernorm_backward_apply(pool_of(be), dinp, dw, db, dout, x, w, mean, rstd, sums,
                                  C_total, N, C);
}
static void cpu_embed_fwd(AxBackend *be, void *out, const int32_t *tokens, const void *wte,
                          const void *wpe, int v0, int v1, int N, int T, int C) {
  ax_cpu_embed_range_forward(pool_of(be), out, tokens, wte, wpe, v0, v1, N, T, C);
}
static void cpu_embed_bwd(AxBackend *be, void *dwte, void *dwpe, const void *dout,
                          const int32_t *tokens, int v0, int v1, int N, int T, int C) {
  ax_cpu_embed_range_backward(pool_of(be), dwte, dwpe, dout, tokens, v0, v1, N, T, C);
}
static void cpu_xent_max(AxBackend *be, float *mx, const void *logits, int N, int nv, int ld) {
  ax_cpu_xent_row_max(pool_of(be), mx, logits, N, nv, ld);
}
static void cpu_xent_sums(AxBackend *be, float *sums, float *mx, const float *maxima,
                          int n_maxima, const void *logits, const int32_t *targets, int v0, int N,
                          int nv, int ld) {
  ax_cpu_xent_sums(pool_of(be), sums, mx, maxima, n_maxima, logits, targets, v0, N, nv, ld);
}
static void cpu_xent_finish(AxBackend *be, float *losses, void *logits, const float *mx,
                            const float *sums, const int32_t *targets, int v0, int N, int nv,
                            int ld, float dloss) {
  ax_cpu_xent_finish(pool_of(be), losses, logits, mx, sums, targets, v0, N, nv, ld, dloss);
}

static const AxBackendOps CPU_OPS = {
    .name = "cpu",
    .destroy = cpu_destroy,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .host_alloc = cpu_host_alloc,
    .host_free = cpu_host_free,
    .copy = cpu_copy,
    .zero = cpu_zero,
    .sync = cpu_sync,
    .upload_f32 = cpu_upload_f32,
    .download_f32 = cpu_download_f32,
    .gemm = cpu_gemm,
    .encoder_forward = cpu_encoder_forward,
    .encoder_backward = cpu_encoder_backward,
    .layernorm_forward = cpu_layernorm_forward,
    .layernorm_backward = cpu_layernorm_backward,
    .bias_residual = cpu_bias_residual,
    .bias_backward = cpu_bias_backward,
    .gelu_forward = cpu_gelu_forward,
    .gelu_backward = cpu_gelu_backward,
    .softmax_causal_forward = cpu_softmax_fwd,
    .softmax_causal_backward = cpu_softmax_bwd,
    .crossentropy = cpu_crossentropy,
    .sumsq = cpu_sumsq,
    .dropout = cpu_dropout,
    .scale = cpu_scale,
    .add = cpu_add,
    .row_sums = cpu_row_sums,
    .layernorm_apply = cpu_ln_apply,
    .layernorm_backward_sums = cpu_ln_bwd_sums,
    .layernorm_backward_apply = cpu_ln_bwd_apply,
    .embed_range_forward = cpu_embed_fwd,
    .embed_range_backward = cpu_embed_bwd,
    .xent_row_max = cpu_xent_max,
    .xent_sums = cpu_xent_sums,
    .xent_finish = cpu_xent_finish,
};

static void pin_worker(void *arg, int tid) { ax_binding_pin_thread(arg, tid); }

/* Our pinned pool runs every parallel region, GEMMs included, so BLAS itself runs one
 * thread per call and never competes with the pool for cores. */
static void single_threaded_blas(void) {
#ifdef OPENBLAS_VERSION
  openblas_set_num_threads(1);
#endif
}

const char *ax_backend_blas_name(void) {
#ifdef OPENBLAS_VERSION
  return openblas_get_config();
#else
  return "CBLAS (not OpenBLAS)";
#endif
}

AxBackend *ax_backend_cpu_create(const AxBackendConfig *cfg) {
  if (cfg->dtype != AX_DTYPE_F32) {
    AX_FAIL("the CPU backend computes in fp32; --precision %s needs --device cuda",
            ax_dtype_name(cfg->dtype));
    return NULL;
  }
  AxBackend *be = ax_calloc(1, sizeof *be);
  CpuImpl *impl = ax_calloc(1, sizeof *impl);
  if (!be || !impl) goto fail;
  int threads = cfg->threads, share_rank, share_size;
  ax_backend_cpu_share(cfg, &share_rank, &share_size);
  if (threads <= 0) { /* this rank's share of the cores it may use */
    AxBinding *probe = ax_binding_create(1, share_rank, share_size, 0);
    if (!probe) goto fail;
    threads = ax_binding_available_cores(probe) / share_size;
    if (threads < 1) threads = 1;
    ax_binding_destroy(probe);
  }
  impl->binding = ax_binding_create(threads, share_rank, share_size, cfg->bind);
  if (!impl->binding) goto fail;
  if (threads > 256) threads = 256;
  ax_binding_pin_thread(impl->binding, 0);
  impl->pool = ax_pool_create(threads, pin_worker, impl->binding);
  if (!impl->pool) goto fail;
  single_threaded_blas();
  be->ops = &CPU_OPS;
  be->dtype = AX_DTYPE_F32;
  be->esz = sizeof(float);
  be->threads = threads;
  be->is_host = 1;
  be->impl = impl;
  snprintf(be->desc, sizeof be->desc, "cpu, fp32, %d thread(s), %s", threads,
           ax_binding_describe(impl->binding));
  return be;
fail:
  if (impl) {
    ax_binding_destroy(impl->binding);
    free(impl);
  }
  free(be);
  return NULL;
}
