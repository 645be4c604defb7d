/* cuda_aware.c — CUDA-aware MPI detection, and the p2p engine's choice of buffers; see
 * cuda_aware.h. */
#include "cuda_aware.h"

#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Open MPI (and Spectrum MPI) declare MPIX_Query_cuda_support in mpi-ext.h. */
#if defined(OPEN_MPI) && OPEN_MPI && defined(__has_include)
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif
#endif

enum { UNKNOWN = -1 };

#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static int say(char *why, size_t cap, int answer, const char *fmt, ...) {
  if (why && cap) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, cap, fmt, ap);
    va_end(ap);
  }
  return answer;
}

static int mpi_running(void) {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  return init && !fin;
}

/* The library's own answer: 0/1, or UNKNOWN where it has no query; *name gets the query. */
static int library_query(const char **name) {
  *name = NULL;
  if (!mpi_running()) return UNKNOWN;
#if defined(OMPI_HAVE_MPI_EXT_CUDA) && OMPI_HAVE_MPI_EXT_CUDA
  *name = "MPIX_Query_cuda_support()";
  return MPIX_Query_cuda_support() ? 1 : 0;
#elif defined(MPIX_GPU_SUPPORT_CUDA)
  int supported = 0;
  *name = "MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA)";
  if (MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA, &supported) != MPI_SUCCESS) return UNKNOWN;
  return supported ? 1 : 0;
#else
  return UNKNOWN;
#endif
}

/* Open MPI's control variable mpi_built_with_cuda_support through the MPI tool interface. */
static int built_with_cuda(void) {
#if defined(OPEN_MPI) && OPEN_MPI && (MPI_VERSION > 3 || (MPI_VERSION == 3 && MPI_SUBVERSION >= 1))
  int provided, index, count, value = UNKNOWN;
  if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) return UNKNOWN;
  MPI_T_cvar_handle handle;
  if (MPI_T_cvar_get_index("mpi_built_with_cuda_support", &index) == MPI_SUCCESS &&
      MPI_T_cvar_handle_alloc(index, NULL, &handle, &count) == MPI_SUCCESS) {
    int v = 0;
    if (count == 1 && MPI_T_cvar_read(handle, &v) == MPI_SUCCESS) value = v ? 1 : 0;
    MPI_T_cvar_handle_free(&handle);
  }
  MPI_T_finalize();
  return value;
#else
  return UNKNOWN;
#endif
}

/* 1 / 0 for a clear yes / no, UNKNOWN when unset or unclear. */
static int env_flag(const char *name) {
  static const char *const yes[] = {"1", "true", "yes", "on", "enable", "enabled"};
  static const char *const no[] = {"0", "false", "no", "off", "disable", "disabled"};
  const char *v = getenv(name);
  if (!v) return UNKNOWN;
  for (size_t i = 0; i < sizeof yes / sizeof *yes; i++) {
    if (!strcasecmp(v, yes[i])) return 1;
    if (!strcasecmp(v, no[i])) return 0;
  }
  return UNKNOWN;
}

static const struct {
  const char *var, *who;
} ENV_SETTINGS[] = {
    {"MPICH_GPU_SUPPORT_ENABLED", "Cray MPICH"},
    {"MPIR_CVAR_ENABLE_GPU", "MPICH"},
    {"OMPI_MCA_pml_pami_enable_cuda", "Spectrum MPI -gpu"},
    {"OMPI_MCA_opal_cuda_support", "Open MPI"},
    {"MV2_USE_CUDA", "MVAPICH2"},
};

static int from_environment(char *why, size_t cap) {
  for (size_t i = 0; i < sizeof ENV_SETTINGS / sizeof *ENV_SETTINGS; i++) {
    const char *var = ENV_SETTINGS[i].var;
    int v = env_flag(var);
    if (v != UNKNOWN)
      return say(why, cap, v, "%s: %s=%s (%s)", v ? "yes" : "no", var, getenv(var),
                 ENV_SETTINGS[i].who);
  }
  return say(why, cap, 0, "no: not detected (%s, and no GPU setting of Cray MPICH, MPICH, "
             "Spectrum MPI, Open MPI or MVAPICH2)",
             mpi_running() ? "no CUDA query in this MPI" : "MPI not initialized");
}

int ax_cuda_aware_mpi(int forced, char *why, size_t cap) {
  if (forced == 1) return say(why, cap, 0, "no: forced off by --cuda-aware-mpi 0");
  if (forced == 2) return say(why, cap, 1, "yes: forced on by --cuda-aware-mpi 1");
  const char *query;
  int v = library_query(&query);
  if (v != UNKNOWN)
    return say(why, cap, v, "%s: %s = %d", v ? "yes" : "no", query, v);
  if (mpi_running() && built_with_cuda() == 0)
    return say(why, cap, 0, "no: Open MPI built without CUDA support");
  return from_environment(why, cap);
}

int ax_mpi_device_buffers(int forced, int device_is_host, char *why, size_t cap) {
  if (forced == 0 && device_is_host)
    return say(why, cap, 0, "not needed: the backend's device memory is host memory");
  char detail[160];
  int aware = ax_cuda_aware_mpi(forced, detail, sizeof detail);
  return say(why, cap, aware, "CUDA-aware MPI %s", detail);
}
