/* codec_p2p.c — a codec over one link (one sender, one receiver): the message formats and the
 * single-rank run of a linear codec's rounds; see codec.h ("point to point"). */
#include <stdint.h>

#include "codec_impl.h"
#include "src/core/error.h"

size_t ax_codec_p2p_max_bytes(const AxCodec *c, size_t n) { return ax_codec_max_bytes(c, n); }

/* Every round's factor into out, each reduced over the one rank (itself) in place. */
static int encode_linear(const AxCodec *c, AxCodecState *st, const AxCodecCtx *ctx,
                         const float *in, size_t n, float *out, size_t *bytes) {
  size_t at = 0;
  for (int round = 0; round < c->impl->rounds; round++) {
    AX_TRY(ax_codec_factor(c, st, ctx, in, n, round, out + at));
    AX_TRY(ax_codec_factor_reduced(c, st, ctx, n, round, out + at));
    at += ax_codec_factor_len(c, n, round);
  }
  *bytes = at * sizeof(float);
  return AX_OK;
}

int ax_codec_p2p_encode(const AxCodec *c, AxCodecState *st, const AxCodecCtx *ctx,
                        const float *in, size_t n, void *out, size_t *bytes) {
  *bytes = 0;
  if (((uintptr_t)out & 3) != 0)
    return AX_FAIL("codec %s: a link message must be 4-byte aligned", c->impl->name);
  if (!c->impl->rounds) return ax_codec_encode_own(c, st, ctx, in, n, NULL, out, bytes);
  if (!c->impl->rebuild_from)
    return AX_FAIL("codec %s cannot compress a point-to-point link", c->impl->name);
  return encode_linear(c, st, ctx, in, n, out, bytes);
}

int ax_codec_p2p_decode(const AxCodec *c, const AxCodecCtx *ctx, const void *in, size_t bytes,
                        float *out, size_t n) {
  if (!c->impl->rounds) return ax_codec_decode(c, ctx, in, bytes, out, n, 0);
  if (!c->impl->rebuild_from)
    return AX_FAIL("codec %s cannot compress a point-to-point link", c->impl->name);
  if (((uintptr_t)in & 3) != 0)
    return AX_FAIL("codec %s: a link message must be 4-byte aligned", c->impl->name);
  if (bytes != ax_codec_max_bytes(c, n))
    return AX_FAIL("codec %s: a link message of %zu bytes for %zu values (expected %zu)",
                   c->impl->name, bytes, n, ax_codec_max_bytes(c, n));
  return c->impl->rebuild_from(c, ctx, in, n, out);
}
