/* reduce_local.c — vectorized element-wise sums for the collectives; see reduce_local.h. */
#include "reduce_local.h"

#include "src/core/bf16.h"
#include "src/core/bf16_simd.h"
#include "src/core/fp16.h"

/* Each vector helper handles a prefix of the arrays and returns how many elements it did. */
#ifdef AX_SIMD_AVX512
static size_t sum_f32_avx512(float *dst, const float *a, const float *b, size_t n) {
  size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    __m512 x0 = _mm512_add_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i));
    __m512 x1 = _mm512_add_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16));
    __m512 x2 = _mm512_add_ps(_mm512_loadu_ps(a + i + 32), _mm512_loadu_ps(b + i + 32));
    __m512 x3 = _mm512_add_ps(_mm512_loadu_ps(a + i + 48), _mm512_loadu_ps(b + i + 48));
    _mm512_storeu_ps(dst + i, x0);
    _mm512_storeu_ps(dst + i + 16, x1);
    _mm512_storeu_ps(dst + i + 32, x2);
    _mm512_storeu_ps(dst + i + 48, x3);
  }
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(dst + i, _mm512_add_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i)));
  return i;
}

static size_t sum_bf16_avx512(uint16_t *dst, const uint16_t *a, const uint16_t *b, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 x = ax_bf16x16_to_f32(_mm256_loadu_si256((const __m256i *)(a + i)));
    __m512 y = ax_bf16x16_to_f32(_mm256_loadu_si256((const __m256i *)(b + i)));
    _mm256_storeu_si256((__m256i *)(dst + i), ax_f32x16_to_bf16(_mm512_add_ps(x, y)));
  }
  return i;
}
#endif

#ifdef AX_SIMD_AVX2
static size_t sum_f32_avx2(float *dst, const float *a, const float *b, size_t n) {
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __m256 x0 = _mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i));
    __m256 x1 = _mm256_add_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8));
    __m256 x2 = _mm256_add_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16));
    __m256 x3 = _mm256_add_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24));
    _mm256_storeu_ps(dst + i, x0);
    _mm256_storeu_ps(dst + i + 8, x1);
    _mm256_storeu_ps(dst + i + 16, x2);
    _mm256_storeu_ps(dst + i + 24, x3);
  }
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, _mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
  return i;
}

static size_t sum_bf16_avx2(uint16_t *dst, const uint16_t *a, const uint16_t *b, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 x = ax_bf16x8_to_f32(_mm_loadu_si128((const __m128i *)(a + i)));
    __m256 y = ax_bf16x8_to_f32(_mm_loadu_si128((const __m128i *)(b + i)));
    _mm_storeu_si128((__m128i *)(dst + i), ax_f32x8_to_bf16(_mm256_add_ps(x, y)));
  }
  return i;
}
#endif

void ax_reduce_sum_f32(float *dst, const float *a, const float *b, size_t n) {
  size_t i = 0;
#ifdef AX_SIMD_AVX512
  i = sum_f32_avx512(dst, a, b, n);
#endif
#ifdef AX_SIMD_AVX2
  i += sum_f32_avx2(dst + i, a + i, b + i, n - i);
#endif
  for (; i < n; i++) dst[i] = a[i] + b[i];
}

void ax_reduce_sum_bf16(uint16_t *dst, const uint16_t *a, const uint16_t *b, size_t n) {
  size_t i = 0;
#ifdef AX_SIMD_AVX512
  i = sum_bf16_avx512(dst, a, b, n);
#endif
#ifdef AX_SIMD_AVX2
  i += sum_bf16_avx2(dst + i, a + i, b + i, n - i);
#endif
  for (; i < n; i++) dst[i] = ax_f32_to_bf16(ax_bf16_to_f32(a[i]) + ax_bf16_to_f32(b[i]));
}

void ax_reduce_sum_f16(uint16_t *dst, const uint16_t *a, const uint16_t *b, size_t n) {
  for (size_t i = 0; i < n; i++) dst[i] = ax_f32_to_f16(ax_f16_to_f32(a[i]) + ax_f16_to_f32(b[i]));
}

void ax_reduce_add_f32(float *dst, const float *src, size_t n) {
  ax_reduce_sum_f32(dst, dst, src, n);
}

void ax_reduce_add_bf16(uint16_t *dst, const uint16_t *src, size_t n) {
  ax_reduce_sum_bf16(dst, dst, src, n);
}

void ax_reduce_add_f16(uint16_t *dst, const uint16_t *src, size_t n) {
  ax_reduce_sum_f16(dst, dst, src, n);
}
