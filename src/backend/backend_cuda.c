/* backend_cuda.c — the CUDA implementation of the device interface (see backend.h and the
 * contract in backend_cuda.h): device memory and pinned host memory, three streams, fp32 <->
 * compute-type uploads and downloads through a device staging buffer, GEMMs through cuBLAS
 * (bf16/fp16/fp32 storage, fp32 accumulation) and the kernels of cuda_kernels.cu.
 * Every CUDA and cuBLAS call is checked; failures are recorded with file and line. */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "backend_cuda.h"
#include "cuda_attention.h"
#include "cuda_kernels.h"
#include "cuda_tp_kernels.h"
#include "src/core/error.h"

enum { STAGE_ELEMS = 8 << 20 }; /* fp32 staging per stream for conversions: 32 MiB */

typedef struct {
  int device;
  int sms;
  int failed; /* an asynchronous failure was recorded: later copies and syncs fail */
  cudaStream_t streams[AX_N_STREAMS];
  cudaEvent_t events[AX_N_STREAMS]; /* ordering marks between the streams */
  cublasHandle_t blas;
  float *stage[AX_N_STREAMS]; /* device, allocated on first use */
  double *partials, *partials_host;
  float *reduce_scratch; /* AXK_SCRATCH_FLOATS, the compute stream's column reductions */
  AxCudaBinding *binding;
  /* the live blocks of cu_alloc, to count what cu_free gives back (allocations are few: a
   * stage's arenas and buffers, made by one thread while setting up) */
  struct { void *p; size_t bytes; } *blocks;
  int n_blocks, cap_blocks;
  size_t in_use;  /* device bytes allocated now: blocks, staging, scratch */
} CudaImpl;

/* ------------------------------------------------------------------ checked calls */

static int cuda_check(CudaImpl *im, cudaError_t e, const char *call, const char *file, int line) {
  if (e == cudaSuccess) return AX_OK;
  if (im) im->failed = 1;
  return ax_fail_at(file, line, "CUDA error %s (%s) in %s", cudaGetErrorName(e),
                    cudaGetErrorString(e), call);
}

static const char *blas_status_name(cublasStatus_t s) {
  switch (s) {
  case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
  case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
  case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
  case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
  case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
  case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
  case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
  case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
  default: return "CUBLAS_STATUS_(other)";
  }
}

static int blas_check(CudaImpl *im, cublasStatus_t s, const char *call, const char *file,
                      int line) {
  if (s == CUBLAS_STATUS_SUCCESS) return AX_OK;
  if (im) im->failed = 1;
  return ax_fail_at(file, line, "cuBLAS error %s (%d) in %s", blas_status_name(s), (int)s, call);
}

#define CUDA_CHECK(im, call) cuda_check((im), (call), #call, __FILE__, __LINE__)
#define BLAS_CHECK(im, call) blas_check((im), (call), #call, __FILE__, __LINE__)

/* The backend's state, with this thread's current device set to the backend's GPU (any
 * thread may call the backend; CUDA's current device is per thread). */
static CudaImpl *use(AxBackend *be) {
  CudaImpl *im = be->impl;
  int cur = -1;
  if (cudaGetDevice(&cur) != cudaSuccess || cur != im->device)
    CUDA_CHECK(im, cudaSetDevice(im->device));
  return im;
}

static int status(const CudaImpl *im) {
  return im->failed ? ax_fail_at(__FILE__, __LINE__, "an earlier CUDA failure on GPU %d",
                                 im->device)
                    : AX_OK;
}

/* Stream index of s (an unknown value means the compute stream). */
static int sidx(AxStream s) { return (unsigned)s < AX_N_STREAMS ? (int)s : AX_STREAM_COMPUTE; }

static AxkCtx kctx(AxBackend *be, CudaImpl *im) {
  return (AxkCtx){im->streams[AX_STREAM_COMPUTE], be->dtype, im->sms, im->reduce_scratch,
                  AXK_SCRATCH_FLOATS};
}

/* Enqueues a kernel launcher on the compute stream; a failed launch is recorded. */
#define LAUNCH(be, fn, ...)                                                                      \
  do {                                                                                           \
    CudaImpl *im_ = use(be);                                                                     \
    AxkCtx k_ = kctx((be), im_);                                                                 \
    CUDA_CHECK(im_, fn(&k_, __VA_ARGS__));                                                       \
  } while (0)

/* ------------------------------------------------------------------ memory */

/* Device bytes in use go up or down by `delta`; the backend's peak follows. */
static void count_bytes(AxBackend *be, CudaImpl *im, long long delta) {
  im->in_use += delta;
  if (im->in_use > be->device_peak_bytes) be->device_peak_bytes = im->in_use;
}

static int remember_block(AxBackend *be, CudaImpl *im, void *p, size_t bytes) {
  if (im->n_blocks == im->cap_blocks) {
    int cap = im->cap_blocks ? 2 * im->cap_blocks : 64;
    void *grown = realloc(im->blocks, (size_t)cap * sizeof *im->blocks);
    if (!grown) return AX_FAIL("out of host memory for the device allocation table");
    im->blocks = grown;
    im->cap_blocks = cap;
  }
  im->blocks[im->n_blocks].p = p;
  im->blocks[im->n_blocks++].bytes = bytes;
  count_bytes(be, im, (long long)bytes);
  return AX_OK;
}

static void forget_block(AxBackend *be, CudaImpl *im, void *p) {
  for (int i = im->n_blocks - 1; i >= 0; i--)
    if (im->blocks[i].p == p) {
      count_bytes(be, im, -(long long)im->blocks[i].bytes);
      im->blocks[i] = im->blocks[--im->n_blocks];
      return;
    }
}

static void *cu_alloc(AxBackend *be, size_t bytes) {
  CudaImpl *im = use(be);
  void *p = NULL;
  cudaError_t e = cudaMalloc(&p, bytes ? bytes : 1);
  if (e == cudaSuccess) {
    if (remember_block(be, im, p, bytes) == AX_OK) return p;
    cudaFree(p);
    return NULL;
  }
  size_t free_b = 0, total_b = 0;
  cudaGetLastError(); /* an allocation failure is not sticky: clear it */
  cudaMemGetInfo(&free_b, &total_b);
  AX_FAIL("out of GPU memory allocating %zu bytes on GPU %d (%.2f of %.2f GiB free): %s", bytes,
          im->device, free_b / 1073741824.0, total_b / 1073741824.0, cudaGetErrorString(e));
  return NULL;
}

static void cu_free(AxBackend *be, void *p) {
  if (!p) return;
  CudaImpl *im = use(be);
  forget_block(be, im, p);
  CUDA_CHECK(im, cudaFree(p));
}

static void *cu_host_alloc(AxBackend *be, size_t bytes) {
  use(be);
  void *p = NULL;
  cudaError_t e = cudaHostAlloc(&p, bytes ? bytes : 1, cudaHostAllocPortable);
  if (e == cudaSuccess) return p;
  cudaGetLastError();
  AX_FAIL("cannot allocate %zu bytes of pinned host memory: %s", bytes, cudaGetErrorString(e));
  return NULL;
}

static void cu_host_free(AxBackend *be, void *p) {
  if (p) CUDA_CHECK(use(be), cudaFreeHost(p));
}

static float *staging(AxBackend *be, CudaImpl *im, int i) {
  if (im->stage[i]) return im->stage[i];
  if (CUDA_CHECK(im, cudaMalloc((void **)&im->stage[i], STAGE_ELEMS * sizeof(float))) != AX_OK) {
    im->stage[i] = NULL;
    return NULL;
  }
  count_bytes(be, im, STAGE_ELEMS * sizeof(float));
  return im->stage[i];
}

/* ------------------------------------------------------------------ copies and streams */

/* Program order across streams: work put on the copy or comm stream first waits for the
 * compute work enqueued before it (after_compute), and compute work enqueued later waits for it
 * (before_compute). The host is not held up for device-only work. */
static int after_compute(CudaImpl *im, int s) {
  if (s == AX_STREAM_COMPUTE) return AX_OK;
  cudaEvent_t ev = im->events[AX_STREAM_COMPUTE];
  AX_TRY(CUDA_CHECK(im, cudaEventRecord(ev, im->streams[AX_STREAM_COMPUTE])));
  return CUDA_CHECK(im, cudaStreamWaitEvent(im->streams[s], ev, 0));
}

static int before_compute(CudaImpl *im, int s) {
  if (s == AX_STREAM_COMPUTE) return AX_OK;
  AX_TRY(CUDA_CHECK(im, cudaEventRecord(im->events[s], im->streams[s])));
  return CUDA_CHECK(im, cudaStreamWaitEvent(im->streams[AX_STREAM_COMPUTE], im->events[s], 0));
}

static int host_done(CudaImpl *im, cudaStream_t st) {
  AX_TRY(CUDA_CHECK(im, cudaStreamSynchronize(st)));
  return status(im);
}

/* Page-locked host memory (cudaHostAlloc'd or registered)? */
static int is_pinned(const void *p) {
  struct cudaPointerAttributes a;
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError(); /* CUDA < 11 fails on pageable memory: not pinned */
    return 0;
  }
  return a.type == cudaMemoryTypeHost;
}

/* A copy between `host` memory and the device on `st` has been enqueued: make it complete as
 * far as the host buffer goes. cudaMemcpyAsync already returns only after a pageable source
 * was staged or a pageable destination written; pinned memory is truly asynchronous. */
static int host_side_done(CudaImpl *im, cudaStream_t st, const void *host) {
  return is_pinned(host) ? host_done(im, st) : status(im);
}

static int cu_copy(AxBackend *be, void *dst, const void *src, size_t bytes, AxCopyKind kind,
                   AxStream s) {
  static const enum cudaMemcpyKind KINDS[] = {cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost,
                                              cudaMemcpyDeviceToDevice, cudaMemcpyHostToHost};
  CudaImpl *im = use(be);
  int i = sidx(s);
  cudaStream_t st = im->streams[i];
  if (!bytes || dst == src) return status(im);
  if ((unsigned)kind > AX_COPY_H2H) return AX_FAIL("internal: copy kind %d", (int)kind);
  if (kind == AX_COPY_H2H) {
    memmove(dst, src, bytes);
    return status(im);
  }
  AX_TRY(after_compute(im, i));
  AX_TRY(CUDA_CHECK(im, cudaMemcpyAsync(dst, src, bytes, KINDS[kind], st)));
  if (kind != AX_COPY_D2H) AX_TRY(before_compute(im, i)); /* device memory written */
  if (kind == AX_COPY_D2D) return status(im);
  return host_side_done(im, st, kind == AX_COPY_H2D ? src : dst);
}

static int cu_zero(AxBackend *be, void *p, size_t bytes, AxStream s) {
  CudaImpl *im = use(be);
  int i = sidx(s);
  if (bytes) {
    AX_TRY(after_compute(im, i));
    AX_TRY(CUDA_CHECK(im, cudaMemsetAsync(p, 0, bytes, im->streams[i])));
    AX_TRY(before_compute(im, i));
  }
  return status(im);
}

static int cu_sync(AxBackend *be, AxStream s) {
  CudaImpl *im = use(be);
  return host_done(im, im->streams[sidx(s)]);
}

/* Host fp32 -> device compute type, through the stream's staging buffer in chunks; the next
 * chunk's copy is ordered after the previous chunk's conversion by the stream. */
static int cu_upload_f32(AxBackend *be, void *dst, const float *src, size_t n, AxStream s) {
  if (be->dtype == AX_DTYPE_F32) return cu_copy(be, dst, src, n * sizeof(float), AX_COPY_H2D, s);
  CudaImpl *im = use(be);
  int i = sidx(s);
  cudaStream_t st = im->streams[i];
  AxkCtx k = {.stream = st, .dtype = be->dtype, .sms = im->sms};
  float *stage = staging(be, im, i);
  if (!stage) return AX_ERR;
  AX_TRY(after_compute(im, i));
  for (size_t off = 0; off < n; off += STAGE_ELEMS) {
    size_t m = n - off < STAGE_ELEMS ? n - off : STAGE_ELEMS;
    AX_TRY(CUDA_CHECK(im, cudaMemcpyAsync(stage, src + off, m * sizeof(float),
                                          cudaMemcpyHostToDevice, st)));
    AX_TRY(CUDA_CHECK(im, axk_from_f32(&k, ax_at(be, dst, off), stage, m)));
  }
  AX_TRY(before_compute(im, i));
  return host_side_done(im, st, src);
}

/* Device compute type -> host fp32, the same way down. */
static int cu_download_f32(AxBackend *be, float *dst, const void *src, size_t n, AxStream s) {
  if (be->dtype == AX_DTYPE_F32) return cu_copy(be, dst, src, n * sizeof(float), AX_COPY_D2H, s);
  CudaImpl *im = use(be);
  int i = sidx(s);
  cudaStream_t st = im->streams[i];
  AxkCtx k = {.stream = st, .dtype = be->dtype, .sms = im->sms};
  float *stage = staging(be, im, i);
  if (!stage) return AX_ERR;
  AX_TRY(after_compute(im, i));
  for (size_t off = 0; off < n; off += STAGE_ELEMS) {
    size_t m = n - off < STAGE_ELEMS ? n - off : STAGE_ELEMS;
    AX_TRY(CUDA_CHECK(im, axk_to_f32(&k, stage, ax_at(be, (void *)src, off), m)));
    AX_TRY(CUDA_CHECK(im, cudaMemcpyAsync(dst + off, stage, m * sizeof(float),
                                          cudaMemcpyDeviceToHost, st)));
  }
  return host_side_done(im, st, dst);
}

/* ------------------------------------------------------------------ GEMM */

static cudaDataType_t cuda_type(AxDType t) {
  return t == AX_DTYPE_BF16 ? CUDA_R_16BF : t == AX_DTYPE_F16 ? CUDA_R_16F : CUDA_R_32F;
}

/* Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: cuBLAS gets B first, with
 * the same transpose flags, and the dimensions n, m. */
static void cu_gemm(AxBackend *be, const AxGemm *g, const void *a, const void *b, void *c) {
  CudaImpl *im = use(be);
  if (g->m <= 0 || g->n <= 0) return;
  cublasOperation_t opa = g->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opb = g->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  cudaDataType_t t = cuda_type(be->dtype);
  if (g->batch <= 1) {
    BLAS_CHECK(im, cublasGemmEx(im->blas, opb, opa, g->n, g->m, g->k, &g->alpha, b, t, g->ldb, a,
                                t, g->lda, &g->beta, c, t, g->ldc, CUBLAS_COMPUTE_32F,
                                CUBLAS_GEMM_DEFAULT));
    return;
  }
  BLAS_CHECK(im, cublasGemmStridedBatchedEx(im->blas, opb, opa, g->n, g->m, g->k, &g->alpha, b, t,
                                            g->ldb, g->stride_b, a, t, g->lda, g->stride_a,
                                            &g->beta, c, t, g->ldc, g->stride_c, g->batch,
                                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

/* ------------------------------------------------------------------ kernels */

static void cu_encoder_forward(AxBackend *be, void *out, const int32_t *tokens, const void *wte,
                               const void *wpe, int B, int T, int C) {
  LAUNCH(be, axk_encoder_forward, out, tokens, wte, wpe, B, T, C);
}
static void cu_encoder_backward(AxBackend *be, void *dwte, void *dwpe, const void *dout,
                                const int32_t *tokens, int B, int T, int C) {
  LAUNCH(be, axk_encoder_backward, dwte, dwpe, dout, tokens, B, T, C);
}
static void cu_layernorm_forward(AxBackend *be, void *out, float *mean, float *rstd,
                                 const void *inp, const void *w, const void *b, int N, int C) {
  LAUNCH(be, axk_layernorm_forward, out, mean, rstd, inp, w, b, N, C);
}
static void cu_layernorm_backward(AxBackend *be, void *dinp, void *dw, void *db, const void *dout,
                                  const void *inp, const void *w, const float *mean,
                                  const float *rstd, int N, int C) {
  LAUNCH(be, axk_layernorm_backward, dinp, dw, db, dout, inp, w, mean, rstd, N, C);
}
static void cu_bias_residual(AxBackend *be, void *out, const void *bias, const void *residual,
                             int N, int C) {
  LAUNCH(be, axk_bias_residual, out, bias, residual, N, C);
}
static void cu_dropout(AxBackend *be, void *out, const void *x, const void *residual,
                       const AxDropoutMask *m) {
  LAUNCH(be, axk_dropout, out, x, residual, m);
}
static void cu_bias_backward(AxBackend *be, void *dbias, const void *dout, int N, int C) {
  LAUNCH(be, axk_bias_backward, dbias, dout, N, C);
}
static void cu_gelu_forward(AxBackend *be, void *out, const void *inp, size_t n) {
  LAUNCH(be, axk_gelu_forward, out, inp, n);
}
static void cu_gelu_backward(AxBackend *be, void *dinp, const void *inp, const void *dout,
                             size_t n) {
  LAUNCH(be, axk_gelu_backward, dinp, inp, dout, n);
}
static void cu_softmax_fwd(AxBackend *be, void *att, int n_mats, int T) {
  LAUNCH(be, axk_softmax_causal_forward, att, n_mats, T);
}
static void cu_softmax_bwd(AxBackend *be, void *datt, const void *att, int n_mats, int T) {
  LAUNCH(be, axk_softmax_causal_backward, datt, att, n_mats, T);
}
static int cu_attention_ok(AxBackend *be, int C, int NH) {
  return axk_attention_supported(be->dtype, C, NH);
}
static void cu_attention_fwd(AxBackend *be, void *out, float *stats, const void *qkv, int B,
                             int T, int C, int NH) {
  LAUNCH(be, axk_attention_forward, out, stats, qkv, B, T, C, NH);
}
static void cu_attention_bwd(AxBackend *be, void *dqkv, float *scratch, const void *dout,
                             const void *out, const float *stats, const void *qkv, int B, int T,
                             int C, int NH) {
  LAUNCH(be, axk_attention_backward, dqkv, scratch, dout, out, stats, qkv, B, T, C, NH);
}
static void cu_crossentropy(AxBackend *be, float *losses, void *logits, const int32_t *targets,
                            int N, int V, int ldv, float dloss) {
  LAUNCH(be, axk_crossentropy, losses, logits, targets, N, V, ldv, dloss);
}
/* tensor-parallel pieces (models/tp_layers.c) */
static void cu_row_sums(AxBackend *be, float *out, const void *x, const float *center,
                        int C_total, int N, int C) {
  LAUNCH(be, axk_row_sums, out, x, center, C_total, N, C);
}
static void cu_layernorm_apply(AxBackend *be, void *out, float *mean, float *rstd, const void *x,
                               const void *w, const void *b, int C_total, int N, int C) {
  LAUNCH(be, axk_layernorm_apply, out, mean, rstd, x, w, b, C_total, N, C);
}
static void cu_layernorm_backward_sums(AxBackend *be, float *sums, const void *dout,
                                       const void *x, const void *w, const float *mean,
                                       const float *rstd, int N, int C) {
  LAUNCH(be, axk_layernorm_backward_sums, sums, dout, x, w, mean, rstd, N, C);
}
static void cu_layernorm_backward_apply(AxBackend *be, void *dinp, void *dw, void *db,
                                        const void *dout, const void *x, const void *w,
                                        const float *mean, const float *rstd, const float *sums,
                                        int C_total, int N, int C) {
  LAUNCH(be, axk_layernorm_backward_apply, dinp, dw, db, dout, x, w, mean, rstd, sums, C_total,
         N, C);
}
static void cu_embed_range_forward(AxBackend *be, void *out, const int32_t *tokens,
                                   const void *wte, const void *wpe, int v0, int v1, int N,
                                   int T, int C) {
  LAUNCH(be, axk_embed_range_forward, out, tokens, wte, wpe, v0, v1, N, T, C);
}
static void cu_embed_range_backward(AxBackend *be, void *dwte, void *dwpe, const void *dout,
                                    const int32_t *tokens, int v0, int v1, int N, int T, int C) {
  LAUNCH(be, axk_embed_backward_range, dwte, dwpe, dout, tokens, v0, v1, N, T, C);
}
static void cu_xent_row_max(AxBackend *be, float *mx, const void *logits, int N, int nv, int ld) {
  LAUNCH(be, axk_xent_row_max, mx, logits, N, nv, ld);
}
static void cu_xent_sums(AxBackend *be, float *sums, float *mx, const float *maxima,
                         int n_maxima, const void *logits, const int32_t *targets, int v0, int N,
                         int nv, int ld) {
  LAUNCH(be, axk_xent_sums, sums, mx, maxima, n_maxima, logits, targets, v0, N, nv, ld);
}
static void cu_xent_finish(AxBackend *be, float *losses, void *logits, const float *mx,
                           const float *sums, const int32_t *targets, int v0, int N, int nv,
                           int ld, float dloss) {
  LAUNCH(be, axk_xent_finish, losses, logits, mx, sums, targets, v0, N, nv, ld, dloss);
}

static void cu_scale(AxBackend *be, void *x, float s, size_t n) {
  LAUNCH(be, axk_scale, x, s, n);
}
static void cu_add(AxBackend *be, void *dst, const void *src, size_t n) {
  LAUNCH(be, axk_add, dst, src, n);
}

static void cu_adamw(AxBackend *be, float *p, float *m, float *v, const void *g, void *w,
                     size_t n, const AxAdamWCoef *c) {
  LAUNCH(be, axk_adamw, p, m, v, g, w, n, c);
}

/* Block partial sums on the device, added here in a fixed order. NAN on failure. */
static double cu_sumsq(AxBackend *be, const void *x, size_t n) {
  CudaImpl *im = use(be);
  AxkCtx k = kctx(be, im);
  if (CUDA_CHECK(im, axk_sumsq_partials(&k, im->partials, x, n)) != AX_OK ||
      CUDA_CHECK(im, cudaMemcpyAsync(im->partials_host, im->partials,
                                     AXK_SUMSQ_BLOCKS * sizeof(double), cudaMemcpyDeviceToHost,
                                     k.stream)) != AX_OK ||
      host_done(im, k.stream) != AX_OK)
    return NAN;
  double total = 0;
  for (int i = 0; i < AXK_SUMSQ_BLOCKS; i++) total += im->partials_host[i];
  return total;
}

/* ------------------------------------------------------------------ lifetime */

static void release(CudaImpl *im) {
  for (int s = 0; s < AX_N_STREAMS; s++) {
    if (im->streams[s]) cudaStreamSynchronize(im->streams[s]);
    if (im->stage[s]) cudaFree(im->stage[s]);
  }
  if (im->blas) cublasDestroy(im->blas);
  for (int s = 0; s < AX_N_STREAMS; s++) {
    if (im->streams[s]) cudaStreamDestroy(im->streams[s]);
    if (im->events[s]) cudaEventDestroy(im->events[s]);
  }
  if (im->partials) cudaFree(im->partials);
  if (im->reduce_scratch) cudaFree(im->reduce_scratch);
  if (im->partials_host) cudaFreeHost(im->partials_host);
  ax_cuda_binding_destroy(im->binding);
  free(im->blocks);
  free(im);
}

static void cu_destroy(AxBackend *be) {
  use(be);
  release(be->impl);
  free(be);
}

static const AxBackendOps CUDA_OPS = {
    .name = "cuda",
    .destroy = cu_destroy,
    .alloc = cu_alloc,
    .free = cu_free,
    .host_alloc = cu_host_alloc,
    .host_free = cu_host_free,
    .copy = cu_copy,
    .zero = cu_zero,
    .sync = cu_sync,
    .upload_f32 = cu_upload_f32,
    .download_f32 = cu_download_f32,
    .gemm = cu_gemm,
    .encoder_forward = cu_encoder_forward,
    .encoder_backward = cu_encoder_backward,
    .layernorm_forward = cu_layernorm_forward,
    .layernorm_backward = cu_layernorm_backward,
    .bias_residual = cu_bias_residual,
    .dropout = cu_dropout,
    .bias_backward = cu_bias_backward,
    .gelu_forward = cu_gelu_forward,
    .gelu_backward = cu_gelu_backward,
    .softmax_causal_forward = cu_softmax_fwd,
    .softmax_causal_backward = cu_softmax_bwd,
    .attention_fused_ok = cu_attention_ok,
    .attention_fused_forward = cu_attention_fwd,
    .attention_fused_backward = cu_attention_bwd,
    .crossentropy = cu_crossentropy,
    .row_sums = cu_row_sums,
    .layernorm_apply = cu_layernorm_apply,
    .layernorm_backward_sums = cu_layernorm_backward_sums,
    .layernorm_backward_apply = cu_layernorm_backward_apply,
    .embed_range_forward = cu_embed_range_forward,
    .embed_range_backward = cu_embed_range_backward,
    .xent_row_max = cu_xent_row_max,
    .xent_sums = cu_xent_sums,
    .xent_finish = cu_xent_finish,
    .sumsq = cu_sumsq,
    .scale = cu_scale,
    .add = cu_add,
    .adamw = cu_adamw,
};

int ax_cuda_device_count(char *why, size_t cap) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cudaGetLastError();
    if (why && cap) snprintf(why, cap, "cudaGetDeviceCount: %s", cudaGetErrorString(e));
    return 0;
  }
  if (n == 0 && why && cap) snprintf(why, cap, "cudaGetDeviceCount: 0 devices");
  return n;
}

/* Picks local_rank % devices and checks the GPU can compute in the requested type. */
static int open_device(CudaImpl *im, const AxBackendConfig *cfg, int *n_devices,
                       struct cudaDeviceProp *prop) {
  char why[160];
  *n_devices = ax_cuda_device_count(why, sizeof why);
  if (*n_devices < 1) return AX_FAIL("--device cuda: no usable GPU (%s)", why);
  im->device = (cfg->local_rank > 0 ? cfg->local_rank : 0) % *n_devices;
  AX_TRY(CUDA_CHECK(im, cudaSetDevice(im->device)));
  AX_TRY(CUDA_CHECK(im, cudaGetDeviceProperties(prop, im->device)));
  im->sms = prop->multiProcessorCount;
  if (cfg->dtype == AX_DTYPE_BF16 && prop->major < 8)
    return AX_FAIL("--precision bf16 needs a GPU of compute capability 8.0 or newer; GPU %d (%s) "
                   "is %d.%d: use --precision fp16 or fp32", im->device, prop->name, prop->major,
                   prop->minor);
  return AX_OK;
}

static int open_streams_and_blas(CudaImpl *im) {
  for (int s = 0; s < AX_N_STREAMS; s++) {
    AX_TRY(CUDA_CHECK(im, cudaStreamCreateWithFlags(&im->streams[s], cudaStreamNonBlocking)));
    AX_TRY(CUDA_CHECK(im, cudaEventCreateWithFlags(&im->events[s], cudaEventDisableTiming)));
  }
  AX_TRY(BLAS_CHECK(im, cublasCreate(&im->blas)));
  AX_TRY(BLAS_CHECK(im, cublasSetStream(im->blas, im->streams[AX_STREAM_COMPUTE])));
  /* fp32 stays fp32 (no TF32); bf16/fp16 inputs may use tensor cores, accumulating in fp32 */
  AX_TRY(BLAS_CHECK(im, cublasSetMathMode(im->blas, CUBLAS_DEFAULT_MATH)));
  AX_TRY(CUDA_CHECK(im, cudaMalloc((void **)&im->partials, AXK_SUMSQ_BLOCKS * sizeof(double))));
  AX_TRY(CUDA_CHECK(im, cudaMalloc((void **)&im->reduce_scratch,
                                   AXK_SCRATCH_FLOATS * sizeof(float))));
  AX_TRY(CUDA_CHECK(im, cudaMallocHost((void **)&im->partials_host,
                                       AXK_SUMSQ_BLOCKS * sizeof(double))));
  im->in_use += AXK_SUMSQ_BLOCKS * sizeof(double) + AXK_SCRATCH_FLOATS * sizeof(float);
  return AX_OK;
}

AxBackend *ax_backend_cuda_create(const AxBackendConfig *cfg) {
  AxBackend *be = ax_calloc(1, sizeof *be);
  CudaImpl *im = ax_calloc(1, sizeof *im);
  struct cudaDeviceProp prop;
  int n_devices = 0;
  if (!be || !im || open_device(im, cfg, &n_devices, &prop) != AX_OK ||
      open_streams_and_blas(im) != AX_OK ||
      !(im->binding = ax_cuda_binding_create(im->device, n_devices, cfg))) {
    if (im) release(im);
    free(be);
    return NULL;
  }
  im->failed = 0;
  be->ops = &CUDA_OPS;
  be->dtype = cfg->dtype;
  be->esz = ax_dtype_size(cfg->dtype);
  be->threads = ax_cuda_binding_threads(im->binding);
  be->is_host = 0;
  be->device_peak_bytes = im->in_use; /* the scratch */
  be->impl = im;
  snprintf(be->desc, sizeof be->desc, "cuda, %s, GPU %d of %d: %.64s (sm_%d%d, %.1f GiB), %d CPU "
           "thread(s), %.100s", ax_dtype_name(be->dtype), im->device, n_devices, prop.name,
           prop.major, prop.minor, prop.totalGlobalMem / 1073741824.0, be->threads,
           ax_cuda_binding_describe(im->binding));
  return be;
}
