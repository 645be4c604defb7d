/* memckpt_tree.c — the safety of a memory-checkpoint tree in shared memory (memckpt.h): the
 * directory every user of a node can write to. A tree is this user's (owned by the effective
 * user, no group or other write bit), holds only what axonn writes (the marker file, node-K
 * directories, their lock and slot-0..2, and regular files in the slots) and no symbolic link
 * anywhere; it is opened one component at a time relative to a checked directory descriptor,
 * never through a link. A live job holds each of its nodes' node-K/lock. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "memckpt_store.h"
#include "src/core/error.h"
#include "src/core/lockfile.h"

typedef enum { LEVEL_RUN, LEVEL_NODE, LEVEL_SLOT } Level;

static const char *const REFUSE_HINT =
    "remove it by hand if it is yours to remove, or choose another --run-name";

/* A directory this user alone may change. */
static int check_private_dir(int fd, const char *path) {
  struct stat sb;
  if (fstat(fd, &sb) != 0) return AX_FAIL("cannot stat %s: %s", path, strerror(errno));
  if (!S_ISDIR(sb.st_mode)) return AX_FAIL("%s is not a directory (%s)", path, REFUSE_HINT);
  if (sb.st_uid != geteuid())
    return AX_FAIL("%s belongs to user id %u, not to this user: not using it (%s)", path,
                   (unsigned)sb.st_uid, REFUSE_HINT);
  if (sb.st_mode & (S_IWGRP | S_IWOTH))
    return AX_FAIL("%s can be written by other users (mode %03o): not using it (%s)", path,
                   (unsigned)(sb.st_mode & 0777), REFUSE_HINT);
  return AX_OK;
}

/* Opens (with create, first makes, mode 0700) the directory `name` under parent, refusing a
 * link or anything not this user's private directory. */
static int open_dir_at(int parent, const char *name, const char *path, int create, int *fd) {
  *fd = -1;
  if (create && mkdirat(parent, name, 0700) != 0 && errno != EEXIST)
    return AX_FAIL("cannot create %s: %s", path, strerror(errno));
  *fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (*fd < 0) {
    int e = errno;
    if (e == ELOOP || e == ENOTDIR)
      return AX_FAIL("%s is a symbolic link or not a directory: not using it (%s)", path,
                     REFUSE_HINT);
    return AX_FAIL("cannot open %s: %s", path, strerror(e));
  }
  int rc = check_private_dir(*fd, path);
  if (rc != AX_OK) {
    close(*fd);
    *fd = -1;
  }
  return rc;
}

/* "PREFIX-N" with N in [0, max]. */
static int numbered(const char *name, const char *prefix, long max) {
  size_t n = strlen(prefix);
  if (strncmp(name, prefix, n) || !name[n]) return 0;
  char *end;
  long v = strtol(name + n, &end, 10);
  return !*end && v >= 0 && v <= max && name[n] >= '0' && name[n] <= '9';
}

/* A file name a slot may hold: stage and state files, the manifest, temporaries of them. */
static int slot_file_name(const char *name) {
  if (!name[0]) return 0;
  for (const char *p = name; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
          *p == '.' || *p == '_' || *p == '-'))
      return 0;
  return 1;
}

/* Whether entry `name` (of type mode) belongs at this level; *is_dir: a directory to descend. */
static int expected(Level level, const char *name, mode_t mode, int *is_dir) {
  *is_dir = S_ISDIR(mode);
  switch (level) {
  case LEVEL_RUN:
    return S_ISDIR(mode) ? numbered(name, "node-", 1 << 30)
                         : S_ISREG(mode) && !strcmp(name, AX_MEMCKPT_MARKER);
  case LEVEL_NODE:
    return S_ISDIR(mode) ? numbered(name, "slot-", AX_MEMCKPT_SLOTS - 1)
                         : S_ISREG(mode) && !strcmp(name, AX_MEMCKPT_LOCK);
  case LEVEL_SLOT:
    return S_ISREG(mode) && slot_file_name(name);
  }
  return 0;
}

static int check_level(int fd, const char *path, Level level, int deep);

/* A stream over the directory fd from its first entry (fd itself stays open: a duplicate
 * shares its position, so the stream is rewound). */
static int read_dir(int fd, const char *path, DIR **d) {
  int copy = dup(fd);
  *d = copy >= 0 ? fdopendir(copy) : NULL;
  if (!*d) {
    if (copy >= 0) close(copy);
    return AX_FAIL("cannot read %s: %s", path, strerror(errno));
  }
  rewinddir(*d);
  return AX_OK;
}

/* One entry of a directory being checked. */
static int check_entry(int fd, const char *path, Level level, int deep, const char *name) {
  char sub[AX_MEMCKPT_PATH + 300];
  snprintf(sub, sizeof sub, "%s/%s", path, name);
  struct stat sb;
  if (fstatat(fd, name, &sb, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return AX_OK; /* gone meanwhile (a temporary renamed) */
    return AX_FAIL("cannot stat %s: %s", sub, strerror(errno));
  }
  int is_dir;
  if (S_ISLNK(sb.st_mode))
    return AX_FAIL("%s is a symbolic link, which axonn never writes: not using the tree (%s)",
                   sub, REFUSE_HINT);
  if (!expected(level, name, sb.st_mode, &is_dir))
    return AX_FAIL("%s is not something axonn writes in a memory-checkpoint tree: not using "
                   "the tree (%s)", sub, REFUSE_HINT);
  if (!is_dir) {
    if (sb.st_uid != geteuid())
      return AX_FAIL("%s belongs to user id %u, not to this user: not using the tree (%s)", sub,
                     (unsigned)sb.st_uid, REFUSE_HINT);
    return AX_OK;
  }
  int child;
  AX_TRY(open_dir_at(fd, name, sub, 0, &child));
  int rc = deep ? check_level(child, sub, (Level)(level + 1), deep) : AX_OK;
  close(child);
  return rc;
}

/* Every entry of the directory fd is one axonn writes at this level (deep: all the way down). */
static int check_level(int fd, const char *path, Level level, int deep) {
  DIR *d;
  AX_TRY(read_dir(fd, path, &d));
  struct dirent *e;
  int rc = AX_OK;
  while (rc == AX_OK && (e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
      rc = check_entry(fd, path, level, deep, e->d_name);
  closedir(d);
  return rc;
}

/* The marker that says a directory is an axonn tree (made once; an existing one is kept). */
static int put_marker(int run_fd, const char *run_path) {
  int fd = openat(run_fd, AX_MEMCKPT_MARKER, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                  0600);
  if (fd < 0 && errno == EEXIST) return AX_OK; /* checked with the tree's entries */
  if (fd < 0)
    return AX_FAIL("cannot write %s/%s: %s", run_path, AX_MEMCKPT_MARKER, strerror(errno));
  static const char text[] = "axonn memory checkpoints (docs/memory-checkpoints.md)\n";
  int ok = write(fd, text, sizeof text - 1) == (ssize_t)(sizeof text - 1);
  int e = errno;
  close(fd);
  return ok ? AX_OK
            : AX_FAIL("cannot write %s/%s: %s", run_path, AX_MEMCKPT_MARKER, strerror(e));
}

/* The root (--memory-dir) as given: the user's own choice, links allowed. */
static int open_root(const char *root, int *fd) {
  *fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (*fd < 0) return AX_FAIL("--memory-dir %s is not a directory", root);
  return AX_OK;
}

static int lock_node(int node_fd, const char *node_path, int *lock_fd) {
  char shown[AX_MEMCKPT_PATH + 48], what[AX_MEMCKPT_PATH + 96];
  snprintf(shown, sizeof shown, "%s/%s", node_path, AX_MEMCKPT_LOCK);
  snprintf(what, sizeof what, "memory-checkpoint directory %s", node_path);
  return ax_lock_claim(node_fd, AX_MEMCKPT_LOCK, shown, what, "--run-name", 1, lock_fd);
}

/* The node's directory opened (made), checked and locked, then its slots. */
static int open_node_in(int run_fd, const char *run_path, int node, int *lock_fd) {
  char name[32], path[AX_MEMCKPT_PATH + 32];
  snprintf(name, sizeof name, "node-%d", node);
  snprintf(path, sizeof path, "%s/%s", run_path, name);
  int fd;
  AX_TRY(open_dir_at(run_fd, name, path, 1, &fd));
  int rc = lock_node(fd, path, lock_fd);
  for (int s = 0; s < AX_MEMCKPT_SLOTS && rc == AX_OK; s++) {
    char slot[16], slot_path[AX_MEMCKPT_PATH + 48];
    snprintf(slot, sizeof slot, "slot-%d", s);
    snprintf(slot_path, sizeof slot_path, "%s/%s", path, slot);
    int sfd;
    rc = open_dir_at(fd, slot, slot_path, 1, &sfd);
    if (rc == AX_OK) rc = check_level(sfd, slot_path, LEVEL_SLOT, 0);
    if (sfd >= 0) close(sfd);
  }
  if (rc == AX_OK) rc = check_level(fd, path, LEVEL_NODE, 0);
  if (rc != AX_OK) {
    ax_lock_release(*lock_fd);
    *lock_fd = -1;
  }
  close(fd);
  return rc;
}

int ax_memckpt_open_node(const char *root, const char *name, int node, int *lock_fd) {
  *lock_fd = -1;
  char path[AX_MEMCKPT_PATH], base[80];
  ax_memckpt_run_dir(root, name, path);
  snprintf(base, sizeof base, "axonn-%s", name);
  int root_fd, run_fd;
  AX_TRY(open_root(root, &root_fd));
  int rc = open_dir_at(root_fd, base, path, 1, &run_fd);
  close(root_fd);
  AX_TRY(rc);
  rc = check_level(run_fd, path, LEVEL_RUN, 0);
  if (rc == AX_OK) rc = put_marker(run_fd, path);
  if (rc == AX_OK) rc = open_node_in(run_fd, path, node, lock_fd);
  close(run_fd);
  return rc;
}

/* ------------------------------------------------------------------ a dead job's tree */

/* Takes every node's lock of the tree (held until ax_memckpt_release_tree): fails naming the
 * owner when a live job holds one. */
static int lock_all_nodes(int run_fd, const char *path, AxMemTree *tree) {
  DIR *d;
  AX_TRY(read_dir(run_fd, path, &d));
  struct dirent *e;
  int rc = AX_OK;
  while (rc == AX_OK && (e = readdir(d))) {
    if (!numbered(e->d_name, "node-", 1 << 30)) continue;
    char node_path[AX_MEMCKPT_PATH + 300], shown[AX_MEMCKPT_PATH + 320], owner[256];
    snprintf(node_path, sizeof node_path, "%s/%s", path, e->d_name);
    snprintf(shown, sizeof shown, "%s/%s", node_path, AX_MEMCKPT_LOCK);
    int node_fd, fd = -1;
    AxLockOutcome got = AX_LOCK_TAKEN;
    rc = open_dir_at(run_fd, e->d_name, node_path, 0, &node_fd);
    if (rc == AX_OK) {
      rc = ax_lock_take(node_fd, AX_MEMCKPT_LOCK, shown, 0, &fd, &got, owner, sizeof owner);
      close(node_fd);
    }
    if (rc == AX_OK && got == AX_LOCK_HELD)
      rc = AX_FAIL("%s is in use by a live job (%s): not removed", path, owner);
    if (rc == AX_OK && fd >= 0 && tree->n_locks == AX_MEMCKPT_MAX_LOCKS)
      rc = AX_FAIL("%s has more than %d node directories: not removed (remove it by hand)", path,
                   AX_MEMCKPT_MAX_LOCKS);
    if (rc == AX_OK && fd >= 0)
      tree->locks[tree->n_locks++] = fd; /* held until the tree is gone */
    else if (fd >= 0)
      ax_lock_release(fd);
  }
  closedir(d);
  return rc;
}

int ax_memckpt_claim_tree(const char *root, const char *name, AxMemTree *tree) {
  memset(tree, 0, sizeof *tree);
  char path[AX_MEMCKPT_PATH], base[80];
  ax_memckpt_run_dir(root, name, path);
  snprintf(base, sizeof base, "axonn-%s", name);
  int root_fd, run_fd;
  AX_TRY(open_root(root, &root_fd));
  struct stat sb;
  if (fstatat(root_fd, base, &sb, AT_SYMLINK_NOFOLLOW) != 0) {
    close(root_fd);
    tree->missing = 1;
    return AX_OK;
  }
  int rc = open_dir_at(root_fd, base, path, 0, &run_fd);
  close(root_fd);
  AX_TRY(rc);
  if (faccessat(run_fd, AX_MEMCKPT_MARKER, F_OK, AT_SYMLINK_NOFOLLOW) != 0)
    rc = AX_FAIL("%s has no %s marker: not an axonn memory-checkpoint tree (or one an "
                 "older axonn wrote): not removed", path, AX_MEMCKPT_MARKER);
  if (rc == AX_OK) rc = check_level(run_fd, path, LEVEL_RUN, 1);
  if (rc == AX_OK) rc = lock_all_nodes(run_fd, path, tree);
  close(run_fd);
  if (rc != AX_OK) ax_memckpt_release_tree(tree);
  return rc;
}

void ax_memckpt_release_tree(AxMemTree *tree) {
  for (int i = 0; i < tree->n_locks; i++) ax_lock_release(tree->locks[i]);
  tree->n_locks = 0;
}

int ax_memckpt_remove_run_dir(const char *root, const char *name) {
  char path[AX_MEMCKPT_PATH], marker[AX_MEMCKPT_PATH + 32];
  ax_memckpt_run_dir(root, name, path);
  DIR *d = opendir(path);
  if (!d) return AX_OK;
  struct dirent *e;
  int others = 0;
  while ((e = readdir(d)))
    others += strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
              strcmp(e->d_name, AX_MEMCKPT_MARKER);
  closedir(d);
  if (others) return AX_OK; /* another node of the job is still there */
  snprintf(marker, sizeof marker, "%s/%s", path, AX_MEMCKPT_MARKER);
  unlink(marker);
  if (rmdir(path) != 0 && errno != ENOENT && errno != ENOTEMPTY && errno != EEXIST)
    return AX_FAIL("cannot remove %s: %s", path, strerror(errno));
  return AX_OK;
}
