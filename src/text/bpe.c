/* bpe.c — the GPT-2 BPE encoder: loading, encoding text piece by piece through a cache of
 * recent pieces, and the growable id array; see bpe.h. */
#include "bpe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpe_impl.h"
#include "pretok.h"
#include "src/core/error.h"

enum {
  CACHE_SLOTS = 1 << 16,      /* emptied at half load */
  CACHE_ARENA = 4 << 20,      /* bytes of pieces and their ids */
  CACHE_MAX_PIECE = 64,       /* longer pieces are merged each time */
};

int ax_bpe_load_files(AxBpe **out, const char *encoder_json, const char *vocab_bpe) {
  AxBpe *b = ax_calloc(1, sizeof *b);
  *out = NULL;
  if (!b) return AX_ERR;
  int rc = ax_bpe_read_vocab(b, encoder_json);
  if (rc == AX_OK) rc = ax_bpe_read_merges(b, vocab_bpe);
  if (rc != AX_OK) {
    ax_bpe_free(b);
    return AX_ERR;
  }
  *out = b;
  return AX_OK;
}

int ax_bpe_load(AxBpe **out, const char *dir) {
  char json[1100], merges[1100];
  snprintf(json, sizeof json, "%s/encoder.json", dir);
  snprintf(merges, sizeof merges, "%s/vocab.bpe", dir);
  if (ax_bpe_load_files(out, json, merges) != AX_OK)
    return ax_error_context("GPT-2 BPE files in %s", dir);
  return AX_OK;
}

void ax_bpe_free(AxBpe *b) {
  if (!b) return;
  ax_token_table_free(&b->table);
  free(b->index.slots);
  free(b->merges.slots);
  ax_bpe_work_free(&b->work);
  free(b->cache.slots);
  free(b->cache.arena);
  free(b);
}

const AxTokenTable *ax_bpe_tokens(const AxBpe *b) {
  return &b->table;
}

static AxCacheSlot *cache_slot(const AxPieceCache *c, uint64_t hash, const uint8_t *s, size_t n) {
  for (size_t at = hash & (CACHE_SLOTS - 1);; at = (at + 1) & (CACHE_SLOTS - 1)) {
    AxCacheSlot *slot = &c->slots[at];
    if (slot->ids == 0) return slot;
    if (slot->hash == hash && slot->bytes == n && memcmp(c->arena + slot->at, s, n) == 0)
      return slot;
  }
}

static int cache_ready(AxPieceCache *c) {
  if (c->slots) return AX_OK;
  c->slots = ax_calloc(CACHE_SLOTS, sizeof *c->slots);
  c->arena = ax_malloc(CACHE_ARENA);
  return c->slots && c->arena ? AX_OK : AX_ERR;
}

/* Remembers the ids of a piece; empties the cache first when it is full. */
static void cache_put(AxPieceCache *c, uint64_t hash, const uint8_t *s, size_t n,
                      const int32_t *ids, size_t n_ids) {
  size_t at = c->used + n, need = at + n_ids * sizeof *ids; /* the ids follow the bytes */
  if (c->count + 1 > CACHE_SLOTS / 2 || need > CACHE_ARENA) {
    memset(c->slots, 0, CACHE_SLOTS * sizeof *c->slots);
    c->used = c->count = 0;
    at = n;
    need = at + n_ids * sizeof *ids;
  }
  AxCacheSlot *slot = cache_slot(c, hash, s, n);
  memcpy(c->arena + c->used, s, n);
  memcpy(c->arena + at, ids, n_ids * sizeof *ids);
  *slot = (AxCacheSlot){hash, (uint32_t)c->used, (uint32_t)n, (uint32_t)n_ids};
  c->used = need;
  c->count++;
}

static int encode_piece(AxBpe *b, const uint8_t *s, size_t n, AxTokens *out) {
  if (n > CACHE_MAX_PIECE) return ax_bpe_merge_piece(b, s, n, out);
  AX_TRY(cache_ready(&b->cache));
  uint64_t hash = ax_bpe_hash(s, n);
  const AxCacheSlot *hit = cache_slot(&b->cache, hash, s, n);
  if (hit->ids) {
    int32_t ids[CACHE_MAX_PIECE];
    memcpy(ids, b->cache.arena + hit->at + hit->bytes, hit->ids * sizeof *ids);
    return ax_tokens_push(out, ids, hit->ids);
  }
  size_t first = out->n;
  AX_TRY(ax_bpe_merge_piece(b, s, n, out));
  cache_put(&b->cache, hash, s, n, out->ids + first, out->n - first);
  return AX_OK;
}

int ax_bpe_encode(AxBpe *b, const uint8_t *text, size_t n, AxTokens *out) {
  for (size_t at = 0, end; at < n; at = end) {
    end = ax_pretok_next(text, n, at);
    AX_TRY(encode_piece(b, text + at, end - at, out));
  }
  return AX_OK;
}
