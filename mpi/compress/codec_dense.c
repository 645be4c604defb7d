/* codec_dense.c — what the fixed-size quantizers (tbq, terngrad, qsgd) share: values to codes
 * to packed bits and back, a stack chunk at a time (no allocation), and their one-float-header
 * format: float scale, then the n codes of `width` bits packed LSB first, zero padded to a
 * whole word. */
#include <string.h>

#include "codec_dense.h"
#include "src/core/error.h"

enum { CHUNK = 4096 }; /* a multiple of 8: every chunk packs into whole bytes */

size_t ax_dense_bytes(size_t n, int width) { return 4 + ax_codec_words(ax_bits_bytes(n, width)); }

void ax_dense_encode(const float *x, size_t n, int width, float header, AxCodeFn codes_of,
                     const void *arg, void *out, size_t *bytes) {
  uint8_t codes[CHUNK], *b = out;
  memcpy(b, &header, 4);
  uint8_t *packed = b + 4;
  for (size_t i = 0; i < n; i += CHUNK) {
    size_t len = n - i < CHUNK ? n - i : CHUNK;
    codes_of(x + i, len, i, arg, codes);
    ax_op_pack(codes, len, width, packed + ax_bits_bytes(i, width));
  }
  size_t used = 4 + ax_bits_bytes(n, width);
  *bytes = ax_dense_bytes(n, width);
  memset(b + used, 0, *bytes - used);
}

int ax_dense_decode(const char *codec, const void *in, size_t bytes, size_t n, int width,
                    float *header) {
  if (bytes != ax_dense_bytes(n, width))
    return AX_FAIL("codec %s: %zu bytes for %zu values (expected %zu)", codec, bytes, n,
                   ax_dense_bytes(n, width));
  memcpy(header, in, 4);
  return AX_OK;
}

void ax_dense_lookup(const void *in, size_t n, int width, const float *table, float *out,
                     int add) {
  const uint8_t *packed = (const uint8_t *)in + 4;
  uint8_t codes[CHUNK];
  for (size_t i = 0; i < n; i += CHUNK) {
    size_t len = n - i < CHUNK ? n - i : CHUNK;
    ax_op_unpack(packed + ax_bits_bytes(i, width), len, width, codes);
    ax_op_lookup(codes, len, table, out + i, add);
  }
}
