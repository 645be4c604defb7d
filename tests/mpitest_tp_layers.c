/* mpitest_tp_layers.c — every tensor-parallel layer (models/tp_layers.h) against the serial
 * layer on the same random data, on every Gx x Gy x Gz grid with sizes in {1, 2} whose product
 * divides the ranks (the rest form data-parallel rows that compute the same): the fully-connected
 * layer normal and transposed, with the dI all-reduce overlapped and not (OAR) and the weight
 * gradient's reduce-scatter finished at once and deferred (ORS), forward output, input
 * gradient, the Z-reduce-scattered weight gradient and the Z-summed bias gradient; LayerNorm;
 * the vocabulary-parallel embedding; the LM head, the parallel cross-entropy (losses and
 * d logits) and its backward; a whole GPT block (heads split over X with qkv's rows permuted,
 * every parameter gradient, under each combination of OAR and ORS), whose bytes sent per group and operation (the weights' gathers,
 * forward, backward, the Z-sum of its vectors) equal what the communication model
 * (src/plan/comm_model.h) predicts for the blocks of a one-layer step. Each rank compares its own blocks with the matching blocks of
 * the serial result within 1e-5 (relative above 1). */
#include <check.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/layers.h"
#include "models/tp_block.h"
#include "models/tp_layers.h"
#include "mpi/mpi_util.h"
#include "mpi/coll/tp_mpi.h"
#include "src/plan/comm_model.h"
#include "src/core/error.h"
#include "mpitestutil.h"
#include "testutil.h"

enum { RUN_TIMEOUT_S = 120, BM = 2, T = 4, NT = BM * T };
#define TOL 1e-5

static AxBackend *g_be;

/* ------------------------------------------------------------------ data and blocks */

static float *random_tensor(size_t n, unsigned seed) {
  float *x = tu_zeros(n);
  unsigned s = seed * 2654435761u + 12345u;
  for (size_t i = 0; i < n; i++) {
    s = s * 1664525u + 1013904223u;
    x[i] = (float)((s >> 8) & 0xffff) / 32768.0f - 1.0f;
  }
  return x;
}

/* rows [r0, r0 + nr) and columns [c0, c0 + nc) of a row-major matrix with ld columns */
static float *block_of(const float *m, int ld, int r0, int nr, int c0, int nc) {
  float *b = tu_zeros((size_t)nr * nc);
  for (int r = 0; r < nr; r++) memcpy(b + (size_t)r * nc, m + (size_t)(r0 + r) * ld + c0, nc * sizeof *b);
  return b;
}

static void expect_close(const char *what, const float *got, const float *want, size_t n) {
  for (size_t i = 0; i < n; i++) {
    double tol = TOL * fmax(1.0, fabs(want[i]));
    if (!(fabs(got[i] - want[i]) <= tol)) {
      mt_expect(0, "%s[%zu] = %.7g, serial %.7g", what, i, got[i], want[i]);
      return;
    }
  }
}

typedef struct {
  AxGrid grid;
  AxTpMpi tp;
  AxTpComm *c;
  int x, y, z, Gx, Gy, Gz;
  int rows, row0; /* this rank's token rows */
} Env;

static int env_open(Env *e, const int tp[3]) {
  int D = mt_size / (tp[0] * tp[1] * tp[2]);
  if (ax_grid_create_tp(&e->grid, 1, D, tp) != AX_OK) return 0;
  e->grid.comm_cfg.polite = ax_mpi_auto_polite(MPI_COMM_WORLD);
  ax_tp_mpi_init(&e->tp, &e->grid);
  e->c = &e->tp.comm;
  e->x = e->grid.tc[0], e->y = e->grid.tc[1], e->z = e->grid.tc[2];
  e->Gx = tp[0], e->Gy = tp[1], e->Gz = tp[2];
  e->rows = NT / e->Gz;
  e->row0 = e->z * e->rows;
  return 1;
}

static int coord_of(const Env *e, AxTpGroup g) { return g == AX_TP_X ? e->x : g == AX_TP_Y ? e->y : e->z; }

/* ------------------------------------------------------------------ fully connected */

/* Overlaps to test, as bits. */
enum { OV_OAR = 1, OV_ORS = 2, OV_ALL = 3 };

static void check_linear(Env *e, int transposed, int overlaps) {
  const int IN = transposed ? 24 : 16, OUT = transposed ? 16 : 24;
  float *x = random_tensor((size_t)NT * IN, 1), *w = random_tensor((size_t)OUT * IN, 2);
  float *b = random_tensor(OUT, 3), *res = random_tensor((size_t)NT * OUT, 4);
  float *dout = random_tensor((size_t)NT * OUT, 5);
  float *out = tu_zeros((size_t)NT * OUT), *dx = tu_zeros((size_t)NT * IN);
  float *dw = tu_zeros((size_t)OUT * IN), *db = tu_zeros(OUT);
  ax_linear_forward(g_be, out, x, w, b, res, NT, IN, OUT);
  ax_linear_backward(g_be, dx, dw, db, dout, x, w, NT, IN, OUT, 0);

  AxTpLinear l = {.N = e->rows, .in = IN, .out = OUT, .transposed = transposed};
  AxTpComm *c = e->c;
  int ic = ax_tp_linear_in(c, &l), oc = ax_tp_linear_out(c, &l);
  int i0 = coord_of(e, ax_tp_in_group(&l)) * ic, o0 = coord_of(e, ax_tp_out_group(&l)) * oc;
  int shard_rows = oc / e->Gz, s0 = o0 + e->z * shard_rows;
  float *xl = block_of(x, IN, e->row0, e->rows, i0, ic);
  float *shard = block_of(w, IN, s0, shard_rows, i0, ic);
  float *wblock = tu_zeros(ax_tp_linear_block(c, &l));
  float *outl = tu_zeros((size_t)e->rows * oc), *dxl = tu_zeros((size_t)e->rows * ic);
  float *dws = tu_zeros(ax_tp_linear_shard(c, &l)), *dbl = tu_zeros(oc);
  float *scratch = tu_zeros(ax_tp_linear_block(c, &l) + ax_tp_linear_shard(c, &l));
  AxTpReq *req;
  int rc = ax_tp_gather_weight(c, shard, wblock, ax_tp_linear_block(c, &l), &req);
  if (rc == AX_OK) rc = ax_tp_wait(c, req);
  if (rc == AX_OK)
    rc = ax_tp_linear_forward(g_be, c, &l, outl, xl, wblock, b + o0,
                              block_of(res, OUT, e->row0, e->rows, o0, oc));
  AxTpPendingRs pending[1];
  AxTpRsQueue queue = {pending, 0, 1};
  AxTpBackwardOpts o = {scratch, overlaps & OV_ORS ? &queue : NULL, overlaps & OV_OAR};
  if (rc == AX_OK)
    rc = ax_tp_linear_backward(g_be, c, &l, dxl, dws, dbl,
                               block_of(dout, OUT, e->row0, e->rows, o0, oc), xl, wblock, &o);
  if (rc == AX_OK) rc = ax_tp_rs_queue_finish(g_be, c, &queue);
  if (rc == AX_OK) rc = ax_tp_all_reduce(c, AX_TP_Z, dbl, (size_t)oc, NULL);
  if (!mt_expect(rc == AX_OK, "linear: %s", ax_error_message())) return;
  expect_close("linear out", outl, block_of(out, OUT, e->row0, e->rows, o0, oc), (size_t)e->rows * oc);
  expect_close("linear dx", dxl, block_of(dx, IN, e->row0, e->rows, i0, ic), (size_t)e->rows * ic);
  expect_close("linear dw", dws, block_of(dw, IN, s0, shard_rows, i0, ic), (size_t)shard_rows * ic);
  expect_close("linear db", dbl, db + o0, (size_t)oc);
}

/* ------------------------------------------------------------------ LayerNorm */

static void check_layernorm(Env *e) {
  const int C = 16, Cl = C / e->Gy, c0 = e->y * Cl;
  float *x = random_tensor((size_t)NT * C, 11), *w = random_tensor(C, 12);
  float *b = random_tensor(C, 13), *dout = random_tensor((size_t)NT * C, 14);
  float *out = tu_zeros((size_t)NT * C), *mean = tu_zeros(NT), *rstd = tu_zeros(NT);
  float *dx = tu_zeros((size_t)NT * C), *dw = tu_zeros(C), *db = tu_zeros(C);
  g_be->ops->layernorm_forward(g_be, out, mean, rstd, x, w, b, NT, C);
  g_be->ops->layernorm_backward(g_be, dx, dw, db, dout, x, w, mean, rstd, NT, C);

  AxTpComm *c = e->c;
  int n = e->rows;
  float *xl = block_of(x, C, e->row0, n, c0, Cl), *outl = tu_zeros((size_t)n * Cl);
  float *ml = tu_zeros(n), *rl = tu_zeros(n), *sums = tu_zeros(2 * (size_t)n);
  float *dxl = tu_zeros((size_t)n * Cl), *dwl = tu_zeros(Cl), *dbl = tu_zeros(Cl);
  int rc = ax_tp_layernorm_forward(g_be, c, outl, ml, rl, xl, w + c0, b + c0, n, C);
  if (rc == AX_OK)
    rc = ax_tp_layernorm_backward(g_be, c, dxl, dwl, dbl, block_of(dout, C, e->row0, n, c0, Cl),
                                  xl, w + c0, ml, rl, sums, n, C);
  if (rc == AX_OK) rc = ax_tp_all_reduce(c, AX_TP_Z, dwl, (size_t)Cl, NULL);
  if (rc == AX_OK) rc = ax_tp_all_reduce(c, AX_TP_Z, dbl, (size_t)Cl, NULL);
  if (!mt_expect(rc == AX_OK, "layernorm: %s", ax_error_message())) return;
  expect_close("layernorm out", outl, block_of(out, C, e->row0, n, c0, Cl), (size_t)n * Cl);
  expect_close("layernorm mean", ml, mean + e->row0, (size_t)n);
  expect_close("layernorm rstd", rl, rstd + e->row0, (size_t)n);
  expect_close("layernorm dx", dxl, block_of(dx, C, e->row0, n, c0, Cl), (size_t)n * Cl);
  expect_close("layernorm dw", dwl, dw + c0, (size_t)Cl);
  expect_close("layernorm db", dbl, db + c0, (size_t)Cl);
}

/* ------------------------------------------------------------------ vocabulary */

enum { V = 50, VP = 64, VC = 16 };

static int32_t *random_tokens(unsigned seed) {
  int32_t *t = (int32_t *)tu_zeros(NT);
  float *r = random_tensor(NT, seed);
  for (int i = 0; i < NT; i++) t[i] = (int32_t)((r[i] + 1.0f) * 0.5f * V) % V;
  return t;
}

/* This rank's Ŵ shard of wte and the block gathered from the Z group. */
static float *wte_block(Env *e, const AxTpVocab *v, const float *wte, float **shard) {
  int vr = ax_tp_vocab_rows(e->c, v), Cl = VC / e->Gy;
  *shard = block_of(wte, VC, ax_tp_vocab_first(e->c, v) + e->z * (vr / e->Gz), vr / e->Gz,
                    e->y * Cl, Cl);
  float *block = tu_zeros((size_t)vr * Cl);
  mt_expect(ax_tp_gather_weight(e->c, *shard, block, (size_t)vr * Cl, NULL) == AX_OK,
            "gather wte: %s", ax_error_message());
  return block;
}

static void check_embedding(Env *e) {
  float *wte = random_tensor((size_t)VP * VC, 21), *wpe = random_tensor((size_t)T * VC, 22);
  float *dout = random_tensor((size_t)NT * VC, 23);
  int32_t *tok = random_tokens(24);
  float *out = tu_zeros((size_t)NT * VC), *dwte = tu_zeros((size_t)VP * VC);
  float *dwpe = tu_zeros((size_t)T * VC);
  g_be->ops->encoder_forward(g_be, out, tok, wte, wpe, BM, T, VC);
  g_be->ops->encoder_backward(g_be, dwte, dwpe, dout, tok, BM, T, VC);

  AxTpVocab v = {.N = e->rows, .T = T, .C = VC, .V = V, .Vp = VP};
  AxTpComm *c = e->c;
  int Cl = VC / e->Gy, c0 = e->y * Cl, vr = ax_tp_vocab_rows(c, &v), n = e->rows;
  float *shard, *block = wte_block(e, &v, wte, &shard);
  float *wpel = block_of(wpe, VC, 0, T, c0, Cl), *outl = tu_zeros((size_t)n * Cl);
  float *dblock = tu_zeros((size_t)vr * Cl), *dshard = tu_zeros((size_t)vr / e->Gz * Cl);
  float *tmp = tu_zeros((size_t)vr / e->Gz * Cl), *dwpel = tu_zeros((size_t)T * Cl);
  int rc = ax_tp_embed_forward(g_be, c, &v, outl, tok + e->row0, block, wpel);
  ax_tp_embed_backward(g_be, c, &v, dblock, dwpel, block_of(dout, VC, e->row0, n, c0, Cl),
                       tok + e->row0);
  if (rc == AX_OK) rc = ax_tp_reduce_scatter_add(g_be, c, dblock, dshard, tmp, (size_t)vr / e->Gz * Cl);
  if (rc == AX_OK) rc = ax_tp_all_reduce(c, AX_TP_Z, dwpel, (size_t)T * Cl, NULL);
  if (!mt_expect(rc == AX_OK, "embedding: %s", ax_error_message())) return;
  int s0 = ax_tp_vocab_first(c, &v) + e->z * (vr / e->Gz);
  expect_close("embedding out", outl, block_of(out, VC, e->row0, n, c0, Cl), (size_t)n * Cl);
  expect_close("embedding dwte", dshard, block_of(dwte, VC, s0, vr / e->Gz, c0, Cl),
               (size_t)vr / e->Gz * Cl);
  expect_close("embedding dwpe", dwpel, block_of(dwpe, VC, 0, T, c0, Cl), (size_t)T * Cl);
}

static void check_head_and_loss(Env *e) {
  float *wte = random_tensor((size_t)VP * VC, 31), *x = random_tensor((size_t)NT * VC, 32);
  int32_t *tgt = random_tokens(33);
  float *logits = tu_zeros((size_t)NT * VP), *losses = tu_zeros(NT);
  float *dx = tu_zeros((size_t)NT * VC), *dwte = tu_zeros((size_t)VP * VC);
  const float dloss = 1.0f / NT;
  AxGemm g = {.trans_b = 1, .m = NT, .n = V, .k = VC, .alpha = 1, .lda = VC, .ldb = VC, .ldc = VP};
  ax_gemm(g_be, &g, x, wte, logits);
  float *logits0 = block_of(logits, VP, 0, NT, 0, VP);
  g_be->ops->crossentropy(g_be, losses, logits, tgt, NT, V, VP, dloss);
  AxGemm gi = {.m = NT, .n = VC, .k = V, .alpha = 1, .lda = VP, .ldb = VC, .ldc = VC};
  ax_gemm(g_be, &gi, logits, wte, dx);
  AxGemm gw = {.trans_a = 1, .m = V, .n = VC, .k = NT, .alpha = 1, .beta = 1, .lda = VP,
               .ldb = VC, .ldc = VC};
  ax_gemm(g_be, &gw, logits, x, dwte);

  AxTpVocab v = {.N = e->rows, .T = T, .C = VC, .V = V, .Vp = VP};
  AxTpComm *c = e->c;
  int Cl = VC / e->Gy, c0 = e->y * Cl, n = e->rows;
  int vr = ax_tp_vocab_rows(c, &v), v0 = ax_tp_vocab_first(c, &v), nv = ax_tp_vocab_real(c, &v);
  float *shard, *block = wte_block(e, &v, wte, &shard);
  float *xl = block_of(x, VC, e->row0, n, c0, Cl), *ll = tu_zeros((size_t)n * vr);
  float *lossl = tu_zeros(n), *scratch = tu_zeros((size_t)(e->Gx + 4) * n);
  float *dxl = tu_zeros((size_t)n * Cl), *dblock = tu_zeros((size_t)vr * Cl);
  float *dshard = tu_zeros((size_t)vr / e->Gz * Cl), *tmp = tu_zeros((size_t)vr / e->Gz * Cl);
  int rc = ax_tp_head_forward(g_be, c, &v, ll, xl, block);
  if (rc == AX_OK && nv > 0)
    expect_close("head logits", block_of(ll, vr, 0, n, 0, nv),
                 block_of(logits0, VP, e->row0, n, v0, nv), (size_t)n * nv);
  if (rc == AX_OK) rc = ax_tp_cross_entropy(g_be, c, &v, lossl, ll, tgt + e->row0, dloss, scratch);
  if (rc == AX_OK) rc = ax_tp_head_backward(g_be, c, &v, dxl, dblock, ll, xl, block);
  if (rc == AX_OK) rc = ax_tp_reduce_scatter_add(g_be, c, dblock, dshard, tmp, (size_t)vr / e->Gz * Cl);
  if (!mt_expect(rc == AX_OK, "head: %s", ax_error_message())) return;
  expect_close("cross-entropy losses", lossl, losses + e->row0, (size_t)n);
  if (nv > 0)
    expect_close("cross-entropy dlogits", block_of(ll, vr, 0, n, 0, nv),
                 block_of(logits, VP, e->row0, n, v0, nv), (size_t)n * nv);
  expect_close("head dx", dxl, block_of(dx, VC, e->row0, n, c0, Cl), (size_t)n * Cl);
  int s0 = v0 + e->z * (vr / e->Gz);
  expect_close("head dwte", dshard, block_of(dwte, VC, s0, vr / e->Gz, c0, Cl),
               (size_t)vr / e->Gz * Cl);
}


/* ------------------------------------------------------------------ a whole block */

enum { BC = 16, BNH = 4 };

/* This rank's shard of block parameter `id` (the whole tensor `full`), as tp_block.h lays
 * it out. */
static float *shard_of(Env *e, int id, const float *full) {
  const int C = BC;
  float *out = tu_zeros(ax_tp_block_shard(e->c, C, id));
  int Cx = C / e->Gx, Cy = C / e->Gy;
  switch (id) {
  case AX_P_QKVW: {
    int rs = 3 * Cx / e->Gz;
    for (int r = 0; r < rs; r++)
      memcpy(out + (size_t)r * Cy, full + (size_t)ax_tp_qkv_row(e->c, C, e->z * rs + r) * C + e->y * Cy,
             Cy * sizeof *out);
    return out;
  }
  case AX_P_QKVB:
    for (int r = 0; r < 3 * Cx; r++) out[r] = full[ax_tp_qkv_row(e->c, C, r)];
    return out;
  case AX_P_ATTPROJW:
    return block_of(full, C, e->y * Cy + e->z * (Cy / e->Gz), Cy / e->Gz, e->x * Cx, Cx);
  case AX_P_FCW:
    return block_of(full, C, e->x * 4 * Cx + e->z * (4 * Cx / e->Gz), 4 * Cx / e->Gz, e->y * Cy, Cy);
  case AX_P_FCPROJW:
    return block_of(full, 4 * C, e->y * Cy + e->z * (Cy / e->Gz), Cy / e->Gz, e->x * 4 * Cx, 4 * Cx);
  case AX_P_FCB:
    memcpy(out, full + e->x * 4 * Cx, 4 * Cx * sizeof *out);
    return out;
  default:
    memcpy(out, full + e->y * Cy, Cy * sizeof *out);
    return out;
  }
}

static void block_acts(AxBlockActs *a, size_t rows, size_t C, size_t att) {
  a->ln1 = tu_zeros(rows * C), a->qkv = tu_zeros(3 * rows * C), a->att = tu_zeros(att);
  a->atty = tu_zeros(rows * C), a->res2 = tu_zeros(rows * C), a->ln2 = tu_zeros(rows * C);
  a->fch = tu_zeros(4 * rows * C), a->fch_gelu = tu_zeros(4 * rows * C), a->out = tu_zeros(rows * C);
  a->ln1_mean = tu_zeros(rows), a->ln1_rstd = tu_zeros(rows);
  a->ln2_mean = tu_zeros(rows), a->ln2_rstd = tu_zeros(rows);
}

static void block_scratch(AxBlockScratch *s, size_t rows, size_t C, size_t att) {
  s->dres = tu_zeros(rows * C), s->dtmp = tu_zeros(rows * C), s->dbig = tu_zeros(4 * rows * C);
  s->datt = tu_zeros(att);
  s->ddrop = tu_zeros(rows * C);
}


/* The model's block collectives (one layer, one micro-batch of BM sequences per row, fp32)
 * against the bytes this rank counted since the block's first gather. */
static void expect_model_bytes(Env *e) {
  AxCommSetup s = {.model = {.max_seq = T, .vocab = V, .padded_vocab = VP, .layers = 1,
                             .heads = BNH, .channels = BC},
                   .seq = T, .batch = (long long)BM * e->grid.D, .micro_batch = BM,
                   .elem_size = 4, .placement_aware = 1};
  AxRankGrid g = {1, e->Gx, e->Gy, e->Gz, e->grid.D};
  AxMachine m;
  AxCommPrediction pr;
  if (!mt_expect(ax_machine_builtin("perlmutter", &m) == AX_OK &&
                     ax_comm_predict(&s, &m, &g, &pr) == AX_OK,
                 "model: %s", ax_error_message()))
    return;
  static const char *const not_block[] = {"wte", "wpe", "embedding", "head", "lnf", "loss", "logits"};
  unsigned long long want[3][AX_TP_OPS] = {{0}};
  for (int i = 0; i < pr.n_entries; i++) {
    const AxCommEntry *en = &pr.entries[i];
    int skip = en->group > AX_GROUP_Z;
    for (size_t k = 0; k < sizeof not_block / sizeof *not_block; k++)
      skip |= strstr(en->name, not_block[k]) != NULL;
    if (skip) continue;
    AxTpOp op = en->kind == AX_COLL_ALLGATHER        ? AX_TP_OP_ALLGATHER
                : en->kind == AX_COLL_REDUCE_SCATTER ? AX_TP_OP_REDUCE_SCATTER
                                                     : AX_TP_OP_ALLREDUCE;
    want[en->group][op] += en->bytes; /* AX_GROUP_X/Y/Z are AX_TP_X/Y/Z */
  }
  for (int d = 0; d < 3; d++)
    for (int op = 0; op < AX_TP_OPS; op++)
      mt_expect(e->tp.stats.bytes[d][op].sent == want[d][op],
                "block %s over %c: sent %llu bytes, the model says %llu", ax_tp_op_name(op),
                "XYZ"[d], e->tp.stats.bytes[d][op].sent, want[d][op]);
}

/* dropout > 0: both blocks drop with it, the serial one's rows at global row R0 and this
 * rank's at R0 + its first row, its channels at its first one (the masks must agree). */
static void check_block(Env *e, int overlaps, float dropout) {
  const int C = BC;
  AxBlockDims d = {BM, T, C, BNH};
  AxBlockParams p, g, pl, gl, w;
  memset(&w, 0, sizeof w);
  memset(e->tp.stats.bytes, 0, sizeof e->tp.stats.bytes);
  AxGptConfig cfg = {.max_seq = T, .vocab = V, .padded_vocab = VP, .layers = 1, .heads = BNH,
                     .channels = C};
  for (int id = 0; id < AX_N_PARAMS; id++) {
    if (!ax_param_is_layer(id)) continue;
    size_t n = ax_param_per_layer(&cfg, id);
    p.t[id] = random_tensor(n, 100 + id);
    g.t[id] = tu_zeros(n);
    pl.t[id] = shard_of(e, id, p.t[id]);
    gl.t[id] = tu_zeros(ax_tp_block_shard(e->c, C, id));
    size_t gathered = ax_tp_block_gathered(e->c, C, id);
    if (gathered) {
      w.t[id] = tu_zeros(gathered);
      mt_expect(ax_tp_gather_weight(e->c, pl.t[id], w.t[id], gathered, NULL) == AX_OK,
                "gather %s: %s", ax_param_name(id), ax_error_message());
    }
  }
  float *in = random_tensor((size_t)NT * C, 7), *dout = random_tensor((size_t)NT * C, 8);
  AxBlockActs a, al;
  AxBlockScratch s, sl;
  block_acts(&a, NT, C, (size_t)BM * BNH * T * T);
  block_scratch(&s, NT, C, (size_t)BNH * T * T);
  enum { R0 = 5 * T };
  AxDropout drop = {.p = dropout, .seed = 9, .step = 3, .row0 = R0, .width = (uint64_t)C,
                    .layer = 2};
  ax_block_forward(g_be, &p, &a, in, &d, &drop);
  memcpy(s.dres, dout, (size_t)NT * C * sizeof(float));
  ax_block_backward(g_be, &p, &g, &a, in, &s, &d, &drop);

  int n = e->rows, Cy = C / e->Gy, c0 = e->y * Cy;
  AxDropout dropl = drop;
  dropl.row0 = R0 + (uint64_t)e->row0;
  dropl.col0 = (uint64_t)c0;
  block_acts(&al, n, C, (size_t)BM * BNH * T * T);
  block_scratch(&sl, n, C, (size_t)BNH * T * T);
  float *inl = block_of(in, C, e->row0, n, c0, Cy);
  float *tps = tu_zeros(ax_tp_block_tp_scratch(e->c, &d) + 1);
  AxTpPendingRs pending[4];
  AxTpRsQueue queue = {pending, 0, 4};
  AxTpBlockBackwardOpts o = {.ors = overlaps & OV_ORS ? &queue : NULL, .oar = overlaps & OV_OAR};
  for (int id = 0; id < AX_N_PARAMS; id++) /* deferred reduce-scatters need their own */
    o.scratch[id] = o.ors ? tu_zeros(ax_tp_block_dw_scratch(e->c, C, id) + 1) : tps;
  memcpy(sl.dres, block_of(dout, C, e->row0, n, c0, Cy), (size_t)n * Cy * sizeof(float));
  int rc = ax_tp_block_check(e->c, &d);
  if (rc == AX_OK) rc = ax_tp_block_forward(g_be, e->c, &pl, &w, &al, inl, &d, &dropl);
  if (rc == AX_OK)
    rc = ax_tp_block_backward(g_be, e->c, &pl, &gl, &w, &al, inl, &sl, &d, &o, &dropl);
  if (rc == AX_OK) rc = ax_tp_rs_queue_finish(g_be, e->c, &queue);
  for (int id = 0; id < AX_N_PARAMS && rc == AX_OK; id++)
    if (ax_param_is_layer(id) && !ax_tp_block_gathered(e->c, C, id))
      rc = ax_tp_all_reduce(e->c, AX_TP_Z, gl.t[id], ax_tp_block_shard(e->c, C, id), NULL);
  if (!mt_expect(rc == AX_OK, "block: %s", ax_error_message())) return;
  expect_model_bytes(e);
  expect_close("block out", al.out, block_of(a.out, C, e->row0, n, c0, Cy), (size_t)n * Cy);
  expect_close("block d(in)", sl.dres, block_of(s.dres, C, e->row0, n, c0, Cy), (size_t)n * Cy);
  for (int id = 0; id < AX_N_PARAMS; id++) {
    if (!ax_param_is_layer(id)) continue;
    char what[64];
    snprintf(what, sizeof what, "block d%s", ax_param_name(id));
    expect_close(what, gl.t[id], shard_of(e, id, g.t[id]), ax_tp_block_shard(e->c, C, id));
  }
}

/* ------------------------------------------------------------------ every grid */

START_TEST(every_layer_matches_the_serial_layer_on_every_grid) {
  g_be = tu_backend(1);
  int grids = 0;
  for (int gz = 1; gz <= 2; gz++)
    for (int gy = 1; gy <= 2; gy++)
      for (int gx = 1; gx <= 2; gx++) {
        int tp[3] = {gx, gy, gz};
        if (mt_size % (gx * gy * gz)) continue;
        mt_run_begin("tensor-parallel layers on %d x %d x %d", gx, gy, gz);
        Env e;
        if (!mt_expect(env_open(&e, tp), "grid %dx%dx%d: %s", gx, gy, gz, ax_error_message())) {
          mt_assert_all_ok("grid");
          continue;
        }
        for (int t = 0; t <= 1; t++)
          for (int o = 0; o <= OV_ALL; o++) check_linear(&e, t, o);
        check_layernorm(&e);
        check_embedding(&e);
        check_head_and_loss(&e);
        for (int o = 0; o <= OV_ALL; o++) check_block(&e, o, 0.0f);
        check_block(&e, 0, 0.3f); /* GPT-2's dropout: the same elements dropped */
        check_block(&e, OV_ALL, 0.3f);
        ax_grid_destroy(&e.grid);
        tu_free_all(); /* this grid's tensors */
        mt_run_end();
        char what[64];
        snprintf(what, sizeof what, "tensor-parallel layers on %d x %d x %d", gx, gy, gz);
        mt_assert_all_ok(what);
        grids++;
      }
  ck_assert_int_ge(grids, 1);
  ax_backend_destroy(g_be);
}
END_TEST

/* A grid whose product does not match the ranks is refused alike on every rank. */
START_TEST(a_grid_that_does_not_fit_the_ranks_is_refused) {
  AxGrid g;
  int rc = ax_grid_create_tp(&g, 1, 1, (int[3]){2, 2, mt_size + 1});
  mt_expect(rc == AX_ERR && strstr(ax_error_message(), "needs"), "expected 'needs', got rc %d: %s",
            rc, ax_error_message());
  ax_error_clear();
  mt_assert_all_ok("a grid that does not fit");
}
END_TEST

/* ax_tp_block_check names what does not divide (no communication: a comm of sizes only). */
static void expect_refused(int gx, int gy, int gz, int B, const char *words) {
  AxTpComm c = {.size = {gx, gy, gz}};
  AxBlockDims d = {B, T, BC, BNH};
  int rc = ax_tp_block_check(&c, &d);
  mt_expect(rc == AX_ERR && strstr(ax_error_message(), words),
            "%dx%dx%d B %d: expected '%s', got rc %d: %s", gx, gy, gz, B, words, rc,
            ax_error_message());
  ax_error_clear();
}

START_TEST(a_block_the_grid_cannot_split_is_refused) {
  expect_refused(3, 1, 1, BM, "does not divide the 4 attention heads");
  expect_refused(1, 3, 1, BM, "must divide the hidden size 16");
  expect_refused(1, 1, 2, 3, "does not divide the 3 sequences");
  expect_refused(2, 2, 3, 6, "does not divide the 8 rows of a weight block");
  AxTpComm fits = {.size = {2, 2, 2}};
  AxBlockDims d = {BM, T, BC, BNH};
  mt_expect(ax_tp_block_check(&fits, &d) == AX_OK, "2x2x2 refused: %s", ax_error_message());
  AxGrid g;
  int rc = ax_grid_create_tp(&g, 1, 1, (int[3]){0, 1, 1});
  mt_expect(rc == AX_ERR && strstr(ax_error_message(), "must be positive"),
            "expected 'must be positive', got rc %d: %s", rc, ax_error_message());
  ax_error_clear();
  mt_assert_all_ok("a block the grid cannot split");
}
END_TEST

static Suite *tp_suite(void) {
  Suite *s = suite_create("tp_layers");
  TCase *tc = tu_tcase(s, "tp_layers", 300);
  tcase_add_test(tc, every_layer_matches_the_serial_layer_on_every_grid);
  tcase_add_test(tc, a_grid_that_does_not_fit_the_ranks_is_refused);
  tcase_add_test(tc, a_block_the_grid_cannot_split_is_refused);
  return s;
}

int main(int argc, char **argv) {
  mt_init(&argc, &argv);
  int rc = mt_run_watched(tp_suite(), RUN_TIMEOUT_S);
  return mt_finish(rc);
}
