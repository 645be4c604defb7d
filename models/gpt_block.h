/* gpt_block.h — one pre-LayerNorm transformer block (GPT-2): forward and backward over the
 * device interface, on activation and scratch buffers the caller owns. */
#ifndef AX_GPT_BLOCK_H
#define AX_GPT_BLOCK_H

#include "dropout.h"
#include "gpt_config.h"
#include "src/backend/backend.h"

/* One block's saved activations for one micro-batch of N = B*T tokens. */
typedef struct {
  void *ln1;             /* [N, C] */
  float *ln1_mean, *ln1_rstd; /* [N] */
  void *qkv;             /* [N, 3C] */
  void *att;             /* [B, NH, T, T] */
  void *atty;            /* [N, C] */
  void *res2;            /* [N, C] residual after attention */
  void *ln2;             /* [N, C] */
  float *ln2_mean, *ln2_rstd;
  void *fch;             /* [N, 4C] */
  void *fch_gelu;        /* [N, 4C] */
  void *out;             /* [N, C] block output (the next block's input) */
} AxBlockActs;

/* Scratch shared by every block's backward. */
typedef struct {
  void *dres; /* [N, C] in: d(block output); out: d(block input) */
  void *dtmp; /* [N, C] */
  void *dbig; /* [N, 4C] */
  void *datt; /* [NH, T, T] */
  void *ddrop; /* [N, C]: a branch's dropped gradient (NULL without dropout) */
} AxBlockScratch;

/* Parameter (or gradient) tensors of one block, indexed by AxParamId (layer tensors only). */
typedef struct {
  void *t[AX_N_PARAMS];
} AxBlockParams;

typedef struct {
  int B, T, C, NH;
} AxBlockDims;

/* drop: the block's dropout (its layer, the micro-batch's place; NULL or p = 0: none). The
 * backward takes the forward's. */
void ax_block_forward(AxBackend *be, const AxBlockParams *p, const AxBlockActs *a,
                      const void *in, const AxBlockDims *d, const AxDropout *drop);
void ax_block_backward(AxBackend *be, const AxBlockParams *p, AxBlockParams *g,
                       const AxBlockActs *a, const void *in, const AxBlockScratch *s,
                       const AxBlockDims *d, const AxDropout *drop);

#endif
