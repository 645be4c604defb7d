/* test_cuda_aware.c — CUDA-aware MPI detection (mpi/cuda_aware.c) without a GPU: the option
 * wins, each MPI's environment setting is read (yes and no spellings, first set wins, unclear
 * values ignored), the reason fits its buffer, and after MPI_Init the library's own query,
 * where it has one, is what decides; and the p2p engine's choice of device buffers from it.
 * (The device-buffer path itself is tested by tests/mpitest_p2p.c, mpitest_scheduler.c and
 * mpi_device_buffers.sh.) */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/cuda_aware.h"
#include "testutil.h"

#include "lsan_mpi.h"

static const char *const VARS[] = {"MPICH_GPU_SUPPORT_ENABLED", "MPIR_CVAR_ENABLE_GPU",
                                   "OMPI_MCA_pml_pami_enable_cuda", "OMPI_MCA_opal_cuda_support",
                                   "MV2_USE_CUDA"};

static void clear_env(void) {
  for (size_t i = 0; i < sizeof VARS / sizeof *VARS; i++) unsetenv(VARS[i]);
}

/* ax_cuda_aware_mpi in auto mode with one variable set; checks the answer and the reason. */
static void expect_env(const char *var, const char *value, int want) {
  char why[200];
  clear_env();
  setenv(var, value, 1);
  int got = ax_cuda_aware_mpi(0, why, sizeof why);
  ck_assert_msg(got == want, "%s=%s: got %d (%s)", var, value, got, why);
  ck_assert_msg(strstr(why, var) != NULL, "reason '%s' does not name %s", why, var);
  ck_assert_msg(strncmp(why, want ? "yes" : "no", want ? 3 : 2) == 0, "reason '%s'", why);
}

START_TEST(option_wins) {
  char why[200];
  clear_env();
  setenv("MPICH_GPU_SUPPORT_ENABLED", "1", 1);
  ck_assert_int_eq(ax_cuda_aware_mpi(1, why, sizeof why), 0);
  ck_assert_ptr_nonnull(strstr(why, "--cuda-aware-mpi 0"));
  setenv("MPICH_GPU_SUPPORT_ENABLED", "0", 1);
  ck_assert_int_eq(ax_cuda_aware_mpi(2, why, sizeof why), 1);
  ck_assert_ptr_nonnull(strstr(why, "--cuda-aware-mpi 1"));
}
END_TEST

START_TEST(nothing_set_means_staged) {
  char why[200];
  clear_env();
  ck_assert_int_eq(ax_cuda_aware_mpi(0, why, sizeof why), 0);
  ck_assert_msg(strstr(why, "not detected") != NULL, "%s", why);
}
END_TEST

START_TEST(each_mpi_setting) {
  expect_env("MPICH_GPU_SUPPORT_ENABLED", "1", 1); /* Cray MPICH */
  expect_env("MPICH_GPU_SUPPORT_ENABLED", "0", 0);
  expect_env("MPIR_CVAR_ENABLE_GPU", "1", 1); /* MPICH */
  expect_env("MPIR_CVAR_ENABLE_GPU", "0", 0);
  expect_env("OMPI_MCA_pml_pami_enable_cuda", "1", 1); /* Spectrum MPI -gpu */
  expect_env("OMPI_MCA_opal_cuda_support", "true", 1); /* Open MPI */
  expect_env("OMPI_MCA_opal_cuda_support", "FALSE", 0);
  expect_env("MV2_USE_CUDA", "yes", 1); /* MVAPICH2 */
  expect_env("MV2_USE_CUDA", "off", 0);
}
END_TEST

START_TEST(first_setting_wins_and_unclear_ignored) {
  char why[200];
  clear_env();
  setenv("MPICH_GPU_SUPPORT_ENABLED", "0", 1);
  setenv("OMPI_MCA_opal_cuda_support", "1", 1);
  ck_assert_int_eq(ax_cuda_aware_mpi(0, why, sizeof why), 0);
  ck_assert_ptr_nonnull(strstr(why, "MPICH_GPU_SUPPORT_ENABLED"));
  setenv("MPICH_GPU_SUPPORT_ENABLED", "maybe", 1); /* not a yes or no: skipped */
  ck_assert_int_eq(ax_cuda_aware_mpi(0, why, sizeof why), 1);
  ck_assert_ptr_nonnull(strstr(why, "OMPI_MCA_opal_cuda_support"));
}
END_TEST

START_TEST(reason_fits_its_buffer) {
  char small[12];
  memset(small, 'x', sizeof small);
  clear_env();
  ax_cuda_aware_mpi(0, small, sizeof small);
  ck_assert_uint_eq(strlen(small), sizeof small - 1);
  ck_assert_int_eq(ax_cuda_aware_mpi(0, NULL, 0), 0);
  ck_assert_int_eq(ax_cuda_aware_mpi(2, NULL, 0), 1);
}
END_TEST

/* After MPI_Init an MPI with a CUDA query answers for itself (this one's MPICH has
 * MPIX_GPU_query_support); the answer is 0 or 1 with a reason either way. */
START_TEST(library_query_after_init) {
  char why[200];
  clear_env();
  setenv("MPICH_GPU_SUPPORT_ENABLED", "1", 1);
  MPI_Init(NULL, NULL);
  int got = ax_cuda_aware_mpi(0, why, sizeof why);
  ck_assert(got == 0 || got == 1);
  ck_assert_uint_gt(strlen(why), 0);
#if defined(MPIX_GPU_SUPPORT_CUDA) && !defined(OPEN_MPI)
  ck_assert_msg(strstr(why, "MPIX_GPU_query_support") != NULL, "%s", why);
#endif
  /* no MPI_Finalize: it unloads MPICH's UCX modules, whose allocations LeakSanitizer then
   * reports (make DEBUG=1); the forked test process ends here anyway */
}
END_TEST

/* Device buffers: forced on for any backend, forced off, and in auto mode only where the
 * backend's memory is not host memory and MPI is CUDA-aware. */
START_TEST(device_buffers_choice) {
  char why[200];
  clear_env();
  setenv("MPICH_GPU_SUPPORT_ENABLED", "1", 1);
  ck_assert_int_eq(ax_mpi_device_buffers(2, 1, why, sizeof why), 1); /* CPU backend too */
  ck_assert_msg(strstr(why, "--cuda-aware-mpi 1") != NULL, "%s", why);
  ck_assert_int_eq(ax_mpi_device_buffers(1, 0, why, sizeof why), 0);
  ck_assert_msg(strstr(why, "--cuda-aware-mpi 0") != NULL, "%s", why);
  ck_assert_int_eq(ax_mpi_device_buffers(0, 1, why, sizeof why), 0); /* nothing to gain */
  ck_assert_msg(strstr(why, "host memory") != NULL, "%s", why);
  ck_assert_int_eq(ax_mpi_device_buffers(0, 0, why, sizeof why), 1); /* a GPU, CUDA-aware */
  ck_assert_msg(strstr(why, "MPICH_GPU_SUPPORT_ENABLED") != NULL, "%s", why);
  setenv("MPICH_GPU_SUPPORT_ENABLED", "0", 1);
  ck_assert_int_eq(ax_mpi_device_buffers(0, 0, why, sizeof why), 0); /* a GPU, not aware */
  ck_assert_msg(strstr(why, "CUDA-aware MPI no") != NULL, "%s", why);
  ck_assert_int_eq(ax_mpi_device_buffers(2, 0, NULL, 0), 1);
}
END_TEST

int main(void) {
  Suite *s = suite_create("cuda_aware");
  TCase *tc = tu_tcase(s, "cuda_aware", 60);
  tcase_add_test(tc, option_wins);
  tcase_add_test(tc, nothing_set_means_staged);
  tcase_add_test(tc, each_mpi_setting);
  tcase_add_test(tc, first_setting_wins_and_unclear_ignored);
  tcase_add_test(tc, reason_fits_its_buffer);
  tcase_add_test(tc, device_buffers_choice);
  tcase_add_test(tc, library_query_after_init);
  return tu_run(s);
}
