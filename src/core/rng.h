/* rng.h — a small, seedable, reproducible random number generator (xoshiro256**, seeded
 * through splitmix64). The whole state is a plain struct so it can be checkpointed. */
#ifndef AX_RNG_H
#define AX_RNG_H

#include <stdint.h>

typedef struct {
  uint64_t s[4];
} AxRng;

void ax_rng_seed(AxRng *r, uint64_t seed);
uint64_t ax_rng_u64(AxRng *r);
/* Uniform in [0, 1) with 24 random bits (float) or 53 (double). */
float ax_rng_float(AxRng *r);
double ax_rng_double(AxRng *r);
/* Uniform integer in [0, n). */
uint64_t ax_rng_below(AxRng *r, uint64_t n);
/* Standard normal (Box-Muller). */
double ax_rng_normal(AxRng *r);

#endif
