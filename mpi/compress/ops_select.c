/* ops_select.c — filter/select: count and list (ascending) the indices where |x| >= thr, and
 * move values between dense arrays and index lists (gather, scatter, scatter-add, zeroing). */
#include <math.h>

#include "ops.h"
#include "src/core/simd.h"

size_t ax_op_count_ge_scalar(const float *x, size_t n, float thr) {
  size_t c = 0;
  for (size_t i = 0; i < n; i++) c += fabsf(x[i]) >= thr;
  return c;
}

size_t ax_op_select_ge_scalar(const float *x, size_t n, float thr, uint32_t *idx, size_t cap) {
  size_t c = 0;
  for (size_t i = 0; i < n; i++)
    if (fabsf(x[i]) >= thr) {
      if (c < cap) idx[c] = (uint32_t)i;
      c++;
    }
  return c;
}

#ifdef AX_SIMD_AVX2
/* Bit j set where |x[j]| >= thr, for x[0..8). */
static inline unsigned mask8(const float *x, __m256 thr) {
  __m256 a = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), _mm256_loadu_ps(x));
  return (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(a, thr, _CMP_GE_OQ));
}
#endif

size_t ax_op_count_ge(const float *x, size_t n, float thr) {
  size_t c = 0, i = 0;
#ifdef AX_SIMD_AVX2
  const __m256 t = _mm256_set1_ps(thr);
  for (; i + 16 <= n; i += 16)
    c += (size_t)__builtin_popcount(mask8(x + i, t) | mask8(x + i + 8, t) << 8);
#endif
  return c + ax_op_count_ge_scalar(x + i, n - i, thr);
}

size_t ax_op_select_ge(const float *x, size_t n, float thr, uint32_t *idx, size_t cap) {
  size_t c = 0, i = 0;
#ifdef AX_SIMD_AVX2
  const __m256 t = _mm256_set1_ps(thr);
  for (; i + 16 <= n; i += 16) {
    unsigned m = mask8(x + i, t) | mask8(x + i + 8, t) << 8;
    for (; m; m &= m - 1, c++)
      if (c < cap) idx[c] = (uint32_t)(i + (size_t)__builtin_ctz(m));
  }
#endif
  for (; i < n; i++)
    if (fabsf(x[i]) >= thr) {
      if (c < cap) idx[c] = (uint32_t)i;
      c++;
    }
  return c;
}

void ax_op_gather(const float *x, const uint32_t *idx, size_t k, float *vals) {
  for (size_t j = 0; j < k; j++) vals[j] = x[idx[j]];
}

void ax_op_scatter(float *out, const uint32_t *idx, const float *vals, size_t k, int add) {
  if (add)
    for (size_t j = 0; j < k; j++) out[idx[j]] += vals[j];
  else
    for (size_t j = 0; j < k; j++) out[idx[j]] = vals[j];
}

void ax_op_zero_at(float *x, const uint32_t *idx, size_t k) {
  for (size_t j = 0; j < k; j++) x[idx[j]] = 0;
}
