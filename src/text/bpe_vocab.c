/* bpe_vocab.c — encoder.json: a JSON object from token (in GPT-2's byte alphabet) to id, read
 * into the id -> bytes table and the bytes -> id index. Ids must run from 0 without gaps or
 * repeats; every single byte must be a token. */
#include <stdlib.h>
#include <string.h>

#include "bpe_impl.h"
#include "byte_alphabet.h"
#include "src/core/error.h"
#include "src/core/fileio.h"
#include "unicode_class.h"

enum { MAX_VOCAB = 1 << 24 };

typedef struct {
  uint8_t *s; /* the whole file; strings are unescaped in place */
  size_t n, at;
  const char *path;
} Json;

typedef struct {
  int32_t id;
  uint32_t at, len; /* the token's bytes: json.s[at .. at + len) */
} Entry;

static void skip_space(Json *j) {
  while (j->at < j->n && (j->s[j->at] == ' ' || j->s[j->at] == '\n' || j->s[j->at] == '\r' ||
                          j->s[j->at] == '\t'))
    j->at++;
}

static int expect(Json *j, char c, const char *what) {
  skip_space(j);
  if (j->at >= j->n || j->s[j->at] != (uint8_t)c)
    return AX_FAIL("%s: expected %s at byte %zu: not GPT-2's encoder.json", j->path, what, j->at);
  j->at++;
  return AX_OK;
}

static int hex4(Json *j, uint32_t *v) {
  *v = 0;
  for (int k = 0; k < 4; k++, j->at++) {
    int c = j->at < j->n ? j->s[j->at] : 0, d;
    d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
        : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0) return AX_FAIL("%s: bad \\u escape at byte %zu", j->path, j->at);
    *v = *v << 4 | (uint32_t)d;
  }
  return AX_OK;
}

/* \uXXXX (j->at just past the 'u'), with a following low surrogate when XXXX is a high one. */
static int unicode_escape(Json *j, uint32_t *cp) {
  AX_TRY(hex4(j, cp));
  if (*cp >= 0xDC00 && *cp <= 0xDFFF)
    return AX_FAIL("%s: lone surrogate at byte %zu", j->path, j->at);
  if (*cp < 0xD800 || *cp > 0xDBFF) return AX_OK;
  uint32_t low;
  if (j->at + 2 > j->n || j->s[j->at] != '\\' || j->s[j->at + 1] != 'u')
    return AX_FAIL("%s: lone surrogate at byte %zu", j->path, j->at);
  j->at += 2;
  AX_TRY(hex4(j, &low));
  if (low < 0xDC00 || low > 0xDFFF)
    return AX_FAIL("%s: lone surrogate at byte %zu", j->path, j->at);
  *cp = 0x10000 + ((*cp - 0xD800) << 10) + (low - 0xDC00);
  return AX_OK;
}

static size_t put_utf8(uint8_t *out, uint32_t cp) {
  size_t len = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
  static const uint8_t lead[5] = {0, 0x00, 0xC0, 0xE0, 0xF0};
  for (size_t k = len - 1; k > 0; k--, cp >>= 6) out[k] = (uint8_t)(0x80 | (cp & 0x3F));
  out[0] = (uint8_t)(lead[len] | cp);
  return len;
}

/* One escape after the backslash: its UTF-8 bytes written at out, their count returned. */
static int escape(Json *j, uint8_t *out, size_t *len) {
  static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
  int c = j->at < j->n ? j->s[j->at++] : 0;
  const char *hit = c ? strchr(from, c) : NULL;
  if (hit) {
    *out = (uint8_t)to[hit - from];
    *len = 1;
    return AX_OK;
  }
  uint32_t cp;
  if (c != 'u') return AX_FAIL("%s: bad escape at byte %zu", j->path, j->at - 1);
  AX_TRY(unicode_escape(j, &cp));
  *len = put_utf8(out, cp);
  return AX_OK;
}

/* A string, unescaped in place: its UTF-8 bytes are j->s[*at .. *at + *len). */
static int string(Json *j, uint32_t *at, uint32_t *len) {
  AX_TRY(expect(j, '"', "a string"));
  size_t w = j->at;
  *at = (uint32_t)w;
  while (j->at < j->n && j->s[j->at] != '"') {
    size_t k = 1;
    if (j->s[j->at] == '\\') {
      j->at++;
      AX_TRY(escape(j, j->s + w, &k));
    } else {
      j->s[w] = j->s[j->at++];
    }
    w += k;
  }
  if (j->at >= j->n) return AX_FAIL("%s: unterminated string at byte %u", j->path, *at);
  j->at++;
  *len = (uint32_t)(w - *at);
  return AX_OK;
}

static int token_id(Json *j, int32_t *id) {
  skip_space(j);
  long long v = 0;
  size_t start = j->at;
  while (j->at < j->n && j->s[j->at] >= '0' && j->s[j->at] <= '9' && v < MAX_VOCAB)
    v = v * 10 + (j->s[j->at++] - '0');
  if (j->at == start || v >= MAX_VOCAB)
    return AX_FAIL("%s: expected a token id below %d at byte %zu", j->path, MAX_VOCAB, start);
  *id = (int32_t)v;
  return AX_OK;
}

/* One "token": id member; the token's UTF-8 is turned into its bytes in place. */
static int member(Json *j, Entry *e) {
  AX_TRY(string(j, &e->at, &e->len));
  long bytes = ax_alphabet_to_bytes(j->s + e->at, e->len, j->s + e->at);
  if (bytes <= 0)
    return AX_FAIL("%s: the token at byte %u is empty or not spelled in GPT-2's byte alphabet",
                   j->path, e->at);
  e->len = (uint32_t)bytes;
  AX_TRY(expect(j, ':', "':'"));
  return token_id(j, &e->id);
}

static int members(Json *j, Entry *entries, size_t *count) {
  AX_TRY(expect(j, '{', "'{'"));
  skip_space(j);
  *count = 0;
  if (j->at < j->n && j->s[j->at] == '}') return AX_FAIL("%s: no tokens", j->path);
  for (;;) {
    AX_TRY(member(j, &entries[(*count)++]));
    skip_space(j);
    if (j->at < j->n && j->s[j->at] == '}') break;
    AX_TRY(expect(j, ',', "',' or '}'"));
  }
  j->at++;
  skip_space(j);
  if (j->at != j->n) return AX_FAIL("%s: extra text after the object at byte %zu", j->path, j->at);
  return AX_OK;
}

/* The id -> bytes table from the entries; ids must be exactly 0 .. count-1. */
static int build_table(AxTokenTable *t, const Json *j, const Entry *e, size_t count) {
  size_t total = 0;
  t->vocab = (int)count;
  t->eot = -1;
  t->offsets = ax_calloc(count + 1, sizeof *t->offsets);
  int32_t *where = ax_malloc(count * sizeof *where);
  int rc = t->offsets && where ? AX_OK : AX_ERR;
  for (size_t i = 0; rc == AX_OK && i < count; i++) where[i] = -1;
  for (size_t i = 0; rc == AX_OK && i < count; i++) {
    if ((size_t)e[i].id >= count)
      rc = AX_FAIL("%s: token id %d is past the %zu tokens: ids must run from 0 without gaps",
                   j->path, e[i].id, count);
    else if (where[e[i].id] >= 0)
      rc = AX_FAIL("%s: token id %d appears twice", j->path, e[i].id);
    else
      where[e[i].id] = (int32_t)i;
    total += e[i].len;
  }
  if (rc == AX_OK && total > UINT32_MAX) rc = AX_FAIL("%s: the tokens are too long", j->path);
  if (rc == AX_OK) rc = (t->bytes = ax_malloc(total)) ? AX_OK : AX_ERR;
  for (size_t id = 0, at = 0; rc == AX_OK && id < count; id++) {
    const Entry *x = &e[where[id]];
    memcpy(t->bytes + at, j->s + x->at, x->len);
    t->offsets[id] = (uint32_t)at;
    at += x->len;
    t->offsets[id + 1] = (uint32_t)at;
  }
  free(where);
  return rc;
}

uint64_t ax_bpe_hash(const uint8_t *s, size_t n) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 1099511628211ull;
  return h;
}

static int32_t *index_slot(const AxBpe *b, const uint8_t *s, size_t n) {
  for (size_t at = ax_bpe_hash(s, n) & b->index.mask;; at = (at + 1) & b->index.mask) {
    int32_t id = b->index.slots[at];
    size_t len;
    if (id < 0) return &b->index.slots[at];
    const uint8_t *tok = ax_token_bytes(&b->table, id, &len);
    if (len == n && memcmp(tok, s, n) == 0) return &b->index.slots[at];
  }
}

int32_t ax_bpe_lookup(const AxBpe *b, const uint8_t *s, size_t n) {
  return *index_slot(b, s, n);
}

static int build_index(AxBpe *b, const char *path) {
  size_t cap = 1, len;
  while (cap < 2 * (size_t)b->table.vocab) cap *= 2;
  b->index.mask = cap - 1;
  AX_TRY((b->index.slots = ax_malloc(cap * sizeof *b->index.slots)) ? AX_OK : AX_ERR);
  for (size_t i = 0; i < cap; i++) b->index.slots[i] = -1;
  for (int id = 0; id < b->table.vocab; id++) {
    const uint8_t *tok = ax_token_bytes(&b->table, id, &len);
    int32_t *slot = index_slot(b, tok, len);
    if (*slot >= 0) return AX_FAIL("%s: tokens %d and %d are the same bytes", path, *slot, id);
    *slot = id;
  }
  for (int byte = 0; byte < 256; byte++) {
    uint8_t c = (uint8_t)byte;
    if ((b->byte_id[byte] = ax_bpe_lookup(b, &c, 1)) < 0)
      return AX_FAIL("%s: no token for the byte 0x%02X", path, byte);
  }
  b->table.eot = ax_bpe_lookup(b, (const uint8_t *)"<|endoftext|>", 13);
  return AX_OK;
}

int ax_bpe_read_vocab(AxBpe *b, const char *path) {
  Json j = {.path = path};
  Entry *entries = NULL;
  size_t count = 0;
  int rc = ax_file_read_all(path, &j.s, &j.n);
  if (rc == AX_OK && j.n > UINT32_MAX) rc = AX_FAIL("%s: too large for a vocabulary", path);
  if (rc == AX_OK) rc = (entries = ax_malloc((j.n / 5 + 2) * sizeof *entries)) ? AX_OK : AX_ERR;
  if (rc == AX_OK) rc = members(&j, entries, &count);
  if (rc == AX_OK) rc = build_table(&b->table, &j, entries, count);
  if (rc == AX_OK) rc = build_index(b, path);
  free(entries);
  free(j.s);
  return rc;
}
