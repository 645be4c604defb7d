/* rng.c — xoshiro256** with splitmix64 seeding; see rng.h. */
#include "rng.h"

#include <math.h>

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

void ax_rng_seed(AxRng *r, uint64_t seed) {
  for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t ax_rng_u64(AxRng *r) {
  uint64_t *s = r->s;
  uint64_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

float ax_rng_float(AxRng *r) { return (float)(ax_rng_u64(r) >> 40) * (1.0f / 16777216.0f); }

double ax_rng_double(AxRng *r) { return (double)(ax_rng_u64(r) >> 11) * (1.0 / 9007199254740992.0); }

uint64_t ax_rng_below(AxRng *r, uint64_t n) {
  /* Rejection sampling keeps the result exactly uniform. */
  uint64_t limit = UINT64_MAX - UINT64_MAX % n, x;
  do x = ax_rng_u64(r);
  while (x >= limit);
  return x % n;
}

double ax_rng_normal(AxRng *r) {
  double u1 = ax_rng_double(r), u2 = ax_rng_double(r);
  if (u1 < 1e-300) u1 = 1e-300;
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}
