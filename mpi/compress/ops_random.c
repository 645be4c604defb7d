/* ops_random.c — the counter-based generator of src/core/crng.h over ranges: uniform floats
 * (AVX2 eight lanes at a time, the same bits as the scalar path) and rand-k's stratified
 * indices. */
#include "ops.h"
#include "ops_simd.h"

void ax_op_random_unit_scalar(AxCrng r, uint64_t first, size_t n, float *u) {
  for (size_t i = 0; i < n; i++) u[i] = ax_crng_unit(r, first + i);
}

void ax_op_random_unit(AxCrng r, uint64_t first, size_t n, float *u) {
  size_t i = 0;
#ifdef AX_SIMD_AVX2
  for (; i + 8 <= n; i += 8) {
    if (!ax_crng_x8_ok(first + i)) { /* eight indices across a multiple of 2^32 */
      ax_op_random_unit_scalar(r, first + i, 8, u + i);
      continue;
    }
    _mm256_storeu_ps(u + i, ax_crng_unitx8(r, first + i));
  }
#endif
  ax_op_random_unit_scalar(r, first + i, n - i, u + i);
}

void ax_op_random_strata(AxCrng r, size_t n, size_t k, uint32_t *idx) {
  for (size_t j = 0; j < k; j++) {
    uint64_t lo = (uint64_t)j * n / k, hi = (uint64_t)(j + 1) * n / k;
    idx[j] = (uint32_t)(lo + ax_crng_below(r, j, hi - lo));
  }
}
