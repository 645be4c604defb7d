/* replica_schedule.c — idle spans of a link and Algorithm 6.2's chunks; see
 * replica_schedule.h. */
#include "replica_schedule.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/error.h"

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

size_t ax_step_fill(const AxReplicaLink *l, const AxSpan *spans, int n, size_t bytes, int *chunks) {
  size_t remain = bytes;
  int k = 0;
  for (int i = 0; i + 1 < n && remain > 0; i++) {
    double used;
    k += ax_fill_span(l, l->mu * (spans[i].end_s - spans[i].start_s), &remain, NULL, 0, &used);
  }
  if (chunks) *chunks = k;
  return bytes - remain;
}

int ax_replica_interval(const AxReplicaLink *l, const AxSpan *spans, int n, size_t bytes,
                        int every) {
  if (every < 1) every = 1;
  size_t per_step = ax_step_fill(l, spans, n, SIZE_MAX, NULL), remain = bytes, steps = 0;
  if (per_step > 0 && remain > per_step) { /* the steps filled whole, before the last ones */
    steps = (remain - 1) / per_step;
    remain -= steps * per_step;
  }
  while (remain > 0) { /* the last steps: a checkpoint's last chunk may be under min_chunk */
    size_t placed = ax_step_fill(l, spans, n, remain, NULL);
    if (placed == 0) return 0;
    remain -= placed;
    steps++;
  }
  if (steps == 0) steps = 1;
  size_t k = (steps + (size_t)every - 1) / (size_t)every * (size_t)every; /* a multiple of every */
  return k > INT32_MAX ? 0 : (int)k;
}

/* ------------------------------------------------------------------ the profile */

int ax_span_profile_init(AxSpanProfile *p, int window, int cap) {
  memset(p, 0, sizeof *p);
  p->ring = ax_calloc((size_t)window * (size_t)cap, sizeof *p->ring);
  p->n = ax_calloc((size_t)window, sizeof *p->n);
  p->window = window;
  p->cap = cap;
  return p->ring && p->n ? AX_OK : AX_ERR;
}

void ax_span_profile_free(AxSpanProfile *p) {
  free(p->ring);
  free(p->n);
  memset(p, 0, sizeof *p);
}

int ax_span_profile_add(AxSpanProfile *p, const AxSpan *spans, int n) {
  if (n > p->cap) n = p->cap;
  int last = (p->next + p->window - 1) % p->window;
  int reshaped = p->steps > 0 && p->n[last] != n;
  if (reshaped) p->steps = 0; /* the step changed shape: profiled again from this one */
  memcpy(p->ring + (size_t)p->next * (size_t)p->cap, spans, (size_t)n * sizeof *spans);
  p->n[p->next] = n;
  p->next = (p->next + 1) % p->window;
  if (p->steps < p->window) p->steps++;
  return reshaped;
}

int ax_span_profile_min(const AxSpanProfile *p, AxSpan *out) {
  if (p->steps == 0) return 0;
  int newest = (p->next + p->window - 1) % p->window, n = p->n[newest];
  for (int g = 0; g < n; g++) {
    AxSpan m = p->ring[(size_t)newest * (size_t)p->cap + (size_t)g];
    double len = m.end_s - m.start_s;
    for (int s = 1; s < p->steps; s++) {
      int slot = (newest - s + p->window) % p->window;
      AxSpan x = p->ring[(size_t)slot * (size_t)p->cap + (size_t)g];
      if (x.end_s - x.start_s < len) len = x.end_s - x.start_s;
    }
    out[g] = (AxSpan){m.start_s, m.start_s + len};
  }
  return n;
}
