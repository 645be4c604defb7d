/* ops_map.c — element-wise maps: scale, add, negate, clamp, y = y*s + x (DGC's momentum),
 * TBQ's threshold codes, stochastic rounding to levels (TernGrad, QSGD) and codes back to
 * values through a table. Every operation is rounded on its own (no fused multiply-add), so
 * the AVX2 bodies and the scalar paths (tails, other CPUs) give the same bits. */
#include <math.h>

#include "ops.h"
#include "ops_simd.h"

void ax_op_scale(float *x, size_t n, float s) {
  for (size_t i = 0; i < n; i++) x[i] *= s;
}

void ax_op_add(float *dst, const float *src, size_t n) {
  for (size_t i = 0; i < n; i++) dst[i] += src[i];
}

void ax_op_negate(float *x, size_t n) {
  for (size_t i = 0; i < n; i++) x[i] = -x[i];
}

void ax_op_clamp(float *x, size_t n, float lo, float hi) {
  for (size_t i = 0; i < n; i++) x[i] = x[i] < lo ? lo : x[i] > hi ? hi : x[i];
}

void ax_op_scale_add_scalar(float *y, float s, const float *x, size_t n) {
  for (size_t i = 0; i < n; i++) {
    float t = y[i] * s; /* its own statement: never contracted into an FMA */
    y[i] = t + x[i];
  }
}

void ax_op_scale_add(float *y, float s, const float *x, size_t n) {
  size_t i = 0;
#ifdef AX_SIMD_AVX2
  const __m256 vs = _mm256_set1_ps(s);
  for (; i + 8 <= n; i += 8) {
    __m256 t = _mm256_mul_ps(_mm256_loadu_ps(y + i), vs);
    _mm256_storeu_ps(y + i, _mm256_add_ps(t, _mm256_loadu_ps(x + i)));
  }
#endif
  ax_op_scale_add_scalar(y + i, s, x + i, n - i);
}

/* ---------------------------------------------------------------- TBQ codes */

void ax_op_threshold_codes_scalar(const float *x, size_t n, float tau, uint8_t *codes) {
  for (size_t i = 0; i < n; i++) codes[i] = x[i] >= tau ? 1 : x[i] <= -tau ? 2 : 0;
}

#ifdef AX_SIMD_AVX2
static inline __m256i tbq8(const float *x, __m256 tau, __m256 ntau) {
  __m256 v = _mm256_loadu_ps(x);
  __m256i up = _mm256_castps_si256(_mm256_cmp_ps(v, tau, _CMP_GE_OQ));
  __m256i dn = _mm256_castps_si256(_mm256_cmp_ps(v, ntau, _CMP_LE_OQ));
  /* up and dn exclude each other for tau > 0; for tau <= 0 the scalar path's "x >= tau
   * first" order is kept by masking dn with !up */
  dn = _mm256_andnot_si256(up, dn);
  return _mm256_or_si256(_mm256_and_si256(up, _mm256_set1_epi32(1)),
                         _mm256_and_si256(dn, _mm256_set1_epi32(2)));
}
#endif

void ax_op_threshold_codes(const float *x, size_t n, float tau, uint8_t *codes) {
  size_t i = 0;
#ifdef AX_SIMD_AVX2
  const __m256 t = _mm256_set1_ps(tau), nt = _mm256_set1_ps(-tau);
  for (; i + 32 <= n; i += 32) {
    __m256i b = ax_narrow32(tbq8(x + i, t, nt), tbq8(x + i + 8, t, nt), tbq8(x + i + 16, t, nt),
                            tbq8(x + i + 24, t, nt));
    _mm256_storeu_si256((__m256i *)(codes + i), b);
  }
#endif
  ax_op_threshold_codes_scalar(x + i, n - i, tau, codes + i);
}

/* ---------------------------------------------------------------- stochastic rounding */

static inline uint8_t quantize1(float x, float mul, float u, float lv) {
  float y = x * mul;
  float t = y + u;
  float f = floorf(t);
  f = f > -lv ? f : -lv; /* as _mm256_max_ps(f, -lv): NaN becomes -lv */
  f = f < lv ? f : lv;
  return (uint8_t)((int)f + (int)lv);
}

void ax_op_quantize_scalar(const float *x, size_t n, float mul, int levels, AxCrng r,
                           uint64_t first, uint8_t *codes) {
  float lv = (float)levels;
  for (size_t i = 0; i < n; i++) codes[i] = quantize1(x[i], mul, ax_crng_unit(r, first + i), lv);
}

#ifdef AX_SIMD_AVX2
static inline __m256i quantize8(const float *x, __m256 mul, __m256 lv, __m256 u) {
  __m256 y = _mm256_mul_ps(_mm256_loadu_ps(x), mul);
  __m256 f = _mm256_floor_ps(_mm256_add_ps(y, u));
  f = _mm256_min_ps(_mm256_max_ps(f, _mm256_sub_ps(_mm256_setzero_ps(), lv)), lv);
  return _mm256_cvttps_epi32(_mm256_add_ps(f, lv));
}
#endif

void ax_op_quantize(const float *x, size_t n, float mul, int levels, AxCrng r, uint64_t first,
                    uint8_t *codes) {
  size_t i = 0;
#ifdef AX_SIMD_AVX2
  const __m256 vm = _mm256_set1_ps(mul), lv = _mm256_set1_ps((float)levels);
  for (; i + 32 <= n && (uint32_t)(first + i) <= 0xFFFFFFE0u; i += 32) { /* one high half */
    __m256i a = quantize8(x + i, vm, lv, ax_crng_unitx8(r, first + i));
    __m256i b = quantize8(x + i + 8, vm, lv, ax_crng_unitx8(r, first + i + 8));
    __m256i c = quantize8(x + i + 16, vm, lv, ax_crng_unitx8(r, first + i + 16));
    __m256i d = quantize8(x + i + 24, vm, lv, ax_crng_unitx8(r, first + i + 24));
    _mm256_storeu_si256((__m256i *)(codes + i), ax_narrow32(a, b, c, d));
  }
  /* a block whose indices cross a multiple of 2^32 goes through the scalar path: 32 values */
  if (i + 32 <= n) {
    ax_op_quantize_scalar(x + i, 32, mul, levels, r, first + i, codes + i);
    ax_op_quantize(x + i + 32, n - i - 32, mul, levels, r, first + i + 32, codes + i + 32);
    return;
  }
#endif
  ax_op_quantize_scalar(x + i, n - i, mul, levels, r, first + i, codes + i);
}

/* ---------------------------------------------------------------- codes to values */

void ax_op_lookup_scalar(const uint8_t *codes, size_t n, const float *table, float *out, int add) {
  if (add)
    for (size_t i = 0; i < n; i++) out[i] += table[codes[i]];
  else
    for (size_t i = 0; i < n; i++) out[i] = table[codes[i]];
}

void ax_op_lookup(const uint8_t *codes, size_t n, const float *table, float *out, int add) {
  size_t i = 0;
#ifdef AX_SIMD_AVX2
  for (; i + 8 <= n; i += 8) {
    __m256i idx = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(codes + i)));
    __m256 v = _mm256_i32gather_ps(table, idx, 4);
    if (add) v = _mm256_add_ps(_mm256_loadu_ps(out + i), v);
    _mm256_storeu_ps(out + i, v);
  }
#endif
  ax_op_lookup_scalar(codes + i, n - i, table, out + i, add);
}
