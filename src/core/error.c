/* error.c — the per-thread record of the last failure; see error.h. */
#include "error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { AX_ERROR_CAP = 1024 };

static _Thread_local char g_text[AX_ERROR_CAP];
static _Thread_local char g_full[AX_ERROR_CAP + 128];
static _Thread_local const char *g_file;
static _Thread_local int g_line;
static _Thread_local int g_pending;
static int g_rank = -1;

void ax_set_rank(int rank) { g_rank = rank; }
int ax_rank(void) { return g_rank; }

int ax_fail_at(const char *file, int line, const char *fmt, ...) {
  if (g_pending) return AX_ERR; /* keep the root cause */
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_text, sizeof g_text, fmt, ap);
  va_end(ap);
  g_file = file;
  g_line = line;
  g_pending = 1;
  return AX_ERR;
}

int ax_fail_forwarded(const char *message) {
  if (g_pending) return AX_ERR;
  snprintf(g_text, sizeof g_text, "%s", message);
  g_file = NULL;
  g_pending = 1;
  return AX_ERR;
}

int ax_error_context(const char *fmt, ...) {
  char prefix[AX_ERROR_CAP];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(prefix, sizeof prefix, fmt, ap);
  va_end(ap);
  if (!g_pending) return ax_fail_at("?", 0, "%s: unknown error", prefix);
  size_t plen = strlen(prefix), tlen = strlen(g_text);
  if (plen > AX_ERROR_CAP / 2) plen = AX_ERROR_CAP / 2;
  if (plen + 2 + tlen >= AX_ERROR_CAP) tlen = AX_ERROR_CAP - 1 - plen - 2;
  memmove(g_text + plen + 2, g_text, tlen);
  memcpy(g_text, prefix, plen);
  g_text[plen] = ':';
  g_text[plen + 1] = ' ';
  g_text[plen + 2 + tlen] = 0;
  return AX_ERR;
}

const char *ax_error_text(void) { return g_pending ? g_text : "no error"; }

const char *ax_error_message(void) {
  if (!g_pending) return "no error";
  if (!g_file) return g_text;
  if (g_rank >= 0)
    snprintf(g_full, sizeof g_full, "%s (%s:%d, rank %d)", g_text, g_file, g_line, g_rank);
  else
    snprintf(g_full, sizeof g_full, "%s (%s:%d)", g_text, g_file, g_line);
  return g_full;
}

int ax_error_pending(void) { return g_pending; }
void ax_error_clear(void) { g_pending = 0; }

void *ax_malloc_at(size_t bytes, const char *file, int line) {
  void *p = malloc(bytes ? bytes : 1);
  if (!p) ax_fail_at(file, line, "out of memory allocating %zu bytes", bytes);
  return p;
}

void *ax_calloc_at(size_t count, size_t size, const char *file, int line) {
  if (size && count > SIZE_MAX / size) {
    ax_fail_at(file, line, "allocation size overflow (%zu x %zu)", count, size);
    return NULL;
  }
  void *p = calloc(count ? count : 1, size ? size : 1);
  if (!p) ax_fail_at(file, line, "out of memory allocating %zu bytes", count * size);
  return p;
}
