/* layers.c — linear and attention layers composed from backend GEMMs and kernels. */
#include "layers.h"

#include <math.h>

void ax_linear_forward(AxBackend *be, void *out, const void *inp, const void *w, const void *b,
                       const void *residual, int N, int C, int OC) {
  be->ops->bias_residual(be, out, b, residual, N, OC);
  AxGemm g = {.trans_b = 1, .m = N, .n = OC, .k = C, .alpha = 1, .beta = 1,
              .lda = C, .ldb = C, .ldc = OC};
  ax_gemm(be, &g, inp, w, out);
}

void ax_linear_backward(AxBackend *be, void *dinp, void *dw, void *db, const void *dout,
                        const void *inp, const void *w, int N, int C, int OC, int accumulate) {
  AxGemm gi = {.m = N, .n = C, .k = OC, .alpha = 1, .beta = accumulate ? 1.0f : 0.0f,
               .lda = OC, .ldb = C, .ldc = C};
  ax_gemm(be, &gi, dout, w, dinp);
  AxGemm gw = {.trans_a = 1, .m = OC, .n = C, .k = N, .alpha = 1, .beta = 1,
               .lda = OC, .ldb = C, .ldc = C};
  ax_gemm(be, &gw, dout, inp, dw);
  be->ops->bias_backward(be, db, dout, N, OC);
}

/* Per sequence b, heads form a batch: head h of q starts h*hs into each qkv row, so the
 * strided-batched GEMMs read q, k, v in place (row stride 3C) and write out in place
 * (row stride C): no permute or un-permute copies. */
size_t ax_attention_bytes(int fused, size_t esz, int B, int T, int NH) {
  size_t n = (size_t)B * NH * T;
  return fused ? n * sizeof(float) : n * T * esz;
}

size_t ax_attention_scratch_bytes(int fused, size_t esz, int B, int T, int NH) {
  return fused ? (size_t)B * NH * T * sizeof(float) : (size_t)NH * T * T * esz;
}

void ax_attention_forward(AxBackend *be, void *out, void *att, const void *qkv, int B, int T,
                          int C, int NH, const AxDropout *drop) {
  if (ax_backend_fused_attention(be, C, NH)) { /* no dropout: the stage refuses it there */
    be->ops->attention_fused_forward(be, out, att, qkv, B, T, C, NH);
    return;
  }
  int hs = C / NH, dropped = ax_attention_dropout_on(drop);
  float scale = 1.0f / sqrtf((float)hs);
  for (int b = 0; b < B; b++) {
    const void *q = ax_at(be, (void *)qkv, (size_t)b * T * 3 * C);
    const void *k = ax_at(be, (void *)q, (size_t)C), *v = ax_at(be, (void *)q, 2 * (size_t)C);
    void *a = ax_at(be, att, (size_t)b * NH * T * T);
    AxGemm scores = {.trans_b = 1, .m = T, .n = T, .k = hs, .alpha = scale, .beta = 0,
                     .lda = 3 * C, .ldb = 3 * C, .ldc = T, .batch = NH,
                     .stride_a = hs, .stride_b = hs, .stride_c = (long long)T * T};
    ax_gemm(be, &scores, q, k, a);
    be->ops->softmax_causal_forward(be, a, NH, T);
    if (dropped) ax_dropout_probs(be, drop, b, NH, T, drop->probs, a);
    AxGemm mix = {.m = T, .n = hs, .k = T, .alpha = 1, .beta = 0,
                  .lda = T, .ldb = 3 * C, .ldc = C, .batch = NH,
                  .stride_a = (long long)T * T, .stride_b = hs, .stride_c = hs};
    ax_gemm(be, &mix, dropped ? drop->probs : a, v, ax_at(be, out, (size_t)b * T * C));
  }
}

void ax_attention_backward(AxBackend *be, void *dqkv, void *datt, const void *dout,
                           const void *out, const void *att, const void *qkv, int B, int T,
                           int C, int NH, const AxDropout *drop) {
  if (ax_backend_fused_attention(be, C, NH)) { /* no dropout: the stage refuses it there */
    be->ops->attention_fused_backward(be, dqkv, datt, dout, out, att, qkv, B, T, C, NH);
    return;
  }
  int hs = C / NH, dropped = ax_attention_dropout_on(drop);
  float scale = 1.0f / sqrtf((float)hs);
  long long TT = (long long)T * T;
  for (int b = 0; b < B; b++) {
    size_t row0 = (size_t)b * T * 3 * C;
    const void *q = ax_at(be, (void *)qkv, row0), *k = ax_at(be, (void *)q, (size_t)C);
    const void *v = ax_at(be, (void *)q, 2 * (size_t)C);
    void *dq = ax_at(be, dqkv, row0), *dk = ax_at(be, dq, (size_t)C);
    void *dv = ax_at(be, dq, 2 * (size_t)C);
    const void *a = ax_at(be, (void *)att, (size_t)b * NH * TT);
    const void *dy = ax_at(be, (void *)dout, (size_t)b * T * C);
    void *da = datt; /* one sequence at a time: scratch of NH x T x T is enough */
    /* datt = dy @ v^T ; dv = att^T @ dy (with dropout, of the dropped att, formed again; the
     * gradient reaching the whole att is datt dropped with the same mask) */
    AxGemm g1 = {.trans_b = 1, .m = T, .n = T, .k = hs, .alpha = 1, .lda = C, .ldb = 3 * C,
                 .ldc = T, .batch = NH, .stride_a = hs, .stride_b = hs, .stride_c = TT};
    ax_gemm(be, &g1, dy, v, da);
    if (dropped) ax_dropout_probs(be, drop, b, NH, T, drop->probs, a);
    AxGemm g2 = {.trans_a = 1, .m = T, .n = hs, .k = T, .alpha = 1, .lda = T, .ldb = C,
                 .ldc = 3 * C, .batch = NH, .stride_a = TT, .stride_b = hs, .stride_c = hs};
    ax_gemm(be, &g2, dropped ? drop->probs : a, dy, dv);
    if (dropped) ax_dropout_probs(be, drop, b, NH, T, da, da);
    be->ops->softmax_causal_backward(be, da, a, NH, T);
    /* scores = scale * q k^T: dq = scale * dscores @ k ; dk = scale * dscores^T @ q */
    AxGemm g3 = {.m = T, .n = hs, .k = T, .alpha = scale, .lda = T, .ldb = 3 * C,
                 .ldc = 3 * C, .batch = NH, .stride_a = TT, .stride_b = hs, .stride_c = hs};
    ax_gemm(be, &g3, da, k, dq);
    AxGemm g4 = {.trans_a = 1, .m = T, .n = hs, .k = T, .alpha = scale, .lda = T,
                 .ldb = 3 * C, .ldc = 3 * C, .batch = NH, .stride_a = TT, .stride_b = hs,
                 .stride_c = hs};
    ax_gemm(be, &g4, da, q, dk);
  }
}
