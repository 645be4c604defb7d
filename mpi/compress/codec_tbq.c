/* codec_tbq.c — threshold binary quantization (Strom, "TBQ" in HiPress): x >= tau becomes
 * +tau, x <= -tau becomes -tau, the rest 0; 2 bits a value. Keys: tau (default 0.01, > 0),
 * ef (default 0; Strom keeps the residual: use ef=1 for his algorithm). tau is in the units of
 * unscaled gradients: values that carry a loss scale (the context's grad_scale) meet tau times
 * it, and the message carries the threshold used.
 * Format: float tau, then 2-bit codes (0: 0, 1: +tau, 2: -tau): 4 + 4*ceil(ceil(n/4)/4) bytes. */
#include "codec_dense.h"
#include "src/core/error.h"

static void defaults(AxCodecParams *p) { p->tau = 0.01, p->ef = 0; }

static size_t max_bytes(const AxCodec *c, size_t n) {
  (void)c;
  return ax_dense_bytes(n, 2);
}

static void codes_of(const float *x, size_t len, uint64_t first, const void *arg,
                     uint8_t *codes) {
  (void)first;
  ax_op_threshold_codes(x, len, *(const float *)arg, codes);
}

static int encode(const AxCodec *c, AxCodecState *st, const AxCodecCtx *ctx, const float *x,
                  size_t n, void *out, size_t *bytes) {
  (void)st;
  float tau = (float)c->p.tau * (ctx && ctx->grad_scale > 0 ? ctx->grad_scale : 1.0f);
  ax_dense_encode(x, n, 2, tau, codes_of, &tau, out, bytes);
  return AX_OK;
}

static int decode(const AxCodec *c, const void *in, size_t bytes, float *out, size_t n, int add) {
  float tau;
  AX_TRY(ax_dense_decode(c->impl->name, in, bytes, n, 2, &tau));
  const float table[4] = {0.0f, tau, -tau, 0.0f};
  ax_dense_lookup(in, n, 2, table, out, add);
  return AX_OK;
}

const AxCodecImpl ax_codec_tbq = {
    .name = "tbq", .keys = "tau,ef", .defaults = defaults, .max_bytes = max_bytes,
    .encode = encode, .decode = decode,
};
