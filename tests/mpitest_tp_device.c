/* mpitest_tp_device.c — tensor parallelism (--gx/--gy/--gz) through the device path, on the CPU
 * backend posing as a device (tests/posing_device.h: device memory that is not the host's,
 * every copy's kind checked; its tensor-parallel kernels are the CPU backend's, over its own
 * memory). On whatever number of ranks it runs on (make check-mpi: 2, 4 and 8), the grids of
 * tests/mpi_tensor_parallel.sh that fill them — every Gx x Gy x Gz with Gx, Gy, Gz in {1, 2}
 * alone, those of 2 ranks with --g-data 2, 1x1x2 and 2x1x2 with --g-inter 2 — train two steps
 * of a tiny model three ways:
 *  - on the CPU backend (today's path: the collectives read the host buffers in place);
 *  - on the posing device with --cuda-aware-mpi 0: every collective staged through pinned host
 *    buffers (mpi/coll/tp_mpi.h);
 *  - on the posing device with --cuda-aware-mpi 1: the all-reduces hand the device buffers to
 *    MPI's all-reduce, gathers and reduce-scatters staged (on the grids alone, 2 and 8 ranks:
 *    the pipeline and the data-parallel sum change nothing in the collectives, and the run is
 *    kept cheap).
 * Both device runs give the CPU run's losses at every step and its final weights bit for bit
 * (fp32; every group has two ranks, where any summation order gives the same bits). The copy
 * counters show the device path ran: the staged run's collectives copied bytes down and up
 * (AxTpStats.staged_down/up) and the posing device counted at least those bytes device to
 * host; the CUDA-aware run staged less (its all-reduces went direct); the CPU run staged
 * nothing. A stage that skipped the staging (MPI reading the "device" memory, which here is
 * ordinary memory and would give the same losses) fails on the counters.
 *
 * Mixed precision (2 and 4 ranks): in bf16 and fp16 (--precision: the CPU backend's 16-bit
 * storage, src/backend/cpu_storage16.h, under the posing device too), the grids 1x1x2, 2x1x1,
 * 1x2x1 (2 ranks) and 2x1x1 with --g-data 2 (4 ranks) train on the CPU path and the staged
 * device path over 3 steps: the same losses and final weights bit for bit, the staging
 * counted as above, 16-bit payloads (fewer bytes sent than in fp32, exactly half over Z's
 * gathers and reduce-scatters), and losses unlike the fp32 run's of the same grid (more than
 * 1e-6 relative apart at some step: the precision applied; measured 9e-6 to 8e-5). fp16 with
 * its dynamic loss scaling on 1x1x2: a gradient overflow forced at step 2
 * (--debug-overflow-step) skips that step on every rank of the grid (its gradient norm NaN) on
 * both paths, and the next step's loss differs from the run without it. The losses against the
 * single-rank run of the same precision are tests/mpi_tp_precision.sh's. */
#include <check.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpitestutil.h"
#include "posing_device.h"
#include "src/core/error.h"
#include "src/core/log.h"
#include "src/train/trainer.h"
#include "testutil.h"

enum { RUN_TIMEOUT_S = 120, STEPS = 2, MAX_STEPS = 3 };

#define COMMON                                                                                 \
  "--layers 2 --hidden 32 --heads 2 --seq 16 --vocab 128 --batch 8 --micro-batch 2 "         \
  "--shuffle 0 --seed 7 --val-steps 0 --lr 3e-3 --threads 1 --quiet"

static char g_dir[128]; /* rank 0's temporary directory, the same name on every rank */

typedef enum { PATH_CPU = 0, PATH_STAGED, PATH_DEVBUF, N_PATHS } Path;
static const char *const PATH_NAME[N_PATHS] = {"cpu", "staged", "devbuf"};
static const char *const PATH_OPTS[N_PATHS] = {"", "--cuda-aware-mpi 0", "--cuda-aware-mpi 1"};

typedef struct {
  double loss[MAX_STEPS + 1], grad_norm[MAX_STEPS + 1];
  unsigned long long staged_down, staged_up; /* the TP collectives' staging, over the steps */
  unsigned long long step_d2h;               /* what the posing device copied down in steps */
  unsigned long long sent[3][AX_TP_OPS];     /* the TP collectives' bytes sent, by group and op */
} Run;

static void saved_path(char *buf, size_t cap, const char *grid, Path p) {
  snprintf(buf, cap, "%s/%s-%s.bin", g_dir, grid, PATH_NAME[p]);
}

/* Trains `steps` steps of `grid` (its options) on path p and saves the model. */
static int train_steps(const char *grid, const char *opts, Path p, int steps, Run *run) {
  char args[1024], save[256];
  saved_path(save, sizeof save, grid, p);
  snprintf(args, sizeof args, COMMON " --steps %d %s %s", steps, opts, PATH_OPTS[p]);
  AxTrainConfig cfg;
  AxTrainer *t = NULL;
  AxBackend *be = NULL;
  memset(run, 0, sizeof *run);
  int rc = tu_train_config_try(&cfg, args);
  if (rc == AX_OK)
    rc = p == PATH_CPU ? ax_trainer_create(&t, &cfg)
                       : ax_trainer_create_on(&t, &cfg, tu_posing_make_eager, &be);
  for (int s = 1; s <= steps && rc == AX_OK; s++) {
    AxStepRecord rec;
    unsigned long long d2h = be ? tu_posing_copied(be, AX_COPY_D2H) : 0;
    rc = ax_trainer_step(t, s, &rec);
    if (be) run->step_d2h += tu_posing_copied(be, AX_COPY_D2H) - d2h;
    run->loss[s] = rec.loss;
    run->grad_norm[s] = rec.grad_norm;
  }
  if (rc == AX_OK) {
    run->staged_down = ax_trainer_step_tp(t)->staged_down;
    run->staged_up = ax_trainer_step_tp(t)->staged_up;
    for (int g = 0; g < 3; g++)
      for (int op = 0; op < AX_TP_OPS; op++)
        run->sent[g][op] = ax_trainer_step_tp(t)->bytes[g][op].sent;
    rc = ax_trainer_save(t, save);
  }
  mt_expect(rc == AX_OK, "%s on %s (%s): %s", grid, PATH_NAME[p], args, ax_error_message());
  ax_error_clear();
  ax_trainer_destroy(t);
  ax_train_config_free(&cfg);
  return rc;
}

static int train(const char *grid, const char *opts, Path p, Run *run) {
  return train_steps(grid, opts, p, STEPS, run);
}

/* Rank 0: the two saved models are the same bytes. */
static void same_model(const char *grid, Path a, Path b) {
  if (mt_rank != 0) return;
  char pa[256], pb[256];
  saved_path(pa, sizeof pa, grid, a);
  saved_path(pb, sizeof pb, grid, b);
  FILE *fa = fopen(pa, "rb"), *fb = fopen(pb, "rb");
  int same = fa && fb, ca = 0, cb = 0;
  while (same && (ca = getc(fa)) != EOF) same = ca == (cb = getc(fb));
  same = same && getc(fb) == EOF;
  mt_expect(same, "%s: %s's final weights differ from %s's", grid, PATH_NAME[a], PATH_NAME[b]);
  if (fa) fclose(fa);
  if (fb) fclose(fb);
}

static void same_losses_over(const char *grid, Path p, const Run *a, const Run *ref, int steps) {
  for (int s = 1; s <= steps; s++)
    mt_expect(a->loss[s] == ref->loss[s], "%s: %s's step %d loss %.9g, the CPU path's %.9g",
              grid, PATH_NAME[p], s, a->loss[s], ref->loss[s]);
}

static void same_losses(const char *grid, Path p, const Run *a, const Run *ref) {
  same_losses_over(grid, p, a, ref, STEPS);
}

/* The counters of the paths that ran (this rank's). */
static void check_copies(const char *grid, const Run run[N_PATHS], int paths) {
  const Run *cpu = &run[PATH_CPU], *st = &run[PATH_STAGED], *dev = &run[PATH_DEVBUF];
  mt_expect(cpu->staged_down == 0 && cpu->staged_up == 0,
            "%s: the CPU path staged %llu bytes down, %llu up", grid, cpu->staged_down,
            cpu->staged_up);
  mt_expect(st->staged_down > 0 && st->staged_up > 0,
            "%s: staged path: the collectives staged %llu bytes down, %llu up", grid,
            st->staged_down, st->staged_up);
  mt_expect(st->step_d2h >= st->staged_down,
            "%s: staged path: the device copied %llu bytes down, the collectives staged %llu",
            grid, st->step_d2h, st->staged_down);
  if (paths > PATH_DEVBUF)
    mt_expect(dev->staged_down < st->staged_down,
              "%s: CUDA-aware path staged %llu bytes down, no fewer than the staged path's %llu",
              grid, dev->staged_down, st->staged_down);
}

/* One grid: P stages x (Gx x Gy x Gz) x D rows, on the first `paths` paths. */
static void check_grid(int P, int gx, int gy, int gz, int D, int paths) {
  char grid[64], opts[200];
  snprintf(grid, sizeof grid, "%dx%dx%dx%dx%d", P, gx, gy, gz, D);
  snprintf(opts, sizeof opts, "--g-inter %d --gx %d --gy %d --gz %d --g-data %d", P, gx, gy, gz,
           D);
  Run run[N_PATHS];
  for (int p = 0; p < paths; p++) {
    mt_run_begin("%s on %s", grid, PATH_NAME[p]);
    int rc = train(grid, opts, (Path)p, &run[p]);
    mt_run_end();
    if (rc != AX_OK) return;
  }
  for (int p = PATH_STAGED; p < paths; p++) {
    same_losses(grid, (Path)p, &run[p], &run[PATH_CPU]);
    same_model(grid, (Path)p, PATH_CPU);
  }
  check_copies(grid, run, paths);
}

/* A grid of mpi_tensor_parallel.sh: Gx, Gy, Gz in {1, 2}; --g-data 2 with 2 tensor-parallel
 * ranks; --g-inter 2 with Gy = 1 and Gz = 2. */
static int suite_grid(int P, int D, int gx, int gy, int gz) {
  int tp = gx * gy * gz;
  if (P * D * tp != mt_size || tp == 1) return 0;
  if (D == 2) return P == 1 && tp == 2;
  if (P == 2) return gy == 1 && gz == 2;
  return 1;
}

START_TEST(every_grid_equals_the_cpu_path) {
  int grids = 0;
  for (int P = 1; P <= 2; P++)
    for (int D = 1; D <= 2; D++)
      for (int g = 1; g < 8; g++) {
        int gx = 1 + (g & 1), gy = 1 + (g >> 1 & 1), gz = 1 + (g >> 2 & 1);
        if (!suite_grid(P, D, gx, gy, gz)) continue;
        int alone = P == 1 && D == 1, paths = alone && mt_size != 4 ? N_PATHS : PATH_DEVBUF;
        check_grid(P, gx, gy, gz, D, paths);
        mt_assert_all_ok("a tensor-parallel grid's device path against its CPU path");
        grids++;
      }
  if (mt_rank == 0 && grids == 0)
    printf("mpitest_tp_device: no tensor-parallel grid of %d rank(s) to check (skipped)\n",
           mt_size);
}
END_TEST

/* ------------------------------------------------------------------ mixed precision */

/* The largest relative difference of a's losses from ref's over the steps. */
static double most_apart(const Run *a, const Run *ref, int steps) {
  double most = 0;
  for (int s = 1; s <= steps; s++) {
    double d = fabs(a->loss[s] - ref->loss[s]) / fabs(ref->loss[s]);
    if (d > most) most = d;
  }
  return most;
}

/* The 16-bit payloads on the wire: fewer bytes in all than fp32's, and over Z, where every
 * gather and reduce-scatter carries weights or their gradients, exactly half. */
static void check_wire(const char *grid, int gz, const Run *r16, const Run *r32) {
  unsigned long long all16 = 0, all32 = 0;
  for (int g = 0; g < 3; g++)
    for (int op = 0; op < AX_TP_OPS; op++) {
      all16 += r16->sent[g][op];
      all32 += r32->sent[g][op];
    }
  mt_expect(all16 < all32, "%s: the collectives sent %llu bytes, fp32 %llu", grid, all16, all32);
  for (int op = AX_TP_OP_ALLGATHER; op <= AX_TP_OP_REDUCE_SCATTER && gz > 1; op++)
    mt_expect(2 * r16->sent[AX_TP_Z][op] == r32->sent[AX_TP_Z][op] && r16->sent[AX_TP_Z][op],
              "%s: %s over Z sent %llu bytes, fp32 %llu (not half)", grid, ax_tp_op_name(op),
              r16->sent[AX_TP_Z][op], r32->sent[AX_TP_Z][op]);
}

/* One grid of ranks Gx x Gy x Gz x D in `prec`: the staged device path equals the CPU path bit
 * for bit, with its staging counted, and the losses are not the fp32 run's. */
static void check_precision_grid(const char *prec, int gx, int gy, int gz, int D) {
  char grid[64], opts[256], fp32_opts[200];
  snprintf(grid, sizeof grid, "%s-%dx%dx%dx%d", prec, gx, gy, gz, D);
  snprintf(fp32_opts, sizeof fp32_opts, "--gx %d --gy %d --gz %d --g-data %d", gx, gy, gz, D);
  snprintf(opts, sizeof opts, "%s --precision %s", fp32_opts, prec);
  Run run[N_PATHS], fp32;
  for (int p = 0; p <= PATH_STAGED; p++) {
    mt_run_begin("%s on %s", grid, PATH_NAME[p]);
    int rc = train_steps(grid, opts, (Path)p, MAX_STEPS, &run[p]);
    mt_run_end();
    if (rc != AX_OK) return;
  }
  mt_run_begin("%s in fp32", grid);
  int rc = train_steps("fp32", fp32_opts, PATH_CPU, MAX_STEPS, &fp32);
  mt_run_end();
  if (rc != AX_OK) return;
  same_losses_over(grid, PATH_STAGED, &run[PATH_STAGED], &run[PATH_CPU], MAX_STEPS);
  same_model(grid, PATH_STAGED, PATH_CPU);
  check_copies(grid, run, PATH_DEVBUF);
  check_wire(grid, gz, &run[PATH_CPU], &fp32);
  double apart = most_apart(&run[PATH_CPU], &fp32, MAX_STEPS);
  mt_expect(apart > 1e-6, "%s: losses at most %.3g relative from the fp32 run's (the precision "
            "did not apply?)", grid, apart);
  if (mt_rank == 0)
    printf("mpitest_tp_device: %s: the staged device path's losses are the CPU path's bit for "
           "bit; the fp32 run's at most %.3g relative apart\n", grid, apart);
}

START_TEST(mixed_precision_grids_equal_their_cpu_path) {
  static const char *const PRECS[] = {"bf16", "fp16"};
  static const int GRIDS[][4] = {{1, 1, 2, 1}, {2, 1, 1, 1}, {1, 2, 1, 1}, {2, 1, 1, 2}};
  int grids = 0;
  for (int k = 0; k < 2; k++)
    for (size_t g = 0; g < sizeof GRIDS / sizeof GRIDS[0]; g++) {
      const int *d = GRIDS[g];
      if (d[0] * d[1] * d[2] * d[3] != mt_size) continue;
      check_precision_grid(PRECS[k], d[0], d[1], d[2], d[3]);
      mt_assert_all_ok("a tensor-parallel grid in bf16/fp16 against its CPU path");
      grids++;
    }
  if (mt_rank == 0 && grids == 0)
    printf("mpitest_tp_device: no mixed-precision grid of %d rank(s) to check (skipped)\n",
           mt_size);
}
END_TEST

/* fp16 on 1x1x2: the overflow forced at step 2 skips it on every rank, on both paths. */
START_TEST(fp16_overflow_skips_the_step_on_every_rank) {
  if (mt_size != 2) return;
  const char *opts = "--gz 2 --precision fp16", *forced = "--gz 2 --precision fp16 "
                                                           "--debug-overflow-step 2";
  Run plain, ov[N_PATHS];
  mt_run_begin("fp16 1x1x2 without an overflow");
  int rc = train_steps("fp16-plain", opts, PATH_CPU, MAX_STEPS, &plain);
  mt_run_end();
  for (int p = 0; p <= PATH_STAGED && rc == AX_OK; p++) {
    mt_run_begin("fp16 1x1x2 with an overflow at step 2 on %s", PATH_NAME[p]);
    rc = train_steps("fp16-overflow", forced, (Path)p, MAX_STEPS, &ov[p]);
    mt_run_end();
  }
  if (rc == AX_OK) {
    for (int p = 0; p <= PATH_STAGED; p++) {
      mt_expect(isnan(ov[p].grad_norm[2]) && !isnan(ov[p].grad_norm[1]) &&
                    !isnan(ov[p].grad_norm[3]),
                "%s: gradient norms %g, %g, %g: step 2 alone should be skipped", PATH_NAME[p],
                ov[p].grad_norm[1], ov[p].grad_norm[2], ov[p].grad_norm[3]);
      mt_expect(ov[p].loss[3] != plain.loss[3] && ov[p].loss[2] == plain.loss[2],
                "%s: step 2 and 3 losses %.9g %.9g, without the overflow %.9g %.9g: the skip "
                "should change step 3's only", PATH_NAME[p], ov[p].loss[2], ov[p].loss[3],
                plain.loss[2], plain.loss[3]);
    }
    same_losses_over("fp16 overflow", PATH_STAGED, &ov[PATH_STAGED], &ov[PATH_CPU], MAX_STEPS);
  }
  mt_assert_all_ok("fp16's forced overflow on a tensor-parallel grid");
}
END_TEST

static Suite *tp_device_suite(void) {
  Suite *s = suite_create("tp_device");
  TCase *tc = tu_tcase(s, "tp_device", 600);
  tcase_add_test(tc, every_grid_equals_the_cpu_path);
  if (mt_size <= 4) { /* cheap: no 8-rank case */
    tcase_add_test(tc, mixed_precision_grids_equal_their_cpu_path);
    tcase_add_test(tc, fp16_overflow_skips_the_step_on_every_rank);
  }
  return s;
}

int main(int argc, char **argv) {
  mt_init(&argc, &argv);
  ax_log_set_quiet(1);
  if (!mt_shared_dir(g_dir, sizeof g_dir, "tpdev")) return mt_finish(1);
  int rc = mt_run_watched(tp_device_suite(), RUN_TIMEOUT_S);
  mt_shared_dir_remove(g_dir);
  return mt_finish(rc);
}
