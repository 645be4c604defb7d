/* tp_layers.h — the tensor-parallel layers of docs/tensor-parallel.md (axonn-4d-hybrid §III,
 * Algorithm 1) over a Gx x Gy x Gz grid: the fully-connected layer in its normal (A_y -> A_x)
 * and transposed (A_x -> A_y) roles with Z-sharded weights, LayerNorm over Y-split channels,
 * the vocabulary-parallel embedding, LM head and cross-entropy. Each runs on this rank's blocks
 * and calls the communication interface (tp_comm.h) for its collectives; with every group of
 * size 1 each reduces to the serial layer (layers.h, the backend's kernels).
 *
 * Buffers are in the backend's memory, host or device (ax_backend_has_tp), and hold its compute
 * type (fp32, bf16 or fp16: activations, weights, their gradients and the scratch that holds
 * them) as the serial layers' do; LayerNorm's mean, rstd and row sums, the losses and the
 * cross-entropy's scratch are fp32, as the backend's kernels keep them. The communication
 * interface is the backend's compute type too (AxTpComm.type) and reaches device buffers
 * itself (staged or CUDA-aware).
 * Parameter gradients accumulate (+=), like the serial layers'. */
#ifndef AX_TP_LAYERS_H
#define AX_TP_LAYERS_H

#include <stddef.h>
#include <stdint.h>

#include "src/backend/backend.h"
#include "src/core/tp_comm.h"

/* A fully-connected layer y = x·wᵀ + b of `in` to `out` features on N rows (this rank's). */
typedef struct {
  int N;
  int in, out;
  int transposed; /* 0: rows of w over X, columns over Y; 1: the roles of X and Y swapped */
} AxTpLinear;

/* The group that splits the layer's input columns (its forward all-reduce) and the one that
 * splits its output columns (its backward all-reduce). */
AxTpGroup ax_tp_in_group(const AxTpLinear *l);
AxTpGroup ax_tp_out_group(const AxTpLinear *l);
/* This rank's input and output columns; the elements of its Ŵ shard ([out/Gz, in] of the
 * local block) and of the whole block [out, in] the all-gather over Z rebuilds. */
int ax_tp_linear_in(const AxTpComm *c, const AxTpLinear *l);
int ax_tp_linear_out(const AxTpComm *c, const AxTpLinear *l);
size_t ax_tp_linear_shard(const AxTpComm *c, const AxTpLinear *l);
size_t ax_tp_linear_block(const AxTpComm *c, const AxTpLinear *l);

/* block = the Ŵ shards of the Z group in order (all-gather over Z; with Gz = 1 a copy unless
 * block == shard). Started now and finished by ax_tp_wait when req is given (prefetching). */
int ax_tp_gather_weight(AxTpComm *c, const void *shard, void *block, size_t block_elems,
                        AxTpReq **req);
/* out[N, out_local] = x[N, in_local]·w_blockᵀ summed over the input group, + b (may be NULL)
 * + residual (may be NULL). */
int ax_tp_linear_forward(AxBackend *be, AxTpComm *c, const AxTpLinear *l, void *out,
                         const void *x, const void *w_block, const void *b,
                         const void *residual);
/* Reduce-scatters of dŴ over Z left running until the end of a backward (ORS, §IV-B): each
 * is finished, and its part added to its shard, by ax_tp_rs_queue_finish. */
typedef struct {
  AxTpReq *req;
  const void *part; /* this rank's rows summed over Z, once finished */
  void *dw_shard;   /* += part */
  size_t n;
} AxTpPendingRs;

typedef struct {
  AxTpPendingRs *items; /* cap of them */
  int n, cap;
} AxTpRsQueue;

/* Waits for every queued reduce-scatter in the order started, adding each part into its
 * shard; empties q (also after an error, returned). */
int ax_tp_rs_queue_finish(AxBackend *be, AxTpComm *c, AxTpRsQueue *q);

/* How a fully-connected layer's backward communicates. */
typedef struct {
  void *scratch;    /* ax_tp_linear_block + ax_tp_linear_shard elements; unused when Gz = 1 */
  AxTpRsQueue *ors; /* NULL: dŴ reduce-scattered now; else started and queued (ORS), scratch
                     * then left untouched until the queue is finished */
  int oar;          /* the dI all-reduce overlaps the weight-gradient GEMM (OAR, §IV-A) */
} AxTpBackwardOpts;

/* dx[N, in_local] = (written) dout·w_block summed over the output group; dw_shard += this
 * rank's rows of doutᵀ·x summed over Z (reduce-scatter); db (may be NULL) += column sums of
 * dout. */
int ax_tp_linear_backward(AxBackend *be, AxTpComm *c, const AxTpLinear *l, void *dx,
                          void *dw_shard, void *db, const void *dout, const void *x,
                          const void *w_block, const AxTpBackwardOpts *o);

/* LayerNorm of N rows of C_total channels split over Y (C_total / Gy here). mean and rstd
 * [N] are kept for the backward; sums is scratch of 2N floats. dx accumulates (+=). */
int ax_tp_layernorm_forward(AxBackend *be, AxTpComm *c, void *out, float *mean, float *rstd,
                            const void *x, const void *w, const void *b, int N, int C_total);
int ax_tp_layernorm_backward(AxBackend *be, AxTpComm *c, void *dx, void *dw, void *db,
                             const void *dout, const void *x, const void *w,
                             const float *mean, const float *rstd, float *sums, int N,
                             int C_total);

/* The vocabulary (Vp padded rows, V real) over X, channels (C) over Y, for N rows of
 * sequences of T tokens. */
typedef struct {
  int N, T;
  int C;
  int V, Vp;
} AxTpVocab;

int ax_tp_vocab_rows(const AxTpComm *c, const AxTpVocab *v);  /* Vp / Gx */
int ax_tp_vocab_first(const AxTpComm *c, const AxTpVocab *v); /* x · Vp / Gx */
int ax_tp_vocab_real(const AxTpComm *c, const AxTpVocab *v);  /* of those, ids below V */

/* out[N, C/Gy] = wte[token] + wpe[position], summed over X from each rank's vocabulary rows
 * (wte_block: [Vp/Gx, C/Gy], gathered over Z; wpe [T.., C/Gy]). */
int ax_tp_embed_forward(AxBackend *be, AxTpComm *c, const AxTpVocab *v, void *out,
                        const int32_t *tokens, const void *wte_block, const void *wpe);
/* dwte_block += the rows of this rank's vocabulary; dwpe += position rows (no communication:
 * dout is the same on every X rank). */
void ax_tp_embed_backward(AxBackend *be, const AxTpComm *c, const AxTpVocab *v,
                          void *dwte_block, void *dwpe, const void *dout,
                          const int32_t *tokens);

/* logits[N, Vp/Gx] = x[N, C/Gy]·wte_blockᵀ summed over Y. */
int ax_tp_head_forward(AxBackend *be, AxTpComm *c, const AxTpVocab *v, void *logits,
                       const void *x, const void *wte_block);
/* losses[N] of the rows against targets, the softmax over X; with dloss != 0 the logits
 * become dloss·(softmax - onehot). scratch: (Gx + 4)·N floats. */
int ax_tp_cross_entropy(AxBackend *be, AxTpComm *c, const AxTpVocab *v, float *losses,
                        void *logits, const int32_t *targets, float dloss, float *scratch);
/* dx[N, C/Gy] = (written) dlogits·wte_block summed over X; dwte_block += dlogitsᵀ·x. */
int ax_tp_head_backward(AxBackend *be, AxTpComm *c, const AxTpVocab *v, void *dx,
                        void *dwte_block, const void *dlogits, const void *x,
                        const void *wte_block);

/* shard += this rank's block of `block` ([Gz · n] elements) summed over Z; tmp holds n
 * elements (unused when Gz = 1, when the whole block is added). */
int ax_tp_reduce_scatter_add(AxBackend *be, AxTpComm *c, const void *block, void *shard,
                             void *tmp, size_t n);

#endif
