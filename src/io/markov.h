/* markov.h — the built-in synthetic corpus: a seeded order-2 Markov source over lower-case
 * letters and space, whose entropy rate (the best loss any model can reach, in nats per
 * token) is computed exactly from its stationary distribution. Every context can emit a space
 * and all contexts ending in a space share one next-letter distribution, so the chain
 * regenerates at word boundaries and has a single stationary distribution. Tokens are bytes
 * (vocabulary 256), so samples print as text. */
#ifndef AX_MARKOV_H
#define AX_MARKOV_H

#include <stddef.h>
#include <stdint.h>

enum { AX_MARKOV_SYMBOLS = 27, AX_MARKOV_MAX_NEXT = 6 };

typedef struct {
  uint8_t symbol[AX_MARKOV_SYMBOLS]; /* byte value of each symbol (index 0 is the space) */
  /* per context (a, b) = a*SYMBOLS + b: successors and their probabilities */
  uint8_t n_next[AX_MARKOV_SYMBOLS * AX_MARKOV_SYMBOLS];
  uint8_t next[AX_MARKOV_SYMBOLS * AX_MARKOV_SYMBOLS][AX_MARKOV_MAX_NEXT];
  double prob[AX_MARKOV_SYMBOLS * AX_MARKOV_SYMBOLS][AX_MARKOV_MAX_NEXT];
  double entropy_rate; /* nats per token */
} AxMarkov;

void ax_markov_build(AxMarkov *m, uint64_t seed);
/* n tokens (byte values) drawn from the chain with its own seed. */
void ax_markov_generate(const AxMarkov *m, uint64_t seed, uint16_t *out, size_t n);
/* Fraction of consecutive triples in text[0..n) that the chain can emit (sample quality). */
double ax_markov_valid_fraction(const AxMarkov *m, const uint8_t *text, size_t n);

#endif
