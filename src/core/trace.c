/* trace.c — event recording and the Chrome trace-event writer; see trace.h. */
#include "trace.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "fileio.h"
#include "timer.h"

static const char *const KIND_NAMES[AX_N_EVENT_KINDS] = {
    "forward", "backward", "send", "recv-wait", "allreduce", "optimizer", "pipeline", "step",
    "recv-wait-gradient"};

const char *ax_trace_kind_name(int kind) {
  return kind >= 0 && kind < AX_N_EVENT_KINDS ? KIND_NAMES[kind] : "?";
}

void ax_trace_off(AxTrace *t) {
  memset(t, 0, sizeof *t);
  t->step_lo = 1;
  t->step_hi = 0;
}

int ax_trace_init(AxTrace *t, int step_lo, int step_hi, int capacity) {
  ax_trace_off(t);
  t->ev = ax_malloc((size_t)capacity * sizeof *t->ev);
  if (!t->ev) return AX_ERR;
  t->cap = capacity;
  t->step_lo = step_lo;
  t->step_hi = step_hi;
  t->origin = ax_now();
  return AX_OK;
}

void ax_trace_free(AxTrace *t) {
  free(t->ev);
  ax_trace_off(t);
}

void ax_trace_set_origin(AxTrace *t, double origin) { t->origin = origin; }

double ax_trace_clock_offset(const double *t0, const double *tr, const double *t1, int n,
                             double *rtt) {
  int best = 0;
  for (int i = 1; i < n; i++)
    if (t1[i] - t0[i] < t1[best] - t0[best]) best = i;
  *rtt = t1[best] - t0[best];
  return tr[best] - 0.5 * (t0[best] + t1[best]);
}

void ax_trace_set_step(AxTrace *t, int step) { t->step = step; }

int ax_trace_active(const AxTrace *t) {
  return t && t->ev && t->step >= t->step_lo && t->step <= t->step_hi;
}

double ax_trace_begin(const AxTrace *t) { return ax_trace_active(t) ? ax_now() : 0.0; }

void ax_trace_end(AxTrace *t, int kind, int mb, double t0) {
  if (!ax_trace_active(t)) return;
  if (t->n == t->cap) {
    t->dropped++;
    return;
  }
  t->ev[t->n++] = (AxTraceEvent){t0 - t->origin, ax_now() - t->origin, kind, t->step, mb};
}

static int write_event(AxFile *f, const AxTraceEvent *e, int rank, int first) {
  char line[256];
  int n = snprintf(line, sizeof line,
                   "%s\n{\"name\":\"%s\",\"ph\":\"X\",\"pid\":0,\"tid\":%d,\"ts\":%.3f,"
                   "\"dur\":%.3f,\"args\":{\"step\":%d,\"mb\":%d}}",
                   first ? "" : ",", ax_trace_kind_name(e->kind), rank, e->t0 * 1e6,
                   (e->t1 - e->t0) * 1e6, e->step, e->mb);
  return ax_file_write(f, line, (size_t)n);
}

static int write_track_names(AxFile *f, int nranks, const AxRankLayout *layout) {
  for (int r = 0; r < nranks; r++) {
    char line[256], label[96];
    int n = snprintf(line, sizeof line,
                     "%s\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":0,\"tid\":%d,"
                     "\"args\":{\"name\":\"%s\"}}",
                     r ? "," : "", r, ax_rank_label(layout, r, label, sizeof label));
    AX_TRY(ax_file_write(f, line, (size_t)n));
  }
  return AX_OK;
}

int ax_trace_write_json(const char *path, const AxTraceEvent *ev, const int *counts, int nranks,
                        const AxRankLayout *layout) {
  AxFile f;
  AX_TRY(ax_file_open_write(&f, path));
  const char *head = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[";
  int rc = ax_file_write(&f, head, strlen(head));
  if (rc == AX_OK) rc = write_track_names(&f, nranks, layout);
  for (int r = 0, k = 0; r < nranks && rc == AX_OK; r++)
    for (int i = 0; i < counts[r] && rc == AX_OK; i++, k++) rc = write_event(&f, &ev[k], r, 0);
  if (rc == AX_OK) rc = ax_file_write(&f, "\n]}\n", 4);
  if (rc != AX_OK) {
    ax_file_abort(&f);
    return AX_ERR;
  }
  return ax_file_commit(&f);
}
