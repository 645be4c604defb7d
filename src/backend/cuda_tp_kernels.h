/* cuda_tp_kernels.h — launchers of the CUDA backend's tensor-parallel kernels
 * (src/backend/cuda_tp_kernels.cu), called by src/backend/backend_cuda.c. Semantics are those
 * of the matching AxBackendOps entries in backend.h (row_sums ... xent_finish): activations,
 * weights and logits hold k->dtype elements (fp32, bf16 or fp16), the row statistics (means,
 * rstd, sums, maxima, losses) are fp32, arithmetic is fp32. Every launcher enqueues on
 * k->stream and returns the launch status. Each row is reduced by one warp or one block in a
 * fixed order, so reruns give the same bits. Only compiled where nvcc is found. */
#ifndef AX_CUDA_TP_KERNELS_H
#define AX_CUDA_TP_KERNELS_H

#include "cuda_kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

cudaError_t axk_row_sums(const AxkCtx *k, float *out, const void *x, const float *center,
                         int C_total, int N, int C);
cudaError_t axk_layernorm_apply(const AxkCtx *k, void *out, float *mean, float *rstd,
                                const void *x, const void *w, const void *b, int C_total, int N,
                                int C);
cudaError_t axk_layernorm_backward_sums(const AxkCtx *k, float *sums, const void *dout,
                                        const void *x, const void *w, const float *mean,
                                        const float *rstd, int N, int C);
cudaError_t axk_layernorm_backward_apply(const AxkCtx *k, void *dinp, void *dw, void *db,
                                         const void *dout, const void *x, const void *w,
                                         const float *mean, const float *rstd,
                                         const float *sums, int C_total, int N, int C);
cudaError_t axk_embed_range_forward(const AxkCtx *k, void *out, const int32_t *tokens,
                                    const void *wte, const void *wpe, int v0, int v1, int N,
                                    int T, int C);
cudaError_t axk_xent_row_max(const AxkCtx *k, float *mx, const void *logits, int N, int nv,
                             int ld);
cudaError_t axk_xent_sums(const AxkCtx *k, float *sums, float *mx, const float *maxima,
                          int n_maxima, const void *logits, const int32_t *targets, int v0,
                          int N, int nv, int ld);
cudaError_t axk_xent_finish(const AxkCtx *k, float *losses, void *logits, const float *mx,
                            const float *sums, const int32_t *targets, int v0, int N, int nv,
                            int ld, float dloss);

#ifdef __cplusplus
}
#endif

#endif
