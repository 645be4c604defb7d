/* codec_sparse.c — what the sparsifiers (dgc, graddrop, topk) share: the kept count of a
 * ratio, the (index, value) format — uint32 count, count uint32 indices ascending, count float
 * values: 4 + 8*count bytes — and the selection by a sampled threshold (DGC's). */
#include <float.h>
#include <math.h>
#include <string.h>
#include <stdlib.h>

#include "codec_impl.h"
#include "src/core/error.h"

size_t ax_sparse_keep(double ratio, size_t n) {
  if (n == 0) return 0;
  double want = ratio * (double)n;
  size_t k = (size_t)want;
  if ((double)k < want * (1 - 1e-12)) k++; /* ceil, forgiving the rounding of ratio * n */
  return k < 1 ? 1 : k > n ? n : k;
}

size_t ax_sparse_finish(const float *x, size_t count, void *out) {
  uint32_t *words = out, c32 = (uint32_t)count;
  words[0] = c32;
  ax_op_gather(x, words + 1, count, (float *)(words + 1 + count));
  return ax_sparse_bytes(count);
}

int ax_sparse_decode(const char *codec, const void *in, size_t bytes, float *out, size_t n,
                     int add) {
  const uint32_t *words = in;
  if (bytes < 4) return AX_FAIL("codec %s: %zu bytes, no count", codec, bytes);
  size_t count = words[0];
  if (count > n || bytes != ax_sparse_bytes(count))
    return AX_FAIL("codec %s: %zu bytes holding %zu pairs for %zu values", codec, bytes, count,
                   n);
  const uint32_t *idx = words + 1;
  for (size_t j = 0; j < count; j++)
    if (idx[j] >= n || (j && idx[j] <= idx[j - 1]))
      return AX_FAIL("codec %s: index %u at pair %zu out of order or range", codec, idx[j], j);
  if (!add && n) memset(out, 0, n * sizeof *out);
  ax_op_scatter(out, idx, (const float *)(idx + count), count, 1);
  return AX_OK;
}

size_t ax_sparse_sample_size(size_t n) {
  size_t s = 4096 + n / 128;
  return s < n ? s : n;
}

int ax_sparse_select_sampled(const float *x, size_t n, size_t keep, size_t cap, AxCrng r,
                             AxCodecState *st, uint32_t *idx, size_t *count) {
  *count = 0;
  if (n == 0 || keep == 0) return AX_OK;
  size_t s = ax_sparse_sample_size(n);
  void *owned;
  float *sample = ax_codec_scratch(st, s * sizeof(float), &owned);
  if (!sample) return AX_ERR;
  float thr = ax_op_sample_threshold(x, n, keep, r, s, 0.0, sample);
  free(owned);
  if (!(thr >= FLT_TRUE_MIN)) thr = FLT_TRUE_MIN; /* zeros (and NaN) are never worth sending */
  *count = ax_op_select_ge(x, n, thr, idx, cap);
  if (*count <= cap) return AX_OK;
  *count = cap; /* too many reached the estimate: the exact top cap */
  return ax_op_topk(x, n, cap, r, idx, NULL, 0);
}
