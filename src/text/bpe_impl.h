/* bpe_impl.h — the insides of AxBpe, shared by the files that build and use it:
 * bpe_vocab.c (encoder.json: tokens and their ids), bpe_merges.c (vocab.bpe: the merge table),
 * bpe_word.c (merging the bytes of one piece) and bpe.c (loading, the piece cache, encoding). */
#ifndef AX_BPE_IMPL_H
#define AX_BPE_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "bpe.h"
#include "token_table.h"

/* Token bytes -> id: open addressing over the ids of the token table (-1: empty slot). */
typedef struct {
  int32_t *slots;
  size_t mask;
} AxTokenIndex;

/* (left id, right id) -> rank and merged id: open addressing, rank -1 marks an empty slot. */
typedef struct {
  int32_t left, right, rank, merged;
} AxMerge;

typedef struct {
  AxMerge *slots;
  size_t mask;
  int count;
} AxMergeTable;

/* One heap entry of the merge loop: the pair (left, right) at symbol `pos`, with its rank. */
typedef struct {
  int32_t rank, pos, left, right;
} AxPairEntry;

/* Buffers of the merge loop, grown to the longest piece seen. */
typedef struct {
  int32_t *id, *next, *prev;
  AxPairEntry *heap;
  int32_t *pending;
  size_t cap;
} AxMergeWork;

/* Recently encoded pieces: open addressing slots over an arena that holds each piece's bytes
 * and then its ids; emptied when either fills. */
typedef struct {
  uint64_t hash;
  uint32_t at, bytes, ids; /* arena offset, piece length, id count; ids == 0: empty slot */
} AxCacheSlot;

typedef struct {
  AxCacheSlot *slots;
  uint8_t *arena;
  size_t used, count;
} AxPieceCache;

struct AxBpe {
  AxTokenTable table;
  AxTokenIndex index;
  int32_t byte_id[256]; /* the id of each single byte */
  AxMergeTable merges;
  AxMergeWork work;
  AxPieceCache cache;
};

uint64_t ax_bpe_hash(const uint8_t *s, size_t n);

/* bpe_vocab.c: reads encoder.json into b->table, b->index and b->byte_id. */
int ax_bpe_read_vocab(AxBpe *b, const char *path);
/* The id of the token with these bytes, or -1. */
int32_t ax_bpe_lookup(const AxBpe *b, const uint8_t *s, size_t n);

/* bpe_merges.c: reads vocab.bpe into b->merges (needs the vocabulary). */
int ax_bpe_read_merges(AxBpe *b, const char *path);
/* The merge of (left, right), or NULL when the pair does not merge. */
const AxMerge *ax_bpe_find_merge(const AxMergeTable *m, int32_t left, int32_t right);

/* bpe_word.c: the ids of one piece of text (n >= 1 bytes), appended to out. */
int ax_bpe_merge_piece(AxBpe *b, const uint8_t *piece, size_t n, AxTokens *out);
void ax_bpe_work_free(AxMergeWork *w);

#endif
