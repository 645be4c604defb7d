/* codec_dgc.c — deep gradient compression (Lin et al.) and GradDrop (Aji & Heafield): send
 * the values whose magnitude reaches a threshold estimated from a seeded sample
 * (ax_sparse_select_sampled, stream AX_CRNG_SAMPLE) to keep about ratio * n; at most
 * cap = min(n, 2 * ceil(ratio * n)) are sent (when more reach the estimate, the exact top cap).
 * Format: the sparse pairs (codec_impl.h), at most 4 + 8 * cap bytes.
 *   dgc       keys ratio (default 0.001), momentum (0.9). With a state: momentum correction
 *             on this rank's own gradient (prepare, once a step, so a collective that
 *             re-encodes partial sums corrects each rank's gradient once) in Adam's form,
 *             u = momentum * u + (1 - momentum) * g, since the optimizer it replaces is Adam's
 *             first moment (Lin et al.'s u = momentum * u + g is momentum SGD's: under Adam it
 *             took steps 1 / (1 - momentum) times the uncompressed run's),
 *             local accumulation v += x of what this rank sends (its u, or a sum holding it),
 *             send from v, and what is sent is cleared from v and u (momentum factor masking).
 *             u and v are DGC's own error accumulation, so it takes no ef key. With no state it
 *             sends from x as it is. Keys ramp=R, ramp_from=S (default 0: none): DGC's warm-up
 *             of the sparsity (§3.4, §4.1: 75%, 93.75%, 98.4375%, 99.6%, then 99.9%): from
 *             step S (the context's step) for R steps in four equal stages, stage j keeps
 *             0.25^(j+1) of the values (never less than ratio), then ratio. Its worst case
 *             (max_bytes) is that of the ramp's first density; the cost model prices ratio.
 *             Under Adam (the context's adam_v) it selects the values whose update is largest,
 *             |v| / sqrt(adam_v) (DGC keeps the largest updates of momentum SGD, whose update
 *             is the value itself), and sends them as they are.
 *   graddrop  key ratio (default 0.01). Aji & Heafield's dropped values are kept and added to
 *             the next step's gradient: that is error feedback, always on (no ef key). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "codec_impl.h"
#include "src/core/error.h"

enum { RAMP_STAGES = 4 };
static const double RAMP_FIRST = 0.25, RAMP_FACTOR = 0.25; /* DGC §4.1: 75%, x 1/4 a stage */

/* The fraction kept at `step`: ratio, or the sparsity warm-up's density while it lasts. */
static double ratio_at(const AxCodec *c, uint64_t step) {
  const AxCodecParams *p = &c->p;
  if (!p->ramp || step < p->ramp_from || step - p->ramp_from >= p->ramp) return p->ratio;
  uint64_t stage = RAMP_STAGES * (step - p->ramp_from) / p->ramp;
  double d = RAMP_FIRST;
  for (uint64_t j = 0; j < stage; j++) d *= RAMP_FACTOR;
  return d > p->ratio ? d : p->ratio;
}

/* The most the encoding of n values at `ratio` may hold. */
static size_t cap_at(double ratio, size_t n) {
  size_t cap = 2 * ax_sparse_keep(ratio, n);
  return cap < n ? cap : n;
}

static double largest_ratio(const AxCodec *c) {
  return c->p.ramp && RAMP_FIRST > c->p.ratio ? RAMP_FIRST : c->p.ratio;
}

static size_t max_bytes(const AxCodec *c, size_t n) {
  return ax_sparse_bytes(cap_at(largest_ratio(c), n));
}

static size_t steady_bytes(const AxCodec *c, size_t n) {
  return ax_sparse_bytes(cap_at(c->p.ratio, n));
}

static size_t sample_bytes(const AxCodec *c, size_t n) {
  (void)c;
  return ax_sparse_sample_size(n) * sizeof(float);
}

/* The update each value would make under Adam with second moment v: |x| / sqrt(v). */
static float *adam_updates(const float *x, const float *v, size_t n) {
  static const float V_FLOOR = 1e-16f; /* a value Adam never saw: its own size decides */
  float *u = ax_malloc((n ? n : 1) * sizeof *u);
  if (u)
    for (size_t i = 0; i < n; i++) u[i] = fabsf(x[i]) / sqrtf(v[i] + V_FLOOR);
  return u;
}

/* Selects from x into out and writes the pairs: the largest values, or for dgc under Adam
 * (ctx->adam_v) the values of the largest updates. */
static int send_selected(const AxCodec *c, AxCodecState *st, const AxCodecCtx *ctx,
                         const float *x, size_t n, void *out, size_t *bytes) {
  uint32_t *idx = (uint32_t *)out + 1;
  size_t count;
  double ratio = ratio_at(c, ctx->step);
  int by_update = ctx->adam_v && c->impl == &ax_codec_dgc;
  float *by = by_update ? adam_updates(x, ctx->adam_v, n) : NULL;
  if (by_update && !by) return AX_ERR;
  int rc = ax_sparse_select_sampled(by ? by : x, n, ax_sparse_keep(ratio, n), cap_at(ratio, n),
                                    ax_codec_rng(ctx, AX_CRNG_SAMPLE), st, idx, &count);
  free(by);
  AX_TRY(rc);
  *bytes = ax_sparse_finish(x, count, out);
  return AX_OK;
}

static int decode(const AxCodec *c, const void *in, size_t bytes, float *out, size_t n, int add) {
  return ax_sparse_decode(c->impl->name, in, bytes, out, n, add);
}

/* ---------------------------------------------------------------- dgc */

static void dgc_defaults(AxCodecParams *p) { p->ratio = 0.001, p->momentum = 0.9; }

static size_t dgc_own(const AxCodec *c, size_t n) {
  (void)c;
  return 2 * n; /* u, then v */
}

/* g becomes u = momentum * u + (1 - momentum) * g. */
static void dgc_prepare(const AxCodec *c, AxCodecState *st, float *g, size_t n) {
  ax_codec_momentum_step(c, st->own, g, n);
}

static int dgc_encode(const AxCodec *c, AxCodecState *st, const AxCodecCtx *ctx, const float *x,
                      size_t n, void *out, size_t *bytes) {
  if (!st) return send_selected(c, st, ctx, x, n, out, bytes);
  float *u = st->own, *v = st->own + n;
  ax_op_add(v, x, n);
  AX_TRY(send_selected(c, st, ctx, v, n, out, bytes));
  const uint32_t *idx = (const uint32_t *)out + 1;
  size_t count = ((const uint32_t *)out)[0];
  ax_op_zero_at(v, idx, count);
  ax_op_zero_at(u, idx, count);
  return AX_OK;
}

const AxCodecImpl ax_codec_dgc = {
    .name = "dgc", .keys = "ratio,momentum,ramp,ramp_from", .quiet = "ramp,ramp_from",
    .defaults = dgc_defaults, .max_bytes = max_bytes, .steady_bytes = steady_bytes,
    .own_floats = dgc_own, .scratch_bytes = sample_bytes, .prepare = dgc_prepare,
    .encode = dgc_encode,
    .decode = decode,
};

/* ---------------------------------------------------------------- graddrop */

static void graddrop_defaults(AxCodecParams *p) { p->ratio = 0.01; }

const AxCodecImpl ax_codec_graddrop = {
    .name = "graddrop", .keys = "ratio", .ef_always = 1, .defaults = graddrop_defaults,
    .max_bytes = max_bytes, .scratch_bytes = sample_bytes, .encode = send_selected,
    .decode = decode,
};
