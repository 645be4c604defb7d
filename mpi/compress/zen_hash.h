/* zen_hash.h — the index side of Zen's balanced sparse synchronization (Wang's thesis, ch. 3,
 * "Zen"): which rank owns which row, how one rank's row set is cut into per-owner lists, and
 * how an owner names the rows it sends back. Pure C: no MPI (mpi/sparse/sparse_sync.h moves the
 * bytes). What this module owns:
 *
 *   - A seeded hash family h_0 .. h_k (k = AX_ZEN_K = 3): MurmurHash3's 64-bit finalizer of
 *     (index + 1) xor a per-function key, the keys derived from one seed with splitmix64, and
 *     the 64-bit value mapped to [0, range) by its high 32 bits (multiply-shift). The thesis
 *     uses MurmurHash with per-function seeds (§3.4.1 "Implementation"); every rank that takes
 *     the same seed gets the same functions. (The finalizer is a good mixer, not a provably
 *     universal family; the tests measure the balance it gives.)
 *   - h_0: the owner ("server") of a row, in [n].
 *   - Algorithm 3.2, hierarchical hashing: an index set I is written into a table of n
 *     partitions of r1 parallel slots followed by r2 serial slots; partition p = h_0(idx), then
 *     slots h_1(idx) .. h_k(idx) are tried in turn, then the next free serial slot (the
 *     thesis's atomic counter, a plain counter here: the loop is serial on the CPU). Slots hold
 *     idx + 1, so 0 means empty and row 0 is representable. Extraction reads each partition's
 *     slots and returns its indices sorted ascending and unique (an index given twice is
 *     written once, or dropped at extraction). The thesis leaves a full serial area undefined;
 *     here the table counts what did not fit, and ax_zen_partition hashes again with r2 large
 *     enough (one retry suffices: the parallel area fills the same way), so no index is lost.
 *   - Sizing (§3.4.2: "k = 3, r1 = 2|G|d_G, and r2 = r1/10"; the thesis has no §3.5): |G|d_G is
 *     the number of non-zero items of one worker, here its rows. "The memory size used in Zen
 *     is 2|G|d_G" is read as the parallel area over all n partitions, so r1 = ceil(2m/n) per
 *     partition for m rows and r2 = ceil(r1/10) (each at least 1).
 *   - Algorithm 3.3, the hash bitmap: the owner set II_i = {idx in [0, rows) : h_0(idx) = i} is
 *     known to every rank (AxZenLayout, computed once: the thesis's "computed and sorted
 *     offline"); a subset of II_i is sent as |II_i| bits, bit j standing for the j-th smallest
 *     member of II_i (bit j of byte j / 8, least significant first), so the puller decodes it
 *     with no index on the wire. Over all owners the bitmaps take ceil(|II_i| / 8) bytes each,
 *     about rows / 8 together (Theorem 3.3's |G|/32 in fp32 words).
 *
 * Every function that can fail returns AX_OK or AX_ERR with the error recorded
 * (src/core/error.h). */
#ifndef AX_ZEN_HASH_H
#define AX_ZEN_HASH_H

#include <stddef.h>
#include <stdint.h>

enum { AX_ZEN_K = 3 }; /* the rehash functions h_1 .. h_k of Algorithm 3.2 */

typedef struct {
  uint64_t key[AX_ZEN_K + 1]; /* h_0 .. h_k */
} AxZenHash;

/* The family of `seed` (the same seed gives the same functions on every rank). */
void ax_zen_hash_init(AxZenHash *h, uint64_t seed);
/* h_fn(idx) in [0, range), fn in 0..AX_ZEN_K; range >= 1. */
uint32_t ax_zen_hash(const AxZenHash *h, int fn, uint32_t idx, uint32_t range);
/* h_0: the owner of row idx among n ranks. */
static inline int ax_zen_owner(const AxZenHash *h, uint32_t idx, int n) {
  return (int)ax_zen_hash(h, 0, idx, (uint32_t)n);
}

/* ---- Algorithm 3.2 ---- */

typedef struct {
  size_t r1, r2; /* parallel and serial slots per partition */
} AxZenSizes;
/* §3.4.2's sizes for m indices cut into n partitions (see above). */
AxZenSizes ax_zen_sizes(size_t m, int n);

typedef struct {
  int n;
  size_t r1, r2;
  uint32_t *x;       /* [n][r1 + r2]: idx + 1, 0 empty */
  size_t *next;      /* [n]: the serial counter, r1 .. r1 + r2 */
  size_t *overflow;  /* [n]: indices that found the serial area full */
  size_t placed[AX_ZEN_K + 1]; /* written by h_1 .. h_k ([0 .. k-1]) and serially ([k]) */
  size_t repeats;    /* indices found already written (given twice) */
} AxZenTable;

int ax_zen_table_init(AxZenTable *t, int n, AxZenSizes sz);
void ax_zen_table_free(AxZenTable *t); /* zeroes *t; a zeroed table is a no-op */
/* Writes idx[0..m) (each < UINT32_MAX) into the table, empty or not. Never loses silently: an
 * index that finds its serial area full is counted in t->overflow and left out. */
void ax_zen_hierarchical_hash(AxZenTable *t, const AxZenHash *h, const uint32_t *idx, size_t m);
/* The total of t->overflow (0: every index is in the table). */
size_t ax_zen_table_overflow(const AxZenTable *t);
/* Partition p's indices, sorted ascending and unique, into out (room for r1 + r2); returns
 * their number. */
size_t ax_zen_table_extract(const AxZenTable *t, int p, uint32_t *out);

/* idx[0..m) cut by Algorithm 3.2 into n lists: list p is idx_out[off[p] .. off[p+1]), sorted
 * ascending and unique, every member with h_0 = p. */
typedef struct {
  int n;
  uint32_t *idx; /* [m] (fewer used when the input repeats an index) */
  size_t *off;   /* [n + 1] */
  size_t serial; /* indices written to serial areas */
  int rehashed;  /* 1 when a serial area overflowed and the set was hashed again */
} AxZenParts;
/* sz: the table's sizes (NULL: ax_zen_sizes(m, n)). */
int ax_zen_partition(const AxZenHash *h, int n, const uint32_t *idx, size_t m,
                     const AxZenSizes *sz, AxZenParts *out);
void ax_zen_parts_free(AxZenParts *p); /* zeroes *p */

/* ---- Algorithm 3.3 ---- */

typedef struct {
  int n;
  uint32_t rows;
  uint32_t *members; /* [rows]: II_0 ascending, then II_1, ... */
  size_t *off;       /* [n + 1]: II_i = members[off[i] .. off[i+1]) */
  uint32_t *pos;     /* [rows]: the place of each row within its owner's set */
  uint32_t *owner;   /* [rows]: h_0 of each row */
} AxZenLayout;

/* The owner sets of rows 0 .. rows-1 among n ranks under h (O(rows) time and memory). */
int ax_zen_layout_init(AxZenLayout *l, const AxZenHash *h, int n, uint32_t rows);
/* The same for given owners (owner[0..rows), each < n: AX_ERR naming the first that is not);
 * Zen's balanced owners (zen_balance.h) use it for one step. */
int ax_zen_layout_init_owners(AxZenLayout *l, int n, uint32_t rows, const uint32_t *owner);
void ax_zen_layout_free(AxZenLayout *l); /* zeroes *l */
static inline size_t ax_zen_owned(const AxZenLayout *l, int i) { return l->off[i + 1] - l->off[i]; }
/* Bytes of owner i's hash bitmap: ceil(|II_i| / 8). */
static inline size_t ax_zen_bitmap_bytes(const AxZenLayout *l, int i) {
  return (ax_zen_owned(l, i) + 7) / 8;
}
/* hash_bitmap_encode: bits (ax_zen_bitmap_bytes) gets a 1 for each of idx[0..m), which must be
 * rows owned by i (AX_ERR naming the first that is not). */
int ax_zen_bitmap_encode(const AxZenLayout *l, int i, const uint32_t *idx, size_t m,
                         uint8_t *bits);
/* The number of ones among the |II_i| bits (bits past them are ignored). */
size_t ax_zen_bitmap_count(const AxZenLayout *l, int i, const uint8_t *bits);
/* hash_bitmap_decode: the rows of the ones, ascending, into idx (room for the count); returns
 * their number. */
size_t ax_zen_bitmap_decode(const AxZenLayout *l, int i, const uint8_t *bits, uint32_t *idx);

/* Sorts idx[0..m) ascending and drops repeats; returns the new length. */
size_t ax_zen_sort_unique(uint32_t *idx, size_t m);

#endif
