/* metrics.c — progress lines and the rows of the metrics files (CSV, JSON lines, TensorBoard);
 * see metrics.h. */
#include "metrics.h"

#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/core/error.h"
#include "src/core/log.h"
#include "src/core/timer.h"

int ax_metrics_open(AxMetrics *m, const AxMetricsFiles *files, int quiet, int total_steps,
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
  if (!files) return AX_OK;
  AX_TRY(ax_row_file_open(&m->csv, files->csv, AX_METRICS_CSV_HEADER, "", files->resume_step));
  AX_TRY(ax_row_file_open(&m->jsonl, files->jsonl, NULL, "{\"step\":", files->resume_step));
  return files->tensorboard_dir ? ax_tfevents_open(&m->tb, files->tensorboard_dir) : AX_OK;
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

/* The figures of a row, beside the record's own. */
typedef struct {
  double tokens_per_s, tflops;
} RowFigures;

static int csv_row(const AxRowFile *f, const AxStepRecord *r, const RowFigures *x) {
  int a = fprintf(f->f, "%d,%.9g,%.9g,%.6g,%.6g,%.6g,%.9g,", r->step, r->loss, r->lr, r->ms,
                  x->tokens_per_s, x->tflops, r->grad_norm);
  int b = isnan(r->val_loss) ? 0 : fprintf(f->f, "%.9g", r->val_loss);
  int c = fputc('\n', f->f);
  return ax_row_file_flush(f, a < 0 || b < 0 || c == EOF ? -1 : 0);
}

/* A JSON number, or null when not finite. */
static int json_num(FILE *f, const char *key, double v, const char *fmt) {
  if (fprintf(f, ",\"%s\":", key) < 0) return -1;
  return isfinite(v) ? fprintf(f, fmt, v) : fprintf(f, "null");
}

static int jsonl_row(const AxRowFile *f, const AxStepRecord *r, const RowFigures *x) {
  int bad = fprintf(f->f, "{\"step\":%d", r->step) < 0;
  bad |= json_num(f->f, "loss", r->loss, "%.9g") < 0;
  bad |= json_num(f->f, "lr", r->lr, "%.9g") < 0;
  bad |= json_num(f->f, "batch_ms", r->ms, "%.6g") < 0;
  bad |= json_num(f->f, "tokens_per_s", x->tokens_per_s, "%.6g") < 0;
  bad |= json_num(f->f, "tflops", x->tflops, "%.6g") < 0;
  bad |= json_num(f->f, "grad_norm", r->grad_norm, "%.9g") < 0;
  bad |= json_num(f->f, "val_loss", r->val_loss, "%.9g") < 0;
  bad |= fputs("}\n", f->f) == EOF;
  return ax_row_file_flush(f, bad ? -1 : 0);
}

static int tensorboard_row(AxTfEvents *tb, const AxStepRecord *r, const RowFigures *x) {
  const AxTfScalar s[] = {{"loss", r->loss},           {"lr", r->lr},
                          {"batch_ms", r->ms},         {"tokens_per_s", x->tokens_per_s},
                          {"tflops", x->tflops},       {"grad_norm", r->grad_norm},
                          {"val_loss", r->val_loss}};
  return ax_tfevents_scalars(tb, r->step, s, (int)(sizeof s / sizeof s[0]));
}

static int write_rows(AxMetrics *m, const AxStepRecord *r, const RowFigures *x) {
  if (m->csv.f) AX_TRY(csv_row(&m->csv, r, x));
  if (m->jsonl.f) AX_TRY(jsonl_row(&m->jsonl, r, x));
  return m->tb.f ? tensorboard_row(&m->tb, r, x) : AX_OK;
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
  RowFigures x = {tps, fps / 1e12};
  return write_rows(m, r, &x);
}

/* A new file the run wrote no step into is removed (a regular file only). */
static void discard_rows(AxRowFile *f, int steps) {
  int was_open = f->f != NULL;
  if (was_open) fclose(f->f); /* unchecked: the run's own error is the one to keep */
  f->f = NULL;
  struct stat sb;
  if (was_open && f->fresh && steps == 0 && stat(f->path, &sb) == 0 && S_ISREG(sb.st_mode))
    unlink(f->path);
}

void ax_metrics_discard(AxMetrics *m) {
  discard_rows(&m->csv, m->n);
  discard_rows(&m->jsonl, m->n);
  if (m->tb.f) fclose(m->tb.f);
  m->tb.f = NULL;
}

int ax_metrics_close(AxMetrics *m) {
  int rc = ax_row_file_close(&m->csv);
  if (ax_row_file_close(&m->jsonl) != AX_OK) rc = AX_ERR;
  if (ax_tfevents_close(&m->tb) != AX_OK) rc = AX_ERR;
  return rc;
}
