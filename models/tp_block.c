/* tp_block.c — a GPT-2 block over the tensor-parallel layers; see tp_block.h. */
#include "tp_block.h"

#include "layers.h"
#include "src/core/error.h"
#include "tp_layers.h"

#define P(x) ((const void *)p->t[AX_P_##x])
#define G(x) (g->t[AX_P_##x])
#define W(x) ((const void *)w->t[AX_P_##x])

enum { QKV, ATTPROJ, FC, FCPROJ, N_LINEAR };

/* The block's four fully-connected layers on n rows of C channels. */
static AxTpLinear linear_of(int which, int n, int C) {
  static const int in_mul[N_LINEAR] = {1, 1, 1, 4}, out_mul[N_LINEAR] = {3, 1, 4, 1};
  static const int transposed[N_LINEAR] = {0, 1, 0, 1};
  return (AxTpLinear){n, in_mul[which] * C, out_mul[which] * C, transposed[which]};
}

static int linear_of_param(int id) {
  switch (id) {
  case AX_P_QKVW: return QKV;
  case AX_P_ATTPROJW: return ATTPROJ;
  case AX_P_FCW: return FC;
  case AX_P_FCPROJW: return FCPROJ;
  default: return -1;
  }
}

size_t ax_tp_block_gathered(const AxTpComm *c, int C, int id) {
  int k = linear_of_param(id);
  if (k < 0) return 0;
  AxTpLinear l = linear_of(k, 1, C);
  return ax_tp_linear_block(c, &l);
}

size_t ax_tp_block_shard(const AxTpComm *c, int C, int id) {
  int k = linear_of_param(id);
  if (k >= 0) {
    AxTpLinear l = linear_of(k, 1, C);
    return ax_tp_linear_shard(c, &l);
  }
  int Gx = c->size[AX_TP_X], Gy = c->size[AX_TP_Y];
  switch (id) {
  case AX_P_QKVB: return (size_t)3 * C / Gx;
  case AX_P_FCB: return (size_t)4 * C / Gx;
  case AX_P_LN1W: case AX_P_LN1B: case AX_P_LN2W: case AX_P_LN2B: case AX_P_ATTPROJB:
  case AX_P_FCPROJB: return (size_t)C / Gy;
  default: return 0;
  }
}

int ax_tp_block_check(const AxTpComm *c, const AxBlockDims *d) {
  int Gx = c->size[AX_TP_X], Gy = c->size[AX_TP_Y], Gz = c->size[AX_TP_Z], C = d->C;
  if (d->NH % Gx)
    return AX_FAIL("--gx %d does not divide the %d attention heads", Gx, d->NH);
  if (C % Gx || C % Gy)
    return AX_FAIL("--gx %d and --gy %d must divide the hidden size %d", Gx, Gy, C);
  if (d->B % Gz)
    return AX_FAIL("--gz %d does not divide the %d sequences of a micro-batch", Gz, d->B);
  for (int k = 0; k < N_LINEAR; k++) {
    AxTpLinear l = linear_of(k, 1, C);
    int rows = ax_tp_linear_out(c, &l);
    if (rows % Gz)
      return AX_FAIL("--gz %d does not divide the %d rows of a weight block (hidden %d over "
                     "--gx %d x --gy %d)", Gz, rows, C, Gx, Gy);
  }
  return AX_OK;
}

size_t ax_tp_block_dw_scratch(const AxTpComm *c, int C, int id) {
  size_t block = ax_tp_block_gathered(c, C, id);
  if (c->size[AX_TP_Z] == 1 || !block) return 0;
  return block + ax_tp_block_shard(c, C, id);
}

size_t ax_tp_block_tp_scratch(const AxTpComm *c, const AxBlockDims *d) {
  size_t most = 0;
  for (int id = 0; id < AX_N_PARAMS; id++) {
    size_t n = ax_tp_block_dw_scratch(c, d->C, id);
    if (n > most) most = n;
  }
  return most;
}

int ax_tp_qkv_row(const AxTpComm *c, int C, int r) {
  int per = C / c->size[AX_TP_X];
  return (r / per) * C + c->coord[AX_TP_X] * per + r % per;
}

/* out = residual + proj(x) on n rows of its output: the residual added with the bias before the
 * all-reduce, or after it with the branch's dropout (the same mask on every rank that holds the
 * rows, drop->col0 their first channel). */
static int branch_forward(AxBackend *be, AxTpComm *c, const AxTpLinear *l, const AxDropout *drop,
                          int what, void *out, const void *x, const void *w, const void *b,
                          const void *residual) {
  if (!ax_dropout_on(drop)) return ax_tp_linear_forward(be, c, l, out, x, w, b, residual);
  AX_TRY(ax_tp_linear_forward(be, c, l, out, x, w, b, NULL));
  ax_dropout_apply(be, drop, what, out, out, residual, l->N, ax_tp_linear_out(c, l));
  return AX_OK;
}

/* The gradient reaching a branch's projection: d(out) itself, or dropped into `scratch`. */
static const void *branch_grad(AxBackend *be, AxTpComm *c, const AxTpLinear *l,
                               const AxDropout *drop, int what, const void *dout,
                               void *scratch) {
  if (!ax_dropout_on(drop)) return dout;
  ax_dropout_apply(be, drop, what, scratch, dout, NULL, l->N, ax_tp_linear_out(c, l));
  return scratch;
}

int ax_tp_block_forward(AxBackend *be, AxTpComm *c, const AxBlockParams *p,
                        const AxTpBlockWeights *w, const AxBlockActs *a, const void *in,
                        const AxBlockDims *d, const AxDropout *drop) {
  int B = d->B / c->size[AX_TP_Z], n = B * d->T, C = d->C, Gx = c->size[AX_TP_X];
  AxTpLinear qkv = linear_of(QKV, n, C), proj = linear_of(ATTPROJ, n, C);
  AxTpLinear fc = linear_of(FC, n, C), fcproj = linear_of(FCPROJ, n, C);
  AX_TRY(ax_tp_layernorm_forward(be, c, a->ln1, a->ln1_mean, a->ln1_rstd, in, P(LN1W), P(LN1B), n,
                                 C));
  AX_TRY(ax_tp_linear_forward(be, c, &qkv, a->qkv, a->ln1, W(QKVW), P(QKVB), NULL));
  ax_attention_forward(be, a->atty, a->att, a->qkv, B, d->T, C / Gx, d->NH / Gx, drop);
  AX_TRY(branch_forward(be, c, &proj, drop, AX_DROP_ATTENTION, a->res2, a->atty, W(ATTPROJW),
                        P(ATTPROJB), in));
  AX_TRY(ax_tp_layernorm_forward(be, c, a->ln2, a->ln2_mean, a->ln2_rstd, a->res2, P(LN2W),
                                 P(LN2B), n, C));
  AX_TRY(ax_tp_linear_forward(be, c, &fc, a->fch, a->ln2, W(FCW), P(FCB), NULL));
  be->ops->gelu_forward(be, a->fch_gelu, a->fch, (size_t)n * ax_tp_linear_out(c, &fc));
  return branch_forward(be, c, &fcproj, drop, AX_DROP_MLP, a->out, a->fch_gelu, W(FCPROJW),
                        P(FCPROJB), a->res2);
}

/* One matrix's backward options out of the block's. */
static AxTpBackwardOpts opts_of(const AxTpBlockBackwardOpts *o, int id) {
  return (AxTpBackwardOpts){o->scratch[id], o->ors, o->oar};
}

int ax_tp_block_backward(AxBackend *be, AxTpComm *c, const AxBlockParams *p, AxBlockParams *g,
                         const AxTpBlockWeights *w, const AxBlockActs *a, const void *in,
                         const AxBlockScratch *s, const AxBlockDims *d,
                         const AxTpBlockBackwardOpts *o, const AxDropout *drop) {
  int B = d->B / c->size[AX_TP_Z], n = B * d->T, C = d->C, Gx = c->size[AX_TP_X];
  AxTpLinear qkv = linear_of(QKV, n, C), proj = linear_of(ATTPROJ, n, C);
  AxTpLinear fc = linear_of(FC, n, C), fcproj = linear_of(FCPROJ, n, C);
  AxTpBackwardOpts o_qkv = opts_of(o, AX_P_QKVW), o_proj = opts_of(o, AX_P_ATTPROJW);
  AxTpBackwardOpts o_fc = opts_of(o, AX_P_FCW), o_fcproj = opts_of(o, AX_P_FCPROJW);
  void *dres = s->dres, *dtmp = s->dtmp, *dbig = s->dbig;
  /* MLP: dres = d(out) also flows unchanged to res2 through the residual */
  const void *dproj = branch_grad(be, c, &fcproj, drop, AX_DROP_MLP, dres, s->ddrop);
  AX_TRY(ax_tp_linear_backward(be, c, &fcproj, dbig, G(FCPROJW), G(FCPROJB), dproj, a->fch_gelu,
                               W(FCPROJW), &o_fcproj));
  be->ops->gelu_backward(be, dbig, a->fch, dbig, (size_t)n * ax_tp_linear_out(c, &fc));
  AX_TRY(ax_tp_linear_backward(be, c, &fc, dtmp, G(FCW), G(FCB), dbig, a->ln2, W(FCW), &o_fc));
  AX_TRY(ax_tp_layernorm_backward(be, c, dres, G(LN2W), G(LN2B), dtmp, a->res2, P(LN2W),
                                  a->ln2_mean, a->ln2_rstd, dbig, n, C));
  /* attention: dres = d(res2) also flows unchanged to the block input */
  dproj = branch_grad(be, c, &proj, drop, AX_DROP_ATTENTION, dres, s->ddrop);
  AX_TRY(ax_tp_linear_backward(be, c, &proj, dtmp, G(ATTPROJW), G(ATTPROJB), dproj, a->atty,
                               W(ATTPROJW), &o_proj));
  ax_attention_backward(be, dbig, s->datt, dtmp, a->atty, a->att, a->qkv, B, d->T, C / Gx,
                        d->NH / Gx, drop);
  AX_TRY(ax_tp_linear_backward(be, c, &qkv, dtmp, G(QKVW), G(QKVB), dbig, a->ln1, W(QKVW),
                               &o_qkv));
  return ax_tp_layernorm_backward(be, c, dres, G(LN1W), G(LN1B), dtmp, in, P(LN1W), a->ln1_mean,
                                  a->ln1_rstd, dbig, n, C);
}
