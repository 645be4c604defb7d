/* tp_block.h — one GPT-2 block over a Gx x Gy x Gz tensor-parallel grid (docs/tensor-parallel.md):
 * ln1 and ln2 over Y-split channels, qkv and fc as normal layers (heads and the 4C features
 * over X), the attention projection and fc projection transposed, attention local to the rank's
 * heads and sequences. The same computation as gpt_block.h on this rank's blocks:
 *   res2 = in + attproj(attention(qkv(ln1(in))));  out = res2 + fcproj(gelu(fc(ln2(res2))))
 *
 * Shapes on a rank, with d the whole micro-batch's dimensions and Gz dividing d->B: the block
 * input and output [B/Gz · T, C/Gy]; AxBlockParams hold the rank's shards (vectors: LayerNorm
 * weights and the projections' biases C/Gy, qkvb 3C/Gx with the qkv row order below, fcb
 * 4C/Gx; the matrices' Ŵ shards, which the block does not read: it takes the gathered blocks).
 * qkv's block keeps heads whole: rows [q | k | v] of X rank x's heads
 * [x·NH/Gx, (x+1)·NH/Gx). Gradients of the matrices go to their shards (reduce-scattered over
 * Z); vector gradients are this rank's partial sums over its rows, to be all-reduced over Z
 * once a step. */
#ifndef AX_TP_BLOCK_H
#define AX_TP_BLOCK_H

#include "gpt_block.h"
#include "src/core/tp_comm.h"
#include "tp_layers.h"

/* The four weight blocks gathered over Z (ax_tp_gather_weight), in AxParamId slots
 * AX_P_QKVW, AX_P_ATTPROJW, AX_P_FCW, AX_P_FCPROJW. */
typedef AxBlockParams AxTpBlockWeights;

/* The elements of each parameter's shard on this rank (by AxParamId) and of each matrix's
 * gathered block. */
size_t ax_tp_block_shard(const AxTpComm *c, int C, int id);
size_t ax_tp_block_gathered(const AxTpComm *c, int C, int id); /* matrices; 0 otherwise */
/* The grid fits the block: heads over X, channels over X and Y, every Ŵ over Z, sequences over
 * Z. One clear error naming what does not divide. */
int ax_tp_block_check(const AxTpComm *c, const AxBlockDims *d);
/* The elements of tensor-parallel scratch one matrix's backward needs (ax_tp_block_gathered +
 * ax_tp_block_shard; 0 when Gz = 1 or id is not a matrix), and the largest of them. The
 * activations a rank keeps are gpt_block.h's, at B/Gz sequences, with ln1, res2, ln2, out and
 * dres of C/Gy channels, qkv 3C/Gx, atty and attproj's input gradient C/Gx, fch and fch_gelu
 * 4C/Gx, att of NH/Gx heads. */
size_t ax_tp_block_dw_scratch(const AxTpComm *c, int C, int id);
size_t ax_tp_block_tp_scratch(const AxTpComm *c, const AxBlockDims *d);

/* How the block's backward communicates: each matrix's scratch (by AxParamId, ax_tp_block_
 * dw_scratch elements of the compute type; they may all be one buffer unless ors is given), the
 * queue of deferred reduce-scatters (ORS) or NULL, and OAR. */
typedef struct {
  void *scratch[AX_N_PARAMS];
  AxTpRsQueue *ors;
  int oar;
} AxTpBlockBackwardOpts;

/* Row r of qkv's block on X rank x: its row in the whole [3C, C] matrix. */
int ax_tp_qkv_row(const AxTpComm *c, int C, int r);

int ax_tp_block_forward(AxBackend *be, AxTpComm *c, const AxBlockParams *p,
                        const AxTpBlockWeights *w, const AxBlockActs *a, const void *in,
                        const AxBlockDims *d, const AxDropout *drop);
/* s->dres in: d(block output); out: d(block input). drop: the forward's dropout (gpt_block.h;
 * its col0 this rank's first channel of the residual stream). */
int ax_tp_block_backward(AxBackend *be, AxTpComm *c, const AxBlockParams *p, AxBlockParams *g,
                         const AxTpBlockWeights *w, const AxBlockActs *a, const void *in,
                         const AxBlockScratch *s, const AxBlockDims *d,
                         const AxTpBlockBackwardOpts *o, const AxDropout *drop);

#endif
