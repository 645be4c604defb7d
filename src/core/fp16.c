/* fp16.c — IEEE half-precision conversions (scalar); see fp16.h. */
#include "fp16.h"

#include <math.h>
#include <string.h>

enum {
  F32_ABS = 0x7fffffff,
  F32_INF = 0x7f800000,
  F16_MIN_NORMAL_AS_F32 = 0x38800000, /* 2^-14 */
  F16_ROUNDS_TO_INF_AS_F32 = 0x477ff000 /* 65520: halfway past 65504, ties to even go up */
};

uint16_t ax_f32_to_f16(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  uint32_t a = u & F32_ABS;
  if (a > F32_INF) return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu)); /* quiet NaN */
  if (a >= F16_ROUNDS_TO_INF_AS_F32) return (uint16_t)(sign | 0x7c00u);
  if (a < F16_MIN_NORMAL_AS_F32) { /* subnormal or zero: units of 2^-24, rounded to even */
    float mag;
    memcpy(&mag, &a, sizeof mag);
    return (uint16_t)(sign | (uint16_t)lrintf(mag * 16777216.0f)); /* 1024: the least normal */
  }
  uint32_t r = a - 0x38000000u; /* exponent rebiased from 127 to 15 */
  r += 0xfffu + ((r >> 13) & 1u);
  return (uint16_t)(sign | (r >> 13));
}

float ax_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  float f;
  if (exp == 0) { /* zero or subnormal: man · 2^-24, exact in fp32 */
    f = ldexpf((float)man, -24);
    return sign ? -f : f;
  }
  uint32_t u = exp == 31 ? sign | F32_INF | (man << 13) : sign | ((exp + 112u) << 23) | (man << 13);
  memcpy(&f, &u, sizeof f);
  return f;
}

void ax_f32_to_f16_array(uint16_t *dst, const float *src, size_t n) {
  for (size_t i = 0; i < n; i++) dst[i] = ax_f32_to_f16(src[i]);
}

void ax_f16_to_f32_array(float *dst, const uint16_t *src, size_t n) {
  for (size_t i = 0; i < n; i++) dst[i] = ax_f16_to_f32(src[i]);
}
