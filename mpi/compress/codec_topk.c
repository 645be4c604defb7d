/* codec_topk.c — top-k: exactly the k largest |x| (ties to the lower index, NaN as the
 * smallest; ax_op_topk), the rest 0. Keys: ratio (default 0.01: k = ceil(ratio * n), at least 1)
 * or k (at most n is kept), not both; ef (default 0). Format: the sparse pairs (codec_impl.h),
 * exactly 4 + 8k bytes. Its state (also without ef) holds the selection's working memory, so
 * encoding with it allocates nothing. */
#include "codec_impl.h"
#include "src/core/error.h"

static void defaults(AxCodecParams *p) { p->ratio = 0.01, p->k = 0, p->ef = 0; }

static size_t keep_of(const AxCodec *c, size_t n) {
  if (!c->p.k) return ax_sparse_keep(c->p.ratio, n);
  return c->p.k < n ? c->p.k : n;
}

static size_t max_bytes(const AxCodec *c, size_t n) { return ax_sparse_bytes(keep_of(c, n)); }

static size_t scratch_bytes(const AxCodec *c, size_t n) {
  return ax_op_topk_scratch(n, keep_of(c, n));
}

static int encode(const AxCodec *c, AxCodecState *st, const AxCodecCtx *ctx, const float *x,
                  size_t n, void *out, size_t *bytes) {
  (void)st;
  size_t k = keep_of(c, n);
  AX_TRY(ax_op_topk(x, n, k, ax_codec_rng(ctx, AX_CRNG_SAMPLE), (uint32_t *)out + 1,
                    st ? st->scratch : NULL, st ? st->scratch_bytes : 0));
  *bytes = ax_sparse_finish(x, k, out);
  return AX_OK;
}

static int decode(const AxCodec *c, const void *in, size_t bytes, float *out, size_t n, int add) {
  return ax_sparse_decode(c->impl->name, in, bytes, out, n, add);
}

const AxCodecImpl ax_codec_topk = {
    .name = "topk", .keys = "ratio,k,ef", .defaults = defaults, .max_bytes = max_bytes,
    .scratch_bytes = scratch_bytes, .encode = encode, .decode = decode,
};
