/* ops_simd.h — AVX2 helpers the operators share (internal to mpi/compress/): eight int32 lanes
 * narrowed to bytes, and (from src/core/crng_simd.h) eight lanes of the counter-based
 * generator. */
#ifndef AX_COMPRESS_OPS_SIMD_H
#define AX_COMPRESS_OPS_SIMD_H

#include "src/core/crng_simd.h"

#ifdef AX_SIMD_AVX2
/* 32 int32 values in [0, 255] (four vectors, in order) as 32 bytes. */
static inline __m256i ax_narrow32(__m256i a, __m256i b, __m256i c, __m256i d) {
  __m256i ab = _mm256_packs_epi32(a, b), cd = _mm256_packs_epi32(c, d);
  __m256i bytes = _mm256_packus_epi16(ab, cd);
  return _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}
#endif

#endif
