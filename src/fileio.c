/* fileio.c — checked reads and atomic writes; see fileio.h. */
#include "fileio.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"

static int set_path(AxFile *f, const char *path) {
  memset(f, 0, sizeof *f);
  if (strlen(path) >= sizeof f->path) return AX_FAIL("file name too long: %.64s...", path);
  strcpy(f->path, path);
  return AX_OK;
}

int ax_file_open_read(AxFile *f, const char *path) {
  AX_TRY(set_path(f, path));
  f->f = fopen(path, "rb");
  if (!f->f) return AX_FAIL("cannot open %s: %s", path, strerror(errno));
  if (fseeko(f->f, 0, SEEK_END) != 0 || (f->size = ftello(f->f)) < 0 ||
      fseeko(f->f, 0, SEEK_SET) != 0) {
    int e = errno;
    fclose(f->f);
    f->f = NULL;
    return AX_FAIL("cannot determine the size of %s: %s", path, strerror(e));
  }
  return AX_OK;
}

int ax_file_read(AxFile *f, void *buf, size_t bytes, const char *what) {
  size_t got = fread(buf, 1, bytes, f->f);
  if (got != bytes) {
    if (ferror(f->f)) return AX_FAIL("%s: read error in %s: %s", f->path, what, strerror(errno));
    return AX_FAIL("%s: truncated: %s needs %zu bytes at offset %lld, only %zu remain", f->path,
                   what, bytes, f->pos, got);
  }
  f->pos += (long long)bytes;
  return AX_OK;
}

int ax_file_seek(AxFile *f, long long offset) {
  if (fseeko(f->f, (off_t)offset, SEEK_SET) != 0)
    return AX_FAIL("%s: cannot seek to %lld: %s", f->path, offset, strerror(errno));
  f->pos = offset;
  return AX_OK;
}

void ax_file_close(AxFile *f) {
  if (f->f) fclose(f->f);
  f->f = NULL;
}

int ax_file_read_all(const char *path, unsigned char **data, size_t *n) {
  AxFile f;
  *data = NULL;
  *n = 0;
  AX_TRY(ax_file_open_read(&f, path));
  size_t size = (size_t)f.size;
  unsigned char *buf = ax_malloc(size + 1);
  int rc = buf ? ax_file_read(&f, buf, size, "the whole file") : AX_ERR;
  ax_file_close(&f);
  if (rc != AX_OK) {
    free(buf);
    return AX_ERR;
  }
  *data = buf;
  *n = size;
  return AX_OK;
}

int ax_file_open_write(AxFile *f, const char *path) {
  AX_TRY(set_path(f, path));
  snprintf(f->tmp, sizeof f->tmp, "%s.tmp.%ld", path, (long)getpid());
  f->f = fopen(f->tmp, "wb");
  if (!f->f) return AX_FAIL("cannot create %s: %s", f->tmp, strerror(errno));
  return AX_OK;
}

int ax_file_write(AxFile *f, const void *buf, size_t bytes) {
  if (fwrite(buf, 1, bytes, f->f) != bytes)
    return AX_FAIL("cannot write %s: %s", f->tmp, strerror(errno));
  f->pos += (long long)bytes;
  return AX_OK;
}

int ax_file_commit(AxFile *f) {
  if (fflush(f->f) != 0 || fsync(fileno(f->f)) != 0) {
    int e = errno;
    ax_file_abort(f);
    return AX_FAIL("cannot flush %s: %s", f->path, strerror(e));
  }
  fclose(f->f);
  f->f = NULL;
  if (rename(f->tmp, f->path) != 0) {
    int e = errno;
    unlink(f->tmp);
    return AX_FAIL("cannot rename %s to %s: %s", f->tmp, f->path, strerror(e));
  }
  return AX_OK;
}

void ax_file_abort(AxFile *f) {
  if (f->f) fclose(f->f);
  f->f = NULL;
  if (f->tmp[0]) unlink(f->tmp);
}
