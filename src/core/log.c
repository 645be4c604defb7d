/* log.c — rank-aware printing; see log.h. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>

static int g_quiet;

void ax_log_set_quiet(int quiet) { g_quiet = quiet; }

static int is_root(void) { return ax_rank() <= 0; }

static void vlog(const char *fmt, va_list ap) {
  if (g_quiet || !is_root()) return;
  vfprintf(stdout, fmt, ap);
  fputc('\n', stdout);
  fflush(stdout);
}

void ax_log(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vlog(fmt, ap);
  va_end(ap);
}

void ax_log_result(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vlog(fmt, ap);
  va_end(ap);
}

void ax_log_all(const char *fmt, ...) {
  if (g_quiet) return;
  char line[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  /* One fprintf per line so lines from different ranks do not interleave mid-line. */
  fprintf(stdout, "[rank %d] %s\n", ax_rank() < 0 ? 0 : ax_rank(), line);
  fflush(stdout);
}

void ax_warn(const char *fmt, ...) {
  if (!is_root()) return;
  char line[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  fprintf(stderr, "axonn: warning: %s\n", line);
  fflush(stderr);
}

void ax_print_error(void) {
  fprintf(stderr, "axonn: error: %s\n", ax_error_message());
  fflush(stderr);
}
