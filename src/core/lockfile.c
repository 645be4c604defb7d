/* lockfile.c — a run's claim on a directory; see lockfile.h. */
#include "lockfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "log.h"

static void read_owner(int fd, char *owner, size_t cap) {
  ssize_t n = pread(fd, owner, cap - 1, 0);
  owner[n > 0 ? n : 0] = 0;
  owner[strcspn(owner, "\n")] = 0;
  if (!owner[0]) snprintf(owner, cap, "unknown");
}

static void write_owner(int fd, const char *shown) {
  char host[128] = "?", line[256];
  gethostname(host, sizeof host - 1);
  int n = snprintf(line, sizeof line, "pid %ld on %s\n", (long)getpid(), host);
  if (ftruncate(fd, 0) != 0 || pwrite(fd, line, (size_t)n, 0) != n)
    ax_warn("cannot record the owner in %s: %s", shown, strerror(errno));
}

static int open_lock(int dirfd, const char *name, const char *shown, int create, int *fd) {
  int flags = O_RDWR | O_NOFOLLOW | O_CLOEXEC | (create ? O_CREAT : 0);
  *fd = openat(dirfd, name, flags, 0600);
  if (*fd < 0 && errno == ENOENT && !create) return AX_OK;
  if (*fd < 0)
    return AX_FAIL("cannot open the lock %s: %s", shown,
                   errno == ELOOP ? "it is a symbolic link" : strerror(errno));
  struct stat sb;
  if (fstat(*fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    close(*fd);
    *fd = -1;
    return AX_FAIL("cannot use the lock %s: not a regular file", shown);
  }
  return AX_OK;
}

int ax_lock_take(int dirfd, const char *name, const char *shown, int create, int *fd,
                 AxLockOutcome *outcome, char *owner, size_t cap) {
  *outcome = AX_LOCK_TAKEN;
  if (owner && cap) owner[0] = 0;
  AX_TRY(open_lock(dirfd, name, shown, create, fd));
  if (*fd < 0) return AX_OK;
  struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
  if (fcntl(*fd, F_SETLK, &fl) == 0) {
    write_owner(*fd, shown);
    return AX_OK;
  }
  int e = errno;
  if ((e == EACCES || e == EAGAIN) && owner && cap) read_owner(*fd, owner, cap);
  *outcome = e == EACCES || e == EAGAIN ? AX_LOCK_HELD : AX_LOCK_NONE;
  close(*fd);
  *fd = -1;
  return AX_OK;
}

int ax_lock_claim(int dirfd, const char *name, const char *shown, const char *what,
                  const char *flag, int required, int *fd) {
  char owner[256];
  AxLockOutcome got;
  AX_TRY(ax_lock_take(dirfd, name, shown, 1, fd, &got, owner, sizeof owner));
  if (got == AX_LOCK_HELD)
    return AX_FAIL("%s is in use by another run (%s); give each run its own %s", what, owner,
                   flag);
  if (got == AX_LOCK_NONE && required)
    return AX_FAIL("cannot lock %s: the file system keeps no locks", shown);
  if (got == AX_LOCK_NONE)
    ax_warn("cannot lock %s: nothing stops two runs from sharing %s", shown, what);
  return AX_OK;
}

void ax_lock_release(int fd) {
  if (fd >= 0) close(fd); /* closing releases the lock */
}
