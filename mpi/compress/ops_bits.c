/* ops_bits.c — bit packing (CompLL's concat of uint1/uint2/uint4/uint8 arrays): n codes of
 * `width` bits into ceil(n*width/8) bytes, LSB first, the unused bits of the last byte 0, and
 * back. AVX2 bodies for the packed widths; the scalar paths give the same bytes. */
#include <string.h>

#include "ops.h"
#include "src/core/simd.h"

size_t ax_bits_bytes(size_t n, int width) { return (n / 8) * (size_t)width + ((n % 8) * (size_t)width + 7) / 8; }

void ax_op_pack_scalar(const uint8_t *codes, size_t n, int width, uint8_t *out) {
  if (width == 8) {
    if (n) memcpy(out, codes, n);
    return;
  }
  size_t per = (size_t)(8 / width), nb = ax_bits_bytes(n, width);
  unsigned mask = (1u << width) - 1;
  for (size_t b = 0; b < nb; b++) {
    unsigned byte = 0;
    for (size_t j = 0; j < per && b * per + j < n; j++)
      byte |= (codes[b * per + j] & mask) << (j * (size_t)width);
    out[b] = (uint8_t)byte;
  }
}

#ifdef AX_SIMD_AVX2
/* 32 codes -> 32 / (8 / width) bytes; returns the bytes written. */
static size_t pack32(const uint8_t *codes, int width, uint8_t *out) {
  __m256i v = _mm256_loadu_si256((const __m256i *)codes);
  if (width == 1) {
    uint32_t m = (uint32_t)_mm256_movemask_epi8(_mm256_slli_epi16(v, 7));
    memcpy(out, &m, 4);
    return 4;
  }
  if (width == 4) {
    v = _mm256_and_si256(v, _mm256_set1_epi8(15));
    __m256i t = _mm256_maddubs_epi16(v, _mm256_set1_epi16(16 << 8 | 1)); /* c0 + 16 c1 */
    t = _mm256_permute4x64_epi64(_mm256_packus_epi16(t, t), 0x08);      /* qwords 0, 2 */
    _mm_storeu_si128((__m128i *)out, _mm256_castsi256_si128(t));
    return 16;
  }
  v = _mm256_and_si256(v, _mm256_set1_epi8(3));
  __m256i t = _mm256_maddubs_epi16(v, _mm256_set1_epi16(4 << 8 | 1)); /* c0 + 4 c1 */
  t = _mm256_madd_epi16(t, _mm256_set1_epi32(16 << 16 | 1));          /* + 16 (c2 + 4 c3) */
  const __m256i low = _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                       -1, 0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                       -1, -1);
  t = _mm256_permutevar8x32_epi32(_mm256_shuffle_epi8(t, low), _mm256_setr_epi32(0, 4, 1, 1, 1, 1, 1, 1));
  _mm_storel_epi64((__m128i *)out, _mm256_castsi256_si128(t));
  return 8;
}
#endif

void ax_op_pack(const uint8_t *codes, size_t n, int width, uint8_t *out) {
  size_t i = 0;
#ifdef AX_SIMD_AVX2
  if (width != 8)
    for (; i + 32 <= n; i += 32) out += pack32(codes + i, width, out);
#endif
  ax_op_pack_scalar(codes + i, n - i, width, out);
}

/* ---------------------------------------------------------------- unpack */

static void unpack_scalar(const uint8_t *in, size_t n, int width, uint8_t *codes) {
  unsigned mask = (1u << width) - 1;
  for (size_t i = 0; i < n; i++) {
    size_t bit = i * (size_t)width;
    codes[i] = (uint8_t)((in[bit >> 3] >> (bit & 7)) & mask);
  }
}

#ifdef AX_SIMD_AVX2
/* 16 bytes of 4-bit codes -> 32 codes */
static void unpack4_32(const uint8_t *in, uint8_t *codes) {
  __m128i b = _mm_loadu_si128((const __m128i *)in), m = _mm_set1_epi8(15);
  __m128i lo = _mm_and_si128(b, m), hi = _mm_and_si128(_mm_srli_epi16(b, 4), m);
  _mm_storeu_si128((__m128i *)codes, _mm_unpacklo_epi8(lo, hi));
  _mm_storeu_si128((__m128i *)(codes + 16), _mm_unpackhi_epi8(lo, hi));
}

/* 8 bytes of 2-bit codes -> 32 codes */
static void unpack2_32(const uint8_t *in, uint8_t *codes) {
  __m128i b = _mm_loadl_epi64((const __m128i *)in), m = _mm_set1_epi8(3);
  __m128i c0 = _mm_and_si128(b, m), c1 = _mm_and_si128(_mm_srli_epi16(b, 2), m);
  __m128i c2 = _mm_and_si128(_mm_srli_epi16(b, 4), m), c3 = _mm_and_si128(_mm_srli_epi16(b, 6), m);
  __m128i p01 = _mm_unpacklo_epi8(c0, c1), p23 = _mm_unpacklo_epi8(c2, c3);
  _mm_storeu_si128((__m128i *)codes, _mm_unpacklo_epi16(p01, p23));
  _mm_storeu_si128((__m128i *)(codes + 16), _mm_unpackhi_epi16(p01, p23));
}
#endif

void ax_op_unpack(const uint8_t *in, size_t n, int width, uint8_t *codes) {
  if (width == 8) {
    if (n) memcpy(codes, in, n);
    return;
  }
  size_t i = 0;
#ifdef AX_SIMD_AVX2
  if (width == 4)
    for (; i + 32 <= n; i += 32) unpack4_32(in + i / 2, codes + i);
  if (width == 2)
    for (; i + 32 <= n; i += 32) unpack2_32(in + i / 4, codes + i);
#endif
  unpack_scalar(in + i * (size_t)width / 8, n - i, width, codes + i);
}
