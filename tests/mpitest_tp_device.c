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
 * ordinary memory and would give the same losses) fails on the counters. */
#include <check.h>
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

enum { RUN_TIMEOUT_S = 120, STEPS = 2 };

#define COMMON                                                                                 \
  "--layers 2 --hidden 32 --heads 2 --seq 16 --vocab 128 --batch 8 --micro-batch 2 "         \
  "--shuffle 0 --seed 7 --val-steps 0 --lr 3e-3 --threads 1 --quiet"

static char g_dir[128]; /* rank 0's temporary directory, the same name on every rank */

typedef enum { PATH_CPU = 0, PATH_STAGED, PATH_DEVBUF, N_PATHS } Path;
static const char *const PATH_NAME[N_PATHS] = {"cpu", "staged", "devbuf"};
static const char *const PATH_OPTS[N_PATHS] = {"", "--cuda-aware-mpi 0", "--cuda-aware-mpi 1"};

typedef struct {
  double loss[STEPS + 1];
  unsigned long long staged_down, staged_up; /* the TP collectives' staging, over the steps */
  unsigned long long step_d2h;               /* what the posing device copied down in steps */
} Run;

static void saved_path(char *buf, size_t cap, const char *grid, Path p) {
  snprintf(buf, cap, "%s/%s-%s.bin", g_dir, grid, PATH_NAME[p]);
}

/* Trains STEPS steps of `grid` (its options) on path p and saves the model. */
static int train(const char *grid, const char *opts, Path p, Run *run) {
  char args[1024], save[256];
  saved_path(save, sizeof save, grid, p);
  snprintf(args, sizeof args, COMMON " --steps %d %s %s", STEPS, opts, PATH_OPTS[p]);
  AxTrainConfig cfg;
  AxTrainer *t = NULL;
  AxBackend *be = NULL;
  memset(run, 0, sizeof *run);
  int rc = tu_train_config_try(&cfg, args);
  if (rc == AX_OK)
    rc = p == PATH_CPU ? ax_trainer_create(&t, &cfg)
                       : ax_trainer_create_on(&t, &cfg, tu_posing_make_eager, &be);
  for (int s = 1; s <= STEPS && rc == AX_OK; s++) {
    AxStepRecord rec;
    unsigned long long d2h = be ? tu_posing_copied(be, AX_COPY_D2H) : 0;
    rc = ax_trainer_step(t, s, &rec);
    if (be) run->step_d2h += tu_posing_copied(be, AX_COPY_D2H) - d2h;
    run->loss[s] = rec.loss;
  }
  if (rc == AX_OK) {
    run->staged_down = ax_trainer_step_tp(t)->staged_down;
    run->staged_up = ax_trainer_step_tp(t)->staged_up;
    rc = ax_trainer_save(t, save);
  }
  mt_expect(rc == AX_OK, "%s on %s (%s): %s", grid, PATH_NAME[p], args, ax_error_message());
  ax_error_clear();
  ax_trainer_destroy(t);
  ax_train_config_free(&cfg);
  return rc;
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

static void same_losses(const char *grid, Path p, const Run *a, const Run *ref) {
  for (int s = 1; s <= STEPS; s++)
    mt_expect(a->loss[s] == ref->loss[s], "%s: %s's step %d loss %.9g, the CPU path's %.9g",
              grid, PATH_NAME[p], s, a->loss[s], ref->loss[s]);
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

static Suite *tp_device_suite(void) {
  Suite *s = suite_create("tp_device");
  TCase *tc = tu_tcase(s, "tp_device", 600);
  tcase_add_test(tc, every_grid_equals_the_cpu_path);
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
