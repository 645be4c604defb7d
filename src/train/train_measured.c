/* train_measured.c — the start-up figures of the compression cost model as a list of records
 * (train_measured.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/error.h"
#include "train_measured.h"

int ax_measured_replaying(const AxMeasured *m) { return m->replay; }

static int append(AxMeasured *m, const void *p, size_t n) {
  if (m->n + n > m->cap) {
    size_t cap = m->cap ? m->cap : 1024;
    while (cap < m->n + n) cap *= 2;
    unsigned char *b = realloc(m->bytes, cap);
    if (!b) return AX_FAIL("out of memory keeping the measured costs (%zu bytes)", cap);
    m->bytes = b;
    m->cap = cap;
  }
  memcpy(m->bytes + m->n, p, n);
  m->n += n;
  return AX_OK;
}

int ax_measured_take(AxMeasured *m, void *p, size_t n) {
  uint64_t len = n;
  if (!m->replay) {
    AX_TRY(append(m, &len, sizeof len));
    return append(m, p, n);
  }
  if (m->pos + sizeof len <= m->n) memcpy(&len, m->bytes + m->pos, sizeof len);
  if (m->pos + sizeof len > m->n || len != n || m->pos + sizeof len + n > m->n)
    return AX_FAIL("the checkpoint's measured costs do not fit this run's configuration "
                   "(a record of %zu bytes where %zu were due); --compress-remeasure 1 "
                   "measures them again", m->pos + sizeof len > m->n ? (size_t)0 : (size_t)len,
                   n);
  memcpy(p, m->bytes + m->pos + sizeof len, n);
  m->pos += sizeof len + n;
  return AX_OK;
}

int ax_measured_replay(AxMeasured *m, const void *buf, size_t n) {
  ax_measured_free(m);
  AX_TRY(append(m, buf, n));
  m->replay = 1;
  return AX_OK;
}

int ax_measured_done(const AxMeasured *m) {
  if (!m->replay || m->pos == m->n) return AX_OK;
  return AX_FAIL("the checkpoint's measured costs do not fit this run's configuration (%zu of "
                 "%zu bytes left untaken); --compress-remeasure 1 measures them again",
                 m->n - m->pos, m->n);
}

void ax_measured_free(AxMeasured *m) {
  free(m->bytes);
  *m = (AxMeasured){0};
}
