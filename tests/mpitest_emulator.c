/* mpitest_emulator.c — the link emulator (mpi/link_emulator.h) and the traffic counters
 * (mpi/traffic.h), on whatever number of ranks it runs on (the tests that need two ranks pass
 * on one, the shared-link test needs four):
 *   - --emulate-link's text: what parses to what, and every malformed form refused;
 *   - virtual nodes from --ranks-per-node, and the counts that refuse;
 *   - the node-shared link table: one link queues, two links do not;
 *   - a message of S bytes between two virtual nodes takes at least LAT + S/BW from the send to
 *     the completed receive, and not more than that plus a generous slack; two messages on one
 *     link queue (the second lands >= 2 S/BW + LAT after the first was sent); the opposite
 *     direction does not queue behind them; ranks of one node sharing a link queue on it; a
 *     message within a node is not delayed;
 *   - waiting does not spin: the CPU time of both ranks over a long emulated transfer stays far
 *     below its wall time;
 *   - a held send goes out while its sender only waits for a receive (no deadlock); a dropped
 *     held send never arrives;
 *   - the collectives and the p2p engine over an emulated link: exact results, and every byte
 *     counted by class, crossed or not.
 * Times come from CLOCK_MONOTONIC, one clock for every rank of the machine. Lower bounds are
 * the emulator's promise and hold to the nanosecond; upper bounds leave room for a loaded
 * machine. */
#include <check.h>
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mpi/collectives.h"
#include "mpi/link_emulator.h"
#include "mpi/link_table.h"
#include "mpi/mpi_util.h"
#include "mpi/p2p.h"
#include "mpi/traffic.h"
#include "mpitestutil.h"
#include "src/core/error.h"
#include "testutil.h"

enum { RUN_TIMEOUT_S = 120 };
#define SLACK_S 0.5  /* added to every upper bound ... */
#define SLACK_X 4.0  /* ... after multiplying the model by this */

static MPI_Comm g_comm; /* a duplicate of MPI_COMM_WORLD */

/* ------------------------------------------------------------------ helpers */

static double now_s(void) { return (double)ax_link_now_ns() * 1e-9; }

static double cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Collective: the emulator with `ranks_per_node` and link text (NULL: not emulated). */
static AxLinkEmu *make_emu(int ranks_per_node, const char *link) {
  AxLinkEmuConfig lc = {.ranks_per_node = ranks_per_node};
  if (link) ck_assert_msg(ax_link_spec_parse(link, &lc.link) == AX_OK, "%s", ax_error_message());
  AxLinkEmu *e = NULL;
  int rc = ax_link_emu_create(&e, g_comm, &lc);
  ck_assert_msg(rc == AX_OK, "ax_link_emu_create: %s", ax_error_message());
  return e;
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

/* Sends one double to `to` (outside the emulator). */
static void tell(double v, int to) { MPI_Send(&v, 1, MPI_DOUBLE, to, 999, g_comm); }
static double hear(int from) {
  double v;
  MPI_Recv(&v, 1, MPI_DOUBLE, from, 999, g_comm, MPI_STATUS_IGNORE);
  return v;
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
                                    "Gbps", "10Gbps,,5us", "nanGbps", "1e999Gbps", "10Gbps,2h"};
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
  ck_assert_int_eq(ax_link_table_create(&t, MPI_COMM_SELF, 3), AX_OK);
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

/* ------------------------------------------------------------------ timing */

/* 10 MB/s, so 1 MB takes 100 ms on the link; latency 20 ms. */
#define LINK "80Mbps,20ms"
#define BW 1e7
#define LAT 0.02
enum { S = 1000 * 1000 };

/* Rank 0 sends `n` messages of S to rank 1 at once; rank 1 returns when each completed,
 * measured from the moment rank 0 handed over the first (0 on ranks other than 1). */
static void send_burst(const AxCommConfig *cc, int n, double *done_at) {
  char *buf = tu_alloc((size_t)n * S);
  memset(buf, 7, (size_t)n * S);
  MPI_Barrier(g_comm);
  if (mt_rank == 0) {
    AxLinkSend s[4];
    tell(now_s(), 1);
    for (int i = 0; i < n; i++) isend(cc, buf + (size_t)i * S, S, 1, 10 + i, &s[i]);
    for (int i = 0; i < n; i++) wait_send(cc, &s[i]);
  } else if (mt_rank == 1) {
    MPI_Request r[4];
    for (int i = 0; i < n; i++)
      MPI_Irecv(buf + (size_t)i * S, S, MPI_BYTE, 0, 10 + i, g_comm, &r[i]);
    double t0 = hear(0);
    for (int i = 0; i < n; i++) {
      wait_recv(cc, &r[i]);
      done_at[i] = now_s() - t0;
    }
  }
  MPI_Barrier(g_comm);
}

START_TEST(one_message_takes_latency_plus_size_over_bandwidth) {
  if (mt_size < 2) return;
  AxLinkEmu *e = make_emu(1, LINK);
  AxTraffic t;
  memset(&t, 0, sizeof t);
  AxCommConfig cc = config(e, &t);
  double took[1] = {0}, model = LAT + S / BW;
  mt_run_begin("one emulated message");
  send_burst(&cc, 1, took);
  mt_run_end();
  if (mt_rank == 1)
    mt_expect(took[0] >= model - 1e-6 && took[0] <= SLACK_X * model + SLACK_S,
              "1 MB over %s took %.4f s; the link needs %.4f s", LINK, took[0], model);
  if (mt_rank == 0)
    mt_expect(ax_traffic_crossed(&t, AX_TRAFFIC_OTHER) == S && ax_traffic_bytes(&t, 0) == S,
              "counted %llu bytes, %llu crossed; sent %d across", ax_traffic_bytes(&t, 0),
              ax_traffic_crossed(&t, 0), S);
  ax_link_emu_destroy(e);
  mt_assert_all_ok("one message");
}
END_TEST

START_TEST(messages_on_one_link_queue) {
  if (mt_size < 2) return;
  AxLinkEmu *e = make_emu(1, LINK);
  AxCommConfig cc = config(e, NULL);
  double took[2] = {0, 0}, first = LAT + S / BW, second = LAT + 2 * S / BW;
  mt_run_begin("two messages on one link");
  send_burst(&cc, 2, took);
  mt_run_end();
  if (mt_rank == 1) {
    mt_expect(took[0] >= first - 1e-6, "the first message took %.4f s < %.4f s", took[0], first);
    mt_expect(took[1] >= second - 1e-6 && took[1] <= SLACK_X * second + SLACK_S,
              "the second message took %.4f s; queued behind the first it needs %.4f s",
              took[1], second);
  }
  ax_link_emu_destroy(e);
  mt_assert_all_ok("two messages on one link");
}
END_TEST

/* Ranks 0 and 1 send each other S at once: each direction is its own link, so neither waits
 * for the other (queued, the later would land >= 2 S/BW + LAT after its send). */
START_TEST(opposite_directions_do_not_queue) {
  if (mt_size < 2) return;
  const double slow_bw = 1e6, lat = 0.001; /* 1 MB: 1 s each way */
  AxLinkEmu *e = make_emu(1, "8Mbps,1ms");
  AxCommConfig cc = config(e, NULL);
  char *out = tu_alloc(S), *in = tu_alloc(S);
  memset(out, 1, S);
  mt_run_begin("both directions at once");
  MPI_Barrier(g_comm);
  if (mt_rank < 2) {
    int peer = 1 - mt_rank;
    MPI_Request r;
    AxLinkSend s;
    MPI_Irecv(in, S, MPI_BYTE, peer, 20, g_comm, &r);
    double sent = now_s(), peer_sent = 0;
    isend(&cc, out, S, peer, 20, &s);
    wait_recv(&cc, &r);
    double got = now_s();
    wait_send(&cc, &s);
    MPI_Sendrecv(&sent, 1, MPI_DOUBLE, peer, 21, &peer_sent, 1, MPI_DOUBLE, peer, 21, g_comm,
                 MPI_STATUS_IGNORE);
    double took = got - peer_sent, one = lat + S / slow_bw, queued = lat + 2 * S / slow_bw;
    mt_expect(took >= one - 1e-6, "rank %d received after %.4f s < %.4f s", mt_rank, took, one);
    mt_expect(took < 0.5 * (one + queued),
              "rank %d received after %.4f s: as if queued behind the other direction (%.4f s "
              "alone, %.4f s queued)", mt_rank, took, one, queued);
  }
  MPI_Barrier(g_comm);
  mt_run_end();
  ax_link_emu_destroy(e);
  mt_assert_all_ok("opposite directions");
}
END_TEST

/* Four ranks, two nodes of two: ranks 0 and 1 each send S to the other node at once. They share
 * the link node 0 -> node 1, so the later lands >= 2 S/BW + LAT after both were sent. */
START_TEST(ranks_of_a_node_share_its_link) {
  if (mt_size != 4) return;
  AxLinkEmu *e = make_emu(2, LINK);
  AxCommConfig cc = config(e, NULL);
  char *buf = tu_alloc(S);
  memset(buf, 3, S);
  mt_run_begin("two ranks of a node on one link");
  MPI_Barrier(g_comm);
  double t0 = now_s(), done = 0;
  if (mt_rank < 2) {
    AxLinkSend s;
    isend(&cc, buf, S, mt_rank + 2, 30, &s);
    wait_send(&cc, &s);
  } else {
    MPI_Request r;
    MPI_Irecv(buf, S, MPI_BYTE, mt_rank - 2, 30, g_comm, &r);
    wait_recv(&cc, &r);
    done = now_s();
  }
  /* every send was handed over after the earliest rank's t0 */
  double last = 0, earliest = 0, need = LAT + 2 * S / BW;
  MPI_Allreduce(&done, &last, 1, MPI_DOUBLE, MPI_MAX, g_comm);
  MPI_Allreduce(&t0, &earliest, 1, MPI_DOUBLE, MPI_MIN, g_comm);
  mt_run_end();
  if (mt_rank == 0)
    mt_expect(last - earliest >= need - 1e-6 && last - earliest <= SLACK_X * need + SLACK_S,
              "the later of two messages on one shared link landed %.4f s after the start; the "
              "link needs %.4f s for both", last - earliest, need);
  ax_link_emu_destroy(e);
  mt_assert_all_ok("a shared link");
}
END_TEST

START_TEST(messages_within_a_node_are_not_delayed) {
  if (mt_size < 2) return;
  AxLinkEmu *e = make_emu(mt_size, "8Mbps,3s"); /* one node: its link would take 4 s */
  AxTraffic t;
  memset(&t, 0, sizeof t);
  AxCommConfig cc = config(e, &t);
  double took[1] = {0};
  mt_run_begin("a message within a node");
  send_burst(&cc, 1, took);
  mt_run_end();
  if (mt_rank == 1)
    mt_expect(took[0] < 2.0, "1 MB within a node took %.3f s: delayed by the link", took[0]);
  if (mt_rank == 0)
    mt_expect(ax_traffic_bytes(&t, 0) == S && ax_traffic_crossed(&t, 0) == 0,
              "counted %llu bytes, %llu crossed: expected %d within the node",
              ax_traffic_bytes(&t, 0), ax_traffic_crossed(&t, 0), S);
  ax_link_emu_destroy(e);
  mt_assert_all_ok("within a node");
}
END_TEST

/* 3 MB at 10 MB/s: 300 ms of waiting on both ranks, which must sleep through it. */
START_TEST(waiting_does_not_spin) {
  if (mt_size < 2) return;
  AxLinkEmu *e = make_emu(1, "80Mbps");
  AxCommConfig cc = config(e, NULL);
  size_t bytes = 3 * (size_t)S;
  char *buf = tu_alloc(bytes);
  memset(buf, 5, bytes);
  mt_run_begin("a long emulated transfer");
  MPI_Barrier(g_comm);
  double wall0 = now_s(), cpu0 = cpu_s();
  if (mt_rank == 0) {
    AxLinkSend s;
    isend(&cc, buf, bytes, 1, 40, &s);
    wait_send(&cc, &s);
  } else if (mt_rank == 1) {
    MPI_Request r;
    MPI_Irecv(buf, (int)bytes, MPI_BYTE, 0, 40, g_comm, &r);
    wait_recv(&cc, &r);
  }
  double wall = now_s() - wall0, cpu = cpu_s() - cpu0;
  MPI_Barrier(g_comm);
  mt_run_end();
  if (mt_rank < 2)
    mt_expect(wall >= 0.3 - 1e-6 && cpu < 0.5 * wall,
              "rank %d: %.3f s of CPU over %.3f s of waiting for the link (spinning?)", mt_rank,
              cpu, wall);
  ax_link_emu_destroy(e);
  mt_assert_all_ok("waiting without spinning");
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

/* ------------------------------------------------------------------ the engines over it */

static float value(size_t i, int rank) { return (float)((int)((i * 7 + (size_t)rank * 3) % 17) - 8); }

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
  TCase *multi = tu_tcase(s, "multi-rank", 300);
  tcase_add_test(multi, virtual_nodes_follow_ranks_per_node);
  tcase_add_test(multi, one_message_takes_latency_plus_size_over_bandwidth);
  tcase_add_test(multi, messages_on_one_link_queue);
  tcase_add_test(multi, opposite_directions_do_not_queue);
  tcase_add_test(multi, ranks_of_a_node_share_its_link);
  tcase_add_test(multi, messages_within_a_node_are_not_delayed);
  tcase_add_test(multi, waiting_does_not_spin);
  tcase_add_test(multi, held_sends_go_out_while_waiting_for_a_receive);
  tcase_add_test(multi, a_dropped_held_send_never_arrives);
  tcase_add_test(multi, collectives_over_the_link_are_exact_and_counted);
  tcase_add_test(multi, p2p_engine_over_the_link_is_counted_by_direction);
  return s;
}

int main(int argc, char **argv) {
  mt_init(&argc, &argv);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_dup(MPI_COMM_WORLD, &g_comm);
  mt_watchdog_start(RUN_TIMEOUT_S);
  int rc = tu_run_nofork(emulator_suite());
  mt_watchdog_stop();
  MPI_Comm_free(&g_comm);
  return mt_finish(rc);
}
