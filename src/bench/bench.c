/* bench.c — `axonn bench gemm` (the GEMM peak of this machine through the backend chosen by
 * --device and --precision; the measurement itself is src/backend/peak.c) and `axonn bench train` (the
 * full training step of `axonn train` on that backend, timed, against the GEMM peak measured
 * in the same run at the model's own GEMM shapes, as the summary of `axonn train` does), and the dispatch of the MPI benchmarks `bench allreduce`, `bench p2p` and
 * `bench optimizer`. Figures are medians over repeated runs. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "src/backend/backend.h"
#include "src/backend/peak.h"
#include "src/core/command.h"
#include "src/core/error.h"
#include "src/core/fileio.h"
#include "src/core/log.h"
#include "src/core/options.h"
#include "src/core/timer.h"
#include "src/train/train_config.h"
#include "src/train/trainer.h"

typedef struct {
  int threads, reps, steps, warmup;
  int size;
  char *device;
  int precision; /* AxDType, in the order of the choices below */
  char *models; /* comma list of a|b or L:C:NH:T:B:V */
  char *json;
} BenchConfig;

#define BOFF(f) offsetof(BenchConfig, f)
static const AxOption BENCH_OPTS[] = {
    {"threads", AX_OPT_INT, BOFF(threads), "1", "N", "compute threads", 1, 256, NULL},
    {"device", AX_OPT_STRING, BOFF(device), "cpu", "cpu|cuda",
     "compute backend (cuda: the plugin libaxonn-cuda.so, loaded from $AXONN_PLUGIN_DIR or next "
     "to the binary)", 1, 0, NULL},
    {"precision", AX_OPT_CHOICE, BOFF(precision), "fp32", "fp32|bf16|fp16",
     "compute precision (GEMM inputs; fp32 accumulation)", 0, 0, "fp32|bf16|fp16"},
    {"reps", AX_OPT_INT, BOFF(reps), "5", "N", "gemm: repetitions per size (median)", 1, 1000,
     NULL},
    {"size", AX_OPT_INT, BOFF(size), "0", "N",
     "gemm: one square size (0: 1024, 1536 and 2048; the best median is the peak)", 0, 16384,
     NULL},
    {"steps", AX_OPT_INT, BOFF(steps), "5", "N", "timed training steps per model (median)", 1,
     100000, NULL},
    {"warmup", AX_OPT_INT, BOFF(warmup), "2", "N", "untimed training steps first", 0, 1000,
     NULL},
    {"models", AX_OPT_STRING, BOFF(models), "a,b", "LIST",
     "a (L4 C128 NH4 T64 B4 V256), b (GPT-2 small, T256 B4), or L:C:NH:T:B:V", 1, 0, NULL},
    {"json", AX_OPT_STRING, BOFF(json), NULL, "FILE", "append one JSON line per result", 1, 0,
     NULL},
};
static const AxOptionTable BENCH_TABLE = {
    "bench gemm|train",
    "gemm: the GEMM peak of the backend (--device, --precision); train: the training step "
    "against it. allreduce, p2p, compress and optimizer run under mpiexec (each has its --help).",
    BENCH_OPTS,
    (int)(sizeof BENCH_OPTS / sizeof BENCH_OPTS[0])};

static int measure_peak(const BenchConfig *c, double *peak) {
  AxBackendConfig bc = {.device = c->device, .dtype = (AxDType)c->precision,
                        .threads = c->threads, .bind = 1, .local_size = 1};
  AxBackend *be = ax_backend_create(&bc);
  if (!be) return AX_ERR;
  static const int sizes[] = {1024, 1536, 2048};
  int n_sizes = c->size ? 1 : 3, rc = AX_OK;
  *peak = 0;
  ax_log("GEMM (C = A B^T, %s inputs, fp32 accumulation) on %s", ax_dtype_name(be->dtype),
         be->desc);
  ax_log("%8s %12s", "n", "GFLOP/s");
  for (int i = 0; i < n_sizes && rc == AX_OK; i++) {
    int n = c->size ? c->size : sizes[i];
    double g = 0;
    rc = ax_gemm_gflops(be, n, c->reps, &g);
    if (rc == AX_OK) {
      ax_log("%8d %12.1f", n, g);
      if (g > *peak) *peak = g;
    }
  }
  if (rc == AX_OK) ax_log("peak (best median): %.1f GFLOP/s", *peak);
  ax_backend_destroy(be);
  return rc;
}

typedef struct {
  const char *name;
  int L, C, NH, T, B, V;
} BenchModel;

static int parse_model(const char *spec, BenchModel *m) {
  if (!strcmp(spec, "a")) {
    *m = (BenchModel){"a", 4, 128, 4, 64, 4, 256};
    return AX_OK;
  }
  if (!strcmp(spec, "b")) {
    *m = (BenchModel){"b (GPT-2 small)", 12, 768, 12, 256, 4, 50257};
    return AX_OK;
  }
  static const AxIntList DIMS = {"models", ":", "a, b or L:C:NH:T:B:V", 0, INT_MAX, 6, 6};
  long long v[6];
  int n;
  AX_TRY(ax_options_int_list(&DIMS, spec, v, &n));
  *m = (BenchModel){spec, (int)v[0], (int)v[1], (int)v[2], (int)v[3], (int)v[4], (int)v[5]};
  return AX_OK;
}

/* The model's dimensions go through train's own option table, so they get its range checks
 * (and then its consistency checks), as if given to `axonn train`. */
static int set_dims(AxTrainConfig *tc, const BenchModel *m, AxOptState *st) {
  const struct { const char *name; int value; } dims[] = {
      {"layers", m->L}, {"hidden", m->C}, {"heads", m->NH}, {"seq", m->T}, {"batch", m->B},
      {"vocab", m->V}};
  for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++) {
    char text[24];
    snprintf(text, sizeof text, "%d", dims[i].value);
    AX_TRY(ax_options_set(&AX_TRAIN_OPTIONS, tc, dims[i].name, text, st));
  }
  return AX_OK;
}

static int fill_train_config(AxTrainConfig *tc, const BenchModel *m, const BenchConfig *c) {
  AxOptState st;
  memset(&st, 0, sizeof st);
  AX_TRY(ax_options_defaults(&AX_TRAIN_OPTIONS, tc));
  free(tc->exec.device);
  tc->exec.device = strdup(c->device);
  if (!tc->exec.device) return AX_FAIL("out of memory");
  if (set_dims(tc, m, &st) != AX_OK) return ax_error_context("--models %s", m->name);
  tc->exec.threads = c->threads;
  tc->exec.precision = c->precision;
  tc->optim.steps = c->steps + c->warmup;
  tc->output.val_steps = 0;
  AxGptConfig model = ax_train_model_config(tc);
  if (ax_train_config_check(tc, &st) != AX_OK || ax_gpt_config_check(&model) != AX_OK)
    return ax_error_context("--models %s", m->name);
  return AX_OK;
}

/* Calls fn for every model of --models, in order, until one fails. */
static int for_each_model(const BenchConfig *c, int (*fn)(const BenchConfig *, const BenchModel *)) {
  char *list = strdup(c->models);
  if (!list) return AX_FAIL("out of memory");
  int rc = AX_OK;
  char *save = NULL;
  for (char *item = strtok_r(list, ",", &save); item && rc == AX_OK;
       item = strtok_r(NULL, ",", &save)) {
    BenchModel m;
    rc = parse_model(item, &m);
    if (rc == AX_OK) rc = fn(c, &m);
  }
  free(list);
  return rc;
}

/* A model of --models is checked like `axonn train`'s options, before anything is measured. */
static int check_model(const BenchConfig *c, const BenchModel *m) {
  AxTrainConfig tc;
  memset(&tc, 0, sizeof tc);
  int rc = fill_train_config(&tc, m, c);
  ax_train_config_free(&tc);
  return rc;
}

static int write_json(const BenchConfig *c, const BenchModel *m, double ms, double tps,
                      double gflops, const AxPeakResult *peak) {
  if (!c->json) return AX_OK;
  char line[1024];
  int n = snprintf(line, sizeof line,
                   "{\"bench\":\"train\",\"device\":\"%s\",\"precision\":\"%s\",\"model\":\"%s\","
                   "\"layers\":%d,\"hidden\":%d,\"heads\":%d,\"seq\":%d,\"batch\":%d,"
                   "\"vocab\":%d,\"threads\":%d,\"step_ms\":%.3f,\"tokens_per_s\":%.1f,"
                   "\"gflops\":%.2f,\"peak_gflops\":%.2f,\"peak_best_shape\":\"%s %dx%dx%d\","
                   "\"percent_of_peak\":%.2f}\n",
                   c->device, ax_dtype_name((AxDType)c->precision), m->name, m->L, m->C, m->NH,
                   m->T, m->B, m->V, c->threads, ms, tps, gflops, peak->gflops, peak->best.name,
                   peak->best.m, peak->best.n, peak->best.k, 100.0 * gflops / peak->gflops);
  return ax_file_append(c->json, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

/* The median step of the timed steps after the warm-up, in ms. */
static int time_steps(AxTrainer *t, const BenchConfig *c, double *median_ms) {
  double *ms = ax_malloc((size_t)c->steps * sizeof *ms);
  int rc = ms ? AX_OK : AX_ERR;
  for (int s = 1; rc == AX_OK && s <= c->warmup + c->steps; s++) {
    AxStepRecord rec;
    rc = ax_trainer_step(t, s, &rec);
    if (rc == AX_OK && s > c->warmup) ms[s - c->warmup - 1] = rec.ms;
  }
  if (rc == AX_OK) *median_ms = ax_median(ms, c->steps);
  free(ms);
  return rc;
}

/* The peak as `axonn train`'s summary measures it: at this model's GEMM shapes and the square
 * reference, best sample, on a backend like the trainer's. */
static int model_peak(const BenchConfig *c, const AxTrainer *t, AxPeakResult *peak) {
  AxGemmShape shapes[AX_PEAK_MAX_SHAPES];
  int gpu = strcmp(c->device, "cpu") != 0;
  int n = ax_trainer_peak_shapes(t, gpu, shapes);
  AxBackendConfig bc = {.device = c->device, .dtype = (AxDType)c->precision,
                        .threads = c->threads, .bind = 1, .local_size = 1};
  AxBackend *be = ax_backend_create(&bc);
  if (!be) return AX_ERR;
  int rc = ax_peak_measure(be, shapes, n, peak);
  ax_backend_destroy(be);
  return rc;
}

static int bench_model(const BenchConfig *c, const BenchModel *m) {
  AxTrainConfig tc;
  memset(&tc, 0, sizeof tc);
  AxTrainer *t = NULL;
  AxPeakResult peak;
  double med = 0;
  int rc = fill_train_config(&tc, m, c);
  if (rc == AX_OK) rc = ax_trainer_create(&t, &tc);
  if (rc == AX_OK) rc = time_steps(t, c, &med);
  if (rc == AX_OK) rc = model_peak(c, t, &peak);
  if (rc == AX_OK) {
    double sec = med / 1e3, gflops = ax_trainer_flops_per_step(t) / sec / 1e9;
    double tps = (double)m->B * m->T / sec, pct = 100.0 * gflops / peak.gflops;
    char best[64];
    snprintf(best, sizeof best, "%s %dx%dx%d", peak.best.name, peak.best.m, peak.best.n,
             peak.best.k);
    ax_log("%-18s %4d %5d %4d %5d %3d %6d | %10.2f %10.0f %9.1f %9.1f %7.1f%%%s | %s", m->name,
           m->L, m->C, m->NH, m->T, m->B, m->V, med, tps, gflops, peak.gflops, pct,
           pct > 100 ? " (above the measured peak: noisy)" : "", best);
    rc = write_json(c, m, med, tps, gflops, &peak);
  }
  ax_trainer_destroy(t);
  ax_train_config_free(&tc);
  return rc;
}

static int bench_train(const BenchConfig *c) {
  AX_TRY(for_each_model(c, check_model));
  if (c->json) AX_TRY(ax_file_check_appendable(c->json));
  ax_log("training step (forward + backward + AdamW), %d thread(s), median of %d steps after "
         "%d warm-up; GFLOP/s executed (72 form) against the GEMM peak measured at the model's "
         "own shapes and a square reference (best sample; as axonn train's summary)",
         c->threads, c->steps, c->warmup);
  ax_log("%-18s %4s %5s %4s %5s %3s %6s | %10s %10s %9s %9s %8s | %s", "model", "L", "C", "NH",
         "T", "B", "V", "step ms", "tokens/s", "GFLOP/s", "peak", "of peak", "peak at");
  return for_each_model(c, bench_model);
}

static int run_gemm(void *config, const AxOptState *st) {
  (void)st;
  double peak;
  return measure_peak(config, &peak);
}

static int run_train(void *config, const AxOptState *st) {
  (void)st;
  return bench_train(config);
}

int ax_cmd_bench_gemm(int argc, char **argv) {
  static const AxCommandSpec spec = {&BENCH_TABLE, sizeof(BenchConfig), 0, run_gemm};
  return ax_command_run(&spec, argc, argv);
}

int ax_cmd_bench_train(int argc, char **argv) {
  static const AxCommandSpec spec = {&BENCH_TABLE, sizeof(BenchConfig), 0, run_train};
  return ax_command_run(&spec, argc, argv);
}

const AxCommand AX_BENCHES[] = {
    {"gemm", ax_cmd_bench_gemm, "the GEMM peak of the backend (--device, --precision)"},
    {"train", ax_cmd_bench_train, "the training step against the GEMM peak at its shapes"},
    {"allreduce", ax_cmd_bench_allreduce,
     "our all-reduce algorithms against MPI's, and the memory-traffic bound (mpiexec)"},
    {"p2p", ax_cmd_bench_p2p, "OSU-style ping-pong and streaming between ranks 0 and 1 (mpiexec)"},
    {"compress", ax_cmd_bench_compress,
     "gradient codecs on one core; plain vs CaSync all-reduce over EMULATED links (mpiexec)"},
    {"optimizer", ax_cmd_bench_optimizer,
     "the chunked all-reduce interleaved with the host AdamW (mpiexec)"},
    {"state-copy", ax_cmd_bench_state_copy,
     "one core's cost of an in-memory checkpoint a step: copy thread vs out-of-place AdamW"},
    {"sparse-sync", ax_cmd_bench_sparse_sync,
     "Zen vs all-gather vs dense all-reduce of a row-sparse embedding gradient (mpiexec)"},
};
const int AX_N_BENCHES = (int)(sizeof AX_BENCHES / sizeof AX_BENCHES[0]);

int ax_cmd_bench(int argc, char **argv) {
  const AxCommand *b = argc >= 2 ? ax_command_find(AX_BENCHES, AX_N_BENCHES, argv[1]) : NULL;
  if (b) return b->run(argc - 1, argv + 1);
  int help = argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"));
  FILE *out = help ? stdout : stderr;
  if (argc >= 2 && !help)
    fprintf(out, "axonn: error: unknown benchmark '%s' (see axonn bench --help)\n", argv[1]);
  else
    ax_command_usage(out, "axonn bench", AX_BENCHES, AX_N_BENCHES);
  return help ? 0 : 2;
}
