/* token_table.c — token id -> bytes, and reading llm.c's tokenizer file; see token_table.h. */
#include "token_table.h"

#include <stdlib.h>
#include <string.h>

#include "src/core/error.h"
#include "src/core/fileio.h"

enum { HEADER_WORDS = 256, MAX_VOCAB = 1 << 24 };

static int check_header(const char *path, const uint32_t *h, int *vocab, int *eot) {
  if (h[0] != AX_TOKENIZER_MAGIC)
    return AX_FAIL("%s: bad magic %u (expected %d): not an llm.c tokenizer file", path, h[0],
                   AX_TOKENIZER_MAGIC);
  if (h[1] != 1 && h[1] != 2)
    return AX_FAIL("%s: tokenizer version %u is not supported (expected 1 or 2)", path, h[1]);
  if (h[2] == 0 || h[2] > MAX_VOCAB)
    return AX_FAIL("%s: vocabulary size %u is out of range (1 to %d)", path, h[2], MAX_VOCAB);
  *vocab = (int)h[2];
  *eot = h[1] == 1 ? AX_GPT2_EOT : (int)h[3];
  if (h[1] == 2 && h[3] >= h[2])
    return AX_FAIL("%s: end-of-text token %u is outside the vocabulary of %u tokens", path, h[3],
                   h[2]);
  if (*eot >= *vocab) *eot = -1; /* version 1 of a vocabulary smaller than GPT-2's */
  return AX_OK;
}

/* Splits the body (lengths and bytes) into the table; the bytes stay where they are. */
static int index_body(AxTokenTable *t, const char *path, uint8_t *body, size_t size) {
  size_t at = 0, out = 0;
  for (int i = 0; i < t->vocab; i++) {
    if (at >= size)
      return AX_FAIL("%s: truncated: the header says %d tokens, the file ends after %d", path,
                     t->vocab, i);
    size_t len = body[at++];
    if (len == 0) return AX_FAIL("%s: token %d has length 0", path, i);
    if (len > size - at)
      return AX_FAIL("%s: truncated: token %d needs %zu bytes, only %zu remain", path, i, len,
                     size - at);
    memmove(body + out, body + at, len); /* drop the length byte: bytes back to back */
    t->offsets[i] = (uint32_t)out;
    out += len;
    at += len;
  }
  t->offsets[t->vocab] = (uint32_t)out;
  if (at != size)
    return AX_FAIL("%s: %zu bytes after the last of its %d tokens", path, size - at, t->vocab);
  return AX_OK;
}

static int read_body(AxTokenTable *t, AxFile *f) {
  size_t size = (size_t)(f->size - f->pos);
  t->bytes = ax_malloc(size ? size : 1);
  t->offsets = ax_malloc(((size_t)t->vocab + 1) * sizeof *t->offsets);
  if (!t->bytes || !t->offsets) return AX_ERR;
  AX_TRY(ax_file_read(f, t->bytes, size, "the tokens"));
  return index_body(t, f->path, t->bytes, size);
}

int ax_token_table_read(AxTokenTable *t, const char *path) {
  memset(t, 0, sizeof *t);
  AxFile f;
  AX_TRY(ax_file_open_read(&f, path));
  uint32_t h[HEADER_WORDS];
  int rc = AX_OK;
  if (f.size < (long long)sizeof h)
    rc = AX_FAIL("%s: truncated: %lld bytes is shorter than the %zu-byte header", path, f.size,
                 sizeof h);
  if (rc == AX_OK) rc = ax_file_read(&f, h, sizeof h, "the header");
  if (rc == AX_OK) rc = check_header(path, h, &t->vocab, &t->eot);
  if (rc == AX_OK) rc = read_body(t, &f);
  ax_file_close(&f);
  if (rc != AX_OK) ax_token_table_free(t);
  return rc;
}

void ax_token_table_free(AxTokenTable *t) {
  free(t->bytes);
  free(t->offsets);
  memset(t, 0, sizeof *t);
}

const uint8_t *ax_token_bytes(const AxTokenTable *t, int id, size_t *len) {
  *len = t->offsets[id + 1] - t->offsets[id];
  return t->bytes + t->offsets[id];
}

int ax_token_table_decode(const AxTokenTable *t, const int32_t *ids, size_t n, uint8_t **text,
                          size_t *len) {
  size_t total = 0, piece;
  *text = NULL;
  *len = 0;
  for (size_t i = 0; i < n; i++) {
    if (ids[i] < 0 || ids[i] >= t->vocab)
      return AX_FAIL("token id %d at position %zu is outside the vocabulary of %d tokens",
                     (int)ids[i], i, t->vocab);
    total += t->offsets[ids[i] + 1] - t->offsets[ids[i]];
  }
  uint8_t *out = ax_malloc(total ? total : 1);
  if (!out) return AX_ERR;
  for (size_t i = 0, at = 0; i < n; i++) {
    const uint8_t *bytes = ax_token_bytes(t, ids[i], &piece);
    memcpy(out + at, bytes, piece);
    at += piece;
  }
  *text = out;
  *len = total;
  return AX_OK;
}
