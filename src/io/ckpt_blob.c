/* ckpt_blob.c — per-rank state files of a checkpoint; see ckpt_blob.h. */
#include "ckpt_blob.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "src/core/crc32.h"
#include "src/core/error.h"
#include "src/core/fileio.h"

static const char MAGIC[] = "AXBLOB1\n";

static void blob_path(char *path, size_t cap, const char *step_dir, const char *name) {
  snprintf(path, cap, "%s/%s", step_dir, name);
}

/* The header: magic, the label and its newline, the payload size. */
static size_t header(char *buf, size_t cap, const char *label, size_t bytes) {
  size_t n = (size_t)snprintf(buf, cap, "%s%s\n", MAGIC, label);
  uint64_t b = bytes;
  for (int i = 0; i < 8; i++) buf[n + (size_t)i] = (char)(b >> (8 * i) & 0xff);
  return n + 8;
}

int ax_ckpt_blob_write(const char *step_dir, const char *name, const char *label,
                       const void *data, size_t bytes, AxCkptFile *info) {
  if (strlen(label) >= AX_BLOB_LABEL_MAX || strchr(label, '\n'))
    return AX_FAIL("checkpoint blob label too long or not one line: %.40s...", label);
  char path[1200], head[AX_BLOB_LABEL_MAX + 32];
  blob_path(path, sizeof path, step_dir, name);
  size_t hn = header(head, sizeof head, label, bytes);
  uint32_t crc = ax_crc32(ax_crc32(0, head, hn), data, bytes);
  unsigned char tail[4] = {(unsigned char)crc, (unsigned char)(crc >> 8),
                           (unsigned char)(crc >> 16), (unsigned char)(crc >> 24)};
  AxFile f;
  AX_TRY(ax_file_open_write(&f, path));
  int rc = ax_file_write(&f, head, hn);
  if (rc == AX_OK && bytes) rc = ax_file_write(&f, data, bytes);
  if (rc == AX_OK) rc = ax_file_write(&f, tail, sizeof tail);
  if (rc != AX_OK) {
    ax_file_abort(&f);
    return rc;
  }
  if (info) {
    *info = (AxCkptFile){.bytes = hn + bytes, .crc = crc};
    snprintf(info->name, sizeof info->name, "%s", name);
  }
  return ax_file_commit(&f);
}

/* Checks the file's framing and CRC; *label_end points past the label's newline. */
static int check_frame(const char *path, const unsigned char *d, size_t n, size_t *label_end) {
  size_t m = sizeof MAGIC - 1;
  if (n < m + 1 + 8 + 4 || memcmp(d, MAGIC, m) != 0)
    return AX_FAIL("%s: not a checkpoint state file (bad magic or too short)", path);
  const unsigned char *nl = memchr(d + m, '\n', n - m);
  if (!nl || (size_t)(nl - d) + 1 + 8 + 4 > n)
    return AX_FAIL("%s: damaged header", path);
  *label_end = (size_t)(nl - d) + 1;
  uint32_t want = (uint32_t)d[n - 4] | (uint32_t)d[n - 3] << 8 | (uint32_t)d[n - 2] << 16 |
                  (uint32_t)d[n - 1] << 24;
  if (ax_crc32(0, d, n - 4) != want) return AX_FAIL("%s: CRC mismatch (damaged file)", path);
  return AX_OK;
}

static int read_payload(const char *path, const unsigned char *d, size_t n, const char *label,
                        void *data, size_t bytes, int *same_label) {
  size_t label_end = 0;
  AX_TRY(check_frame(path, d, n, &label_end));
  size_t m = sizeof MAGIC - 1, len = label_end - 1 - m;
  *same_label = len == strlen(label) && memcmp(d + m, label, len) == 0;
  if (!*same_label) return AX_OK;
  uint64_t stored = 0;
  for (int i = 0; i < 8; i++) stored |= (uint64_t)d[label_end + (size_t)i] << (8 * i);
  if (stored != bytes || label_end + 8 + bytes + 4 != n)
    return AX_FAIL("%s: holds %llu bytes of state, this run needs %zu", path,
                   (unsigned long long)stored, bytes);
  if (bytes) memcpy(data, d + label_end + 8, bytes);
  return AX_OK;
}

int ax_ckpt_blob_read(const char *step_dir, const char *name, const char *label, void *data,
                      size_t bytes, int *found, int *same_label) {
  char path[1200];
  blob_path(path, sizeof path, step_dir, name);
  *found = *same_label = 0;
  struct stat sb;
  if (stat(path, &sb) != 0 && errno == ENOENT) return AX_OK;
  *found = 1;
  unsigned char *d;
  size_t n;
  AX_TRY(ax_file_read_all(path, &d, &n));
  int rc = read_payload(path, d, n, label, data, bytes, same_label);
  free(d);
  return rc;
}

int ax_ckpt_blob_label(const char *step_dir, const char *name, char *label, size_t cap) {
  char path[1200];
  blob_path(path, sizeof path, step_dir, name);
  unsigned char *d;
  size_t n, label_end = 0, m = sizeof MAGIC - 1;
  AX_TRY(ax_file_read_all(path, &d, &n));
  int rc = check_frame(path, d, n, &label_end);
  if (rc == AX_OK) snprintf(label, cap, "%.*s", (int)(label_end - 1 - m), (const char *)d + m);
  free(d);
  return rc;
}
