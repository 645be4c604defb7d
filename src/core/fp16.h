/* fp16.h — IEEE binary16 (half precision, stored as uint16_t) and its conversions.
 * fp32 -> fp16 rounds to nearest, ties to even (subnormals included); values that round past
 * the largest fp16 (65504) become infinities; NaNs stay (quiet) NaNs with their sign.
 * fp16 -> fp32 is exact. The array versions give the same bits as the scalar ones. */
#ifndef AX_FP16_H
#define AX_FP16_H

#include <stddef.h>
#include <stdint.h>

uint16_t ax_f32_to_f16(float x);
float ax_f16_to_f32(uint16_t x);
void ax_f32_to_f16_array(uint16_t *dst, const float *src, size_t n);
void ax_f16_to_f32_array(float *dst, const uint16_t *src, size_t n);

#endif
