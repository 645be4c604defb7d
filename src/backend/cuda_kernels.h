/* cuda_kernels.h — launchers of the CUDA backend's kernels (src/backend/cuda_kernels.cu), called by
 * src/backend/backend_cuda.c. Semantics are those of the matching AxBackendOps entries in backend.h;
 * tensors hold `dtype` elements (fp32, bf16 or fp16), arithmetic is fp32. Every launcher
 * enqueues on k->stream and returns the launch status (cudaSuccess or the error). Reductions
 * use a fixed assignment of elements to threads and a fixed combining order, so reruns give
 * the same bits. Only compiled where nvcc is found (AX_HAVE_CUDA). */
#ifndef AX_CUDA_KERNELS_H
#define AX_CUDA_KERNELS_H

#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  cudaStream_t stream;
  AxDType dtype;
  int sms; /* multiprocessors of the device (sizes grid-stride launches) */
  float *scratch; /* device scratch of the stream's column reductions (partial sums) */
  size_t scratch_floats; /* at least 2 x C for the widest reduction */
} AxkCtx;

/* Floats of AxkCtx.scratch the backend gives its compute stream, whose kernels alone reduce
 * columns: 4 MiB, enough for C up to 512K. */
enum { AXK_SCRATCH_FLOATS = 1 << 20 };

/* sumsq writes this many double partial sums; the caller adds them in index order. */
enum { AXK_SUMSQ_BLOCKS = 1024 };

cudaError_t axk_encoder_forward(const AxkCtx *k, void *out, const int32_t *tokens,
                                const void *wte, const void *wpe, int B, int T, int C);
cudaError_t axk_encoder_backward(const AxkCtx *k, void *dwte, void *dwpe, const void *dout,
                                 const int32_t *tokens, int B, int T, int C);
/* The token-embedding gradient of the rows whose token is in [v0, v1) (dwte's row 0 is token
 * v0's) and, when dwpe is given, the position embedding's; N rows, positions i % T (+=). */
cudaError_t axk_embed_backward_range(const AxkCtx *k, void *dwte, void *dwpe, const void *dout,
                                     const int32_t *tokens, int v0, int v1, int N, int T, int C);
cudaError_t axk_layernorm_forward(const AxkCtx *k, void *out, float *mean, float *rstd,
                                  const void *inp, const void *w, const void *b, int N, int C);
cudaError_t axk_layernorm_backward(const AxkCtx *k, void *dinp, void *dw, void *db,
                                   const void *dout, const void *inp, const void *w,
                                   const float *mean, const float *rstd, int N, int C);
/* LayerNorm's weight and bias gradients (+=): dw += sum over rows of dout (inp - mean) rstd,
 * db += sum of dout (the column reduction of axk_layernorm_backward). */
cudaError_t axk_layernorm_param_grads(const AxkCtx *k, void *dw, void *db, const void *dout,
                                      const void *inp, const float *mean, const float *rstd,
                                      int N, int C);
cudaError_t axk_bias_residual(const AxkCtx *k, void *out, const void *bias, const void *residual,
                              int N, int C);
cudaError_t axk_bias_backward(const AxkCtx *k, void *dbias, const void *dout, int N, int C);
/* backend.h's dropout: out = (residual ? residual : 0) + the kept elements of x scaled. */
cudaError_t axk_dropout(const AxkCtx *k, void *out, const void *x, const void *residual,
                        const AxDropoutMask *m);
cudaError_t axk_gelu_forward(const AxkCtx *k, void *out, const void *inp, size_t n);
cudaError_t axk_gelu_backward(const AxkCtx *k, void *dinp, const void *inp, const void *dout,
                              size_t n);
cudaError_t axk_softmax_causal_forward(const AxkCtx *k, void *att, int n_mats, int T);
cudaError_t axk_softmax_causal_backward(const AxkCtx *k, void *datt, const void *att, int n_mats,
                                        int T);
cudaError_t axk_crossentropy(const AxkCtx *k, float *losses, void *logits, const int32_t *targets,
                             int N, int V, int ldv, float dloss);
/* partials[AXK_SUMSQ_BLOCKS] (device doubles) get the block sums of x[i]^2. */
cudaError_t axk_sumsq_partials(const AxkCtx *k, double *partials, const void *x, size_t n);
cudaError_t axk_scale(const AxkCtx *k, void *x, float s, size_t n);
cudaError_t axk_add(const AxkCtx *k, void *dst, const void *src, size_t n);
/* fp32 <-> compute type (round to nearest even on the way down). */
cudaError_t axk_from_f32(const AxkCtx *k, void *dst, const float *src, size_t n);
cudaError_t axk_to_f32(const AxkCtx *k, float *dst, const void *src, size_t n);
/* AdamW (backend.h): fp32 p, m, v updated in place, w gets p in the compute type. */
cudaError_t axk_adamw(const AxkCtx *k, float *p, float *m, float *v, const void *g, void *w,
                      size_t n, const AxAdamWCoef *c);

#ifdef __cplusplus
}
#endif

#endif
