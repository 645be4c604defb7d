/* peak.c — the measured GEMM peak (at a run's shapes, and the square sweep) and the GPU peak
 * table; see peak.h. */
#include "peak.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/error.h"
#include "src/core/timer.h"

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double ax_median(double *v, int n) {
  if (n <= 0) return 0;
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double ax_least(const double *v, int n) {
  double m = n > 0 ? v[0] : 0;
  for (int i = 1; i < n; i++) m = v[i] < m ? v[i] : m;
  return m;
}

/* ---------------------------------------------------------------- GEMM buffers and timing */

typedef struct {
  void *a, *b, *c;
} GemmBuffers;

static void free_buffers(AxBackend *be, GemmBuffers *g) {
  if (g->a) ax_free(be, g->a);
  if (g->b) ax_free(be, g->b);
  if (g->c) ax_free(be, g->c);
  memset(g, 0, sizeof *g);
}

static int upload_pattern(AxBackend *be, void *dst, size_t count) {
  float *host = ax_malloc(count * sizeof(float));
  if (!host) return AX_ERR;
  for (size_t i = 0; i < count; i++) host[i] = (float)((i * 2654435761u) % 1000) / 1e3f;
  int rc = be->ops->upload_f32(be, dst, host, count, AX_STREAM_COMPUTE);
  free(host);
  return rc;
}

/* A (m x k) and B (n x k) filled, C (m x n) allocated. */
static int alloc_buffers(AxBackend *be, const AxGemmShape *s, GemmBuffers *g) {
  size_t na = (size_t)s->m * s->k, nb = (size_t)s->n * s->k, nc = (size_t)s->m * s->n;
  memset(g, 0, sizeof *g);
  g->a = ax_alloc(be, na * be->esz);
  g->b = g->a ? ax_alloc(be, nb * be->esz) : NULL;
  g->c = g->b ? ax_alloc(be, nc * be->esz) : NULL;
  int rc = g->c ? upload_pattern(be, g->a, na) : AX_ERR;
  if (rc == AX_OK) rc = upload_pattern(be, g->b, nb);
  if (rc != AX_OK) free_buffers(be, g);
  return rc;
}

static AxGemm gemm_of(const AxGemmShape *s) {
  return (AxGemm){.trans_b = 1, .m = s->m, .n = s->n, .k = s->k, .alpha = 1, .beta = 0,
                  .lda = s->k, .ldb = s->k, .ldc = s->n};
}

/* GFLOP/s of `calls` back-to-back GEMMs; *sec is their time. */
static int time_calls(AxBackend *be, const AxGemmShape *s, const GemmBuffers *b, int calls,
                      double *gflops, double *sec) {
  AxGemm g = gemm_of(s);
  double t0 = ax_now();
  for (int i = 0; i < calls; i++) ax_gemm(be, &g, b->a, b->b, b->c);
  AX_TRY(ax_sync(be));
  *sec = ax_now() - t0;
  *gflops = 2.0 * s->m * s->n * (double)s->k * calls / (*sec > 0 ? *sec : 1e-12) / 1e9;
  return AX_OK;
}

/* ---------------------------------------------------------------- the square sweep */

int ax_gemm_gflops(AxBackend *be, int n, int reps, double *out) {
  AxGemmShape s = {n, n, n, "square"};
  GemmBuffers b;
  AX_TRY(alloc_buffers(be, &s, &b));
  double *rates = ax_malloc((size_t)reps * sizeof *rates), warm, sec;
  int rc = rates ? AX_OK : AX_ERR;
  for (int r = -1; r < reps && rc == AX_OK; r++) /* r = -1 warms up */
    rc = time_calls(be, &s, &b, 1, r >= 0 ? &rates[r] : &warm, &sec);
  if (rc == AX_OK) *out = ax_median(rates, reps);
  free(rates);
  free_buffers(be, &b);
  return rc;
}

/* ---------------------------------------------------------------- the peak at a run's shapes */

enum { PEAK_SAMPLES = 5, PEAK_MIN_SAMPLES = 2 };
static const double PEAK_SAMPLE_S = 0.005, PEAK_SHAPE_S = 0.2;

static int cap(int d, int gpu) { return gpu || d < AX_PEAK_DIM_CAP ? d : AX_PEAK_DIM_CAP; }

int ax_peak_shapes(const AxGemmShape *model, int n_model, int gpu, AxGemmShape *out) {
  int n = 0, sq = gpu ? AX_PEAK_SQUARE_GPU : AX_PEAK_SQUARE;
  for (int i = 0; i < n_model && n < AX_PEAK_MAX_SHAPES - 1; i++)
    out[n++] = (AxGemmShape){cap(model[i].m, gpu), cap(model[i].n, gpu), cap(model[i].k, gpu),
                             model[i].name};
  out[n++] = (AxGemmShape){sq, sq, sq, "square"};
  return n;
}

/* The best sample at one shape. */
static int best_at(AxBackend *be, const AxGemmShape *s, double *best) {
  GemmBuffers b;
  AX_TRY(alloc_buffers(be, s, &b));
  double rate, sec, spent = 0;
  int rc = time_calls(be, s, &b, 1, &rate, &sec); /* warm-up (a GPU's first call is slow) */
  if (rc == AX_OK) rc = time_calls(be, s, &b, 1, &rate, &sec); /* the size of a sample */
  int calls = sec >= PEAK_SAMPLE_S ? 1 : (int)(PEAK_SAMPLE_S / (sec > 1e-7 ? sec : 1e-7)) + 1;
  *best = 0;
  for (int i = 0; rc == AX_OK && i < PEAK_SAMPLES; i++) {
    if (i >= PEAK_MIN_SAMPLES && spent > PEAK_SHAPE_S) break;
    rc = time_calls(be, s, &b, calls, &rate, &sec);
    spent += sec;
    if (rc == AX_OK && rate > *best) *best = rate;
  }
  free_buffers(be, &b);
  return rc;
}

int ax_peak_measure(AxBackend *be, const AxGemmShape *shapes, int n, AxPeakResult *out) {
  memset(out, 0, sizeof *out);
  for (int i = 0; i < n; i++) {
    double g;
    AX_TRY(best_at(be, &shapes[i], &g));
    if (g > out->gflops) {
      out->gflops = g;
      out->best = shapes[i];
    }
  }
  out->n_shapes = n;
  return AX_OK;
}

int ax_peak_cpu(int threads, int bind, int share_rank, int share_size,
                const AxGemmShape *shapes, int n, AxPeakResult *out) {
  AxBackendConfig bc = {.device = "cpu", .dtype = AX_DTYPE_F32, .threads = threads,
                        .bind = bind, .share_rank = share_rank, .share_size = share_size};
  AxBackend *be = ax_backend_create(&bc);
  if (!be) return ax_error_context("measuring the CPU peak");
  int rc = ax_peak_measure(be, shapes, n, out);
  ax_backend_destroy(be);
  return rc;
}

double ax_peak_gpu_table(const char *gpu_name) {
  static const struct { const char *key; double tflops; } TABLE[] = {
      {"V100", 125.0}, {"A100", 312.0}, {"H100", 989.0}, {"H200", 989.0},
      /* one GCD of an MI250X (383 TFLOP/s for the two of a package): what a rank gets */
      {"MI250X", 191.5}};
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
