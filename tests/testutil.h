/* testutil.h — helpers shared by the Check suites: a CPU backend, seeded random tensors,
 * temporary files, and running a suite with a timeout. */
#ifndef AX_TESTUTIL_H
#define AX_TESTUTIL_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>

#include "src/backend/backend.h"
#include "src/train/train_config.h"

/* Test scratch memory, freed after each test by the fixture tu_tcase installs (so leak
 * checkers report only the library's own leaks). */
void *tu_alloc(size_t bytes);
void tu_free_all(void);
/* A CPU backend with `threads` threads (unbound); aborts the test on failure. */
AxBackend *tu_backend(int threads);
/* n floats uniform in [-scale, scale], from a fixed seed (tu_alloc memory). */
float *tu_random(size_t n, float scale, uint64_t seed);
float *tu_zeros(size_t n);
/* A fresh path under a per-process temporary directory (removed by tu_cleanup). */
const char *tu_path(const char *name);
void tu_cleanup(void);
/* Max |a-b| / (atol + rtol*|b|) over n elements: <= 1 means within tolerance. */
double tu_max_rel(const float *a, const float *b, size_t n, double atol, double rtol);
/* cfg from train's options given as one string ("--layers 2 --batch 4 ..."), parsed and
 * checked as `axonn train` does: AX_OK, or AX_ERR with the error recorded. The second fails the
 * test on an error. Free cfg with ax_train_config_free. */
int tu_train_config_try(AxTrainConfig *cfg, const char *args);
void tu_train_config(AxTrainConfig *cfg, const char *args);
/* Asserts rc is AX_ERR with needle in the recorded message, then clears it. */
void tu_expect_error(int rc, const char *needle);
/* Runs the suite (no fork, so failures in C code are reported with context); returns the
 * process exit status. */
int tu_run(Suite *s);
/* Runs the suite in this process (CK_NOFORK), as multi-rank MPI suites must: the caller does
 * MPI_Init before and MPI_Finalize after. Returns the process exit status. */
int tu_run_nofork(Suite *s);
/* Adds a test case with a timeout in seconds. */
TCase *tu_tcase(Suite *s, const char *name, double timeout);

#endif
