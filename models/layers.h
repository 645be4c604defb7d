/* layers.h — GPT layers over the device interface. Each is a forward/backward pair on plain
 * device pointers with explicit dimensions; nothing allocates. Parameter gradients always
 * accumulate (+=) so micro-batches sum; activation gradients are noted per function.
 * Tokens are N = B*T rows of C channels. */
#ifndef AX_LAYERS_H
#define AX_LAYERS_H

#include "src/backend/backend.h"

/* out[N, OC] = inp[N, C] @ w[OC, C]^T + b (+ residual[N, OC] when not NULL) */
void ax_linear_forward(AxBackend *be, void *out, const void *inp, const void *w, const void *b,
                       const void *residual, int N, int C, int OC);
/* dinp (= or += when accumulate) dout @ w; dw += dout^T @ inp; db += column sums of dout */
void ax_linear_backward(AxBackend *be, void *dinp, void *dw, void *db, const void *dout,
                        const void *inp, const void *w, int N, int C, int OC, int accumulate);

/* Causal multi-head self-attention core, through strided-batched GEMMs (no scalar T^2 loops).
 * qkv: [B, T, 3C] (q | k | v, heads contiguous inside each); att: [B, NH, T, T] softmax
 * probabilities (kept for backward); out: [B, T, C]. */
void ax_attention_forward(AxBackend *be, void *out, void *att, const void *qkv, int B, int T,
                          int C, int NH);
/* dqkv = (written) gradient for qkv; datt is scratch of [NH, T, T]; dout is [B, T, C]. */
void ax_attention_backward(AxBackend *be, void *dqkv, void *datt, const void *dout,
                           const void *att, const void *qkv, int B, int T, int C, int NH);

#endif
