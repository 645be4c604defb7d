/* test_failure_odds.c — the in-memory checkpoint placements and their failure odds
 * (src/plan/failure_odds.h): the counting against exhaustive enumeration of every failure set,
 * the group closed form (inclusion-exclusion) against both, the thesis's figures for 16 nodes
 * and 2 copies, the holders of every shard (m distinct, in the node's group or ring, every
 * node holding m shards), large N against the product formula of m = 2, and bad inputs. */
#include <math.h>
#include <string.h>

#include "src/core/error.h"
#include "src/plan/failure_odds.h"
#include "testutil.h"

static const AxPlacement PLACEMENTS[] = {AX_PLACE_GROUP, AX_PLACE_RING};

static void expect_rel(double got, double want, double tol, const char *what) {
  ck_assert_msg(fabs(got - want) <= tol * fabs(want), "%s: %.17g, expected %.17g", what, got,
                want);
}

/* Every k of N <= 12 nodes and m <= 3 copies, and N <= 14 with m up to 6 (more bit patterns of
 * m for the window sums): the same count as enumeration, and the same probability. */
START_TEST(counting_matches_enumeration) {
  for (int N = 1; N <= 14; N++)
    for (int m = 1; m <= (N <= 12 ? 3 : 6) && m <= N; m++)
      for (int pi = 0; pi < 2; pi++) {
        double all[15];
        ck_assert_int_eq(ax_failure_odds_all(N, m, PLACEMENTS[pi], all), AX_OK);
        for (int k = 0; k <= N; k++) {
          unsigned long long want;
          long double count;
          double p_enum, p;
          ck_assert_int_eq(ax_failure_odds_enumerate(N, m, k, PLACEMENTS[pi], &want, &p_enum),
                           AX_OK);
          ck_assert_int_eq(ax_recoverable_sets(N, m, k, PLACEMENTS[pi], &count), AX_OK);
          ck_assert_msg(count == (long double)want, "N=%d m=%d k=%d %s: %.0Lf sets, enumerated %llu",
                        N, m, k, ax_placement_name(PLACEMENTS[pi]), count, want);
          ck_assert_int_eq(ax_failure_odds(N, m, k, PLACEMENTS[pi], &p), AX_OK);
          ck_assert_msg(fabs(p - p_enum) < 1e-12 && fabs(all[k] - p_enum) < 1e-12,
                        "N=%d m=%d k=%d: %.17g / %.17g, enumerated %.17g", N, m, k, p, all[k],
                        p_enum);
        }
      }
}
END_TEST

START_TEST(group_formula_matches_enumeration) {
  for (int N = 1; N <= 12; N++)
    for (int m = 1; m <= 4 && m <= N; m++) {
      if (N % m) continue;
      for (int k = 0; k <= N; k++) {
        unsigned long long count;
        double p_enum, p;
        ck_assert_int_eq(ax_failure_odds_enumerate(N, m, k, AX_PLACE_GROUP, &count, &p_enum),
                         AX_OK);
        ck_assert_int_eq(ax_failure_odds_group_formula(N, m, k, &p), AX_OK);
        ck_assert_msg(fabs(p - p_enum) < 1e-12, "N=%d m=%d k=%d: %.17g, enumerated %.17g", N, m,
                      k, p, p_enum);
      }
    }
}
END_TEST

/* wang-thesis §6.7.2 (Figure 6.9) and Corollary 6.1: 93.3% at k = 2 and 80.0% at k = 3. The
 * ring's k = 3 is 352/560: the thesis's "25.0% lower" takes 1 - 16·C(14,1)/C(16,3) = 60.0%,
 * which counts the 16 runs of three failed nodes twice. */
START_TEST(thesis_figures) {
  double p2, p3, f2, f3, ring3;
  ck_assert_int_eq(ax_failure_odds(16, 2, 2, AX_PLACE_GROUP, &p2), AX_OK);
  ck_assert_int_eq(ax_failure_odds(16, 2, 3, AX_PLACE_GROUP, &p3), AX_OK);
  ck_assert_int_eq(ax_failure_odds_group_formula(16, 2, 2, &f2), AX_OK);
  ck_assert_int_eq(ax_failure_odds_group_formula(16, 2, 3, &f3), AX_OK);
  ck_assert_int_eq(lround(p2 * 1000), 933);
  ck_assert_int_eq(lround(p3 * 1000), 800);
  expect_rel(p2, 112.0 / 120, 1e-15, "k=2");
  expect_rel(p3, 448.0 / 560, 1e-15, "k=3");
  expect_rel(f2, p2, 1e-15, "formula k=2");
  expect_rel(f3, p3, 1e-15, "formula k=3");
  ck_assert_int_eq(ax_failure_odds(16, 2, 3, AX_PLACE_RING, &ring3), AX_OK);
  expect_rel(ring3, 352.0 / 560, 1e-15, "ring k=3");
}
END_TEST

/* Group: node i's group [i/m·m, +m) except the last group, which takes the N mod m leftover
 * nodes and is a ring of m + N mod m; ring: i..i+m-1 mod N. */
static void expected_holders(int N, int m, AxPlacement p, int node, int *want) {
  int first = 0, size = N, last = (N / m - 1) * m;
  if (p == AX_PLACE_GROUP) {
    first = node >= last ? last : node / m * m;
    size = node >= last ? N - last : m;
  }
  for (int t = 0; t < m; t++) want[t] = first + (node - first + t) % size;
}

START_TEST(holders_follow_the_placement) {
  for (int N = 1; N <= 20; N++)
    for (int m = 1; m <= 5 && m <= N; m++)
      for (int pi = 0; pi < 2; pi++) {
        int held[20] = {0};
        for (int node = 0; node < N; node++) {
          int h[5], want[5];
          ck_assert_int_eq(ax_replica_holders(N, m, PLACEMENTS[pi], node, h), AX_OK);
          expected_holders(N, m, PLACEMENTS[pi], node, want);
          ck_assert_int_eq(h[0], node);
          for (int t = 0; t < m; t++) {
            ck_assert_msg(h[t] == want[t], "N=%d m=%d %s node %d: holder %d is %d, not %d", N,
                          m, ax_placement_name(PLACEMENTS[pi]), node, t, h[t], want[t]);
            for (int u = 0; u < t; u++) ck_assert_int_ne(h[t], h[u]);
            held[h[t]]++;
          }
        }
        for (int node = 0; node < N; node++) ck_assert_int_eq(held[node], m);
      }
  /* the thesis's Figure 6.3c: 5 nodes, 2 copies: {0, 1} a group, 2, 3, 4 a ring */
  int h[2], first, size;
  ck_assert_int_eq(ax_replica_holders(5, 2, AX_PLACE_GROUP, 1, h), AX_OK);
  ck_assert(h[0] == 1 && h[1] == 0);
  ck_assert_int_eq(ax_replica_holders(5, 2, AX_PLACE_GROUP, 4, h), AX_OK);
  ck_assert(h[0] == 4 && h[1] == 2);
  ck_assert_int_eq(ax_replica_block(14, 3, AX_PLACE_GROUP, 10, &first, &size), AX_OK);
  ck_assert(first == 9 && size == 5);
}
END_TEST

/* m = 2, k <= N/2 groups: C(N/2, k) 2^k of C(N, k), i.e. the product of 2(N/2 - i)/(N - i). */
static double pairs_product(int N, int k) {
  long double p = 1;
  for (int i = 0; i < k; i++) p *= 2.0L * (N / 2 - i) / (N - i);
  return (double)p;
}

static unsigned long long choose(int n, int r) {
  unsigned long long c = 1;
  for (int i = 0; i < r; i++) c = c * (unsigned long long)(n - i) / (unsigned long long)(i + 1);
  return c;
}

START_TEST(large_groups_match_the_product) {
  const int ks[] = {1, 2, 3, 8, 100, 512};
  for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
    double p, f;
    ck_assert_int_eq(ax_failure_odds(1024, 2, ks[i], AX_PLACE_GROUP, &p), AX_OK);
    expect_rel(p, pairs_product(1024, ks[i]), 1e-12, "N=1024 m=2");
    if (ks[i] <= 8) {
      ck_assert_int_eq(ax_failure_odds_group_formula(1024, 2, ks[i], &f), AX_OK);
      expect_rel(f, p, 1e-12, "N=1024 m=2 formula");
    }
  }
  double p;
  ck_assert_int_eq(ax_failure_odds(4096, 2, 2048, AX_PLACE_GROUP, &p), AX_OK);
  expect_rel(p, pairs_product(4096, 2048), 1e-12, "N=4096 m=2 k=2048");
  /* the alternating sum cancels there: refused, not wrong */
  ck_assert_int_eq(ax_failure_odds_group_formula(1024, 2, 512, &p), AX_ERR);
  ck_assert_ptr_nonnull(strstr(ax_error_text(), "precision"));
  ax_error_clear();
  /* 62 nodes: every intermediate is an integer below 2^64, so the counts are exact: C(31, k) 2^k
   * for groups of 2, 62/(62 - k) C(62 - k, k) (no two neighbours failed) for the ring */
  for (int k = 0; k <= 31; k++) {
    long double group, ring;
    ck_assert_int_eq(ax_recoverable_sets(62, 2, k, AX_PLACE_GROUP, &group), AX_OK);
    ck_assert_int_eq(ax_recoverable_sets(62, 2, k, AX_PLACE_RING, &ring), AX_OK);
    ck_assert_msg(group == (long double)(choose(31, k) << k), "group k=%d: %.0Lf", k, group);
    ck_assert_msg(ring == (long double)(choose(62 - k, k) * 62 / (62 - k)), "ring k=%d: %.0Lf", k,
                  ring);
  }
}
END_TEST

/* A subset of a recoverable set is recoverable, so the odds never rise with k; every value is
 * a probability. */
START_TEST(large_odds_fall_with_k) {
  const int sizes[][2] = {{1024, 3}, {1000, 3}, {1023, 7}, {4096, 2}};
  static double odds[4097];
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
    for (int pi = 0; pi < 2; pi++) {
      int N = sizes[i][0], m = sizes[i][1];
      ck_assert_int_eq(ax_failure_odds_all(N, m, PLACEMENTS[pi], odds), AX_OK);
      ck_assert(odds[0] == 1 && odds[m - 1] == 1 && odds[N] == 0);
      for (int k = 1; k <= N; k++)
        ck_assert_msg(odds[k] >= 0 && odds[k] <= odds[k - 1] * (1 + 1e-12),
                      "N=%d m=%d %s: %.17g at k=%d after %.17g", N, m,
                      ax_placement_name(PLACEMENTS[pi]), odds[k], k, odds[k - 1]);
    }
}
END_TEST

START_TEST(bad_inputs_are_refused) {
  double p;
  long double c;
  unsigned long long n;
  int h[4];
  tu_expect_error(ax_failure_odds(16, 0, 2, AX_PLACE_GROUP, &p), "need at least 1");
  tu_expect_error(ax_failure_odds(4, 5, 2, AX_PLACE_RING, &p), "but there are 4");
  tu_expect_error(ax_failure_odds(0, 1, 0, AX_PLACE_GROUP, &p), "0 nodes");
  tu_expect_error(ax_failure_odds(16, 2, 17, AX_PLACE_GROUP, &p), "expected 0 to 16");
  tu_expect_error(ax_failure_odds(16, 2, -1, AX_PLACE_RING, &p), "expected 0 to 16");
  tu_expect_error(ax_failure_odds(16, 2, 2, (AxPlacement)7, &p), "unknown placement");
  tu_expect_error(ax_failure_odds(AX_FAILURE_ODDS_MAX_NODES + 1, 2, 2, AX_PLACE_RING, &p),
             "counted for up to");
  tu_expect_error(ax_recoverable_sets(8, 9, 1, AX_PLACE_GROUP, &c), "distinct nodes");
  tu_expect_error(ax_failure_odds_enumerate(25, 2, 2, AX_PLACE_GROUP, &n, NULL), "up to 24");
  tu_expect_error(ax_failure_odds_group_formula(10, 3, 3, &p), "m to divide N");
  tu_expect_error(ax_replica_holders(8, 2, AX_PLACE_GROUP, 8, h), "not one of 0..7");
  tu_expect_error(ax_replica_holders(8, 0, AX_PLACE_RING, 0, h), "need at least 1");
}
END_TEST

int main(void) {
  Suite *s = suite_create("failure_odds");
  TCase *tc = tu_tcase(s, "failure_odds", 60);
  tcase_add_test(tc, counting_matches_enumeration);
  tcase_add_test(tc, group_formula_matches_enumeration);
  tcase_add_test(tc, thesis_figures);
  tcase_add_test(tc, holders_follow_the_placement);
  tcase_add_test(tc, large_groups_match_the_product);
  tcase_add_test(tc, large_odds_fall_with_k);
  tcase_add_test(tc, bad_inputs_are_refused);
  int rc = tu_run(s);
  tu_cleanup();
  return rc;
}
