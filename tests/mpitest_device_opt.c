/* mpitest_device_opt.c — --optimizer device on many ranks (offload/device_opt.h) on the CPU
 * backend posing as a device (tests/posing_device.h: device memory that is not the host's, every
 * copy's kind checked), on whatever number of ranks it runs on:
 *  - the sum itself: each rank's own gradients in device memory, summed host-staged and in
 *    device memory (device buffers handed to MPI), give every rank the AdamW of the summed
 *    gradients (the host's update of the same sum) and the sum's sum of squares; the staged
 *    sum downloads the gradients and uploads them, the device sum copies nothing. Without the
 *    communicator (no sum) each rank gets the update of its own gradients instead, which on 2
 *    or more ranks is another update: a skipped sum shows;
 *  - whole training runs (ax_trainer_create_on with the posing device, its device-to-device
 *    copies run at once as its kernels are) of the grids G_inter x G_data, both at most 2,
 *    that the ranks make (1x1; 1x2 and 2x1 on 2 ranks; 2x2 on 4), with clipping:
 *    --optimizer device host-staged (--cuda-aware-mpi 0; on 2x2 the first stage's wte through
 *    Zen's sparse sum) and with device buffers (1: the dense tied sum, all in device memory)
 *    gives --optimizer host's loss within 1e-5 (relative) at every step and its final weights
 *    within 1e-5; the staged run's steps download the gradients where a rank sums, the
 *    device-buffer run's only the losses; each stopped at a checkpoint and resumed gives its
 *    uninterrupted run's losses and final weights bit for bit (the state goes through the host
 *    arena both ways). */
#include <check.h>
#include <mpi.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/mpi_util.h"
#include "offload/device_opt.h"
#include "posing_device.h"
#include "src/core/error.h"
#include "src/core/log.h"
#include "src/train/trainer.h"
#include "mpitestutil.h"
#include "testutil.h"

enum { RUN_TIMEOUT_S = 120, N = 3001, STEPS = 4, HALF = 2 };

static MPI_Comm g_comm;   /* a duplicate of MPI_COMM_WORLD for the sums */
static AxCommConfig g_cc; /* polite waiting where ranks outnumber cores */
static char g_dir[128];   /* rank 0's temporary directory, the same name on every rank */

/* ------------------------------------------------------------------ the sum */

static const AxAdamWHyper HYPER = {.lr = 1e-2f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f,
                                   .weight_decay = 0.1f, .step = 1, .grad_scale = 0.5f};

/* The gradients the update should see: every rank's summed, or this rank's own. */
static float *expected_grads(int summed) {
  float *g = mt_inputs(N, mt_rank, 5);
  if (!summed) return g;
  memset(g, 0, N * sizeof *g);
  for (int r = 0; r < mt_size; r++) {
    float *x = mt_inputs(N, r, 5);
    for (size_t i = 0; i < N; i++) g[i] += x[i];
    free(x);
  }
  return g;
}

/* One device update of N weights from this rank's gradients, on `path` (HOST: staged through
 * the arena; DEVICE: handed to MPI where they are), summed over g_comm or (summed 0) not:
 * the new weights against the host's AdamW of expected_grads(summed). */
static void check_sum(AxDeviceSum path, int summed) {
  const char *what = path == AX_DEVICE_SUM_DEVICE ? "in device memory" : "host-staged";
  AxBackend *be = tu_posing_backend();
  void *params = ax_alloc(be, N * sizeof(float)), *grads = ax_alloc(be, N * sizeof(float));
  AxParamSegment seg = {0, N, 1, 0};
  AxOffloadConfig oc = {.bucket_size = 500, .coarsening = 2, .segs = &seg, .n_segs = 1,
                        .grads_on_device = path == AX_DEVICE_SUM_DEVICE};
  AxOffload o;
  AxDeviceOpt d;
  ck_assert_int_eq(ax_offload_init(&o, be, N, params, grads, &oc, NULL), AX_OK);
  float *w0 = mt_inputs(N, 0, 9), *mine = mt_inputs(N, mt_rank, 5);
  memcpy(o.master, w0, N * sizeof *w0);
  ck_assert_int_eq(be->ops->upload_f32(be, params, w0, N, AX_STREAM_COMPUTE), AX_OK);
  ck_assert_int_eq(be->ops->upload_f32(be, grads, mine, N, AX_STREAM_COMPUTE), AX_OK);
  ck_assert_int_eq(ax_device_opt_init(&d, &o, params), AX_OK);
  ck_assert_int_eq(ax_device_opt_from_host(&d), AX_OK);
  mt_expect(d.sum == path, "%s: the arena's gradients say path %d", what, (int)d.sum);

  AxReduceSpec r = {.comm = summed ? g_comm : MPI_COMM_NULL, .cc = &g_cc,
                    .algo = AX_ALLREDUCE_RING, .window = 2};
  unsigned long long down = tu_posing_copied(be, AX_COPY_D2H), up = tu_posing_copied(be, AX_COPY_H2D);
  double sumsq = 0;
  int rc = ax_device_opt_grads_to_host(&d, grads);
  if (rc == AX_OK) rc = ax_device_opt_reduce(&d, &r, grads, &sumsq);
  mt_expect(rc == AX_OK, "%s: the sum failed: %s", what, ax_error_message());
  down = tu_posing_copied(be, AX_COPY_D2H) - down;
  up = tu_posing_copied(be, AX_COPY_H2D) - up;
  int staged = path == AX_DEVICE_SUM_HOST;
  mt_expect(staged ? down == N * sizeof(float) && up == N * sizeof(float) : down + up == 0,
            "%s: %llu bytes down and %llu up for the sum of %d gradients", what, down, up, N);
  ax_device_opt_update(&d, params, grads, &HYPER);
  ck_assert_int_eq(ax_device_opt_to_host(&d), AX_OK);

  float *g = expected_grads(summed), *w = mt_copy(w0, N), *m = calloc(N, sizeof *m),
        *v = calloc(N, sizeof *v);
  ax_adamw_update(NULL, w, g, m, v, 0, N, &seg, 1, &HYPER);
  double want = 0;
  for (size_t i = 0; i < N; i++) want += (double)g[i] * g[i];
  /* fp32 sums of 3 or more ranks depend on the order the ring adds in */
  mt_expect(tu_max_rel(o.master, w, N, 1e-6, 1e-5) <= 1, "%s%s: weights differ from the host's "
            "update", what, summed ? "" : " without the sum");
  mt_expect(fabs(sumsq - want) <= 1e-5 * want, "%s: sum of squares %.9g, want %.9g", what,
            sumsq, want);
  if (summed && mt_size > 1) { /* the test would see a skipped sum */
    float *own = mt_inputs(N, mt_rank, 5), *w_own = mt_copy(w0, N);
    memset(m, 0, N * sizeof *m);
    memset(v, 0, N * sizeof *v);
    ax_adamw_update(NULL, w_own, own, m, v, 0, N, &seg, 1, &HYPER);
    mt_expect(tu_max_rel(o.master, w_own, N, 1e-6, 1e-5) > 1,
              "%s: the summed update equals this rank's own", what);
    free(own);
    free(w_own);
  }
  free(g), free(w), free(m), free(v), free(w0), free(mine);
  ax_device_opt_free(&d);
  ax_offload_free(&o);
  ax_free(be, params);
  ax_free(be, grads);
  ax_backend_destroy(be);
}

START_TEST(the_update_sees_the_sum_over_ranks) {
  const AxDeviceSum paths[] = {AX_DEVICE_SUM_HOST, AX_DEVICE_SUM_DEVICE};
  for (int p = 0; p < 2; p++)
    for (int summed = 1; summed >= 0; summed--) {
      mt_run_begin("the sum: path %d, summed %d", (int)paths[p], summed);
      check_sum(paths[p], summed);
      mt_run_end();
      mt_assert_all_ok("the device optimizer's sum");
    }
}
END_TEST

/* ------------------------------------------------------------------ whole runs */

#define COMMON                                                                                 \
  "--layers 4 --hidden 32 --heads 2 --seq 16 --vocab 128 --batch 8 --micro-batch 2 "         \
  "--shuffle 0 --seed 11 --val-steps 0 --lr 3e-3 --grad-clip 0.5 --bucket-size 3000 "         \
  "--coarsening 2 --threads 1 --quiet"

typedef struct {
  double loss[STEPS + 1];
  unsigned long long step_d2h; /* bytes the steps copied device to host */
} Run;

static void path_of(char *buf, size_t cap, const char *name) {
  snprintf(buf, cap, "%s/%s", g_dir, name);
}

/* Trains steps up to `last` of the grid P x D with `extra` options on the posing device
 * (resuming from `ckpt` when it is given), checkpointing every HALF steps into ckpt, and saves
 * the model as `name`.bin. */
static int train(const char *name, int P, int D, const char *extra, const char *ckpt,
                 int resume, int last, Run *run) {
  char args[1024], save[256], ck[256] = "";
  path_of(save, sizeof save, name);
  strncat(save, ".bin", sizeof save - strlen(save) - 1);
  if (ckpt) {
    char dir[200];
    path_of(dir, sizeof dir, ckpt);
    snprintf(ck, sizeof ck, " --checkpoint-dir %s --checkpoint-every %d%s", dir, HALF,
             resume ? " --resume" : "");
  }
  snprintf(args, sizeof args, COMMON " --g-inter %d --g-data %d --steps %d %s%s", P, D, last,
           extra, ck);
  AxTrainConfig cfg;
  AxTrainer *t = NULL;
  AxBackend *be = NULL;
  int rc = tu_train_config_try(&cfg, args), first = 1;
  if (rc == AX_OK) rc = ax_trainer_create_on(&t, &cfg, tu_posing_make_eager, &be);
  if (rc == AX_OK && resume) {
    rc = ax_trainer_resume(t, &first);
    first++;
  }
  run->step_d2h = 0;
  for (int s = first; s <= last && rc == AX_OK; s++) {
    AxStepRecord rec;
    unsigned long long d2h = tu_posing_copied(be, AX_COPY_D2H);
    rc = ax_trainer_step(t, s, &rec);
    run->step_d2h += tu_posing_copied(be, AX_COPY_D2H) - d2h;
    run->loss[s] = rec.loss;
    if (rc == AX_OK && ckpt && s % HALF == 0) rc = ax_trainer_checkpoint(t, s);
  }
  if (rc == AX_OK) rc = ax_trainer_save(t, save);
  mt_expect(rc == AX_OK, "%s (%s): %s", name, args, ax_error_message());
  ax_error_clear();
  ax_trainer_destroy(t);
  ax_train_config_free(&cfg);
  return rc;
}

/* The floats of a saved model (rank 0), after its 256-int header; *n gets how many. */
static float *read_model(const char *name, size_t *n) {
  char path[256];
  path_of(path, sizeof path, name);
  strncat(path, ".bin", sizeof path - strlen(path) - 1);
  FILE *f = fopen(path, "rb");
  ck_assert_msg(f != NULL, "cannot open %s", path);
  fseek(f, 0, SEEK_END);
  long bytes = ftell(f) - 256 * 4;
  fseek(f, 256 * 4, SEEK_SET);
  *n = (size_t)bytes / sizeof(float);
  float *x = mt_xmalloc((size_t)bytes);
  ck_assert_uint_eq(fread(x, sizeof *x, *n, f), *n);
  fclose(f);
  return x;
}

/* Rank 0: a's final weights against b's, within rtol (0: bit for bit). */
static void same_weights(const char *a, const char *b, double rtol) {
  if (mt_rank != 0) return;
  size_t na, nb;
  float *x = read_model(a, &na), *y = read_model(b, &nb);
  int same = na == nb && (rtol == 0 ? mt_first_difference(x, y, na) == na
                                    : tu_max_rel(x, y, na, rtol, rtol) <= 1);
  mt_expect(same, "%s: final weights differ from %s's (tolerance %g)", a, b, rtol);
  free(x);
  free(y);
}

static void same_losses(const char *name, const Run *a, const Run *ref, int first, double rtol) {
  for (int s = first; s <= STEPS; s++) {
    double d = fabs(a->loss[s] - ref->loss[s]);
    mt_expect(rtol == 0 ? a->loss[s] == ref->loss[s] : d <= rtol * fabs(ref->loss[s]),
              "%s: step %d loss %.9g, the reference's %.9g", name, s, a->loss[s], ref->loss[s]);
  }
}

/* One grid: the host optimizer's run, the device optimizer's on both paths, and their resumes. */
static void check_grid(int P, int D) {
  static const struct {
    const char *tag, *opt;
  } paths[] = {{"staged", "--optimizer device --cuda-aware-mpi 0"},
               /* the dense tied-embedding sum: Zen's sparse one runs on the host */
               {"devbuf", "--optimizer device --cuda-aware-mpi 1 --sparse-embedding-sync dense"}};
  char host[32], name[64], half[80], rest[80];
  snprintf(host, sizeof host, "host%dx%d", P, D);
  Run ref, run, resumed;
  mt_run_begin("%s", host);
  int rc = train(host, P, D, "--optimizer host", NULL, 0, STEPS, &ref);
  mt_run_end();
  if (rc != AX_OK) return;
  for (int p = 0; p < 2; p++) {
    snprintf(name, sizeof name, "%s%dx%d", paths[p].tag, P, D);
    snprintf(half, sizeof half, "%s-half", name);
    snprintf(rest, sizeof rest, "%s-rest", name);
    mt_run_begin("%s", name);
    rc = train(name, P, D, paths[p].opt, NULL, 0, STEPS, &run);
    mt_run_end();
    if (rc != AX_OK) continue;
    same_losses(name, &run, &ref, 1, 1e-5);
    same_weights(name, host, 1e-5);
    /* staged, on a rank with something to sum (data-parallel peers, or a tied wte): every
     * step downloads the gradients (the stage has more than 10000); in device memory (the
     * pipeline's messages too): only the losses come down, one float a token of the 8 x 16 a
     * step at most */
    int stage = mt_rank % P, sums = D > 1 || (P > 1 && (stage == 0 || stage == P - 1));
    unsigned long long most = STEPS * 8 * 16 * sizeof(float), least = STEPS * 10000 * 4;
    if (p == 0 && sums)
      mt_expect(run.step_d2h >= least, "%s: the steps copied only %llu bytes device to host",
                name, run.step_d2h);
    if (p == 1)
      mt_expect(run.step_d2h <= most, "%s: the steps copied %llu bytes device to host", name,
                run.step_d2h);
    mt_run_begin("%s, stopped and resumed", name);
    rc = train(half, P, D, paths[p].opt, half, 0, HALF, &resumed);
    if (rc == AX_OK) rc = train(rest, P, D, paths[p].opt, half, 1, STEPS, &resumed);
    mt_run_end();
    if (rc != AX_OK) continue;
    same_losses(rest, &resumed, &run, HALF + 1, 0);
    same_weights(rest, name, 0);
  }
}

START_TEST(every_grid_equals_the_host_optimizer) {
  for (int P = 1; P <= 2; P++) { /* 1x1; 1x2 and 2x1; 2x2 */
    int D = mt_size / P;
    if (mt_size % P || D > 2) continue;
    check_grid(P, D);
    mt_assert_all_ok("a grid's device optimizer against its host optimizer");
  }
}
END_TEST

static Suite *device_opt_suite(void) {
  Suite *s = suite_create("device_opt");
  TCase *tc = tu_tcase(s, "device_opt", 300);
  tcase_add_test(tc, the_update_sees_the_sum_over_ranks);
  tcase_add_test(tc, every_grid_equals_the_host_optimizer);
  return s;
}

int main(int argc, char **argv) {
  mt_init(&argc, &argv);
  ax_log_set_quiet(1);
  g_cc = mt_comm_config();
  MPI_Comm_dup(MPI_COMM_WORLD, &g_comm);
  if (!mt_shared_dir(g_dir, sizeof g_dir, "devopt")) return mt_finish(1);
  int rc = mt_run_watched(device_opt_suite(), RUN_TIMEOUT_S);
  mt_shared_dir_remove(g_dir);
  MPI_Comm_free(&g_comm);
  return mt_finish(rc);
}
