/* bpe_word.c — byte-pair merging of one piece: start from its bytes' ids, then repeatedly take
 * the pair of lowest rank and merge every occurrence of it, left to right (what GPT-2's
 * encoder does), until no adjacent pair has a merge. The symbols are a linked list and the
 * candidate pairs a min-heap on (rank, position) with stale entries skipped, so a piece of n
 * bytes costs O(n log n) however long it is. */
#include <stdlib.h>
#include <string.h>

#include "bpe_impl.h"
#include "src/core/error.h"

#define DEAD (-1)

static int grow(AxMergeWork *w, size_t n) {
  if (n <= w->cap) return AX_OK;
  ax_bpe_work_free(w);
  size_t cap = n < 64 ? 64 : n;
  w->id = ax_malloc(cap * sizeof *w->id);
  w->next = ax_malloc(cap * sizeof *w->next);
  w->prev = ax_malloc(cap * sizeof *w->prev);
  w->pending = ax_malloc(2 * cap * sizeof *w->pending);
  w->heap = ax_malloc(3 * cap * sizeof *w->heap); /* n - 1 pairs at first, 2 per merge after */
  if (!w->id || !w->next || !w->prev || !w->pending || !w->heap) {
    ax_bpe_work_free(w);
    return AX_ERR;
  }
  w->cap = cap;
  return AX_OK;
}

void ax_bpe_work_free(AxMergeWork *w) {
  free(w->id);
  free(w->next);
  free(w->prev);
  free(w->pending);
  free(w->heap);
  memset(w, 0, sizeof *w);
}

static int before(const AxPairEntry *a, const AxPairEntry *b) {
  return a->rank < b->rank || (a->rank == b->rank && a->pos < b->pos);
}

static void sift_down(AxPairEntry *h, size_t n, size_t i) {
  for (;;) {
    size_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < n && before(&h[l], &h[m])) m = l;
    if (r < n && before(&h[r], &h[m])) m = r;
    if (m == i) return;
    AxPairEntry t = h[i];
    h[i] = h[m];
    h[m] = t;
    i = m;
  }
}

static void push(AxPairEntry *h, size_t *n, AxPairEntry e) {
  size_t i = (*n)++;
  for (; i > 0 && before(&e, &h[(i - 1) / 2]); i = (i - 1) / 2) h[i] = h[(i - 1) / 2];
  h[i] = e;
}

static AxPairEntry pop(AxPairEntry *h, size_t *n) {
  AxPairEntry top = h[0];
  h[0] = h[--*n];
  sift_down(h, *n, 0);
  return top;
}

/* Pushes the pair that starts at symbol `pos` when it has a merge. */
static void push_pair(const AxBpe *b, AxMergeWork *w, size_t *heap_n, int32_t pos, int32_t end) {
  if (pos < 0 || w->id[pos] == DEAD || w->next[pos] >= end) return;
  const AxMerge *m = ax_bpe_find_merge(&b->merges, w->id[pos], w->id[w->next[pos]]);
  if (m) push(w->heap, heap_n, (AxPairEntry){m->rank, pos, m->left, m->right});
}

/* An entry is current while its two symbols are still adjacent with the same ids (a symbol's
 * token only grows, so an id never comes back). */
static int current(const AxMergeWork *w, const AxPairEntry *e, int32_t end) {
  int32_t q = w->next[e->pos];
  return w->id[e->pos] == e->left && q < end && w->id[q] == e->right;
}

/* Merges the pair at e->pos; the pairs it forms with its neighbours become pending. */
static void merge_at(AxMergeWork *w, const AxPairEntry *e, int32_t merged, int32_t end,
                     size_t *n_pending) {
  int32_t p = e->pos, q = w->next[p];
  w->id[p] = merged;
  w->id[q] = DEAD;
  w->next[p] = w->next[q];
  if (w->next[p] < end) w->prev[w->next[p]] = p;
  if (w->prev[p] >= 0) w->pending[(*n_pending)++] = w->prev[p];
  w->pending[(*n_pending)++] = p;
}

/* One rank's round: every current occurrence of the pair, left to right; the new pairs join
 * the heap afterwards (none of them can be the pair of this round). */
static void merge_round(const AxBpe *b, AxMergeWork *w, size_t *heap_n, int32_t end) {
  int32_t rank = w->heap[0].rank;
  size_t n_pending = 0;
  while (*heap_n > 0 && w->heap[0].rank == rank) {
    AxPairEntry e = pop(w->heap, heap_n);
    if (!current(w, &e, end)) continue;
    const AxMerge *m = ax_bpe_find_merge(&b->merges, e.left, e.right);
    merge_at(w, &e, m->merged, end, &n_pending);
  }
  for (size_t i = 0; i < n_pending; i++) push_pair(b, w, heap_n, w->pending[i], end);
}

int ax_bpe_merge_piece(AxBpe *b, const uint8_t *piece, size_t n, AxTokens *out) {
  AxMergeWork *w = &b->work;
  if (n > 0x3FFFFFFF) return AX_FAIL("a piece of %zu bytes is too long to encode", n);
  AX_TRY(grow(w, n));
  int32_t end = (int32_t)n;
  for (int32_t i = 0; i < end; i++) {
    w->id[i] = b->byte_id[piece[i]];
    w->next[i] = i + 1;
    w->prev[i] = i - 1;
  }
  size_t heap_n = 0;
  for (int32_t i = 0; i + 1 < end; i++) push_pair(b, w, &heap_n, i, end);
  while (heap_n > 0) merge_round(b, w, &heap_n, end);
  for (int32_t i = 0; i < end; i = w->next[i]) AX_TRY(ax_tokens_push(out, &w->id[i], 1));
  return AX_OK;
}
