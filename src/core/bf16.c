/* bf16.c — bfloat16 conversions (scalar, AVX2, AVX-512); see bf16.h. */
#include "bf16.h"

#include <string.h>

#include "bf16_simd.h"

uint16_t ax_f32_to_bf16(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u); /* quiet NaN */
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

float ax_bf16_to_f32(uint16_t x) {
  uint32_t u = (uint32_t)x << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

void ax_f32_to_bf16_array(uint16_t *dst, const float *src, size_t n) {
  size_t i = 0;
#ifdef AX_SIMD_AVX512
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256((__m256i *)(dst + i), ax_f32x16_to_bf16(_mm512_loadu_ps(src + i)));
#endif
#ifdef AX_SIMD_AVX2
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128((__m128i *)(dst + i), ax_f32x8_to_bf16(_mm256_loadu_ps(src + i)));
#endif
  for (; i < n; i++) dst[i] = ax_f32_to_bf16(src[i]);
}

void ax_bf16_to_f32_array(float *dst, const uint16_t *src, size_t n) {
  size_t i = 0;
#ifdef AX_SIMD_AVX512
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(dst + i, ax_bf16x16_to_f32(_mm256_loadu_si256((const __m256i *)(src + i))));
#endif
#ifdef AX_SIMD_AVX2
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, ax_bf16x8_to_f32(_mm_loadu_si128((const __m128i *)(src + i))));
#endif
  for (; i < n; i++) dst[i] = ax_bf16_to_f32(src[i]);
}
