/* summary_run.c — the collective half of the end-of-run summary: the timing window reduced
 * over ranks, the peak (the CPU GEMM peak measured at the run's shapes on every rank when no
 * other is known), memory high-water marks, traffic counters (summary_comm.c) and
 * memory-checkpoint figures (summary_ckpt.c) gathered to rank 0, which prints and writes; see
 * summary.h. */
#include <math.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "mpi/mpi_util.h"
#include "src/backend/peak.h"
#include "src/core/error.h"
#include "src/core/fileio.h"
#include "src/core/log.h"
#include "summary.h"

static int has_comm(const AxGrid *g) { return g->world != MPI_COMM_NULL && g->size > 1; }

static int is_cpu(const AxTrainConfig *cfg) { return strcmp(cfg->exec.device, "cpu") == 0; }

/* ru_maxrss: KiB on Linux and the BSDs, bytes on macOS. */
static long long host_peak_bytes(void) {
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) != 0) return -1;
#if defined(__APPLE__)
  return (long long)ru.ru_maxrss;
#else
  return (long long)ru.ru_maxrss * 1024;
#endif
}

/* Slowest rank's mean, fastest and slowest single step (every rank times the same steps). */
static int reduce_timing(const AxGrid *g, AxTiming *t) {
  if (!has_comm(g) || !t->n) return AX_OK;
  double mine[3] = {t->mean_ms, -t->min_ms, t->max_ms}, all[3];
  AX_MPI(MPI_Allreduce(mine, all, 3, MPI_DOUBLE, MPI_MAX, g->world));
  t->mean_ms = all[0];
  t->min_ms = -all[1];
  t->max_ms = all[2];
  return AX_OK;
}

/* Waits without taking the core from ranks still measuring (polite mode when oversubscribed). */
static int polite_sum(const AxGrid *g, double mine, double *total) {
  MPI_Request req;
  if (!has_comm(g)) {
    *total = mine;
    return AX_OK;
  }
  AX_MPI(MPI_Iallreduce(&mine, total, 1, MPI_DOUBLE, MPI_SUM, g->world, &req));
  return ax_mpi_wait(&g->comm_cfg, &req, MPI_STATUS_IGNORE);
}

/* "qkv 1024x384x128, attproj 1024x128x128, ..." */
static void describe_shapes(char *buf, size_t cap, const AxGemmShape *shapes, int n) {
  size_t used = 0;
  buf[0] = 0;
  for (int i = 0; i < n && used < cap; i++) {
    int w = snprintf(buf + used, cap - used, "%s%s %dx%dx%d", i ? ", " : "", shapes[i].name,
                     shapes[i].m, shapes[i].n, shapes[i].k);
    used += w > 0 ? (size_t)w : 0;
  }
}

/* Every rank measures at once, so ranks that share cores share them here too: the sum is what
 * the job's cores can do (roughly, when ranks outnumber cores). */
static int measure_cpu_peak(const AxTrainer *t, const AxTrainConfig *cfg, AxPeakInfo *p) {
  const AxGrid *g = ax_trainer_grid(t);
  AxGemmShape shapes[AX_PEAK_MAX_SHAPES];
  int n = ax_trainer_peak_shapes(t, 0, shapes);
  AxPeakResult r = {0};
  double total = 0, none = 0;
  AX_TRY(polite_sum(g, 0, &none)); /* start together */
  int rc = ax_peak_cpu(cfg->exec.threads, cfg->exec.bind, g->share_rank, g->share_size, shapes, n, &r);
  AX_TRY(polite_sum(g, rc == AX_OK ? r.gflops : 0, &total));
  AX_TRY(ax_grid_agree(g, rc));
  p->tflops_per_rank = total / g->size / 1e3;
  snprintf(p->source, sizeof p->source,
           "measured: fp32 GEMM (C = A B^T) with the run's threads at this run's GEMM shapes "
           "and %d^3, best of up to 5 samples each, every rank at once at the end of the run, "
           "mean over ranks", AX_PEAK_SQUARE);
  describe_shapes(p->shapes, sizeof p->shapes, shapes, n);
  snprintf(p->best_shape, sizeof p->best_shape, "%s %dx%dx%d", r.best.name, r.best.m, r.best.n,
           r.best.k);
  return AX_OK;
}

static int resolve_peak(const AxTrainer *t, const AxTrainConfig *cfg, AxPeakInfo *p) {
  char gpu[128] = "";
  if (!is_cpu(cfg)) ax_peak_gpu_name(gpu, sizeof gpu);
  if (ax_summary_peak_lookup(p, cfg->output.peak_tflops, cfg->exec.device, gpu) || !is_cpu(cfg))
    return AX_OK;
  return measure_cpu_peak(t, cfg, p);
}

static void free_memory(AxMemory *m) {
  free(m->host_bytes);
  free(m->device_bytes);
  m->host_bytes = m->device_bytes = NULL;
}

/* Rank 0 gets (host, device) of every rank; device is host on the CPU backend, and on a GPU
 * the peak of what the backend allocated. */
static int gather_memory(const AxGrid *g, const AxTrainConfig *cfg, size_t device_peak,
                         AxMemory *m) {
  int n = g->size, root = g->rank == 0;
  long long mine[2] = {host_peak_bytes(), (long long)device_peak}, *all = NULL;
  if (is_cpu(cfg)) mine[1] = mine[0];
  m->device_source = is_cpu(cfg) ? "host: the CPU backend's device memory is host memory"
                                 : "backend: the peak of the device memory axonn allocated "
                                   "(not the CUDA context or cuBLAS's workspace)";
  if (root) {
    all = ax_malloc(2 * (size_t)n * sizeof *all);
    m->host_bytes = ax_malloc((size_t)n * sizeof *m->host_bytes);
    m->device_bytes = ax_malloc((size_t)n * sizeof *m->device_bytes);
  }
  int ok = !root || (all && m->host_bytes && m->device_bytes);
  int rc = ax_grid_agree(g, ok ? AX_OK : AX_ERR);
  if (rc == AX_OK && has_comm(g) &&
      MPI_Gather(mine, 2, MPI_LONG_LONG, all, 2, MPI_LONG_LONG, 0, g->world) != MPI_SUCCESS)
    rc = AX_FAIL("MPI_Gather of the memory marks failed");
  if (rc == AX_OK && !has_comm(g)) memcpy(all, mine, sizeof mine);
  for (int r = 0; root && rc == AX_OK && r < n; r++) {
    m->host_bytes[r] = all[2 * r];
    if (m->device_bytes) m->device_bytes[r] = all[2 * r + 1];
  }
  free(all);
  return rc;
}

static void fill_basics(AxSummary *s, const AxTrainer *t, const AxTrainConfig *cfg,
                        const AxMetrics *m) {
  const AxGrid *g = ax_trainer_grid(t);
  memset(s, 0, sizeof *s);
  s->options = &AX_TRAIN_OPTIONS;
  s->cfg = cfg;
  s->compression = &cfg->compression;
  s->model = *ax_trainer_model(t);
  s->preset = cfg->model.preset;
  s->device = cfg->exec.device;
  s->host = g->host;
  s->ranks = g->size;
  s->g_inter = g->P;
  s->g_data = g->D;
  s->steps_run = m->n;
  s->final_loss = m->n ? m->last_loss : NAN;
  s->final_val_loss = m->last_val;
  s->val_batches = ax_trainer_val_batches(t);
  ax_trainer_loss_scale(t, &s->loss_scale, &s->skipped_steps);
  s->replicas_differ = ax_trainer_data_replicas_differ(t);
  s->tied_differ = ax_trainer_tied_copies_differ(t);
  ax_trainer_resume_report(t, &s->resumed);
  ax_summary_timing(&s->timing, m, cfg->output.timing_skip, cfg->output.timing_steps);
  ax_trainer_compress_report(t, &s->compress);
  ax_trainer_embed_sync_report(t, &s->embed_sync);
}

int ax_summary_finish(const AxTrainer *t, const AxTrainConfig *cfg, const AxMetrics *m) {
  const AxGrid *g = ax_trainer_grid(t);
  AxSummary s;
  AxProvenance prov;
  fill_basics(&s, t, cfg, m);
  int rc = ax_summary_provenance_gather(&prov, g, g->host);
  s.prov = &prov;
  if (rc == AX_OK) rc = reduce_timing(g, &s.timing);
  if (rc == AX_OK) rc = resolve_peak(t, cfg, &s.peak);
  if (rc == AX_OK) rc = gather_memory(g, cfg, ax_trainer_device_peak_bytes(t), &s.mem);
  if (rc == AX_OK) rc = ax_summary_comm_gather(&s.comm, t);
  if (rc == AX_OK) rc = ax_summary_ckpt_gather(&s.ckpt, t);
  if (rc == AX_OK) {
    ax_summary_figures(&s.fig, &s.model, cfg->data.batch, cfg->model.seq, s.timing.mean_ms, s.ranks,
                       s.peak.tflops_per_rank, ax_trainer_recomputes(t));
    if (g->rank == 0) rc = ax_summary_emit(&s, cfg->output.summary);
  }
  free_memory(&s.mem);
  ax_summary_provenance_free(&prov);
  ax_summary_comm_free(&s.comm);
  ax_summary_ckpt_free(&s.ckpt);
  return ax_grid_agree(g, rc);
}
