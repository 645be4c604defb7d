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
 *             sends from x as it is.
 *   graddrop  key ratio (default 0.01). Aji & Heafield's dropped values are kept and added to
 *             the next step's gradient: that is error feedback, always on (no ef key). */
#include <string.h>

#include "codec_impl.h"
#include "src/core/error.h"

static size_t cap_of(const AxCodec *c, size_t n) {
  size_t cap = 2 * ax_sparse_keep(c->p.ratio, n);
  return cap < n ? cap : n;
}

static size_t max_bytes(const AxCodec *c, size_t n) { return ax_sparse_bytes(cap_of(c, n)); }

static size_t sample_bytes(const AxCodec *c, size_t n) {
  (void)c;
  return ax_sparse_sample_size(n) * sizeof(float);
}

/* Selects from x into out and writes the pairs. */
static int send_selected(const AxCodec *c, AxCodecState *st, const AxCodecCtx *ctx,
                         const float *x, size_t n, void *out, size_t *bytes) {
  uint32_t *idx = (uint32_t *)out + 1;
  size_t count;
  AX_TRY(ax_sparse_select_sampled(x, n, ax_sparse_keep(c->p.ratio, n), cap_of(c, n),
                                  ax_codec_rng(ctx, AX_CRNG_SAMPLE), st, idx, &count));
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
    .name = "dgc", .keys = "ratio,momentum", .defaults = dgc_defaults, .max_bytes = max_bytes,
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
