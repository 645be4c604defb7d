/* codec_common.c — small helpers every codec file may call (kept apart from codec.c, which
 * calls the codecs): the generator of a context's stochastic choices, and scratch memory. */
#include <stdlib.h>

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
