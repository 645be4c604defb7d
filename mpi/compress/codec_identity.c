/* codec_identity.c — identity: the encoded range is the raw fp32 values (4n bytes), decoded
 * exactly. Keys: ef (default 0; with nothing lost the residual stays 0). */
#include <string.h>

#include "codec_impl.h"
#include "src/core/error.h"

static void defaults(AxCodecParams *p) { p->ef = 0; }

static size_t max_bytes(const AxCodec *c, size_t n) {
  (void)c;
  return 4 * n;
}

static int encode(const AxCodec *c, AxCodecState *st, const AxCodecCtx *ctx, const float *x,
                  size_t n, void *out, size_t *bytes) {
  (void)c, (void)st, (void)ctx;
  if (n) memcpy(out, x, 4 * n);
  *bytes = 4 * n;
  return AX_OK;
}

static int decode(const AxCodec *c, const void *in, size_t bytes, float *out, size_t n, int add) {
  (void)c;
  if (bytes != 4 * n) return AX_FAIL("codec identity: %zu bytes for %zu values", bytes, n);
  if (add) ax_op_add(out, in, n);
  else if (n) memcpy(out, in, 4 * n);
  return AX_OK;
}

const AxCodecImpl ax_codec_identity = {
    .name = "identity", .keys = "ef", .defaults = defaults, .max_bytes = max_bytes,
    .encode = encode, .decode = decode,
};
