/* cpu_tp_kernels.h — the CPU backend's kernels for tensor-parallel layers (fp32): the pieces of
 * LayerNorm, embedding and cross-entropy whose rows are split over ranks, so that a row's
 * statistics are partial sums the caller reduces over its group between the calls (see the
 * backend ops of the same names in backend.h). Rows split over threads; column reductions split
 * columns, so every thread count gives the same sums. */
#ifndef AX_CPU_TP_KERNELS_H
#define AX_CPU_TP_KERNELS_H

#include <stdint.h>

#include "src/core/threadpool.h"

void ax_cpu_row_sums(AxPool *pool, float *out, const float *x, const float *center, int C_total,
                     int N, int C);
void ax_cpu_layernorm_apply(AxPool *pool, float *out, float *mean, float *rstd, const float *x,
                            const float *w, const float *b, int C_total, int N, int C);
void ax_cpu_layernorm_backward_sums(AxPool *pool, float *sums, const float *dout, const float *x,
                                    const float *w, const float *mean, const float *rstd, int N,
                                    int C);
void ax_cpu_layernorm_backward_apply(AxPool *pool, float *dinp, float *dw, float *db,
                                     const float *dout, const float *x, const float *w,
                                     const float *mean, const float *rstd, const float *sums,
                                     int C_total, int N, int C);
void ax_cpu_embed_range_forward(AxPool *pool, float *out, const int32_t *tokens, const float *wte,
                                const float *wpe, int v0, int v1, int N, int T, int C);
void ax_cpu_embed_range_backward(AxPool *pool, float *dwte, float *dwpe, const float *dout,
                                 const int32_t *tokens, int v0, int v1, int N, int T, int C);
void ax_cpu_xent_row_max(AxPool *pool, float *mx, const float *logits, int N, int nv, int ld);
void ax_cpu_xent_sums(AxPool *pool, float *sums, float *mx, const float *maxima, int n_maxima,
                      const float *logits, const int32_t *targets, int v0, int N, int nv, int ld);
void ax_cpu_xent_finish(AxPool *pool, float *losses, float *logits, const float *mx,
                        const float *sums, const int32_t *targets, int v0, int N, int nv, int ld,
                        float dloss);

#endif
