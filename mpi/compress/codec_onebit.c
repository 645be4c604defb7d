/* codec_onebit.c — onebit (Seide et al.) and EF-SignSGD (Karimireddy et al.): one sign bit a
 * value (x >= 0) and two reconstruction values.
 *   onebit:scale=mean      +-mean|x| (one scale); the default
 *   onebit:scale=twomeans  the mean of the x >= 0 for set bits, the mean of the x < 0 for
 *                          clear ones (Seide et al.'s variant)
 *   onebit:momentum=M      1-bit Adam's compression stage (Tang et al., Algorithm 1): with a
 *                          state, this rank's own gradient becomes its momentum
 *                          u = M u + (1 - M) g (Adam's form; prepare, once a step) and u is what
 *                          is encoded (with ef=1, u plus the residual), so the optimizer must
 *                          not apply a momentum of its own (ax_codec_momentum); M = 0 (the
 *                          default, left out of the canonical spec) encodes the gradient
 *   efsignsgd              +-||x||_1 / n with error feedback always on (its definition)
 * Keys: onebit scale (mean), ef (0), momentum (0); efsignsgd none.
 * Format: float neg, float pos, then ceil(n/8) bytes of bits (LSB first), zero padded to a
 * whole word: 8 + 4*ceil(ceil(n/8)/4) bytes, exactly, for every input.
 * Encode is one read of x (ax_op_sign_pack packs the bits and sums both signs' parts); with
 * error feedback two (encode_ef). */
#include <math.h>
#include <string.h>

#include "codec_impl.h"
#include "src/core/error.h"

static void defaults(AxCodecParams *p) { p->ef = 0, p->twomeans = 0, p->momentum = 0; }

static size_t own_floats(const AxCodec *c, size_t n) { return c->p.momentum > 0 ? n : 0; }

/* g becomes u = momentum * u + (1 - momentum) * g (1-bit Adam's momentum). */
static void prepare(const AxCodec *c, AxCodecState *st, float *g, size_t n) {
  ax_codec_momentum_step(c, st->own, g, n);
}

static size_t max_bytes(const AxCodec *c, size_t n) {
  (void)c;
  return 8 + ax_codec_words(ax_bits_bytes(n, 1));
}

/* The two reconstruction values; NaN when x held a NaN (neither sign counted it), so a
 * non-finite input decodes non-finite (as an infinite one does through the sums). */
static void scales(const AxCodec *c, const AxSignStats *s, size_t n, float out[2]) {
  if (s->n_pos + s->n_neg < n) {
    out[0] = out[1] = NAN;
  } else if (c->p.twomeans) {
    out[0] = s->n_neg ? (float)(s->sum_neg / (double)s->n_neg) : 0.0f;
    out[1] = s->n_pos ? (float)(s->sum_pos / (double)s->n_pos) : 0.0f;
  } else {
    float mean = n ? (float)((s->sum_pos - s->sum_neg) / (double)n) : 0.0f;
    out[0] = -mean;
    out[1] = mean;
  }
}

static int encode(const AxCodec *c, AxCodecState *st, const AxCodecCtx *ctx, const float *x,
                  size_t n, void *out, size_t *bytes) {
  (void)st, (void)ctx;
  uint8_t *b = out;
  size_t packed = ax_bits_bytes(n, 1), total = max_bytes(c, n);
  AxSignStats s;
  ax_op_sign_pack(x, n, b + 8, &s);
  memset(b + 8 + packed, 0, total - 8 - packed);
  float sc[2];
  scales(c, &s, n, sc);
  memcpy(b, sc, sizeof sc);
  *bytes = total;
  return AX_OK;
}

/* Error feedback in two reads: residual += in with its statistics, then its bits and
 * residual -= decoding (ops.h), bitwise the generic wrapper's result. */
static int encode_ef(const AxCodec *c, AxCodecState *st, const AxCodecCtx *ctx, const float *in,
                     size_t n, void *out, size_t *bytes) {
  (void)ctx;
  uint8_t *b = out;
  size_t packed = ax_bits_bytes(n, 1), total = max_bytes(c, n);
  AxSignStats s;
  ax_op_add_sign_stats(st->residual, in, n, &s);
  float sc[2];
  scales(c, &s, n, sc);
  memcpy(b, sc, sizeof sc);
  ax_op_sign_pack_sub(st->residual, n, sc[0], sc[1], b + 8);
  memset(b + 8 + packed, 0, total - 8 - packed);
  *bytes = total;
  return AX_OK;
}

static int decode(const AxCodec *c, const void *in, size_t bytes, float *out, size_t n, int add) {
  if (bytes != max_bytes(c, n))
    return AX_FAIL("codec %s: %zu bytes for %zu values (expected %zu)", c->impl->name, bytes, n,
                   max_bytes(c, n));
  float sc[2];
  memcpy(sc, in, sizeof sc);
  ax_op_sign_unpack((const uint8_t *)in + 8, n, sc[0], sc[1], out, add);
  return AX_OK;
}

const AxCodecImpl ax_codec_onebit = {
    .name = "onebit", .keys = "scale,ef,momentum", .quiet = "momentum", .defaults = defaults,
    .max_bytes = max_bytes, .own_floats = own_floats, .prepare = prepare,
    .prepare_if_momentum = 1, .encode = encode, .encode_ef = encode_ef, .decode = decode,
};

const AxCodecImpl ax_codec_efsignsgd = {
    .name = "efsignsgd", .keys = "", .ef_always = 1, .defaults = defaults,
    .max_bytes = max_bytes, .encode = encode, .encode_ef = encode_ef, .decode = decode,
};
