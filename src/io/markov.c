/* markov.c — the seeded order-2 Markov corpus and its exact entropy rate; see markov.h. */
#include "markov.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/rng.h"

enum { S = AX_MARKOV_SYMBOLS, CTX = S * S };

static int sym_index(const AxMarkov *m, uint8_t byte) {
  for (int i = 0; i < S; i++)
    if (m->symbol[i] == byte) return i;
  return -1;
}

/* Random successor set of `count` distinct letters (symbols 1..26), plus space when asked. */
static void draw_row(AxMarkov *m, int ctx, AxRng *r, int count, int with_space) {
  int n = 0;
  if (with_space) m->next[ctx][n++] = 0;
  while (n < count) {
    uint8_t s = (uint8_t)(1 + ax_rng_below(r, S - 1));
    int dup = 0;
    for (int i = 0; i < n; i++) dup |= m->next[ctx][i] == s;
    if (!dup) m->next[ctx][n++] = s;
  }
  m->n_next[ctx] = (uint8_t)n;
  double total = 0;
  for (int i = 0; i < n; i++) total += (m->prob[ctx][i] = -log(1.0 - ax_rng_double(r)) + 0.05);
  for (int i = 0; i < n; i++) m->prob[ctx][i] /= total;
}

static double row_entropy(const AxMarkov *m, int ctx) {
  double h = 0;
  for (int i = 0; i < m->n_next[ctx]; i++) h -= m->prob[ctx][i] * log(m->prob[ctx][i]);
  return h;
}

/* Stationary distribution over contexts by Cesaro-averaged power iteration. */
static void compute_entropy_rate(AxMarkov *m) {
  double *pi = calloc(CTX, sizeof *pi), *nxt = calloc(CTX, sizeof *nxt);
  double *avg = calloc(CTX, sizeof *avg);
  if (!pi || !nxt || !avg) {
    m->entropy_rate = NAN;
    free(pi), free(nxt), free(avg);
    return;
  }
  pi[0] = 1.0; /* start after "  " */
  const int iters = 4000, burn = 1000;
  for (int it = 0; it < iters; it++) {
    memset(nxt, 0, CTX * sizeof *nxt);
    for (int c = 0; c < CTX; c++) {
      if (pi[c] == 0) continue;
      int b = c % S;
      for (int i = 0; i < m->n_next[c]; i++) nxt[b * S + m->next[c][i]] += pi[c] * m->prob[c][i];
    }
    memcpy(pi, nxt, CTX * sizeof *pi);
    if (it >= burn)
      for (int c = 0; c < CTX; c++) avg[c] += pi[c] / (iters - burn);
  }
  double h = 0;
  for (int c = 0; c < CTX; c++) h += avg[c] * row_entropy(m, c);
  m->entropy_rate = h;
  free(pi), free(nxt), free(avg);
}

void ax_markov_build(AxMarkov *m, uint64_t seed) {
  memset(m, 0, sizeof *m);
  m->symbol[0] = ' ';
  for (int i = 1; i < S; i++) m->symbol[i] = (uint8_t)('a' + i - 1);
  AxRng r;
  ax_rng_seed(&r, seed ^ 0x4D41524B4F56ULL);
  /* contexts ending in a space share one word-start distribution (no double spaces) */
  draw_row(m, 0, &r, AX_MARKOV_MAX_NEXT, 0);
  for (int a = 0; a < S; a++) {
    int ctx = a * S;
    m->n_next[ctx] = m->n_next[0];
    memcpy(m->next[ctx], m->next[0], sizeof m->next[0]);
    memcpy(m->prob[ctx], m->prob[0], sizeof m->prob[0]);
  }
  for (int a = 0; a < S; a++)
    for (int b = 1; b < S; b++) draw_row(m, a * S + b, &r, 2 + (int)ax_rng_below(&r, 3), 1);
  compute_entropy_rate(m);
}

/* A context's successor for a uniform u: the first whose running sum of probabilities exceeds
 * u (the last when rounding leaves u above them all). The running sums are added once a context
 * in the order a scan would add them, and the successor is the count of the sums u has reached
 * among the first n - 1 (the rest +inf): the same choice as the scan, bit for bit (the sums
 * strictly increase: every probability is above 0), without a branch a token to mispredict. */
typedef struct {
  double sum[AX_MARKOV_MAX_NEXT - 1];
} RunningSums;

static void running_sums(const AxMarkov *m, RunningSums *rs) {
  for (int c = 0; c < CTX; c++) {
    double acc = 0;
    for (int i = 0; i < AX_MARKOV_MAX_NEXT - 1; i++) {
      if (i < m->n_next[c] - 1) acc += m->prob[c][i];
      rs[c].sum[i] = i < m->n_next[c] - 1 ? acc : INFINITY;
    }
  }
}

static int successor(const RunningSums *rs, double u) {
  int k = 0;
  for (int i = 0; i < AX_MARKOV_MAX_NEXT - 1; i++) k += u >= rs->sum[i];
  return k;
}

void ax_markov_generate(const AxMarkov *m, uint64_t seed, uint16_t *out, size_t n) {
  RunningSums rs[CTX];
  running_sums(m, rs);
  AxRng r;
  ax_rng_seed(&r, seed);
  int a = 0, b = 0;
  for (size_t i = 0; i < n; i++) {
    int ctx = a * S + b, c = m->next[ctx][successor(&rs[ctx], ax_rng_double(&r))];
    out[i] = m->symbol[c];
    a = b;
    b = c;
  }
}

double ax_markov_valid_fraction(const AxMarkov *m, const uint8_t *text, size_t n) {
  size_t ok = 0, total = 0;
  for (size_t i = 2; i < n; i++) {
    int a = sym_index(m, text[i - 2]), b = sym_index(m, text[i - 1]), c = sym_index(m, text[i]);
    total++;
    if (a < 0 || b < 0 || c < 0) continue;
    for (int k = 0; k < m->n_next[a * S + b]; k++) ok += m->next[a * S + b][k] == c;
  }
  return total ? (double)ok / (double)total : 0.0;
}
