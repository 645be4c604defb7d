/* codec_randk.c — rand-k, a linear codec in one round: k = ceil(ratio * n) (at least 1) indices,
 * one drawn uniformly from each of k equal strata (ax_op_random_strata, stream AX_CRNG_RANDK),
 * a function of (seed, step, range) only, so every rank picks the same ones and the factors (the
 * values there) sum to the sum's. Rebuild writes the reduced values there and 0 elsewhere
 * (unscaled: the kept values are exact, the rest dropped). Keys: ratio (default 0.01), ef
 * (default 0: with ef=1 what was not picked is kept and added to the next step).
 * State: the residual when ef; scratch for the step's indices and reduced values. */
#include <string.h>

#include "codec_impl.h"
#include "src/core/error.h"

static void defaults(AxCodecParams *p) { p->ratio = 0.01, p->ef = 0; }

static size_t factor_len(const AxCodec *c, size_t n, int round) {
  (void)round;
  return ax_sparse_keep(c->p.ratio, n);
}

static size_t max_bytes(const AxCodec *c, size_t n) { return 4 * factor_len(c, n, 0); }

static size_t scratch_bytes(const AxCodec *c, size_t n) {
  return factor_len(c, n, 0) * (sizeof(uint32_t) + sizeof(float));
}

static uint32_t *indices(AxCodecState *st) { return st->scratch; }
static float *values(AxCodecState *st, size_t k) { return (float *)(indices(st) + k); }

static int factor(const AxCodec *c, AxCodecState *st, const AxCodecCtx *ctx, const float *in,
                  size_t n, int round, float *out) {
  size_t k = factor_len(c, n, round);
  ax_op_random_strata(ax_codec_rng(ctx, AX_CRNG_RANDK), n, k, indices(st));
  if (!st->residual) {
    ax_op_gather(in, indices(st), k, out);
    return AX_OK;
  }
  ax_op_add(st->residual, in, n);
  ax_op_gather(st->residual, indices(st), k, out);
  ax_op_zero_at(st->residual, indices(st), k);
  return AX_OK;
}

static int factor_reduced(const AxCodec *c, AxCodecState *st, const AxCodecCtx *ctx, size_t n,
                          int round, float *reduced) {
  (void)ctx;
  size_t k = factor_len(c, n, round);
  if (k) memcpy(values(st, k), reduced, k * sizeof *reduced);
  return AX_OK;
}

static int rebuild(const AxCodec *c, AxCodecState *st, const AxCodecCtx *ctx, size_t n,
                   float *out) {
  (void)ctx;
  size_t k = factor_len(c, n, 0);
  if (n) memset(out, 0, n * sizeof *out);
  ax_op_scatter(out, indices(st), values(st, k), k, 0);
  return AX_OK;
}

const AxCodecImpl ax_codec_randk = {
    .name = "randk", .keys = "ratio,ef", .rounds = 1, .defaults = defaults,
    .max_bytes = max_bytes, .scratch_bytes = scratch_bytes, .factor_len = factor_len,
    .factor = factor, .factor_reduced = factor_reduced, .rebuild = rebuild,
};
