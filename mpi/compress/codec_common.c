/* codec_common.c — small helpers every codec file may call (kept apart from codec.c, which
 * calls the codecs): the generator of a context's stochastic choices, scratch memory, and the
 * momentum a codec carries for the optimizer. */
#include <stdlib.h>
#include <string.h>

#include "codec_impl.h"
#include "src/core/error.h"

AxCrng ax_codec_rng(const AxCodecCtx *ctx, uint64_t stream) {
  return ax_crng_key(ctx->seed, ctx->step, ax_crng_mix64(ctx->range) ^ stream);
}

void *ax_codec_scratch(AxCodecState *st, size_t bytes, void **owned) {
  *owned = NULL;
  if (st && st->scratch_bytes >= bytes) return st->scratch;
  *owned = ax_malloc(bytes ? bytes : 1);
  return *owned;
}

void ax_codec_momentum_step(const AxCodec *c, float *u, float *g, size_t n) {
  ax_op_scale(g, n, (float)(1.0 - c->p.momentum));
  ax_op_scale_add(u, (float)c->p.momentum, g, n);
  memcpy(g, u, n * sizeof *g);
}
