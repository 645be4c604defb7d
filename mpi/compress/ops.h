/* ops.h — the common operators the codecs are composed of (HiPress §4.2, CompLL's library:
 * map, reduce, filter/select, sort (top-k), random, concat (bit packing)), on host memory.
 * Plain C (no MPI); every codec in codec_*.c is a short composition of these.
 *
 * Every operator is deterministic: its result depends only on its arguments (never on the
 * machine's vector width or threads). Vectorized ones (AVX2, src/core/simd.h) have a scalar
 * path with the same results, public here as *_scalar so the tests compare the two on lengths
 * that exercise vector bodies and tails. Sums are exact-order definitions, not "some order":
 * double accumulators in 16 lanes, lane j taking the elements i = j (mod 16) of the leading
 * whole blocks of 16, combined as ((l0 + l8) + (l4 + l12)) + ((l2 + l10) + (l6 + l14)) + ...
 * (see ops_reduce.c), then the tail added in order.
 *
 * Conventions: "positive" means x >= 0 (so -0 and 0 are positive, NaN is neither); packed
 * values are stored LSB first (value i occupies bits [i*w, (i+1)*w) of the byte stream);
 * indices are uint32 (ranges of at most 2^32 - 1 values), written in ascending order. */
#ifndef AX_COMPRESS_OPS_H
#define AX_COMPRESS_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "src/core/crng.h"

/* ---------------------------------------------------------------- reduce (ops_reduce.c) */

double ax_op_sum(const float *x, size_t n);
double ax_op_sum_abs(const float *x, size_t n);
double ax_op_sum_sq(const float *x, size_t n);
/* max |x| (NaN when any x is NaN; 0 for n = 0) */
float ax_op_max_abs(const float *x, size_t n);


double ax_op_sum_scalar(const float *x, size_t n);
double ax_op_sum_abs_scalar(const float *x, size_t n);
double ax_op_sum_sq_scalar(const float *x, size_t n);

/* ---------------------------------------------------------------- map (ops_map.c) */

void ax_op_scale(float *x, size_t n, float s);                 /* x *= s */
void ax_op_add(float *dst, const float *src, size_t n);        /* dst += src */
void ax_op_negate(float *x, size_t n);                         /* x = -x */
void ax_op_clamp(float *x, size_t n, float lo, float hi);      /* NaN stays NaN */
void ax_op_scale_add(float *y, float s, const float *x, size_t n); /* y = y*s + x (2 roundings) */
/* TBQ's map: code 1 where x >= tau, 2 where x <= -tau, else 0 */
void ax_op_threshold_codes(const float *x, size_t n, float tau, uint8_t *codes);
/* Stochastic rounding to the integer levels -L..L (L in [1, 127]):
 * codes[i] = clamp(floor(x[i]*mul + u_i), -L, L) + L, u_i = ax_crng_unit(r, first + i), each
 * operation rounded separately (no fused multiply-add). E[code - L] = x*mul inside [-L, L]. */
void ax_op_quantize(const float *x, size_t n, float mul, int levels, AxCrng r, uint64_t first,
                    uint8_t *codes);
/* out[i] = table[codes[i]] (add: out[i] += table[codes[i]]) */
void ax_op_lookup(const uint8_t *codes, size_t n, const float *table, float *out, int add);

void ax_op_scale_add_scalar(float *y, float s, const float *x, size_t n);
void ax_op_threshold_codes_scalar(const float *x, size_t n, float tau, uint8_t *codes);
void ax_op_quantize_scalar(const float *x, size_t n, float mul, int levels, AxCrng r,
                           uint64_t first, uint8_t *codes);
void ax_op_lookup_scalar(const uint8_t *codes, size_t n, const float *table, float *out, int add);

/* ---------------------------------------------------------------- bits (ops_bits.c) */

/* Bytes of n values of `width` bits (1, 2, 4 or 8): ceil(n * width / 8). */
size_t ax_bits_bytes(size_t n, int width);
/* codes[i] < 2^width; the unused bits of the last byte are 0. */
void ax_op_pack(const uint8_t *codes, size_t n, int width, uint8_t *out);
void ax_op_unpack(const uint8_t *in, size_t n, int width, uint8_t *codes);
void ax_op_pack_scalar(const uint8_t *codes, size_t n, int width, uint8_t *out);

/* ---------------------------------------------------------------- signs (ops_sign.c) */

typedef struct {
  double sum_pos, sum_neg; /* sums of the x >= 0 and of the x < 0 */
  size_t n_pos, n_neg;
} AxSignStats;
void ax_op_sign_stats(const float *x, size_t n, AxSignStats *s);
/* Bit i = (x[i] >= 0), packed 1 bit a value, and the sign statistics of the same pass (s may
 * be NULL). One read of x: onebit's and EFSignSGD's whole encode. */
void ax_op_sign_pack(const float *x, size_t n, uint8_t *bits, AxSignStats *s);
/* out[i] = bit i ? pos : neg (add: +=) */
void ax_op_sign_unpack(const uint8_t *bits, size_t n, float neg, float pos, float *out, int add);

/* Error feedback for the sign codecs in two reads instead of five: acc += in with the sign
 * statistics of the new acc (the same values, in the same order, as ax_op_sign_stats of it);
 * then bits of x as ax_op_sign_pack writes them, and x -= (bit ? pos : neg), which is x minus
 * its decoding. */
void ax_op_add_sign_stats(float *acc, const float *in, size_t n, AxSignStats *s);
void ax_op_sign_pack_sub(float *x, size_t n, float neg, float pos, uint8_t *bits);

void ax_op_sign_stats_scalar(const float *x, size_t n, AxSignStats *s);
void ax_op_sign_pack_scalar(const float *x, size_t n, uint8_t *bits, AxSignStats *s);
void ax_op_sign_unpack_scalar(const uint8_t *bits, size_t n, float neg, float pos, float *out,
                              int add);

/* ---------------------------------------------------------------- select (ops_select.c) */

/* The number of |x[i]| >= thr (NaN never counts). */
size_t ax_op_count_ge(const float *x, size_t n, float thr);
/* Their indices, ascending: the first min(count, cap) go to idx; returns the count. */
size_t ax_op_select_ge(const float *x, size_t n, float thr, uint32_t *idx, size_t cap);
void ax_op_gather(const float *x, const uint32_t *idx, size_t k, float *vals);
/* out[idx[j]] = vals[j] (add: +=) */
void ax_op_scatter(float *out, const uint32_t *idx, const float *vals, size_t k, int add);
void ax_op_zero_at(float *x, const uint32_t *idx, size_t k);

size_t ax_op_count_ge_scalar(const float *x, size_t n, float thr);
size_t ax_op_select_ge_scalar(const float *x, size_t n, float thr, uint32_t *idx, size_t cap);

/* ---------------------------------------------------------------- top-k (ops_topk.c) */

/* The q-th largest (0-based) of v[0..n), NaN as the smallest; v is permuted. */
float ax_op_nth_largest(float *v, size_t n, size_t q);
/* An estimate of the k-th largest |x| (1 <= k <= n) from s samples at positions drawn from r
 * (ax_crng_below(r, j, n), j = 0..s-1; scratch holds s floats): the sample's
 * ceil(s*k/n + slack*sqrt(s*k/n))-th largest (clamped to the sample), so about k (slack 0) or
 * a few more (slack > 0) values reach it. With s >= n every value is used, in order, and the
 * estimate is exact. */
float ax_op_sample_threshold(const float *x, size_t n, size_t k, AxCrng r, size_t s,
                             double slack, float *scratch);
/* Exactly the k largest |x| (k <= n <= UINT32_MAX), ties to the lower index, NaN as the
 * smallest: their ascending indices in idx[k]. A threshold sampled from r selects candidates
 * (a few more than k) and an exact selection keeps k of them, so the cost is one or two reads
 * of x plus work on the candidates. Working memory: scratch when it holds
 * ax_op_topk_scratch(n, k) bytes (4-byte aligned), else allocated; allocated too, rarely, when
 * far more than k values tie. AX_ERR only when an allocation fails. */
int ax_op_topk(const float *x, size_t n, size_t k, AxCrng r, uint32_t *idx, void *scratch,
               size_t scratch_bytes);
size_t ax_op_topk_scratch(size_t n, size_t k);

/* ---------------------------------------------------------------- low rank (ops_lowrank.c) */

/* x[n] seen as a rows x cols matrix M (row-major, zero beyond n; rows * cols >= n), thin
 * factors of r <= AX_OP_MAX_RANK columns, row-major. */
enum { AX_OP_MAX_RANK = 4096 };
/* p[rows x r] = M q, q[cols x r] */
void ax_op_mat_thin(const float *x, size_t n, size_t rows, size_t cols, const float *q, int r,
                    float *p);
/* q[cols x r] = M^T p, p[rows x r]; acc holds cols * r doubles */
void ax_op_mat_t_thin(const float *x, size_t n, size_t rows, size_t cols, const float *p, int r,
                      double *acc, float *q);
/* x = p q^T, or x -= p q^T (sub), over the n values */
void ax_op_outer(const float *p, const float *q, size_t rows, size_t cols, int r, size_t n,
                 float *x, int sub);
/* The columns of p[rows x r] orthonormal (Gram-Schmidt, in order; a column numerically in the
 * span of the earlier ones becomes 0); work holds rows * r doubles. */
void ax_op_orthonormalize(float *p, size_t rows, int r, double *work);

/* ---------------------------------------------------------------- random (ops_random.c) */

/* u[i] = ax_crng_unit(r, first + i) */
void ax_op_random_unit(AxCrng r, uint64_t first, size_t n, float *u);
void ax_op_random_unit_scalar(AxCrng r, uint64_t first, size_t n, float *u);
/* k of n indices (k <= n <= UINT32_MAX), ascending, one drawn uniformly from each of k
 * strata [floor(j*n/k), floor((j+1)*n/k)): index j of the draw is ax_crng_below(r, j, size). */
void ax_op_random_strata(AxCrng r, size_t n, size_t k, uint32_t *idx);

#endif
