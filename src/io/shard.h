/* shard.h — llm.c token shards: 256 int32 header ([0]=20240520, [1]=1, [2]=token count) then
 * uint16 tokens. Opened shards are memory-mapped and validated (magic, version, size). */
#ifndef AX_SHARD_H
#define AX_SHARD_H

#include <stddef.h>
#include <stdint.h>

#include "src/core/fileio.h"

#define AX_SHARD_MAGIC 20240520
#define AX_SHARD_VERSION 1

typedef struct {
  const uint16_t *tokens;
  size_t n;
  void *map; /* NULL for token arrays not backed by a file */
  size_t map_bytes;
} AxShard;

int ax_shard_open(AxShard *s, const char *path);
void ax_shard_close(AxShard *s);
int ax_shard_write(const char *path, const uint16_t *tokens, size_t n);
/* Writes a shard to its temporary file only (fileio.h): ax_file_commit(f) puts it in place,
 * ax_file_abort(f) drops it. On failure nothing is left. Writers of several files that must
 * appear together write them all this way before committing any. */
int ax_shard_write_pending(AxFile *f, const char *path, const uint16_t *tokens, size_t n);

#endif
