/* memckpt.c — the node-local storage of in-memory checkpoints; see memckpt.h. */
#include "memckpt_store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/io/checkpoint.h"
#include "src/core/error.h"
#include "src/core/fileio.h"

int ax_memckpt_check_name(const char *name) {
  size_t n = strlen(name);
  if (n < 1 || n > 64)
    return AX_FAIL("--run-name '%s': 1 to 64 characters, please", name);
  for (size_t i = 0; i < n; i++) {
    char c = name[i];
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
             c == '.' || c == '_' || c == '-';
    if (!ok || (i == 0 && c == '.'))
      return AX_FAIL("--run-name '%s': only letters, digits, '.', '_' and '-' (not leading '.')",
                     name);
  }
  return AX_OK;
}

const char *ax_memckpt_run_dir(const char *root, const char *name, char *buf) {
  snprintf(buf, AX_MEMCKPT_PATH, "%s/axonn-%s", root, name);
  return buf;
}

const char *ax_memckpt_node_dir(const char *root, const char *name, int node, char *buf) {
  snprintf(buf, AX_MEMCKPT_PATH, "%s/axonn-%s/node-%d", root, name, node);
  return buf;
}

const char *ax_memckpt_slot_dir(const char *root, const char *name, int node, int slot,
                                char *buf) {
  snprintf(buf, AX_MEMCKPT_PATH, "%s/axonn-%s/node-%d/slot-%d", root, name, node, slot);
  return buf;
}

int ax_memckpt_invalidate(const char *slot_dir) {
  char path[AX_MEMCKPT_PATH + 16];
  snprintf(path, sizeof path, "%s/manifest", slot_dir);
  if (unlink(path) == 0 || errno == ENOENT) return AX_OK;
  return AX_FAIL("cannot remove %s: %s", path, strerror(errno));
}

int ax_memckpt_empty(const char *slot_dir) {
  AX_TRY(ax_memckpt_invalidate(slot_dir));
  int fd = open(slot_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  if (!d) {
    if (fd >= 0) close(fd);
    return AX_FAIL("cannot open %s: %s", slot_dir, strerror(errno));
  }
  struct dirent *e;
  int rc = AX_OK;
  while ((e = readdir(d)) && rc == AX_OK) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    if (unlinkat(fd, e->d_name, 0) != 0 && errno != ENOENT) /* a link goes, not its target */
      rc = AX_FAIL("cannot remove %s/%s: %s", slot_dir, e->d_name, strerror(errno));
  }
  closedir(d);
  return rc;
}

void ax_memckpt_scan(const char *slot_dir, AxMemSlot *out) {
  memset(out, 0, sizeof *out);
  out->step = -1;
  AxCkptManifest man;
  if (ax_ckpt_load_manifest(slot_dir, 0, &man) != AX_OK) {
    ax_error_clear();
    return;
  }
  if (man.n_files <= AX_MEMCKPT_MAX_FILES) {
    out->step = man.step;
    out->n_files = man.n_files;
    out->have[man.n_files] = 1;
    for (int f = 0; f < man.n_files; f++) {
      out->have[f] = ax_ckpt_check_file(slot_dir, &man.files[f]) == AX_OK;
      ax_error_clear();
    }
  }
  ax_ckpt_manifest_free(&man);
}

int ax_memckpt_put_file(const char *slot_dir, const char *name, const void *data, size_t size) {
  char path[AX_MEMCKPT_PATH + 64];
  snprintf(path, sizeof path, "%s/%s", slot_dir, name);
  AxFile f;
  AX_TRY(ax_file_open_write(&f, path));
  int rc = ax_file_write(&f, data, size);
  if (rc == AX_OK) return ax_file_commit(&f);
  ax_file_abort(&f);
  return rc;
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb;
  (void)flag;
  (void)ftw;
  return remove(path) == 0 || errno == ENOENT ? 0 : -1;
}

int ax_memckpt_remove_tree(const char *path) {
  struct stat st;
  if (lstat(path, &st) != 0) return AX_OK;
  if (nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
    return AX_FAIL("cannot remove %s: %s", path, strerror(errno));
  return AX_OK;
}
