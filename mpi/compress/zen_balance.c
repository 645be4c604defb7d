/* zen_balance.c — the per-step balanced owner assignment of Zen's rows; see zen_balance.h. */
#include "zen_balance.h"

#include <stdlib.h>

#include "src/core/error.h"

static int holds(const uint8_t *held, size_t stride, int i, uint32_t v) {
  return (held[(size_t)i * stride + v / 8] >> (v & 7)) & 1;
}

static size_t stride_of(uint32_t rows) { return ((size_t)rows + 7) / 8; }

/* The owner for row v, held by the ranks who[0..h), given the loads so far (load: [n][n],
 * load[i * n + j] = c_ij). */
static uint32_t choose(int n, const int *who, int h, const size_t *load, const size_t *own) {
  uint32_t best = 0;
  size_t best_worst = SIZE_MAX;
  for (int j = 0; j < n; j++) {
    size_t worst = 0;
    for (int k = 0; k < h; k++)
      if (load[(size_t)who[k] * n + j] > worst) worst = load[(size_t)who[k] * n + j];
    if (worst < best_worst || (worst == best_worst && own[j] < own[best])) {
      best = (uint32_t)j;
      best_worst = worst;
    }
  }
  return best;
}

/* Rows by holder count, most first: order[off[h] ..] for n - h holders, each ascending. */
static void order_rows(int n, uint32_t rows, const uint8_t *holders, size_t *off,
                       uint32_t *order) {
  for (uint32_t v = 0; v < rows; v++) off[n - holders[v] + 1]++;
  for (int h = 0; h <= n; h++) off[h + 1] += off[h];
  for (uint32_t v = 0; v < rows; v++) order[off[n - holders[v]]++] = v;
}

int ax_zen_balance(int n, uint32_t rows, const uint8_t *held, uint32_t *owner) {
  if (n < 1 || n > 255) return AX_FAIL("balanced owner assignment over %d ranks (1 to 255)", n);
  size_t stride = stride_of(rows), r = rows ? rows : 1;
  uint8_t *holders = ax_calloc(r, 1);
  uint32_t *order = ax_malloc(r * sizeof *order);
  size_t *off = ax_calloc((size_t)n + 2, sizeof *off);
  size_t *load = ax_calloc((size_t)n * (size_t)n, sizeof *load);
  size_t *own = ax_calloc((size_t)n, sizeof *own);
  int *who = ax_malloc((size_t)n * sizeof *who);
  int rc = holders && order && off && load && own && who ? AX_OK : AX_ERR;
  for (uint32_t v = 0; rc == AX_OK && v < rows; v++)
    for (int i = 0; i < n; i++) holders[v] = (uint8_t)(holders[v] + holds(held, stride, i, v));
  if (rc == AX_OK) order_rows(n, rows, holders, off, order);
  for (uint32_t q = 0; rc == AX_OK && q < rows; q++) {
    uint32_t v = order[q];
    if (!holders[v]) {
      owner[v] = AX_ZEN_UNOWNED;
      continue;
    }
    int h = 0;
    for (int i = 0; i < n; i++)
      if (holds(held, stride, i, v)) who[h++] = i;
    uint32_t j = owner[v] = choose(n, who, h, load, own);
    own[j]++;
    for (int k = 0; k < h; k++) load[(size_t)who[k] * n + j]++;
  }
  free(holders);
  free(order);
  free(off);
  free(load);
  free(own);
  free(who);
  return rc;
}

/* The largest n x[j] / sum(x) over j; 1 for an empty set. */
static double ratio(const size_t *x, int n) {
  size_t sum = 0, most = 0;
  for (int j = 0; j < n; j++) {
    sum += x[j];
    most = x[j] > most ? x[j] : most;
  }
  return sum ? (double)n * (double)most / (double)sum : 1.0;
}

int ax_zen_balance_ratios(int n, uint32_t rows, const uint8_t *held, const uint32_t *owner,
                          double *push, double *pull) {
  size_t stride = stride_of(rows);
  size_t *c = ax_calloc((size_t)n * ((size_t)n + 1), sizeof *c); /* c_ij [n][n], |U_j| [n] */
  if (!c) return AX_ERR;
  *push = 1.0;
  for (uint32_t v = 0; v < rows; v++) {
    if (owner[v] == AX_ZEN_UNOWNED) continue;
    c[(size_t)n * n + owner[v]]++;
    for (int i = 0; i < n; i++) c[(size_t)i * n + owner[v]] += (size_t)holds(held, stride, i, v);
  }
  for (int i = 0; i < n; i++)
    if (ratio(c + (size_t)i * n, n) > *push) *push = ratio(c + (size_t)i * n, n);
  *pull = ratio(c + (size_t)n * n, n);
  free(c);
  return AX_OK;
}
