/* tokens.c — the growable array of token ids; see tokens.h. */
#include "tokens.h"

#include <stdlib.h>
#include <string.h>

#include "src/core/error.h"

int ax_tokens_push(AxTokens *t, const int32_t *ids, size_t n) {
  if (t->n + n > t->cap) {
    size_t cap = t->cap ? t->cap : 256;
    while (cap < t->n + n) cap *= 2;
    int32_t *grown = realloc(t->ids, cap * sizeof *grown);
    if (!grown) return AX_FAIL("out of memory growing a token array to %zu ids", cap);
    t->ids = grown;
    t->cap = cap;
  }
  memcpy(t->ids + t->n, ids, n * sizeof *ids);
  t->n += n;
  return AX_OK;
}

void ax_tokens_free(AxTokens *t) {
  free(t->ids);
  memset(t, 0, sizeof *t);
}
