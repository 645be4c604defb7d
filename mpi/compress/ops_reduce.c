/* ops_reduce.c — reductions (sum, sum of |x|, sum of squares, max |x|) in the
 * fixed order ops.h defines: 16 double lanes over the whole blocks of 16, a fixed combining
 * tree, then the tail in order. The AVX2 bodies keep the lanes in four __m256d registers; the
 * scalar paths keep them in an array, so both give the same bits. */
#include <math.h>

#include "ops.h"
#include "src/core/simd.h"

enum { LANES = 16 };

/* The combining tree of ops.h over 16 lane sums. */
static double combine16(const double l[LANES]) {
  double c[4];
  for (int j = 0; j < 4; j++) c[j] = (l[j] + l[j + 8]) + (l[j + 4] + l[j + 12]);
  return (c[0] + c[2]) + (c[1] + c[3]);
}

typedef enum { F_ID, F_ABS, F_SQ } Fn;

static inline double apply(Fn f, float x) {
  double d = (double)x;
  return f == F_ID ? d : f == F_ABS ? fabs(d) : d * d;
}

static double reduce_scalar(const float *x, size_t n, Fn f) {
  double l[LANES] = {0};
  size_t i = 0;
  for (; i + LANES <= n; i += LANES)
    for (int j = 0; j < LANES; j++) l[j] += apply(f, x[i + j]);
  double s = combine16(l);
  for (; i < n; i++) s += apply(f, x[i]);
  return s;
}

#ifdef AX_SIMD_AVX2
static inline __m256d apply4(Fn f, __m128 v) {
  __m256d d = _mm256_cvtps_pd(v);
  if (f == F_ABS) return _mm256_andnot_pd(_mm256_set1_pd(-0.0), d);
  if (f == F_SQ) return _mm256_mul_pd(d, d);
  return d;
}

/* The lane sums of the whole blocks, stored into l[16]. */
static size_t reduce_avx2(const float *x, size_t n, Fn f, double l[LANES]) {
  __m256d a0 = _mm256_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;
  size_t i = 0;
  for (; i + LANES <= n; i += LANES) {
    __m256 v0 = _mm256_loadu_ps(x + i), v1 = _mm256_loadu_ps(x + i + 8);
    a0 = _mm256_add_pd(a0, apply4(f, _mm256_castps256_ps128(v0)));
    a1 = _mm256_add_pd(a1, apply4(f, _mm256_extractf128_ps(v0, 1)));
    a2 = _mm256_add_pd(a2, apply4(f, _mm256_castps256_ps128(v1)));
    a3 = _mm256_add_pd(a3, apply4(f, _mm256_extractf128_ps(v1, 1)));
  }
  _mm256_storeu_pd(l, a0);
  _mm256_storeu_pd(l + 4, a1);
  _mm256_storeu_pd(l + 8, a2);
  _mm256_storeu_pd(l + 12, a3);
  return i;
}
#endif

static double reduce(const float *x, size_t n, Fn f) {
#ifdef AX_SIMD_AVX2
  double l[LANES];
  size_t i = reduce_avx2(x, n, f, l);
  double s = combine16(l);
  for (; i < n; i++) s += apply(f, x[i]);
  return s;
#else
  return reduce_scalar(x, n, f);
#endif
}

double ax_op_sum(const float *x, size_t n) { return reduce(x, n, F_ID); }
double ax_op_sum_abs(const float *x, size_t n) { return reduce(x, n, F_ABS); }
double ax_op_sum_sq(const float *x, size_t n) { return reduce(x, n, F_SQ); }
double ax_op_sum_scalar(const float *x, size_t n) { return reduce_scalar(x, n, F_ID); }
double ax_op_sum_abs_scalar(const float *x, size_t n) { return reduce_scalar(x, n, F_ABS); }
double ax_op_sum_sq_scalar(const float *x, size_t n) { return reduce_scalar(x, n, F_SQ); }

/* The maximum does not depend on the order; a NaN makes the result NaN (so a codec scaled by
 * it passes the non-finite input on). */
float ax_op_max_abs(const float *x, size_t n) {
  float m = 0;
  int nan = 0;
  size_t i = 0;
#ifdef AX_SIMD_AVX2
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 m0 = _mm256_setzero_ps(), m1 = m0, u = m0;
  for (; i + 16 <= n; i += 16) {
    __m256 a0 = _mm256_andnot_ps(sign, _mm256_loadu_ps(x + i));
    __m256 a1 = _mm256_andnot_ps(sign, _mm256_loadu_ps(x + i + 8));
    u = _mm256_or_ps(u, _mm256_cmp_ps(a0, a1, _CMP_UNORD_Q)); /* either one NaN */
    m0 = _mm256_max_ps(a0, m0);
    m1 = _mm256_max_ps(a1, m1);
  }
  float l[8];
  _mm256_storeu_ps(l, _mm256_max_ps(m0, m1));
  for (int j = 0; j < 8; j++) m = l[j] > m ? l[j] : m;
  nan = _mm256_movemask_ps(u) != 0;
#endif
  for (; i < n; i++) {
    float a = fabsf(x[i]);
    nan |= a != a;
    m = a > m ? a : m;
  }
  return nan ? NAN : m;
}
