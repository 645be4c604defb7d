/* gpt_stage.c — forward/backward of a GPT-2 pipeline stage over one activation arena, with
 * optional segment recomputation (activation checkpointing); see gpt_stage.h. */
#include "gpt_stage.h"

#include <stdlib.h>
#include <string.h>

#include "src/core/error.h"

typedef struct {
  void *input;        /* [N, C]: embedding output (first stage) or the received activation */
  void *output;       /* [N, C]: checkpoint mode only (else the last block's out) */
  int32_t *tokens;    /* [N] first stage */
  int32_t *targets;   /* [N] last stage */
  AxBlockActs *acts;  /* n_blocks, when every activation is kept */
  void **seg_inputs;  /* n_segments, checkpoint mode; seg_inputs[0] == input */
} Slot;

struct AxGptStage {
  AxGptConfig cfg;
  AxStageSpec spec;
  AxStageLayout layout;
  AxBlockDims dims;
  int n_blocks, n_segments;
  AxBackend *be;
  void *params, *grads, *arena;
  size_t arena_bytes;
  Slot *slots;
  AxBlockScratch scratch;
  AxBlockActs *recompute;           /* ac buffers, checkpoint mode */
  int held_slot, held_segment;      /* whose activations `recompute` holds; -1: stale */
  void *lnf, *logits;
  float *lnf_mean, *lnf_rstd, *losses, *losses_host;
};

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

static void carve_block(Carve *c, AxBlockActs *a, const AxBlockDims *d, size_t esz,
                        int with_out) {
  size_t N = (size_t)d->B * d->T, C = (size_t)d->C;
  a->ln1 = carve(c, N * C * esz);
  a->ln1_mean = carve(c, N * sizeof(float));
  a->ln1_rstd = carve(c, N * sizeof(float));
  a->qkv = carve(c, 3 * N * C * esz);
  a->att = carve(c, (size_t)d->B * d->NH * d->T * d->T * esz);
  a->atty = carve(c, N * C * esz);
  a->res2 = carve(c, N * C * esz);
  a->ln2 = carve(c, N * C * esz);
  a->ln2_mean = carve(c, N * sizeof(float));
  a->ln2_rstd = carve(c, N * sizeof(float));
  a->fch = carve(c, 4 * N * C * esz);
  a->fch_gelu = carve(c, 4 * N * C * esz);
  a->out = with_out ? carve(c, N * C * esz) : NULL;
}

/* Lays out (or, with c->base == NULL, measures) every activation buffer of the stage. */
static void carve_all(AxGptStage *st, Carve *c, size_t esz) {
  const AxBlockDims *d = &st->dims;
  size_t N = (size_t)d->B * d->T, C = (size_t)d->C, V = (size_t)st->cfg.padded_vocab;
  int ac = st->spec.ac;
  for (int s = 0; s < st->spec.n_slots; s++) {
    Slot *sl = &st->slots[s];
    sl->input = carve(c, N * C * esz);
    if (st->spec.first) sl->tokens = carve(c, N * sizeof(int32_t));
    if (st->spec.last) sl->targets = carve(c, N * sizeof(int32_t));
    if (ac) {
      sl->seg_inputs[0] = sl->input;
      for (int g = 1; g < st->n_segments; g++) sl->seg_inputs[g] = carve(c, N * C * esz);
      sl->output = carve(c, N * C * esz);
    } else {
      for (int b = 0; b < st->n_blocks; b++) carve_block(c, &sl->acts[b], d, esz, 1);
    }
  }
  for (int b = 0; b < ac; b++) carve_block(c, &st->recompute[b], d, esz, 1);
  st->scratch.dres = carve(c, N * C * esz);
  st->scratch.dtmp = carve(c, N * C * esz);
  st->scratch.dbig = carve(c, 4 * N * C * esz);
  st->scratch.datt = carve(c, (size_t)d->NH * d->T * d->T * esz);
  if (st->spec.last) {
    st->lnf = carve(c, N * C * esz);
    st->lnf_mean = carve(c, N * sizeof(float));
    st->lnf_rstd = carve(c, N * sizeof(float));
    st->logits = carve(c, N * V * esz);
    st->losses = carve(c, N * sizeof(float));
  }
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
  return AX_OK;
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
  st->held_slot = st->held_segment = -1;
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
  AxGptStage *st = stage_skeleton(cfg, spec);
  if (!st) return AX_ERR;
  st->be = be;
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
  if (!st->arena || !st->losses_host) {
    ax_stage_destroy(st);
    return ax_error_context("allocating stage of blocks %d-%d (%.1f MB of parameters, %.1f MB "
                            "of activations)", spec->l0, spec->l1 - 1, 2.0 * pbytes / 1e6,
                            measure.off / 1e6);
  }
  Carve real = {.base = st->arena};
  carve_all(st, &real, be->esz);
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
  free(st->recompute);
  free(st->losses_host);
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

/* ------------------------------------------------------------------ views */

static void *param_view(AxGptStage *st, void *flat, int id) {
  return st->layout.has[id] ? ax_at(st->be, flat, st->layout.offset[id]) : NULL;
}

/* Parameters (flat = params) or gradients (flat = grads) of local block b. */
static void block_params(AxGptStage *st, void *flat, int b, AxBlockParams *out) {
  memset(out, 0, sizeof *out);
  for (int id = 0; id < AX_N_PARAMS; id++) {
    if (!ax_param_is_layer(id)) continue;
    size_t per = ax_param_per_layer(&st->cfg, id);
    out->t[id] = ax_at(st->be, flat, st->layout.offset[id] + (size_t)b * per);
  }
}

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

static void *final_output(AxGptStage *st, int slot) {
  Slot *sl = &st->slots[slot];
  return st->spec.ac ? sl->output : sl->acts[st->n_blocks - 1].out;
}

/* ------------------------------------------------------------------ forward */

static void forward_blocks(AxGptStage *st, int slot, int b0, int b1) {
  for (int b = b0; b < b1; b++) {
    AxBlockParams p;
    AxBlockActs a;
    const void *in;
    block_params(st, st->params, b, &p);
    block_acts(st, slot, b, &a, &in);
    ax_block_forward(st->be, &p, &a, in, &st->dims);
  }
}

static int check_slot(const AxGptStage *st, int slot) {
  if (slot < 0 || slot >= st->spec.n_slots)
    return AX_FAIL("internal: micro-batch slot %d out of range [0, %d)", slot, st->spec.n_slots);
  return AX_OK;
}

int ax_stage_forward(AxGptStage *st, int slot, const int32_t *tokens_host, const void *input,
                     AxMemKind input_mem) {
  AX_TRY(check_slot(st, slot));
  AxBackend *be = st->be;
  Slot *sl = &st->slots[slot];
  size_t N = (size_t)st->dims.B * st->dims.T;
  if (st->spec.first) {
    AX_TRY(be->ops->copy(be, sl->tokens, tokens_host, N * sizeof(int32_t), AX_COPY_H2D,
                         AX_STREAM_COMPUTE));
    be->ops->encoder_forward(be, sl->input, sl->tokens, param_view(st, st->params, AX_P_WTE),
                             param_view(st, st->params, AX_P_WPE), st->dims.B, st->dims.T,
                             st->dims.C);
  } else {
    AX_TRY(be->ops->copy(be, sl->input, input, N * st->dims.C * be->esz,
                         ax_copy_to_device(input_mem), AX_STREAM_COMPUTE));
  }
  forward_blocks(st, slot, 0, st->n_blocks);
  if (st->spec.ac) {
    st->held_slot = slot;
    st->held_segment = st->n_segments - 1;
  }
  return AX_OK;
}

void *ax_stage_output(AxGptStage *st, int slot) { return final_output(st, slot); }

/* ------------------------------------------------------------------ backward */

static void backward_blocks(AxGptStage *st, int slot) {
  int ac = st->spec.ac;
  for (int b = st->n_blocks - 1; b >= 0; b--) {
    if (ac) {
      int seg = b / ac;
      if (st->held_slot != slot || st->held_segment != seg) {
        int b1 = (seg + 1) * ac < st->n_blocks ? (seg + 1) * ac : st->n_blocks;
        forward_blocks(st, slot, seg * ac, b1);
        st->held_slot = slot;
        st->held_segment = seg;
      }
    }
    AxBlockParams p, g;
    AxBlockActs a;
    const void *in;
    block_params(st, st->params, b, &p);
    block_params(st, st->grads, b, &g);
    block_acts(st, slot, b, &a, &in);
    ax_block_backward(st->be, &p, &g, &a, in, &st->scratch, &st->dims);
  }
  if (ac) st->held_slot = st->held_segment = -1;
  if (st->spec.first) {
    Slot *sl = &st->slots[slot];
    st->be->ops->encoder_backward(st->be, param_view(st, st->grads, AX_P_WTE),
                                  param_view(st, st->grads, AX_P_WPE), st->scratch.dres,
                                  sl->tokens, st->dims.B, st->dims.T, st->dims.C);
  }
}

static int download_loss(AxGptStage *st, double *loss_mean) {
  size_t N = (size_t)st->dims.B * st->dims.T;
  AX_TRY(st->be->ops->copy(st->be, st->losses_host, st->losses, N * sizeof(float), AX_COPY_D2H,
                           AX_STREAM_COMPUTE));
  AX_TRY(ax_sync(st->be));
  double sum = 0;
  for (size_t i = 0; i < N; i++) sum += st->losses_host[i];
  *loss_mean = sum / (double)N;
  return AX_OK;
}

/* Final LayerNorm + logits of `slot` (the forward half of the head). */
static void head_forward(AxGptStage *st, int slot) {
  AxBackend *be = st->be;
  int N = st->dims.B * st->dims.T, C = st->dims.C;
  be->ops->layernorm_forward(be, st->lnf, st->lnf_mean, st->lnf_rstd, final_output(st, slot),
                             param_view(st, st->params, AX_P_LNFW),
                             param_view(st, st->params, AX_P_LNFB), N, C);
  AxGemm g = {.trans_b = 1, .m = N, .n = st->cfg.vocab, .k = C, .alpha = 1, .beta = 0,
              .lda = C, .ldb = C, .ldc = st->cfg.padded_vocab};
  ax_gemm(be, &g, st->lnf, param_view(st, st->params, AX_P_WTE), st->logits);
}

/* Backward of the head from d(logits) (in place in st->logits) into scratch.dres. */
static int head_backward(AxGptStage *st, int slot) {
  AxBackend *be = st->be;
  int N = st->dims.B * st->dims.T, C = st->dims.C, V = st->cfg.vocab, Vp = st->cfg.padded_vocab;
  void *wte = param_view(st, st->params, AX_P_WTE), *dwte = param_view(st, st->grads, AX_P_WTE);
  AxGemm gi = {.m = N, .n = C, .k = V, .alpha = 1, .beta = 0, .lda = Vp, .ldb = C, .ldc = C};
  ax_gemm(be, &gi, st->logits, wte, st->scratch.dtmp);
  AxGemm gw = {.trans_a = 1, .m = V, .n = C, .k = N, .alpha = 1, .beta = 1, .lda = Vp,
               .ldb = C, .ldc = C};
  ax_gemm(be, &gw, st->logits, st->lnf, dwte);
  AX_TRY(be->ops->zero(be, st->scratch.dres, (size_t)N * C * be->esz, AX_STREAM_COMPUTE));
  be->ops->layernorm_backward(be, st->scratch.dres, param_view(st, st->grads, AX_P_LNFW),
                              param_view(st, st->grads, AX_P_LNFB), st->scratch.dtmp,
                              final_output(st, slot), param_view(st, st->params, AX_P_LNFW),
                              st->lnf_mean, st->lnf_rstd, N, C);
  return AX_OK;
}

int ax_stage_loss_backward(AxGptStage *st, int slot, const int32_t *targets_host, float dloss,
                           double *loss_mean) {
  AX_TRY(check_slot(st, slot));
  if (!st->spec.last) return AX_FAIL("internal: loss requested on a stage without the head");
  AxBackend *be = st->be;
  Slot *sl = &st->slots[slot];
  int N = st->dims.B * st->dims.T;
  AX_TRY(be->ops->copy(be, sl->targets, targets_host, (size_t)N * sizeof(int32_t), AX_COPY_H2D,
                       AX_STREAM_COMPUTE));
  head_forward(st, slot);
  be->ops->crossentropy(be, st->losses, st->logits, sl->targets, N, st->cfg.vocab,
                        st->cfg.padded_vocab, dloss);
  if (dloss != 0.0f) {
    AX_TRY(head_backward(st, slot));
    backward_blocks(st, slot);
  }
  return download_loss(st, loss_mean);
}

int ax_stage_backward(AxGptStage *st, int slot, const void *doutput, AxMemKind doutput_mem) {
  AX_TRY(check_slot(st, slot));
  AxBackend *be = st->be;
  size_t bytes = (size_t)st->dims.B * st->dims.T * st->dims.C * be->esz;
  AX_TRY(be->ops->copy(be, st->scratch.dres, doutput, bytes, ax_copy_to_device(doutput_mem),
                       AX_STREAM_COMPUTE));
  backward_blocks(st, slot);
  return AX_OK;
}

void *ax_stage_dinput(AxGptStage *st) { return st->scratch.dres; }

int ax_stage_logits_at(AxGptStage *st, int slot, int pos, float *out_host) {
  AX_TRY(check_slot(st, slot));
  if (!st->spec.last) return AX_FAIL("internal: logits requested on a stage without the head");
  head_forward(st, slot);
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
