/* layers.h — GPT layers over the device interface. Each is a forward/backward pair on plain
 * device pointers with explicit dimensions; nothing allocates. Parameter gradients always
 * accumulate (+=) so micro-batches sum; activation gradients are noted per function.
 * Tokens are N = B*T rows of C channels. */
#ifndef AX_LAYERS_H
#define AX_LAYERS_H

#include "dropout.h"
#include "src/backend/backend.h"

/* out[N, OC] = inp[N, C] @ w[OC, C]^T + b (+ residual[N, OC] when not NULL) */
void ax_linear_forward(AxBackend *be, void *out, const void *inp, const void *w, const void *b,
                       const void *residual, int N, int C, int OC);
/* dinp (= or += when accumulate) dout @ w; dw += dout^T @ inp; db += column sums of dout */
void ax_linear_backward(AxBackend *be, void *dinp, void *dw, void *db, const void *dout,
                        const void *inp, const void *w, int N, int C, int OC, int accumulate);

/* Causal multi-head self-attention core. qkv: [B, T, 3C] (q | k | v, heads contiguous inside
 * each); out: [B, T, C]; att: what the backward needs, of ax_attention_bytes(): where the
 * backend has fused attention (ax_backend_fused_attention) its per-query statistics, [B, NH, T]
 * floats; else the softmax probabilities [B, NH, T, T], made by strided-batched GEMMs. With
 * ax_attention_dropout_on(drop) (explicit attention only), the probabilities weigh the values
 * dropped (dropout.h), att keeps them whole, and drop->probs is the scratch they are dropped
 * into; drop may be NULL. */
void ax_attention_forward(AxBackend *be, void *out, void *att, const void *qkv, int B, int T,
                          int C, int NH, const AxDropout *drop);
/* dqkv = (written) gradient for qkv; datt: scratch of ax_attention_scratch_bytes(); dout is
 * [B, T, C]; out, att and drop: the forward's. */
void ax_attention_backward(AxBackend *be, void *dqkv, void *datt, const void *dout,
                           const void *out, const void *att, const void *qkv, int B, int T,
                           int C, int NH, const AxDropout *drop);
/* Bytes of the forward's att and of the backward's scratch, fused (1) or explicit (0), with
 * elements of esz bytes. */
size_t ax_attention_bytes(int fused, size_t esz, int B, int T, int NH);
size_t ax_attention_scratch_bytes(int fused, size_t esz, int B, int T, int NH);

#endif
