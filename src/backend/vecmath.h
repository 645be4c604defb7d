/* vecmath.h — fast exp and tanh for the CPU kernels: an AVX2+FMA version of 8 lanes and a
 * scalar version of the same polynomials (Cephes coefficients, about 2 ulp), so the tail of an
 * array and machines without AVX2 get the same values as the vector lanes. */
#ifndef AX_VECMATH_H
#define AX_VECMATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "src/core/simd.h"

#define AX_EXP_HI 88.3762626647949f
#define AX_EXP_LO (-87.3365447504019f)
#define AX_LOG2E 1.44269504088896341f
#define AX_LN2_HI 0.693359375f
#define AX_LN2_LO (-2.12194440e-4f)

static inline float ax_expf(float x) {
  if (x != x) return x; /* NaN stays NaN (and never reaches the integer conversion below) */
  x = x > AX_EXP_HI ? AX_EXP_HI : x < AX_EXP_LO ? AX_EXP_LO : x;
  float n = nearbyintf(x * AX_LOG2E);
  float r = fmaf(-n, AX_LN2_HI, x);
  r = fmaf(-n, AX_LN2_LO, r);
  float p = 1.9875691500E-4f;
  p = fmaf(p, r, 1.3981999507E-3f);
  p = fmaf(p, r, 8.3334519073E-3f);
  p = fmaf(p, r, 4.1665795894E-2f);
  p = fmaf(p, r, 1.6666665459E-1f);
  p = fmaf(p, r, 5.0000001201E-1f);
  p = fmaf(p, r * r, r + 1.0f);
  int32_t bits = ((int32_t)n + 127) << 23;
  float scale;
  memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

static inline float ax_tanhf(float x) {
  float ax = fabsf(x);
  if (ax < 0.625f) {
    float z = x * x, p = -5.70498872745E-3f;
    p = fmaf(p, z, 2.06390887954E-2f);
    p = fmaf(p, z, -5.37397155531E-2f);
    p = fmaf(p, z, 1.33314422036E-1f);
    p = fmaf(p, z, -3.33332819422E-1f);
    return fmaf(p * z, x, x);
  }
  float t = ax_expf(-2.0f * ax), y = (1.0f - t) / (1.0f + t);
  return x < 0 ? -y : y;
}

#ifdef AX_SIMD_AVX2
static inline __m256 ax_exp8(__m256 x) {
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(AX_EXP_LO)), _mm256_set1_ps(AX_EXP_HI));
  __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(AX_LOG2E)),
                             _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(AX_LN2_HI), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(AX_LN2_LO), r);
  __m256 p = _mm256_set1_ps(1.9875691500E-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507E-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073E-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894E-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459E-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201E-1f));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)),
                                23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

static inline __m256 ax_tanh8(__m256 x) {
  const __m256 sign_mask = _mm256_set1_ps(-0.0f);
  __m256 ax = _mm256_andnot_ps(sign_mask, x);
  /* small |x|: odd polynomial */
  __m256 z = _mm256_mul_ps(x, x), p = _mm256_set1_ps(-5.70498872745E-3f);
  p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(2.06390887954E-2f));
  p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(-5.37397155531E-2f));
  p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(1.33314422036E-1f));
  p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(-3.33332819422E-1f));
  __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(p, z), x, x);
  /* large |x|: (1 - e^{-2|x|}) / (1 + e^{-2|x|}) with the sign of x */
  __m256 t = ax_exp8(_mm256_mul_ps(ax, _mm256_set1_ps(-2.0f)));
  __m256 one = _mm256_set1_ps(1.0f);
  __m256 big = _mm256_div_ps(_mm256_sub_ps(one, t), _mm256_add_ps(one, t));
  big = _mm256_or_ps(big, _mm256_and_ps(x, sign_mask));
  __m256 is_small = _mm256_cmp_ps(ax, _mm256_set1_ps(0.625f), _CMP_LT_OQ);
  return _mm256_blendv_ps(big, small, is_small);
}

static inline float ax_hsum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

static inline float ax_hmax8(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
#endif

/* Without AVX2 but with a fused multiply-add (aarch64, POWER: __FP_FAST_FMAF), the row
 * reductions of cpu_kernels.c keep 8 running lanes in plain C, lane j over elements j, j + 8,
 * ..., fused as the AVX2 body fuses, and combine them in ax_hsum8's and ax_hmax8's order: the
 * same sums as the x86 build, bit for bit, and loops the compiler turns into NEON or VSX (a
 * sequential float sum cannot be vectorized without reassociating it). */
#if !defined(AX_SIMD_AVX2) && defined(__FP_FAST_FMAF)
#define AX_SIMD_LANES8 1
static inline float ax_lanes8_sum(const float l[8]) {
  float s0 = l[0] + l[4], s1 = l[1] + l[5], s2 = l[2] + l[6], s3 = l[3] + l[7];
  return (s0 + s2) + (s1 + s3);
}

/* a > b ? a : b, as _mm256_max_ps picks (the second operand where either is NaN) */
static inline float ax_max_ps(float a, float b) { return a > b ? a : b; }

static inline float ax_lanes8_max(const float l[8]) {
  float s0 = ax_max_ps(l[0], l[4]), s1 = ax_max_ps(l[1], l[5]);
  float s2 = ax_max_ps(l[2], l[6]), s3 = ax_max_ps(l[3], l[7]);
  return ax_max_ps(ax_max_ps(s0, s2), ax_max_ps(s1, s3));
}
#endif

#endif
