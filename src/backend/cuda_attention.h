/* cuda_attention.h — launchers of the CUDA backend's fused causal attention
 * (src/backend/cuda_attention.cu), called by src/backend/backend_cuda.c for the
 * attention_fused_* ops of backend.h. bf16 and fp16 storage, head sizes 16, 32, 64 and 128;
 * fp32 accumulation; deterministic. Only compiled where nvcc is found (AX_HAVE_CUDA). */
#ifndef AX_CUDA_ATTENTION_H
#define AX_CUDA_ATTENTION_H

#include "cuda_kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when the kernels take this type and head size C / NH. */
int axk_attention_supported(AxDType dtype, int C, int NH);
/* out (B*T rows of C) from qkv (B*T rows of 3C); stats: B*NH*T floats for the backward. */
cudaError_t axk_attention_forward(const AxkCtx *k, void *out, float *stats, const void *qkv,
                                  int B, int T, int C, int NH);
/* dqkv (overwritten) from dout, and the forward's out and stats; dots: B*NH*T floats of
 * scratch. */
cudaError_t axk_attention_backward(const AxkCtx *k, void *dqkv, float *dots, const void *dout,
                                   const void *out, const float *stats, const void *qkv, int B,
                                   int T, int C, int NH);

#ifdef __cplusplus
}
#endif

#endif
