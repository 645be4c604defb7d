/* sim_measure.c — `axonn profile`'s measurements (sim_profile.h): a middle stage as deep as the
 * run's deepest (its blocks' weights, gradients and activations pass through the caches as a
 * run's stage does, where a one-block stage repeated stays in them), timed forward and backward
 * at the run's micro-batch on its device and threads; what the first and last stage add, from
 * one-block stages (a middle one, the first, the last) timed in turn; the gradients' download,
 * the weights' upload and the gradients' zeroing through the same backend; the host AdamW and
 * the gradient's sum of squares with the trainer's optimizer threads; a local sum and a copy;
 * the deep stage again beside forked copies of itself, once per rank count up to the grid's,
 * and (a link emulated) beside computing copies and copies that wait as the emulator's ranks
 * wait. Each figure is the median of several timed repetitions after a warm-up (the stages'
 * over 31 rounds that time the four in turn, the host's over 31 repetitions); beside copies,
 * the mean of such medians over several placements of the copies. */
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "models/gpt_init.h"
#include "models/gpt_stage.h"
#include "mpi/coll/reduce_local.h"
#include "mpi/link/link_emulator.h"
#include "mpi/mpi_util.h"
#include "offload/adamw.h"
#include "offload/host_sumsq.h"
#include "offload/interleave.h"
#include "pipeline/partition.h"
#include "sim_profile.h"
#include "src/backend/binding_rule.h"
#include "src/backend/peak.h"
#include "src/core/error.h"
#include "src/core/timer.h"

enum { REPS = 7, REPS_BESIDE = 31, ROUNDS = 8, REPS_ROUND = 4 };
/* The host's per-element figures: repetitions of the four in turn, so that their medians span
 * about a quarter of a second on the 2-core VM (7 spanned 70 ms, and one profile read AdamW
 * and the norm 2.3 and 2.7 times its shape's four others) */
enum { HOST_REPS = 31 };

/* The stages timed and what they run on. */
enum { ONE_MIDDLE, ONE_FIRST, ONE_LAST, DEEP, N_STAGES };
typedef struct {
  AxBackend *be;
  AxGptConfig m;
  AxGptStage *st[N_STAGES]; /* one-block middle, first and last stages; a middle one of `deep` */
  int deep;                 /* blocks of the run's deepest stage */
  float dropout, attention_dropout; /* the run's: every timed forward drops, as a training one */
  uint64_t forwards; /* forwards run: each one's dropout origin, so each draws its own masks */
  int32_t *tokens;
  void *act;         /* an activation (device), input of a middle/last forward and a gradient */
  int B, T;
} Bench;

static int make_stage(Bench *b, int k) {
  AxStageSpec spec = {.l0 = 0, .l1 = k == DEEP ? b->deep : 1, .first = k == ONE_FIRST,
                      .last = k == ONE_LAST, .B = b->B, .T = b->T, .n_slots = 1,
                      .dropout = b->dropout, .attention_dropout = b->attention_dropout,
                      .dropout_seed = 1};
  AX_TRY(ax_stage_create(&b->st[k], b->be, &b->m, &spec));
  AxStageLayout lay = *ax_stage_layout_of(b->st[k]);
  float *host = ax_malloc(lay.total * sizeof *host);
  if (!host) return AX_ERR;
  ax_gpt_init_stage(&b->m, &lay, 1234, host);
  int rc = b->be->ops->upload_f32(b->be, ax_stage_params(b->st[k]), host, lay.total,
                                  AX_STREAM_COMPUTE);
  free(host);
  return rc;
}

/* The first block of each of cfg's P stages (first[P] = the layers), as the trainer
 * partitions them: an array to free, or NULL with the error recorded. */
static int *stage_starts(const AxTrainConfig *cfg, int *P) {
  *P = cfg->grid.g_inter > 0 ? cfg->grid.g_inter : 1;
  int *first = ax_malloc((size_t)(*P + 1) * sizeof *first);
  if (first && ax_partition(cfg->model.layers, *P, cfg->grid.stage_layers, first) != AX_OK) {
    free(first);
    return NULL;
  }
  return first;
}

/* Blocks of the run's deepest pipeline stage (pipeline/partition.h). */
static int deepest_stage(const AxTrainConfig *cfg, int *deep) {
  int P, *first = stage_starts(cfg, &P);
  if (!first) return AX_ERR;
  *deep = 1;
  for (int s = 0; s < P; s++)
    if (first[s + 1] - first[s] > *deep) *deep = first[s + 1] - first[s];
  free(first);
  return AX_OK;
}

size_t ax_sim_profile_elems(const AxTrainConfig *cfg) {
  int P, *first = stage_starts(cfg, &P);
  size_t most = 0;
  AxGptConfig m = ax_train_model_config(cfg);
  for (int s = 0; first && s < P; s++) {
    AxStageLayout lay;
    ax_stage_layout(&lay, &m, first[s], first[s + 1], s == 0, s == P - 1);
    if (lay.total > most) most = lay.total;
  }
  free(first);
  most /= (size_t)ax_train_tp_ranks(cfg);
  if (most < AX_SIM_PROFILE_MIN_ELEMS) return AX_SIM_PROFILE_MIN_ELEMS;
  return most > AX_SIM_PROFILE_MAX_ELEMS ? AX_SIM_PROFILE_MAX_ELEMS : most;
}

static int bench_open(Bench *b, const AxTrainConfig *cfg) {
  memset(b, 0, sizeof *b);
  AX_TRY(deepest_stage(cfg, &b->deep));
  b->m = ax_train_model_config(cfg);
  b->m.layers = b->deep;
  b->B = cfg->data.micro_batch ? cfg->data.micro_batch : cfg->data.batch / cfg->grid.g_data;
  b->T = cfg->model.seq;
  b->dropout = (float)cfg->model.dropout;
  b->attention_dropout = (float)cfg->model.attention_dropout;
  AxBackendConfig bc = {.device = cfg->exec.device, .dtype = (AxDType)cfg->exec.precision,
                        .threads = cfg->exec.threads, .bind = cfg->exec.bind,
                        .fused_attention = cfg->exec.fused_attention, .local_size = 1};
  if (!(b->be = ax_backend_create(&bc))) return AX_ERR;
  size_t n = (size_t)b->B * b->T;
  b->tokens = ax_malloc(n * sizeof *b->tokens);
  if (!b->tokens) return AX_ERR;
  for (size_t i = 0; i < n; i++) b->tokens[i] = (int32_t)((i * 7919) % (size_t)cfg->model.vocab);
  for (int k = 0; k < N_STAGES; k++) AX_TRY(make_stage(b, k));
  size_t n_act = ax_stage_message_bytes(b->st[0]) / ax_dtype_size((AxDType)cfg->exec.precision);
  if (!(b->act = ax_alloc(b->be, ax_stage_message_bytes(b->st[0])))) return AX_ERR;
  float *host = ax_malloc(n_act * sizeof *host);
  if (!host) return AX_ERR;
  for (size_t i = 0; i < n_act; i++) host[i] = 0.01f * (float)((int)(i % 201) - 100);
  int rc = b->be->ops->upload_f32(b->be, b->act, host, n_act, AX_STREAM_COMPUTE);
  free(host);
  return rc;
}

static void bench_close(Bench *b) {
  for (int k = 0; k < N_STAGES; k++)
    if (b->st[k]) ax_stage_destroy(b->st[k]);
  if (b->act) ax_free(b->be, b->act);
  if (b->be) ax_backend_destroy(b->be);
  free(b->tokens);
}

static int run_forward(Bench *b, int k) {
  ax_stage_set_dropout_origin(b->st[k], ++b->forwards, 0); /* without --dropout: nothing */
  AX_TRY(ax_stage_forward(b->st[k], 0, k == ONE_FIRST ? b->tokens : NULL,
                          k == ONE_FIRST ? NULL : b->act, AX_MEM_DEVICE));
  return ax_sync(b->be);
}

static int run_backward(Bench *b, int k) {
  double loss;
  if (k == ONE_LAST)
    AX_TRY(ax_stage_loss_backward(b->st[k], 0, b->tokens, 1e-3f, &loss));
  else
    AX_TRY(ax_stage_backward(b->st[k], 0, b->act, AX_MEM_DEVICE));
  return ax_sync(b->be);
}

/* One forward of stage k and the backward after it, timed into *f and *g. */
static int time_once(Bench *b, int k, double *f, double *g) {
  double t0 = ax_now();
  AX_TRY(run_forward(b, k));
  double t1 = ax_now();
  AX_TRY(run_backward(b, k));
  *f = t1 - t0;
  *g = ax_now() - t1;
  return AX_OK;
}

/* Median seconds of `reps` (<= REPS_BESIDE) forwards and of the backwards after them. */
static int time_pass(Bench *b, int k, int reps, double *fwd_s, double *bwd_s) {
  double f[REPS_BESIDE], g[REPS_BESIDE];
  AX_TRY(run_forward(b, k)); /* warm-up */
  AX_TRY(run_backward(b, k));
  for (int i = 0; i < reps; i++) AX_TRY(time_once(b, k, &f[i], &g[i]));
  *fwd_s = ax_median(f, reps);
  *bwd_s = ax_median(g, reps);
  return AX_OK;
}

/* The deep stage's forward and backward, and what the first and the last stage add to a
 * one-block middle one, over REPS_BESIDE rounds that time the four stages one after another:
 * the deep stage's medians over the rounds (each timing it after an untimed pass of its own),
 * and the medians of the ends' differences within a
 * round (so that what else the host runs meanwhile weighs on the three alike), never negative.
 * Spread over the rounds, a disturbance of the host shorter than half of them moves no median
 * (timed in 7 repetitions of its own, a profile read a block's backward 7.3 times the four
 * other profiles of its shape: docs/benchmarks.md, "The simulator on four shapes, quiet").
 * deep[0..1]: forward, backward; extra[0..3]: first forward, backward, last forward,
 * backward. */
static int time_rounds(Bench *b, double *deep, double *extra) {
  double d[6][REPS_BESIDE];
  for (int k = 0; k < N_STAGES; k++) { /* warm-up */
    AX_TRY(run_forward(b, k));
    AX_TRY(run_backward(b, k));
  }
  for (int i = 0; i < REPS_BESIDE; i++) {
    double f[N_STAGES], g[N_STAGES];
    for (int k = 0; k < DEEP; k++) AX_TRY(time_once(b, k, &f[k], &g[k]));
    AX_TRY(run_forward(b, DEEP)); /* timed after a pass of its own, as a run's stage runs */
    AX_TRY(run_backward(b, DEEP));
    AX_TRY(time_once(b, DEEP, &f[DEEP], &g[DEEP]));
    d[0][i] = f[DEEP];
    d[1][i] = g[DEEP];
    d[2][i] = f[ONE_FIRST] - f[ONE_MIDDLE];
    d[3][i] = g[ONE_FIRST] - g[ONE_MIDDLE];
    d[4][i] = f[ONE_LAST] - f[ONE_MIDDLE];
    d[5][i] = g[ONE_LAST] - g[ONE_MIDDLE];
  }
  for (int j = 0; j < 2; j++) deep[j] = ax_median(d[j], REPS_BESIDE);
  for (int j = 0; j < 4; j++) extra[j] = fmax(ax_median(d[2 + j], REPS_BESIDE), 0);
  return AX_OK;
}

/* Process `rank` of the k that compute at once (0: this one) placed as the trainer would place
 * k ranks of a host (binding_rule.h): each on its own cores when they fit, else none pinned
 * (the whole machine). Cores are numbered as CPUs, one CPU a core. It places the calling
 * thread: a multi-threaded rank's pool keeps the binding its backend gave it. */
static void place_as_rank(int rank, int k, int threads, int bind) {
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  if (cpus < 1) return;
  int first = ax_binding_first_core((int)cpus, threads, rank, k, bind);
  cpu_set_t set;
  CPU_ZERO(&set);
  for (long c = 0; c < cpus; c++)
    if (first < 0 || (c >= first && c < first + threads)) CPU_SET((int)c, &set);
  sched_setaffinity(0, sizeof set, &set);
}

/* A copy that waits for a message that never comes, as a rank waits on the link emulator:
 * polls that sleep (its first AX_LINK_SPIN_NS relaxing, politely where the host's ranks
 * outnumber its cores: mpi_util.h), then, idle, sleeps on a bell nobody rings. */
static void wait_forever(int polite) {
  AxCommConfig cc = {.polite = polite};
  AxLinkWaiter w = {0};
  static _Alignas(64) char line[64];
  AxLinkBells bells = ax_link_bells_private(line);
  for (;;) ax_link_pause_until(&cc, &w, LLONG_MAX, &bells, 0);
}

/* The deep stage's forward and backward (median of `reps`) beside `others` forked copies of this
 * process doing the same and `waiters` copies waiting (all killed after), the 1 + others +
 * waiters placed as the run's ranks of a host would be. */
static int time_beside(Bench *b, int others, int waiters, int bind, int reps, double *s) {
  pid_t kids[AX_SIM_PROFILE_MAX_K];
  int n = 0, rc = AX_OK, k = 1 + others + waiters;
  fflush(NULL);
  place_as_rank(0, k, b->be->threads, bind);
  pid_t parent = getpid();
  for (; n < others + waiters; n++) {
    if ((kids[n] = fork()) < 0) break;
    if (kids[n] != 0) continue;
    /* a session of its own, as mpiexec (hydra) starts each rank: where the kernel shares the
     * CPU fairly between sessions (autogroup), copies left in the profile's session split its
     * one share among them while the run's ranks each get a share. Out of the terminal's
     * process group a ^C no longer reaches it: it dies with the profile instead. */
    setsid();
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1); /* the profile died before the line above */
    place_as_rank(n + 1, k, b->be->threads, bind);
    if (n >= others) wait_forever(ax_mpi_polite_for(k));
    for (;;) /* a computing copy: until it is killed */
      if (run_forward(b, DEEP) != AX_OK || run_backward(b, DEEP) != AX_OK) _exit(1);
  }
  if (n < others + waiters) rc = AX_FAIL("cannot fork the profile's concurrent copies");
  nanosleep(&(struct timespec){0, 50 * 1000 * 1000}, NULL); /* they are running */
  double f = 0, g = 0;
  if (rc == AX_OK) rc = time_pass(b, DEEP, reps, &f, &g);
  for (int i = 0; i < n; i++) kill(kids[i], SIGKILL);
  for (int i = 0; i < n; i++) waitpid(kids[i], NULL, 0);
  *s = f + g;
  return rc;
}

static int append_speed(char **text, int k, double speed) {
  char *old = *text;
  int len = asprintf(text, "%s%s%.4g", old ? old : "", k > 1 ? "," : "", speed);
  free(old);
  if (len < 0) *text = NULL;
  return len < 0 ? AX_FAIL("out of memory") : AX_OK;
}

/* The speed of `others` + 1 computing beside `waiters` waiting copies: where the kernel puts
 * the copies decides it (two computing copies on one core or on two), so it is the mean over
 * rounds that each place them afresh. */
static int speed_beside(Bench *b, int others, int waiters, int bind, double alone,
                        double *speed) {
  *speed = 0;
  for (int r = 0; r < ROUNDS; r++) {
    double t;
    AX_TRY(time_beside(b, others, waiters, bind, REPS_ROUND, &t));
    *speed += alone / t / ROUNDS;
  }
  return AX_OK;
}

/* speed[k-1] for k = 1..kmax computing alone (concurrency_speed) and, with waits that sleep
 * (emulated), beside kmax - k waiting copies (waiting_speed, whose last entry is
 * concurrency_speed's); else waiting_speed = none. */
static int measure_concurrency(Bench *b, int kmax, int bind, int sleeping_waits,
                               AxSimProfile *p) {
  double alone = 0, speed = 1;
  cpu_set_t mine;
  int kept = sched_getaffinity(0, sizeof mine, &mine) == 0;
  int rc = time_beside(b, 0, 0, bind, REPS_BESIDE, &alone);
  for (int k = 1; k <= kmax && rc == AX_OK; k++) {
    if (k > 1) rc = speed_beside(b, k - 1, 0, bind, alone, &speed);
    if (rc == AX_OK) rc = append_speed(&p->concurrency_speed, k, speed);
    if (rc == AX_OK && sleeping_waits && k < kmax)
      rc = speed_beside(b, k - 1, kmax - k, bind, alone, &speed);
    if (rc == AX_OK && sleeping_waits) rc = append_speed(&p->waiting_speed, k, speed);
  }
  if (kept) sched_setaffinity(0, sizeof mine, &mine); /* this thread's own cores back */
  if (rc == AX_OK && !sleeping_waits && !(p->waiting_speed = strdup("none")))
    rc = AX_FAIL("out of memory");
  return rc;
}

/* Median seconds per element of --optimizer device's norm and AdamW (the backend's sumsq and
 * adamw) over n elements, into p; a backend without adamw (host memory) is left to the host's
 * figures. */
static int measure_device_optimizer(AxBackend *be, size_t n, AxSimProfile *p) {
  if (!be->ops->adamw) return AX_OK;
  char *mem = ax_alloc(be, 3 * n * sizeof(float) + 2 * n * be->esz);
  if (!mem) return AX_ERR;
  float *w = (float *)mem;
  void *g = mem + 3 * n * sizeof(float), *out = (char *)g + n * be->esz;
  int rc = be->ops->zero(be, mem, 3 * n * sizeof(float) + 2 * n * be->esz, AX_STREAM_COMPUTE);
  AxAdamWHyper h = {.lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .step = 1,
                    .grad_scale = 1.0f};
  AxAdamWCoef c = ax_adamw_coef(&h, 1);
  double norm[REPS], adamw[REPS];
  for (int i = -1; i < REPS && rc == AX_OK; i++) { /* i = -1: the warm-up */
    double t0 = ax_now(), sum = be->ops->sumsq(be, g, n);
    rc = ax_sync(be); /* a failed reduction surfaces here */
    double t1 = ax_now();
    if (rc == AX_OK && !(sum >= 0))
      rc = AX_FAIL("internal: the device's sum of squares is %g", sum);
    if (rc != AX_OK) break;
    be->ops->adamw(be, w, w + n, w + 2 * n, g, out, n, &c);
    rc = ax_sync(be);
    if (i >= 0) norm[i] = t1 - t0, adamw[i] = ax_now() - t1;
  }
  ax_free(be, mem);
  AX_TRY(rc);
  p->device_norm_s_per_elem = ax_median(norm, REPS) / (double)n;
  p->device_adamw_s_per_elem = ax_median(adamw, REPS) / (double)n;
  return AX_OK;
}

/* Median seconds per element of the trainer's copies between the device and the host arena
 * (offload.c) and of zeroing the device's gradients, over n elements (the CPU
 * backend's fp32 weights and gradients are the arena's own: no copies there); and of the
 * device optimizer. bf16 gradients come down as they are (offload.c), widened to fp32 on the
 * optimizer threads beside the next piece's copy: the copy alone is timed. */
static int measure_device_side(AxBackend *be, size_t n, AxSimProfile *p) {
  void *dev = ax_alloc(be, n * be->esz);
  float *host = dev ? be->ops->host_alloc(be, n * sizeof *host) : NULL;
  int rc = host ? AX_OK : AX_ERR, copies = !(be->is_host && be->dtype == AX_DTYPE_F32);
  double down[REPS] = {0}, up[REPS] = {0}, zero[REPS];
  if (host) memset(host, 0, n * sizeof *host);
  for (int i = -1; i < REPS && rc == AX_OK; i++) { /* i = -1: the warm-up */
    double t0 = ax_now();
    if (copies) {
      rc = be->dtype == AX_DTYPE_BF16
               ? be->ops->copy(be, host, dev, n * be->esz, AX_COPY_D2H, AX_STREAM_COPY)
               : be->ops->download_f32(be, host, dev, n, AX_STREAM_COPY);
      if (rc == AX_OK) rc = be->ops->sync(be, AX_STREAM_COPY);
    }
    double t1 = ax_now();
    if (copies && rc == AX_OK) rc = be->ops->upload_f32(be, dev, host, n, AX_STREAM_COPY);
    if (copies && rc == AX_OK) rc = be->ops->sync(be, AX_STREAM_COPY);
    double t2 = ax_now();
    if (rc == AX_OK) rc = be->ops->zero(be, dev, n * be->esz, AX_STREAM_COMPUTE);
    if (rc == AX_OK) rc = ax_sync(be);
    if (i < 0 || rc != AX_OK) continue;
    down[i] = copies ? t1 - t0 : 0;
    up[i] = copies ? t2 - t1 : 0;
    zero[i] = ax_now() - t2;
  }
  if (host) be->ops->host_free(be, host);
  ax_free(be, dev);
  AX_TRY(rc);
  p->download_s_per_elem = ax_median(down, REPS) / (double)n;
  p->upload_s_per_elem = ax_median(up, REPS) / (double)n;
  p->zero_s_per_elem = ax_median(zero, REPS) / (double)n;
  return measure_device_optimizer(be, n, p);
}

static int measure_stages(const AxTrainConfig *cfg, AxSimProfile *p) {
  Bench b;
  int rc = bench_open(&b, cfg);
  double deep_s[2] = {0}, extra[4] = {0};
  if (rc == AX_OK) rc = time_rounds(&b, deep_s, extra);
  if (rc == AX_OK) rc = measure_device_side(b.be, ax_sim_profile_elems(cfg), p);
  long long ranks = ax_train_ranks(cfg);
  int kmax = ranks < AX_SIM_PROFILE_MAX_K ? (int)ranks : AX_SIM_PROFILE_MAX_K;
  if (rc == AX_OK) rc = measure_concurrency(&b, kmax, cfg->exec.bind, cfg->grid.emulate_link != NULL, p);
  int deep = b.deep;
  bench_close(&b);
  AX_TRY(rc);
  /* a block as the run's deepest stage runs it */
  p->stage_blocks = deep;
  p->block_forward_s = deep_s[0] / deep;
  p->block_backward_s = deep_s[1] / deep;
  p->first_forward_s = extra[0];
  p->first_backward_s = extra[1];
  p->last_forward_s = extra[2];
  p->last_backward_s = extra[3];
  return AX_OK;
}

/* The host side: the sum of squares and AdamW on the optimizer's threads (the trainer's norm,
 * then interleave.c's update of a chunk), a local sum, a copy; over ax_sim_profile_elems. */
static int measure_host(const AxTrainConfig *cfg, int threads, AxSimProfile *p) {
  size_t n = ax_sim_profile_elems(cfg);
  float *a = ax_calloc(4 * n + 64, sizeof *a);
  AxPool *pool = a ? ax_pool_create(threads, NULL, NULL) : NULL;
  if (!pool) {
    free(a);
    return AX_ERR;
  }
  float *g = a + n + 16, *m = g + n + 16, *v = m + n + 16;
  for (size_t i = 0; i < n; i++) a[i] = g[i] = 1e-3f * (float)(i % 97);
  AxParamSegment seg = {0, n, 1, 0};
  AxAdamWHyper h = {.lr = (float)cfg->optim.lr, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f,
                    .weight_decay = 0.1f, .step = 1, .grad_scale = 1.0f};
  int bad = 0; /* a sum of squares that is not finite (it is used: it is not optimized away) */
  double norm[HOST_REPS], opt[HOST_REPS], sum[HOST_REPS], copy[HOST_REPS];
  for (int i = 0; i < HOST_REPS; i++) {
    double t0 = ax_now();
    bad |= !(ax_host_sumsq_pool(pool, g, n) >= 0);
    double t1 = ax_now();
    ax_adamw_update(pool, a, g, m, v, 0, n, &seg, 1, &h);
    double t2 = ax_now();
    ax_reduce_add_f32(m, g, n);
    double t3 = ax_now();
    memcpy(v, g, n * sizeof *v);
    norm[i] = t1 - t0;
    opt[i] = t2 - t1;
    sum[i] = t3 - t2;
    copy[i] = ax_now() - t3;
  }
  ax_pool_destroy(pool);
  free(a);
  if (bad) return AX_FAIL("internal: the profile's gradient has a sum of squares that is not finite");
  p->norm_s_per_elem = ax_median(norm, HOST_REPS) / (double)n;
  p->adamw_s_per_elem = ax_median(opt, HOST_REPS) / (double)n;
  p->reduce_s_per_elem = ax_median(sum, HOST_REPS) / (double)n;
  p->copy_bytes_per_s = (double)(n * sizeof(float)) / ax_median(copy, HOST_REPS);
  return AX_OK;
}

int ax_sim_profile_measure(const AxTrainConfig *cfg, AxSimProfile *p) {
  memset(p, 0, sizeof *p);
  AX_TRY(measure_stages(cfg, p));
  AxBackendConfig bc = {.device = "cpu", .threads = cfg->exec.threads, .local_size = 1};
  AxBackend *cpu = ax_backend_create(&bc); /* how many threads "all cores" means here */
  if (!cpu) return AX_ERR;
  int threads = cpu->threads;
  ax_backend_destroy(cpu);
  AX_TRY(measure_host(cfg, cfg->optim.optimizer_threads ? cfg->optim.optimizer_threads : threads, p));
  if (p->device_adamw_s_per_elem == 0) { /* device memory is host memory: the same AdamW */
    p->device_adamw_s_per_elem = p->adamw_s_per_elem;
    p->device_norm_s_per_elem = p->norm_s_per_elem;
  }
  p->device = strdup(cfg->exec.device);
  if (!p->device) return AX_FAIL("out of memory");
  p->threads = threads;
  p->precision = cfg->exec.precision;
  p->micro_batch = cfg->data.micro_batch ? cfg->data.micro_batch : cfg->data.batch / cfg->grid.g_data;
  p->seq = cfg->model.seq;
  p->hidden = cfg->model.hidden;
  p->heads = cfg->model.heads;
  p->vocab = cfg->model.vocab;
  p->dropout = cfg->model.dropout;
  p->attention_dropout = cfg->model.attention_dropout;
  return AX_OK;
}
