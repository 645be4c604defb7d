/* peak.c — measured CPU SGEMM peak and the GPU peak table; see peak.h. */
#include "peak.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "timer.h"

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double ax_median(double *v, int n) {
  if (n <= 0) return 0;
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static int upload_inputs(AxBackend *be, void *a, void *b, int n) {
  size_t count = (size_t)n * n;
  float *host = ax_malloc(count * sizeof(float));
  if (!host) return AX_ERR;
  for (size_t i = 0; i < count; i++) host[i] = (float)((i * 2654435761u) % 1000) / 1e3f;
  int rc = be->ops->upload_f32(be, a, host, count, AX_STREAM_COMPUTE);
  if (rc == AX_OK) rc = be->ops->upload_f32(be, b, host, count, AX_STREAM_COMPUTE);
  free(host);
  return rc;
}

static int time_gemms(AxBackend *be, int n, int reps, void *a, void *b, void *c, double *out) {
  double *rates = ax_malloc((size_t)reps * sizeof *rates);
  if (!rates) return AX_ERR;
  AxGemm g = {.trans_b = 1, .m = n, .n = n, .k = n, .alpha = 1, .beta = 0, .lda = n, .ldb = n,
              .ldc = n};
  int rc = AX_OK;
  for (int r = -1; r < reps && rc == AX_OK; r++) { /* r = -1 warms up */
    double t0 = ax_now();
    ax_gemm(be, &g, a, b, c);
    rc = ax_sync(be);
    if (r >= 0) rates[r] = 2.0 * n * n * (double)n / (ax_now() - t0) / 1e9;
  }
  if (rc == AX_OK) *out = ax_median(rates, reps);
  free(rates);
  return rc;
}

int ax_gemm_gflops(AxBackend *be, int n, int reps, double *out) {
  size_t bytes = (size_t)n * n * be->esz;
  void *a = ax_alloc(be, bytes), *b = a ? ax_alloc(be, bytes) : NULL;
  void *c = b ? ax_alloc(be, bytes) : NULL;
  int rc = c ? upload_inputs(be, a, b, n) : AX_ERR;
  if (rc == AX_OK) rc = time_gemms(be, n, reps, a, b, c, out);
  if (a) ax_free(be, a);
  if (b) ax_free(be, b);
  if (c) ax_free(be, c);
  return rc;
}

int ax_peak_cpu_gflops(int threads, int bind, int share_rank, int share_size, double *gflops) {
  AxBackendConfig bc = {.device = "cpu", .dtype = AX_DTYPE_F32, .threads = threads,
                        .bind = bind, .share_rank = share_rank, .share_size = share_size};
  AxBackend *be = ax_backend_create(&bc);
  if (!be) return ax_error_context("measuring the CPU peak");
  int rc = ax_gemm_gflops(be, 1024, 3, gflops);
  ax_backend_destroy(be);
  return rc;
}

double ax_peak_gpu_table(const char *gpu_name) {
  static const struct { const char *key; double tflops; } TABLE[] = {
      {"V100", 125.0}, {"A100", 312.0}, {"H100", 989.0}, {"H200", 989.0}};
  if (!gpu_name) return 0;
  for (size_t i = 0; i < sizeof TABLE / sizeof TABLE[0]; i++)
    if (strstr(gpu_name, TABLE[i].key)) return TABLE[i].tflops;
  return 0;
}

/* "Model:   Tesla V100-SXM2-16GB" -> "Tesla V100-SXM2-16GB" */
static int read_model_line(const char *path, char *name, size_t cap) {
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  char line[256];
  int found = 0;
  while (!found && fgets(line, sizeof line, f)) {
    if (strncmp(line, "Model:", 6) != 0) continue;
    char *v = line + 6;
    v += strspn(v, " \t");
    v[strcspn(v, "\r\n")] = 0;
    snprintf(name, cap, "%s", v);
    found = name[0] != 0;
  }
  fclose(f);
  return found;
}

int ax_peak_gpu_name(char *name, size_t cap) {
  static const char *const DIR_PATH = "/proc/driver/nvidia/gpus";
  if (cap) name[0] = 0;
  DIR *d = opendir(DIR_PATH);
  if (!d) return 0;
  int found = 0;
  for (struct dirent *e = readdir(d); e && !found; e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    char path[512];
    snprintf(path, sizeof path, "%s/%s/information", DIR_PATH, e->d_name);
    found = read_model_line(path, name, cap);
  }
  closedir(d);
  return found;
}
