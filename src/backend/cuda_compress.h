/* cuda_compress.h — the gradient-compression operators of mpi/compress/ops.h as CUDA kernels
 * (src/backend/cuda_compress.cu), for codecs that encode and decode on the GPU. Every pointer is
 * device memory (scalars and keys are passed by value); every launcher enqueues on `s` and
 * returns the launch status (cudaSuccess or the error). Only compiled where nvcc is found.
 *
 * Results, against the host operators of the same name (ax_op_*):
 *  - element-wise ones (pack/unpack, sign pack bits, sign unpack, threshold codes, quantize,
 *    lookup, random units, gather/scatter, scale/add/scale_add) give the same bits: the same
 *    comparisons and one rounding per operation (no multiply-add contraction); quantize and
 *    random units use the same counter-based values, ax_crng_unit(r, first + i);
 *  - counts and selected indices are exact (indices ascending, as the host writes them);
 *  - sums (sum, sum|x|, sum x^2, the sign statistics' sums) use double accumulators in a fixed
 *    order of their own (AXC_PARTIALS block partials, each a tree over its threads, then a
 *    tree over the partials): reruns give the same bits, but not the host's exact-order
 *    result; they agree to about 1e-12 relative. max |x| is exact (NaN when any x is NaN).
 * Scatter expects distinct indices (as select and top-k give them). */
#ifndef AX_CUDA_COMPRESS_H
#define AX_CUDA_COMPRESS_H

#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

#include "src/core/crng.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Blocks of the reductions: scratch of this many partials (doubles, floats or AxcSignStats). */
enum { AXC_PARTIALS = 256 };
/* Scratch of count_ge / select_ge: this many unsigned long longs. */
enum { AXC_SELECT_SCRATCH = 1024 };

typedef enum { AXC_SUM = 0, AXC_SUM_ABS = 1, AXC_SUM_SQ = 2 } AxcSumKind;

/* The statistics of ax_op_sign_pack (AxSignStats), with fixed-width counts. */
typedef struct {
  double sum_pos, sum_neg; /* sums of the x >= 0 and of the x < 0 */
  unsigned long long n_pos, n_neg;
} AxcSignStats;

/* ---------------------------------------------------------------- reduce */

/* *out = sum of x, |x| or x^2 over n (double); partials: AXC_PARTIALS doubles of scratch. */
cudaError_t axc_sum(cudaStream_t s, AxcSumKind kind, const float *x, size_t n, double *partials,
                    double *out);
/* *out = max |x| (NaN when any x is NaN, 0 for n = 0); partials: AXC_PARTIALS floats. */
cudaError_t axc_max_abs(cudaStream_t s, const float *x, size_t n, float *partials, float *out);

/* ---------------------------------------------------------------- map */

cudaError_t axc_scale(cudaStream_t s, float *x, size_t n, float sc);                /* x *= sc */
cudaError_t axc_add(cudaStream_t s, float *dst, const float *src, size_t n);       /* dst += src */
cudaError_t axc_scale_add(cudaStream_t s, float *y, float sc, const float *x, size_t n);
/* TBQ: code 1 where x >= tau, 2 where x <= -tau, else 0 */
cudaError_t axc_threshold_codes(cudaStream_t s, const float *x, size_t n, float tau,
                                uint8_t *codes);
/* ax_op_quantize: codes = clamp(floor(x*mul + u_i), -L, L) + L, u_i = ax_crng_unit(r, first+i) */
cudaError_t axc_quantize(cudaStream_t s, const float *x, size_t n, float mul, int levels,
                         AxCrng r, uint64_t first, uint8_t *codes);
/* out[i] = table[codes[i]] (add: +=); table: 256 floats at most, device memory */
cudaError_t axc_lookup(cudaStream_t s, const uint8_t *codes, size_t n, const float *table,
                       float *out, int add);
/* u[i] = ax_crng_unit(r, first + i) */
cudaError_t axc_random_unit(cudaStream_t s, AxCrng r, uint64_t first, size_t n, float *u);

/* ---------------------------------------------------------------- bits */

/* n codes of width 1, 2, 4 or 8 bits into ax_bits_bytes(n, width) bytes, LSB first, the unused
 * bits of the last byte 0 (codes are masked to the width); and back. */
cudaError_t axc_pack(cudaStream_t s, const uint8_t *codes, size_t n, int width, uint8_t *out);
cudaError_t axc_unpack(cudaStream_t s, const uint8_t *in, size_t n, int width, uint8_t *codes);

/* ---------------------------------------------------------------- signs */

/* Bit i = (x[i] >= 0), ceil(n/8) bytes, and (stats non-NULL) the sign statistics into
 * *stats; partials: AXC_PARTIALS AxcSignStats of scratch (unused when stats is NULL). */
cudaError_t axc_sign_pack(cudaStream_t s, const float *x, size_t n, uint8_t *bits,
                          AxcSignStats *partials, AxcSignStats *stats);
/* out[i] = bit i ? pos : neg (add: +=) */
cudaError_t axc_sign_unpack(cudaStream_t s, const uint8_t *bits, size_t n, float neg, float pos,
                            float *out, int add);

/* ---------------------------------------------------------------- select */

/* *count = the number of |x[i]| >= thr (NaN never counts); n <= UINT32_MAX.
 * scratch: AXC_SELECT_SCRATCH unsigned long longs. */
cudaError_t axc_count_ge(cudaStream_t s, const float *x, size_t n, float thr,
                         unsigned long long *scratch, unsigned long long *count);
/* The same, and their indices ascending: the first min(count, cap) into idx. */
cudaError_t axc_select_ge(cudaStream_t s, const float *x, size_t n, float thr, uint32_t *idx,
                          size_t cap, unsigned long long *scratch, unsigned long long *count);
/* vals[j] = x[idx[j]] */
cudaError_t axc_gather(cudaStream_t s, const float *x, const uint32_t *idx, size_t k, float *vals);
/* out[idx[j]] = vals[j] (add: +=); idx distinct */
cudaError_t axc_scatter(cudaStream_t s, float *out, const uint32_t *idx, const float *vals,
                        size_t k, int add);

#ifdef __cplusplus
}
#endif

#endif
