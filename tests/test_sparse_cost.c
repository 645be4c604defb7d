/* test_sparse_cost.c — the sparse embedding sync's cost model (src/plan/sparse_cost.h) against
 * hand-computed bytes and seconds: Zen flat (h_0's 4-byte counts and balanced owners' bitmaps),
 * the all-gather, the dense ring (comm_model.h's bytes), Zen in two levels (inside the node free
 * over an emulated link, only the cross level between nodes), and the choice: the fewest
 * seconds, or the fewest bytes when every byte costs the same. */
#include <math.h>

#include "src/plan/sparse_cost.h"
#include "testutil.h"

static const unsigned long long COUNTS[4] = {100, 80, 60, 50}; /* n_max 100, sum 290 */

static AxSparseCostIn input(int per_node, int hierarchical, int balanced) {
  const AxSparseLink link = {1e-3, 1e6};
  return (AxSparseCostIn){.ranks = 4, .per_node = per_node, .hierarchical = hierarchical,
                          .balanced = balanced, .rows = 1000, .cols = 10, .counts = COUNTS,
                          .inter = link, .intra = per_node > 1 ? (AxSparseLink){0, INFINITY}
                                                                : link};
}

static void expect(const AxSparseCost *c, unsigned long long bytes, unsigned long long inter,
                   double seconds, const char *what) {
  ck_assert_msg(c->bytes == bytes && c->inter_bytes == inter, "%s: %llu bytes (%llu between "
                "nodes), expected %llu (%llu)", what, c->bytes, c->inter_bytes, bytes, inter);
  ck_assert_msg(fabs(c->seconds - seconds) < 1e-12, "%s: %.9g s, expected %.9g", what,
                c->seconds, seconds);
}

/* A rank its own node: to each of 3 peers Zen sends counts 4, push 100·44/4 = 1100, bitmap
 * ceil(1000/32) = 32, values 4·10·290/4 = 2900 (4 messages); the all-gather 4 + 100·44; dense
 * the ring's 2·3/4·10000·4 in 2·3 steps. */
START_TEST(flat_by_hand) {
  AxSparseCostIn in = input(1, 0, 0);
  AxSparseCostOut out;
  ax_sparse_cost(&in, &out);
  expect(&out.by[AX_SPARSE_COST_ZEN], 12108, 12108, 0.012108 + 12e-3, "zen");
  expect(&out.by[AX_SPARSE_COST_ALLGATHER], 13212, 13212, 0.013212 + 6e-3, "allgather");
  expect(&out.by[AX_SPARSE_COST_DENSE], 60000, 60000, 0.06 + 6e-3, "dense");
  ck_assert_int_eq(out.choice, AX_SPARSE_COST_ALLGATHER); /* 19.2 ms, Zen's 4 latencies 24.1 */
  in.balanced = 1; /* the counts go as bitmaps of ceil(1000/8) = 125 bytes */
  ax_sparse_cost(&in, &out);
  expect(&out.by[AX_SPARSE_COST_ZEN], 3 * (125 + 1100 + 32 + 2900), 3 * 4157,
         3 * 4157 / 1e6 + 12e-3, "zen, balanced owners");
}
END_TEST

/* Two nodes of two ranks: flat Zen sends to 1 peer inside (free) and 2 outside; two levels send
 * inside the node (counts 4, push 100·44/2, bitmap ceil(1000/16) = 63, values 4·10·290/2) and
 * between the nodes Zen over 500 rows with a node's 145 rows, 72.5 a rank (counts 4, push
 * 72.5·44/2 = 1595, bitmap ceil(500/16) = 32, values 4·10·145/2 = 2900). */
START_TEST(two_levels_by_hand) {
  AxSparseCostIn in = input(2, 0, 0);
  AxSparseCostOut flat, two;
  ax_sparse_cost(&in, &flat);
  expect(&flat.by[AX_SPARSE_COST_ZEN], 12108, 2 * 4036, 2 * (4036 / 1e6 + 4e-3), "flat zen");
  expect(&flat.by[AX_SPARSE_COST_DENSE], 60000, 60000, 0.066, "dense across nodes");
  in.hierarchical = 1;
  ax_sparse_cost(&in, &two);
  expect(&two.by[AX_SPARSE_COST_ZEN], 8067 + 4531, 4531, 4531 / 1e6 + 4e-3, "two-level zen");
  ck_assert(two.by[AX_SPARSE_COST_ZEN].inter_bytes < flat.by[AX_SPARSE_COST_ZEN].inter_bytes);
  ck_assert_int_eq(two.choice, AX_SPARSE_COST_ZEN);
  in.per_node = 4; /* one node: the dense ring inside it */
  in.hierarchical = 0;
  ax_sparse_cost(&in, &flat);
  expect(&flat.by[AX_SPARSE_COST_DENSE], 60000, 0, 0, "dense inside a node");
}
END_TEST

/* Without a link (latency 0, a byte a second) the seconds are the bytes: the fewest bytes win. */
START_TEST(bytes_alone_without_a_link) {
  AxSparseCostIn in = input(1, 0, 0);
  in.inter = in.intra = (AxSparseLink){0, 1};
  AxSparseCostOut out;
  ax_sparse_cost(&in, &out);
  for (int a = 0; a < AX_SPARSE_COST_N; a++)
    ck_assert(out.by[a].seconds == (double)out.by[a].bytes);
  ck_assert_int_eq(out.choice, AX_SPARSE_COST_ZEN); /* 12108 < 13212 < 60000 */
}
END_TEST

int main(void) {
  Suite *s = suite_create("sparse_cost");
  TCase *tc = tu_tcase(s, "sparse cost", 30);
  tcase_add_test(tc, flat_by_hand);
  tcase_add_test(tc, two_levels_by_hand);
  tcase_add_test(tc, bytes_alone_without_a_link);
  return tu_run(s);
}
