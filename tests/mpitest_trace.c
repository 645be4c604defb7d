/* mpitest_trace.c — the ranks' trace clocks (mpi/trace_merge.h): the offset estimate of two
 * clocks from timed exchanges (ax_trace_clock_offset) against hand-made readings, and across
 * ranks of this one machine, whose CLOCK_MONOTONIC they share (every true offset is 0):
 *   - left to itself, ax_trace_clock_to_rank0 takes the shared clock as it is (offset 0 exactly);
 *   - made to measure, as across machines, each rank's offset is within half its round trip of 0;
 *   - after ax_trace_align every rank's origin is rank 0's to the bit. */
#include <math.h>

#include "mpi/trace_merge.h"
#include "mpitestutil.h"
#include "src/core/trace.h"
#include "testutil.h"

enum { RUN_TIMEOUT_S = 60 };

START_TEST(offset_from_the_shortest_round_trip) {
  /* the other clock reads 5 s ahead; the second exchange is the shortest (2 ms) and was read
   * 0.5 ms after its midpoint; the others, longer, read far from theirs */
  double t0[3] = {1.000, 2.000, 3.000}, t1[3] = {1.010, 2.002, 3.020};
  double tr[3] = {6.009, 7.0015, 8.001};
  double rtt, off = ax_trace_clock_offset(t0, tr, t1, 3, &rtt);
  ck_assert_double_eq_tol(rtt, 0.002, 1e-12);
  ck_assert_double_eq_tol(off, 5.0005, 1e-12);
  ck_assert(fabs(off - 5.0) <= rtt / 2);
  double one_rtt, one = ax_trace_clock_offset(t0, tr, t1, 1, &one_rtt); /* one exchange: it */
  ck_assert_double_eq_tol(one, 5.004, 1e-12);
  ck_assert_double_eq_tol(one_rtt, 0.010, 1e-12);
}
END_TEST

/* This rank's clock against rank 0's (ax_trace_clock_to_rank0), failures recorded. */
static void clock_to_rank0(int measure, double *offset, double *rtt) {
  *offset = *rtt = -1;
  mt_run_begin("trace clocks, measure %d", measure);
  mt_expect(ax_trace_clock_to_rank0(MPI_COMM_WORLD, measure, offset, rtt) == AX_OK, "%s",
            ax_error_message());
  mt_run_end();
}

START_TEST(one_machine_shares_its_clock) {
  double offset, rtt;
  clock_to_rank0(0, &offset, &rtt);
  mt_expect(offset == 0 && rtt == 0, "offset %g s, round trip %g s: expected 0 and 0 (one clock)",
            offset, rtt);
  mt_assert_all_ok("one machine's clock taken as it is");
}
END_TEST

START_TEST(measured_offset_within_half_a_round_trip) {
  double offset, rtt;
  clock_to_rank0(1, &offset, &rtt);
  if (mt_rank == 0)
    mt_expect(offset == 0 && rtt == 0, "rank 0: offset %g, round trip %g", offset, rtt);
  else
    mt_expect(rtt > 0 && fabs(offset) <= rtt / 2, "offset %g s against a round trip of %g s: "
              "the shared clock's true offset, 0, is further than half of it", offset, rtt);
  mt_assert_all_ok("measured offsets");
}
END_TEST

START_TEST(aligned_origins_are_rank_0s) {
  mt_run_begin("trace origins aligned");
  AxTrace t;
  ax_trace_off(&t);
  mt_expect(ax_trace_align(&t, MPI_COMM_WORLD) == AX_OK, "%s", ax_error_message());
  double origin0 = t.origin;
  MPI_Bcast(&origin0, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  mt_expect(t.origin == origin0, "origin %.9f s, rank 0's %.9f s", t.origin, origin0);
  mt_run_end();
  mt_assert_all_ok("aligned origins");
}
END_TEST

static Suite *trace_suite(void) {
  Suite *s = suite_create("trace");
  TCase *tc = tu_tcase(s, "trace clocks", 120);
  tcase_add_test(tc, offset_from_the_shortest_round_trip);
  tcase_add_test(tc, one_machine_shares_its_clock);
  tcase_add_test(tc, measured_offset_within_half_a_round_trip);
  tcase_add_test(tc, aligned_origins_are_rank_0s);
  return s;
}

int main(int argc, char **argv) {
  mt_init(&argc, &argv);
  return mt_finish(mt_run_watched(trace_suite(), RUN_TIMEOUT_S));
}
