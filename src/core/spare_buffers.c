/* spare_buffers.c — the keep of large scratch buffers; see spare_buffers.h. */
#include "spare_buffers.h"

#include <pthread.h>
#include <stdlib.h>

#include "error.h"

/* Buffers kept at once: a collective's window of slots is one buffer, and a step has at most a
 * few operations in flight per communicator. */
enum { KEEP = 16 };

static struct {
  void *buf;
  size_t capacity;
} g_keep[KEEP];
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

void *ax_spare_take(size_t bytes, size_t *capacity) {
  if (bytes == 0) bytes = 1;
  pthread_mutex_lock(&g_lock);
  int best = -1;
  for (int i = 0; i < KEEP; i++)
    if (g_keep[i].buf && g_keep[i].capacity >= bytes &&
        (best < 0 || g_keep[i].capacity < g_keep[best].capacity))
      best = i;
  void *buf = NULL;
  if (best >= 0) {
    buf = g_keep[best].buf;
    *capacity = g_keep[best].capacity;
    g_keep[best].buf = NULL;
  }
  pthread_mutex_unlock(&g_lock);
  if (buf) return buf;
  *capacity = bytes;
  return ax_malloc(bytes);
}

void ax_spare_give(void *buf, size_t capacity) {
  if (!buf) return;
  pthread_mutex_lock(&g_lock);
  int slot = -1; /* an empty place, else the smallest kept buffer if smaller than this one */
  for (int i = 0; i < KEEP && (slot < 0 || g_keep[slot].buf); i++)
    if (!g_keep[i].buf || (g_keep[i].capacity < capacity &&
                           (slot < 0 || g_keep[i].capacity < g_keep[slot].capacity)))
      slot = i;
  void *drop = buf;
  if (slot >= 0) {
    drop = g_keep[slot].buf;
    g_keep[slot].buf = buf;
    g_keep[slot].capacity = capacity;
  }
  pthread_mutex_unlock(&g_lock);
  free(drop);
}

int ax_spare_release_all(void) {
  int n = 0;
  pthread_mutex_lock(&g_lock);
  for (int i = 0; i < KEEP; i++)
    if (g_keep[i].buf) {
      free(g_keep[i].buf);
      g_keep[i].buf = NULL;
      n++;
    }
  pthread_mutex_unlock(&g_lock);
  return n;
}
