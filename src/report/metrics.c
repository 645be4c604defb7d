/* metrics.c — progress lines and the metrics CSV; see metrics.h. */
#include "metrics.h"

#include <errno.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/core/error.h"
#include "src/core/log.h"
#include "src/core/timer.h"

static int write_failed(const AxMetrics *m, int err) {
  return AX_FAIL("cannot write metrics file %s: %s", m->csv_path, strerror(err ? err : EIO));
}

/* The buffered text reaches the file (and a full disk is found) at the flush. */
static int flush_csv(const AxMetrics *m, int printed) {
  errno = 0;
  if (printed < 0 || ferror(m->csv) || fflush(m->csv) != 0) return write_failed(m, errno);
  return AX_OK;
}

int ax_metrics_open(AxMetrics *m, const char *csv_path, int quiet, int total_steps,
                    long long tokens_per_step, double flops_per_step) {
  memset(m, 0, sizeof *m);
  m->quiet = quiet;
  m->total_steps = total_steps;
  m->tokens_per_step = tokens_per_step;
  m->flops_per_step = flops_per_step;
  m->last_val = NAN;
  m->start_s = ax_now();
  ax_metrics_timing_window(m, 0, total_steps > 0 ? total_steps : 1);
  ax_metrics_log_every(m, 0);
  if (!csv_path) return AX_OK;
  m->csv_path = csv_path;
  m->csv = fopen(csv_path, "w");
  if (!m->csv) return AX_FAIL("cannot create metrics file %s: %s", csv_path, strerror(errno));
  return flush_csv(m, fprintf(m->csv, "step,loss,lr,batch_ms,tokens_per_s,tflops,grad_norm,"
                                      "val_loss\n"));
}

void ax_metrics_timing_window(AxMetrics *m, int skip, int steps) {
  m->timing_skip = skip;
  m->timing_steps = steps;
}

int ax_metrics_auto_every(int total_steps) {
  static const int MANTISSA[] = {10, 20, 25, 50};
  static const int SMALL[] = {1, 2, 4, 5};
  for (size_t i = 0; i < sizeof SMALL / sizeof SMALL[0]; i++)
    if ((long long)SMALL[i] * 40 >= total_steps) return SMALL[i];
  for (long long scale = 1; scale <= 100000000; scale *= 10)
    for (size_t i = 0; i < sizeof MANTISSA / sizeof MANTISSA[0]; i++)
      if (MANTISSA[i] * scale * 40 >= total_steps) return (int)(MANTISSA[i] * scale);
  return total_steps;
}

void ax_metrics_log_every(AxMetrics *m, int every) {
  m->log_every = every > 0 ? every : ax_metrics_auto_every(m->total_steps);
}

static void add_time(AxStepTimes *t, int step, double ms) {
  if (t->n == 0 || ms < t->min_ms) t->min_ms = ms;
  if (t->n == 0 || ms > t->max_ms) t->max_ms = ms;
  if (t->n == 0) t->first = step;
  t->last = step;
  t->n++;
  t->sum_ms += ms;
}

/* 42.0s, 3:07, 1:02:03 */
static void format_duration(char *buf, size_t cap, double s) {
  if (!isfinite(s) || s < 0) s = 0;
  long t = lround(s);
  if (s < 60)
    snprintf(buf, cap, "%.1fs", s);
  else if (t < 3600)
    snprintf(buf, cap, "%ld:%02ld", t / 60, t % 60);
  else
    snprintf(buf, cap, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
}

void ax_metrics_format_flops(char *buf, size_t cap, double flops_per_s) {
  if (flops_per_s >= 1e12)
    snprintf(buf, cap, "%.2f TFLOP/s", flops_per_s / 1e12);
  else
    snprintf(buf, cap, "%.1f GFLOP/s", flops_per_s / 1e9);
}

static int line_due(const AxMetrics *m, int step) {
  return m->n == 1 || step >= m->total_steps || step % m->log_every == 0;
}

/* ETA: the mean wall time per step so far (validation included) times the steps left. */
static void progress_line(const AxMetrics *m, const AxStepRecord *r, double tps, double fps) {
  double elapsed = ax_now() - m->start_s;
  int left = m->total_steps > r->step ? m->total_steps - r->step : 0;
  char flops[32], el[32], eta[32];
  ax_metrics_format_flops(flops, sizeof flops, fps);
  format_duration(el, sizeof el, elapsed);
  format_duration(eta, sizeof eta, elapsed / m->n * left);
  ax_log("step %*d/%d | loss %.6f | lr %.2e | %8.2f ms | %7.0f tok/s | %s | grad norm %.4f | "
         "elapsed %s | ETA %s", r->step < 10000 ? 4 : 7, r->step, m->total_steps, r->loss, r->lr,
         r->ms, tps, flops, r->grad_norm, el, eta);
}

static int csv_row(const AxMetrics *m, const AxStepRecord *r, double tps, double tflops) {
  int a = fprintf(m->csv, "%d,%.9g,%.9g,%.6g,%.6g,%.6g,%.9g,", r->step, r->loss, r->lr, r->ms,
                  tps, tflops, r->grad_norm);
  int b = isnan(r->val_loss) ? 0 : fprintf(m->csv, "%.9g", r->val_loss);
  int c = fputc('\n', m->csv);
  return flush_csv(m, a < 0 || b < 0 || c == EOF ? -1 : 0);
}

int ax_metrics_step(AxMetrics *m, const AxStepRecord *r) {
  double sec = r->ms / 1e3, tps = m->tokens_per_step / sec, fps = m->flops_per_step / sec;
  m->n++;
  m->sum_ms += r->ms;
  add_time(&m->all, r->step, r->ms);
  if (m->n > m->timing_skip && m->n <= m->timing_skip + m->timing_steps)
    add_time(&m->timed, r->step, r->ms);
  m->last_loss = r->loss;
  if (!isnan(r->val_loss)) m->last_val = r->val_loss;
  if (!m->quiet && line_due(m, r->step)) progress_line(m, r, tps, fps);
  return m->csv ? csv_row(m, r, tps, fps / 1e12) : AX_OK;
}

void ax_metrics_discard(AxMetrics *m) {
  int was_open = m->csv != NULL;
  if (was_open) fclose(m->csv); /* the run has failed already: its error is the one to keep */
  m->csv = NULL;
  struct stat sb;
  if (was_open && m->n == 0 && stat(m->csv_path, &sb) == 0 && S_ISREG(sb.st_mode))
    unlink(m->csv_path);
}

int ax_metrics_close(AxMetrics *m) {
  if (!m->csv) return AX_OK;
  errno = 0;
  int bad = ferror(m->csv), closed = fclose(m->csv);
  m->csv = NULL;
  return bad || closed != 0 ? write_failed(m, errno) : AX_OK;
}
