/* bench_allreduce.c — `axonn bench allreduce`, run under mpiexec: the all-reduce algorithms of
 * mpi/coll/collectives.h side by side on message sizes from --min-bytes to --max-bytes (doubling),
 * printed by rank 0 as an nccl-tests-style table: time (median over iterations of the slowest
 * rank's time), algorithm bandwidth (size / time) and bus bandwidth (algbw · 2(p-1)/p), and a
 * check of every result against the exact sum. `mpi-blocking` is the library's blocking
 * MPI_Allreduce (the baseline), `mpi` its MPI_Iallreduce driven like ours. After the sweep, the
 * memory-traffic bound at the largest size: the least local work any all-reduce that moves
 * data between processes must do, timed on every rank at once (see traffic_bound). With
 * --bucket-size the sizes are instead the all-reduce chunks of training, k x bucket-size
 * elements for k in --coarsening (1,2,4,8). Each row is followed by the bytes every algorithm
 * put on the wire (traffic counters, mpi/traffic.h). With --emulate-link (and --ranks-per-node)
 * our algorithms run over the emulated link (mpi/link/link_emulator.h; MPI's cannot), the header
 * says the times are EMULATED, and each row is set against the ring's model instead of the
 * memory-traffic bound.
 * Host buffers only (CUDA build: device buffers TODO via the backend). Initializes and
 * finalizes MPI itself. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "bench_link.h"
#include "mpi/coll/collectives.h"
#include "mpi/coll/reduce_local.h"
#include "mpi/mpi_util.h"
#include "src/core/error.h"
#include "src/core/launcher.h"
#include "src/core/fileio.h"
#include "src/core/log.h"
#include "src/core/options.h"
#include "src/core/timer.h"

typedef struct {
  char *algos, *json, *coarsening;
  long long min_bytes, max_bytes, chunk, bucket_size;
  int iters, warmup, type, window;
  double budget;
  AxBenchLinkOpts net;
  int algos_given; /* --algos was on the command line */
} ArBenchConfig;

#define AOFF(f) offsetof(ArBenchConfig, f)
static const AxOption AR_OPTS[] = {
    {"algos", AX_OPT_STRING, AOFF(algos), "mpi-blocking,mpi,ring,rhd", "LIST",
     "algorithms side by side: mpi-blocking (MPI_Allreduce), mpi (MPI_Iallreduce), ring, rhd, "
     "auto (comma list; with --emulate-link: ring,rhd, and no mpi)", 1, 0, NULL},
    {"min-bytes", AX_OPT_LONG, AOFF(min_bytes), "4K", "BYTES", "smallest message", 4,
     (double)(1LL << 40), NULL},
    {"max-bytes", AX_OPT_LONG, AOFF(max_bytes), "256M", "BYTES", "largest message (doubling)", 4,
     (double)(1LL << 40), NULL},
    {"iters", AX_OPT_INT, AOFF(iters), "20", "N",
     "timed iterations per size and algorithm (at most; see --budget)", 1, 100000, NULL},
    {"warmup", AX_OPT_INT, AOFF(warmup), "2", "N", "untimed iterations first", 0, 1000, NULL},
    {"budget", AX_OPT_FLOAT, AOFF(budget), "3", "SECONDS",
     "fewer iterations (at least 3) where N would take longer than this", 0, 1e6, NULL},
    {"type", AX_OPT_CHOICE, AOFF(type), "f32", NULL, "element type", 1, 0, "f32|bf16"},
    {"chunk", AX_OPT_LONG, AOFF(chunk), "0", "BYTES",
     "chunk size of ring/rhd (0: the library default)", 0, (double)(1LL << 30), NULL},
    {"window", AX_OPT_INT, AOFF(window), "0", "N",
     "chunks in flight per direction (0: the library default)", 0, 1024, NULL},
    {"bucket-size", AX_OPT_LONG, AOFF(bucket_size), "0", "N",
     "time the training chunks k x N elements (k from --coarsening) instead of the size sweep "
     "(0: off)", 0, (double)(1LL << 40), NULL},
    {"coarsening", AX_OPT_STRING, AOFF(coarsening), "1,2,4,8", "LIST",
     "coarsening factors k for --bucket-size", 1, 0, NULL},
    {"json", AX_OPT_STRING, AOFF(json), NULL, "FILE", "append one JSON line per result", 1, 0,
     NULL},
    AX_BENCH_LINK_OPTIONS(ArBenchConfig, net),
};
static const AxOptionTable AR_TABLE = {
    "bench allreduce",
    "All-reduce algorithms side by side; run under mpiexec -n P.",
    AR_OPTS, (int)(sizeof AR_OPTS / sizeof AR_OPTS[0])};

enum { MAX_ALGOS = 5 };

typedef enum {
  AR_OURS,     /* ax_allreduce with `algo` */
  AR_BLOCKING, /* the library's blocking MPI_Allreduce */
  AR_BOUND     /* no all-reduce: the local memory traffic any of them needs (traffic_op) */
} ArKind;

typedef struct {
  ArKind kind;
  AxAllreduceAlgo algo; /* AR_OURS */
} ArColumn;

static const char *column_name(ArColumn col) {
  return col.kind == AR_BLOCKING ? "mpi-blocking"
         : col.kind == AR_BOUND  ? "memory-bound"
                                 : ax_allreduce_algo_name(col.algo);
}

typedef struct {
  double us, algbw, busbw;
  int iters, ok;
  /* bytes on the wire per all-reduce: the most any rank sent, all ranks', and all ranks' that
   * crossed virtual nodes (our algorithms; mpi counts what the ring would send) */
  double wire_max, wire_sum, crossed_sum;
} ArResult;

typedef struct {
  const ArBenchConfig *c;
  MPI_Comm comm;
  AxCommConfig cc; /* --chunk, --window (zeros resolved), polite when oversubscribed, the link */
  AxLinkEmu *links; /* virtual nodes, the emulated link */
  AxTraffic sent;    /* bytes our algorithms sent (mpi/traffic.h) */
  int rank, size;
  AxCommType type;
  size_t esz;
  ArColumn cols[MAX_ALGOS];
  int n_cols;
  int ks[AX_BENCH_MAX_K], n_ks; /* coarsening factors (--bucket-size mode) */
  void *buf;
  char *traffic[4]; /* AR_BOUND's buffers: (p-1)/p of the largest message each */
  ArResult last[MAX_ALGOS]; /* the latest row */
  int json_rc;              /* rank 0: the first failure to append to --json */
} ArBench;

static int parse_algos(ArBench *b, const char *algos) {
  char *list = strdup(algos);
  if (!list) return AX_FAIL("out of memory");
  int rc = AX_OK;
  char *save = NULL;
  b->n_cols = 0;
  for (char *item = strtok_r(list, ",", &save); item && rc == AX_OK;
       item = strtok_r(NULL, ",", &save)) {
    if (b->n_cols == MAX_ALGOS) rc = AX_FAIL("--algos: at most %d algorithms", MAX_ALGOS);
    if (rc != AX_OK) break;
    ArColumn *col = &b->cols[b->n_cols++];
    col->kind = strcmp(item, "mpi-blocking") ? AR_OURS : AR_BLOCKING;
    col->algo = AX_ALLREDUCE_MPI;
    if (col->kind == AR_OURS && ax_allreduce_algo_parse(item, &col->algo) != AX_OK) {
      ax_error_clear();
      rc = AX_FAIL("--algos: unknown algorithm '%s' (mpi-blocking, mpi, ring, rhd, auto)", item);
    }
  }
  free(list);
  if (rc == AX_OK && b->n_cols == 0) rc = AX_FAIL("--algos: empty list");
  return rc;
}

/* Small integers: sums over any number of ranks up to 16 are exact in bf16 as well. */
static float bench_value(size_t i, int rank) {
  return (float)((int)((i + 3 * (size_t)rank) % 16) - 8);
}

static void fill(ArBench *b, size_t n) {
  for (size_t i = 0; i < n; i++) {
    float v = bench_value(i, b->rank);
    if (b->type == AX_COMM_F32)
      ((float *)b->buf)[i] = v;
    else
      ((uint16_t *)b->buf)[i] = ax_f32_to_bf16(v);
  }
}

/* 1 on every rank when every rank holds the exact sum. */
static int verify(ArBench *b, size_t n) {
  long long bad = 0;
  for (size_t i = 0; i < n; i++) {
    float want = 0;
    for (int r = 0; r < b->size; r++) want += bench_value(i, r);
    float got = b->type == AX_COMM_F32 ? ((float *)b->buf)[i]
                                       : ax_bf16_to_f32(((uint16_t *)b->buf)[i]);
    bad += got != want;
  }
  long long all = 0;
  MPI_Allreduce(&bad, &all, 1, MPI_LONG_LONG, MPI_SUM, b->comm);
  return all == 0;
}

static int cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, c = *(const double *)y;
  return (a > c) - (a < c);
}

/* The least local work of an all-reduce of n elements that moves data between processes,
 * whatever its algorithm: each rank sums m = (p-1)/p·n elements it holds with as many that
 * arrive (read 2m, write m) and takes in the m elements of the result it did not reduce
 * (read m, write m: the copy out of the sender's memory, however it is done). Run on every
 * rank at once, on buffers larger than the caches, it bounds the algorithm bandwidth that
 * message passing can reach on this node. */
static void traffic_op(ArBench *b, size_t n) {
  size_t m = n / (size_t)b->size * (size_t)(b->size - 1);
  char **t = b->traffic;
  if (b->type == AX_COMM_F32)
    ax_reduce_sum_f32((float *)t[0], (const float *)t[1], (const float *)t[2], m);
  else
    ax_reduce_sum_bf16((uint16_t *)t[0], (const uint16_t *)t[1], (const uint16_t *)t[2], m);
  memcpy(t[3], t[1], m * b->esz);
}

/* Bytes on the wire per operation over `ops` operations since `before`: the most any rank
 * sent, the sum over ranks, and the sum of what crossed virtual nodes. */
static int wire_bytes(ArBench *b, const AxTraffic *before, int ops, ArResult *res) {
  unsigned long long bytes, crossed;
  ax_bench_link_delta(&b->sent, before, &bytes, &crossed);
  double mine[2] = {(double)bytes / ops, (double)crossed / ops}, sum[2], max = 0;
  AX_MPI(MPI_Allreduce(mine, sum, 2, MPI_DOUBLE, MPI_SUM, b->comm));
  AX_MPI(MPI_Allreduce(mine, &max, 1, MPI_DOUBLE, MPI_MAX, b->comm));
  res->wire_max = max;
  res->wire_sum = sum[0];
  res->crossed_sum = sum[1];
  return AX_OK;
}

/* One all-reduce as the slowest rank saw it, ranks started together (without spinning:
 * ax_link_barrier, ax_link_max). */
static int timed_allreduce(ArBench *b, size_t n, ArColumn col, double *sec) {
  if (col.kind != AR_BOUND) fill(b, n);
  AX_TRY(ax_link_barrier(&b->cc, b->comm));
  double t0 = ax_now();
  if (col.kind == AR_BLOCKING)
    AX_TRY(ax_mpi_allreduce_blocking(b->comm, b->buf, n, b->type));
  else if (col.kind == AR_OURS)
    AX_TRY(ax_allreduce(b->comm, &b->cc, b->buf, n, b->type, col.algo, NULL));
  else
    traffic_op(b, n);
  return ax_link_max(&b->cc, b->comm, ax_now() - t0, sec);
}

static int measure(ArBench *b, size_t bytes, ArColumn col, ArResult *res) {
  size_t n = bytes / b->esz;
  double sec = 0, warm = 0;
  for (int i = 0; i < b->c->warmup; i++) {
    AX_TRY(timed_allreduce(b, n, col, &sec));
    warm = sec;
  }
  int iters = b->c->iters;
  if (warm > 0 && warm * iters > b->c->budget) iters = (int)(b->c->budget / warm);
  if (iters < 3) iters = b->c->iters < 3 ? b->c->iters : 3;
  double *t = ax_malloc((size_t)iters * sizeof *t);
  if (!t) return AX_ERR;
  int rc = AX_OK;
  AxTraffic before = b->sent;
  for (int i = 0; i < iters && rc == AX_OK; i++) rc = timed_allreduce(b, n, col, &t[i]);
  if (rc == AX_OK) rc = wire_bytes(b, &before, iters, res);
  if (rc == AX_OK) {
    qsort(t, (size_t)iters, sizeof *t, cmp_double);
    double med = iters % 2 ? t[iters / 2] : 0.5 * (t[iters / 2 - 1] + t[iters / 2]);
    res->us = med * 1e6;
    res->algbw = (double)bytes / med / 1e9;
    res->busbw = res->algbw * 2.0 * (b->size - 1) / b->size;
    res->iters = iters;
    res->ok = col.kind == AR_BOUND || verify(b, n);
  }
  free(t);
  return rc;
}

/* How many ranks' ring sends share the busiest link (ranks r with r+1 on another node, per
 * ordered pair of nodes): 1 when nodes hold consecutive ranks, 0 when nothing crosses. */
static int ring_link_load(const ArBench *b) {
  int most = 0;
  for (int r = 0; r < b->size; r++) {
    int from = ax_link_node_of(b->links, r), to = ax_link_node_of(b->links, (r + 1) % b->size);
    if (from == to) continue;
    int load = 0;
    for (int q = 0; q < b->size; q++)
      load += ax_link_node_of(b->links, q) == from &&
              ax_link_node_of(b->links, (q + 1) % b->size) == to;
    most = load > most ? load : most;
  }
  return most;
}

/* The emulated link's bound on a ring all-reduce of `bytes`: 2(p-1) steps of bytes/p over the
 * busiest link, one message at a time, plus one latency: 2(p-1)·k·(S/p)/BW + LAT (0 when not
 * emulated or nothing crosses). */
static double ring_model_us(const ArBench *b, size_t bytes) {
  AxLinkSpec l = ax_link_spec_of(b->links);
  int k = ring_link_load(b);
  if (l.bytes_per_s <= 0 || k == 0 || b->size < 2) return 0;
  double per_step = (double)k * ((double)bytes / b->size) / l.bytes_per_s;
  return (2.0 * (b->size - 1) * per_step + l.latency_s) * 1e6;
}

/* Rank 0 appends one JSON line; the first failure is kept in b->json_rc (the benchmark goes
 * on, so no rank is left waiting, and the run fails at its end). */
static void write_json(ArBench *b, size_t bytes, int k, const char *algo, const ArResult *r) {
  if (!b->c->json || b->rank != 0 || b->json_rc != AX_OK) return;
  char line[1024];
  int n = snprintf(line, sizeof line,
                   "{\"bench\":\"allreduce\",\"ranks\":%d,\"type\":\"%s\",\"algo\":\"%s\","
                   "\"bytes\":%zu,\"count\":%zu,\"iters\":%d,\"time_us\":%.2f,\"algbw_gbs\":%.4f,"
                   "\"busbw_gbs\":%.4f,\"chunk_bytes\":%zu,\"window\":%d,\"bucket_size\":%lld,"
                   "\"coarsening\":%d,\"correct\":%s,\"wire_bytes_rank_max\":%.0f,"
                   "\"wire_bytes_sum\":%.0f,\"inter_node_bytes_sum\":%.0f,\"emulated\":%s,"
                   "\"link_bits_per_s\":%.6g,\"latency_s\":%.6g,\"ring_model_us\":%.6g}\n",
                   b->size, b->type == AX_COMM_F32 ? "f32" : "bf16", algo, bytes, bytes / b->esz,
                   r->iters, r->us, r->algbw, r->busbw, b->cc.chunk_bytes, b->cc.window,
                   b->c->bucket_size, k, r->ok ? "true" : "false", r->wire_max, r->wire_sum,
                   r->crossed_sum, ax_link_emulating(b->links) ? "true" : "false",
                   ax_link_spec_of(b->links).bytes_per_s * 8, ax_link_spec_of(b->links).latency_s,
                   ring_model_us(b, bytes));
  size_t len = (size_t)n < sizeof line ? (size_t)n : sizeof line - 1; /* never past line */
  b->json_rc = ax_file_append(b->c->json, line, len);
}

static void print_header(const ArBench *b) {
  AxNodeRanks nr = {.local_size = 1};
  if (ax_mpi_node_ranks(b->comm, &nr) != AX_OK) ax_error_clear();
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  ax_log("# axonn bench allreduce: %d ranks, %d on this node with %ld cores (%s, %s waiting)",
         b->size, nr.local_size, cores, nr.local_size > cores ? "OVERSUBSCRIBED" : "not oversubscribed",
         b->cc.polite ? "polite" : "busy");
  ax_log("# type %s; time = median over up to %d iterations (after %d warm-up) of the slowest "
         "rank; algbw = size/time, busbw = algbw*2(p-1)/p, GB/s = 1e9 B/s; ring/rhd chunks of "
         "%zu bytes, window %d; auto = what ax_allreduce_choose picks",
         b->type == AX_COMM_F32 ? "f32" : "bf16", b->c->iters, b->c->warmup, b->cc.chunk_bytes,
         b->cc.window);
  if (b->c->bucket_size)
    ax_log("# training chunks: k x bucket-size %lld elements; per-bucket(us) = time / k (lower "
           "is better: the cost of one bucket's all-reduce at that coarsening)",
           b->c->bucket_size);
  ax_bench_link_header(b->links, &b->c->net);
  if (ax_link_emulating(b->links))
    ax_log("# model: the ring's 2(p-1) steps of size/p over the busiest link, one message at a "
           "time, plus one latency; each row is followed by the bytes on the wire and the model");
  else
    ax_log("# each row is followed by the bytes on the wire per all-reduce");
  char line[1024];
  int k = snprintf(line, sizeof line, "# %s%12s %11s %5s %5s", b->c->bucket_size ? "  k " : "",
                   "size(B)", "count", "type", "auto");
  for (int a = 0; a < b->n_cols && k < (int)sizeof line; a++)
    k += snprintf(line + k, sizeof line - (size_t)k, " | %-12s %10s %7s %7s %3s%s",
                  column_name(b->cols[a]), "time(us)", "algbw", "busbw", "ok",
                  b->c->bucket_size ? " per-bucket(us)" : "");
  ax_log("%s", line);
}

/* After a row: bytes on the wire per all-reduce of each column, and with an emulated link each
 * column's time against the ring's model. */
static void report_wire(const ArBench *b, size_t bytes) {
  char line[1024];
  int k = snprintf(line, sizeof line, "#   on the wire per all-reduce (bytes: most by one rank "
                   "/ all ranks / all ranks between nodes):");
  for (int a = 0; a < b->n_cols && k < (int)sizeof line; a++)
    k += snprintf(line + k, sizeof line - (size_t)k, "%s %s %.0f / %.0f / %.0f", a ? ";" : "",
                  column_name(b->cols[a]), b->last[a].wire_max, b->last[a].wire_sum,
                  b->last[a].crossed_sum);
  ax_log("%s", line);
  double model = ring_model_us(b, bytes);
  if (model <= 0) return;
  k = snprintf(line, sizeof line, "#   EMULATED: ring model %.1f us;", model);
  for (int a = 0; a < b->n_cols && k < (int)sizeof line; a++)
    k += snprintf(line + k, sizeof line - (size_t)k, "%s %s %.1f us = %.3fx the model",
                  a ? "," : "", column_name(b->cols[a]), b->last[a].us, b->last[a].us / model);
  ax_log("%s", line);
}

/* One row: every algorithm on `bytes`; coarsening k > 0 labels a training chunk. */
static int bench_size(ArBench *b, size_t bytes, int coarsening) {
  char line[1024], kcol[16] = "";
  if (coarsening) snprintf(kcol, sizeof kcol, "%4d", coarsening);
  int k = snprintf(line, sizeof line, "  %s%12zu %11zu %5s %5s", kcol, bytes, bytes / b->esz,
                   b->type == AX_COMM_F32 ? "f32" : "bf16",
                   ax_allreduce_algo_name(ax_allreduce_choose(bytes, b->size)));
  for (int a = 0; a < b->n_cols; a++) {
    ArResult r;
    AX_TRY(measure(b, bytes, b->cols[a], &r));
    b->last[a] = r;
    write_json(b, bytes, coarsening, column_name(b->cols[a]), &r);
    if (k < (int)sizeof line)
      k += snprintf(line + k, sizeof line - (size_t)k, " | %-12s %10.1f %7.3f %7.3f %3s", "",
                    r.us, r.algbw, r.busbw, r.ok ? "ok" : "BAD");
    if (coarsening && k < (int)sizeof line)
      k += snprintf(line + k, sizeof line - (size_t)k, " %14.1f", r.us / coarsening);
  }
  ax_log("%s", line);
  report_wire(b, bytes);
  return AX_OK;
}

/* The largest message this run sends. */
static size_t max_message(const ArBench *b) {
  if (!b->c->bucket_size) return (size_t)b->c->max_bytes;
  int kmax = 0;
  for (int i = 0; i < b->n_ks; i++) kmax = b->ks[i] > kmax ? b->ks[i] : kmax;
  return (size_t)kmax * (size_t)b->c->bucket_size * b->esz;
}

/* After the row of `bytes`: the memory-traffic bound at that size, and each column against it. */
static int report_bound(ArBench *b, size_t bytes) {
  size_t m = bytes / b->esz / (size_t)b->size * (size_t)(b->size - 1) * b->esz;
  int rc = AX_OK;
  for (int i = 0; i < 4 && rc == AX_OK; i++)
    if (!(b->traffic[i] = ax_malloc(m ? m : 1))) rc = AX_ERR;
  for (int i = 1; i < 3 && rc == AX_OK; i++) memset(b->traffic[i], 0x3c, m); /* finite values */
  ArResult bound;
  if (rc == AX_OK) rc = measure(b, bytes, (ArColumn){.kind = AR_BOUND}, &bound);
  for (int i = 0; i < 4; i++) free(b->traffic[i]), b->traffic[i] = NULL;
  if (rc != AX_OK) return rc;
  write_json(b, bytes, 0, "memory-bound", &bound);
  char line[1024];
  int k = snprintf(line, sizeof line,
                   "# memory-traffic bound at %zu B (every rank at once sums (p-1)/p of the "
                   "buffer out of place and copies (p-1)/p): %.1f us, algbw <= %.4g GB/s;",
                   bytes, bound.us, bound.algbw);
  for (int a = 0; a < b->n_cols && k < (int)sizeof line; a++)
    k += snprintf(line + k, sizeof line - (size_t)k, " %s %.0f%%", column_name(b->cols[a]),
                  100 * b->last[a].algbw / bound.algbw);
  ax_log("%s of it", line);
  return AX_OK;
}

static int sweep(ArBench *b) {
  int rc = AX_OK;
  if (b->c->bucket_size) {
    for (int i = 0; i < b->n_ks && rc == AX_OK; i++)
      rc = bench_size(b, (size_t)b->ks[i] * (size_t)b->c->bucket_size * b->esz, b->ks[i]);
    return rc;
  }
  size_t largest = 0;
  for (size_t bytes = (size_t)b->c->min_bytes; bytes <= (size_t)b->c->max_bytes && rc == AX_OK;
       bytes *= 2)
    rc = bench_size(b, largest = bytes / b->esz * b->esz, 0);
  if (rc == AX_OK && b->size > 1 && !ax_link_emulating(b->links)) rc = report_bound(b, largest);
  return rc;
}

/* With an emulated link only our own algorithms (ring, rhd, auto) can run: by default those,
 * and an explicit MPI column is an error. */
static int choose_algos(ArBench *b, int emulated) {
  if (!emulated) return parse_algos(b, b->c->algos);
  AX_TRY(parse_algos(b, b->c->algos_given ? b->c->algos : "ring,rhd"));
  for (int a = 0; a < b->n_cols; a++)
    if (b->cols[a].kind == AR_BLOCKING || b->cols[a].algo == AX_ALLREDUCE_MPI)
      return AX_FAIL("--algos %s cannot run over --emulate-link: MPI moves its bytes itself, "
                     "past the emulator (use ring, rhd, auto)", column_name(b->cols[a]));
  return AX_OK;
}

/* Checks of the options: they fail alike on every rank. */
static int prepare(ArBench *b, const ArBenchConfig *c, MPI_Comm comm, int polite) {
  AxCommConfig cc = {.chunk_bytes = (size_t)c->chunk, .window = c->window, .polite = polite};
  *b = (ArBench){.c = c, .comm = comm, .cc = ax_comm_config_resolve(&cc)};
  AX_MPI(MPI_Comm_rank(comm, &b->rank));
  AX_MPI(MPI_Comm_size(comm, &b->size));
  b->type = c->type == 0 ? AX_COMM_F32 : AX_COMM_BF16;
  b->esz = b->type == AX_COMM_F32 ? sizeof(float) : sizeof(uint16_t);
  AxLinkSpec link;
  AX_TRY(ax_bench_link_check(&c->net, &link));
  AX_TRY(choose_algos(b, link.bytes_per_s > 0));
  if (c->min_bytes > c->max_bytes) return AX_FAIL("--min-bytes is larger than --max-bytes");
  if (c->bucket_size) AX_TRY(ax_bench_coarsening(b->c->coarsening, b->ks, &b->n_ks));
  if (c->json && b->rank == 0) AX_TRY(ax_file_check_appendable(c->json));
  return AX_OK;
}

static int run_bench(ArBench *b) {
  b->buf = ax_malloc(max_message(b));
  if (!b->buf) return AX_ERR;
  print_header(b);
  int rc = sweep(b);
  free(b->buf);
  return rc == AX_OK ? b->json_rc : rc;
}

/* The virtual nodes and link every all-reduce of ours goes through; counted into b->sent. */
static int start_links(ArBench *b) {
  AX_TRY(ax_bench_link_start(&b->c->net, b->comm, &b->links));
  b->cc.links = b->links;
  b->cc.traffic = &b->sent;
  return AX_OK;
}

static int with_mpi(const ArBenchConfig *c, int *argc, char ***argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) MPI_Init(argc, argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  ax_set_rank(rank);
  int polite = ax_mpi_auto_polite(MPI_COMM_WORLD);
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  ArBench b;
  int rc = ax_mpi_agree(comm, prepare(&b, c, comm, polite));
  if (rc == AX_OK) rc = ax_mpi_agree(comm, start_links(&b));
  if (rc != AX_OK && rank == 0) ax_print_error(); /* agreed: rank 0 says it */
  if (rc == AX_OK && (rc = run_bench(&b)) != AX_OK) ax_print_error();
  ax_link_emu_destroy(b.links);
  MPI_Comm_free(&comm);
  if (!initialized) MPI_Finalize();
  return rc;
}

int ax_cmd_bench_allreduce(int argc, char **argv) {
  ArBenchConfig c;
  AxOptState st;
  memset(&c, 0, sizeof c);
  int rc = ax_options_parse(&AR_TABLE, &c, argc, argv, &st);
  if (rc == AX_OK) c.algos_given = ax_options_was_set(&AR_TABLE, &st, "algos");
  if (rc == AX_OK && st.help) {
    ax_options_print_help(&AR_TABLE, stdout);
    ax_options_free(&AR_TABLE, &c);
    return 0;
  }
  if (rc == AX_OK)
    rc = with_mpi(&c, &argc, &argv);
  else
    ax_print_error_once();
  ax_options_free(&AR_TABLE, &c);
  return rc == AX_OK ? 0 : 1;
}
