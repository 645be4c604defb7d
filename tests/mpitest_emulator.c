/* mpitest_emulator.c — the link emulator (mpi/link/link_emulator.h) and the traffic counters
 * (mpi/traffic.h), on whatever number of ranks it runs on (the tests that need two ranks pass
 * on one, the shared-link test needs four):
 *   - --emulate-link's text: what parses to what, and every malformed form refused;
 *   - virtual nodes from --ranks-per-node, and the counts that refuse;
 *   - the node-shared link table: one link queues, two links do not;
 *   - the schedule the emulator computes, exactly (start = max(hand-over, link free), busy =
 *     ceil(S/BW), due = start + busy + LAT): a message on a free link, two on one link (the
 *     second queues), the opposite direction (does not queue), two ranks of a node on their
 *     shared link (they queue), a message within a node (not held at all);
 *   - measured, the lower bound only: a receive completes no sooner than its message was due,
 *     so a message of S bytes lands >= LAT + S/BW after its hand-over (how much later is
 *     measured by `axonn bench p2p --emulate-link`, docs/benchmarks.md);
 *   - waiting: the pause decision (spin, then sleep; idle, on the bell) exactly, a pause past
 *     the spin sleeps, and an idle wait sleeps on the bell its message rings;
 *   - a held send goes out while its sender only waits for a receive (no deadlock); a dropped
 *     held send never arrives;
 *   - idle work set on the links runs in the waits of the thread that set it (emulated or
 *     real links), never inside itself, never on another thread, and not once unset;
 *   - the collectives and the p2p engine over an emulated link: exact results, every byte
 *     counted once by class, crossed or not, and no send left held.
 * Nothing here asserts that anything took less than some time: on a loaded machine anything
 * can take longer. Times are CLOCK_MONOTONIC, one clock for every rank of the machine. */
#include <check.h>
#include <limits.h>
#include <math.h>
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mpi/coll/collectives.h"
#include "mpi/link/link_emulator.h"
#include "mpi/link/link_table.h"
#include "mpi/link/p2p.h"
#include "mpi/mpi_util.h"
#include "mpi/traffic.h"
#include "mpitestutil.h"
#include "src/core/error.h"
#include "testutil.h"

enum { RUN_TIMEOUT_S = 120 };

static MPI_Comm g_comm; /* a duplicate of MPI_COMM_WORLD */

/* ------------------------------------------------------------------ helpers */

/* Collective: the emulator with `ranks_per_node` and link text (NULL: not emulated); logged:
 * each link keeps its log of uses. */
static AxLinkEmu *make_emu_logged(int ranks_per_node, const char *link, int logged) {
  AxLinkEmuConfig lc = {.ranks_per_node = ranks_per_node, .log_uses = logged};
  if (link) ck_assert_msg(ax_link_spec_parse(link, &lc.link) == AX_OK, "%s", ax_error_message());
  AxLinkEmu *e = NULL;
  int rc = ax_link_emu_create(&e, g_comm, &lc);
  ck_assert_msg(rc == AX_OK, "ax_link_emu_create: %s", ax_error_message());
  return e;
}

static AxLinkEmu *make_emu(int ranks_per_node, const char *link) {
  return make_emu_logged(ranks_per_node, link, 0);
}

static AxCommConfig config(AxLinkEmu *e, AxTraffic *t) {
  AxCommConfig cc = ax_comm_config_default();
  cc.links = e;
  cc.traffic = t;
  return cc;
}

static void isend(const AxCommConfig *cc, const void *buf, size_t bytes, int dest, int tag,
                  AxLinkSend *s) {
  AxLinkMsg m = {.buf = buf, .count = (int)bytes, .type = MPI_BYTE, .bytes = bytes,
                 .dest = dest, .dest_world = dest, .tag = tag, .comm = g_comm,
                 .cls = AX_TRAFFIC_OTHER};
  ck_assert_msg(ax_link_isend(cc, &m, s) == AX_OK, "ax_link_isend: %s", ax_error_message());
}

static void wait_send(const AxCommConfig *cc, AxLinkSend *s) {
  ck_assert_msg(ax_link_wait(cc, s) == AX_OK, "ax_link_wait: %s", ax_error_message());
}

static void wait_recv(const AxCommConfig *cc, MPI_Request *r) {
  ck_assert_msg(ax_link_wait_recv(cc, r, MPI_STATUS_IGNORE) == AX_OK, "%s", ax_error_message());
}

/* ------------------------------------------------------------------ local: text, counters */

START_TEST(link_text_parses_and_refuses) {
  static const struct {
    const char *text;
    double bytes_per_s, latency_s;
  } good[] = {
      {"10Gbps,5us", 1.25e9, 5e-6}, {"100Gbps", 12.5e9, 0},     {"1.5GB/s,2ms", 1.5e9, 2e-3},
      {"800Kbps", 1e5, 0},          {"1Mbps,1s", 125e3, 1},     {"2kB/s,10ns", 2e3, 1e-8},
      {"8bps", 1, 0},               {"1Tb/s,0s", 125e9, 0},     {"3MB/s,0.5ms", 3e6, 5e-4},
  };
  for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
    AxLinkSpec s;
    ck_assert_msg(ax_link_spec_parse(good[i].text, &s) == AX_OK, "%s: %s", good[i].text,
                  ax_error_message());
    ck_assert_msg(fabs(s.bytes_per_s - good[i].bytes_per_s) <= 1e-12 * good[i].bytes_per_s &&
                      fabs(s.latency_s - good[i].latency_s) <= 1e-12 * good[i].latency_s,
                  "%s: %g B/s, %g s", good[i].text, s.bytes_per_s, s.latency_s);
  }
  static const char *const bad[] = {"fast", "10Gbps,", "-1Gbps", "0", "10Gbps,5parsecs",
                                    "0Gbps", "", "10 Gbps", "10", "10Gbps,5", "10Gbps,-5us",
                                    "Gbps", "10Gbps,,5us", "nanGbps", "1e999Gbps", "10Gbps,2h",
                                    "1e300GB/s"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    AxLinkSpec s = {1, 1};
    ck_assert_msg(ax_link_spec_parse(bad[i], &s) != AX_OK, "'%s' accepted", bad[i]);
    ck_assert_msg(s.bytes_per_s == 0 && s.latency_s == 0, "'%s' left a link behind", bad[i]);
    ck_assert_msg(strchr(ax_error_text(), '\n') == NULL, "'%s': a multi-line message", bad[i]);
    ax_error_clear();
  }
  char text[96];
  AxLinkSpec s;
  ck_assert_int_eq(ax_link_spec_parse("10Gbps,5us", &s), AX_OK);
  ax_link_spec_format(&s, text, sizeof text);
  ck_assert_str_eq(text, "10 Gb/s, latency 5 us");
}
END_TEST

START_TEST(traffic_counts_by_class) {
  AxTraffic t, before, sum;
  memset(&t, 0, sizeof t);
  memset(&sum, 0, sizeof sum);
  ck_assert_str_eq(ax_traffic_class_name(AX_TRAFFIC_OTHER), "other");
  ck_assert_str_eq(ax_traffic_class_name(AX_TRAFFIC_PIPELINE_FORWARD), "pipeline_forward");
  ck_assert_str_eq(ax_traffic_class_name(AX_TRAFFIC_PIPELINE_BACKWARD), "pipeline_backward");
  ck_assert_str_eq(ax_traffic_class_name(AX_TRAFFIC_DATA_PARALLEL), "data_parallel");
  ck_assert_str_eq(ax_traffic_class_name(AX_TRAFFIC_EMBEDDING_SYNC), "embedding_sync");
  ck_assert_str_eq(ax_traffic_class_name(AX_TRAFFIC_N_CLASSES), "?");
  ax_traffic_add(&t, AX_TRAFFIC_DATA_PARALLEL, 1, 100);
  before = t;
  ax_traffic_add(&t, AX_TRAFFIC_DATA_PARALLEL, 0, 20);
  ax_traffic_add(&t, AX_TRAFFIC_PIPELINE_FORWARD, 1, 3);
  ax_traffic_add(NULL, AX_TRAFFIC_OTHER, 0, 5); /* no counters: nothing */
  ck_assert_uint_eq(ax_traffic_bytes(&t, AX_TRAFFIC_DATA_PARALLEL), 120);
  ck_assert_uint_eq(ax_traffic_crossed(&t, AX_TRAFFIC_DATA_PARALLEL), 100);
  ck_assert_uint_eq(ax_traffic_bytes(&t, AX_TRAFFIC_N_CLASSES), 123);
  ck_assert_uint_eq(ax_traffic_crossed(&t, AX_TRAFFIC_N_CLASSES), 103);
  ax_traffic_add_delta(&sum, &t, &before);
  ck_assert_uint_eq(ax_traffic_bytes(&sum, AX_TRAFFIC_N_CLASSES), 23);
  ck_assert_uint_eq(ax_traffic_crossed(&sum, AX_TRAFFIC_N_CLASSES), 3);
}
END_TEST

/* The table on this rank alone: one link queues, another does not. */
START_TEST(link_table_queues_per_link) {
  AxLinkTable t;
  ck_assert_int_eq(ax_link_table_create(&t, MPI_COMM_SELF, 3, 0), AX_OK);
  ck_assert_int_eq(ax_link_table_reserve(&t, 1, 1000, 100), 1000);
  ck_assert_int_eq(ax_link_table_reserve(&t, 1, 1000, 50), 1100); /* behind the first */
  ck_assert_int_eq(ax_link_table_reserve(&t, 2, 1000, 100), 1000); /* another link: free */
  ck_assert_int_eq(ax_link_table_reserve(&t, 1, 5000, 10), 5000);  /* free again later */
  ax_link_table_destroy(&t);
}
END_TEST

/* ------------------------------------------------------------------ virtual nodes */

START_TEST(virtual_nodes_follow_ranks_per_node) {
  AxLinkEmu *e = make_emu(1, NULL); /* every rank a node */
  ck_assert_int_eq(ax_link_nodes(e), mt_size);
  for (int r = 0; r < mt_size; r++) {
    ck_assert_int_eq(ax_link_node_of(e, r), r);
    ck_assert_int_eq(ax_link_crosses(e, r), r != mt_rank);
  }
  ck_assert(!ax_link_emulating(e));
  ax_link_emu_destroy(e);
  e = make_emu(mt_size, "1Gbps"); /* one node: nothing crosses */
  ck_assert_int_eq(ax_link_nodes(e), 1);
  for (int r = 0; r < mt_size; r++) ck_assert(!ax_link_crosses(e, r));
  ck_assert(ax_link_emulating(e));
  ax_link_emu_destroy(e);
  e = make_emu(0, NULL); /* the real nodes: this machine */
  ck_assert_int_eq(ax_link_nodes(e), 1);
  ax_link_emu_destroy(e);
  if (mt_size % 2 == 0) {
    e = make_emu(2, "1Gbps");
    ck_assert_int_eq(ax_link_nodes(e), mt_size / 2);
    for (int r = 0; r < mt_size; r++) ck_assert_int_eq(ax_link_node_of(e, r), r / 2);
    ax_link_emu_destroy(e);
  }
  /* refused alike on every rank: a count that does not divide the job, a negative one */
  AxLinkEmuConfig bad = {.ranks_per_node = mt_size + 1};
  AxLinkEmu *none = NULL;
  ck_assert_int_ne(ax_link_emu_create(&none, g_comm, &bad), AX_OK);
  ck_assert_ptr_null(none);
  ck_assert_msg(strstr(ax_error_text(), "does not divide the job"), "%s", ax_error_text());
  ax_error_clear();
  bad.ranks_per_node = -2;
  ck_assert_int_ne(ax_link_emu_create(&none, g_comm, &bad), AX_OK);
  ck_assert_msg(strstr(ax_error_text(), "negative"), "%s", ax_error_text());
  ax_error_clear();
}
END_TEST

/* ------------------------------------------------------------------ schedules and timing */

/* 10 MB/s, so 1 MB holds the link for exactly 100 ms; latency 20 ms. */
#define LINK "80Mbps,20ms"
#define BW 1e7
#define LAT_NS 20000000LL
enum { S = 1000 * 1000 };

/* busy = ceil(bytes * 1e9 / BW) in ns, computed here from the link's text, not the emulator's. */
static long long busy_ns(size_t bytes, double bytes_per_s) {
  return (long long)ceil((double)bytes * 1e9 / bytes_per_s);
}

/* The schedule of the send this rank just handed over. */
static AxLinkSchedule last_schedule(const AxLinkEmu *e) {
  AxLinkSchedule s;
  ck_assert_msg(ax_link_last_schedule(e, &s) == AX_OK, "%s", ax_error_message());
  return s;
}

/* The emulator's promise, exactly: start = max(handover, the link's free time), the link held
 * for busy = ceil(S/BW), due = start + busy + latency. Records failures on this rank. */
static void expect_schedule(const AxLinkSchedule *s, long long link_free, size_t bytes,
                            double bytes_per_s, long long lat_ns, const char *what) {
  long long start = s->handover_ns > link_free ? s->handover_ns : link_free;
  long long busy = busy_ns(bytes, bytes_per_s);
  mt_expect(s->bytes == bytes && s->start_ns == start && s->busy_ns == busy &&
                s->due_ns == start + busy + lat_ns,
            "%s: handed over at %lld with the link free at %lld: start %lld (want %lld), busy "
            "%lld (want %lld), due %lld (want %lld), %zu bytes", what, s->handover_ns, link_free,
            s->start_ns, start, s->busy_ns, busy, s->due_ns, start + busy + lat_ns, s->bytes);
}

/* Rank 0 sends `n` messages of S to rank 1 at once, keeping each one's schedule; rank 1 notes
 * when each receive completed (CLOCK_MONOTONIC ns: one clock for every rank of the machine).
 * Both ranks end with all the schedules. */
static void send_burst(const AxCommConfig *cc, int n, AxLinkSchedule *sched, long long *done) {
  char *buf = tu_alloc((size_t)n * S);
  memset(buf, 7, (size_t)n * S);
  MPI_Request r[4];
  if (mt_rank == 1)
    for (int i = 0; i < n; i++)
      MPI_Irecv(buf + (size_t)i * S, S, MPI_BYTE, 0, 10 + i, g_comm, &r[i]);
  MPI_Barrier(g_comm);
  if (mt_rank == 0) {
    AxLinkSend s[4];
    for (int i = 0; i < n; i++) {
      isend(cc, buf + (size_t)i * S, S, 1, 10 + i, &s[i]);
      sched[i] = last_schedule(cc->links);
    }
    for (int i = 0; i < n; i++) wait_send(cc, &s[i]);
  } else if (mt_rank == 1) {
    for (int i = 0; i < n; i++) {
      wait_recv(cc, &r[i]);
      done[i] = ax_link_now_ns();
    }
  }
  MPI_Bcast(sched, n * (int)sizeof *sched, MPI_BYTE, 0, g_comm);
  MPI_Barrier(g_comm);
}

START_TEST(one_message_takes_latency_plus_size_over_bandwidth) {
  if (mt_size < 2) return;
  AxLinkEmu *e = make_emu(1, LINK);
  AxTraffic t;
  memset(&t, 0, sizeof t);
  AxCommConfig cc = config(e, &t);
  AxLinkSchedule s[1];
  long long done[1] = {0}, model = LAT_NS + busy_ns(S, BW);
  mt_run_begin("one emulated message");
  send_burst(&cc, 1, s, done);
  mt_run_end();
  if (mt_rank == 0) {
    expect_schedule(&s[0], 0, S, BW, LAT_NS, "1 MB on a free link");
    mt_expect(ax_link_busy_ns(e, S) == 100000000LL && ax_link_latency_ns(e) == LAT_NS,
              "1 MB over %s: busy %lld ns, latency %lld ns", LINK, ax_link_busy_ns(e, S),
              ax_link_latency_ns(e));
    mt_expect(ax_traffic_crossed(&t, AX_TRAFFIC_OTHER) == S && ax_traffic_bytes(&t, 0) == S,
              "counted %llu bytes, %llu crossed; sent %d across", ax_traffic_bytes(&t, 0),
              ax_traffic_crossed(&t, 0), S);
    AxLinkStats st = ax_link_stats(e);
    mt_expect(st.held == 1 && st.posted == 1 && st.late_ns_max >= 0,
              "held %llu, posted %llu, late by up to %lld ns", st.held, st.posted,
              st.late_ns_max);
  }
  if (mt_rank == 1) /* the lower bound only: how much later it lands is a benchmark's */
    mt_expect(done[0] >= s[0].due_ns && done[0] - s[0].handover_ns >= model,
              "1 MB over %s landed %.6f s after its hand-over (due after %.6f s); the link "
              "needs %.6f s", LINK, (done[0] - s[0].handover_ns) * 1e-9,
              (s[0].due_ns - s[0].handover_ns) * 1e-9, model * 1e-9);
  ax_link_emu_destroy(e);
  mt_assert_all_ok("one message");
}
END_TEST

/* The second message starts when the first has left the link (or at its own hand-over, if
 * that is later: the schedule says which), so it lands >= LAT + 2 S/BW after the first was
 * handed over. */
START_TEST(messages_on_one_link_queue) {
  if (mt_size < 2) return;
  AxLinkEmu *e = make_emu(1, LINK);
  AxCommConfig cc = config(e, NULL);
  AxLinkSchedule s[2];
  long long done[2] = {0, 0};
  mt_run_begin("two messages on one link");
  send_burst(&cc, 2, s, done);
  mt_run_end();
  if (mt_rank == 0) {
    expect_schedule(&s[0], 0, S, BW, LAT_NS, "the first message");
    expect_schedule(&s[1], s[0].start_ns + s[0].busy_ns, S, BW, LAT_NS, "the second message");
    mt_expect(s[1].link == 1 && s[0].link == 1, "links %d and %d, expected node 1's",
              s[0].link, s[1].link);
  }
  if (mt_rank == 1) {
    long long need = LAT_NS + 2 * busy_ns(S, BW);
    mt_expect(done[0] >= s[0].due_ns, "the first message landed before its due time");
    mt_expect(done[1] >= s[1].due_ns && done[1] - s[0].handover_ns >= need,
              "the second message landed %.6f s after the first was handed over; queued "
              "behind it on one link it needs %.6f s", (done[1] - s[0].handover_ns) * 1e-9,
              need * 1e-9);
  }
  ax_link_emu_destroy(e);
  mt_assert_all_ok("two messages on one link");
}
END_TEST

/* Ranks 0 and 1 send each other S at once: each direction is its own link, so each starts at
 * its own hand-over whatever the other direction carries. */
START_TEST(opposite_directions_do_not_queue) {
  if (mt_size < 2) return;
  const double slow_bw = 1e6; /* 1 MB: 1 s each way */
  const long long lat = 1000000;
  AxLinkEmu *e = make_emu(1, "8Mbps,1ms");
  AxCommConfig cc = config(e, NULL);
  char *out = tu_alloc(S), *in = tu_alloc(S);
  memset(out, 1, S);
  mt_run_begin("both directions at once");
  if (mt_rank < 2) {
    int peer = 1 - mt_rank;
    MPI_Request r;
    AxLinkSend s;
    MPI_Irecv(in, S, MPI_BYTE, peer, 20, g_comm, &r);
    MPI_Sendrecv(MPI_BOTTOM, 0, MPI_BYTE, peer, 22, MPI_BOTTOM, 0, MPI_BYTE, peer, 22, g_comm,
                 MPI_STATUS_IGNORE);
    isend(&cc, out, S, peer, 20, &s);
    AxLinkSchedule mine = last_schedule(e), theirs;
    wait_recv(&cc, &r);
    long long got = ax_link_now_ns();
    wait_send(&cc, &s);
    MPI_Sendrecv(&mine, (int)sizeof mine, MPI_BYTE, peer, 21, &theirs, (int)sizeof theirs,
                 MPI_BYTE, peer, 21, g_comm, MPI_STATUS_IGNORE);
    expect_schedule(&mine, 0, S, slow_bw, lat, "one direction, the other busy");
    mt_expect(mine.link == peer, "rank %d sent on the link to node %d", mt_rank, mine.link);
    mt_expect(got >= theirs.due_ns && got - theirs.handover_ns >= lat + busy_ns(S, slow_bw),
              "rank %d received %.6f s after rank %d's hand-over", mt_rank,
              (got - theirs.handover_ns) * 1e-9, peer);
  }
  MPI_Barrier(g_comm);
  mt_run_end();
  ax_link_emu_destroy(e);
  mt_assert_all_ok("opposite directions");
}
END_TEST

/* Four ranks, two nodes of two: ranks 0 and 1 each send S to the other node at once. They
 * share the link node 0 -> node 1, whose reservations are serialized across the two
 * processes: the earlier starts at its hand-over, the later when the earlier has left the
 * link (or at its own hand-over). The link's log, kept in the node's shared memory, holds
 * both reservations, seen alike by both senders; the link the other way holds none. */
START_TEST(ranks_of_a_node_share_its_link) {
  if (mt_size != 4) return;
  AxLinkEmu *e = make_emu_logged(2, LINK, 1);
  AxCommConfig cc = config(e, NULL);
  char *buf = tu_alloc(S);
  memset(buf, 3, S);
  AxLinkSchedule mine, all[4];
  memset(&mine, 0, sizeof mine);
  long long done = 0;
  mt_run_begin("two ranks of a node on one link");
  MPI_Request r = MPI_REQUEST_NULL;
  if (mt_rank >= 2) MPI_Irecv(buf, S, MPI_BYTE, mt_rank - 2, 30, g_comm, &r);
  MPI_Barrier(g_comm);
  if (mt_rank < 2) {
    AxLinkSend s;
    isend(&cc, buf, S, mt_rank + 2, 30, &s);
    mine = last_schedule(e);
    wait_send(&cc, &s);
  } else {
    wait_recv(&cc, &r);
    done = ax_link_now_ns();
  }
  MPI_Allgather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE, g_comm);
  mt_run_end();
  const AxLinkSchedule *a = all[0].start_ns <= all[1].start_ns ? &all[0] : &all[1];
  const AxLinkSchedule *b = a == &all[0] ? &all[1] : &all[0];
  if (mt_rank == 0) {
    expect_schedule(a, 0, S, BW, LAT_NS, "the first reservation of the shared link");
    expect_schedule(b, a->start_ns + a->busy_ns, S, BW, LAT_NS,
                    "the second reservation of the shared link");
    mt_expect(a->link == 1 && b->link == 1, "links %d and %d: expected node 1's", a->link,
              b->link);
  }
  if (mt_rank >= 2) {
    const AxLinkSchedule *sender = &all[mt_rank - 2];
    mt_expect(done >= sender->due_ns, "rank %d received before its message was due", mt_rank);
  }
  AxLinkUse u[4];
  int n = ax_link_uses(e, 1 - mt_rank / 2, 0, LLONG_MAX, u, 4);
  if (mt_rank < 2) {
    mt_expect(n == 2, "rank %d: %d uses of the link to node 1 logged, expected 2", mt_rank, n);
    for (int i = 0; i < n && i < 2; i++) {
      const AxLinkSchedule *x = u[i].start_ns == a->start_ns ? a : b;
      mt_expect(u[i].start_ns == x->start_ns && u[i].end_ns == x->start_ns + x->busy_ns &&
                    u[i].cls == AX_TRAFFIC_OTHER,
                "rank %d: use %d [%lld, %lld) is not a reservation", mt_rank, i, u[i].start_ns,
                u[i].end_ns);
    }
  } else {
    mt_expect(n == 0, "rank %d: %d uses of the idle link to node 0 logged", mt_rank, n);
  }
  ax_link_emu_destroy(e);
  mt_assert_all_ok("a shared link");
}
END_TEST

/* Within a node nothing is held: the send is posted at once and counted as local. */
START_TEST(messages_within_a_node_are_not_delayed) {
  if (mt_size < 2) return;
  AxLinkEmu *e = make_emu(mt_size, "8Mbps,3s"); /* one node: its link would take 4 s */
  AxTraffic t;
  memset(&t, 0, sizeof t);
  AxCommConfig cc = config(e, &t);
  char *buf = tu_alloc(S);
  memset(buf, 9, S);
  mt_run_begin("a message within a node");
  if (mt_rank == 0) {
    AxLinkSend s;
    isend(&cc, buf, S, 1, 40, &s);
    mt_expect(s.held == 0, "a message within the node was held back");
    wait_send(&cc, &s);
    AxLinkSchedule none;
    mt_expect(ax_link_last_schedule(e, &none) != AX_OK && ax_link_stats(e).held == 0,
              "the emulator scheduled a message within the node");
    ax_error_clear();
    mt_expect(ax_traffic_bytes(&t, 0) == S && ax_traffic_crossed(&t, 0) == 0,
              "counted %llu bytes, %llu crossed: expected %d within the node",
              ax_traffic_bytes(&t, 0), ax_traffic_crossed(&t, 0), S);
  } else if (mt_rank == 1) {
    MPI_Request r;
    MPI_Irecv(buf, S, MPI_BYTE, 0, 40, g_comm, &r);
    wait_recv(&cc, &r);
  }
  mt_run_end();
  ax_link_emu_destroy(e);
  mt_assert_all_ok("within a node");
}
END_TEST

/* The pause decision, exactly: spin for the first AX_LINK_SPIN_NS of a wait, then sleep a poll
 * interval while busy (or always, without bells), an idle interval once idle with bells, or
 * until just before the next held send is due; spin when that is imminent. */
START_TEST(pause_plan_spins_then_sleeps) {
  const long long t = 1000000000000LL, none = LLONG_MAX, busy = t + 2 * AX_LINK_IDLE_NS;
  for (int bells = 0; bells <= 1; bells++) {
    ck_assert_int_eq(ax_link_pause_plan(t, t, busy, none, bells), 0);
    ck_assert_int_eq(ax_link_pause_plan(t + AX_LINK_SPIN_NS - 1, t, busy, none, bells), 0);
    ck_assert_int_eq(ax_link_pause_plan(t + AX_LINK_SPIN_NS, t, busy, none, bells),
                     t + AX_LINK_SPIN_NS + AX_LINK_POLL_NS);
    long long now = t + 10 * AX_LINK_SPIN_NS;
    ck_assert_int_eq(ax_link_pause_plan(now, t, busy, now + 1000000, bells),
                     now + AX_LINK_POLL_NS);
    ck_assert_int_eq(ax_link_pause_plan(now, t, busy, now + AX_LINK_EARLY_NS + 7, bells),
                     now + 7); /* wakes AX_LINK_EARLY_NS before the send is due */
    ck_assert_int_eq(ax_link_pause_plan(now, t, busy, now + AX_LINK_EARLY_NS, bells), 0);
    ck_assert_int_eq(ax_link_pause_plan(now, t, busy, now - 5, bells), 0); /* overdue: post */
    /* busy until busy_until; then idle, which only bells change */
    ck_assert_int_eq(ax_link_pause_plan(busy - 1, t, busy, none, bells),
                     busy - 1 + AX_LINK_POLL_NS);
    ck_assert_int_eq(ax_link_pause_plan(busy, t, busy, none, bells),
                     busy + (bells ? AX_LINK_IDLE_NS : AX_LINK_POLL_NS));
    ck_assert_int_eq(ax_link_pause_plan(now, t, 0, none, bells),
                     now + (bells ? AX_LINK_IDLE_NS : AX_LINK_POLL_NS)); /* nothing posted */
    ck_assert_int_eq(ax_link_pause_plan(busy, t, busy, busy + AX_LINK_EARLY_NS + 9, bells),
                     busy + 9); /* idle or not, up to a held send's due time */
  }
}
END_TEST

/* A wait sleeps once past its spin: with a send held for 60 s on this rank, a pause of a wait
 * that has spun long enough sleeps (and no longer than one poll), one that has just begun
 * spins. The held send is then dropped. */
START_TEST(waiting_sleeps_instead_of_spinning) {
  if (mt_size < 2) return;
  AxLinkEmu *e = make_emu(1, "1Gbps,60s");
  AxCommConfig cc = config(e, NULL);
  int v = 1;
  mt_run_begin("pauses of a wait");
  if (mt_rank == 0) {
    AxLinkSend s;
    isend(&cc, &v, sizeof v, 1, 45, &s);
    ck_assert(s.held != 0);
    AxLinkWaiter fresh = {0}, spun = {.since = ax_link_now_ns() - AX_LINK_SPIN_NS - 1};
    AxLinkStats before = ax_link_stats(e);
    ax_link_pause(&cc, &fresh);
    AxLinkStats mid = ax_link_stats(e);
    ax_link_pause(&cc, &spun);
    AxLinkStats after = ax_link_stats(e);
    mt_expect(mid.spins == before.spins + 1 && mid.sleeps == before.sleeps,
              "the first pause of a wait slept");
    mt_expect(after.sleeps == mid.sleeps + 1 && after.spins == mid.spins,
              "a pause past the spin did not sleep");
    ax_link_drop(&cc, &s);
    mt_expect(ax_link_stats(e).posted == 0, "a dropped held send was posted");
  }
  MPI_Barrier(g_comm);
  mt_run_end();
  ax_link_emu_destroy(e);
  mt_assert_all_ok("pauses of a wait");
}
END_TEST

/* An idle wait sleeps on its bell, which the message it waits for rings: rank 1 waits for a
 * message rank 0 sends after 30 ms. Rank 1's bell rang once, for that message, and its wait
 * slept less than once every 4 AX_LINK_POLL_NS of the time it took (waking every poll, as
 * without bells, it would sleep more than once every 2: a sleep can take longer under load,
 * never shorter, so the bound holds on any machine). */
START_TEST(an_idle_wait_sleeps_on_its_bell) {
  if (mt_size < 2) return;
  AxLinkEmu *e = make_emu(1, "1Gbps");
  AxCommConfig cc = config(e, NULL);
  int v = 7, got = 0;
  mt_run_begin("an idle wait");
  if (mt_rank == 0) {
    AxLinkSend s;
    nanosleep(&(struct timespec){0, 30 * 1000 * 1000}, NULL);
    isend(&cc, &v, sizeof v, 1, 47, &s);
    wait_send(&cc, &s);
  } else if (mt_rank == 1) {
    MPI_Request r;
    MPI_Irecv(&got, 1, MPI_INT, 0, 47, g_comm, &r);
    AxLinkStats before = ax_link_stats(e);
    long long t0 = ax_link_now_ns();
    wait_recv(&cc, &r);
    long long took = ax_link_now_ns() - t0;
    AxLinkStats after = ax_link_stats(e);
    mt_expect(got == 7, "received %d, not 7", got);
    mt_expect(after.bell_rings == before.bell_rings + 1, "the bell rang %llu times, not once",
              after.bell_rings - before.bell_rings);
    mt_expect((after.sleeps - before.sleeps) * 4 * AX_LINK_POLL_NS < (unsigned long long)took,
              "the wait slept %llu times in %.1f ms: it did not go idle",
              after.sleeps - before.sleeps, took / 1e6);
    printf("an idle wait: %.1f ms, %llu sleeps\n", took / 1e6, after.sleeps - before.sleeps);
  }
  MPI_Barrier(g_comm);
  mt_run_end();
  ax_link_emu_destroy(e);
  mt_assert_all_ok("an idle wait");
}
END_TEST

/* The timing harnesses' barrier and maximum (ax_link_barrier, ax_link_max), polite, wait as
 * the engines do: the last rank joins 200 ms late, and every other rank's wait in the barrier
 * slept (MPI_Barrier spins, and where ranks outnumber cores that spin took the core of a rank still
 * timing: each timed operation then grew by a scheduler's time slice). The maximum is every
 * rank's largest figure, with and without the link. */
START_TEST(timing_barrier_and_max_sleep_while_waiting) {
  if (mt_size < 2) return;
  AxLinkEmu *e = make_emu(1, "1Gbps");
  AxCommConfig cc = config(e, NULL), plain = config(NULL, NULL);
  cc.polite = plain.polite = 1; /* as where ranks outnumber cores */
  mt_run_begin("the timing barrier");
  AxLinkStats before = ax_link_stats(e);
  /* long past the 50 us spin: a waiting rank never sleeping here would need to be kept off
   * its core for all of it (a 30 ms wait could be, on a loaded machine) */
  if (mt_rank == mt_size - 1) nanosleep(&(struct timespec){0, 200 * 1000 * 1000}, NULL);
  mt_expect(ax_link_barrier(&cc, g_comm) == AX_OK, "ax_link_barrier: %s", ax_error_message());
  AxLinkStats after = ax_link_stats(e);
  if (mt_rank != mt_size - 1)
    mt_expect(after.sleeps > before.sleeps, "rank %d waited 200 ms in the barrier without "
              "sleeping (%llu sleeps, %llu spins)", mt_rank, after.sleeps - before.sleeps,
              after.spins - before.spins);
  const AxCommConfig *ways[2] = {&cc, &plain};
  for (int w = 0; w < 2; w++) {
    double max = -1;
    mt_expect(ax_link_max(ways[w], g_comm, 1.5 + mt_rank, &max) == AX_OK, "ax_link_max: %s",
              ax_error_message());
    mt_expect(max == 0.5 + mt_size, "%s: the maximum is %g, not %g", w ? "no link" : "the link",
              max, 0.5 + mt_size);
  }
  mt_expect(ax_link_barrier(&plain, g_comm) == AX_OK, "ax_link_barrier, polite, no link: %s",
            ax_error_message());
  mt_run_end();
  ax_link_emu_destroy(e);
  mt_assert_all_ok("the timing barrier");
}
END_TEST

/* Both ranks hand a held send over, then wait only for their receive: the wait posts the held
 * send, or neither would ever arrive. */
START_TEST(held_sends_go_out_while_waiting_for_a_receive) {
  if (mt_size < 2) return;
  AxLinkEmu *e = make_emu(1, "1Gbps,30ms");
  AxCommConfig cc = config(e, NULL);
  int mine = 100 + mt_rank, got = -1;
  mt_run_begin("held sends posted by receive waits");
  if (mt_rank < 2) {
    int peer = 1 - mt_rank;
    MPI_Request r;
    AxLinkSend s;
    MPI_Irecv(&got, 1, MPI_INT, peer, 50, g_comm, &r);
    AxLinkMsg m = {.buf = &mine, .count = 1, .type = MPI_INT, .bytes = sizeof mine,
                   .dest = peer, .dest_world = peer, .tag = 50, .comm = g_comm};
    ck_assert_int_eq(ax_link_isend(&cc, &m, &s), AX_OK);
    ck_assert_msg(s.held != 0, "a 30 ms link posted the send at once");
    wait_recv(&cc, &r);
    wait_send(&cc, &s);
    mt_expect(got == 100 + peer, "received %d from rank %d", got, peer);
  }
  mt_run_end();
  ax_link_emu_destroy(e);
  mt_assert_all_ok("held sends while waiting");
}
END_TEST

/* A dropped held send is never posted: the receiver gets the message sent after it. */
START_TEST(a_dropped_held_send_never_arrives) {
  if (mt_size < 2) return;
  AxLinkEmu *e = make_emu(1, "1Gbps,1s");
  AxCommConfig held = config(e, NULL), direct = config(NULL, NULL);
  int a = 1, b = 2, got = 0;
  mt_run_begin("a dropped held send");
  if (mt_rank == 0) {
    AxLinkSend s, t;
    isend(&held, &a, sizeof a, 1, 60, &s);
    ck_assert(s.held != 0);
    ax_link_drop(&held, &s);
    ck_assert(s.held == 0 && s.req == MPI_REQUEST_NULL);
    isend(&direct, &b, sizeof b, 1, 60, &t);
    wait_send(&direct, &t);
    ck_assert_int_eq(ax_link_progress(&held), AX_OK);
  } else if (mt_rank == 1) {
    MPI_Recv(&got, (int)sizeof got, MPI_BYTE, 0, 60, g_comm, MPI_STATUS_IGNORE);
    mt_expect(got == b, "received %d, expected the message after the dropped one (%d)", got, b);
  }
  MPI_Barrier(g_comm);
  mt_run_end();
  ax_link_emu_destroy(e);
  mt_assert_all_ok("a dropped held send");
}
END_TEST

/* Idle work (ax_link_set_idle_work) that tells rank 1 to send, the first time it runs: rank 0's
 * wait can only end once its work has run. */
typedef struct {
  AxCommConfig cc;
  int calls, depth, nested, go_sent;
} IdleWork;

static void idle_work(void *ctx) {
  IdleWork *w = ctx;
  w->calls++;
  w->nested |= ++w->depth > 1;
  if (!w->go_sent) {
    int go = 1;
    MPI_Send(&go, 1, MPI_INT, 1, 71, g_comm);
    w->go_sent = 1;
  }
  AxLinkWaiter again = AX_LINK_NO_SPIN;
  ax_link_pause(&w->cc, &again); /* a wait inside the work: not run again inside itself */
  w->depth--;
}

static void *pause_on_another_thread(void *arg) {
  AxLinkWaiter w = AX_LINK_NO_SPIN;
  ax_link_pause(arg, &w);
  return NULL;
}

/* Rank 1 sends `value` once rank 0's go came (or -1 after 20 s without it). */
static void send_after_go(int tag) {
  double t0 = MPI_Wtime();
  int go = 0, flag = 0, value = tag;
  while (!flag && MPI_Wtime() - t0 < 20) MPI_Iprobe(0, 71, g_comm, &flag, MPI_STATUS_IGNORE);
  if (flag) MPI_Recv(&go, 1, MPI_INT, 0, 71, g_comm, MPI_STATUS_IGNORE);
  else value = -1;
  MPI_Send(&value, 1, MPI_INT, 0, tag, g_comm);
}

/* Work set on the links runs in every pause of a wait on the thread that set it, never inside
 * itself and never on another thread, over an emulated link and over a real one (whose waits
 * then poll instead of blocking in MPI); once unset it runs no more. */
START_TEST(idle_work_runs_in_the_waits_of_its_thread) {
  if (mt_size < 2) return;
  const char *links[] = {"1Gbps,1ms", NULL};
  for (int l = 0; l < 2; l++) {
    AxLinkEmu *e = make_emu(1, links[l]);
    IdleWork w = {.cc = config(e, NULL)};
    const char *what = links[l] ? "emulated link" : "real link";
    mt_run_begin("idle work");
    if (mt_rank == 0) {
      ax_link_set_idle_work(e, idle_work, &w);
      pthread_t other;
      pthread_create(&other, NULL, pause_on_another_thread, &w.cc);
      pthread_join(other, NULL);
      mt_expect(w.calls == 0, "%s: another thread's pause ran the work", what);
      int got = 0;
      MPI_Request r;
      MPI_Irecv(&got, 1, MPI_INT, 1, 72, g_comm, &r);
      wait_recv(&w.cc, &r);
      mt_expect(got == 72 && w.calls >= 1 && w.go_sent && !w.nested,
                "%s: received %d (-1: no go), the work ran %d time(s), nested %d", what, got,
                w.calls, w.nested);
      ax_link_set_idle_work(e, NULL, NULL);
      int calls = w.calls;
      MPI_Irecv(&got, 1, MPI_INT, 1, 73, g_comm, &r);
      wait_recv(&w.cc, &r);
      mt_expect(w.calls == calls, "%s: the work ran after it was unset", what);
    } else if (mt_rank == 1) {
      send_after_go(72);
      int value = 73;
      MPI_Send(&value, 1, MPI_INT, 0, 73, g_comm);
    }
    MPI_Barrier(g_comm);
    mt_run_end();
    ax_link_emu_destroy(e);
  }
  mt_assert_all_ok("idle work in waits");
}
END_TEST

/* ------------------------------------------------------------------ the engines over it */

static float value(size_t i, int rank) {
  return (float)((int)((i * 7 + (size_t)rank * 3) % 17) - 8);
}

/* Ring and rhd all-reduces over an emulated link between every rank: the same sums as without
 * it, and every byte the operation counts (AxCommBytes) counted as traffic of its class,
 * crossed. */
START_TEST(collectives_over_the_link_are_exact_and_counted) {
  AxLinkEmu *e = make_emu(1, "1Gbps,100us");
  const AxAllreduceAlgo algos[] = {AX_ALLREDUCE_RING, AX_ALLREDUCE_RHD, AX_ALLREDUCE_AUTO};
  const size_t n = 300001; /* several chunks, not divisible by the ranks */
  float *buf = tu_alloc(n * sizeof *buf);
  mt_run_begin("all-reduces over an emulated link");
  for (size_t a = 0; a < sizeof algos / sizeof *algos; a++) {
    AxTraffic t;
    memset(&t, 0, sizeof t);
    AxCommConfig cc = config(e, &t);
    cc.chunk_bytes = 256 * 1024;
    cc.traffic_class = AX_TRAFFIC_DATA_PARALLEL;
    AxCommBytes bytes = {0, 0};
    for (size_t i = 0; i < n; i++) buf[i] = value(i, mt_rank);
    int rc = ax_allreduce(g_comm, &cc, buf, n, AX_COMM_F32, algos[a], &bytes);
    ck_assert_msg(rc == AX_OK, "%s", ax_error_message());
    size_t bad = n;
    for (size_t i = 0; i < n && bad == n; i++) {
      float want = 0;
      for (int r = 0; r < mt_size; r++) want += value(i, r);
      if (buf[i] != want) bad = i;
    }
    mt_expect(bad == n, "%s: element %zu wrong", ax_allreduce_algo_name(algos[a]), bad);
    mt_expect(ax_traffic_bytes(&t, AX_TRAFFIC_DATA_PARALLEL) == bytes.sent &&
                  ax_traffic_crossed(&t, AX_TRAFFIC_N_CLASSES) == bytes.sent &&
                  ax_traffic_bytes(&t, AX_TRAFFIC_N_CLASSES) == bytes.sent,
              "%s: traffic %llu (%llu crossed) against %llu bytes sent",
              ax_allreduce_algo_name(algos[a]), ax_traffic_bytes(&t, AX_TRAFFIC_N_CLASSES),
              ax_traffic_crossed(&t, AX_TRAFFIC_N_CLASSES), bytes.sent);
    AxLinkStats st = ax_link_stats(e);
    mt_expect(st.posted == st.held && (mt_size == 1 || st.held > 0),
              "%s: %llu sends held, %llu posted", ax_allreduce_algo_name(algos[a]), st.held,
              st.posted);
  }
  /* MPI_Iallreduce cannot be carried: one clear error */
  AxCommConfig cc = config(e, NULL);
  AxColl *op = NULL;
  ck_assert_int_ne(ax_allreduce_start(&op, g_comm, &cc, buf, n, AX_COMM_F32, AX_ALLREDUCE_MPI,
                                      NULL), AX_OK);
  ck_assert_ptr_null(op);
  ck_assert_msg(strstr(ax_error_text(), "cannot run over the emulated link"), "%s",
                ax_error_text());
  ax_error_clear();
  mt_run_end();
  ax_link_emu_destroy(e);
  mt_assert_all_ok("collectives over the link");
}
END_TEST

/* The p2p engine on a line of ranks, each its own node: activations forward, gradients back,
 * held on the link, counted as pipeline_forward and pipeline_backward. */
START_TEST(p2p_engine_over_the_link_is_counted_by_direction) {
  if (mt_size < 2) return;
  AxLinkEmu *e = make_emu(1, "1Gbps,1ms");
  AxTraffic t;
  memset(&t, 0, sizeof t);
  AxBackend *be = tu_backend(1);
  const size_t bytes = 4096;
  const int n_msgs = 5;
  int prev = mt_rank > 0 ? mt_rank - 1 : MPI_PROC_NULL;
  int next = mt_rank < mt_size - 1 ? mt_rank + 1 : MPI_PROC_NULL;
  AxP2PConfig pc = {.comm = g_comm, .prev = prev, .next = next, .bytes = bytes, .pool = 2,
                    .be = be, .cc = config(e, &t)};
  AxP2P p;
  ck_assert_msg(ax_p2p_init(&p, &pc) == AX_OK, "%s", ax_error_message());
  float *src = tu_alloc(bytes);
  mt_run_begin("the p2p engine over an emulated link");
  for (int k = 0; k < n_msgs; k++) {
    for (size_t i = 0; i < bytes / 4; i++) src[i] = (float)(k * 1000 + mt_rank);
    if (next != MPI_PROC_NULL) ck_assert_int_eq(ax_p2p_send(&p, 1, k, src), AX_OK);
    if (prev != MPI_PROC_NULL) ck_assert_int_eq(ax_p2p_send(&p, 0, k, src), AX_OK);
  }
  int want = (prev != MPI_PROC_NULL) + (next != MPI_PROC_NULL);
  for (int k = 0; k < n_msgs * want; k++) {
    AxP2PDir dir;
    int tag;
    const void *data;
    ck_assert_msg(ax_p2p_wait(&p, &dir, &tag, &data) == AX_OK, "%s", ax_error_message());
    int from = dir == AX_FROM_PREV ? prev : next;
    mt_expect(((const float *)data)[0] == (float)(tag * 1000 + from),
              "message %d from rank %d holds %g", tag, from, ((const float *)data)[0]);
  }
  ck_assert_int_eq(ax_p2p_flush(&p), AX_OK);
  MPI_Barrier(g_comm);
  mt_run_end();
  ax_p2p_destroy(&p);
  unsigned long long fwd = next != MPI_PROC_NULL ? n_msgs * bytes : 0;
  unsigned long long bwd = prev != MPI_PROC_NULL ? n_msgs * bytes : 0;
  mt_expect(ax_traffic_bytes(&t, AX_TRAFFIC_PIPELINE_FORWARD) == fwd &&
                ax_traffic_bytes(&t, AX_TRAFFIC_PIPELINE_BACKWARD) == bwd &&
                ax_traffic_crossed(&t, AX_TRAFFIC_N_CLASSES) == fwd + bwd &&
                ax_traffic_bytes(&t, AX_TRAFFIC_N_CLASSES) == fwd + bwd,
            "forward %llu, backward %llu, crossed %llu: expected %llu and %llu, all crossed",
            ax_traffic_bytes(&t, AX_TRAFFIC_PIPELINE_FORWARD),
            ax_traffic_bytes(&t, AX_TRAFFIC_PIPELINE_BACKWARD),
            ax_traffic_crossed(&t, AX_TRAFFIC_N_CLASSES), fwd, bwd);
  AxLinkStats st = ax_link_stats(e);
  mt_expect(st.held == (unsigned long long)n_msgs * (unsigned)want && st.posted == st.held,
            "%llu sends held, %llu posted: expected %d, all posted", st.held, st.posted,
            n_msgs * want);
  ax_backend_destroy(be);
  ax_link_emu_destroy(e);
  mt_assert_all_ok("the p2p engine over the link");
}
END_TEST

static Suite *emulator_suite(void) {
  Suite *s = suite_create("emulator");
  TCase *local = tu_tcase(s, "local", 60);
  tcase_add_test(local, link_text_parses_and_refuses);
  tcase_add_test(local, traffic_counts_by_class);
  tcase_add_test(local, link_table_queues_per_link);
  tcase_add_test(local, pause_plan_spins_then_sleeps);
  TCase *multi = tu_tcase(s, "multi-rank", 300);
  tcase_add_test(multi, virtual_nodes_follow_ranks_per_node);
  tcase_add_test(multi, one_message_takes_latency_plus_size_over_bandwidth);
  tcase_add_test(multi, messages_on_one_link_queue);
  tcase_add_test(multi, opposite_directions_do_not_queue);
  tcase_add_test(multi, ranks_of_a_node_share_its_link);
  tcase_add_test(multi, messages_within_a_node_are_not_delayed);
  tcase_add_test(multi, waiting_sleeps_instead_of_spinning);
  tcase_add_test(multi, an_idle_wait_sleeps_on_its_bell);
  tcase_add_test(multi, timing_barrier_and_max_sleep_while_waiting);
  tcase_add_test(multi, held_sends_go_out_while_waiting_for_a_receive);
  tcase_add_test(multi, a_dropped_held_send_never_arrives);
  tcase_add_test(multi, idle_work_runs_in_the_waits_of_its_thread);
  tcase_add_test(multi, collectives_over_the_link_are_exact_and_counted);
  tcase_add_test(multi, p2p_engine_over_the_link_is_counted_by_direction);
  return s;
}

int main(int argc, char **argv) {
  mt_init(&argc, &argv);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_dup(MPI_COMM_WORLD, &g_comm);
  int rc = mt_run_watched(emulator_suite(), RUN_TIMEOUT_S);
  MPI_Comm_free(&g_comm);
  return mt_finish(rc);
}
