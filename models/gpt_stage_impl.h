/* gpt_stage_impl.h — the stage's state, shared by its arena, slots and serial compute
 * (gpt_stage.c) and its tensor-parallel compute (gpt_stage_tp.c); nothing else includes it.
 *
 * Sizes on a rank of a Gx x Gy x Gz grid (1 x 1 x 1 without spec.tp): rows = B/Gz · T tokens of
 * the micro-batch; the residual stream and everything in A_y layout has C/Gy channels; qkv,
 * atty and the MLP's hidden features are split over X (3C/Gx, C/Gx, 4C/Gx), attention keeps
 * NH/Gx heads; the logits have Vp/Gx columns. */
#ifndef AX_GPT_STAGE_IMPL_H
#define AX_GPT_STAGE_IMPL_H

#include "gpt_stage.h"
#include "tp_layers.h"

typedef struct {
  void *input;        /* [rows, C/Gy]: embedding output (first stage) or the received activation */
  void *output;       /* [rows, C/Gy]: checkpoint mode only (else the last block's out) */
  int32_t *tokens;    /* [rows] first stage */
  int32_t *targets;   /* [rows] last stage */
  AxBlockActs *acts;  /* n_blocks, when every activation is kept */
  void **seg_inputs;  /* n_segments, checkpoint mode; seg_inputs[0] == input */
  AxDropout drop;     /* the micro-batch's dropout, set by its forward (p = 0: none) */
} Slot;

/* Local widths (see above). */
typedef struct {
  int Gx, Gy, Gz;
  int B, rows;        /* sequences and tokens of the micro-batch on this rank */
  int cy, cx, heads;  /* C/Gy, C/Gx, NH/Gx */
  int vocab_rows;     /* Vp/Gx */
} StageWidths;

/* Tensor-parallel buffers (spec.tp only; NULL where the shard itself serves, Gz = 1), of the
 * compute type but for xent's fp32 statistics. */
typedef struct {
  void *gathered[AX_N_PARAMS]; /* every block's matrices gathered over Z (qkvw .. fcprojw),
                                * block after block */
  void *wte_block, *dwte_block; /* wte's [Vp/Gx, C/Gy] block and its gradient */
  void *scratch;                /* ax_tp_block_tp_scratch, and the wte reduce-scatter's */
  float *xent;                  /* (Gx + 4) · rows: the parallel cross-entropy's */
  /* ORS (spec.ors, Gz > 1): every block's dŴ scratch per matrix (ax_tp_block_dw_scratch,
   * block after block) and the reduce-scatters a micro-batch's backward left running */
  void *ors_scratch[AX_N_PARAMS];
  AxTpRsQueue ors;
  /* OAG (spec.oag, Gz > 1): the all-gathers started for block `prefetched` (-1: none) */
  AxTpReq *prefetch[AX_N_PARAMS];
  int prefetched;
  AxTpReq *wte_prefetch; /* wte's all-gather started at the pass's beginning (OAG) */
  /* The gathered-weight cache (spec.ag_cache, Gz > 1): which blocks' gathered buffers hold the
   * pass's weights (n_blocks flags, cleared by ax_stage_begin_pass), the first `kept` blocks'
   * of them reused by later micro-batches; wte's block likewise */
  unsigned char *fresh;
  int kept, wte_fresh;
} StageTp;

struct AxGptStage {
  AxGptConfig cfg;
  AxStageSpec spec;
  AxStageLayout layout;
  AxBlockDims dims; /* the whole micro-batch's (the tensor-parallel layers divide it) */
  StageWidths w;
  int n_blocks, n_segments;
  AxBackend *be;
  int fused_attention; /* attention through the backend's fused ops (layers.h) */
  void *params, *grads, *arena;
  size_t arena_bytes;
  Slot *slots;
  AxBlockScratch scratch;
  void *att_probs; /* --attention-dropout: one sequence's dropped probabilities [heads, T, T] */
  AxBlockActs *recompute;           /* ac buffers, checkpoint mode */
  int held_slot, held_segment;      /* whose activations `recompute` holds; -1: stale */
  void *lnf, *logits;
  float *lnf_mean, *lnf_rstd, *losses, *losses_host;
  StageTp tp;
  /* the last backward's timeline (ax_stage_backward_timeline) and the block hook */
  double *bwd_done_s, bwd_total_s, bwd_t0;
  AxStageBlockHook after_block;
  void *after_block_ctx;
  /* where the next forward's micro-batch sits (ax_stage_set_dropout_origin) */
  int origin_set;
  uint64_t origin_step, origin_sequence;
};

/* Views of the flat parameter (flat = params) or gradient (flat = grads) buffer. */
void *ax_stage_param_view(AxGptStage *st, void *flat, int id);
void ax_stage_block_params(AxGptStage *st, void *flat, int b, AxBlockParams *out);
void *ax_stage_final_output(AxGptStage *st, int slot);

/* gpt_stage_tp.c: the tensor-parallel compute of the stage's parts, on spec.tp. */
int ax_stage_tp_embed_forward(AxGptStage *st, int slot);
int ax_stage_tp_embed_backward(AxGptStage *st, int slot);
/* gather: all-gathers block b's weights first (else they are the last gathered: a
 * recompute with the all-gather cache); the backward uses the forward's. next: the block whose
 * forward follows (-1: none), whose all-gathers start now under OAG. */
int ax_stage_tp_block_forward(AxGptStage *st, int b, const AxBlockActs *a, const void *in,
                              int gather, int next, const AxDropout *drop);
int ax_stage_tp_block_backward(AxGptStage *st, int b, const AxBlockActs *a, const void *in,
                               const AxDropout *drop);
int ax_stage_tp_head_forward(AxGptStage *st, int slot);
int ax_stage_tp_loss(AxGptStage *st, int slot, float dloss);
int ax_stage_tp_head_backward(AxGptStage *st, int slot);
/* Before a micro-batch's backward: clears wte's block gradient. After it: the deferred
 * reduce-scatters (ORS) finished, wte's block gradient reduce-scattered into its shard. */
int ax_stage_tp_begin_backward(AxGptStage *st);
int ax_stage_tp_end_backward(AxGptStage *st);
/* ax_stage_begin_pass and ax_stage_gather_kept's setup: the blocks the budget keeps. */
int ax_stage_tp_begin_pass(AxGptStage *st);
void ax_stage_tp_init_cache(AxGptStage *st);
size_t ax_stage_tp_block_bytes(const AxGptStage *st);

#endif
