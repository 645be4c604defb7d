/* bf16.h — bfloat16 (the top 16 bits of an IEEE fp32, stored as uint16_t) and its conversions.
 * fp32 -> bf16 rounds to nearest, ties to even; infinities stay infinities, NaNs stay (quiet)
 * NaNs with their sign; values that round past the largest bf16 become infinities.
 * bf16 -> fp32 is exact. The array versions give the same bits as the scalar ones. */
#ifndef AX_BF16_H
#define AX_BF16_H

#include <stddef.h>
#include <stdint.h>

uint16_t ax_f32_to_bf16(float x);
float ax_bf16_to_f32(uint16_t x);
void ax_f32_to_bf16_array(uint16_t *dst, const float *src, size_t n);
void ax_bf16_to_f32_array(float *dst, const uint16_t *src, size_t n);

#endif
