/* lockfile.h — a run's claim on a directory: an fcntl write lock on a file in it that records
 * "pid P on HOST". The kernel drops the lock when its owner exits or is killed, so a dead
 * run's lock never blocks a resume. File checkpoints hold DIR/lock (src/io/checkpoint.h) and
 * memory checkpoints each node's node-K/lock (src/memckpt/memckpt_store.h). The lock file is opened
 * relative to a directory descriptor and never through a symbolic link. */
#ifndef AX_LOCKFILE_H
#define AX_LOCKFILE_H

#include <stddef.h>

typedef enum {
  AX_LOCK_TAKEN, /* this process holds it now (*fd >= 0), or, without create, there is none */
  AX_LOCK_HELD,  /* another live process holds it: owner names it */
  AX_LOCK_NONE,  /* the file system keeps no locks (*fd = -1) */
} AxLockOutcome;

/* Takes the lock file `name` in the directory `dirfd` (AT_FDCWD: the working directory);
 * `shown` is the path used in messages. With create, a missing file is made (mode 0600);
 * without, a missing file is TAKEN with *fd = -1 (nothing to hold). Fails (AX_ERR) only when
 * the file cannot be opened: a link, not a regular file, or an I/O error. */
int ax_lock_take(int dirfd, const char *name, const char *shown, int create, int *fd,
                 AxLockOutcome *outcome, char *owner, size_t cap);
/* A run's claim: takes the lock, and fails with "WHAT is in use by another run (pid P on
 * HOST); give each run its own FLAG" when a live run holds it. Where the file system keeps no
 * locks: a warning when !required, else a failure. */
int ax_lock_claim(int dirfd, const char *name, const char *shown, const char *what,
                  const char *flag, int required, int *fd);
/* Releases a lock (fd -1: none). */
void ax_lock_release(int fd);

#endif
