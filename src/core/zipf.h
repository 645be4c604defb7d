/* zipf.h — a seeded Zipf token distribution (the Zen tests and `axonn bench sparse-sync`): the
 * token of frequency rank k (0-based) of a vocabulary of V is drawn with probability
 * proportional to (k + 1)^-s (natural text has s near 1), and mapped to a row by a seeded
 * permutation (a vocabulary's frequent tokens are not its first ids). */
#ifndef AX_ZIPF_H
#define AX_ZIPF_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "src/core/rng.h"

typedef struct {
  uint32_t V;
  double *cdf;  /* [V] */
  uint32_t *row; /* [V]: the row of frequency rank k */
} AxZipf;

/* Returns 0 when out of memory. */
static inline int ax_zipf_init(AxZipf *z, uint32_t V, double s, uint64_t seed) {
  z->V = V;
  z->cdf = malloc(V * sizeof *z->cdf);
  z->row = malloc(V * sizeof *z->row);
  if (!z->cdf || !z->row) return 0;
  double total = 0;
  for (uint32_t k = 0; k < V; k++) z->cdf[k] = total += pow((double)k + 1, -s);
  for (uint32_t k = 0; k < V; k++) z->cdf[k] /= total;
  AxRng r;
  ax_rng_seed(&r, seed);
  for (uint32_t k = 0; k < V; k++) z->row[k] = k;
  for (uint32_t k = V - 1; k > 0; k--) { /* Fisher-Yates */
    uint32_t j = (uint32_t)ax_rng_below(&r, (uint64_t)k + 1), t = z->row[k];
    z->row[k] = z->row[j];
    z->row[j] = t;
  }
  return 1;
}

static inline void ax_zipf_free(AxZipf *z) {
  free(z->cdf);
  free(z->row);
}

static inline uint32_t ax_zipf_draw(const AxZipf *z, AxRng *r) {
  double u = ax_rng_double(r);
  uint32_t lo = 0, hi = z->V - 1;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (z->cdf[mid] >= u) hi = mid; else lo = mid + 1;
  }
  return z->row[lo];
}

#endif
