/* test_zen_hash.c — Zen's index side (mpi/compress/zen_hash.h): hierarchical hashing
 * (Algorithm 3.2) loses and repeats no index, against a sorted unique reference, for random
 * sets with repeats and adversarial ones (every index on one slot, a one-slot parallel area
 * that sends nearly all to the serial area, which then overflows and is grown); the hash
 * bitmap (Algorithm 3.3) round trip over every owner set; the same seed gives the same
 * functions and another seed others; and h_0's balance on Zipf token batches over GPT-2's
 * 50257 rows (Theorem 3.2; the thesis reports imbalance below 1.1), and the balanced
 * assignment's (mpi/compress/zen_balance.h) on the same batches, below 1.1 on 2 to 16 ranks. */
#include <string.h>

#include "mpi/compress/zen_balance.h"
#include "mpi/compress/zen_hash.h"
#include "src/core/error.h"
#include "src/core/rng.h"
#include "testutil.h"
#include "zipf_rows.h"

/* m indices below `range`, with repeats (tu_alloc memory). */
static uint32_t *random_indices(size_t m, uint32_t range, uint64_t seed) {
  uint32_t *x = tu_alloc((m ? m : 1) * sizeof *x);
  AxRng r;
  ax_rng_seed(&r, seed);
  for (size_t i = 0; i < m; i++) x[i] = (uint32_t)ax_rng_below(&r, range);
  return x;
}

/* The sorted unique copy of idx[0..m) (tu_alloc memory); *k its length. */
static uint32_t *reference(const uint32_t *idx, size_t m, size_t *k) {
  uint32_t *ref = tu_alloc((m ? m : 1) * sizeof *ref);
  memcpy(ref, idx, m * sizeof *ref);
  *k = ax_zen_sort_unique(ref, m);
  return ref;
}

/* Every list ascending, each member owned by its list, and together exactly the reference. */
static void expect_exact(const AxZenHash *h, const AxZenParts *p, const uint32_t *idx, size_t m,
                         const char *what) {
  size_t k;
  uint32_t *ref = reference(idx, m, &k);
  ck_assert_msg(p->off[p->n] == k, "%s: %zu indices out, %zu distinct in", what, p->off[p->n], k);
  uint32_t *all = tu_alloc((k ? k : 1) * sizeof *all);
  for (int q = 0; q < p->n; q++)
    for (size_t j = p->off[q]; j < p->off[q + 1]; j++) {
      ck_assert_msg(j == p->off[q] || p->idx[j] > p->idx[j - 1], "%s: list %d not ascending",
                    what, q);
      ck_assert_msg(ax_zen_owner(h, p->idx[j], p->n) == q, "%s: %u in list %d", what, p->idx[j],
                    q);
    }
  memcpy(all, p->idx, k * sizeof *all);
  ck_assert_uint_eq(ax_zen_sort_unique(all, k), k); /* no index in two lists */
  ck_assert_msg(memcmp(all, ref, k * sizeof *all) == 0, "%s: a different set came out", what);
}

START_TEST(random_sets_lose_nothing) {
  const int ns[] = {1, 2, 3, 4, 7, 16};
  const size_t ms[] = {0, 1, 2, 10, 1000, 50000};
  for (size_t a = 0; a < sizeof ns / sizeof *ns; a++)
    for (size_t b = 0; b < sizeof ms / sizeof *ms; b++) {
      AxZenHash h;
      ax_zen_hash_init(&h, 1000 + a);
      uint32_t range = b % 2 ? 50257 : 1000000; /* dense repeats, and sparse */
      uint32_t *idx = random_indices(ms[b], range, 17 * a + b);
      AxZenParts p;
      ck_assert_msg(ax_zen_partition(&h, ns[a], idx, ms[b], NULL, &p) == AX_OK, "%s",
                    ax_error_message());
      char what[64];
      snprintf(what, sizeof what, "n=%d m=%zu", ns[a], ms[b]);
      expect_exact(&h, &p, idx, ms[b], what);
      ax_zen_parts_free(&p);
    }
}
END_TEST

/* The table itself at §3.4.2's sizes: every index placed once (by h_1..h_k or serially), the
 * repeats found, none spilt; the serial area rarely used. */
START_TEST(table_counts_add_up) {
  AxZenHash h;
  ax_zen_hash_init(&h, 5);
  const size_t m = 20000;
  uint32_t *idx = tu_alloc(m * sizeof *idx);
  for (size_t i = 0; i < m; i++) idx[i] = (uint32_t)(i * 40503u + 12345u); /* distinct */
  memcpy(idx + m / 2, idx, 100 * sizeof *idx); /* and 100 repeats */
  AxZenTable t;
  ck_assert_int_eq(ax_zen_table_init(&t, 4, ax_zen_sizes(m, 4)), AX_OK);
  ck_assert_uint_eq(t.r1, 10000);
  ck_assert_uint_eq(t.r2, 1000);
  ax_zen_hierarchical_hash(&t, &h, idx, m);
  size_t placed = 0;
  for (int i = 0; i <= AX_ZEN_K; i++) placed += t.placed[i];
  ck_assert_uint_eq(ax_zen_table_overflow(&t), 0);
  ck_assert_uint_eq(t.repeats, 100);
  ck_assert_uint_eq(placed + t.repeats, m);
  printf("hierarchical hashing of %zu rows into 4 x (%zu + %zu): %zu %zu %zu by h1 h2 h3, %zu "
         "serially\n", m, t.r1, t.r2, t.placed[0], t.placed[1], t.placed[2], t.placed[AX_ZEN_K]);
  ck_assert_msg(t.placed[AX_ZEN_K] < m / 20, "%zu of %zu written serially", t.placed[AX_ZEN_K],
                m);
  size_t total = 0;
  uint32_t *out = tu_alloc((t.r1 + t.r2) * sizeof *out);
  for (int p = 0; p < 4; p++) total += ax_zen_table_extract(&t, p, out);
  ck_assert_uint_eq(total, placed);
  ax_zen_table_free(&t);
}
END_TEST

/* Indices that all land on the same slot of partition 0 under h_1, h_2 and h_3 (r1 = 4): one
 * is written in parallel, the rest serially; the default serial area (1 slot) overflows, and
 * the set is hashed again with room for all. */
START_TEST(colliding_indices_use_the_serial_area) {
  AxZenHash h;
  ax_zen_hash_init(&h, 11);
  const int n = 3;
  const size_t want = 200;
  uint32_t *idx = tu_alloc(want * sizeof *idx);
  size_t m = 0;
  for (uint32_t i = 0; m < want; i++)
    if (ax_zen_owner(&h, i, n) == 0 && ax_zen_hash(&h, 1, i, 4) == 2 &&
        ax_zen_hash(&h, 2, i, 4) == 2 && ax_zen_hash(&h, 3, i, 4) == 2)
      idx[m++] = i;
  AxZenSizes sz = {4, 1};
  AxZenTable t;
  ck_assert_int_eq(ax_zen_table_init(&t, n, sz), AX_OK);
  ax_zen_hierarchical_hash(&t, &h, idx, m);
  ck_assert_uint_eq(t.placed[0], 1);
  ck_assert_uint_eq(t.placed[1] + t.placed[2], 0);
  ck_assert_uint_eq(t.placed[AX_ZEN_K], 1);
  ck_assert_uint_eq(t.overflow[0], m - 2);
  ax_zen_table_free(&t);
  AxZenParts p;
  ck_assert_int_eq(ax_zen_partition(&h, n, idx, m, &sz, &p), AX_OK);
  ck_assert_int_eq(p.rehashed, 1);
  ck_assert_uint_eq(p.serial, m - 1);
  expect_exact(&h, &p, idx, m, "all colliding");
  ax_zen_parts_free(&p);
}
END_TEST

/* One parallel slot per partition: nearly everything goes serial, through a grown area. */
START_TEST(tiny_parallel_area_loses_nothing) {
  AxZenHash h;
  ax_zen_hash_init(&h, 12);
  const size_t m = 5000;
  uint32_t *idx = random_indices(m, 70000, 9);
  for (int n = 1; n <= 5; n++) {
    AxZenSizes sz = {1, 1};
    AxZenParts p;
    ck_assert_int_eq(ax_zen_partition(&h, n, idx, m, &sz, &p), AX_OK);
    ck_assert_int_eq(p.rehashed, 1);
    ck_assert_uint_ge(p.serial, p.off[n] - (size_t)n);
    expect_exact(&h, &p, idx, m, "r1 = 1");
    ax_zen_parts_free(&p);
  }
}
END_TEST

/* §3.4.2: r1 = 2|G|d_G over the n partitions, r2 = r1 / 10, at least one slot each. */
START_TEST(sizes_follow_the_thesis) {
  AxZenSizes s = ax_zen_sizes(1000, 4);
  ck_assert(s.r1 == 500 && s.r2 == 50);
  s = ax_zen_sizes(1001, 3);
  ck_assert(s.r1 == 668 && s.r2 == 67);
  s = ax_zen_sizes(0, 4);
  ck_assert(s.r1 == 1 && s.r2 == 1);
}
END_TEST

/* ------------------------------------------------------------------ hash bitmap */

static void expect_layout(const AxZenLayout *l, const AxZenHash *h) {
  ck_assert_uint_eq(l->off[l->n], l->rows);
  for (int i = 0; i < l->n; i++)
    for (size_t j = l->off[i]; j < l->off[i + 1]; j++) {
      uint32_t row = l->members[j];
      ck_assert(j == l->off[i] || row > l->members[j - 1]);
      ck_assert_int_eq(ax_zen_owner(h, row, l->n), i);
      ck_assert_uint_eq(l->pos[row], j - l->off[i]);
    }
}

/* Random subsets of every owner set (empty, full, one, half) come back as they went. */
START_TEST(bitmap_round_trips) {
  const uint32_t rows_list[] = {1, 15, 256, 50257};
  for (size_t a = 0; a < sizeof rows_list / sizeof *rows_list; a++)
    for (int n = 1; n <= 5; n++) {
      AxZenHash h;
      ax_zen_hash_init(&h, 40 + (uint64_t)n);
      AxZenLayout l;
      ck_assert_int_eq(ax_zen_layout_init(&l, &h, n, rows_list[a]), AX_OK);
      expect_layout(&l, &h);
      size_t bitmap_total = 0;
      AxRng r;
      ax_rng_seed(&r, a * 10 + (uint64_t)n);
      for (int i = 0; i < n; i++) {
        size_t size = ax_zen_owned(&l, i);
        bitmap_total += ax_zen_bitmap_bytes(&l, i);
        uint32_t *sub = tu_alloc((size + 1) * sizeof *sub), *back = tu_alloc((size + 1) * 4);
        uint8_t *bits = tu_alloc(ax_zen_bitmap_bytes(&l, i) + 1);
        for (int kind = 0; kind < 4; kind++) {
          size_t k = 0;
          for (size_t j = 0; j < size; j++) {
            int take = kind == 0 ? 0 : kind == 1 ? 1 : kind == 2 ? j == size / 2
                                                              : ax_rng_below(&r, 2) == 1;
            if (take) sub[k++] = l.members[l.off[i] + j];
          }
          ck_assert_int_eq(ax_zen_bitmap_encode(&l, i, sub, k, bits), AX_OK);
          ck_assert_uint_eq(ax_zen_bitmap_count(&l, i, bits), k);
          ck_assert_uint_eq(ax_zen_bitmap_decode(&l, i, bits, back), k);
          ck_assert(memcmp(sub, back, k * sizeof *sub) == 0);
        }
      }
      /* Theorem 3.3: about rows / 8 bytes over all owners */
      ck_assert_uint_le(bitmap_total, rows_list[a] / 8 + (size_t)n + 1);
      ck_assert_uint_ge(bitmap_total, (rows_list[a] + 7) / 8);
      ax_zen_layout_free(&l);
    }
}
END_TEST

/* A row of another owner, or past the table, is refused by name. */
START_TEST(bitmap_refuses_foreign_rows) {
  AxZenHash h;
  ax_zen_hash_init(&h, 3);
  AxZenLayout l;
  ck_assert_int_eq(ax_zen_layout_init(&l, &h, 3, 100), AX_OK);
  uint8_t bits[64];
  uint32_t foreign = l.members[l.off[1]], past = 100;
  ck_assert_int_ne(ax_zen_bitmap_encode(&l, 0, &foreign, 1, bits), AX_OK);
  ck_assert_msg(strstr(ax_error_text(), "is not its own"), "%s", ax_error_text());
  ax_error_clear();
  ck_assert_int_ne(ax_zen_bitmap_encode(&l, 0, &past, 1, bits), AX_OK);
  ax_error_clear();
  ax_zen_layout_free(&l);
}
END_TEST

/* ------------------------------------------------------------------ seeds */

START_TEST(seeds_are_deterministic) {
  const size_t m = 3000;
  uint32_t *idx = random_indices(m, 50257, 21);
  for (uint64_t seed = 0; seed < 6; seed++) {
    AxZenHash a, b, c;
    ax_zen_hash_init(&a, seed);
    ax_zen_hash_init(&b, seed);
    ax_zen_hash_init(&c, seed + 1000);
    ck_assert(memcmp(&a, &b, sizeof a) == 0);
    AxZenParts p, q;
    ck_assert_int_eq(ax_zen_partition(&a, 4, idx, m, NULL, &p), AX_OK);
    ck_assert_int_eq(ax_zen_partition(&b, 4, idx, m, NULL, &q), AX_OK);
    ck_assert(memcmp(p.off, q.off, 5 * sizeof *p.off) == 0);
    ck_assert(memcmp(p.idx, q.idx, p.off[4] * sizeof *p.idx) == 0);
    expect_exact(&a, &p, idx, m, "seeded");
    /* another seed: another h_0 (about 3/4 of the rows move among 4 owners), and h_1..h_k
     * differ from h_0 and from each other */
    size_t moved = 0, same[AX_ZEN_K + 1] = {0};
    for (uint32_t i = 0; i < 50257; i++) {
      moved += ax_zen_owner(&a, i, 4) != ax_zen_owner(&c, i, 4);
      for (int f = 1; f <= AX_ZEN_K; f++)
        same[f] += ax_zen_hash(&a, f, i, 1000) == ax_zen_hash(&a, f - 1, i, 1000);
    }
    ck_assert_msg(moved > 50257 * 0.72 && moved < 50257 * 0.78, "seed %llu: %zu rows moved",
                  (unsigned long long)seed, moved);
    for (int f = 1; f <= AX_ZEN_K; f++) ck_assert_uint_lt(same[f], 200); /* ~50 by chance */
    ax_zen_parts_free(&p);
    ax_zen_parts_free(&q);
  }
}
END_TEST

/* ------------------------------------------------------------------ balance */

enum { ZIPF_ROWS = 50257, ZIPF_STRIDE = (ZIPF_ROWS + 7) / 8, MAX_RANKS = 16 };

/* n ranks' batches of `tokens` Zipf(1) tokens over 50257 rows, as row bitmaps (zen_balance.h;
 * tu_alloc memory). */
static uint8_t *zipf_held(const AxZipf *z, int n, size_t tokens, uint64_t seed) {
  AxRng r;
  ax_rng_seed(&r, seed * 7919);
  uint8_t *held = tu_alloc((size_t)n * ZIPF_STRIDE);
  memset(held, 0, (size_t)n * ZIPF_STRIDE);
  uint32_t *batch = tu_alloc(tokens * sizeof *batch);
  for (int i = 0; i < n; i++) {
    size_t m = tz_zipf_batch(z, &r, tokens, batch);
    for (size_t j = 0; j < m; j++)
      held[(size_t)i * ZIPF_STRIDE + batch[j] / 8] |= (uint8_t)(1u << (batch[j] & 7));
  }
  return held;
}

/* Definition 3.6 on n ranks' Zipf batches, owners by h_0 (balanced = 0) or by ax_zen_balance. */
static void zipf_imbalance(const AxZipf *z, int n, size_t tokens, uint64_t seed, int balanced,
                           double *push, double *pull) {
  uint8_t *held = zipf_held(z, n, tokens, seed);
  uint32_t *owner = tu_alloc(ZIPF_ROWS * sizeof *owner);
  if (balanced) {
    ck_assert_msg(ax_zen_balance(n, ZIPF_ROWS, held, owner) == AX_OK, "%s", ax_error_message());
  } else {
    AxZenHash h;
    ax_zen_hash_init(&h, seed);
    for (uint32_t v = 0; v < ZIPF_ROWS; v++) {
      int any = 0;
      for (int i = 0; i < n; i++) any |= (held[(size_t)i * ZIPF_STRIDE + v / 8] >> (v & 7)) & 1;
      owner[v] = any ? (uint32_t)ax_zen_owner(&h, v, n) : AX_ZEN_UNOWNED;
    }
  }
  ck_assert(ax_zen_balance_ratios(n, ZIPF_ROWS, held, owner, push, pull) == AX_OK);
}

/* 8192 tokens per rank (GPT-2's 8 x 1024): below 1.1 on 2, 3 and 4 ranks for every seed tried;
 * on 8 and 16 ranks the pull stays below 1.1 and the push (3.3K rows a rank cut 8 or 16 ways:
 * 1.08-1.21, Theorem 3.2's sqrt(n log n / m)) is reported only. */
START_TEST(h0_balances_zipf_batches) {
  AxZipf z;
  ck_assert(ax_zipf_init(&z, ZIPF_ROWS, 1.0, 2024));
  for (int n = 2; n <= MAX_RANKS; n = n < 4 ? n + 1 : n * 2)
    for (uint64_t seed = 1; seed <= 4; seed++) {
      double push, pull;
      zipf_imbalance(&z, n, 8192, seed, 0, &push, &pull);
      if (seed == 1) printf("zipf(1) over 50257 rows, 8192 tokens a rank, %2d ranks, h_0: push "
                            "%.3f, pull %.3f\n", n, push, pull);
      ck_assert_msg(pull < 1.1, "%d ranks seed %llu: pull imbalance %.3f", n,
                    (unsigned long long)seed, pull);
      if (n <= 4)
        ck_assert_msg(push < 1.1, "%d ranks seed %llu: push imbalance %.3f", n,
                      (unsigned long long)seed, push);
    }
  ax_zipf_free(&z);
}
END_TEST

/* The same batches with the balanced assignment: push and pull below 1.1 on 2 to 16 ranks (and
 * every held row owned, no other). */
START_TEST(balanced_assignment_zipf_batches) {
  AxZipf z;
  ck_assert(ax_zipf_init(&z, ZIPF_ROWS, 1.0, 2024));
  for (int n = 2; n <= MAX_RANKS; n = n < 4 ? n + 1 : n * 2)
    for (uint64_t seed = 1; seed <= 4; seed++) {
      double push, pull;
      zipf_imbalance(&z, n, 8192, seed, 1, &push, &pull);
      if (seed == 1) printf("zipf(1) over 50257 rows, 8192 tokens a rank, %2d ranks, balanced: "
                            "push %.3f, pull %.3f\n", n, push, pull);
      ck_assert_msg(push < 1.1 && pull < 1.1, "%d ranks seed %llu: push %.3f, pull %.3f", n,
                    (unsigned long long)seed, push, pull);
    }
  ax_zipf_free(&z);
}
END_TEST

/* Owners on a small case by hand: unheld rows unowned, every owner in range. */
START_TEST(balanced_assignment_owns_held_rows) {
  uint8_t held[3][2] = {{0x0f, 0x00}, {0x03, 0x01}, {0x00, 0x00}}; /* 9 rows, 3 ranks */
  uint32_t owner[9];
  ck_assert(ax_zen_balance(3, 9, &held[0][0], owner) == AX_OK);
  for (uint32_t v = 0; v < 9; v++) {
    int any = (v < 4) || v == 8;
    if (any) ck_assert_uint_lt(owner[v], 3);
    else ck_assert_uint_eq(owner[v], AX_ZEN_UNOWNED);
  }
  /* rows 0 and 1 (two holders) first: to owners 0 and 1; rank 0's rows 2, 3 to owner 2, then 0
   * (ties to fewer rows, then the lower owner); row 8 to owner 2 (rank 1 pushes 1 to each) */
  ck_assert_uint_eq(owner[0], 0);
  ck_assert_uint_eq(owner[1], 1);
  ck_assert_uint_eq(owner[2], 2);
  ck_assert_uint_eq(owner[3], 0);
  ck_assert_uint_eq(owner[8], 2);
  ck_assert(ax_zen_balance(0, 9, &held[0][0], owner) == AX_ERR);
  ax_error_clear();
}
END_TEST

int main(void) {
  Suite *s = suite_create("zen_hash");
  TCase *tc = tu_tcase(s, "zen_hash", 120);
  tcase_add_test(tc, random_sets_lose_nothing);
  tcase_add_test(tc, table_counts_add_up);
  tcase_add_test(tc, colliding_indices_use_the_serial_area);
  tcase_add_test(tc, tiny_parallel_area_loses_nothing);
  tcase_add_test(tc, sizes_follow_the_thesis);
  tcase_add_test(tc, bitmap_round_trips);
  tcase_add_test(tc, bitmap_refuses_foreign_rows);
  tcase_add_test(tc, seeds_are_deterministic);
  tcase_add_test(tc, h0_balances_zipf_batches);
  tcase_add_test(tc, balanced_assignment_zipf_batches);
  tcase_add_test(tc, balanced_assignment_owns_held_rows);
  return tu_run(s);
}
