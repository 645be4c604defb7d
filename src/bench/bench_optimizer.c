/* bench_optimizer.c — `axonn bench optimizer`, run under mpiexec (paper axonn-ipdps22 Fig. 8):
 * for N parameters per rank cut into buckets, the chunked all-reduce alone, the host AdamW
 * alone, the two in sequence, and interleaved (with progress calls between update sub-blocks,
 * without them, and with a communication thread instead), for each coarsening k. Times are
 * the slowest rank's, median over --repeat runs. AdamW's memory traffic (28 bytes per
 * parameter: p, g, m, v read; p, m, v written) is set against a copy and an in-place add
 * measured in the same run with the same threads. The bytes one rank puts on the wire per
 * all-reduce of the whole array are counted (mpi/traffic.h); with --emulate-link the all-reduce
 * runs over the emulated link (mpi/link/link_emulator.h) and the header says the times are
 * EMULATED. Initializes and finalizes MPI itself. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bench_link.h"
#include "mpi/coll/reduce_local.h"
#include "mpi/mpi_util.h"
#include "offload/interleave.h"
#include "src/backend/peak.h"
#include "src/core/error.h"
#include "src/core/fileio.h"
#include "src/core/log.h"
#include "src/core/options.h"
#include "src/core/threadpool.h"
#include "src/core/timer.h"

typedef struct {
  long long params, bucket_size;
  char *coarsening, *json;
  int threads, repeat, algo, bind;
  AxBenchLinkOpts net;
} OptBenchConfig;

#define OOFF(f) offsetof(OptBenchConfig, f)
static const AxOption OPT_OPTS[] = {
    {"params", AX_OPT_LONG, OOFF(params), "32M", "N", "parameters per rank", 1, 1e12, NULL},
    {"bucket-size", AX_OPT_LONG, OOFF(bucket_size), "2M", "N", "bucket size in elements", 1,
     1e12, NULL},
    {"coarsening", AX_OPT_STRING, OOFF(coarsening), "1,2,4,8", "LIST", "values of k", 1, 0,
     NULL},
    {"threads", AX_OPT_INT, OOFF(threads), "1", "N", "optimizer threads per rank", 1, 256, NULL},
    {"bind", AX_OPT_INT, OOFF(bind), "1", "0|1", "pin threads with hwloc", 0, 1, NULL},
    {"repeat", AX_OPT_INT, OOFF(repeat), "5", "N", "runs per measurement (median)", 1, 1000,
     NULL},
    {"allreduce", AX_OPT_CHOICE, OOFF(algo), "auto", NULL, "all-reduce algorithm", 1, 0,
     "auto|mpi|ring|rhd"},
    {"json", AX_OPT_STRING, OOFF(json), NULL, "FILE", "append one JSON line per k", 1, 0, NULL},
    AX_BENCH_LINK_OPTIONS(OptBenchConfig, net),
};
static const AxOptionTable OPT_TABLE = {
    "bench optimizer",
    "Chunked all-reduce and host AdamW, alone, in sequence and interleaved; run under mpiexec.",
    OPT_OPTS, (int)(sizeof OPT_OPTS / sizeof OPT_OPTS[0])};

enum { N_MODES = 6 };
typedef enum { M_ALLREDUCE, M_ADAMW, M_SEQUENCE, M_INTERLEAVED, M_NO_PROGRESS, M_THREAD } Mode;
static const char *const MODE_NAMES[N_MODES] = {"allreduce",   "adamw",
                                                "sequence",    "interleaved",
                                                "interleaved_no_progress", "interleaved_thread"};

typedef struct {
  const OptBenchConfig *c;
  AxBackend *be;
  AxPool *pool;
  MPI_Comm comm;
  int rank, size;
  float *device_params, *grads;
  size_t n; /* parameters per rank */
  int json_rc; /* rank 0: the first failure to append to --json */
  AxLinkEmu *links;
  AxTraffic sent;
  AxCommConfig cc; /* the all-reduce's: the link emulator, counted as data_parallel, polite
                      where ranks outnumber cores */
  double wire_bytes; /* this rank's bytes on the wire per whole all-reduce (the last k) */
} OptBench;

/* Seconds of fn on the slowest rank, median over --repeat runs. */
static int time_slowest(OptBench *b, int (*fn)(OptBench *, AxOffload *, int), AxOffload *o,
                        int arg, double *sec) {
  double *t = ax_malloc((size_t)b->c->repeat * sizeof *t);
  if (!t) return AX_ERR;
  int rc = AX_OK;
  for (int r = 0; r < b->c->repeat && rc == AX_OK; r++) {
    rc = ax_link_barrier(&b->cc, b->comm);
    double t0 = ax_now();
    if (rc == AX_OK) rc = fn(b, o, arg);
    if (rc == AX_OK) rc = ax_link_max(&b->cc, b->comm, ax_now() - t0, &t[r]);
  }
  if (rc == AX_OK) *sec = ax_median(t, b->c->repeat);
  free(t);
  return rc;
}

static AxAdamWHyper hyper(void) {
  return (AxAdamWHyper){.lr = 1e-4f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f,
                        .weight_decay = 0.1f, .step = 1, .grad_scale = 1e-3f};
}

static AxReduceSpec spec(OptBench *b, AxProgressMode progress) {
  return (AxReduceSpec){.comm = b->comm, .cc = &b->cc, .algo = (AxAllreduceAlgo)b->c->algo,
                        .window = 2, .progress = progress};
}

static int run_mode(OptBench *b, AxOffload *o, int mode) {
  AxAdamWHyper h = hyper();
  AxReduceSpec r = spec(b, mode == M_NO_PROGRESS ? AX_PROGRESS_NONE
                           : mode == M_THREAD    ? AX_PROGRESS_THREAD
                                                 : AX_PROGRESS_CALLS);
  double ss;
  switch ((Mode)mode) {
  case M_ALLREDUCE: return ax_offload_reduce(o, &r, &ss);
  case M_ADAMW: return ax_offload_update_all(o, b->device_params, &h, NULL);
  case M_SEQUENCE:
    AX_TRY(ax_offload_reduce(o, &r, &ss));
    return ax_offload_update_all(o, b->device_params, &h, NULL);
  default: return ax_offload_reduce_update(o, &r, b->device_params, &h, &ss);
  }
}

static void copy_task(void *ctx, int tid, int nt) {
  OptBench *b = ctx;
  size_t lo, hi;
  ax_split(b->n, tid, nt, &lo, &hi);
  memcpy(b->device_params + lo, b->grads + lo, (hi - lo) * sizeof(float));
}

/* y += x in place: 12 bytes per element, no write-allocate traffic (like AdamW's in-place
 * updates), so the fairest yardstick for it; vectorized like AdamW (the all-reduce's AVX2
 * local reduction: a plain loop here was left scalar by the compiler at -O2). */
static void add_task(void *ctx, int tid, int nt) {
  OptBench *b = ctx;
  size_t lo, hi;
  ax_split(b->n, tid, nt, &lo, &hi);
  ax_reduce_add_f32(b->device_params + lo, b->grads + lo, hi - lo);
}

static int run_copy(OptBench *b, AxOffload *o, int in_place_add) {
  (void)o;
  ax_pool_run(b->pool, in_place_add ? add_task : copy_task, b);
  return AX_OK;
}

static void fill(float *x, size_t n, float scale, unsigned seed) {
  for (size_t i = 0; i < n; i++) {
    seed = seed * 1664525u + 1013904223u;
    x[i] = scale * ((float)(seed >> 8) / (float)(1u << 24) - 0.5f);
  }
}

/* Rank 0 appends one JSON line; the first failure is kept in b->json_rc (the benchmark goes
 * on, so no rank is left waiting, and the run fails at its end). */
static void write_json(OptBench *b, int k, const double sec[N_MODES]) {
  double best = sec[M_ALLREDUCE] > sec[M_ADAMW] ? sec[M_ALLREDUCE] : sec[M_ADAMW];
  char line[1024];
  int n = snprintf(line, sizeof line,
                   "{\"bench\":\"optimizer\",\"ranks\":%d,\"params\":%lld,\"bucket\":%lld,"
                   "\"k\":%d,\"threads\":%d", b->size, b->c->params, b->c->bucket_size, k,
                   b->c->threads);
  for (int m = 0; m < N_MODES; m++)
    n += snprintf(line + n, sizeof line - (size_t)n, ",\"%s_ms\":%.3f", MODE_NAMES[m],
                  sec[m] * 1e3);
  AxLinkSpec l = ax_link_spec_of(b->links);
  n += snprintf(line + n, sizeof line - (size_t)n,
                ",\"interleaved_over_max\":%.4f,\"thread_over_max\":%.4f,"
                "\"allreduce_wire_bytes\":%.0f,\"emulated\":%s,\"link_bits_per_s\":%.6g,"
                "\"latency_s\":%.6g}\n",
                sec[M_INTERLEAVED] / best, sec[M_THREAD] / best, b->wire_bytes,
                ax_link_emulating(b->links) ? "true" : "false", l.bytes_per_s * 8, l.latency_s);
  size_t len = (size_t)n < sizeof line ? (size_t)n : sizeof line - 1; /* never past line */
  b->json_rc = ax_file_append(b->c->json, line, len);
}

static int bench_k(OptBench *b, int k) {
  AxParamSegment all = {0, b->n, 1, 0};
  AxOffloadConfig oc = {.bucket_size = (size_t)b->c->bucket_size, .coarsening = k,
                        .segs = &all, .n_segs = 1};
  AxOffload o;
  AX_TRY(ax_offload_init(&o, b->be, b->n, b->device_params, b->grads, &oc, b->pool));
  fill(o.master, o.n, 1.0f, 7);
  double sec[N_MODES];
  int rc = AX_OK;
  for (int m = 0; m < N_MODES && rc == AX_OK; m++) {
    fill(b->grads, o.n, 1e-3f, 11u + (unsigned)m); /* the all-reduce grows them: refresh */
    AxTraffic before = b->sent;
    rc = time_slowest(b, run_mode, &o, m, &sec[m]);
    unsigned long long bytes, crossed;
    ax_bench_link_delta(&b->sent, &before, &bytes, &crossed);
    if (m == M_ALLREDUCE) b->wire_bytes = (double)bytes / b->c->repeat;
  }
  double chunk_mb = (double)o.chunk * 4 / 1e6;
  ax_offload_free(&o);
  AX_TRY(rc);
  double best = sec[M_ALLREDUCE] > sec[M_ADAMW] ? sec[M_ALLREDUCE] : sec[M_ADAMW];
  ax_log_result("%3d %10.1f %12.1f %10.1f %11.1f %13.1f %15.1f %10.1f %10.2f %10.2f %12.0f", k,
                chunk_mb, sec[0] * 1e3, sec[1] * 1e3, sec[2] * 1e3, sec[3] * 1e3, sec[4] * 1e3,
                sec[5] * 1e3, sec[M_INTERLEAVED] / best, sec[M_THREAD] / best, b->wire_bytes);
  if (b->c->json && b->rank == 0 && b->json_rc == AX_OK) write_json(b, k, sec);
  return AX_OK;
}

static int run_adamw_only(OptBench *b, AxOffload *o, int arg) {
  (void)b, (void)arg;
  AxAdamWHyper h = hyper();
  ax_offload_update(o, 0, o->n, &h);
  return AX_OK;
}

/* AdamW alone (no write-back) against a copy and an in-place add, over the whole array, every
 * rank at once (as in training: the ranks of a node share its memory bandwidth). */
static int bench_bandwidth(OptBench *b) {
  AxParamSegment all = {0, b->n, 1, 0};
  AxOffloadConfig oc = {.bucket_size = (size_t)b->c->bucket_size, .coarsening = 1,
                        .segs = &all, .n_segs = 1};
  AxOffload o;
  AX_TRY(ax_offload_init(&o, b->be, b->n, b->device_params, b->grads, &oc, b->pool));
  fill(o.master, o.n, 1.0f, 7);
  double copy_s = 0, add_s = 0, adamw_s = 0;
  int rc = time_slowest(b, run_copy, &o, 0, &copy_s);
  if (rc == AX_OK) rc = time_slowest(b, run_copy, &o, 1, &add_s);
  if (rc == AX_OK) rc = time_slowest(b, run_adamw_only, &o, 0, &adamw_s);
  ax_offload_free(&o);
  AX_TRY(rc);
  double n = (double)b->n, copy_bw = 2.0 * 4 * n / copy_s;
  double add_bw = 12.0 * n / add_s, adamw_bw = 28.0 * n / adamw_s;
  ax_log_result("bandwidth per rank, %d thread(s) (all ranks running): memcpy %.2f GB/s "
                "(read + write counted), in-place y += x %.2f GB/s, AdamW %.2f GB/s "
                "(28 B/parameter, %.1f ms) = %.0f%% of memcpy, %.0f%% of y += x",
                b->c->threads, copy_bw / 1e9, add_bw / 1e9, adamw_bw / 1e9, adamw_s * 1e3,
                100.0 * adamw_bw / copy_bw, 100.0 * adamw_bw / add_bw);
  return AX_OK;
}

static int setup(OptBench *b, const OptBenchConfig *c) {
  memset(b, 0, sizeof *b);
  b->c = c;
  AX_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &b->comm));
  MPI_Comm_rank(b->comm, &b->rank);
  MPI_Comm_size(b->comm, &b->size);
  ax_set_rank(b->rank);
  AX_TRY(ax_bench_link_start(&c->net, b->comm, &b->links));
  b->cc = ax_comm_config_default();
  b->cc.links = b->links;
  b->cc.traffic = &b->sent;
  b->cc.traffic_class = AX_TRAFFIC_DATA_PARALLEL;
  AxNodeRanks nr;
  AX_TRY(ax_mpi_node_ranks(b->comm, &nr));
  b->cc.polite = ax_mpi_polite_for(nr.share_size); /* as the trainer waits */
  AxBackendConfig bc = {.device = "cpu", .dtype = AX_DTYPE_F32, .threads = c->threads,
                        .bind = c->bind, .share_rank = nr.share_rank, .share_size = nr.share_size};
  b->be = ax_backend_create(&bc);
  if (!b->be) return AX_ERR;
  b->pool = ax_pool_create(c->threads, NULL, NULL);
  size_t n = (size_t)c->params;
  b->n = n;
  /* the stage's two buffers in one allocation, staggered like the arena's arrays, so the
   * copy and add yardsticks run on a layout as good as AdamW's */
  size_t offset = ax_staggered(n * sizeof(float));
  b->grads = b->be->ops->alloc(b->be, offset + n * sizeof(float));
  b->device_params = b->grads ? (float *)((char *)b->grads + offset) : NULL;
  return b->pool && b->device_params ? AX_OK : AX_ERR;
}

static void teardown(OptBench *b) {
  if (b->be) {
    if (b->grads) b->be->ops->free(b->be, b->grads); /* device_params too */
  }
  ax_pool_destroy(b->pool);
  ax_backend_destroy(b->be);
  ax_link_emu_destroy(b->links);
  if (b->comm != MPI_COMM_NULL) MPI_Comm_free(&b->comm);
}

static int run_bench(const OptBenchConfig *c, const int *ks, int n_ks) {
  OptBench b;
  int rc = setup(&b, c);
  if (rc == AX_OK) {
    ax_log_result("# bench optimizer: %lld parameters per rank on %d rank(s), bucket %lld, "
                  "%d optimizer thread(s), all-reduce %s; ms, slowest rank, median of %d",
                  c->params, b.size, c->bucket_size, c->threads,
                  ax_allreduce_algo_name((AxAllreduceAlgo)c->algo), c->repeat);
    ax_bench_link_header(b.links, &c->net);
    ax_log_result("%3s %10s %12s %10s %11s %13s %15s %10s %10s %10s %12s", "k", "chunk(MB)",
                  "allreduce", "adamw", "sequence", "interleaved", "no-progress", "thread",
                  "int/max", "thread/max", "wire(B)/rank");
  }
  for (int i = 0; i < n_ks && rc == AX_OK; i++) rc = bench_k(&b, ks[i]);
  if (rc == AX_OK) rc = bench_bandwidth(&b);
  if (rc == AX_OK) rc = b.json_rc;
  teardown(&b);
  return rc;
}

/* --emulate-link's text, --ranks-per-node against the job, and an all-reduce it can carry. */
static int check_network(const OptBenchConfig *c) {
  AxLinkSpec link;
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  AX_TRY(ax_bench_link_check(&c->net, &link));
  if (c->net.ranks_per_node > 0 && size % c->net.ranks_per_node)
    return AX_FAIL("--ranks-per-node %d does not divide the job's %d rank(s)",
                   c->net.ranks_per_node, size);
  if (link.bytes_per_s > 0 && c->algo == AX_ALLREDUCE_MPI)
    return AX_FAIL("--allreduce mpi cannot run over --emulate-link: MPI_Iallreduce moves its "
                   "bytes itself, past the emulator (use auto, ring or rhd)");
  return AX_OK;
}

int ax_cmd_bench_optimizer(int argc, char **argv) {
  OptBenchConfig c;
  AxOptState st;
  memset(&c, 0, sizeof c);
  int rc = ax_options_parse(&OPT_TABLE, &c, argc, argv, &st);
  if (rc == AX_OK && st.help) {
    ax_options_print_help(&OPT_TABLE, stdout);
    ax_options_free(&OPT_TABLE, &c);
    return 0;
  }
  int provided, rank, ks[AX_BENCH_MAX_K], n_ks = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  ax_set_rank(rank);
  /* the options are the same everywhere, the output file is rank 0's: rank 0 says what is wrong */
  if (rc == AX_OK) rc = ax_bench_coarsening(c.coarsening, ks, &n_ks);
  if (rc == AX_OK && c.json && rank == 0) rc = ax_file_check_appendable(c.json);
  if (rc == AX_OK) rc = check_network(&c);
  rc = ax_mpi_agree(MPI_COMM_WORLD, rc);
  if (rc != AX_OK && rank == 0) ax_print_error();
  if (rc == AX_OK && (rc = run_bench(&c, ks, n_ks)) != AX_OK) ax_print_error();
  ax_options_free(&OPT_TABLE, &c);
  MPI_Finalize();
  return rc == AX_OK ? 0 : 1;
}
