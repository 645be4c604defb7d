/* mpitestutil.c — see mpitestutil.h. */
#include "mpitestutil.h"

#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lsan_mpi.h" /* once per program: every mpitest links this file */
#include "mpi/mpi_util.h"
#include "testutil.h"
#include "src/core/rng.h"
#include "src/core/watchdog.h"

int mt_rank, mt_size;
static int g_local_ok = 1;
static char g_run[256] = "(between runs)";
static int g_run_no;

void mt_init(int *argc, char ***argv) {
  int provided;
  MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &mt_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &mt_size);
  ax_set_rank(mt_rank);
}

int mt_expect(int ok, const char *fmt, ...) {
  if (ok) return 1;
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  fprintf(stderr, "[rank %d of %d] FAILED: %s\n", mt_rank, mt_size, line);
  fflush(stderr);
  g_local_ok = 0;
  return 0;
}

void mt_assert_all_ok(const char *what) {
  int all_ok = 0;
  MPI_Allreduce(&g_local_ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  g_local_ok = 1;
  ck_assert_msg(all_ok, "%s failed on some rank of %d (details on stderr)", what, mt_size);
}

/* The watchdog's job-ending hook: say which run hung, then end every rank. */
static void end_job(int code) {
  fprintf(stderr, "[rank %d of %d] the run that did not finish: %s\n", mt_rank, mt_size, g_run);
  fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, code);
}

void mt_watchdog_start(double timeout_s) {
  AxProcId me, *all = calloc((size_t)mt_size, sizeof *all);
  ax_proc_self(&me);
  int rc = all ? AX_OK : AX_FAIL("out of memory");
  if (rc == AX_OK)
    MPI_Allgather(&me, sizeof me, MPI_BYTE, all, sizeof me, MPI_BYTE, MPI_COMM_WORLD);
  AxWatchdogConfig c = {.timeout_ms = (int)(timeout_s * 1e3), .rank = mt_rank, .size = mt_size,
                        .layout = ax_rank_layout_plain(mt_size), .peers = all, .signals = 0,
                        .end_job = end_job};
  if (rc == AX_OK) rc = ax_watchdog_start(&c);
  free(all);
  if (rc != AX_OK) { /* outside any test: no ck_assert here */
    fprintf(stderr, "[rank %d] cannot start the watchdog: %s\n", mt_rank, ax_error_message());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

void mt_watchdog_stop(void) { ax_watchdog_stop(); }

void mt_run_begin(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_run, sizeof g_run, fmt, ap);
  va_end(ap);
  ax_wd_phase(AX_WD_STEP, ++g_run_no);
}

void mt_run_end(void) {
  ax_wd_phase(AX_WD_IDLE, g_run_no);
  snprintf(g_run, sizeof g_run, "(between runs)");
}

void mt_sleep_us(long us) {
  if (us <= 0) return;
  struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
  nanosleep(&ts, NULL);
}

int mt_run_watched(Suite *suite, double timeout_s) {
  mt_watchdog_start(timeout_s);
  int failed = tu_run_nofork(suite);
  mt_watchdog_stop();
  return failed;
}

AxCommConfig mt_comm_config(void) {
  AxCommConfig cc = ax_comm_config_default();
  cc.polite = ax_mpi_auto_polite(MPI_COMM_WORLD);
  return cc;
}

int mt_finish(int rc) {
#ifdef AX_ASAN
  __lsan_do_leak_check();
#endif
  MPI_Finalize();
  return rc;
}

/* ------------------------------------------------------------------ data */

void *mt_xmalloc(size_t bytes) {
  void *p = malloc(bytes ? bytes : 1);
  ck_assert_ptr_nonnull(p);
  return p;
}

float *mt_copy(const float *x, size_t n) {
  float *y = mt_xmalloc(n * sizeof *y);
  if (n) memcpy(y, x, n * sizeof *y);
  return y;
}

float *mt_inputs(size_t n, int rank, uint64_t salt) {
  float *x = mt_xmalloc(n * sizeof *x);
  AxRng r;
  ax_rng_seed(&r, 1000003u * salt + 7919u * (uint64_t)rank + 17u);
  for (size_t i = 0; i < n; i++)
    x[i] = (float)(1 + rank) * (2.0f * ax_rng_float(&r) - 1.0f) + 1e-3f;
  return x;
}

size_t mt_first_difference(const float *a, const float *b, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (memcmp(&a[i], &b[i], sizeof *a) != 0) return i;
  return n;
}

static uint64_t fnv1a(const void *p, size_t bytes) {
  const unsigned char *b = p;
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i < bytes; i++) h = (h ^ b[i]) * 1099511628211ULL;
  return h;
}

int mt_replicas_agree(const float *x, size_t n) {
  uint64_t h = fnv1a(x, n * sizeof *x), lo = 0, hi = 0;
  MPI_Allreduce(&h, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&h, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  return lo == hi;
}

int mt_shared_dir(char *dir, size_t cap, const char *tag) {
  if (mt_rank == 0) {
    snprintf(dir, cap, "/tmp/axonn-mt-%s-XXXXXX", tag);
    if (!mkdtemp(dir)) dir[0] = 0;
  }
  MPI_Bcast(dir, (int)cap, MPI_CHAR, 0, MPI_COMM_WORLD);
  return dir[0] != 0;
}

void mt_shared_dir_remove(const char *dir) {
  MPI_Barrier(MPI_COMM_WORLD);
  if (mt_rank != 0) return;
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}
