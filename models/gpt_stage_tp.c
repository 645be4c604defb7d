/* gpt_stage_tp.c — a stage's compute on a tensor-parallel grid (gpt_stage.h with spec.tp): the
 * vocabulary-parallel embedding, the blocks and the head over tp_layers.h and tp_block.h. Each
 * micro-batch's forward all-gathers every Ŵ shard over Z into the stage's gathered buffers and
 * its backward uses them (Algorithm 1 caches W; where Gz = 1 the shard is the block). With
 * spec.ag_cache the weights gathered in a pass (ax_stage_begin_pass: a training step, a
 * validation) are kept for its later micro-batches, for the first blocks within
 * spec.gather_budget_mb and for wte, and a checkpointed segment's recompute reuses them;
 * without it every forward and recompute gathers. Under OAG the pass's beginning starts the
 * first block's and wte's all-gathers and a block's forward the next block's; under ORS the
 * blocks' dŴ reduce-scatters run until the end of the micro-batch's backward. wte's block
 * gradient is reduce-scattered over Z after each micro-batch's backward. */
#include <string.h>

#include "gpt_stage_impl.h"
#include "src/core/error.h"
#include "tp_block.h"
#include "tp_layers.h"

static void *param(AxGptStage *st, int id) { return ax_stage_param_view(st, st->params, id); }
static void *grad(AxGptStage *st, int id) { return ax_stage_param_view(st, st->grads, id); }

static AxTpVocab vocab_of(const AxGptStage *st) {
  return (AxTpVocab){.N = st->w.rows, .T = st->dims.T, .C = st->cfg.channels,
                     .V = st->cfg.vocab, .Vp = st->cfg.padded_vocab};
}

static size_t wte_block_elems(const AxGptStage *st) {
  return (size_t)st->w.vocab_rows * (size_t)st->w.cy;
}

/* wte's [Vp/Gx, C/Gy] block as last gathered (the shard itself where Gz = 1). */
static const void *wte_block(AxGptStage *st) {
  return st->tp.wte_block ? st->tp.wte_block : param(st, AX_P_WTE);
}

/* wte's block all-gathered now (req NULL) or started. */
static int start_wte_gather(AxGptStage *st, AxTpReq **req) {
  return ax_tp_gather_weight(st->spec.tp, param(st, AX_P_WTE), st->tp.wte_block,
                             wte_block_elems(st), req);
}

/* wte's block holds the pass's weights: by the prefetch started for it, kept from an earlier
 * micro-batch (spec.ag_cache), else gathered now. */
static int gather_wte(AxGptStage *st) {
  StageTp *tp = &st->tp;
  if (!tp->wte_block) return AX_OK;
  if (tp->wte_prefetch) {
    AxTpReq *r = tp->wte_prefetch;
    tp->wte_prefetch = NULL;
    AX_TRY(ax_tp_wait(st->spec.tp, r));
  } else if (!(tp->wte_fresh && st->spec.ag_cache)) {
    AX_TRY(start_wte_gather(st, NULL));
  }
  tp->wte_fresh = 1;
  return AX_OK;
}

/* Where wte's block gradient accumulates: the stage's block buffer, or the shard's gradient. */
static void *dwte_block(AxGptStage *st) {
  return st->tp.dwte_block ? st->tp.dwte_block : grad(st, AX_P_WTE);
}

int ax_stage_tp_embed_forward(AxGptStage *st, int slot) {
  AX_TRY(gather_wte(st));
  AxTpVocab v = vocab_of(st);
  Slot *sl = &st->slots[slot];
  return ax_tp_embed_forward(st->be, st->spec.tp, &v, sl->input, sl->tokens, wte_block(st),
                             param(st, AX_P_WPE));
}

int ax_stage_tp_embed_backward(AxGptStage *st, int slot) {
  AxTpVocab v = vocab_of(st);
  ax_tp_embed_backward(st->be, st->spec.tp, &v, dwte_block(st), grad(st, AX_P_WPE),
                       st->scratch.dres, st->slots[slot].tokens);
  return AX_OK;
}

/* Block b's four weight blocks: views of its shards where Gz = 1, else of the stage's
 * gathered buffers. */
static void block_weight_views(AxGptStage *st, int b, const AxBlockParams *p,
                               AxTpBlockWeights *w) {
  memset(w, 0, sizeof *w);
  for (int id = 0; id < AX_N_PARAMS; id++) {
    size_t n = ax_tp_block_gathered(st->spec.tp, st->cfg.channels, id);
    if (n)
      w->t[id] = st->tp.gathered[id] ? ax_at(st->be, st->tp.gathered[id], (size_t)b * n) : p->t[id];
  }
}

/* All-gathers block b's Ŵ shards over Z into its gathered buffers: now (reqs NULL) or started,
 * with one request per matrix in reqs. Nothing to do where Gz = 1. */
static int gather_block(AxGptStage *st, int b, AxTpReq **reqs) {
  AxBlockParams p;
  AxTpBlockWeights w;
  ax_stage_block_params(st, st->params, b, &p);
  block_weight_views(st, b, &p, &w);
  for (int id = 0; id < AX_N_PARAMS; id++) {
    if (!st->tp.gathered[id]) continue;
    AX_TRY(ax_tp_gather_weight(st->spec.tp, p.t[id], w.t[id],
                               ax_tp_block_gathered(st->spec.tp, st->cfg.channels, id),
                               reqs ? &reqs[id] : NULL));
  }
  return AX_OK;
}

/* Block b's gathered buffers hold the pass's weights and the cache keeps them for this and
 * later micro-batches (within the budget). */
static int kept_fresh(const AxGptStage *st, int b) {
  return st->tp.fresh && st->tp.fresh[b] && st->spec.ag_cache && b < st->tp.kept;
}

/* Waits for the all-gathers started for block `prefetched`. */
static int finish_prefetch(AxGptStage *st) {
  StageTp *tp = &st->tp;
  tp->prefetched = -1;
  int rc = AX_OK;
  for (int id = 0; id < AX_N_PARAMS; id++) {
    int wait_rc = ax_tp_wait(st->spec.tp, tp->prefetch[id]);
    if (rc == AX_OK) rc = wait_rc;
    tp->prefetch[id] = NULL;
  }
  return rc;
}

/* Block b's weights gathered: by the prefetch started for it (OAG), kept from an earlier
 * micro-batch of the pass, else now. */
static int gather_or_finish_prefetch(AxGptStage *st, int b) {
  StageTp *tp = &st->tp;
  if (tp->prefetched == b)
    AX_TRY(finish_prefetch(st));
  else if (!kept_fresh(st, b))
    AX_TRY(gather_block(st, b, NULL));
  if (tp->fresh) tp->fresh[b] = 1;
  return AX_OK;
}

/* OAG: starts block b's all-gathers unless the cache already holds them. */
static int prefetch_block(AxGptStage *st, int b) {
  if (kept_fresh(st, b)) return AX_OK;
  AX_TRY(gather_block(st, b, st->tp.prefetch));
  st->tp.prefetched = b;
  return AX_OK;
}

int ax_stage_tp_begin_pass(AxGptStage *st) {
  StageTp *tp = &st->tp;
  if (tp->prefetched >= 0) AX_TRY(finish_prefetch(st)); /* a pass without forwards */
  if (tp->wte_prefetch) AX_TRY(gather_wte(st));
  memset(tp->fresh, 0, (size_t)st->n_blocks);
  tp->wte_fresh = 0;
  if (!st->spec.oag) return AX_OK;
  ax_tp_note_ahead(st->spec.tp, 1);
  int rc = tp->wte_block ? start_wte_gather(st, &tp->wte_prefetch) : AX_OK;
  if (rc == AX_OK) rc = prefetch_block(st, 0);
  ax_tp_note_ahead(st->spec.tp, 0);
  return rc;
}

size_t ax_stage_tp_block_bytes(const AxGptStage *st) {
  size_t n = 0;
  for (int id = 0; id < AX_N_PARAMS; id++)
    n += ax_tp_block_gathered(st->spec.tp, st->cfg.channels, id);
  return n * st->be->esz;
}

void ax_stage_tp_init_cache(AxGptStage *st) {
  double budget = st->spec.gather_budget_mb * 1e6, per = (double)ax_stage_tp_block_bytes(st);
  st->tp.kept = !st->spec.ag_cache ? 0
                : budget < 0 || budget >= per * st->n_blocks ? st->n_blocks
                : (int)(budget / per);
}

int ax_stage_tp_block_forward(AxGptStage *st, int b, const AxBlockActs *a, const void *in,
                              int gather, int next, const AxDropout *drop) {
  if (gather) AX_TRY(gather_or_finish_prefetch(st, b));
  if (gather && st->spec.oag && next >= 0 && st->w.Gz > 1) AX_TRY(prefetch_block(st, next));
  AxBlockParams p;
  AxTpBlockWeights w;
  ax_stage_block_params(st, st->params, b, &p);
  block_weight_views(st, b, &p, &w);
  return ax_tp_block_forward(st->be, st->spec.tp, &p, &w, a, in, &st->dims, drop);
}

/* The backward's communication options for block b: under ORS the block's own dŴ scratch and
 * the stage's queue, else the shared scratch. */
static AxTpBlockBackwardOpts backward_opts(AxGptStage *st, int b) {
  AxTpBlockBackwardOpts o = {.ors = st->tp.ors.items ? &st->tp.ors : NULL, .oar = st->spec.oar};
  for (int id = 0; id < AX_N_PARAMS; id++) {
    size_t n = ax_tp_block_dw_scratch(st->spec.tp, st->cfg.channels, id);
    o.scratch[id] =
        o.ors && n ? ax_at(st->be, st->tp.ors_scratch[id], (size_t)b * n) : st->tp.scratch;
  }
  return o;
}

int ax_stage_tp_block_backward(AxGptStage *st, int b, const AxBlockActs *a, const void *in,
                               const AxDropout *drop) {
  AxBlockParams p, g;
  AxTpBlockWeights w;
  ax_stage_block_params(st, st->params, b, &p);
  ax_stage_block_params(st, st->grads, b, &g);
  block_weight_views(st, b, &p, &w);
  AxTpBlockBackwardOpts o = backward_opts(st, b);
  return ax_tp_block_backward(st->be, st->spec.tp, &p, &g, &w, a, in, &st->scratch, &st->dims,
                              &o, drop);
}

/* lnf, then the logits. A stage that also holds the embedding reuses the block its forward
 * gathered (the weights do not change within a step). */
int ax_stage_tp_head_forward(AxGptStage *st, int slot) {
  AX_TRY(ax_tp_layernorm_forward(st->be, st->spec.tp, st->lnf, st->lnf_mean, st->lnf_rstd,
                                 ax_stage_final_output(st, slot), param(st, AX_P_LNFW),
                                 param(st, AX_P_LNFB), st->w.rows, st->cfg.channels));
  if (!st->spec.first) AX_TRY(gather_wte(st));
  AxTpVocab v = vocab_of(st);
  return ax_tp_head_forward(st->be, st->spec.tp, &v, st->logits, st->lnf, wte_block(st));
}

int ax_stage_tp_loss(AxGptStage *st, int slot, float dloss) {
  AxTpVocab v = vocab_of(st);
  return ax_tp_cross_entropy(st->be, st->spec.tp, &v, st->losses, st->logits,
                             st->slots[slot].targets, dloss, st->tp.xent);
}

int ax_stage_tp_head_backward(AxGptStage *st, int slot) {
  AxBackend *be = st->be;
  AxTpVocab v = vocab_of(st);
  AX_TRY(ax_tp_head_backward(be, st->spec.tp, &v, st->scratch.dtmp, dwte_block(st), st->logits,
                             st->lnf, wte_block(st)));
  AX_TRY(be->ops->zero(be, st->scratch.dres, (size_t)st->w.rows * st->w.cy * be->esz,
                       AX_STREAM_COMPUTE));
  return ax_tp_layernorm_backward(be, st->spec.tp, st->scratch.dres, grad(st, AX_P_LNFW),
                                  grad(st, AX_P_LNFB), st->scratch.dtmp,
                                  ax_stage_final_output(st, slot), param(st, AX_P_LNFW),
                                  st->lnf_mean, st->lnf_rstd, st->scratch.dbig, st->w.rows,
                                  st->cfg.channels);
}

int ax_stage_tp_begin_backward(AxGptStage *st) {
  if (!st->tp.dwte_block) return AX_OK;
  return st->be->ops->zero(st->be, st->tp.dwte_block, wte_block_elems(st) * st->be->esz,
                           AX_STREAM_COMPUTE);
}

int ax_stage_tp_end_backward(AxGptStage *st) {
  if (st->tp.ors.items) AX_TRY(ax_tp_rs_queue_finish(st->be, st->spec.tp, &st->tp.ors));
  if (!st->tp.dwte_block) return AX_OK;
  return ax_tp_reduce_scatter_add(st->be, st->spec.tp, st->tp.dwte_block, grad(st, AX_P_WTE),
                                  st->tp.scratch, wte_block_elems(st) / (size_t)st->w.Gz);
}
