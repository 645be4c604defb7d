/* bench_allreduce.c — `axonn bench allreduce`, run under mpiexec: the all-reduce algorithms of
 * mpi/collectives.h side by side on message sizes from --min-bytes to --max-bytes (doubling),
 * printed by rank 0 as an nccl-tests-style table: time (median over iterations of the slowest
 * rank's time), algorithm bandwidth (size / time) and bus bandwidth (algbw · 2(p-1)/p), and a
 * check of every result against the exact sum. Initializes and finalizes MPI itself. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "error.h"
#include "log.h"
#include "mpi/collectives.h"
#include "mpi/mpi_util.h"
#include "options.h"
#include "timer.h"

typedef struct {
  char *algos, *json;
  long long min_bytes, max_bytes, chunk;
  int iters, warmup, type, window;
  double budget;
} ArBenchConfig;

#define AOFF(f) offsetof(ArBenchConfig, f)
static const AxOption AR_OPTS[] = {
    {"algos", AX_OPT_STRING, AOFF(algos), "mpi,ring,rhd", "LIST",
     "algorithms side by side: mpi, ring, rhd, auto (comma list)", 1, 0, NULL},
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
    {"json", AX_OPT_STRING, AOFF(json), NULL, "FILE", "append one JSON line per result", 1, 0,
     NULL},
};
static const AxOptionTable AR_TABLE = {
    "bench allreduce",
    "All-reduce algorithms side by side; run under mpiexec -n P.",
    AR_OPTS, (int)(sizeof AR_OPTS / sizeof AR_OPTS[0])};

enum { MAX_ALGOS = 4 };

typedef struct {
  const ArBenchConfig *c;
  MPI_Comm comm;
  int rank, size;
  AxCommType type;
  size_t esz;
  AxAllreduceAlgo algos[MAX_ALGOS];
  int n_algos;
  void *buf;
} ArBench;

typedef struct {
  double us, algbw, busbw;
  int iters, ok;
} ArResult;

static int parse_algos(ArBench *b) {
  char *list = strdup(b->c->algos);
  if (!list) return AX_FAIL("out of memory");
  int rc = AX_OK;
  char *save = NULL;
  b->n_algos = 0;
  for (char *item = strtok_r(list, ",", &save); item && rc == AX_OK;
       item = strtok_r(NULL, ",", &save)) {
    if (b->n_algos == MAX_ALGOS) rc = AX_FAIL("--algos: at most %d algorithms", MAX_ALGOS);
    if (rc == AX_OK) rc = ax_allreduce_algo_parse(item, &b->algos[b->n_algos++]);
  }
  free(list);
  if (rc == AX_OK && b->n_algos == 0) rc = AX_FAIL("--algos: empty list");
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

/* One all-reduce as the slowest rank saw it, ranks started together. */
static int timed_allreduce(ArBench *b, size_t n, AxAllreduceAlgo algo, double *sec) {
  fill(b, n);
  AX_MPI(MPI_Barrier(b->comm));
  double t0 = ax_now();
  AX_TRY(ax_allreduce(b->comm, b->buf, n, b->type, algo, NULL));
  double mine = ax_now() - t0;
  AX_MPI(MPI_Allreduce(&mine, sec, 1, MPI_DOUBLE, MPI_MAX, b->comm));
  return AX_OK;
}

static int measure(ArBench *b, size_t bytes, AxAllreduceAlgo algo, ArResult *res) {
  size_t n = bytes / b->esz;
  double sec = 0, warm = 0;
  for (int i = 0; i < b->c->warmup; i++) {
    AX_TRY(timed_allreduce(b, n, algo, &sec));
    warm = sec;
  }
  int iters = b->c->iters;
  if (warm > 0 && warm * iters > b->c->budget) iters = (int)(b->c->budget / warm);
  if (iters < 3) iters = b->c->iters < 3 ? b->c->iters : 3;
  double *t = ax_malloc((size_t)iters * sizeof *t);
  if (!t) return AX_ERR;
  int rc = AX_OK;
  for (int i = 0; i < iters && rc == AX_OK; i++) rc = timed_allreduce(b, n, algo, &t[i]);
  if (rc == AX_OK) {
    qsort(t, (size_t)iters, sizeof *t, cmp_double);
    double med = iters % 2 ? t[iters / 2] : 0.5 * (t[iters / 2 - 1] + t[iters / 2]);
    res->us = med * 1e6;
    res->algbw = (double)bytes / med / 1e9;
    res->busbw = res->algbw * 2.0 * (b->size - 1) / b->size;
    res->iters = iters;
    res->ok = verify(b, n);
  }
  free(t);
  return rc;
}

static void write_json(const ArBench *b, size_t bytes, AxAllreduceAlgo algo, const ArResult *r) {
  if (!b->c->json || b->rank != 0) return;
  FILE *f = fopen(b->c->json, "a");
  if (!f) return;
  size_t chunk;
  int window;
  ax_coll_get_tuning(&chunk, &window);
  fprintf(f, "{\"bench\":\"allreduce\",\"ranks\":%d,\"type\":\"%s\",\"algo\":\"%s\","
             "\"bytes\":%zu,\"count\":%zu,\"iters\":%d,\"time_us\":%.2f,\"algbw_gbs\":%.4f,"
             "\"busbw_gbs\":%.4f,\"chunk_bytes\":%zu,\"window\":%d,\"correct\":%s}\n",
          b->size, b->type == AX_COMM_F32 ? "f32" : "bf16", ax_allreduce_algo_name(algo), bytes,
          bytes / b->esz, r->iters, r->us, r->algbw, r->busbw, chunk, window,
          r->ok ? "true" : "false");
  fclose(f);
}

static void print_header(const ArBench *b) {
  int local_rank = 0, local_size = 1;
  if (ax_mpi_node_ranks(b->comm, &local_rank, &local_size) != AX_OK) ax_error_clear();
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  size_t chunk;
  int window;
  ax_coll_get_tuning(&chunk, &window);
  ax_log("# axonn bench allreduce: %d ranks, %d on this node with %ld cores (%s, %s waiting)",
         b->size, local_size, cores, local_size > cores ? "OVERSUBSCRIBED" : "not oversubscribed",
         ax_mpi_polite() ? "polite" : "busy");
  ax_log("# type %s; time = median over up to %d iterations (after %d warm-up) of the slowest "
         "rank; algbw = size/time, busbw = algbw*2(p-1)/p, GB/s = 1e9 B/s; ring/rhd chunks of "
         "%zu bytes, window %d; auto = what ax_allreduce_choose picks",
         b->type == AX_COMM_F32 ? "f32" : "bf16", b->c->iters, b->c->warmup, chunk, window);
  char line[512];
  int k = snprintf(line, sizeof line, "# %12s %11s %5s %5s", "size(B)", "count", "type", "auto");
  for (int a = 0; a < b->n_algos && k < (int)sizeof line; a++)
    k += snprintf(line + k, sizeof line - (size_t)k, " | %-5s %10s %7s %7s %3s",
                  ax_allreduce_algo_name(b->algos[a]), "time(us)", "algbw", "busbw", "ok");
  ax_log("%s", line);
}

static int bench_size(ArBench *b, size_t bytes) {
  char line[512];
  int k = snprintf(line, sizeof line, "  %12zu %11zu %5s %5s", bytes, bytes / b->esz,
                   b->type == AX_COMM_F32 ? "f32" : "bf16",
                   ax_allreduce_algo_name(ax_allreduce_choose(bytes, b->size)));
  for (int a = 0; a < b->n_algos; a++) {
    ArResult r;
    AX_TRY(measure(b, bytes, b->algos[a], &r));
    write_json(b, bytes, b->algos[a], &r);
    if (k < (int)sizeof line)
      k += snprintf(line + k, sizeof line - (size_t)k, " | %-5s %10.1f %7.3f %7.3f %3s", "",
                    r.us, r.algbw, r.busbw, r.ok ? "ok" : "BAD");
  }
  ax_log("%s", line);
  return AX_OK;
}

static int run_bench(const ArBenchConfig *c, MPI_Comm comm) {
  ArBench b = {.c = c, .comm = comm};
  AX_MPI(MPI_Comm_rank(comm, &b.rank));
  AX_MPI(MPI_Comm_size(comm, &b.size));
  b.type = c->type == 0 ? AX_COMM_F32 : AX_COMM_BF16;
  b.esz = b.type == AX_COMM_F32 ? sizeof(float) : sizeof(uint16_t);
  AX_TRY(parse_algos(&b));
  if (c->min_bytes > c->max_bytes) return AX_FAIL("--min-bytes is larger than --max-bytes");
  ax_coll_set_tuning((size_t)c->chunk, c->window);
  b.buf = ax_malloc((size_t)c->max_bytes);
  if (!b.buf) return AX_ERR;
  print_header(&b);
  int rc = AX_OK;
  for (size_t bytes = (size_t)c->min_bytes; bytes <= (size_t)c->max_bytes && rc == AX_OK;
       bytes *= 2)
    rc = bench_size(&b, bytes / b.esz * b.esz);
  free(b.buf);
  return rc;
}

static int with_mpi(const ArBenchConfig *c, int *argc, char ***argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) MPI_Init(argc, argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  ax_set_rank(rank);
  ax_mpi_auto_polite(MPI_COMM_WORLD);
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  int rc = run_bench(c, comm);
  if (rc != AX_OK) ax_print_error();
  MPI_Comm_free(&comm);
  if (!initialized) MPI_Finalize();
  return rc;
}

int ax_cmd_bench_allreduce(int argc, char **argv) {
  ArBenchConfig c;
  AxOptState st;
  memset(&c, 0, sizeof c);
  int rc = ax_options_parse(&AR_TABLE, &c, argc, argv, &st);
  if (rc == AX_OK && st.help) {
    ax_options_print_help(&AR_TABLE, stdout);
    ax_options_free(&AR_TABLE, &c);
    return 0;
  }
  if (rc == AX_OK)
    rc = with_mpi(&c, &argc, &argv);
  else
    ax_print_error();
  ax_options_free(&AR_TABLE, &c);
  return rc == AX_OK ? 0 : 1;
}
