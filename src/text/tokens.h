/* tokens.h — a growable array of token ids (what encoders append to). */
#ifndef AX_TOKENS_H
#define AX_TOKENS_H

#include <stddef.h>
#include <stdint.h>

/* A growable array of token ids. Start from {0}; free with ax_tokens_free. */
typedef struct {
  int32_t *ids;
  size_t n, cap;
} AxTokens;

int ax_tokens_push(AxTokens *t, const int32_t *ids, size_t n);
void ax_tokens_free(AxTokens *t);

#endif
