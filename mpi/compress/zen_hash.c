/* zen_hash.c — Zen's hash family, hierarchical hashing (thesis Algorithm 3.2) and hash bitmap
 * (Algorithm 3.3); see zen_hash.h. */
#include "zen_hash.h"

#include <stdlib.h>
#include <string.h>

#include "src/core/crng.h"
#include "src/core/error.h"

/* ------------------------------------------------------------------ hash family */

static uint64_t fmix64(uint64_t k) { /* MurmurHash3's finalizer */
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ULL;
  k ^= k >> 33;
  return k;
}

void ax_zen_hash_init(AxZenHash *h, uint64_t seed) {
  for (int i = 0; i <= AX_ZEN_K; i++)
    h->key[i] = ax_crng_mix64(seed + (uint64_t)i * 0xD1B54A32D192ED03ULL);
}

uint32_t ax_zen_hash(const AxZenHash *h, int fn, uint32_t idx, uint32_t range) {
  uint64_t v = fmix64(((uint64_t)idx + 1) ^ h->key[fn]);
  return (uint32_t)(((v >> 32) * (uint64_t)range) >> 32);
}

/* ------------------------------------------------------------------ Algorithm 3.2 */

static size_t ceil_div(size_t a, size_t b) { return (a + b - 1) / b; }

AxZenSizes ax_zen_sizes(size_t m, int n) {
  AxZenSizes s;
  s.r1 = ceil_div(2 * m, (size_t)(n > 0 ? n : 1));
  if (s.r1 < 1) s.r1 = 1;
  s.r2 = ceil_div(s.r1, 10);
  return s;
}

int ax_zen_table_init(AxZenTable *t, int n, AxZenSizes sz) {
  memset(t, 0, sizeof *t);
  if (n < 1 || sz.r1 < 1 || sz.r1 > UINT32_MAX)
    return AX_FAIL("hierarchical hashing: %d partitions of %zu + %zu slots", n, sz.r1, sz.r2);
  t->n = n;
  t->r1 = sz.r1;
  t->r2 = sz.r2;
  t->x = ax_calloc((size_t)n * (sz.r1 + sz.r2), sizeof *t->x);
  t->next = ax_calloc((size_t)n, sizeof *t->next);
  t->overflow = ax_calloc((size_t)n, sizeof *t->overflow);
  if (!t->x || !t->next || !t->overflow) {
    ax_zen_table_free(t);
    return AX_ERR;
  }
  for (int p = 0; p < n; p++) t->next[p] = sz.r1; /* c <- r1^n */
  return AX_OK;
}

void ax_zen_table_free(AxZenTable *t) {
  free(t->x);
  free(t->next);
  free(t->overflow);
  memset(t, 0, sizeof *t);
}

/* Lines 13-22 for one index: h_1 .. h_k into the parallel area, then the serial area. */
static void hash_one(AxZenTable *t, const AxZenHash *h, uint32_t idx) {
  int p = ax_zen_owner(h, idx, t->n);
  uint32_t *row = t->x + (size_t)p * (t->r1 + t->r2), v = idx + 1;
  for (int i = 1; i <= AX_ZEN_K; i++) {
    uint32_t q = ax_zen_hash(h, i, idx, (uint32_t)t->r1);
    if (row[q] == v) { /* given twice */
      t->repeats++;
      return;
    }
    if (row[q] == 0) {
      row[q] = v;
      t->placed[i - 1]++;
      return;
    }
  }
  if (t->next[p] == t->r1 + t->r2) {
    t->overflow[p]++;
    return;
  }
  row[t->next[p]++] = v;
  t->placed[AX_ZEN_K]++;
}

void ax_zen_hierarchical_hash(AxZenTable *t, const AxZenHash *h, const uint32_t *idx, size_t m) {
  for (size_t j = 0; j < m; j++) hash_one(t, h, idx[j]);
}

size_t ax_zen_table_overflow(const AxZenTable *t) {
  size_t s = 0;
  for (int p = 0; p < t->n; p++) s += t->overflow[p];
  return s;
}

size_t ax_zen_table_extract(const AxZenTable *t, int p, uint32_t *out) {
  const uint32_t *row = t->x + (size_t)p * (t->r1 + t->r2);
  size_t k = 0;
  for (size_t q = 0; q < t->r1; q++) /* nonzero(x[p]) */
    if (row[q]) out[k++] = row[q] - 1;
  for (size_t q = t->r1; q < t->next[p]; q++) out[k++] = row[q] - 1;
  return ax_zen_sort_unique(out, k);
}

/* The serial area that fits every index of the first attempt: what it took plus what spilt. */
static AxZenSizes grown(const AxZenTable *t) {
  AxZenSizes s = {t->r1, t->r2};
  for (int p = 0; p < t->n; p++) {
    size_t need = t->next[p] - t->r1 + t->overflow[p];
    if (need > s.r2) s.r2 = need;
  }
  return s;
}

/* Every partition's indices into out (the table holds at most m entries, so m is room). */
static int extract_all(const AxZenTable *t, size_t m, AxZenParts *out) {
  if (ax_zen_table_overflow(t))
    return AX_FAIL("internal: hierarchical hashing overflowed its grown serial area");
  out->n = t->n;
  out->idx = ax_malloc((m ? m : 1) * sizeof *out->idx);
  out->off = ax_calloc((size_t)t->n + 1, sizeof *out->off);
  if (!out->idx || !out->off) return AX_ERR;
  size_t k = 0;
  for (int p = 0; p < t->n; p++) {
    out->off[p] = k;
    k += ax_zen_table_extract(t, p, out->idx + k);
  }
  out->off[t->n] = k;
  out->serial = t->placed[AX_ZEN_K];
  return AX_OK;
}

int ax_zen_partition(const AxZenHash *h, int n, const uint32_t *idx, size_t m,
                     const AxZenSizes *sz, AxZenParts *out) {
  memset(out, 0, sizeof *out);
  AxZenTable t;
  AX_TRY(ax_zen_table_init(&t, n, sz ? *sz : ax_zen_sizes(m, n)));
  ax_zen_hierarchical_hash(&t, h, idx, m);
  if (ax_zen_table_overflow(&t)) { /* again with room for every spilt index: the parallel
                                      area fills as before, so this one fits */
    AxZenSizes big = grown(&t);
    ax_zen_table_free(&t);
    AX_TRY(ax_zen_table_init(&t, n, big));
    ax_zen_hierarchical_hash(&t, h, idx, m);
    out->rehashed = 1;
  }
  int rc = extract_all(&t, m, out);
  ax_zen_table_free(&t);
  if (rc != AX_OK) ax_zen_parts_free(out);
  return rc;
}

void ax_zen_parts_free(AxZenParts *p) {
  free(p->idx);
  free(p->off);
  memset(p, 0, sizeof *p);
}

/* ------------------------------------------------------------------ Algorithm 3.3 */

/* The owner sets of l->owner (set, each < l->n): off, members and pos. */
static int layout_fill(AxZenLayout *l) {
  for (uint32_t i = 0; i < l->rows; i++) l->off[l->owner[i] + 1]++;
  for (int i = 0; i < l->n; i++) l->off[i + 1] += l->off[i];
  size_t *fill = ax_calloc((size_t)l->n, sizeof *fill);
  if (!fill) return AX_ERR;
  for (uint32_t i = 0; i < l->rows; i++) { /* counting sort: each set stays ascending */
    uint32_t o = l->owner[i];
    l->pos[i] = (uint32_t)fill[o];
    l->members[l->off[o] + fill[o]++] = i;
  }
  free(fill);
  return AX_OK;
}

/* Allocates l for n owners of rows rows (owner left to set). */
static int layout_alloc(AxZenLayout *l, int n, uint32_t rows) {
  memset(l, 0, sizeof *l);
  if (n < 1) return AX_FAIL("hash bitmap layout over %d owners", n);
  l->n = n;
  l->rows = rows;
  size_t r = rows ? rows : 1;
  l->members = ax_malloc(r * sizeof *l->members);
  l->pos = ax_malloc(r * sizeof *l->pos);
  l->owner = ax_malloc(r * sizeof *l->owner);
  l->off = ax_calloc((size_t)n + 1, sizeof *l->off);
  if (!l->members || !l->pos || !l->owner || !l->off) {
    ax_zen_layout_free(l);
    return AX_ERR;
  }
  return AX_OK;
}

int ax_zen_layout_init(AxZenLayout *l, const AxZenHash *h, int n, uint32_t rows) {
  AX_TRY(layout_alloc(l, n, rows));
  for (uint32_t i = 0; i < rows; i++) l->owner[i] = (uint32_t)ax_zen_owner(h, i, n);
  int rc = layout_fill(l);
  if (rc != AX_OK) ax_zen_layout_free(l);
  return rc;
}

int ax_zen_layout_init_owners(AxZenLayout *l, int n, uint32_t rows, const uint32_t *owner) {
  AX_TRY(layout_alloc(l, n, rows));
  for (uint32_t i = 0; i < rows; i++) {
    if (owner[i] >= (uint32_t)n) {
      ax_zen_layout_free(l);
      return AX_FAIL("hash bitmap layout: row %u's owner %u is not one of %d", i, owner[i], n);
    }
    l->owner[i] = owner[i];
  }
  int rc = layout_fill(l);
  if (rc != AX_OK) ax_zen_layout_free(l);
  return rc;
}

void ax_zen_layout_free(AxZenLayout *l) {
  free(l->members);
  free(l->off);
  free(l->pos);
  free(l->owner);
  memset(l, 0, sizeof *l);
}

int ax_zen_bitmap_encode(const AxZenLayout *l, int i, const uint32_t *idx, size_t m,
                         uint8_t *bits) {
  memset(bits, 0, ax_zen_bitmap_bytes(l, i));
  for (size_t j = 0; j < m; j++) {
    if (idx[j] >= l->rows || (int)l->owner[idx[j]] != i)
      return AX_FAIL("hash bitmap of owner %d: row %u is not its own (of %u rows)", i, idx[j],
                     l->rows);
    uint32_t b = l->pos[idx[j]];
    bits[b >> 3] |= (uint8_t)(1u << (b & 7));
  }
  return AX_OK;
}

/* The byte's bits below `valid` (8 for a whole byte). */
static unsigned masked(uint8_t byte, size_t valid) {
  return valid >= 8 ? byte : byte & ((1u << valid) - 1);
}

size_t ax_zen_bitmap_count(const AxZenLayout *l, int i, const uint8_t *bits) {
  size_t size = ax_zen_owned(l, i), count = 0;
  for (size_t b = 0; b * 8 < size; b++)
    count += (size_t)__builtin_popcount(masked(bits[b], size - b * 8));
  return count;
}

size_t ax_zen_bitmap_decode(const AxZenLayout *l, int i, const uint8_t *bits, uint32_t *idx) {
  size_t size = ax_zen_owned(l, i), k = 0;
  const uint32_t *set = l->members + l->off[i];
  for (size_t b = 0; b * 8 < size; b++)
    for (unsigned v = masked(bits[b], size - b * 8); v; v &= v - 1)
      idx[k++] = set[b * 8 + (size_t)__builtin_ctz(v)]; /* bitmap_indices -> II_i[...] */
  return k;
}

/* ------------------------------------------------------------------ sorting */

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

size_t ax_zen_sort_unique(uint32_t *idx, size_t m) {
  if (m < 2) return m;
  qsort(idx, m, sizeof *idx, cmp_u32);
  size_t k = 1;
  for (size_t j = 1; j < m; j++)
    if (idx[j] != idx[k - 1]) idx[k++] = idx[j];
  return k;
}
