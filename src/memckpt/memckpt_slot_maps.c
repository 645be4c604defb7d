/* memckpt_slot_maps.c — the memory checkpoints' slot files as this rank maps them: each
 * stage file of each slot mapped once and kept from copy to copy (a fresh mapping of a file in
 * memory costs a page fault per page every time), for the copy thread that writes a stage
 * file (memckpt.c) and the receivers of replicas (memckpt_replicas.c). A mapping is
 * made again when its size changes or its path holds another file now. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "src/core/error.h"
#include "src/io/checkpoint.h"
#include "memckpt_store.h"
#include "memckpt_impl.h"

int ax_memckpt_slot_maps_new(AxMemCkpt *mc) {
  mc->n_files = (mc->v.grid != NULL) ? mc->v.grid->P : 1;
  mc->maps = ax_calloc((size_t)AX_MEMCKPT_SLOTS * (size_t)mc->n_files, sizeof *mc->maps);
  return mc->maps ? AX_OK : AX_ERR;
}

void ax_memckpt_slot_maps_free(AxMemCkpt *mc) {
  for (int i = 0; mc->maps && i < AX_MEMCKPT_SLOTS * mc->n_files; i++)
    ax_file_unmap(&mc->maps[i].map);
  free(mc->maps);
  mc->maps = NULL;
}

/* Whether sm maps the file at path now, at size bytes. */
static int still_mapped(const AxSlotMap *sm, const char *path, size_t size) {
  struct stat sb;
  return sm->map.size == size && stat(path, &sb) == 0 &&
         (unsigned long long)sb.st_dev == sm->dev && (unsigned long long)sb.st_ino == sm->ino &&
         (size_t)sb.st_size == size;
}

int ax_memckpt_slot_map(AxMemCkpt *mc, int slot, int file, size_t size, AxFileMap *view,
                        int *fresh) {
  *view = (AxFileMap){0};
  if (fresh) *fresh = 0;
  if (slot < 0 || slot >= AX_MEMCKPT_SLOTS || file < 0 || file >= mc->n_files)
    return AX_FAIL("internal: no slot map for slot %d, file %d", slot, file);
  AxSlotMap *sm = &mc->maps[slot * mc->n_files + file];
  char dir[AX_MEMCKPT_PATH], name[32], path[AX_MEMCKPT_PATH + 40];
  ax_memckpt_slot_dir(mc->v.opt.memory_dir, mc->name, mc->node, slot, dir);
  snprintf(path, sizeof path, "%s/%s", dir, ax_ckpt_stage_file_name(file, name, sizeof name));
  if (!still_mapped(sm, path, size)) {
    ax_file_unmap(&sm->map);
    AX_TRY(ax_file_map_write(path, size, &sm->map));
    struct stat sb;
    if (stat(path, &sb) != 0) {
      ax_file_unmap(&sm->map);
      return AX_FAIL("cannot stat %s: %s", path, strerror(errno));
    }
    sm->dev = (unsigned long long)sb.st_dev;
    sm->ino = (unsigned long long)sb.st_ino;
    if (fresh) *fresh = 1;
  }
  *view = sm->map;
  return AX_OK;
}
