/* fileio.c — checked reads and atomic writes; see fileio.h. */
#include "fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"

enum { MAX_LINK_HOPS = 40, TMP_BASE_MAX = 160 };

static int set_path(char *dst, const char *path) {
  if (strlen(path) >= PATH_MAX) return AX_FAIL("file name too long: %.64s...", path);
  strcpy(dst, path);
  return AX_OK;
}

int ax_file_open_read(AxFile *f, const char *path) {
  memset(f, 0, sizeof *f);
  AX_TRY(set_path(f->path, path));
  f->f = fopen(path, "rb");
  if (!f->f) return AX_FAIL("cannot open %s: %s", path, strerror(errno));
  struct stat sb;
  if (fstat(fileno(f->f), &sb) == 0 && S_ISDIR(sb.st_mode)) {
    ax_file_close(f);
    return AX_FAIL("cannot read %s: it is a directory", path);
  }
  if (fseeko(f->f, 0, SEEK_END) != 0 || (f->size = ftello(f->f)) < 0 ||
      fseeko(f->f, 0, SEEK_SET) != 0) {
    int e = errno;
    ax_file_close(f);
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

/* ------------------------------------------------------------------ writing */

/* dst = the directory part of path ("." when none), with a trailing '/'. */
static void dir_of(const char *path, char *dst) {
  const char *slash = strrchr(path, '/');
  size_t n = slash ? (size_t)(slash - path) + 1 : 0;
  if (n)
    memcpy(dst, path, n);
  else
    dst[n++] = '.', dst[n++] = '/';
  dst[n] = 0;
}

/* Follows symlinks from path to the file a write should change (which may not exist yet). */
static int resolve_target(const char *path, char *dest, struct stat *sb, int *exists) {
  char link[PATH_MAX], next[PATH_MAX];
  AX_TRY(set_path(dest, path));
  for (int hop = 0; hop < MAX_LINK_HOPS; hop++) {
    if (lstat(dest, sb) != 0) {
      *exists = 0;
      if (errno == ENOENT) return AX_OK;
      return AX_FAIL("cannot write %s: %s", path, strerror(errno));
    }
    *exists = 1;
    if (!S_ISLNK(sb->st_mode)) return AX_OK;
    ssize_t n = readlink(dest, link, sizeof link - 1);
    if (n < 0) return AX_FAIL("cannot read the symlink %s: %s", dest, strerror(errno));
    link[n] = 0;
    if (link[0] == '/') {
      next[0] = 0;
    } else {
      dir_of(dest, next);
    }
    if (strlen(next) + (size_t)n >= PATH_MAX) return AX_FAIL("cannot write %s: path too long", path);
    strcat(next, link);
    strcpy(dest, next);
  }
  return AX_FAIL("cannot write %s: too many levels of symbolic links", path);
}

/* Refuses what a write must not replace; *direct = 1 for a character device. */
static int check_kind(const char *path, const struct stat *sb, int exists, int *direct) {
  *direct = 0;
  if (!exists || S_ISREG(sb->st_mode)) return AX_OK;
  if (S_ISDIR(sb->st_mode)) return AX_FAIL("cannot write %s: it is a directory", path);
  if (S_ISCHR(sb->st_mode)) {
    *direct = 1;
    return AX_OK;
  }
  return AX_FAIL("cannot write %s: not a regular file (a %s)", path,
                 S_ISFIFO(sb->st_mode) ? "FIFO" : S_ISSOCK(sb->st_mode) ? "socket"
                                                                       : "block device");
}

/* DIR/.BASE.tmp.PID next to the target: a rename within one directory is atomic. */
static int temp_name(const char *dest, char *tmp) {
  const char *slash = strrchr(dest, '/'), *base = slash ? slash + 1 : dest;
  char dir[PATH_MAX];
  dir_of(dest, dir);
  int n = snprintf(tmp, PATH_MAX, "%s.%.*s.tmp.%ld", dir, TMP_BASE_MAX, base, (long)getpid());
  if (n < 0 || n >= PATH_MAX) return AX_FAIL("cannot write %s: path too long", dest);
  return AX_OK;
}

static int open_temp(AxFile *f) {
  AX_TRY(temp_name(f->dest, f->tmp));
  unlink(f->tmp); /* left by a killed writer of the same pid */
  int fd = open(f->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) {
    int e = errno;
    f->tmp[0] = 0;
    return AX_FAIL("cannot write %s: %s", f->path, strerror(e));
  }
  if (!(f->f = fdopen(fd, "wb"))) {
    close(fd);
    unlink(f->tmp);
    f->tmp[0] = 0;
    return AX_FAIL("cannot open %s: %s", f->path, strerror(errno));
  }
  return AX_OK;
}

/* A writer's start: f cleared, its path and final target set; *direct for a device. */
static int open_target(AxFile *f, const char *path, int *direct) {
  memset(f, 0, sizeof *f);
  AX_TRY(set_path(f->path, path));
  struct stat sb;
  int exists = 0;
  AX_TRY(resolve_target(path, f->dest, &sb, &exists));
  return check_kind(path, &sb, exists, direct);
}

int ax_file_open_write(AxFile *f, const char *path) {
  int direct;
  AX_TRY(open_target(f, path, &direct));
  if (!direct) return open_temp(f);
  if (!(f->f = fopen(f->dest, "wb"))) return AX_FAIL("cannot open %s: %s", path, strerror(errno));
  return AX_OK;
}

int ax_file_write(AxFile *f, const void *buf, size_t bytes) {
  if (fwrite(buf, 1, bytes, f->f) != bytes)
    return AX_FAIL("cannot write %s: %s", f->path, strerror(errno));
  f->pos += (long long)bytes;
  return AX_OK;
}

/* fflush, fsync (files only: a device may not support it) and fclose, every one checked. */
static int flush_and_close(AxFile *f) {
  int e = 0;
  int synced = f->tmp[0] != 0;
  if (fflush(f->f) != 0 || (synced && fsync(fileno(f->f)) != 0))
    e = errno;
  if (fclose(f->f) != 0 && !e) e = errno;
  f->f = NULL;
  if (e) return AX_FAIL("cannot write %s: %s", f->path, strerror(e));
  return AX_OK;
}

int ax_file_commit(AxFile *f) {
  if (flush_and_close(f) != AX_OK) {
    ax_file_abort(f);
    return AX_ERR;
  }
  if (!f->tmp[0]) return AX_OK;
  if (rename(f->tmp, f->dest) != 0) {
    int e = errno;
    ax_file_abort(f);
    return AX_FAIL("cannot rename %s to %s: %s", f->tmp, f->dest, strerror(e));
  }
  f->tmp[0] = 0;
  return AX_OK;
}

void ax_file_abort(AxFile *f) {
  if (f->f) fclose(f->f);
  f->f = NULL;
  if (f->tmp[0]) unlink(f->tmp);
  f->tmp[0] = 0;
}

/* What the real write would meet first, met now: a write of nothing to a device (/dev/full
 * refuses even that; a terminal shows nothing) or of one byte to the temporary file (a full
 * file system refuses it). */
static int probe_write(int fd, size_t bytes, const char *path) {
  if (write(fd, "", bytes) < 0) return AX_FAIL("cannot write %s: %s", path, strerror(errno));
  return AX_OK;
}

int ax_file_check_writable(const char *path) {
  AxFile f;
  AX_TRY(ax_file_open_write(&f, path));
  int rc = probe_write(fileno(f.f), f.tmp[0] ? 1 : 0, path);
  ax_file_abort(&f);
  return rc;
}

int ax_file_append(const char *path, const void *text, size_t len) {
  FILE *f = fopen(path, "ab");
  if (!f) return AX_FAIL("cannot open %s for appending: %s", path, strerror(errno));
  int e = fwrite(text, 1, len, f) != len || fflush(f) != 0 ? errno : 0;
  if (fclose(f) != 0 && !e) e = errno;
  if (e) return AX_FAIL("cannot write %s: %s", path, strerror(e));
  return AX_OK;
}

int ax_file_check_appendable(const char *path) {
  struct stat sb;
  if (stat(path, &sb) != 0) return ax_file_check_writable(path); /* would be created */
  if (S_ISDIR(sb.st_mode)) return AX_FAIL("cannot write %s: it is a directory", path);
  if (access(path, W_OK) != 0) return AX_FAIL("cannot write %s: %s", path, strerror(errno));
  if (!S_ISCHR(sb.st_mode)) return AX_OK;
  int fd = open(path, O_WRONLY | O_APPEND | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return AX_FAIL("cannot write %s: %s", path, strerror(errno));
  int rc = probe_write(fd, 0, path);
  close(fd);
  return rc;
}

/* ------------------------------------------------------------------ mappings */

static int map_fd(int fd, const char *path, size_t size, int prot, AxFileMap *m) {
  m->data = NULL;
  m->size = size;
  if (size == 0) return AX_OK;
  void *p = mmap(NULL, size, prot, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return AX_FAIL("cannot map %s (%zu bytes): %s", path, size, strerror(errno));
  m->data = p;
  return AX_OK;
}

int ax_file_map_read(const char *path, AxFileMap *m) {
  *m = (AxFileMap){0};
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return AX_FAIL("cannot open %s: %s", path, strerror(errno));
  struct stat sb;
  int rc = fstat(fd, &sb) != 0    ? AX_FAIL("cannot stat %s: %s", path, strerror(errno))
           : !S_ISREG(sb.st_mode) ? AX_FAIL("cannot map %s: not a regular file", path)
                                  : map_fd(fd, path, (size_t)sb.st_size, PROT_READ, m);
  close(fd);
  return rc;
}

/* Opens path for a writable mapping, never through a symbolic link; *made: it was created. */
static int open_map_target(const char *path, int *fd, int *made) {
  *made = 0;
  *fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (*fd >= 0) *made = 1;
  else if (errno == EEXIST) *fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
  if (*fd < 0)
    return AX_FAIL("cannot write %s: %s", path,
                   errno == ELOOP ? "it is a symbolic link" : strerror(errno));
  struct stat sb;
  if (fstat(*fd, &sb) == 0 && S_ISREG(sb.st_mode)) return AX_OK;
  close(*fd);
  return AX_FAIL("cannot write %s: not a regular file", path);
}

int ax_file_map_write(const char *path, size_t size, AxFileMap *m) {
  *m = (AxFileMap){0};
  int fd, made;
  AX_TRY(open_map_target(path, &fd, &made));
  /* the blocks reserved now: a full file system is this error, not a SIGBUS on a store */
  int e = ftruncate(fd, (off_t)size) != 0 ? errno : size ? posix_fallocate(fd, 0, (off_t)size) : 0;
  int rc = e ? AX_FAIL("cannot size %s to %zu bytes: %s", path, size, strerror(e))
             : map_fd(fd, path, size, PROT_READ | PROT_WRITE, m);
  close(fd);
  if (rc != AX_OK && made) unlink(path); /* a failed write leaves no empty file behind */
  return rc;
}

void ax_file_unmap(AxFileMap *m) {
  if (m->data) munmap(m->data, m->size);
  *m = (AxFileMap){0};
}
