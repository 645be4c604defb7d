/* gpt_block.c — a GPT-2 transformer block:
 *   res2 = in + attproj(attention(qkv(ln1(in))));  out = res2 + fcproj(gelu(fc(ln2(res2)))) */
#include "gpt_block.h"

#include "layers.h"

#define P(x) (p->t[AX_P_##x])
#define G(x) (g->t[AX_P_##x])

void ax_block_forward(AxBackend *be, const AxBlockParams *p, const AxBlockActs *a,
                      const void *in, const AxBlockDims *d) {
  int N = d->B * d->T, C = d->C;
  be->ops->layernorm_forward(be, a->ln1, a->ln1_mean, a->ln1_rstd, in, P(LN1W), P(LN1B), N, C);
  ax_linear_forward(be, a->qkv, a->ln1, P(QKVW), P(QKVB), NULL, N, C, 3 * C);
  ax_attention_forward(be, a->atty, a->att, a->qkv, d->B, d->T, C, d->NH);
  ax_linear_forward(be, a->res2, a->atty, P(ATTPROJW), P(ATTPROJB), in, N, C, C);
  be->ops->layernorm_forward(be, a->ln2, a->ln2_mean, a->ln2_rstd, a->res2, P(LN2W), P(LN2B),
                             N, C);
  ax_linear_forward(be, a->fch, a->ln2, P(FCW), P(FCB), NULL, N, C, 4 * C);
  be->ops->gelu_forward(be, a->fch_gelu, a->fch, (size_t)N * 4 * C);
  ax_linear_forward(be, a->out, a->fch_gelu, P(FCPROJW), P(FCPROJB), a->res2, N, 4 * C, C);
}

void ax_block_backward(AxBackend *be, const AxBlockParams *p, AxBlockParams *g,
                       const AxBlockActs *a, const void *in, const AxBlockScratch *s,
                       const AxBlockDims *d) {
  int N = d->B * d->T, C = d->C;
  /* MLP: s->dres = d(out) also flows unchanged to res2 through the residual */
  ax_linear_backward(be, s->dbig, G(FCPROJW), G(FCPROJB), s->dres, a->fch_gelu, P(FCPROJW), N,
                     4 * C, C, 0);
  be->ops->gelu_backward(be, s->dbig, a->fch, s->dbig, (size_t)N * 4 * C);
  ax_linear_backward(be, s->dtmp, G(FCW), G(FCB), s->dbig, a->ln2, P(FCW), N, C, 4 * C, 0);
  be->ops->layernorm_backward(be, s->dres, G(LN2W), G(LN2B), s->dtmp, a->res2, P(LN2W),
                              a->ln2_mean, a->ln2_rstd, N, C);
  /* attention: s->dres = d(res2) also flows unchanged to the block input */
  ax_linear_backward(be, s->dtmp, G(ATTPROJW), G(ATTPROJB), s->dres, a->atty, P(ATTPROJW), N,
                     C, C, 0);
  ax_attention_backward(be, s->dbig, s->datt, s->dtmp, a->atty, a->att, a->qkv, d->B, d->T, C, d->NH);
  ax_linear_backward(be, s->dtmp, G(QKVW), G(QKVB), s->dbig, a->ln1, P(QKVW), N, C, 3 * C, 0);
  be->ops->layernorm_backward(be, s->dres, G(LN1W), G(LN1B), s->dtmp, in, P(LN1W), a->ln1_mean,
                              a->ln1_rstd, N, C);
}
