/* replica_schedule.c — idle spans of a link and Algorithm 6.2's chunks; see
 * replica_schedule.h. */
#include "replica_schedule.h"

#include <math.h>
#include <stdlib.h>

static int by_start(const void *a, const void *b) {
  const AxLinkUse *x = a, *y = b;
  return (x->start_ns > y->start_ns) - (x->start_ns < y->start_ns);
}

static void add_span(AxSpan *out, int cap, int *n, long long from_ns, long long a, long long b,
                     double min_s) {
  double len = (double)(b - a) * 1e-9;
  if (len >= min_s && len > 0 && *n < cap)
    out[(*n)++] = (AxSpan){(double)(a - from_ns) * 1e-9, (double)(b - from_ns) * 1e-9};
}

int ax_idle_spans(const AxLinkUse *uses, int n, long long from_ns, long long to_ns, int skip_cls,
                  double min_s, AxSpan *out, int cap) {
  AxLinkUse *busy = malloc(((size_t)n + 1) * sizeof *busy);
  if (!busy) return 0;
  int m = 0;
  for (int i = 0; i < n; i++)
    if (uses[i].cls != skip_cls && uses[i].end_ns > from_ns && uses[i].start_ns < to_ns)
      busy[m++] = uses[i];
  qsort(busy, (size_t)m, sizeof *busy, by_start);
  int k = 0;
  long long idle_from = from_ns; /* the link is idle from here until the next use starts */
  for (int i = 0; i < m; i++) {
    if (busy[i].start_ns > idle_from) add_span(out, cap, &k, from_ns, idle_from, busy[i].start_ns, min_s);
    if (busy[i].end_ns > idle_from) idle_from = busy[i].end_ns;
  }
  if (to_ns > idle_from) add_span(out, cap, &k, from_ns, idle_from, to_ns, min_s);
  free(busy);
  return k;
}

int ax_span_at(const AxSpan *spans, int n, double t) {
  for (int i = 0; i < n; i++)
    if (t >= spans[i].start_s && t < spans[i].end_s) return i;
  return -1;
}

int ax_fill_span(const AxReplicaLink *l, double span_s, size_t *remain, size_t *sizes, int cap,
                 double *used_s) {
  int k = 0;
  double left = span_s;
  *used_s = 0;
  while (left > 0 && *remain > 0) {
    double size = (double)l->max_chunk;
    if (left < ax_linear_cost_at(&l->f, size))
      size = floor((left - l->f.latency_s) * l->f.bytes_per_s);
    if (size > (double)*remain) size = (double)*remain;
    if (size <= 0 || (size < (double)l->min_chunk && size < (double)*remain)) break;
    double cost = ax_linear_cost_at(&l->f, size);
    if (sizes && k < cap) sizes[k] = (size_t)size;
    else if (sizes) break;
    k++;
    *remain -= (size_t)size;
    left -= cost;
    *used_s += cost;
  }
  return k;
}
