/* metrics_rows.c — a file of metrics rows (the CSV, the JSON lines) opened for a run: a new
 * run creates it; a resumed run keeps what an earlier run wrote up to the checkpoint's step
 * and appends after it; see metrics.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "metrics.h"
#include "src/core/error.h"
#include "src/core/fileio.h"

static int write_failed(const AxRowFile *r, int err) {
  return AX_FAIL("cannot write metrics file %s: %s", r->path, strerror(err ? err : EIO));
}

int ax_row_file_flush(const AxRowFile *r, int printed) {
  errno = 0;
  if (printed < 0 || ferror(r->f) || fflush(r->f) != 0) return write_failed(r, errno);
  return AX_OK;
}

static int open_new(AxRowFile *r, const char *header) {
  r->f = fopen(r->path, "w");
  r->fresh = 1;
  if (!r->f) return AX_FAIL("cannot create metrics file %s: %s", r->path, strerror(errno));
  return ax_row_file_flush(r, header ? fprintf(r->f, "%s\n", header) : 0);
}

/* The step a row starts with, after the prefix; -1 when the line is no row. */
static long row_step(const char *line, size_t len, const char *prefix) {
  size_t p = strlen(prefix);
  if (len <= p || strncmp(line, prefix, p) != 0) return -1;
  char *end;
  long step = strtol(line + p, &end, 10);
  return end == line + p || step < 0 || (*end != ',' && *end != '}') ? -1 : step;
}

/* The text to keep of an earlier run's file: its header (checked) and its rows up to `step`
 * (a last line without its newline, cut off by a crash, is dropped). */
static int kept_text(const AxRowFile *r, const char *text, size_t n, const char *header,
                     const char *prefix, int step, size_t *keep_out, char *keep) {
  size_t keep_n = 0, line_no = 0;
  for (size_t at = 0; at < n;) {
    const char *nl = memchr(text + at, '\n', n - at);
    if (!nl) break;
    size_t len = (size_t)(nl - (text + at));
    line_no++;
    if (line_no == 1 && header) {
      if (len != strlen(header) || strncmp(text + at, header, len) != 0)
        return AX_FAIL("cannot append to metrics file %s: its first line is not the header %s",
                       r->path, header);
    } else {
      long s = row_step(text + at, len, prefix);
      if (s < 0)
        return AX_FAIL("cannot append to metrics file %s: line %zu is not a row of axonn's "
                       "metrics", r->path, line_no);
      if (s > step) break; /* rows are in step order: the rest came after the checkpoint */
    }
    memcpy(keep + keep_n, text + at, len + 1);
    keep_n += len + 1;
    at += len + 1;
  }
  *keep_out = keep_n;
  return AX_OK;
}

/* Rewrites the file with what is kept (atomically), then opens it for appending. */
static int reopen_trimmed(AxRowFile *r, const char *header, const char *prefix, int step) {
  unsigned char *text = NULL;
  size_t n = 0, keep_n = 0;
  AX_TRY(ax_file_read_all(r->path, &text, &n));
  char *keep = malloc(n + 1);
  int rc = keep ? kept_text(r, (const char *)text, n, header, prefix, step, &keep_n, keep)
                : AX_FAIL("out of memory reading %s", r->path);
  free(text);
  if (rc == AX_OK && keep_n == 0 && header) { /* empty: start it as new */
    free(keep);
    return open_new(r, header);
  }
  AxFile f;
  if (rc == AX_OK) rc = ax_file_open_write(&f, r->path);
  if (rc == AX_OK && ax_file_write(&f, keep, keep_n) != AX_OK) {
    ax_file_abort(&f);
    rc = AX_ERR;
  }
  if (rc == AX_OK) rc = ax_file_commit(&f);
  free(keep);
  AX_TRY(rc);
  r->f = fopen(r->path, "a");
  if (!r->f) return AX_FAIL("cannot append to metrics file %s: %s", r->path, strerror(errno));
  return AX_OK;
}

int ax_row_file_open(AxRowFile *r, const char *path, const char *header, const char *step_prefix,
                     int resume_step) {
  memset(r, 0, sizeof *r);
  if (!path) return AX_OK;
  r->path = path;
  struct stat sb;
  int regular = stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
  if (resume_step < 0 || !regular) return open_new(r, header);
  return reopen_trimmed(r, header, step_prefix, resume_step);
}

int ax_row_file_close(AxRowFile *r) {
  if (!r->f) return AX_OK;
  errno = 0;
  int bad = ferror(r->f), closed = fclose(r->f);
  r->f = NULL;
  return bad || closed != 0 ? write_failed(r, errno) : AX_OK;
}
