/* codec_quantize.c — the unbiased stochastic quantizers, both "stochastic rounding of x*L/s to
 * the integers -L..L" (ax_op_quantize; uniforms from the context's generator, stream
 * AX_CRNG_QUANT, by the value's index in the range), differing in the scale s and L:
 *   terngrad (Wen et al.)  s = max|x|; bits = 2, 4, 8 (default 2) gives L = 1, 7, 127:
 *                          bits=2 is TernGrad's {-1, 0, 1}*s, more bits more levels
 *   qsgd (Alistarh et al.) s = ||x||_2; L = levels (default 4, 1..127); codes of 2, 4 or 8
 *                          bits, the fewest that hold 2L + 1 codes
 * Decode: (code - L) * (s / L). E[decode] = x (up to the rounding of x*L/s to fp32). Key ef
 * (default 0) for both. Format: float s, the codes packed (codec_dense.h). */
#include <math.h>

#include "codec_dense.h"
#include "src/core/error.h"

typedef struct {
  float mul;
  int levels;
  AxCrng r;
} Quant;

static void codes_of(const float *x, size_t len, uint64_t first, const void *arg,
                     uint8_t *codes) {
  const Quant *q = arg;
  ax_op_quantize(x, len, q->mul, q->levels, q->r, first, codes);
}

static int levels_of(const AxCodec *c) {
  return c->impl == &ax_codec_terngrad ? (1 << (c->p.bits - 1)) - 1 : c->p.levels;
}

static int width_of(const AxCodec *c) {
  int codes = 2 * levels_of(c) + 1;
  return codes <= 4 ? 2 : codes <= 16 ? 4 : 8;
}

static size_t max_bytes(const AxCodec *c, size_t n) { return ax_dense_bytes(n, width_of(c)); }

static int encode(const AxCodec *c, AxCodecState *st, const AxCodecCtx *ctx, const float *x,
                  size_t n, void *out, size_t *bytes) {
  (void)st;
  float s = c->impl == &ax_codec_terngrad ? ax_op_max_abs(x, n) : (float)sqrt(ax_op_sum_sq(x, n));
  Quant q = {.levels = levels_of(c), .r = ax_codec_rng(ctx, AX_CRNG_QUANT)};
  q.mul = s > 0 && isfinite(s) ? (float)q.levels / s : 0.0f;
  ax_dense_encode(x, n, width_of(c), s, codes_of, &q, out, bytes);
  return AX_OK;
}

static int decode(const AxCodec *c, const void *in, size_t bytes, float *out, size_t n, int add) {
  float s, table[256] = {0};
  AX_TRY(ax_dense_decode(c->impl->name, in, bytes, n, width_of(c), &s));
  int levels = levels_of(c);
  float step = s / (float)levels;
  for (int code = 0; code <= 2 * levels; code++) table[code] = (float)(code - levels) * step;
  ax_dense_lookup(in, n, width_of(c), table, out, add);
  return AX_OK;
}

static void terngrad_defaults(AxCodecParams *p) { p->bits = 2, p->ef = 0; }
static void qsgd_defaults(AxCodecParams *p) { p->levels = 4, p->ef = 0; }

const AxCodecImpl ax_codec_terngrad = {
    .name = "terngrad", .keys = "bits,ef", .defaults = terngrad_defaults,
    .max_bytes = max_bytes, .encode = encode, .decode = decode,
};

const AxCodecImpl ax_codec_qsgd = {
    .name = "qsgd", .keys = "levels,ef", .defaults = qsgd_defaults, .max_bytes = max_bytes,
    .encode = encode, .decode = decode,
};
