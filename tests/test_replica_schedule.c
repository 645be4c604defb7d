/* test_replica_schedule.c — Gemini's replica schedule (src/plan/replica_schedule.h) and the
 * link log it learns from (mpi/link/link_log.h): the log's window and wrap-around, appends from
 * two threads at once all read back; idle spans of a hand-made timeline (overlapping uses
 * merged, the replicas' own left out, short gaps dropped); Algorithm 6.2's chunks against
 * hand-computed cases and, on random spans, never more link time than the span allows and
 * every byte placed when the last span is unbounded; a step's chunks with the leftover left to
 * its last span, the smallest interval whose spans hold a checkpoint, and the profile of each
 * gap's minimum over a window of steps (restarted when the step changes shape), by hand. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/link/link_log.h"
#include "src/plan/replica_schedule.h"
#include "testutil.h"

enum { REPLICA = 6 };

static void *new_log(void) {
  void *log = tu_alloc(ax_link_log_bytes());
  ax_link_log_init(log);
  return log;
}

START_TEST(log_reads_its_window) {
  void *log = new_log();
  for (int i = 0; i < 10; i++) ax_link_log_append(log, 100 * i, 100 * i + 50, i % 3);
  AxLinkUse u[16];
  ck_assert_int_eq(ax_link_log_read(log, 0, 1000, u, 16), 10);
  ck_assert_int_eq(ax_link_log_read(log, 160, 330, u, 16), 2); /* [200,250) and [300,350) */
  ck_assert(u[0].start_ns == 200 && u[0].end_ns == 250 && u[0].cls == 2);
  ck_assert(u[1].start_ns == 300 && u[1].cls == 0);
  ck_assert_int_eq(ax_link_log_read(log, 149, 151, u, 16), 1); /* overlaps [100,150) only */
  ck_assert_int_eq(ax_link_log_read(log, 0, 1000, u, 3), 3);   /* cap */
}
END_TEST

START_TEST(log_keeps_the_newest) {
  void *log = new_log();
  int n = AX_LINK_LOG_ENTRIES + 100;
  for (int i = 0; i < n; i++) ax_link_log_append(log, i, i + 1, 0);
  AxLinkUse *u = tu_alloc(AX_LINK_LOG_ENTRIES * sizeof *u);
  ck_assert_int_eq(ax_link_log_read(log, 0, n, u, AX_LINK_LOG_ENTRIES), AX_LINK_LOG_ENTRIES);
  ck_assert(u[0].start_ns == 100 && u[AX_LINK_LOG_ENTRIES - 1].start_ns == n - 1);
}
END_TEST

typedef struct {
  void *log;
  int base;
} Appender;

static void *append_many(void *arg) {
  Appender *a = arg;
  for (int i = 0; i < 1000; i++) ax_link_log_append(a->log, a->base + i, a->base + i + 1, a->base);
  return NULL;
}

START_TEST(log_takes_concurrent_appends) {
  void *log = new_log();
  Appender a[2] = {{log, 0}, {log, 100000}};
  pthread_t th[2];
  for (int i = 0; i < 2; i++) ck_assert_int_eq(pthread_create(&th[i], NULL, append_many, &a[i]), 0);
  for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
  AxLinkUse *u = tu_alloc(2000 * sizeof *u);
  ck_assert_int_eq(ax_link_log_read(log, 0, 1 << 30, u, 2000), 2000);
  unsigned char *seen = tu_alloc(2000);
  memset(seen, 0, 2000);
  for (int i = 0; i < 2000; i++) {
    int k = u[i].cls == 0 ? (int)u[i].start_ns : 1000 + (int)(u[i].start_ns - 100000);
    ck_assert(k >= 0 && k < 2000 && !seen[k] && u[i].end_ns == u[i].start_ns + 1);
    seen[k] = 1;
  }
}
END_TEST

START_TEST(idle_spans_of_a_timeline) {
  /* window [1000, 2000) ns; busy [1100,1200) and [1150,1300) (merged), a replica [1400,1500)
   * (ignored), [1600,1605); idle: [1000,1100), [1300,1600), [1605,2000) */
  AxLinkUse u[] = {{1150, 1300, 1}, {1100, 1200, 2}, {1600, 1605, 1}, {1400, 1500, REPLICA},
                   {500, 900, 1}};
  AxSpan s[8];
  int n = ax_idle_spans(u, 5, 1000, 2000, REPLICA, 0, s, 8);
  ck_assert_int_eq(n, 3);
  const double want[3][2] = {{0, 100e-9}, {300e-9, 600e-9}, {605e-9, 1000e-9}};
  for (int i = 0; i < 3; i++)
    ck_assert(fabs(s[i].start_s - want[i][0]) < 1e-15 && fabs(s[i].end_s - want[i][1]) < 1e-15);
  ck_assert_int_eq(ax_idle_spans(u, 5, 1000, 2000, REPLICA, 150e-9, s, 8), 2); /* 100 ns dropped */
  ck_assert_int_eq(ax_idle_spans(u, 5, 1000, 2000, REPLICA, 0, s, 1), 1);     /* cap */
  ck_assert_int_eq(ax_idle_spans(u, 0, 1000, 2000, REPLICA, 0, s, 8), 1);     /* all idle */
  ck_assert_int_eq(ax_span_at(s, 1, 500e-9), 0);
  n = ax_idle_spans(u, 5, 1000, 2000, REPLICA, 0, s, 8);
  ck_assert_int_eq(ax_span_at(s, n, 350e-9), 1);
  ck_assert_int_eq(ax_span_at(s, n, 200e-9), -1);
}
END_TEST

/* Algorithm 6.2 over a whole step, the thesis's outer loop around ax_fill_span: `copies`
 * checkpoints of `bytes` each into spans[0..n) (last_unbounded: the last span infinite, as the
 * thesis sets it). Returns the bytes placed; *chunks the chunks cut. */
static size_t partition(const AxReplicaLink *l, const AxSpan *spans, int n, size_t bytes,
                        int copies, int last_unbounded, int *chunks) {
  size_t placed = 0, remain = bytes;
  int copy = 0;
  *chunks = 0;
  for (int i = 0; i < n && copy < copies; i++) {
    double span = last_unbounded && i == n - 1 ? INFINITY
                                               : l->mu * (spans[i].end_s - spans[i].start_s);
    for (;;) {
      size_t before = remain;
      double used;
      *chunks += ax_fill_span(l, span, &remain, NULL, 0, &used);
      placed += before - remain;
      span -= used;
      if (remain > 0 || ++copy == copies) break;
      remain = bytes; /* the next copy, in what is left of this span */
    }
  }
  return placed;
}

/* alpha 1 ms, 1 MB/s, chunks of at most 1000 bytes (f = 2 ms), at least 10 */
static const AxReplicaLink LINK = {{1e-3, 1e6}, 0.8, 1000, 10};

START_TEST(fill_span_by_hand) {
  size_t sizes[16], remain = 2500;
  double used;
  /* 10 ms: 1000 (2 ms), 1000 (2 ms), 500 (1.5 ms) */
  ck_assert_int_eq(ax_fill_span(&LINK, 10e-3, &remain, sizes, 16, &used), 3);
  ck_assert(sizes[0] == 1000 && sizes[1] == 1000 && sizes[2] == 500 && remain == 0);
  ck_assert(fabs(used - 5.5e-3) < 1e-12);
  /* 2.5 ms: one full chunk; the 0.5 ms left holds no bytes after alpha */
  remain = 5000;
  ck_assert_int_eq(ax_fill_span(&LINK, 2.5e-3, &remain, sizes, 16, &used), 1);
  ck_assert(remain == 4000 && fabs(used - 2e-3) < 1e-12);
  /* 1.5 ms: a partial chunk of (1.5 - 1) ms x 1 MB/s = 500 bytes */
  remain = 5000;
  ck_assert_int_eq(ax_fill_span(&LINK, 1.5e-3, &remain, sizes, 16, &used), 1);
  ck_assert(sizes[0] == 500 && remain == 4500);
  /* 1.005 ms: 5 bytes would fit, under the minimum of 10: nothing */
  remain = 5000;
  ck_assert_int_eq(ax_fill_span(&LINK, 1.005e-3, &remain, sizes, 16, &used), 0);
  /* ... but the last 5 bytes of a checkpoint go */
  remain = 5;
  ck_assert_int_eq(ax_fill_span(&LINK, 1.005e-3, &remain, sizes, 16, &used), 1);
  ck_assert(remain == 0);
}
END_TEST

START_TEST(partition_respects_spans) {
  srand(7);
  for (int trial = 0; trial < 500; trial++) {
    AxSpan s[6];
    double t = 0, idle = 0;
    int n = 1 + rand() % 6;
    for (int i = 0; i < n; i++) {
      t += (rand() % 100) * 1e-4;
      double len = (rand() % 200) * 1e-4;
      s[i] = (AxSpan){t, t + len};
      t += len;
      idle += LINK.mu * len;
    }
    size_t bytes = 1 + (size_t)(rand() % 20000);
    int copies = 1 + rand() % 3, chunks;
    size_t placed = partition(&LINK, s, n, bytes, copies, 0, &chunks);
    ck_assert(placed <= bytes * (size_t)copies);
    /* the chunks' link time (chunks x alpha + bytes / B) fits the spans' mu share */
    ck_assert_msg(chunks * LINK.f.latency_s + (double)placed / LINK.f.bytes_per_s <= idle + 1e-12,
                  "trial %d: %zu bytes in %d chunks exceed %.6f s", trial, placed, chunks, idle);
    ck_assert(partition(&LINK, s, n, bytes, copies, 1, &chunks) ==
              bytes * (size_t)copies);
  }
}
END_TEST

START_TEST(partition_by_hand) {
  /* two spans of 10.5 ms: mu = 0.8 leaves 8.4 ms each = 4 full chunks each (the 0.4 ms
   * left is less than alpha) */
  AxSpan s[2] = {{0, 10.5e-3}, {20e-3, 30.5e-3}};
  int chunks;
  ck_assert_uint_eq(partition(&LINK, s, 2, 100000, 1, 0, &chunks), 8000);
  ck_assert_int_eq(chunks, 8);
  /* two copies of 3000 bytes: 3 chunks each, the second copy starting in the first span */
  ck_assert_uint_eq(partition(&LINK, s, 2, 3000, 2, 0, &chunks), 6000);
  ck_assert_int_eq(chunks, 6);
}
END_TEST


/* One step over three spans (the last the leftover's): the first two hold 8000 bytes (4 full
 * chunks each, as above); the rest is the leftover, sent in the last span. */
START_TEST(step_fill_leaves_the_rest_to_the_last_span) {
  AxSpan s[3] = {{0, 10.5e-3}, {20e-3, 30.5e-3}, {40e-3, 41e-3}};
  int chunks;
  ck_assert_uint_eq(ax_step_fill(&LINK, s, 3, 100000, &chunks), 8000); /* 92000 left over */
  ck_assert_int_eq(chunks, 8);
  ck_assert_uint_eq(ax_step_fill(&LINK, s, 3, 5000, &chunks), 5000); /* 4 + 1 chunks, none left */
  ck_assert_int_eq(chunks, 5);
  ck_assert_uint_eq(ax_step_fill(&LINK, s, 3, 8500, &chunks), 8000); /* 500 left over */
  ck_assert_uint_eq(ax_step_fill(&LINK, s, 1, 8500, &chunks), 0);    /* only the last span */
  ck_assert_int_eq(chunks, 0);
}
END_TEST

/* The smallest interval whose steps' spans hold a checkpoint: 8000 bytes a step (above). */
START_TEST(interval_by_hand) {
  AxSpan s[3] = {{0, 10.5e-3}, {20e-3, 30.5e-3}, {40e-3, 41e-3}};
  ck_assert_int_eq(ax_replica_interval(&LINK, s, 3, 8000, 1), 1);
  ck_assert_int_eq(ax_replica_interval(&LINK, s, 3, 8001, 1), 2);  /* 1 byte in a second step */
  ck_assert_int_eq(ax_replica_interval(&LINK, s, 3, 20000, 1), 3); /* 8000 + 8000 + 4000 */
  ck_assert_int_eq(ax_replica_interval(&LINK, s, 3, 20000, 2), 4); /* a multiple of every */
  ck_assert_int_eq(ax_replica_interval(&LINK, s, 3, 0, 3), 3);
  /* spans of 1.2 ms: mu leaves 0.96 ms, less than alpha: no interval */
  AxSpan tiny[2] = {{0, 1.2e-3}, {2e-3, 3.2e-3}};
  ck_assert_int_eq(ax_replica_interval(&LINK, tiny, 2, 5000, 1), 0);
  /* 1.3 ms: 0.04 ms after alpha = 40 bytes a step; 100 bytes take 3 steps (40, 40, 20) */
  AxSpan thin[2] = {{0, 1.3e-3}, {2e-3, 3.3e-3}};
  ck_assert_int_eq(ax_replica_interval(&LINK, thin, 2, 100, 1), 3);
}
END_TEST

/* The profile: each gap as long as its shortest over the window, where the newest step had
 * it; a step with another number of gaps restarts it; the oldest step leaves the window. */
START_TEST(profile_takes_each_gaps_minimum) {
  AxSpanProfile p;
  ck_assert_int_eq(ax_span_profile_init(&p, 2, 4), 0);
  AxSpan a[2] = {{0, 1}, {2, 4}}, b[2] = {{0.1, 0.9}, {2.5, 5.5}}, out[4];
  ck_assert_int_eq(ax_span_profile_add(&p, a, 2), 0);
  ck_assert_int_eq(ax_span_profile_add(&p, b, 2), 0);
  ck_assert_int_eq(ax_span_profile_min(&p, out), 2);
  ck_assert(fabs(out[0].start_s - 0.1) < 1e-12 && fabs(out[0].end_s - 0.9) < 1e-12); /* 0.8 */
  ck_assert(fabs(out[1].start_s - 2.5) < 1e-12 && fabs(out[1].end_s - 4.5) < 1e-12); /* 2 */
  AxSpan c[2] = {{0, 3}, {4, 7}}; /* a drops out of the window of 2: b's lengths and c's */
  ck_assert_int_eq(ax_span_profile_add(&p, c, 2), 0);
  ck_assert_int_eq(ax_span_profile_min(&p, out), 2);
  ck_assert(fabs(out[0].end_s - 0.8) < 1e-12 && fabs(out[1].end_s - 7) < 1e-12);
  AxSpan d[1] = {{1, 2}}; /* another shape: profiled again from this step */
  ck_assert_int_eq(ax_span_profile_add(&p, d, 1), 1);
  ck_assert_int_eq(ax_span_profile_min(&p, out), 1);
  ck_assert(out[0].start_s == 1 && out[0].end_s == 2);
  ax_span_profile_free(&p);
}
END_TEST

int main(void) {
  Suite *s = suite_create("replica_schedule");
  TCase *tc = tu_tcase(s, "replica_schedule", 60);
  tcase_add_test(tc, log_reads_its_window);
  tcase_add_test(tc, log_keeps_the_newest);
  tcase_add_test(tc, log_takes_concurrent_appends);
  tcase_add_test(tc, idle_spans_of_a_timeline);
  tcase_add_test(tc, fill_span_by_hand);
  tcase_add_test(tc, partition_respects_spans);
  tcase_add_test(tc, partition_by_hand);
  tcase_add_test(tc, step_fill_leaves_the_rest_to_the_last_span);
  tcase_add_test(tc, interval_by_hand);
  tcase_add_test(tc, profile_takes_each_gaps_minimum);
  int rc = tu_run(s);
  tu_cleanup();
  return rc;
}
