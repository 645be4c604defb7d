/* link_log.c — the ring of link uses; see link_log.h. Each entry is a seqlock: an appender
 * takes the next index with one fetch-add, marks the entry's sequence odd (being written),
 * fills it, then publishes sequence = 2 * (index + 1); a reader accepts an entry only when
 * its sequence is the one of the index it expects both before and after reading it. */
#include "link_log.h"

#include <stdatomic.h>
#include <string.h>

_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "the link log needs lock-free 64-bit atomics");

typedef struct {
  atomic_llong seq; /* 2 * (index + 1) once written; odd while written */
  atomic_llong start, end;
  atomic_llong cls;
} Entry;

typedef struct {
  atomic_llong head; /* uses appended so far */
  char pad[64 - sizeof(atomic_llong)];
  Entry e[AX_LINK_LOG_ENTRIES];
} Log;

size_t ax_link_log_bytes(void) { return (sizeof(Log) + 63) / 64 * 64; }

void ax_link_log_init(void *log) {
  memset(log, 0, sizeof(Log)); /* head 0, every entry's sequence 0: never written */
}

void ax_link_log_append(void *log, long long start_ns, long long end_ns, int cls) {
  Log *l = log;
  long long i = atomic_fetch_add(&l->head, 1);
  Entry *e = &l->e[i % AX_LINK_LOG_ENTRIES];
  atomic_store_explicit(&e->seq, 2 * i + 1, memory_order_relaxed);
  atomic_thread_fence(memory_order_release);
  atomic_store_explicit(&e->start, start_ns, memory_order_relaxed);
  atomic_store_explicit(&e->end, end_ns, memory_order_relaxed);
  atomic_store_explicit(&e->cls, cls, memory_order_relaxed);
  atomic_store_explicit(&e->seq, 2 * (i + 1), memory_order_release);
}

/* Entry i as it was written, or 0 when it is being written or no longer holds index i. */
static int read_entry(const Log *l, long long i, AxLinkUse *u) {
  const Entry *e = &l->e[i % AX_LINK_LOG_ENTRIES];
  long long want = 2 * (i + 1);
  if (atomic_load_explicit(&e->seq, memory_order_acquire) != want) return 0;
  u->start_ns = atomic_load_explicit(&e->start, memory_order_relaxed);
  u->end_ns = atomic_load_explicit(&e->end, memory_order_relaxed);
  u->cls = (int)atomic_load_explicit(&e->cls, memory_order_relaxed);
  atomic_thread_fence(memory_order_acquire);
  return atomic_load_explicit(&e->seq, memory_order_relaxed) == want;
}

int ax_link_log_read(const void *log, long long from_ns, long long to_ns, AxLinkUse *out,
                     int cap) {
  const Log *l = log;
  long long head = atomic_load(&l->head), first = head - AX_LINK_LOG_ENTRIES;
  int n = 0;
  for (long long i = first > 0 ? first : 0; i < head && n < cap; i++) {
    AxLinkUse u;
    if (read_entry(l, i, &u) && u.end_ns > from_ns && u.start_ns < to_ns) out[n++] = u;
  }
  return n;
}
