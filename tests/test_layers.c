/* test_layers.c — every layer's backward against central finite differences of its forward,
 * and the attention forward against a plain scalar reference.
 *
 * Each check builds a scalar L = sum(out * R) for a fixed random R, runs the layer's backward
 * with d(out) = R, and compares each analytic gradient element with
 * (L(x + h) - L(x - h)) / 2h, L summed in double. fp32 forward passes limit the agreement to
 * about 1e-3 relative, so the tolerance is atol 2e-3 + rtol 2e-2: a wrong factor, sign, index
 * or missing term is far outside it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/gpt_block.h"
#include "models/gpt_init.h"
#include "models/gpt_stage.h"
#include "models/layers.h"
#include "src/core/error.h"
#include "src/core/rng.h"
#include "testutil.h"

#define H 5e-3
#define ATOL 2e-3
#define RTOL 2e-2

typedef double (*LossFn)(void *ctx);

static double dot(const float *a, const float *b, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; i++) s += (double)a[i] * b[i];
  return s;
}

/* Compares grad with finite differences of f at up to `samples` indices of x (all if n <=
 * samples), perturbing x in place. */
static void check_grad(const char *what, float *x, const float *grad, size_t n, LossFn f,
                       void *ctx, size_t samples) {
  AxRng r;
  ax_rng_seed(&r, 99);
  double worst = 0;
  size_t worst_i = 0;
  double worst_num = 0;
  for (size_t s = 0; s < (n <= samples ? n : samples); s++) {
    size_t i = n <= samples ? s : (size_t)ax_rng_below(&r, n);
    float keep = x[i];
    x[i] = keep + (float)H;
    double lp = f(ctx);
    x[i] = keep - (float)H;
    double lm = f(ctx);
    x[i] = keep;
    double num = (lp - lm) / (2 * H), err = fabs(num - grad[i]) / (ATOL + RTOL * fabs(num));
    if (err > worst) {
      worst = err;
      worst_i = i;
      worst_num = num;
    }
  }
  ck_assert_msg(worst <= 1.0, "%s: gradient[%zu] = %g but finite differences give %g", what,
                worst_i, grad[worst_i], worst_num);
}

/* ------------------------------------------------------------------ layernorm */

typedef struct {
  AxBackend *be;
  int N, C;
  float *x, *w, *b, *out, *mean, *rstd, *R;
} LnCtx;

static double ln_loss(void *p) {
  LnCtx *c = p;
  c->be->ops->layernorm_forward(c->be, c->out, c->mean, c->rstd, c->x, c->w, c->b, c->N, c->C);
  return dot(c->out, c->R, (size_t)c->N * c->C);
}

START_TEST(layernorm_backward) {
  LnCtx c = {.be = tu_backend(1), .N = 6, .C = 20};
  size_t nc = (size_t)c.N * c.C;
  c.x = tu_random(nc, 2.0f, 1);
  c.w = tu_random(c.C, 1.0f, 2);
  c.b = tu_random(c.C, 1.0f, 3);
  c.R = tu_random(nc, 1.0f, 4);
  c.out = tu_zeros(nc);
  c.mean = tu_zeros(c.N);
  c.rstd = tu_zeros(c.N);
  float *dx = tu_zeros(nc), *dw = tu_zeros(c.C), *db = tu_zeros(c.C);
  ln_loss(&c);
  c.be->ops->layernorm_backward(c.be, dx, dw, db, c.R, c.x, c.w, c.mean, c.rstd, c.N, c.C);
  check_grad("layernorm dx", c.x, dx, nc, ln_loss, &c, 1000);
  check_grad("layernorm dw", c.w, dw, c.C, ln_loss, &c, 1000);
  check_grad("layernorm db", c.b, db, c.C, ln_loss, &c, 1000);
  ax_backend_destroy(c.be);
}
END_TEST

/* ------------------------------------------------------------------ linear */

typedef struct {
  AxBackend *be;
  int N, C, OC;
  float *x, *w, *b, *res, *out, *R;
} LinCtx;

static double lin_loss(void *p) {
  LinCtx *c = p;
  ax_linear_forward(c->be, c->out, c->x, c->w, c->b, c->res, c->N, c->C, c->OC);
  return dot(c->out, c->R, (size_t)c->N * c->OC);
}

START_TEST(linear_backward) {
  LinCtx c = {.be = tu_backend(1), .N = 5, .C = 7, .OC = 9};
  c.x = tu_random((size_t)c.N * c.C, 1.0f, 1);
  c.w = tu_random((size_t)c.OC * c.C, 1.0f, 2);
  c.b = tu_random(c.OC, 1.0f, 3);
  c.res = tu_random((size_t)c.N * c.OC, 1.0f, 4);
  c.R = tu_random((size_t)c.N * c.OC, 1.0f, 5);
  c.out = tu_zeros((size_t)c.N * c.OC);
  float *dx = tu_random((size_t)c.N * c.C, 1.0f, 6), *dx0 = tu_alloc((size_t)c.N * c.C * 4);
  memcpy(dx0, dx, (size_t)c.N * c.C * 4);
  float *dw = tu_zeros((size_t)c.OC * c.C), *db = tu_zeros(c.OC);
  /* accumulate = 1: dx must be added to what was there */
  ax_linear_backward(c.be, dx, dw, db, c.R, c.x, c.w, c.N, c.C, c.OC, 1);
  for (int i = 0; i < c.N * c.C; i++) dx[i] -= dx0[i];
  check_grad("linear dx", c.x, dx, (size_t)c.N * c.C, lin_loss, &c, 1000);
  check_grad("linear dw", c.w, dw, (size_t)c.OC * c.C, lin_loss, &c, 1000);
  check_grad("linear db", c.b, db, c.OC, lin_loss, &c, 1000);
  /* the residual passes through with gradient R */
  check_grad("linear residual", c.res, c.R, (size_t)c.N * c.OC, lin_loss, &c, 1000);
  ax_backend_destroy(c.be);
}
END_TEST

/* ------------------------------------------------------------------ gelu */

typedef struct {
  AxBackend *be;
  size_t n;
  float *x, *out, *R;
} GeluCtx;

static double gelu_loss(void *p) {
  GeluCtx *c = p;
  c->be->ops->gelu_forward(c->be, c->out, c->x, c->n);
  return dot(c->out, c->R, c->n);
}

START_TEST(gelu_backward) {
  GeluCtx c = {.be = tu_backend(1), .n = 37}; /* not a multiple of 8: the scalar tail too */
  c.x = tu_random(c.n, 4.0f, 1);
  c.R = tu_random(c.n, 1.0f, 2);
  c.out = tu_zeros(c.n);
  float *dx = tu_zeros(c.n);
  c.be->ops->gelu_backward(c.be, dx, c.x, c.R, c.n);
  check_grad("gelu", c.x, dx, c.n, gelu_loss, &c, 1000);
  /* forward against the exact tanh formula */
  gelu_loss(&c);
  for (size_t i = 0; i < c.n; i++) {
    double v = c.x[i], ref = 0.5 * v * (1 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
    ck_assert_msg(fabs(c.out[i] - ref) < 1e-6 + 1e-5 * fabs(ref), "gelu(%g) = %g, want %g", v,
                  c.out[i], ref);
  }
  ax_backend_destroy(c.be);
}
END_TEST

/* ------------------------------------------------------------------ attention */

typedef struct {
  AxBackend *be;
  int B, T, C, NH;
  float *qkv, *att, *out, *R;
  const AxDropout *drop; /* NULL: none */
} AttCtx;

static double att_loss(void *p) {
  AttCtx *c = p;
  ax_attention_forward(c->be, c->out, c->att, c->qkv, c->B, c->T, c->C, c->NH, c->drop);
  return dot(c->out, c->R, (size_t)c->B * c->T * c->C);
}

/* Plain scalar causal attention, the textbook way. */
static void attention_reference(float *out, const float *qkv, int B, int T, int C, int NH) {
  int hs = C / NH;
  double *w = tu_alloc((size_t)T * sizeof *w);
  for (int b = 0; b < B; b++)
    for (int h = 0; h < NH; h++)
      for (int t = 0; t < T; t++) {
        const float *q = qkv + ((size_t)b * T + t) * 3 * C + h * hs;
        double mx = -1e300, sum = 0;
        for (int j = 0; j <= t; j++) {
          const float *k = qkv + ((size_t)b * T + j) * 3 * C + C + h * hs;
          double s = 0;
          for (int i = 0; i < hs; i++) s += (double)q[i] * k[i];
          w[j] = s / sqrt((double)hs);
          mx = w[j] > mx ? w[j] : mx;
        }
        for (int j = 0; j <= t; j++) sum += (w[j] = exp(w[j] - mx));
        for (int i = 0; i < hs; i++) {
          double acc = 0;
          for (int j = 0; j <= t; j++)
            acc += w[j] / sum * qkv[((size_t)b * T + j) * 3 * C + 2 * C + h * hs + i];
          out[((size_t)b * T + t) * C + h * hs + i] = (float)acc;
        }
      }
}

START_TEST(attention_forward_reference) {
  AttCtx c = {.be = tu_backend(2), .B = 2, .T = 9, .C = 12, .NH = 3};
  size_t n = (size_t)c.B * c.T * c.C;
  c.qkv = tu_random(3 * n, 1.5f, 1);
  c.att = tu_zeros((size_t)c.B * c.NH * c.T * c.T);
  c.out = tu_zeros(n);
  float *ref = tu_zeros(n);
  ax_attention_forward(c.be, c.out, c.att, c.qkv, c.B, c.T, c.C, c.NH, c.drop);
  attention_reference(ref, c.qkv, c.B, c.T, c.C, c.NH);
  ck_assert_double_le(tu_max_rel(c.out, ref, n, 1e-6, 1e-5), 1.0);
  /* causality: every probability above the diagonal is exactly zero */
  for (int m = 0; m < c.B * c.NH; m++)
    for (int t = 0; t < c.T; t++)
      for (int j = t + 1; j < c.T; j++)
        ck_assert_float_eq(c.att[((size_t)m * c.T + t) * c.T + j], 0.0f);
  ax_backend_destroy(c.be);
}
END_TEST

START_TEST(attention_backward) {
  AttCtx c = {.be = tu_backend(1), .B = 2, .T = 5, .C = 8, .NH = 2};
  size_t n = (size_t)c.B * c.T * c.C;
  c.qkv = tu_random(3 * n, 1.0f, 1);
  c.R = tu_random(n, 1.0f, 2);
  c.att = tu_zeros((size_t)c.B * c.NH * c.T * c.T);
  c.out = tu_zeros(n);
  float *dqkv = tu_zeros(3 * n), *datt = tu_zeros((size_t)c.NH * c.T * c.T);
  att_loss(&c);
  ax_attention_backward(c.be, dqkv, datt, c.R, c.out, c.att, c.qkv, c.B, c.T, c.C, c.NH, c.drop);
  check_grad("attention dqkv", c.qkv, dqkv, 3 * n, att_loss, &c, 1000);
  ax_backend_destroy(c.be);
}
END_TEST

/* --attention-dropout: the gradient of the dropped attention against finite differences (the
 * backward forms the dropped probabilities again and drops their gradient with the same mask),
 * for a piece of 2 of the model's 4 heads (the second pair) starting at its third sequence, as
 * a tensor-parallel X rank holds it; the dropped output differs from the whole one, and the
 * same heads drop the same probabilities whichever rank holds them. */
START_TEST(attention_backward_dropout) {
  AttCtx c = {.be = tu_backend(1), .B = 2, .T = 5, .C = 8, .NH = 2};
  size_t n = (size_t)c.B * c.T * c.C, tt = (size_t)c.NH * c.T * c.T;
  AxDropout d = {.p_att = 0.3f, .seed = 5, .step = 3, .row0 = 2 * 5, .head0 = 2, .heads = 4,
                 .layer = 1, .probs = tu_zeros(tt)};
  c.qkv = tu_random(3 * n, 1.0f, 1);
  c.R = tu_random(n, 1.0f, 2);
  c.att = tu_zeros((size_t)c.B * tt);
  c.out = tu_zeros(n);
  float *whole = tu_zeros(n), *dqkv = tu_zeros(3 * n), *datt = tu_zeros(tt);
  att_loss(&c);
  memcpy(whole, c.out, n * sizeof *whole);
  c.drop = &d;
  att_loss(&c);
  ck_assert_double_gt(tu_max_rel(c.out, whole, n, 1e-6, 1e-5), 1e3); /* something dropped */
  ax_attention_backward(c.be, dqkv, datt, c.R, c.out, c.att, c.qkv, c.B, c.T, c.C, c.NH, c.drop);
  check_grad("attention dqkv, dropped", c.qkv, dqkv, 3 * n, att_loss, &c, 1000);
  /* the probabilities of sequence 1 (the piece's second) dropped again: a probability is
   * dropped or scaled by 1 / 0.7 by its place, the same place giving the same draw */
  float *again = tu_zeros(tt);
  const float *p1 = c.att + tt;
  ax_dropout_probs(c.be, &d, 1, c.NH, c.T, again, p1);
  size_t kept = 0, dropped = 0;
  for (size_t i = 0; i < tt; i++) {
    if (p1[i] == 0.0f) continue; /* above the diagonal */
    if (again[i] == 0.0f) {
      dropped++;
      continue;
    }
    kept++;
    ck_assert_float_eq(again[i], p1[i] * (1.0f / 0.7f));
  }
  ck_assert_uint_gt(dropped, 0);
  ck_assert_uint_gt(kept, dropped);
  AxDropout whole_heads = d; /* the same sequence and heads as a piece of all 4 heads */
  float *four = tu_zeros(2 * tt), *dropped4 = tu_zeros(2 * tt);
  memcpy(four + tt, p1, tt * sizeof *four);
  whole_heads.head0 = 0;
  ax_dropout_probs(c.be, &whole_heads, 1, 4, c.T, dropped4, four);
  for (size_t i = 0; i < tt; i++) ck_assert_float_eq(dropped4[tt + i], again[i]);
  ax_backend_destroy(c.be);
}
END_TEST

/* ------------------------------------------------------------------ cross-entropy */

typedef struct {
  AxBackend *be;
  int N, V, ldv;
  float *logits, *scratch, *losses;
  int32_t *targets;
} CeCtx;

static double ce_loss(void *p) {
  CeCtx *c = p;
  c->be->ops->crossentropy(c->be, c->losses, c->logits, c->targets, c->N, c->V, c->ldv, 0.0f);
  double s = 0;
  for (int i = 0; i < c->N; i++) s += c->losses[i];
  return s / c->N;
}

START_TEST(crossentropy_backward) {
  CeCtx c = {.be = tu_backend(1), .N = 4, .V = 19, .ldv = 24};
  c.logits = tu_random((size_t)c.N * c.ldv, 3.0f, 1);
  c.losses = tu_zeros(c.N);
  c.targets = tu_alloc((size_t)c.N * sizeof *c.targets);
  for (int i = 0; i < c.N; i++) c.targets[i] = (i * 7) % c.V;
  double l0 = ce_loss(&c);
  /* against log-softmax computed in double */
  double ref = 0;
  for (int i = 0; i < c.N; i++) {
    const float *row = c.logits + (size_t)i * c.ldv;
    double mx = row[0], sum = 0;
    for (int j = 1; j < c.V; j++) mx = row[j] > mx ? row[j] : mx;
    for (int j = 0; j < c.V; j++) sum += exp(row[j] - mx);
    ref += (log(sum) + mx - row[c.targets[i]]) / c.N;
  }
  ck_assert_double_le(fabs(l0 - ref), 1e-5 * fabs(ref));
  /* dlogits in place, scaled by dloss = 1/N; padding columns (not part of L) get 0 */
  float *d = tu_alloc((size_t)c.N * c.ldv * 4);
  memcpy(d, c.logits, (size_t)c.N * c.ldv * 4);
  c.be->ops->crossentropy(c.be, c.losses, d, c.targets, c.N, c.V, c.ldv, 1.0f / c.N);
  for (int i = 0; i < c.N; i++)
    for (int j = c.V; j < c.ldv; j++) ck_assert_float_eq(d[(size_t)i * c.ldv + j], 0.0f);
  check_grad("crossentropy dlogits", c.logits, d, (size_t)c.N * c.ldv, ce_loss, &c, 1000);
  ax_backend_destroy(c.be);
}
END_TEST

/* ------------------------------------------------------------------ embedding */

typedef struct {
  AxBackend *be;
  int B, T, C;
  int32_t *tok;
  float *wte, *wpe, *out, *R;
} EmbCtx;

static double emb_loss(void *p) {
  EmbCtx *c = p;
  c->be->ops->encoder_forward(c->be, c->out, c->tok, c->wte, c->wpe, c->B, c->T, c->C);
  return dot(c->out, c->R, (size_t)c->B * c->T * c->C);
}

START_TEST(embedding_backward) {
  EmbCtx c = {.be = tu_backend(2), .B = 2, .T = 4, .C = 6};
  int V = 5;
  c.tok = tu_alloc(8 * sizeof *c.tok);
  int32_t toks[8] = {1, 3, 3, 0, 4, 1, 1, 2}; /* repeats: gradients must add up */
  memcpy(c.tok, toks, sizeof toks);
  c.wte = tu_random((size_t)V * c.C, 1.0f, 1);
  c.wpe = tu_random((size_t)c.T * c.C, 1.0f, 2);
  c.R = tu_random((size_t)c.B * c.T * c.C, 1.0f, 3);
  c.out = tu_zeros((size_t)c.B * c.T * c.C);
  float *dwte = tu_zeros((size_t)V * c.C), *dwpe = tu_zeros((size_t)c.T * c.C);
  c.be->ops->encoder_backward(c.be, dwte, dwpe, c.R, c.tok, c.B, c.T, c.C);
  check_grad("embedding dwte", c.wte, dwte, (size_t)V * c.C, emb_loss, &c, 1000);
  check_grad("embedding dwpe", c.wpe, dwpe, (size_t)c.T * c.C, emb_loss, &c, 1000);
  ax_backend_destroy(c.be);
}
END_TEST

/* ------------------------------------------------------------------ whole model */

typedef struct {
  AxGptStage *st;
  int32_t *in, *tgt;
} ModelCtx;

/* A training forward of the micro-batch at sequence 6 of step 3: with dropout, the same mask
 * every time (the finite differences see one function). */
static int model_forward(ModelCtx *c) {
  ax_stage_set_dropout_origin(c->st, 3, 6);
  return ax_stage_forward(c->st, 0, c->in, NULL, AX_MEM_HOST);
}

static double model_loss(void *p) {
  ModelCtx *c = p;
  double loss;
  ck_assert_int_eq(model_forward(c), AX_OK);
  ck_assert_int_eq(ax_stage_loss_backward(c->st, 0, c->tgt, 0.0f, &loss), AX_OK);
  return loss;
}

/* Gradient of the mean loss of a 2-block model with respect to samples of every tensor, with
 * GPT-2's dropout at probability `dropout` and the attention probabilities' at `att_dropout`
 * (their masks drawn again by a recomputed segment). */
static double check_model(int ac, int threads, float dropout, float att_dropout) {
  AxBackend *be = tu_backend(threads);
  AxGptConfig cfg = {.max_seq = 8, .vocab = 11, .padded_vocab = 16, .layers = 2, .heads = 2,
                     .channels = 8};
  AxStageSpec spec = {.l0 = 0, .l1 = 2, .first = 1, .last = 1, .B = 2, .T = 6, .n_slots = 1,
                      .ac = ac, .dropout = dropout, .attention_dropout = att_dropout,
                      .dropout_seed = 5};
  ModelCtx c;
  ck_assert_int_eq(ax_stage_create(&c.st, be, &cfg, &spec), AX_OK);
  const AxStageLayout *lay = ax_stage_layout_of(c.st);
  float *params = ax_stage_params(c.st), *grads = ax_stage_grads(c.st);
  ax_gpt_init_stage(&cfg, lay, 7, params);
  /* larger weights than GPT-2's init so every path carries signal */
  AxRng r;
  ax_rng_seed(&r, 5);
  for (size_t i = 0; i < lay->total; i++) params[i] += 0.3f * (ax_rng_float(&r) - 0.5f);
  int n = spec.B * spec.T;
  c.in = tu_alloc((size_t)n * sizeof *c.in);
  c.tgt = tu_alloc((size_t)n * sizeof *c.tgt);
  for (int i = 0; i < n; i++) {
    c.in[i] = (int32_t)ax_rng_below(&r, (uint64_t)cfg.vocab);
    c.tgt[i] = (int32_t)ax_rng_below(&r, (uint64_t)cfg.vocab);
  }
  double loss;
  ck_assert_int_eq(ax_stage_zero_grads(c.st), AX_OK);
  ck_assert_int_eq(model_forward(&c), AX_OK);
  ck_assert_int_eq(ax_stage_loss_backward(c.st, 0, c.tgt, 1.0f / n, &loss), AX_OK);
  float *g = tu_alloc(lay->total * sizeof *g);
  memcpy(g, grads, lay->total * sizeof *g);
  for (int id = 0; id < AX_N_PARAMS; id++) {
    char what[64];
    snprintf(what, sizeof what, "model (ac %d, dropout %g, attention %g) d%s", ac, dropout,
             att_dropout, ax_param_name(id));
    check_grad(what, params + lay->offset[id], g + lay->offset[id], lay->count[id], model_loss,
               &c, 40);
  }
  /* a forward without an origin (validation, sampling) drops nothing */
  ck_assert_int_eq(ax_stage_forward(c.st, 0, c.in, NULL, AX_MEM_HOST), AX_OK);
  double plain;
  ck_assert_int_eq(ax_stage_loss_backward(c.st, 0, c.tgt, 0.0f, &plain), AX_OK);
  ck_assert_double_eq_tol(model_loss(&c), loss, 1e-6);
  ax_stage_destroy(c.st);
  ax_backend_destroy(be);
  return plain - loss;
}

/* (the forward without an origin against the training forward: within rounding without dropout) */
START_TEST(model_backward) { ck_assert_double_le(fabs(check_model(0, 1, 0.0f, 0.0f)), 1e-6); }
END_TEST

START_TEST(model_backward_checkpointed) {
  ck_assert_double_le(fabs(check_model(1, 2, 0.0f, 0.0f)), 1e-6);
}
END_TEST

/* Dropout changes the training forward's loss (and only it); the gradient is the dropped
 * forward's, with every block's activations kept and with each block recomputed; the same for
 * the attention probabilities' dropout alone and with the other. */
START_TEST(model_backward_dropout) {
  ck_assert_double_gt(fabs(check_model(0, 1, 0.2f, 0.0f)), 1e-3);
  ck_assert_double_gt(fabs(check_model(1, 2, 0.2f, 0.0f)), 1e-3);
  ck_assert_double_gt(fabs(check_model(0, 1, 0.0f, 0.3f)), 1e-3);
  ck_assert_double_gt(fabs(check_model(1, 2, 0.2f, 0.2f)), 1e-3);
}
END_TEST

/* The two-block model and whole-model stage that the dropout refusals below are asked to make. */
static const AxGptConfig REFUSAL_MODEL = {.max_seq = 8, .vocab = 11, .padded_vocab = 16,
                                          .layers = 2, .heads = 2, .channels = 8};
static AxStageSpec refusal_spec(float dropout, float attention_dropout) {
  return (AxStageSpec){.l0 = 0, .l1 = 2, .first = 1, .last = 1, .B = 2, .T = 6, .n_slots = 1,
                       .dropout = dropout, .attention_dropout = attention_dropout};
}

/* A backend without the dropout kernel: a stage with dropout (or attention dropout) refuses to
 * start, in one error that names the backend; without either the same backend makes the
 * stage. */
START_TEST(dropout_needs_the_backend_kernel) {
  AxBackend *cpu = tu_backend(1);
  AxBackendOps ops = *cpu->ops;
  ops.dropout = NULL;
  ops.name = "kernel-less";
  AxBackend bare = *cpu;
  bare.ops = &ops;
  AxStageSpec spec = refusal_spec(0.1f, 0);
  AxGptStage *st = NULL;
  tu_expect_error(ax_stage_create(&st, &bare, &REFUSAL_MODEL, &spec),
                  "--dropout needs a backend with a dropout kernel; the kernel-less backend");
  ck_assert_ptr_null(st);
  spec.dropout = 0;
  spec.attention_dropout = 0.1f;
  tu_expect_error(ax_stage_create(&st, &bare, &REFUSAL_MODEL, &spec),
                  "--attention-dropout needs a backend with a dropout kernel");
  ck_assert_ptr_null(st);
  spec.attention_dropout = 0;
  ck_assert_int_eq(ax_stage_create(&st, &bare, &REFUSAL_MODEL, &spec), AX_OK);
  ax_stage_destroy(st);
  ax_backend_destroy(cpu);
}
END_TEST

/* Fused attention keeps no probabilities: a stage with attention dropout on a backend whose
 * attention is fused refuses in one error; the same backend makes the stage without it, and
 * the CPU's explicit attention makes it with it. (The CPU backend posing as one with fused
 * kernels: the check happens before any attention runs.) */
static int always_fused(AxBackend *be, int C, int NH) {
  (void)be, (void)C, (void)NH;
  return 1;
}

START_TEST(attention_dropout_needs_explicit_attention) {
  AxBackend *cpu = tu_backend(1);
  AxBackendOps ops = *cpu->ops;
  ops.attention_fused_ok = always_fused;
  ops.name = "fused";
  AxBackend fused = *cpu;
  fused.ops = &ops;
  fused.fused_attention = 1;
  AxStageSpec spec = refusal_spec(0, 0.1f);
  AxGptStage *st = NULL;
  tu_expect_error(ax_stage_create(&st, &fused, &REFUSAL_MODEL, &spec),
                  "--attention-dropout needs the explicit attention (--attention explicit)");
  ck_assert_ptr_null(st);
  ck_assert_int_eq(ax_stage_create(&st, cpu, &REFUSAL_MODEL, &spec), AX_OK);
  ax_stage_destroy(st);
  spec.attention_dropout = 0;
  ck_assert_int_eq(ax_stage_create(&st, &fused, &REFUSAL_MODEL, &spec), AX_OK);
  ax_stage_destroy(st);
  ax_backend_destroy(cpu);
}
END_TEST

int main(void) {
  Suite *s = suite_create("layers");
  TCase *tc = tu_tcase(s, "finite-differences", 120);
  tcase_add_test(tc, layernorm_backward);
  tcase_add_test(tc, linear_backward);
  tcase_add_test(tc, gelu_backward);
  tcase_add_test(tc, attention_forward_reference);
  tcase_add_test(tc, attention_backward);
  tcase_add_test(tc, attention_backward_dropout);
  tcase_add_test(tc, crossentropy_backward);
  tcase_add_test(tc, embedding_backward);
  tcase_add_test(tc, model_backward);
  tcase_add_test(tc, model_backward_checkpointed);
  tcase_add_test(tc, model_backward_dropout);
  tcase_add_test(tc, dropout_needs_the_backend_kernel);
  tcase_add_test(tc, attention_dropout_needs_explicit_attention);
  return tu_run(s);
}
