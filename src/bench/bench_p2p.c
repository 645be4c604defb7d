/* bench_p2p.c — `axonn bench p2p`, run under mpiexec: point-to-point latency and bandwidth
 * between ranks 0 and 1, printed by rank 0 as an OSU-style table for message sizes from
 * --min-bytes to --max-bytes (doubling): ping-pong latency (median and mean over iterations of
 * half the round trip), ping-pong bandwidth (size / latency) and streaming bandwidth (osu_bw
 * style: a window of non-blocking sends, then a one-byte acknowledgement). Other ranks wait.
 * Host buffers only (CUDA build: device buffers TODO via the backend). Initializes and
 * finalizes MPI itself. With --emulate-link (and ranks 0 and 1 on different virtual nodes,
 * --ranks-per-node 1) every message goes through the link emulator (mpi/link/link_emulator.h), the
 * header says the times are EMULATED and each row gets the model, LATENCY + size/BW one way. */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bench_link.h"
#include "mpi/mpi_util.h"
#include "src/backend/peak.h"
#include "src/core/error.h"
#include "src/core/launcher.h"
#include "src/core/fileio.h"
#include "src/core/log.h"
#include "src/core/options.h"
#include "src/core/timer.h"

typedef struct {
  long long min_bytes, max_bytes;
  int iters, warmup, window;
  double budget;
  char *json;
  AxBenchLinkOpts net;
} P2pConfig;

#define POFF(f) offsetof(P2pConfig, f)
static const AxOption P2P_OPTS[] = {
    {"min-bytes", AX_OPT_LONG, POFF(min_bytes), "1", "BYTES", "smallest message", 1,
     (double)(1LL << 34), NULL},
    {"max-bytes", AX_OPT_LONG, POFF(max_bytes), "4M", "BYTES", "largest message (doubling)", 1,
     (double)(1LL << 34), NULL},
    {"iters", AX_OPT_INT, POFF(iters), "1000", "N",
     "ping-pong iterations per size (at most; see --budget); streaming uses N/10 windows", 1,
     10000000, NULL},
    {"warmup", AX_OPT_INT, POFF(warmup), "10", "N", "untimed round trips first", 1, 100000, NULL},
    {"window", AX_OPT_INT, POFF(window), "64", "N",
     "sends in flight for the streaming bandwidth (0: no streaming test)", 0, 4096, NULL},
    {"budget", AX_OPT_FLOAT, POFF(budget), "0.5", "SECONDS",
     "fewer iterations (at least 3) where N would take longer than this, per size and test", 0,
     1e6, NULL},
    {"json", AX_OPT_STRING, POFF(json), NULL, "FILE", "append one JSON line per size", 1, 0,
     NULL},
    AX_BENCH_LINK_OPTIONS(P2pConfig, net),
};
static const AxOptionTable P2P_TABLE = {
    "bench p2p",
    "Ping-pong latency and bandwidth between ranks 0 and 1 (host buffers); run under "
    "mpiexec -n 2.",
    P2P_OPTS, (int)(sizeof P2P_OPTS / sizeof P2P_OPTS[0])};

enum { RECV_SLOTS_BYTES = 64 << 20 }; /* distinct receive slots for the streaming window */

typedef struct {
  const P2pConfig *c;
  AxCommConfig cc; /* polite waiting when oversubscribed; the link emulator, the counters */
  AxLinkEmu *links;
  AxTraffic sent;
  int emulated;    /* the link between ranks 0 and 1 is emulated */
  MPI_Comm pair; /* ranks 0 and 1 */
  int me;        /* 0 or 1 in pair */
  int same_node;
  char *sbuf, *rbuf;
  size_t rbuf_bytes;
  int json_rc; /* rank 0: the first failure to append to --json */
} P2p;

typedef struct {
  int iters, window, stream_iters;
  double lat_us, avg_us, pp_mbs, stream_mbs;
  double wire_bytes; /* bytes on the wire per ping-pong message (traffic counters) */
  /* emulated: this rank's CPU time over the ping-pongs against their wall time, and how long
   * after its due time the emulator posted a held send, on average (link_emulator.h) */
  double cpu_percent, late_us;
} P2pResult;

/* At most `want` iterations that fit in the budget given one iteration's time (at least 3). */
static int cap_iters(int want, double per_iter, double budget) {
  int n = want;
  if (per_iter > 0 && per_iter * n > budget) n = (int)(budget / per_iter);
  if (n < 3) n = want < 3 ? want : 3;
  return n;
}

/* One message through the link layer (counted, and held back when emulated). */
static int link_send(P2p *b, const void *buf, size_t bytes, int tag) {
  AxLinkMsg m = {.buf = buf, .count = (int)bytes, .type = MPI_BYTE, .bytes = bytes,
                 .dest = 1 - b->me, .dest_world = 1 - b->me, .tag = tag, .comm = b->pair,
                 .cls = AX_TRAFFIC_OTHER};
  AxLinkSend s;
  AX_TRY(ax_link_isend(&b->cc, &m, &s));
  return ax_link_wait(&b->cc, &s);
}

static int link_recv(P2p *b, void *buf, size_t bytes, int tag) {
  MPI_Request req;
  AX_MPI(MPI_Irecv(buf, (int)bytes, MPI_BYTE, 1 - b->me, tag, b->pair, &req));
  return ax_link_wait_recv(&b->cc, &req, MPI_STATUS_IGNORE);
}

/* Emulated: the round trip through the link layer (sleeping waits). */
static int link_round_trip(P2p *b, size_t bytes) {
  if (b->me == 0) {
    AX_TRY(link_send(b, b->sbuf, bytes, 1));
    return link_recv(b, b->rbuf, bytes, 1);
  }
  AX_TRY(link_recv(b, b->rbuf, bytes, 1));
  return link_send(b, b->sbuf, bytes, 1);
}

static int round_trip(P2p *b, size_t bytes) {
  int peer = 1 - b->me;
  if (b->emulated) return link_round_trip(b, bytes);
  ax_traffic_add(&b->sent, AX_TRAFFIC_OTHER, ax_link_crosses(b->links, peer), bytes);
  if (b->me == 0) {
    AX_MPI(MPI_Send(b->sbuf, (int)bytes, MPI_BYTE, peer, 1, b->pair));
    AX_MPI(MPI_Recv(b->rbuf, (int)bytes, MPI_BYTE, peer, 1, b->pair, MPI_STATUS_IGNORE));
  } else {
    AX_MPI(MPI_Recv(b->rbuf, (int)bytes, MPI_BYTE, peer, 1, b->pair, MPI_STATUS_IGNORE));
    AX_MPI(MPI_Send(b->sbuf, (int)bytes, MPI_BYTE, peer, 1, b->pair));
  }
  return AX_OK;
}

/* Rank 0 times the warm-up and chooses the iteration count; rank 1 learns it. */
static int warm_up(P2p *b, size_t bytes, int want, int *iters) {
  double t0 = ax_now();
  for (int i = 0; i < b->c->warmup; i++) AX_TRY(round_trip(b, bytes));
  *iters = cap_iters(want, (ax_now() - t0) / b->c->warmup, b->c->budget);
  AX_MPI(MPI_Bcast(iters, 1, MPI_INT, 0, b->pair));
  return AX_OK;
}

static int ping_pong(P2p *b, size_t bytes, P2pResult *r) {
  AX_TRY(warm_up(b, bytes, b->c->iters, &r->iters));
  double *half = ax_malloc((size_t)r->iters * sizeof *half);
  if (!half) return AX_ERR;
  int rc = AX_OK;
  double sum = 0, wall0 = ax_now(), cpu0 = ax_cpu_now();
  AxTraffic before = b->sent;
  AxLinkStats st0 = ax_link_stats(b->links);
  for (int i = 0; i < r->iters && rc == AX_OK; i++) {
    double t0 = ax_now();
    rc = round_trip(b, bytes);
    half[i] = 0.5 * (ax_now() - t0);
    sum += half[i];
  }
  r->cpu_percent = 100 * (ax_cpu_now() - cpu0) / (ax_now() - wall0);
  AxLinkStats st1 = ax_link_stats(b->links);
  if (st1.posted > st0.posted)
    r->late_us = (double)(st1.late_ns_sum - st0.late_ns_sum) / (st1.posted - st0.posted) * 1e-3;
  unsigned long long wire, crossed;
  ax_bench_link_delta(&b->sent, &before, &wire, &crossed);
  r->wire_bytes = (double)wire / r->iters; /* this rank sends one message per round trip */
  if (rc == AX_OK) {
    r->avg_us = sum / r->iters * 1e6;
    r->lat_us = ax_median(half, r->iters) * 1e6;
    r->pp_mbs = (double)bytes / (r->lat_us * 1e-6) / 1e6;
  }
  free(half);
  return rc;
}

/* Emulated: the window's sends queue on the link one after another; the ack crosses back. */
static int link_stream_window(P2p *b, size_t bytes, int w, MPI_Request *reqs) {
  char ack = 0;
  if (b->me == 1) {
    for (int i = 0; i < w; i++)
      AX_MPI(MPI_Irecv(b->rbuf + (size_t)i * bytes, (int)bytes, MPI_BYTE, 0, 2, b->pair,
                       &reqs[i]));
    for (int i = 0; i < w; i++) AX_TRY(ax_link_wait_recv(&b->cc, &reqs[i], MPI_STATUS_IGNORE));
    return link_send(b, &ack, 1, 3);
  }
  AxLinkSend *sends = ax_malloc((size_t)w * sizeof *sends);
  if (!sends) return AX_ERR;
  AxLinkMsg m = {.buf = b->sbuf, .count = (int)bytes, .type = MPI_BYTE, .bytes = bytes,
                 .dest = 1, .dest_world = 1, .tag = 2, .comm = b->pair, .cls = AX_TRAFFIC_OTHER};
  int rc = AX_OK, n = 0;
  for (; n < w && rc == AX_OK; n++) rc = ax_link_isend(&b->cc, &m, &sends[n]);
  for (int i = 0; i < n; i++)
    if (rc == AX_OK) rc = ax_link_wait(&b->cc, &sends[i]);
    else ax_link_drop(&b->cc, &sends[i]);
  free(sends);
  AX_TRY(rc);
  return link_recv(b, &ack, 1, 3);
}

/* One window: rank 0 sends `w` messages, rank 1 receives them into distinct slots, then
 * acknowledges with one byte. */
static int stream_window(P2p *b, size_t bytes, int w, MPI_Request *reqs) {
  int peer = 1 - b->me;
  char ack = 0;
  if (b->emulated) return link_stream_window(b, bytes, w, reqs);
  for (int i = 0; i < w; i++) {
    if (b->me == 0)
      AX_MPI(MPI_Isend(b->sbuf, (int)bytes, MPI_BYTE, peer, 2, b->pair, &reqs[i]));
    else
      AX_MPI(MPI_Irecv(b->rbuf + (size_t)i * bytes, (int)bytes, MPI_BYTE, peer, 2, b->pair,
                       &reqs[i]));
  }
  AX_TRY(ax_mpi_waitall(&b->cc, w, reqs));
  if (b->me == 0) AX_MPI(MPI_Recv(&ack, 1, MPI_BYTE, peer, 3, b->pair, MPI_STATUS_IGNORE));
  else AX_MPI(MPI_Send(&ack, 1, MPI_BYTE, peer, 3, b->pair));
  return AX_OK;
}

static int streaming(P2p *b, size_t bytes, P2pResult *r) {
  size_t slots = b->rbuf_bytes / bytes;
  r->window = (int)((size_t)b->c->window < slots ? (size_t)b->c->window : slots);
  if (r->window < 1) r->window = 1;
  MPI_Request *reqs = ax_malloc((size_t)r->window * sizeof *reqs);
  if (!reqs) return AX_ERR;
  int rc = stream_window(b, bytes, r->window, reqs), want = b->c->iters / 10;
  double t0 = ax_now();
  if (rc == AX_OK) rc = stream_window(b, bytes, r->window, reqs);
  r->stream_iters = cap_iters(want > 3 ? want : 3, ax_now() - t0, b->c->budget);
  if (rc == AX_OK && MPI_Bcast(&r->stream_iters, 1, MPI_INT, 0, b->pair) != MPI_SUCCESS)
    rc = AX_FAIL("MPI_Bcast failed");
  t0 = ax_now();
  for (int i = 0; i < r->stream_iters && rc == AX_OK; i++)
    rc = stream_window(b, bytes, r->window, reqs);
  double sec = ax_now() - t0;
  if (rc == AX_OK) r->stream_mbs = (double)bytes * r->window * r->stream_iters / sec / 1e6;
  free(reqs);
  return rc;
}

/* The emulated link's one-way time for a message: LATENCY + size/BW (0: not emulated). */
static double model_us(const P2p *b, size_t bytes) {
  if (!b->emulated) return 0;
  AxLinkSpec l = ax_link_spec_of(b->links);
  return (l.latency_s + (double)bytes / l.bytes_per_s) * 1e6;
}

/* Rank 0 appends one JSON line; the first failure is kept in b->json_rc (the benchmark goes
 * on, so rank 1 is not left waiting, and the run fails at its end). */
static void write_json(P2p *b, size_t bytes, const P2pResult *r) {
  if (!b->c->json || b->me != 0 || b->json_rc != AX_OK) return;
  char line[1024];
  int n = snprintf(line, sizeof line,
                   "{\"bench\":\"p2p\",\"bytes\":%zu,\"iters\":%d,\"latency_us\":%.6g,"
                   "\"latency_avg_us\":%.6g,\"pingpong_mbs\":%.6g,\"window\":%d,"
                   "\"stream_iters\":%d,\"stream_mbs\":%.6g,\"same_node\":%s,"
                   "\"buffers\":\"host\",\"wire_bytes\":%.0f,\"emulated\":%s,"
                   "\"link_bits_per_s\":%.6g,\"latency_s\":%.6g,\"model_us\":%.6g,"
                   "\"cpu_percent\":%.4g,\"posted_late_us\":%.4g}\n",
                   bytes, r->iters, r->lat_us, r->avg_us, r->pp_mbs, r->window, r->stream_iters,
                   r->stream_mbs, b->same_node ? "true" : "false", r->wire_bytes,
                   b->emulated ? "true" : "false", ax_link_spec_of(b->links).bytes_per_s * 8,
                   ax_link_spec_of(b->links).latency_s, model_us(b, bytes), r->cpu_percent,
                   r->late_us);
  size_t len = (size_t)n < sizeof line ? (size_t)n : sizeof line - 1; /* never past line */
  b->json_rc = ax_file_append(b->c->json, line, len);
}

static int bench_size(P2p *b, size_t bytes) {
  P2pResult r = {0};
  AX_TRY(ping_pong(b, bytes, &r));
  if (b->c->window > 0) AX_TRY(streaming(b, bytes, &r));
  write_json(b, bytes, &r);
  char row[256], tail[96] = "";
  if (b->c->window > 0)
    snprintf(row, sizeof row, "%12zu %8d %10.2f %10.2f %12.2f %7d %14.2f %12.0f", bytes,
             r.iters, r.lat_us, r.avg_us, r.pp_mbs, r.window, r.stream_mbs, r.wire_bytes);
  else
    snprintf(row, sizeof row, "%12zu %8d %10.2f %10.2f %12.2f %7s %14s %12.0f", bytes, r.iters,
             r.lat_us, r.avg_us, r.pp_mbs, "-", "-", r.wire_bytes);
  if (b->emulated)
    snprintf(tail, sizeof tail, " %12.2f %9.3fx %7.1f %9.1f", model_us(b, bytes),
             r.lat_us / model_us(b, bytes), r.cpu_percent, r.late_us);
  ax_log("%s%s", row, tail);
  return AX_OK;
}

static int find_hosts(P2p *b) {
  char mine[MPI_MAX_PROCESSOR_NAME] = "", other[MPI_MAX_PROCESSOR_NAME] = "";
  int len = 0;
  AX_MPI(MPI_Get_processor_name(mine, &len));
  AX_MPI(MPI_Sendrecv(mine, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 1 - b->me, 4, other,
                      MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 1 - b->me, 4, b->pair,
                      MPI_STATUS_IGNORE));
  b->same_node = strcmp(mine, other) == 0;
  ax_log("# axonn bench p2p: rank 0 on %s, rank 1 on %s (%s); host buffers (CUDA build: "
         "device buffers TODO via the backend)", b->me == 0 ? mine : other,
         b->me == 0 ? other : mine, b->same_node ? "same node" : "different nodes");
  return AX_OK;
}

static void print_header(const P2p *b) {
  ax_bench_link_header(b->links, &b->c->net);
  if (ax_link_emulating(b->links) && !b->emulated)
    ax_log("# ranks 0 and 1 share virtual node %d: nothing between them is emulated "
           "(--ranks-per-node 1 puts them on different nodes)", ax_link_node_of(b->links, 0));
  ax_log("# latency = median (avg: mean) over up to %d iterations (after %d warm-up) of half the "
         "round trip; pp-bw = size / latency; stream-bw = windows of up to %d non-blocking sends "
         "+ 1-byte ack (osu_bw style); MB/s = 1e6 B/s; wire(B) = bytes on the wire per message%s",
         b->c->iters, b->c->warmup, b->c->window,
         b->emulated ? "; model(us) = LATENCY + size/BW, the emulated link's one-way time, "
                       "and latency / model; cpu% = rank 0's CPU time over the ping-pongs / "
                       "their wall time; late(us) = how long after its due time rank 0 posted "
                       "a held send, mean" : "");
  ax_log("# %10s %8s %10s %10s %12s %7s %14s %12s%s", "size(B)", "iters", "lat(us)", "avg(us)",
         "pp-bw(MB/s)", "window", "stream-bw(MB/s)", "wire(B)",
         b->emulated ? "    model(us)  lat/model    cpu%  late(us)" : "");
}

static int run_pair(P2p *b) {
  size_t max = (size_t)b->c->max_bytes, slots = (size_t)b->c->window * max;
  if (slots > RECV_SLOTS_BYTES) slots = RECV_SLOTS_BYTES;
  b->rbuf_bytes = slots > max ? slots : max; /* window slots, at least one message */
  b->sbuf = ax_malloc(max);
  b->rbuf = b->sbuf ? ax_malloc(b->rbuf_bytes) : NULL;
  int rc = b->rbuf ? AX_OK : AX_ERR;
  if (rc == AX_OK) {
    memset(b->sbuf, 'a' + b->me, max);
    memset(b->rbuf, 0, b->rbuf_bytes);
    rc = find_hosts(b);
  }
  if (rc == AX_OK) print_header(b);
  for (int i = 0; i < b->c->warmup && rc == AX_OK; i++) rc = round_trip(b, max); /* connect */
  for (size_t bytes = (size_t)b->c->min_bytes; bytes <= max && rc == AX_OK; bytes *= 2)
    rc = bench_size(b, bytes);
  free(b->sbuf);
  free(b->rbuf);
  return rc == AX_OK ? b->json_rc : rc;
}

static int check_config(const P2pConfig *c, int rank, int size) {
  AxLinkSpec link;
  AX_TRY(ax_bench_link_check(&c->net, &link)); /* a bad option first, whatever the ranks */
  if (size < 2) return AX_FAIL("bench p2p needs 2 ranks (run it under mpiexec -n 2)");
  if (c->json && rank == 0) AX_TRY(ax_file_check_appendable(c->json));
  if (c->min_bytes > c->max_bytes) return AX_FAIL("--min-bytes is larger than --max-bytes");
  if (c->max_bytes > (1LL << 31) - 1)
    return AX_FAIL("--max-bytes %lld exceeds one MPI message (2 GiB - 1)", c->max_bytes);
  return AX_OK;
}

/* The emulator over the job; whether ranks 0 and 1 are on different virtual nodes. */
static int start_links(P2p *b) {
  AX_TRY(ax_bench_link_start(&b->c->net, MPI_COMM_WORLD, &b->links));
  b->cc.links = b->links;
  b->cc.traffic = &b->sent;
  b->emulated = ax_link_emulating(b->links) && ax_link_node_of(b->links, 0) !=
                                                   ax_link_node_of(b->links, 1);
  return AX_OK;
}

/* Ranks 0 and 1 measure; the others wait (politely when oversubscribed). */
static int run_bench(const P2pConfig *c, int rank, int polite) {
  P2p b = {.c = c, .me = rank, .pair = MPI_COMM_NULL, .cc = ax_comm_config_default()};
  b.cc.polite = polite;
  int rc = ax_mpi_agree(MPI_COMM_WORLD, start_links(&b));
  if (rc != AX_OK) {
    if (rank != 0) ax_error_clear(); /* agreed: rank 0 says it */
    ax_link_emu_destroy(b.links);
    return rc;
  }
  AX_MPI(MPI_Comm_split(MPI_COMM_WORLD, rank < 2 ? 0 : MPI_UNDEFINED, rank, &b.pair));
  rc = rank < 2 ? run_pair(&b) : AX_OK;
  if (b.pair != MPI_COMM_NULL) MPI_Comm_free(&b.pair);
  MPI_Request done;
  int brc = MPI_Ibarrier(MPI_COMM_WORLD, &done) == MPI_SUCCESS
                ? ax_link_wait_recv(&b.cc, &done, MPI_STATUS_IGNORE)
                : AX_FAIL("the final MPI_Ibarrier failed");
  ax_link_emu_destroy(b.links);
  return rc == AX_OK ? brc : rc;
}

static int with_mpi(const P2pConfig *c, int *argc, char ***argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) MPI_Init(argc, argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  ax_set_rank(rank);
  int polite = ax_mpi_auto_polite(MPI_COMM_WORLD);
  int rc = ax_mpi_agree(MPI_COMM_WORLD, check_config(c, rank, size)); /* rank 0 says it */
  if (rc != AX_OK && rank == 0) ax_print_error();
  if (rc == AX_OK && (rc = run_bench(c, rank, polite)) != AX_OK && ax_error_pending())
    ax_print_error();
  if (!initialized) MPI_Finalize();
  return rc;
}

int ax_cmd_bench_p2p(int argc, char **argv) {
  P2pConfig c;
  AxOptState st;
  memset(&c, 0, sizeof c);
  int rc = ax_options_parse(&P2P_TABLE, &c, argc, argv, &st);
  if (rc == AX_OK && st.help) {
    ax_options_print_help(&P2P_TABLE, stdout);
    ax_options_free(&P2P_TABLE, &c);
    return 0;
  }
  if (rc == AX_OK)
    rc = with_mpi(&c, &argc, &argv);
  else
    ax_print_error_once();
  ax_options_free(&P2P_TABLE, &c);
  return rc == AX_OK ? 0 : 1;
}
