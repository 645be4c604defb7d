/* reduce_local.h — the local half of a reduction: element-wise sums of fp32, bf16 and fp16
 * arrays, vectorized (AVX-512 where compiled for it, else AVX2, else scalar; fp16 scalar).
 * fp32 sums are plain adds, so every path gives the same bits. bf16 and fp16 are summed in fp32
 * and rounded back to nearest even (as ax_f32_to_bf16, ax_f32_to_f16), identically on every
 * path. `dst` may equal `a` (in place); other
 * overlaps are not allowed. */
#ifndef AX_REDUCE_LOCAL_H
#define AX_REDUCE_LOCAL_H

#include <stddef.h>
#include <stdint.h>

/* dst[i] += src[i] */
void ax_reduce_add_f32(float *dst, const float *src, size_t n);
void ax_reduce_add_bf16(uint16_t *dst, const uint16_t *src, size_t n);
void ax_reduce_add_f16(uint16_t *dst, const uint16_t *src, size_t n);
/* dst[i] = a[i] + b[i] */
void ax_reduce_sum_f32(float *dst, const float *a, const float *b, size_t n);
void ax_reduce_sum_bf16(uint16_t *dst, const uint16_t *a, const uint16_t *b, size_t n);
void ax_reduce_sum_f16(uint16_t *dst, const uint16_t *a, const uint16_t *b, size_t n);

#endif
