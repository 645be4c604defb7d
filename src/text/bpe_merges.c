/* bpe_merges.c — vocab.bpe: after a "#version" line, one merge "a b" per line (tokens in GPT-2's
 * byte alphabet, separated by whitespace); a merge's rank is its line order (the first merges
 * first). Both halves and their concatenation must be tokens of encoder.json. A pair listed
 * twice keeps its last rank, as GPT-2's Python encoder does. */
#include <stdlib.h>
#include <string.h>

#include "bpe_impl.h"
#include "byte_alphabet.h"
#include "src/core/error.h"
#include "src/core/fileio.h"

static size_t pair_slot(const AxMergeTable *m, int32_t left, int32_t right) {
  uint64_t h = ((uint64_t)(uint32_t)left << 32 | (uint32_t)right) * 0x9E3779B97F4A7C15ull;
  size_t at = (size_t)(h ^ h >> 29) & m->mask;
  while (m->slots[at].rank >= 0 && (m->slots[at].left != left || m->slots[at].right != right))
    at = (at + 1) & m->mask;
  return at;
}

const AxMerge *ax_bpe_find_merge(const AxMergeTable *m, int32_t left, int32_t right) {
  const AxMerge *s = &m->slots[pair_slot(m, left, right)];
  return s->rank >= 0 ? s : NULL;
}

static int alloc_table(AxMergeTable *m, size_t lines) {
  size_t cap = 16;
  while (cap < 2 * lines) cap *= 2;
  AX_TRY((m->slots = ax_malloc(cap * sizeof *m->slots)) ? AX_OK : AX_ERR);
  for (size_t i = 0; i < cap; i++) m->slots[i].rank = -1;
  m->mask = cap - 1;
  return AX_OK;
}

/* Splits a line at whitespace into at most 3 fields (a third means the line is malformed). */
static int split_fields(uint8_t *line, size_t n, uint8_t **field, size_t *len) {
  int count = 0;
  for (size_t i = 0; i < n && count < 3;) {
    while (i < n && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) i++;
    if (i == n) break;
    field[count] = line + i;
    while (i < n && line[i] != ' ' && line[i] != '\t' && line[i] != '\r') i++;
    len[count] = (size_t)(line + i - field[count]);
    count++;
  }
  return count;
}

/* The id of one half of a merge, spelled in the byte alphabet (converted in place). */
static int half_id(const AxBpe *b, uint8_t *s, size_t n, int32_t *id) {
  long bytes = ax_alphabet_to_bytes(s, n, s);
  *id = bytes > 0 ? ax_bpe_lookup(b, s, (size_t)bytes) : -1;
  return *id >= 0 ? AX_OK : AX_ERR;
}

static int32_t merged_id(const AxBpe *b, int32_t left, int32_t right) {
  size_t la, lb;
  const uint8_t *first = ax_token_bytes(&b->table, left, &la);
  const uint8_t *second = ax_token_bytes(&b->table, right, &lb);
  uint8_t both[512];
  if (la + lb > sizeof both) return -1;
  memcpy(both, first, la);
  memcpy(both + la, second, lb);
  return ax_bpe_lookup(b, both, la + lb);
}

/* Adds the merge on one line (blank lines are skipped); *rank counts the merges so far. */
static int add_merge(AxBpe *b, uint8_t *line, size_t n, const char *path, size_t line_no,
                     int32_t *rank) {
  uint8_t *field[3];
  size_t len[3];
  int fields = split_fields(line, n, field, len);
  if (fields == 0) return AX_OK;
  if (fields != 2)
    return AX_FAIL("%s: line %zu: expected two tokens \"a b\"", path, line_no);
  int32_t left, right, merged;
  if (half_id(b, field[0], len[0], &left) != AX_OK || half_id(b, field[1], len[1], &right) != AX_OK)
    return AX_FAIL("%s: line %zu: a token of the merge is not in encoder.json", path, line_no);
  if ((merged = merged_id(b, left, right)) < 0)
    return AX_FAIL("%s: line %zu: the merged token is not in encoder.json", path, line_no);
  AxMerge *slot = &b->merges.slots[pair_slot(&b->merges, left, right)];
  if (slot->rank < 0) b->merges.count++;
  *slot = (AxMerge){left, right, (*rank)++, merged};
  return AX_OK;
}

int ax_bpe_read_merges(AxBpe *b, const char *path) {
  uint8_t *text;
  size_t n, lines = 1, line_no = 0;
  int32_t rank = 0;
  AX_TRY(ax_file_read_all(path, &text, &n));
  for (size_t i = 0; i < n; i++) lines += text[i] == '\n';
  int rc = alloc_table(&b->merges, lines);
  for (size_t at = 0; rc == AX_OK && at < n; line_no++) {
    uint8_t *nl = memchr(text + at, '\n', n - at);
    size_t len = nl ? (size_t)(nl - (text + at)) : n - at;
    int header = line_no == 0 && len >= 8 && memcmp(text + at, "#version", 8) == 0;
    if (!header) rc = add_merge(b, text + at, len, path, line_no + 1, &rank);
    at += len + 1;
  }
  if (rc == AX_OK && b->merges.count == 0) rc = AX_FAIL("%s: no merges", path);
  free(text);
  return rc;
}
