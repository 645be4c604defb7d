/* testutil.c — see testutil.h. */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/core/error.h"
#include "src/core/rng.h"

enum { TU_MAX_ALLOCS = 4096 };
static void *g_allocs[TU_MAX_ALLOCS];
static int g_n_allocs;

void *tu_alloc(size_t bytes) {
  void *p = calloc(1, bytes ? bytes : 1);
  if (!p || g_n_allocs == TU_MAX_ALLOCS) {
    fprintf(stderr, "tu_alloc: out of memory or too many allocations\n");
    abort();
  }
  g_allocs[g_n_allocs++] = p;
  return p;
}

void tu_free_all(void) {
  while (g_n_allocs > 0) free(g_allocs[--g_n_allocs]);
}

AxBackend *tu_backend(int threads) {
  AxBackendConfig bc = {.device = "cpu", .dtype = AX_DTYPE_F32, .threads = threads,
                        .bind = 0, .local_size = 1};
  AxBackend *be = ax_backend_create(&bc);
  ck_assert_msg(be != NULL, "backend: %s", ax_error_message());
  return be;
}

float *tu_random(size_t n, float scale, uint64_t seed) {
  float *x = tu_alloc(n * sizeof *x);
  AxRng r;
  ax_rng_seed(&r, seed);
  for (size_t i = 0; i < n; i++) x[i] = scale * (2.0f * ax_rng_float(&r) - 1.0f);
  return x;
}

float *tu_zeros(size_t n) {
  return tu_alloc(n * sizeof(float));
}

static char g_dir[256];

const char *tu_path(const char *name) {
  char path[512];
  if (!g_dir[0]) {
    snprintf(g_dir, sizeof g_dir, "/tmp/axonn-test-XXXXXX");
    if (!mkdtemp(g_dir)) {
      perror("mkdtemp");
      abort();
    }
  }
  snprintf(path, sizeof path, "%s/%s", g_dir, name);
  return strcpy(tu_alloc(strlen(path) + 1), path);
}

void tu_cleanup(void) {
  if (!g_dir[0]) return;
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
  if (system(cmd) != 0) fprintf(stderr, "warning: could not remove %s\n", g_dir);
  g_dir[0] = 0;
}

double tu_max_rel(const float *a, const float *b, size_t n, double atol, double rtol) {
  double worst = 0;
  for (size_t i = 0; i < n; i++) {
    double d = fabs((double)a[i] - (double)b[i]) / (atol + rtol * fabs((double)b[i]));
    if (d > worst || d != d) worst = d != d ? 1e30 : d;
  }
  return worst;
}

int tu_train_config_try(AxTrainConfig *cfg, const char *args) {
  char buf[2048];
  snprintf(buf, sizeof buf, "train %s", args);
  char *argv[64];
  int argc = 0;
  for (char *tok = strtok(buf, " "); tok && argc < 63; tok = strtok(NULL, " ")) argv[argc++] = tok;
  AxOptState st;
  int rc = ax_train_config_parse(cfg, argc, argv, &st);
  return rc == AX_OK ? ax_train_config_check(cfg, &st) : rc;
}

void tu_train_config(AxTrainConfig *cfg, const char *args) {
  ck_assert_msg(tu_train_config_try(cfg, args) == AX_OK, "%s", ax_error_message());
}

void tu_expect_error(int rc, const char *needle) {
  ck_assert_int_eq(rc, AX_ERR);
  ck_assert_msg(strstr(ax_error_text(), needle), "'%s' lacks '%s'", ax_error_text(), needle);
  ax_error_clear();
}

int tu_run(Suite *s) {
  tu_path(""); /* create the directory in the parent so forked tests share it */
  SRunner *sr = srunner_create(s);
  srunner_set_fork_status(sr, CK_FORK);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  tu_cleanup();
  return failed == 0 ? 0 : 1;
}

TCase *tu_tcase(Suite *s, const char *name, double timeout) {
  TCase *tc = tcase_create(name);
  tcase_set_timeout(tc, timeout);
  tcase_add_checked_fixture(tc, NULL, tu_free_all);
  suite_add_tcase(s, tc);
  return tc;
}

int tu_run_nofork(Suite *s) {
  SRunner *sr = srunner_create(s);
  srunner_set_fork_status(sr, CK_NOFORK);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  tu_cleanup();
  return failed == 0 ? 0 : 1;
}
