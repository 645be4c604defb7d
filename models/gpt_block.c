/* gpt_block.c — a GPT-2 transformer block:
 *   res2 = in + attproj(attention(qkv(ln1(in))));  out = res2 + fcproj(gelu(fc(ln2(res2))))
 * with dropout (dropout.h) on the two branches before they are added, and on the attention's
 * probabilities, where it is on. */
#include "gpt_block.h"

#include "layers.h"

#define P(x) (p->t[AX_P_##x])
#define G(x) (g->t[AX_P_##x])

/* out = residual + proj(x): the residual added by the GEMM, or after the branch's dropout. */
static void branch_forward(AxBackend *be, const AxDropout *drop, int what, void *out,
                           const void *x, const void *w, const void *b, const void *residual,
                           int N, int C, int OC) {
  if (!ax_dropout_on(drop)) {
    ax_linear_forward(be, out, x, w, b, residual, N, C, OC);
    return;
  }
  ax_linear_forward(be, out, x, w, b, NULL, N, C, OC);
  ax_dropout_apply(be, drop, what, out, out, residual, N, OC);
}

/* The gradient reaching a branch's projection: d(out) itself, or dropped into `scratch`. */
static const void *branch_grad(AxBackend *be, const AxDropout *drop, int what,
                               const void *dout, void *scratch, int N, int C) {
  if (!ax_dropout_on(drop)) return dout;
  ax_dropout_apply(be, drop, what, scratch, dout, NULL, N, C);
  return scratch;
}

void ax_block_forward(AxBackend *be, const AxBlockParams *p, const AxBlockActs *a,
                      const void *in, const AxBlockDims *d, const AxDropout *drop) {
  int N = d->B * d->T, C = d->C;
  be->ops->layernorm_forward(be, a->ln1, a->ln1_mean, a->ln1_rstd, in, P(LN1W), P(LN1B), N, C);
  ax_linear_forward(be, a->qkv, a->ln1, P(QKVW), P(QKVB), NULL, N, C, 3 * C);
  ax_attention_forward(be, a->atty, a->att, a->qkv, d->B, d->T, C, d->NH, drop);
  branch_forward(be, drop, AX_DROP_ATTENTION, a->res2, a->atty, P(ATTPROJW), P(ATTPROJB), in, N,
                 C, C);
  be->ops->layernorm_forward(be, a->ln2, a->ln2_mean, a->ln2_rstd, a->res2, P(LN2W), P(LN2B),
                             N, C);
  ax_linear_forward(be, a->fch, a->ln2, P(FCW), P(FCB), NULL, N, C, 4 * C);
  be->ops->gelu_forward(be, a->fch_gelu, a->fch, (size_t)N * 4 * C);
  branch_forward(be, drop, AX_DROP_MLP, a->out, a->fch_gelu, P(FCPROJW), P(FCPROJB), a->res2, N,
                 4 * C, C);
}

void ax_block_backward(AxBackend *be, const AxBlockParams *p, AxBlockParams *g,
                       const AxBlockActs *a, const void *in, const AxBlockScratch *s,
                       const AxBlockDims *d, const AxDropout *drop) {
  int N = d->B * d->T, C = d->C;
  /* MLP: s->dres = d(out) also flows unchanged to res2 through the residual */
  const void *dproj = branch_grad(be, drop, AX_DROP_MLP, s->dres, s->ddrop, N, C);
  ax_linear_backward(be, s->dbig, G(FCPROJW), G(FCPROJB), dproj, a->fch_gelu, P(FCPROJW), N,
                     4 * C, C, 0);
  be->ops->gelu_backward(be, s->dbig, a->fch, s->dbig, (size_t)N * 4 * C);
  ax_linear_backward(be, s->dtmp, G(FCW), G(FCB), s->dbig, a->ln2, P(FCW), N, C, 4 * C, 0);
  be->ops->layernorm_backward(be, s->dres, G(LN2W), G(LN2B), s->dtmp, a->res2, P(LN2W),
                              a->ln2_mean, a->ln2_rstd, N, C);
  /* attention: s->dres = d(res2) also flows unchanged to the block input */
  dproj = branch_grad(be, drop, AX_DROP_ATTENTION, s->dres, s->ddrop, N, C);
  ax_linear_backward(be, s->dtmp, G(ATTPROJW), G(ATTPROJB), dproj, a->atty, P(ATTPROJW), N, C,
                     C, 0);
  ax_attention_backward(be, s->dbig, s->datt, s->dtmp, a->atty, a->att, a->qkv, d->B, d->T, C,
                        d->NH, drop);
  ax_linear_backward(be, s->dtmp, G(QKVW), G(QKVB), s->dbig, a->ln1, P(QKVW), N, C, 3 * C, 0);
  be->ops->layernorm_backward(be, s->dres, G(LN1W), G(LN1B), s->dtmp, in, P(LN1W), a->ln1_mean,
                              a->ln1_rstd, N, C);
}
