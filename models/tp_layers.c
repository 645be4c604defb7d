/* tp_layers.c — tensor-parallel layers over the backend and the communication interface; see
 * tp_layers.h and docs/tensor-parallel.md. */
#include "tp_layers.h"

#include "src/core/error.h"

/* ------------------------------------------------------------------ shapes */

AxTpGroup ax_tp_in_group(const AxTpLinear *l) { return l->transposed ? AX_TP_X : AX_TP_Y; }
AxTpGroup ax_tp_out_group(const AxTpLinear *l) { return l->transposed ? AX_TP_Y : AX_TP_X; }

int ax_tp_linear_in(const AxTpComm *c, const AxTpLinear *l) {
  return l->in / c->size[ax_tp_in_group(l)];
}
int ax_tp_linear_out(const AxTpComm *c, const AxTpLinear *l) {
  return l->out / c->size[ax_tp_out_group(l)];
}
size_t ax_tp_linear_block(const AxTpComm *c, const AxTpLinear *l) {
  return (size_t)ax_tp_linear_out(c, l) * ax_tp_linear_in(c, l);
}
size_t ax_tp_linear_shard(const AxTpComm *c, const AxTpLinear *l) {
  return ax_tp_linear_block(c, l) / c->size[AX_TP_Z];
}

/* ------------------------------------------------------------------ compute */

enum { TP_GEMM_CHUNKS = 4 };

/* 1 when some group has more than two ranks: its ring needs several calls into the
 * collectives to finish, which a GEMM in slices makes during the compute. With two ranks or
 * fewer the GEMMs stay whole (slices change the BLAS's rounding, ~2e-5 relative seen). */
static int slices_pay(const AxTpComm *c) {
  return c->ops && (c->size[AX_TP_X] > 2 || c->size[AX_TP_Y] > 2 || c->size[AX_TP_Z] > 2);
}

/* A layer's GEMM, noted to the communication (what is in flight as it begins), and where
 * slices_pay run in up to TP_GEMM_CHUNKS slices of its output rows with a progress call
 * between them: a started collective moves on during the compute, not only at its wait. The
 * slicing does not depend on what is in flight, so an overlap switched off computes the same. */
static int tp_gemm(AxBackend *be, AxTpComm *c, const AxGemm *g, const void *a, const void *b,
                   void *out) {
  ax_tp_note_gemm(c);
  if (!slices_pay(c) || g->m < 2) {
    ax_gemm(be, g, a, b, out);
    return AX_OK;
  }
  int per = (g->m + TP_GEMM_CHUNKS - 1) / TP_GEMM_CHUNKS;
  for (int r0 = 0; r0 < g->m; r0 += per) {
    AxGemm slice = *g;
    slice.m = g->m - r0 < per ? g->m - r0 : per;
    const void *a0 = ax_at(be, (void *)a, g->trans_a ? (size_t)r0 : (size_t)r0 * g->lda);
    if (r0 > 0) AX_TRY(ax_tp_progress(c));
    ax_gemm(be, &slice, a0, b, ax_at(be, out, (size_t)r0 * g->ldc));
  }
  return AX_OK;
}

/* ------------------------------------------------------------------ fully connected */

int ax_tp_gather_weight(AxTpComm *c, const void *shard, void *block, size_t block_elems,
                        AxTpReq **req) {
  return ax_tp_all_gather(c, AX_TP_Z, shard, block, block_elems / c->size[AX_TP_Z], req);
}

/* out = b + residual on the group's first rank (the all-reduce adds it once), 0 elsewhere. */
static int init_output(AxBackend *be, int lead, void *out, const void *b, const void *residual,
                       int N, int C) {
  size_t bytes = (size_t)N * C * be->esz;
  if (lead && b) {
    be->ops->bias_residual(be, out, b, residual, N, C);
    return AX_OK;
  }
  if (lead && residual) return be->ops->copy(be, out, residual, bytes, AX_COPY_D2D, AX_STREAM_COMPUTE);
  return be->ops->zero(be, out, bytes, AX_STREAM_COMPUTE);
}

int ax_tp_linear_forward(AxBackend *be, AxTpComm *c, const AxTpLinear *l, void *out,
                         const void *x, const void *w_block, const void *b,
                         const void *residual) {
  AxTpGroup gi = ax_tp_in_group(l);
  int ic = ax_tp_linear_in(c, l), oc = ax_tp_linear_out(c, l);
  AX_TRY(init_output(be, c->coord[gi] == 0, out, b, residual, l->N, oc));
  AxGemm g = {.trans_b = 1, .m = l->N, .n = oc, .k = ic, .alpha = 1, .beta = 1, .lda = ic,
              .ldb = ic, .ldc = oc};
  AX_TRY(tp_gemm(be, c, &g, x, w_block, out));
  return ax_tp_all_reduce(c, gi, out, (size_t)l->N * oc, NULL);
}

int ax_tp_reduce_scatter_add(AxBackend *be, AxTpComm *c, const void *block, void *shard,
                             void *tmp, size_t n) {
  if (c->size[AX_TP_Z] == 1) {
    be->ops->add(be, shard, block, n);
    return AX_OK;
  }
  AX_TRY(ax_tp_reduce_scatter(c, AX_TP_Z, block, tmp, n, NULL));
  be->ops->add(be, shard, tmp, n);
  return AX_OK;
}

/* dw_shard += block summed over Z: now, or started and queued (ORS). */
static int reduce_scatter_dw(AxBackend *be, AxTpComm *c, const void *block, void *dw_shard,
                             void *part, size_t n, AxTpRsQueue *q) {
  if (!q) return ax_tp_reduce_scatter_add(be, c, block, dw_shard, part, n);
  if (q->n == q->cap)
    return AX_FAIL("internal: more than %d reduce-scatters deferred in one backward", q->cap);
  AxTpPendingRs *p = &q->items[q->n];
  AX_TRY(ax_tp_reduce_scatter(c, AX_TP_Z, block, part, n, &p->req));
  p->part = part;
  p->dw_shard = dw_shard;
  p->n = n;
  q->n++;
  return AX_OK;
}

int ax_tp_rs_queue_finish(AxBackend *be, AxTpComm *c, AxTpRsQueue *q) {
  int rc = AX_OK;
  for (int i = 0; i < q->n; i++) {
    AxTpPendingRs *p = &q->items[i];
    int wait_rc = ax_tp_wait(c, p->req);
    if (wait_rc == AX_OK)
      be->ops->add(be, p->dw_shard, p->part, p->n);
    else
      rc = wait_rc;
  }
  q->n = 0;
  return rc;
}

int ax_tp_linear_backward(AxBackend *be, AxTpComm *c, const AxTpLinear *l, void *dx,
                          void *dw_shard, void *db, const void *dout, const void *x,
                          const void *w_block, const AxTpBackwardOpts *o) {
  int ic = ax_tp_linear_in(c, l), oc = ax_tp_linear_out(c, l), N = l->N;
  AxGemm gi = {.m = N, .n = ic, .k = oc, .alpha = 1, .beta = 0, .lda = oc, .ldb = ic, .ldc = ic};
  AX_TRY(tp_gemm(be, c, &gi, dout, w_block, dx));
  AxTpReq *req = NULL;
  AX_TRY(ax_tp_all_reduce(c, ax_tp_out_group(l), dx, (size_t)N * ic, o->oar ? &req : NULL));
  int sharded = c->size[AX_TP_Z] > 1;
  AxGemm gw = {.trans_a = 1, .m = oc, .n = ic, .k = N, .alpha = 1, .beta = sharded ? 0.0f : 1.0f,
               .lda = oc, .ldb = ic, .ldc = ic};
  AX_TRY(tp_gemm(be, c, &gw, dout, x, sharded ? o->scratch : dw_shard));
  if (db) be->ops->bias_backward(be, db, dout, N, oc);
  int rc = AX_OK;
  if (sharded)
    rc = reduce_scatter_dw(be, c, o->scratch, dw_shard,
                           ax_at(be, o->scratch, ax_tp_linear_block(c, l)),
                           ax_tp_linear_shard(c, l), o->ors);
  int wait_rc = ax_tp_wait(c, req);
  return rc != AX_OK ? rc : wait_rc;
}

/* ------------------------------------------------------------------ LayerNorm */

int ax_tp_layernorm_forward(AxBackend *be, AxTpComm *c, void *out, float *mean, float *rstd,
                            const void *x, const void *w, const void *b, int N, int C_total) {
  int C = C_total / c->size[AX_TP_Y];
  if (c->size[AX_TP_Y] == 1) {
    be->ops->layernorm_forward(be, out, mean, rstd, x, w, b, N, C);
    return AX_OK;
  }
  be->ops->row_sums(be, mean, x, NULL, C_total, N, C);
  AX_TRY(ax_tp_all_reduce_f32(c, AX_TP_Y, mean, (size_t)N, NULL));
  be->ops->row_sums(be, rstd, x, mean, C_total, N, C);
  AX_TRY(ax_tp_all_reduce_f32(c, AX_TP_Y, rstd, (size_t)N, NULL));
  be->ops->layernorm_apply(be, out, mean, rstd, x, w, b, C_total, N, C);
  return AX_OK;
}

int ax_tp_layernorm_backward(AxBackend *be, AxTpComm *c, void *dx, void *dw, void *db,
                             const void *dout, const void *x, const void *w,
                             const float *mean, const float *rstd, float *sums, int N,
                             int C_total) {
  int C = C_total / c->size[AX_TP_Y];
  if (c->size[AX_TP_Y] == 1) {
    be->ops->layernorm_backward(be, dx, dw, db, dout, x, w, mean, rstd, N, C);
    return AX_OK;
  }
  be->ops->layernorm_backward_sums(be, sums, dout, x, w, mean, rstd, N, C);
  AX_TRY(ax_tp_all_reduce_f32(c, AX_TP_Y, sums, 2 * (size_t)N, NULL));
  be->ops->layernorm_backward_apply(be, dx, dw, db, dout, x, w, mean, rstd, sums, C_total, N, C);
  return AX_OK;
}

/* ------------------------------------------------------------------ vocabulary */

int ax_tp_vocab_rows(const AxTpComm *c, const AxTpVocab *v) { return v->Vp / c->size[AX_TP_X]; }
int ax_tp_vocab_first(const AxTpComm *c, const AxTpVocab *v) {
  return c->coord[AX_TP_X] * ax_tp_vocab_rows(c, v);
}
int ax_tp_vocab_real(const AxTpComm *c, const AxTpVocab *v) {
  int real = v->V - ax_tp_vocab_first(c, v), rows = ax_tp_vocab_rows(c, v);
  return real < 0 ? 0 : real > rows ? rows : real;
}

static int vocab_cols(const AxTpComm *c, const AxTpVocab *v) { return v->C / c->size[AX_TP_Y]; }

int ax_tp_embed_forward(AxBackend *be, AxTpComm *c, const AxTpVocab *v, void *out,
                        const int32_t *tokens, const void *wte_block, const void *wpe) {
  int v0 = ax_tp_vocab_first(c, v), Cl = vocab_cols(c, v);
  be->ops->embed_range_forward(be, out, tokens, wte_block, c->coord[AX_TP_X] == 0 ? wpe : NULL,
                               v0, v0 + ax_tp_vocab_rows(c, v), v->N, v->T, Cl);
  return ax_tp_all_reduce(c, AX_TP_X, out, (size_t)v->N * Cl, NULL);
}

void ax_tp_embed_backward(AxBackend *be, const AxTpComm *c, const AxTpVocab *v,
                          void *dwte_block, void *dwpe, const void *dout,
                          const int32_t *tokens) {
  int v0 = ax_tp_vocab_first(c, v);
  be->ops->embed_range_backward(be, dwte_block, dwpe, dout, tokens, v0,
                                v0 + ax_tp_vocab_rows(c, v), v->N, v->T, vocab_cols(c, v));
}

int ax_tp_head_forward(AxBackend *be, AxTpComm *c, const AxTpVocab *v, void *logits,
                       const void *x, const void *wte_block) {
  int rows = ax_tp_vocab_rows(c, v), Cl = vocab_cols(c, v);
  AxGemm g = {.trans_b = 1, .m = v->N, .n = rows, .k = Cl, .alpha = 1, .beta = 0, .lda = Cl,
              .ldb = Cl, .ldc = rows};
  AX_TRY(tp_gemm(be, c, &g, x, wte_block, logits));
  return ax_tp_all_reduce(c, AX_TP_Y, logits, (size_t)v->N * rows, NULL);
}

int ax_tp_cross_entropy(AxBackend *be, AxTpComm *c, const AxTpVocab *v, float *losses,
                        void *logits, const int32_t *targets, float dloss, float *scratch) {
  int rows = ax_tp_vocab_rows(c, v), nv = ax_tp_vocab_real(c, v), v0 = ax_tp_vocab_first(c, v);
  int N = v->N, Gx = c->size[AX_TP_X];
  if (Gx == 1) {
    be->ops->crossentropy(be, losses, logits, targets, N, v->V, rows, dloss);
    return AX_OK;
  }
  float *mine = scratch, *all = mine + N, *mx = all + (size_t)Gx * N, *sums = mx + N;
  be->ops->xent_row_max(be, mine, logits, N, nv, rows);
  AX_TRY(ax_tp_all_gather_f32(c, AX_TP_X, mine, all, (size_t)N, NULL));
  be->ops->xent_sums(be, sums, mx, all, Gx, logits, targets, v0, N, nv, rows);
  AX_TRY(ax_tp_all_reduce_f32(c, AX_TP_X, sums, 2 * (size_t)N, NULL));
  be->ops->xent_finish(be, losses, logits, mx, sums, targets, v0, N, nv, rows, dloss);
  return AX_OK;
}

int ax_tp_head_backward(AxBackend *be, AxTpComm *c, const AxTpVocab *v, void *dx,
                        void *dwte_block, const void *dlogits, const void *x,
                        const void *wte_block) {
  int rows = ax_tp_vocab_rows(c, v), nv = ax_tp_vocab_real(c, v), Cl = vocab_cols(c, v);
  int N = v->N;
  if (nv > 0) {
    AxGemm gi = {.m = N, .n = Cl, .k = nv, .alpha = 1, .beta = 0, .lda = rows, .ldb = Cl,
                 .ldc = Cl};
    AX_TRY(tp_gemm(be, c, &gi, dlogits, wte_block, dx));
    AxGemm gw = {.trans_a = 1, .m = nv, .n = Cl, .k = N, .alpha = 1, .beta = 1, .lda = rows,
                 .ldb = Cl, .ldc = Cl};
    AX_TRY(tp_gemm(be, c, &gw, dlogits, x, dwte_block));
  } else {
    AX_TRY(be->ops->zero(be, dx, (size_t)N * Cl * be->esz, AX_STREAM_COMPUTE));
  }
  return ax_tp_all_reduce(c, AX_TP_X, dx, (size_t)N * Cl, NULL);
}
