/* bench_sparse.c — `axonn bench sparse-sync`, run under mpiexec: the sum of a row-sparse
 * embedding gradient over the ranks (mpi/sparse/sparse_sync.h) by Zen, by the all-gather of rows
 * and by the dense all-reduce, side by side, for vocabularies and per-rank batches given as lists.
 * Each rank's batch draws Zipf tokens (src/core/zipf.h, its own seed), so the touched rows
 * overlap across ranks as a real batch's do; each touched row holds random values. A row of
 * the table: time (median over --iters of the slowest rank's), the bytes every rank sent
 * together, the speed-up over dense, and whether the result equals the dense sum (Zen and the
 * all-gather add in rank order, bit for bit each other; within 1e-6 of the ring's order), and
 * for Zen its push and pull imbalance ratios of the first run (thesis Definition 3.6; JSON
 * push_imbalance, pull_imbalance). Where --ranks-per-node puts the ranks 2 or more to a node
 * on 2 or more nodes, a fourth row, zen-2l: Zen in two levels (mpi/sparse/sparse_hier.h). Every
 * row also gives the bytes that crossed between nodes (JSON inter_node_bytes) and, in its JSON,
 * the most one rank sent (max_rank_bytes: the busiest rank, whose link ends the sum). With
 * --emulate-link the times are EMULATED (the header says so). Initializes MPI itself. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bench_link.h"
#include "mpi/mpi_util.h"
#include "mpi/sparse/sparse_hier.h"
#include "mpi/sparse/sparse_sync.h"
#include "src/backend/peak.h"
#include "src/core/command.h"
#include "src/core/error.h"
#include "src/core/fileio.h"
#include "src/core/log.h"
#include "src/core/options.h"
#include "src/core/timer.h"
#include "src/core/zipf.h"

typedef struct {
  char *vocabs, *tokens, *json;
  int cols, iters, warmup, owners; /* owners: AxZenOwners */
  double zipf_s;
  AxBenchLinkOpts net;
} SsConfig;

#define SOFF(f) offsetof(SsConfig, f)
static const AxOption SS_OPTS[] = {
    {"vocabs", AX_OPT_STRING, SOFF(vocabs), "256,8192,50257", "LIST", "vocabulary sizes (rows)",
     1, 0, NULL},
    {"tokens", AX_OPT_STRING, SOFF(tokens), "2048,8192,32768", "LIST",
     "tokens per rank and step (the rank's batch x sequence)", 1, 0, NULL},
    {"cols", AX_OPT_INT, SOFF(cols), "768", "C", "row length (the model's hidden size)", 1,
     1 << 20, NULL},
    {"zipf", AX_OPT_FLOAT, SOFF(zipf_s), "1.0", "S", "Zipf exponent of the token frequencies", 0,
     10, NULL},
    {"iters", AX_OPT_INT, SOFF(iters), "5", "N", "timed repetitions (median)", 1, 10000, NULL},
    {"warmup", AX_OPT_INT, SOFF(warmup), "1", "N", "untimed repetitions first", 0, 1000, NULL},
    {"json", AX_OPT_STRING, SOFF(json), NULL, "FILE", "append one JSON line per row", 1, 0, NULL},
    {"zen-owners", AX_OPT_CHOICE, SOFF(owners), "balanced", NULL,
     "Zen's owners: balanced per step from every rank's rows (the default, as in training), or "
     "the thesis's hash h_0", 1, 0, "hash|balanced"},
    AX_BENCH_LINK_OPTIONS(SsConfig, net),
};
static const AxOptionTable SS_TABLE = {
    "bench sparse-sync",
    "Zen vs all-gather vs dense all-reduce for a row-sparse embedding gradient (mpiexec; "
    "--emulate-link for EMULATED inter-node links)",
    SS_OPTS, (int)(sizeof SS_OPTS / sizeof SS_OPTS[0])};

enum { MAX_LIST = 16, N_ALGOS = 4, ALGO_ZEN_2L = 3 }; /* after AxSparseSyncAlgo's three */

typedef struct {
  const SsConfig *c;
  MPI_Comm comm;
  int rank, size;
  AxCommConfig cc;
  AxTraffic sent;
  AxLinkEmu *links;
  float *table, *input, *dense; /* V x C each: the result, this rank's rows, dense's result */
  uint32_t *idx;
  size_t n;
  AxTwoLevel levels; /* usable: the zen-2l row runs */
  AxSparseHier *hier;
} Ss;

static const char *algo_name(int algo) {
  return algo == ALGO_ZEN_2L ? "zen-2l" : ax_sparse_sync_algo_name((AxSparseSyncAlgo)algo);
}

/* One run of algo from the input. */
static int run_once(Ss *b, AxSparseSync *s, int algo, AxSparseSyncStats *st) {
  AxSparseRows in = {b->idx, b->n, NULL};
  if (algo != ALGO_ZEN_2L)
    return ax_sparse_sync(s, (AxSparseSyncAlgo)algo, AX_ALLREDUCE_RING, &b->cc, &in, b->table, st);
  AxSparseHierStats hs;
  AX_TRY(ax_sparse_hier_zen(b->hier, &b->cc, &in, b->table, &hs));
  *st = hs.node;
  st->sent += hs.cross.sent;
  st->received += hs.cross.received;
  return AX_OK;
}

/* One algorithm, iters times from the input: the median of the slowest rank's time, the bytes
 * all ranks sent in one run (bytes[0]), of them those between nodes (bytes[1]), the most one
 * rank sent (bytes[2]), and this rank's stats of the first. */
static int time_algo(Ss *b, AxSparseSync *s, int algo, uint32_t V, double *ms,
                     unsigned long long bytes[3], AxSparseSyncStats *first) {
  size_t cells = (size_t)V * (size_t)b->c->cols;
  int total = b->c->warmup + b->c->iters;
  double *t = ax_calloc((size_t)total, sizeof *t);
  if (!t) return AX_ERR;
  int rc = AX_OK;
  for (int i = 0; i < total && rc == AX_OK; i++) {
    memcpy(b->table, b->input, cells * sizeof(float));
    AxSparseSyncStats st;
    unsigned long long crossed = ax_traffic_crossed(&b->sent, AX_TRAFFIC_N_CLASSES);
    rc = ax_link_barrier(&b->cc, b->comm); /* polite where ranks outnumber cores */
    double t0 = ax_now();
    if (rc == AX_OK) rc = run_once(b, s, algo, &st);
    t[i] = ax_now() - t0;
    unsigned long long mine[2] = {st.sent,
                                  ax_traffic_crossed(&b->sent, AX_TRAFFIC_N_CLASSES) - crossed};
    if (rc == AX_OK && i == 0) {
      MPI_Allreduce(mine, bytes, 2, MPI_UNSIGNED_LONG_LONG, MPI_SUM, b->comm);
      MPI_Allreduce(&st.sent, &bytes[2], 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, b->comm);
      *first = st;
    }
  }
  if (rc == AX_OK)
    MPI_Allreduce(MPI_IN_PLACE, t, total, MPI_DOUBLE, MPI_MAX, b->comm);
  if (rc == AX_OK) *ms = ax_median(t + b->c->warmup, b->c->iters) * 1e3;
  free(t);
  return rc;
}

/* The largest |result - dense| / max(1, |dense|) over the table, the maximum over ranks. */
static double worst_difference(const Ss *b, size_t cells) {
  double worst = 0;
  for (size_t i = 0; i < cells; i++) {
    double d = fabs((double)b->table[i] - b->dense[i]) / fmax(1.0, fabs((double)b->dense[i]));
    if (d > worst) worst = d;
  }
  MPI_Allreduce(MPI_IN_PLACE, &worst, 1, MPI_DOUBLE, MPI_MAX, b->comm);
  return worst;
}

/* This rank's batch: Zipf tokens, their rows ascending, random values in those rows. */
static int draw_batch(Ss *b, uint32_t V, size_t tokens) {
  AxZipf z;
  if (!ax_zipf_init(&z, V, b->c->zipf_s, 7)) return AX_FAIL("out of memory for the Zipf table");
  AxRng r;
  ax_rng_seed(&r, 1000 + (uint64_t)b->rank);
  unsigned char *seen = ax_calloc(V, 1);
  int rc = seen ? AX_OK : AX_ERR;
  for (size_t i = 0; i < tokens && rc == AX_OK; i++) seen[ax_zipf_draw(&z, &r)] = 1;
  size_t C = (size_t)b->c->cols;
  memset(b->input, 0, (size_t)V * C * sizeof(float));
  b->n = 0;
  for (uint32_t v = 0; v < V && rc == AX_OK; v++)
    if (seen[v]) {
      b->idx[b->n++] = v;
      for (size_t j = 0; j < C; j++) b->input[(size_t)v * C + j] = (float)ax_rng_double(&r) - 0.5f;
    }
  free(seen);
  ax_zipf_free(&z);
  return rc;
}

/* Zen's imbalance ratios (Definition 3.6), push then pull; negative for the others. */
static void json_row(const Ss *b, uint32_t V, size_t tokens, double rows, int algo, double ms,
                     const unsigned long long bytes[3], double speedup, const double imb[2]) {
  if (!b->c->json || b->rank != 0) return;
  FILE *f = fopen(b->c->json, "a");
  if (!f) return;
  fprintf(f, "{\"bench\":\"sparse-sync\",\"ranks\":%d,\"vocab\":%u,\"cols\":%d,"
             "\"tokens_per_rank\":%zu,\"rows_per_rank\":%.1f,\"algo\":\"%s\","
             "\"zen_owners\":\"%s\",\"ms\":%.6g,"
             "\"bytes\":%llu,\"inter_node_bytes\":%llu,\"max_rank_bytes\":%llu,"
             "\"speedup_over_dense\":%.4g,"
             "\"emulated\":%s",
          b->size, V, b->c->cols, tokens, rows, algo_name(algo),
          ax_zen_owners_name((AxZenOwners)b->c->owners), ms, bytes[0], bytes[1], bytes[2], speedup,
          ax_link_emulating(b->links) ? "true" : "false");
  if (imb[0] >= 0)
    fprintf(f, ",\"push_imbalance\":%.4f,\"pull_imbalance\":%.4f", imb[0], imb[1]);
  fputs("}\n", f);
  fclose(f);
}

/* The three algorithms for one vocabulary and batch: dense first (the reference). */
static int rows_of(Ss *b, uint32_t V, size_t tokens) {
  size_t cells = (size_t)V * (size_t)b->c->cols;
  AX_TRY(draw_batch(b, V, tokens));
  double rows = (double)b->n;
  MPI_Allreduce(MPI_IN_PLACE, &rows, 1, MPI_DOUBLE, MPI_SUM, b->comm);
  rows /= b->size;
  AxSparseSync *s;
  AX_TRY(ax_sparse_sync_create(&s, b->comm, V, (size_t)b->c->cols, 1));
  ax_sparse_sync_set_owners(s, (AxZenOwners)b->c->owners);
  int rc = b->levels.usable ? ax_sparse_hier_create(&b->hier, &b->levels, V, (size_t)b->c->cols, 1)
                            : AX_OK;
  if (b->hier) ax_sparse_hier_set_owners(b->hier, (AxZenOwners)b->c->owners);
  const int order[N_ALGOS] = {AX_SPARSE_SYNC_DENSE, AX_SPARSE_SYNC_ZEN, AX_SPARSE_SYNC_ALLGATHER,
                              ALGO_ZEN_2L};
  double dense_ms = 0;
  for (int k = 0; k < (b->hier ? N_ALGOS : N_ALGOS - 1) && rc == AX_OK; k++) {
    double ms, imb[2] = {-1, -1};
    unsigned long long bytes[3] = {0, 0, 0};
    AxSparseSyncStats st;
    rc = time_algo(b, s, order[k], V, &ms, bytes, &st);
    if (rc == AX_OK && order[k] == AX_SPARSE_SYNC_ZEN)
      rc = ax_sparse_sync_imbalance(b->comm, &st, b->n, &imb[0], &imb[1]);
    if (rc != AX_OK) break;
    if (k == 0) dense_ms = ms, memcpy(b->dense, b->table, cells * sizeof(float));
    double diff = worst_difference(b, cells);
    char balance[32] = "-";
    if (imb[0] >= 0) snprintf(balance, sizeof balance, "%.3f/%.3f", imb[0], imb[1]);
    ax_log("%7u %9zu %9.1f %-10s %11.3f %14llu %14llu %8.2fx %9.1e %11s", V, tokens, rows,
           algo_name(order[k]), ms, bytes[0], bytes[1], dense_ms / ms, diff, balance);
    json_row(b, V, tokens, rows, order[k], ms, bytes, dense_ms / ms, imb);
  }
  ax_sparse_sync_free(s);
  ax_sparse_hier_free(b->hier);
  b->hier = NULL;
  return rc;
}

/* --vocabs and --tokens: comma lists of positive integers. */
static int parse_list(const char *text, const char *what, long long *out, int *n) {
  const AxIntList list = {what, ",", "a comma list of positive integers", 1, INT_MAX, 1, MAX_LIST};
  return ax_options_int_list(&list, text, out, n);
}

static int run_all(Ss *b, const long long *vocab, int nv, const long long *tokens, int nt) {
  long long most = 0;
  for (int i = 0; i < nv; i++) most = vocab[i] > most ? vocab[i] : most;
  size_t cells = (size_t)most * (size_t)b->c->cols;
  b->table = ax_calloc(cells, sizeof(float));
  b->input = ax_calloc(cells, sizeof(float));
  b->dense = ax_calloc(cells, sizeof(float));
  b->idx = ax_calloc((size_t)most, sizeof *b->idx);
  int rc = ax_mpi_agree(b->comm, b->table && b->input && b->dense && b->idx ? AX_OK : AX_ERR);
  ax_bench_link_header(b->links, &b->c->net);
  ax_log("# sparse embedding sync on %d ranks, rows of %d floats, Zipf(%g) tokens, Zen's owners "
         "by %s; time = median "
         "of %d (slowest rank), bytes = sent by all ranks (between nodes: of them, those that "
         "crossed), diff = worst relative difference "
         "from dense, push/pull = Zen's imbalance ratios (thesis Definition 3.6)", b->size,
         b->c->cols, b->c->zipf_s, ax_zen_owners_name((AxZenOwners)b->c->owners), b->c->iters);
  ax_log("# %5s %9s %9s %-10s %11s %14s %14s %9s %9s %11s", "vocab", "tok/rank", "rows/rank",
         "algo", "time(ms)", "bytes", "between nodes", "vs dense", "diff", "push/pull");
  for (int v = 0; v < nv && rc == AX_OK; v++)
    for (int t = 0; t < nt && rc == AX_OK; t++)
      rc = ax_mpi_agree(b->comm, rows_of(b, (uint32_t)vocab[v], (size_t)tokens[t]));
  free(b->table);
  free(b->input);
  free(b->dense);
  free(b->idx);
  return rc;
}

/* The ranks' nodes (--ranks-per-node) as two levels, when they sit so. */
static int open_levels(Ss *b) {
  int *node = ax_calloc((size_t)b->size, sizeof *node);
  if (!node) return AX_ERR;
  for (int r = 0; r < b->size; r++) node[r] = ax_link_node_of(b->links, r);
  int rc = ax_two_level_new(b->comm, node, &b->levels);
  free(node);
  return rc;
}

static int bench(const SsConfig *c) {
  long long vocab[MAX_LIST], tokens[MAX_LIST];
  int nv, nt;
  Ss b = {.c = c};
  MPI_Comm_dup(MPI_COMM_WORLD, &b.comm);
  MPI_Comm_rank(b.comm, &b.rank);
  MPI_Comm_size(b.comm, &b.size);
  ax_set_rank(b.rank);
  int rc = parse_list(c->vocabs, "vocabs", vocab, &nv);
  if (rc == AX_OK) rc = parse_list(c->tokens, "tokens", tokens, &nt);
  if (rc == AX_OK && c->json && b.rank == 0) rc = ax_file_check_appendable(c->json);
  if (rc == AX_OK) rc = ax_bench_link_start(&c->net, b.comm, &b.links);
  rc = ax_mpi_agree(b.comm, rc);
  if (rc == AX_OK) {
    AxCommConfig cc = {.polite = ax_mpi_auto_polite(b.comm), .links = b.links};
    b.cc = ax_comm_config_resolve(&cc);
    b.cc.traffic = &b.sent;
    b.cc.traffic_class = AX_TRAFFIC_EMBEDDING_SYNC;
    rc = open_levels(&b);
    if (rc == AX_OK) rc = run_all(&b, vocab, nv, tokens, nt);
  }
  ax_two_level_free(&b.levels);
  ax_link_emu_destroy(b.links);
  MPI_Comm_free(&b.comm);
  return rc;
}

static int run_sparse(void *config, const AxOptState *st) {
  (void)st;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) MPI_Init(NULL, NULL);
  int rc = bench(config);
  /* every failure is agreed: rank 0 holds the failing rank's message, which the command
   * skeleton prints (once); the others' "rank N failed" is not worth a line each */
  if (rc != AX_OK && ax_rank() > 0) ax_error_clear();
  if (!initialized) MPI_Finalize();
  return rc;
}

int ax_cmd_bench_sparse_sync(int argc, char **argv) {
  static const AxCommandSpec spec = {&SS_TABLE, sizeof(SsConfig), 0, run_sparse};
  return ax_command_run(&spec, argc, argv);
}
