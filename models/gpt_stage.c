/* gpt_stage.c — forward/backward of a GPT-2 pipeline stage over one activation arena, with
 * optional segment recomputation (activation checkpointing); see gpt_stage.h. */
#include "gpt_stage.h"

#include <stdlib.h>
#include <string.h>

#include "gpt_stage_impl.h"
#include "layers.h"
#include "src/core/error.h"
#include "src/core/timer.h"
#include "tp_block.h"
#include "tp_shard.h"

/* ------------------------------------------------------------------ arena carving */

typedef struct {
  char *base; /* NULL while measuring */
  size_t off;
} Carve;

static void *carve(Carve *c, size_t bytes) {
  size_t at = (c->off + 255) / 256 * 256;
  c->off = at + bytes;
  return c->base ? c->base + at : NULL;
}

static void carve_block(Carve *c, AxBlockActs *a, const StageWidths *w, size_t esz,
                        size_t att_bytes) {
  size_t N = (size_t)w->rows, cy = (size_t)w->cy, cx = (size_t)w->cx;
  a->ln1 = carve(c, N * cy * esz);
  a->ln1_mean = carve(c, N * sizeof(float));
  a->ln1_rstd = carve(c, N * sizeof(float));
  a->qkv = carve(c, 3 * N * cx * esz);
  a->att = carve(c, att_bytes);
  a->atty = carve(c, N * cx * esz);
  a->res2 = carve(c, N * cy * esz);
  a->ln2 = carve(c, N * cy * esz);
  a->ln2_mean = carve(c, N * sizeof(float));
  a->ln2_rstd = carve(c, N * sizeof(float));
  a->fch = carve(c, 4 * N * cx * esz);
  a->fch_gelu = carve(c, 4 * N * cx * esz);
  a->out = carve(c, N * cy * esz);
}

/* The tensor-parallel buffers: where Gz > 1 every block's gathered weights (kept from a
 * micro-batch's forward for its backward), wte's block, and under ORS every block's dŴ
 * scratch and the queue of deferred reduce-scatters; scratch. */
static void carve_tp(AxGptStage *st, Carve *c, size_t esz) {
  const StageWidths *w = &st->w;
  StageTp *tp = &st->tp;
  size_t wte_block = (size_t)w->vocab_rows * w->cy, wte_shard = wte_block / w->Gz;
  int has_wte = st->spec.first || st->spec.last;
  if (w->Gz > 1) {
    for (int id = 0; id < AX_N_PARAMS; id++) {
      size_t n = ax_tp_block_gathered(st->spec.tp, st->cfg.channels, id);
      if (n) tp->gathered[id] = carve(c, (size_t)st->n_blocks * n * esz);
    }
    if (has_wte) {
      tp->wte_block = carve(c, wte_block * esz);
      tp->dwte_block = carve(c, wte_block * esz);
    }
  }
  tp->prefetched = -1;
  if (w->Gz > 1 && st->spec.ors) {
    for (int id = 0; id < AX_N_PARAMS; id++) {
      size_t n = ax_tp_block_dw_scratch(st->spec.tp, st->cfg.channels, id);
      if (n) tp->ors_scratch[id] = carve(c, (size_t)st->n_blocks * n * esz);
    }
    tp->ors.cap = st->n_blocks * AX_N_PARAMS; /* its items: host memory (ax_stage_create) */
  }
  size_t scratch = ax_tp_block_tp_scratch(st->spec.tp, &st->dims);
  if (has_wte && w->Gz > 1 && scratch < wte_shard) scratch = wte_shard;
  tp->scratch = carve(c, (scratch + 1) * esz);
  if (st->spec.last) tp->xent = carve(c, (size_t)(w->Gx + 4) * w->rows * sizeof(float));
}

/* Lays out (or, with c->base == NULL, measures) every activation buffer of the stage. */
static void carve_all(AxGptStage *st, Carve *c, size_t esz) {
  const StageWidths *w = &st->w;
  size_t N = (size_t)w->rows, cy = (size_t)w->cy, T = (size_t)st->dims.T;
  size_t cmax = w->cx > w->cy ? (size_t)w->cx : cy;
  int ac = st->spec.ac;
  size_t att = ax_attention_bytes(st->fused_attention, esz, w->B, (int)T, w->heads);
  for (int s = 0; s < st->spec.n_slots; s++) {
    Slot *sl = &st->slots[s];
    sl->input = carve(c, N * cy * esz);
    if (st->spec.first) sl->tokens = carve(c, N * sizeof(int32_t));
    if (st->spec.last) sl->targets = carve(c, N * sizeof(int32_t));
    if (ac) {
      sl->seg_inputs[0] = sl->input;
      for (int g = 1; g < st->n_segments; g++) sl->seg_inputs[g] = carve(c, N * cy * esz);
      sl->output = carve(c, N * cy * esz);
    } else {
      for (int b = 0; b < st->n_blocks; b++) carve_block(c, &sl->acts[b], w, esz, att);
    }
  }
  for (int b = 0; b < ac; b++) carve_block(c, &st->recompute[b], w, esz, att);
  st->scratch.dres = carve(c, N * cy * esz);
  st->scratch.dtmp = carve(c, N * cmax * esz);
  st->scratch.dbig = carve(c, 4 * N * w->cx * esz);
  st->scratch.datt =
      carve(c, ax_attention_scratch_bytes(st->fused_attention, esz, w->B, (int)T, w->heads));
  if (st->spec.dropout > 0) st->scratch.ddrop = carve(c, N * cy * esz);
  if (st->spec.attention_dropout > 0) st->att_probs = carve(c, (size_t)w->heads * T * T * esz);
  if (st->spec.last) {
    st->lnf = carve(c, N * cy * esz);
    st->lnf_mean = carve(c, N * sizeof(float));
    st->lnf_rstd = carve(c, N * sizeof(float));
    st->logits = carve(c, N * (size_t)w->vocab_rows * esz);
    st->losses = carve(c, N * sizeof(float));
  }
  if (st->spec.tp) carve_tp(st, c, esz);
}

static int check_spec(const AxGptConfig *cfg, const AxStageSpec *s) {
  AX_TRY(ax_gpt_config_check(cfg));
  if (s->l0 < 0 || s->l1 > cfg->layers || s->l1 <= s->l0)
    return AX_FAIL("stage blocks [%d, %d) are not a non-empty range of the %d layers", s->l0,
                   s->l1, cfg->layers);
  if (s->B < 1 || s->T < 1 || s->n_slots < 1)
    return AX_FAIL("micro-batch %d x %d with %d slot(s) is empty", s->B, s->T, s->n_slots);
  if (s->T > cfg->max_seq)
    return AX_FAIL("sequence length %d exceeds the model's maximum %d", s->T, cfg->max_seq);
  if (s->ac < 0 || s->ac > s->l1 - s->l0)
    return AX_FAIL("checkpoint segment of %d blocks does not fit a stage of %d blocks", s->ac,
                   s->l1 - s->l0);
  if (!(s->dropout >= 0 && s->dropout < 1))
    return AX_FAIL("dropout probability %g is not in [0, 1)", s->dropout);
  if (!(s->attention_dropout >= 0 && s->attention_dropout < 1))
    return AX_FAIL("attention dropout probability %g is not in [0, 1)", s->attention_dropout);
  return s->tp ? ax_tp_stage_check(cfg, s->tp, s->B) : AX_OK;
}

static StageWidths widths_of(const AxGptConfig *cfg, const AxStageSpec *spec) {
  StageWidths w = {1, 1, 1, 0, 0, 0, 0, 0, 0};
  if (spec->tp) {
    w.Gx = spec->tp->size[AX_TP_X];
    w.Gy = spec->tp->size[AX_TP_Y];
    w.Gz = spec->tp->size[AX_TP_Z];
  }
  w.B = spec->B / w.Gz;
  w.rows = w.B * spec->T;
  w.cy = cfg->channels / w.Gy;
  w.cx = cfg->channels / w.Gx;
  w.heads = cfg->heads / w.Gx;
  w.vocab_rows = cfg->padded_vocab / w.Gx;
  return w;
}

/* Host-side skeleton (slots, pointer tables) shared by creation and measurement. */
static AxGptStage *stage_skeleton(const AxGptConfig *cfg, const AxStageSpec *spec) {
  AxGptStage *st = ax_calloc(1, sizeof *st);
  if (!st) return NULL;
  st->cfg = *cfg;
  st->spec = *spec;
  st->n_blocks = spec->l1 - spec->l0;
  st->n_segments = spec->ac ? (st->n_blocks + spec->ac - 1) / spec->ac : 0;
  st->dims = (AxBlockDims){spec->B, spec->T, cfg->channels, cfg->heads};
  st->w = widths_of(cfg, spec);
  st->held_slot = st->held_segment = -1;
  if (spec->tp)
    ax_tp_stage_layout(&st->layout, cfg, spec->l0, spec->l1, spec->first, spec->last, spec->tp);
  else
    ax_stage_layout(&st->layout, cfg, spec->l0, spec->l1, spec->first, spec->last);
  st->slots = ax_calloc((size_t)spec->n_slots, sizeof *st->slots);
  if (!st->slots) goto fail;
  for (int s = 0; s < spec->n_slots; s++) {
    if (spec->ac) {
      st->slots[s].seg_inputs = ax_calloc((size_t)st->n_segments, sizeof(void *));
      if (!st->slots[s].seg_inputs) goto fail;
    } else {
      st->slots[s].acts = ax_calloc((size_t)st->n_blocks, sizeof(AxBlockActs));
      if (!st->slots[s].acts) goto fail;
    }
  }
  if (spec->ac && !(st->recompute = ax_calloc((size_t)spec->ac, sizeof(AxBlockActs))))
    goto fail;
  return st;
fail:
  ax_stage_destroy(st);
  return NULL;
}

size_t ax_stage_activation_bytes(const AxGptConfig *cfg, const AxStageSpec *spec, size_t esz) {
  AxGptStage *st = stage_skeleton(cfg, spec);
  if (!st) return 0;
  Carve c = {0};
  carve_all(st, &c, esz);
  ax_stage_destroy(st);
  return c.off;
}

int ax_stage_create(AxGptStage **out, AxBackend *be, const AxGptConfig *cfg,
                    const AxStageSpec *spec) {
  *out = NULL;
  AX_TRY(check_spec(cfg, spec));
  if (spec->tp && !ax_backend_has_tp(be))
    return AX_FAIL("tensor parallelism (--gx/--gy/--gz) needs a backend with its kernels; the "
                   "%s backend has none", be->ops->name);
  if ((spec->dropout > 0 || spec->attention_dropout > 0) && !be->ops->dropout)
    return AX_FAIL("--%s needs a backend with a dropout kernel; the %s backend has none "
                   "yet (use --device cpu)", spec->dropout > 0 ? "dropout" : "attention-dropout",
                   be->ops->name);
  AxGptStage *st = stage_skeleton(cfg, spec);
  if (!st) return AX_ERR;
  st->be = be;
  st->fused_attention = ax_backend_fused_attention(be, st->w.cx, st->w.heads);
  if (st->fused_attention && spec->attention_dropout > 0) {
    ax_stage_destroy(st);
    return AX_FAIL("--attention-dropout needs the explicit attention (--attention explicit): the "
                   "fused kernels of the %s backend keep no probabilities to drop", be->ops->name);
  }
  size_t pbytes = st->layout.total * be->esz;
  Carve measure = {0};
  carve_all(st, &measure, be->esz);
  st->arena_bytes = measure.off;
  /* weights and gradients in one allocation, staggered (AdamW streams through both) */
  size_t grads_at = ax_staggered(pbytes);
  st->params = ax_alloc(be, grads_at + pbytes);
  st->grads = st->params ? (char *)st->params + grads_at : NULL;
  st->arena = st->grads ? ax_alloc(be, st->arena_bytes) : NULL;
  st->losses_host = ax_malloc((size_t)spec->B * spec->T * sizeof(float));
  st->bwd_done_s = ax_calloc((size_t)st->n_blocks + 1, sizeof *st->bwd_done_s);
  if (!st->arena || !st->losses_host || !st->bwd_done_s) {
    ax_stage_destroy(st);
    return ax_error_context("allocating stage of blocks %d-%d (%.1f MB of parameters, %.1f MB "
                            "of activations)", spec->l0, spec->l1 - 1, 2.0 * pbytes / 1e6,
                            measure.off / 1e6);
  }
  Carve real = {.base = st->arena};
  carve_all(st, &real, be->esz);
  /* the queue of deferred reduce-scatters is the host's bookkeeping, not device memory */
  if (st->tp.ors.cap && !(st->tp.ors.items = ax_calloc((size_t)st->tp.ors.cap,
                                                       sizeof *st->tp.ors.items))) {
    ax_stage_destroy(st);
    return AX_ERR;
  }
  if (spec->tp && st->w.Gz > 1) {
    st->tp.fresh = ax_calloc((size_t)st->n_blocks, 1);
    if (!st->tp.fresh) {
      ax_stage_destroy(st);
      return AX_ERR;
    }
    ax_stage_tp_init_cache(st);
  }
  if (be->ops->zero(be, st->params, pbytes, AX_STREAM_COMPUTE) != AX_OK ||
      be->ops->zero(be, st->grads, pbytes, AX_STREAM_COMPUTE) != AX_OK) {
    ax_stage_destroy(st);
    return AX_ERR;
  }
  *out = st;
  return AX_OK;
}

void ax_stage_destroy(AxGptStage *st) {
  if (!st) return;
  if (st->be) {
    ax_free(st->be, st->arena);
    ax_free(st->be, st->params); /* the gradients too */
  }
  if (st->slots) {
    for (int s = 0; s < st->spec.n_slots; s++) {
      free(st->slots[s].acts);
      free(st->slots[s].seg_inputs);
    }
  }
  free(st->slots);
  free(st->tp.fresh);
  free(st->recompute);
  free(st->tp.ors.items);
  free(st->losses_host);
  free(st->bwd_done_s);
  free(st);
}

const AxStageLayout *ax_stage_layout_of(const AxGptStage *st) { return &st->layout; }
const AxStageSpec *ax_stage_spec(const AxGptStage *st) { return &st->spec; }
void *ax_stage_params(AxGptStage *st) { return st->params; }
void *ax_stage_grads(AxGptStage *st) { return st->grads; }
size_t ax_stage_arena_bytes(const AxGptStage *st) { return st->arena_bytes; }

int ax_stage_zero_grads(AxGptStage *st) {
  return st->be->ops->zero(st->be, st->grads, st->layout.total * st->be->esz, AX_STREAM_COMPUTE);
}

int ax_stage_begin_pass(AxGptStage *st) {
  return st->spec.tp && st->w.Gz > 1 ? ax_stage_tp_begin_pass(st) : AX_OK;
}

int ax_stage_gather_kept(const AxGptStage *st, size_t *bytes) {
  *bytes = (size_t)st->tp.kept * (st->tp.fresh ? ax_stage_tp_block_bytes(st) : 0);
  return st->tp.fresh ? st->tp.kept : 0;
}

int ax_stage_reduce_replicas(AxGptStage *st) {
  if (!st->spec.tp || st->w.Gz == 1) return AX_OK;
  for (int id = 0; id < AX_N_PARAMS; id++)
    if (st->layout.has[id] && (ax_tp_param_replicas(id) & (1u << AX_TP_Z)))
      AX_TRY(ax_tp_all_reduce(st->spec.tp, AX_TP_Z, ax_stage_param_view(st, st->grads, id),
                              st->layout.count[id], NULL));
  return AX_OK;
}

/* ------------------------------------------------------------------ views */

/* The activations of local block b of `slot`, and the block's input. In checkpoint mode the
 * block runs in recompute buffer b % ac; the last block of a segment writes straight into the
 * next segment's stored input (or the slot's output). */
static void block_acts(AxGptStage *st, int slot, int b, AxBlockActs *a, const void **in) {
  Slot *sl = &st->slots[slot];
  int ac = st->spec.ac;
  if (!ac) {
    *a = sl->acts[b];
    *in = b == 0 ? sl->input : sl->acts[b - 1].out;
    return;
  }
  int seg = b / ac, pos = b % ac;
  *a = st->recompute[pos];
  *in = pos == 0 ? sl->seg_inputs[seg] : st->recompute[pos - 1].out;
  if (b == st->n_blocks - 1)
    a->out = sl->output;
  else if (pos == ac - 1)
    a->out = sl->seg_inputs[seg + 1];
}


/* ------------------------------------------------------------------ forward */

/* The dropout of local block b (b < 0: the embedding) in `slot`'s micro-batch. */
static AxDropout block_dropout(const AxGptStage *st, int slot, int b) {
  AxDropout d = st->slots[slot].drop;
  d.layer = st->spec.l0 + b;
  return d;
}

/* recompute: the forward of a checkpointed segment again, for its backward. */
static int forward_blocks(AxGptStage *st, int slot, int b0, int b1, int recompute) {
  for (int b = b0; b < b1; b++) {
    AxBlockActs a;
    const void *in;
    block_acts(st, slot, b, &a, &in);
    AxDropout drop = block_dropout(st, slot, b);
    if (st->spec.tp) {
      AX_TRY(ax_stage_tp_block_forward(st, b, &a, in, !recompute || !st->spec.ag_cache,
                                       b + 1 < b1 ? b + 1 : -1, &drop));
      continue;
    }
    AxBlockParams p;
    ax_stage_block_params(st, st->params, b, &p);
    ax_block_forward(st->be, &p, &a, in, &st->dims, &drop);
  }
  return AX_OK;
}

static int check_slot(const AxGptStage *st, int slot) {
  if (slot < 0 || slot >= st->spec.n_slots)
    return AX_FAIL("internal: micro-batch slot %d out of range [0, %d)", slot, st->spec.n_slots);
  return AX_OK;
}

/* This rank's sequences of a whole micro-batch's host tokens (its Z rank's, tensor parallel). */
static const int32_t *own_rows(const AxGptStage *st, const int32_t *host) {
  int z = st->spec.tp ? st->spec.tp->coord[AX_TP_Z] : 0;
  return host + (size_t)z * st->w.rows;
}

size_t ax_stage_message_bytes(const AxGptStage *st) {
  return (size_t)st->w.rows * st->w.cy * st->be->esz;
}

/* The embedding's dropout on x ([rows, C/Gy]), in place: its output in the forward, the
 * gradient reaching it in the backward. */
static void embed_dropout(AxGptStage *st, int slot, void *x) {
  AxDropout d = block_dropout(st, slot, -1);
  if (ax_dropout_on(&d))
    ax_dropout_apply(st->be, &d, AX_DROP_EMBEDDING, x, x, NULL, st->w.rows, st->w.cy);
}

static int embed_forward(AxGptStage *st, int slot, const int32_t *tokens_host) {
  AxBackend *be = st->be;
  Slot *sl = &st->slots[slot];
  AX_TRY(be->ops->copy(be, sl->tokens, own_rows(st, tokens_host),
                       (size_t)st->w.rows * sizeof(int32_t), AX_COPY_H2D, AX_STREAM_COMPUTE));
  if (st->spec.tp)
    AX_TRY(ax_stage_tp_embed_forward(st, slot));
  else
    be->ops->encoder_forward(be, sl->input, sl->tokens,
                             ax_stage_param_view(st, st->params, AX_P_WTE),
                             ax_stage_param_view(st, st->params, AX_P_WPE), st->dims.B,
                             st->dims.T, st->dims.C);
  embed_dropout(st, slot, sl->input);
  return AX_OK;
}

void ax_stage_set_dropout_origin(AxGptStage *st, uint64_t step, uint64_t first_sequence) {
  st->origin_set = 1;
  st->origin_step = step;
  st->origin_sequence = first_sequence;
}

/* The dropout `slot`'s forward and backward run: the stage's, placed at the origin set for this
 * forward (none where none was set: validation, sampling). */
static void place_dropout(AxGptStage *st, int slot) {
  AxDropout d = {0};
  if (st->origin_set && (st->spec.dropout > 0 || st->spec.attention_dropout > 0)) {
    int x = st->spec.tp ? st->spec.tp->coord[AX_TP_X] : 0;
    int y = st->spec.tp ? st->spec.tp->coord[AX_TP_Y] : 0;
    int z = st->spec.tp ? st->spec.tp->coord[AX_TP_Z] : 0;
    d = (AxDropout){.p = st->spec.dropout,
                    .p_att = st->spec.attention_dropout,
                    .seed = st->spec.dropout_seed,
                    .step = st->origin_step,
                    .row0 = (st->origin_sequence + (uint64_t)z * st->w.B) * st->dims.T,
                    .col0 = (uint64_t)y * st->w.cy,
                    .width = (uint64_t)st->dims.C,
                    .head0 = (uint64_t)x * st->w.heads,
                    .heads = (uint64_t)st->dims.NH,
                    .probs = st->att_probs};
  }
  st->slots[slot].drop = d;
  st->origin_set = 0;
}

int ax_stage_forward(AxGptStage *st, int slot, const int32_t *tokens_host, const void *input,
                     AxMemKind input_mem) {
  AX_TRY(check_slot(st, slot));
  place_dropout(st, slot);
  if (st->spec.first)
    AX_TRY(embed_forward(st, slot, tokens_host));
  else
    AX_TRY(st->be->ops->copy(st->be, st->slots[slot].input, input, ax_stage_message_bytes(st),
                             ax_copy_to_device(input_mem), AX_STREAM_COMPUTE));
  AX_TRY(forward_blocks(st, slot, 0, st->n_blocks, 0));
  if (st->spec.ac) {
    st->held_slot = slot;
    st->held_segment = st->n_segments - 1;
  }
  return AX_OK;
}

void *ax_stage_output(AxGptStage *st, int slot) { return ax_stage_final_output(st, slot); }

/* ------------------------------------------------------------------ backward */

static int backward_block(AxGptStage *st, int slot, int b) {
  AxBlockActs a;
  const void *in;
  block_acts(st, slot, b, &a, &in);
  AxDropout drop = block_dropout(st, slot, b);
  if (st->spec.tp) return ax_stage_tp_block_backward(st, b, &a, in, &drop);
  AxBlockParams p, g;
  ax_stage_block_params(st, st->params, b, &p);
  ax_stage_block_params(st, st->grads, b, &g);
  ax_block_backward(st->be, &p, &g, &a, in, &st->scratch, &st->dims, &drop);
  return AX_OK;
}

/* The blocks' backward from scratch.dres (recomputing each segment first in checkpoint
 * mode), then the embedding's on the first stage. */
static int backward_blocks(AxGptStage *st, int slot) {
  int ac = st->spec.ac;
  for (int b = st->n_blocks - 1; b >= 0; b--) {
    if (ac) {
      int seg = b / ac;
      if (st->held_slot != slot || st->held_segment != seg) {
        int b1 = (seg + 1) * ac < st->n_blocks ? (seg + 1) * ac : st->n_blocks;
        AX_TRY(forward_blocks(st, slot, seg * ac, b1, 1));
        st->held_slot = slot;
        st->held_segment = seg;
      }
    }
    AX_TRY(backward_block(st, slot, b));
    st->bwd_done_s[b] = ax_now() - st->bwd_t0;
    if (st->after_block && !st->spec.tp) AX_TRY(st->after_block(st->after_block_ctx, b));
  }
  if (ac) st->held_slot = st->held_segment = -1;
  if (!st->spec.first) return AX_OK;
  embed_dropout(st, slot, st->scratch.dres); /* the first stage sends no input gradient */
  if (st->spec.tp) return ax_stage_tp_embed_backward(st, slot);
  st->be->ops->encoder_backward(st->be, ax_stage_param_view(st, st->grads, AX_P_WTE),
                                ax_stage_param_view(st, st->grads, AX_P_WPE), st->scratch.dres,
                                st->slots[slot].tokens, st->dims.B, st->dims.T, st->dims.C);
  return AX_OK;
}

static int download_loss(AxGptStage *st, double *loss_mean) {
  size_t N = (size_t)st->w.rows;
  AX_TRY(st->be->ops->copy(st->be, st->losses_host, st->losses, N * sizeof(float), AX_COPY_D2H,
                           AX_STREAM_COMPUTE));
  AX_TRY(ax_sync(st->be));
  double sum = 0;
  for (size_t i = 0; i < N; i++) sum += st->losses_host[i];
  *loss_mean = sum / (double)N;
  return AX_OK;
}

/* Final LayerNorm + logits of `slot` (the forward half of the head). */
static int head_forward(AxGptStage *st, int slot) {
  if (st->spec.tp) return ax_stage_tp_head_forward(st, slot);
  AxBackend *be = st->be;
  int N = st->dims.B * st->dims.T, C = st->dims.C;
  be->ops->layernorm_forward(be, st->lnf, st->lnf_mean, st->lnf_rstd,
                             ax_stage_final_output(st, slot),
                             ax_stage_param_view(st, st->params, AX_P_LNFW),
                             ax_stage_param_view(st, st->params, AX_P_LNFB), N, C);
  /* all Vp columns, as llm.c does: with n = V (odd for GPT-2) cuBLAS falls back to unaligned
   * kernels, 5x slower on an H100 (docs/benchmarks.md, GPU); the padded columns' gradient is
   * 0 (crossentropy), so the backward GEMMs may run over Vp too */
  AxGemm g = {.trans_b = 1, .m = N, .n = st->cfg.padded_vocab, .k = C, .alpha = 1, .beta = 0,
              .lda = C, .ldb = C, .ldc = st->cfg.padded_vocab};
  ax_gemm(be, &g, st->lnf, ax_stage_param_view(st, st->params, AX_P_WTE), st->logits);
  return AX_OK;
}

/* Backward of the head from d(logits) (in place in st->logits) into scratch.dres. */
static int head_backward(AxGptStage *st, int slot) {
  if (st->spec.tp) return ax_stage_tp_head_backward(st, slot);
  AxBackend *be = st->be;
  int N = st->dims.B * st->dims.T, C = st->dims.C, Vp = st->cfg.padded_vocab;
  void *wte = ax_stage_param_view(st, st->params, AX_P_WTE);
  void *dwte = ax_stage_param_view(st, st->grads, AX_P_WTE);
  AxGemm gi = {.m = N, .n = C, .k = Vp, .alpha = 1, .beta = 0, .lda = Vp, .ldb = C, .ldc = C};
  ax_gemm(be, &gi, st->logits, wte, st->scratch.dtmp);
  AxGemm gw = {.trans_a = 1, .m = Vp, .n = C, .k = N, .alpha = 1, .beta = 1, .lda = Vp,
               .ldb = C, .ldc = C};
  ax_gemm(be, &gw, st->logits, st->lnf, dwte);
  AX_TRY(be->ops->zero(be, st->scratch.dres, (size_t)N * C * be->esz, AX_STREAM_COMPUTE));
  be->ops->layernorm_backward(be, st->scratch.dres, ax_stage_param_view(st, st->grads, AX_P_LNFW),
                              ax_stage_param_view(st, st->grads, AX_P_LNFB), st->scratch.dtmp,
                              ax_stage_final_output(st, slot),
                              ax_stage_param_view(st, st->params, AX_P_LNFW), st->lnf_mean,
                              st->lnf_rstd, N, C);
  return AX_OK;
}

static int loss(AxGptStage *st, int slot, float dloss) {
  if (st->spec.tp) return ax_stage_tp_loss(st, slot, dloss);
  st->be->ops->crossentropy(st->be, st->losses, st->logits, st->slots[slot].targets, st->w.rows,
                            st->cfg.vocab, st->cfg.padded_vocab, dloss);
  return AX_OK;
}

/* The stage's backward from its output gradient in scratch.dres, or from the head. */
static int backward(AxGptStage *st, int slot, int from_head) {
  st->bwd_t0 = ax_now();
  if (st->spec.tp) AX_TRY(ax_stage_tp_begin_backward(st));
  if (from_head) AX_TRY(head_backward(st, slot));
  AX_TRY(backward_blocks(st, slot));
  if (st->spec.tp) AX_TRY(ax_stage_tp_end_backward(st));
  st->bwd_total_s = ax_now() - st->bwd_t0;
  return AX_OK;
}

int ax_stage_loss_backward(AxGptStage *st, int slot, const int32_t *targets_host, float dloss,
                           double *loss_mean) {
  AX_TRY(check_slot(st, slot));
  if (!st->spec.last) return AX_FAIL("internal: loss requested on a stage without the head");
  AxBackend *be = st->be;
  AX_TRY(be->ops->copy(be, st->slots[slot].targets, own_rows(st, targets_host),
                       (size_t)st->w.rows * sizeof(int32_t), AX_COPY_H2D, AX_STREAM_COMPUTE));
  AX_TRY(head_forward(st, slot));
  AX_TRY(loss(st, slot, dloss));
  if (dloss != 0.0f) AX_TRY(backward(st, slot, 1));
  return download_loss(st, loss_mean);
}

int ax_stage_backward(AxGptStage *st, int slot, const void *doutput, AxMemKind doutput_mem) {
  AX_TRY(check_slot(st, slot));
  AX_TRY(st->be->ops->copy(st->be, st->scratch.dres, doutput, ax_stage_message_bytes(st),
                           ax_copy_to_device(doutput_mem), AX_STREAM_COMPUTE));
  return backward(st, slot, 0);
}

void *ax_stage_dinput(AxGptStage *st) { return st->scratch.dres; }

void ax_stage_set_block_hook(AxGptStage *st, AxStageBlockHook after_block, void *ctx) {
  st->after_block = after_block;
  st->after_block_ctx = ctx;
}

int ax_stage_backward_timeline(const AxGptStage *st, const double **done_s, double *total_s) {
  *done_s = st->bwd_done_s;
  *total_s = st->bwd_total_s;
  return st->n_blocks;
}

int ax_stage_logits_at(AxGptStage *st, int slot, int pos, float *out_host) {
  AX_TRY(check_slot(st, slot));
  if (!st->spec.last) return AX_FAIL("internal: logits requested on a stage without the head");
  if (st->spec.tp) return AX_FAIL("sampling runs without tensor parallelism");
  AX_TRY(head_forward(st, slot));
  void *row = ax_at(st->be, st->logits, (size_t)pos * st->cfg.padded_vocab);
  AX_TRY(st->be->ops->download_f32(st->be, out_host, row, (size_t)st->cfg.vocab,
                                   AX_STREAM_COMPUTE));
  return ax_sync(st->be);
}

int ax_gpt_gemm_shapes(const AxGptConfig *c, int rows, AxGemmShape out[AX_GPT_GEMMS]) {
  int C = c->channels;
  const AxGemmShape shapes[AX_GPT_GEMMS] = {
      {rows, 3 * C, C, "qkv"}, {rows, C, C, "attproj"}, {rows, 4 * C, C, "fc"},
      {rows, C, 4 * C, "fcproj"}, {rows, c->vocab, C, "lm-head"}};
  for (int i = 0; i < AX_GPT_GEMMS; i++) out[i] = shapes[i];
  return AX_GPT_GEMMS;
}
