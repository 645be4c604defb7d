/* backprop_compress.c — compressed backward messages of the pipeline (Optimus-CC §5): the
 * codec's spec, the epilogue rule, the sender's link state; see backprop_compress.h. */
#include "backprop_compress.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/error.h"

enum { DEFAULT_RANK = 16 };

int ax_backprop_codec(const char *spec, size_t cols, int lazy_error, AxCodec **out) {
  *out = NULL;
  AxCodec *given;
  if (ax_codec_parse(spec, &given) != AX_OK) return ax_error_context("--compress-backprop");
  int powersgd = strcmp(ax_codec_name(given), "powersgd") == 0;
  ax_codec_free(given);
  if (!powersgd)
    return AX_FAIL("--compress-backprop '%s': the pipeline's backward messages are compressed "
                   "with powersgd (Optimus-CC), e.g. powersgd:rank=16", spec);
  if (ax_codec_spec_has(spec, "cols") || ax_codec_spec_has(spec, "ef"))
    return AX_FAIL("--compress-backprop '%s': cols is the hidden size and ef is --lazy-error; "
                   "give only rank", spec);
  char keys[96], full[192];
  snprintf(keys, sizeof keys, "rank=%d,cols=%zu,ef=%d", DEFAULT_RANK, cols, lazy_error ? 1 : 0);
  if (ax_codec_spec_defaults(spec, keys, full, sizeof full, NULL, 0) != AX_OK ||
      ax_codec_parse(full, out) != AX_OK)
    return ax_error_context("--compress-backprop");
  return AX_OK;
}

int ax_backprop_compressed(int from, int P, int mb, int n_micro, int epilogue_only) {
  if (from < 1 || from >= P || mb < 0 || mb >= n_micro) return 0;
  if (!epilogue_only) return 1;
  return mb >= n_micro - (P - from); /* the last P - 1 - (from - 1) micro-batches */
}

int ax_backprop_message_compressed(const AxBackprop *b, int from, int mb, int n_micro) {
  return b && b->enabled && ax_backprop_compressed(from, b->P, mb, n_micro, b->epilogue_only);
}

int ax_backprop_init(AxBackprop *b, AxCodec *codec, AxBackend *be, int stage, int P, size_t n,
                     int epilogue_only, uint64_t seed) {
  *b = (AxBackprop){.codec = codec, .stage = stage, .P = P, .epilogue_only = epilogue_only,
                    .enabled = 1, .n = n, .seed = seed, .be = be};
  b->staged = ax_malloc(n * sizeof *b->staged);
  b->decoded = ax_malloc(n * sizeof *b->decoded);
  b->msg = ax_malloc(ax_backprop_max_bytes(b));
  int rc = b->staged && b->decoded && b->msg ? AX_OK : AX_ERR;
  if (rc == AX_OK && stage > 0) rc = ax_codec_state_new(codec, n, &b->link);
  if (rc != AX_OK) ax_backprop_free(b);
  return rc;
}

void ax_backprop_free(AxBackprop *b) {
  ax_codec_state_free(b->link);
  ax_codec_free(b->codec);
  free(b->staged);
  free(b->decoded);
  free(b->msg);
  memset(b, 0, sizeof *b);
}

size_t ax_backprop_max_bytes(const AxBackprop *b) { return ax_codec_p2p_max_bytes(b->codec, b->n); }

static AxCodecCtx link_ctx(const AxBackprop *b, int from) {
  return (AxCodecCtx){.seed = b->seed, .step = b->step, .range = (uint64_t)from};
}

int ax_backprop_encode(AxBackprop *b, const void *src, const void **msg, size_t *bytes) {
  if (!b->link) return AX_FAIL("internal: stage %d has no link to compress into", b->stage);
  AX_TRY(b->be->ops->copy(b->be, b->staged, src, b->n * sizeof(float), AX_COPY_D2H,
                          AX_STREAM_COMPUTE));
  AX_TRY(b->be->ops->sync(b->be, AX_STREAM_COMPUTE));
  AxCodecCtx ctx = link_ctx(b, b->stage);
  AX_TRY(ax_codec_p2p_encode(b->codec, b->link, &ctx, b->staged, b->n, b->msg, bytes));
  *msg = b->msg;
  return AX_OK;
}

int ax_backprop_decode(AxBackprop *b, const void *msg, size_t bytes, AxMemKind mem,
                       const float **out) {
  if (bytes > ax_backprop_max_bytes(b))
    return AX_FAIL("stage %d: a compressed gradient of %zu bytes (at most %zu)", b->stage, bytes,
                   ax_backprop_max_bytes(b));
  if (mem == AX_MEM_DEVICE) { /* CUDA-aware buffers: the codec reads host memory */
    AX_TRY(b->be->ops->copy(b->be, b->msg, msg, bytes, AX_COPY_D2H, AX_STREAM_COMPUTE));
    AX_TRY(b->be->ops->sync(b->be, AX_STREAM_COMPUTE));
    msg = b->msg;
  }
  AxCodecCtx ctx = link_ctx(b, b->stage + 1);
  AX_TRY(ax_codec_p2p_decode(b->codec, &ctx, msg, bytes, b->decoded, b->n));
  *out = b->decoded;
  return AX_OK;
}

void ax_backprop_rescale(AxBackprop *b, float factor) { ax_codec_state_rescale(b->link, factor); }

size_t ax_backprop_state_bytes(const AxBackprop *b) {
  return b->link ? ax_codec_state_bytes(b->link) : 0;
}

int ax_backprop_state_save(const AxBackprop *b, void *buf) {
  return b->link ? ax_codec_state_save(b->link, buf) : AX_OK;
}

int ax_backprop_state_load(AxBackprop *b, const void *buf, size_t bytes) {
  if (!b->link) return bytes ? AX_FAIL("stage 0 has no backward link state to load") : AX_OK;
  return ax_codec_state_load(b->link, buf, bytes);
}
