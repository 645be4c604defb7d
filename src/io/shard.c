/* shard.c — llm.c token shards; see shard.h. */
#include "shard.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/core/error.h"
#include "src/core/fileio.h"

enum { HEADER_BYTES = 256 * 4 };

static int check_header(const char *path, const int32_t *h, size_t size) {
  if (h[0] != AX_SHARD_MAGIC)
    return AX_FAIL("%s: bad magic %d (expected %d): not an llm.c token shard", path, h[0],
                   AX_SHARD_MAGIC);
  if (h[1] != AX_SHARD_VERSION)
    return AX_FAIL("%s: token shard version %d is not supported (expected %d)", path, h[1],
                   AX_SHARD_VERSION);
  if (h[2] < 0) return AX_FAIL("%s: negative token count %d", path, h[2]);
  size_t expect = HEADER_BYTES + (size_t)h[2] * 2;
  if (size != expect)
    return AX_FAIL("%s: size mismatch: the header says %d tokens (%zu bytes with the header) "
                   "but the file has %zu bytes", path, h[2], expect, size);
  return AX_OK;
}

int ax_shard_open(AxShard *s, const char *path) {
  memset(s, 0, sizeof *s);
  int fd = open(path, O_RDONLY);
  if (fd < 0) return AX_FAIL("cannot open %s: %s", path, strerror(errno));
  struct stat sb;
  if (fstat(fd, &sb) != 0) {
    close(fd);
    return AX_FAIL("cannot stat %s: %s", path, strerror(errno));
  }
  if (!S_ISREG(sb.st_mode)) {
    close(fd);
    return AX_FAIL("cannot read %s: %s", path,
                   S_ISDIR(sb.st_mode) ? "it is a directory" : "not a regular file");
  }
  size_t size = (size_t)sb.st_size;
  if (size < HEADER_BYTES) {
    close(fd);
    return AX_FAIL("%s: truncated: %zu bytes is shorter than the %d-byte header", path, size,
                   HEADER_BYTES);
  }
  void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (map == MAP_FAILED) return AX_FAIL("cannot map %s: %s", path, strerror(errno));
  if (check_header(path, map, size) != AX_OK) {
    munmap(map, size);
    return AX_ERR;
  }
  s->map = map;
  s->map_bytes = size;
  s->tokens = (const uint16_t *)((const char *)map + HEADER_BYTES);
  s->n = (size_t)((const int32_t *)map)[2];
  return AX_OK;
}

void ax_shard_close(AxShard *s) {
  if (s->map) munmap(s->map, s->map_bytes);
  memset(s, 0, sizeof *s);
}

int ax_shard_write_pending(AxFile *f, const char *path, const uint16_t *tokens, size_t n) {
  if (n > 2147483647u) return AX_FAIL("%s: %zu tokens do not fit one shard", path, n);
  int32_t h[256] = {AX_SHARD_MAGIC, AX_SHARD_VERSION, (int32_t)n};
  AX_TRY(ax_file_open_write(f, path));
  if (ax_file_write(f, h, sizeof h) != AX_OK || ax_file_write(f, tokens, n * 2) != AX_OK) {
    ax_file_abort(f);
    return AX_ERR;
  }
  return AX_OK;
}

int ax_shard_write(const char *path, const uint16_t *tokens, size_t n) {
  AxFile f;
  AX_TRY(ax_shard_write_pending(&f, path, tokens, n));
  return ax_file_commit(&f);
}
