/* crng_simd.h — eight lanes of the counter-based generator of crng.h (AVX2), the same bits as
 * its scalar functions: the compression operators' uniform draws (mpi/compress/ops_random.c)
 * and the CPU backend's dropout masks (src/backend/cpu_kernels.c). Empty where the build has
 * no AVX2; the callers keep the scalar path for that and for eight indices that cross a
 * multiple of 2^32. */
#ifndef AX_CRNG_SIMD_H
#define AX_CRNG_SIMD_H

#include "crng.h"
#include "simd.h"

#ifdef AX_SIMD_AVX2
static inline __m256i ax_fmix32x8(__m256i x) {
  x = _mm256_xor_si256(x, _mm256_srli_epi32(x, 16));
  x = _mm256_mullo_epi32(x, _mm256_set1_epi32((int)0x85EBCA6Bu));
  x = _mm256_xor_si256(x, _mm256_srli_epi32(x, 13));
  x = _mm256_mullo_epi32(x, _mm256_set1_epi32((int)0xC2B2AE35u));
  return _mm256_xor_si256(x, _mm256_srli_epi32(x, 16));
}

/* ax_crng_u32(r, i + j) for j = 0..7, where i's low half is at most 0xFFFFFFF8 (the eight
 * indices share their high half). */
static inline __m256i ax_crng_u32x8(AxCrng r, uint64_t i) {
  uint32_t lo = (uint32_t)i, hi = (uint32_t)(i >> 32);
  __m256i v = _mm256_add_epi32(_mm256_set1_epi32((int)lo), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  v = ax_fmix32x8(_mm256_xor_si256(v, _mm256_set1_epi32((int)r.k0)));
  v = _mm256_xor_si256(v, _mm256_set1_epi32((int)(r.k1 + hi * 0x9E3779B9u)));
  return ax_fmix32x8(v);
}

/* Whether ax_crng_u32x8 may start at index i. */
static inline int ax_crng_x8_ok(uint64_t i) { return (uint32_t)i <= 0xFFFFFFF8u; }

/* ax_crng_unit of the eight lanes. */
static inline __m256 ax_crng_unitx8(AxCrng r, uint64_t i) {
  __m256i h = _mm256_srli_epi32(ax_crng_u32x8(r, i), 8);
  return _mm256_mul_ps(_mm256_cvtepi32_ps(h), _mm256_set1_ps(1.0f / 16777216.0f));
}

/* All ones in the lanes whose draw is at least `threshold` (unsigned), zeros elsewhere. */
static inline __m256i ax_crng_at_leastx8(__m256i draw, uint32_t threshold) {
  return _mm256_cmpeq_epi32(_mm256_max_epu32(draw, _mm256_set1_epi32((int)threshold)), draw);
}
#endif

#endif
