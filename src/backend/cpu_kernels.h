/* cpu_kernels.h — fp32 element-wise kernels of the CPU backend, parallel over a thread pool.
 * Semantics are those of the matching AxBackendOps entries in backend.h. */
#ifndef AX_CPU_KERNELS_H
#define AX_CPU_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "src/core/dropout_mask.h"
#include "src/core/threadpool.h"

void ax_cpu_encoder_forward(AxPool *pool, float *out, const int32_t *tokens, const float *wte,
                            const float *wpe, int B, int T, int C);
void ax_cpu_encoder_backward(AxPool *pool, float *dwte, float *dwpe, const float *dout,
                             const int32_t *tokens, int B, int T, int C);
void ax_cpu_layernorm_forward(AxPool *pool, float *out, float *mean, float *rstd,
                              const float *inp, const float *w, const float *b, int N, int C);
/* dw += dout * xhat, db += dout over N rows of C channels (the parameter half of the backward;
 * column-split, so every thread count sums alike) */
void ax_cpu_layernorm_param_grads(AxPool *pool, float *dw, float *db, const float *dout,
                                  const float *inp, const float *mean, const float *rstd, int N,
                                  int C);
void ax_cpu_layernorm_backward(AxPool *pool, float *dinp, float *dw, float *db,
                               const float *dout, const float *inp, const float *w,
                               const float *mean, const float *rstd, int N, int C);
void ax_cpu_bias_residual(AxPool *pool, float *out, const float *bias, const float *residual,
                          int N, int C);
void ax_cpu_bias_backward(AxPool *pool, float *dbias, const float *dout, int N, int C);
void ax_cpu_gelu_forward(AxPool *pool, float *out, const float *inp, size_t n);
void ax_cpu_gelu_backward(AxPool *pool, float *dinp, const float *inp, const float *dout,
                          size_t n);
void ax_cpu_softmax_causal_forward(AxPool *pool, float *att, int n_mats, int T);
void ax_cpu_softmax_causal_backward(AxPool *pool, float *datt, const float *att, int n_mats,
                                    int T);
void ax_cpu_crossentropy(AxPool *pool, float *losses, float *logits, const int32_t *targets,
                         int N, int V, int ldv, float dloss);
void ax_cpu_dropout(AxPool *pool, float *out, const float *x, const float *residual,
                    const AxDropoutMask *m);
double ax_cpu_sumsq(AxPool *pool, const float *x, size_t n);
void ax_cpu_scale(AxPool *pool, float *x, float s, size_t n);
void ax_cpu_add(AxPool *pool, float *dst, const float *src, size_t n);

#endif
