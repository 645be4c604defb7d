/* grad_compress.c — the per-chunk compression decisions and codec states of a stage; see
 * grad_compress.h. */
#include "grad_compress.h"

#include <stdlib.h>
#include <string.h>

#include "src/core/error.h"

int ax_grad_compress_init(AxGradCompress *gc, const AxOffload *o, const AxCodec *codec,
                          AxCasyncAlgo algo, int ranks, const AxCasyncChoice *choice,
                          uint64_t seed, const AxCommConfig *base) {
  *gc = (AxGradCompress){.codec = codec, .algo = algo, .ranks = ranks,
                         .n_chunks = o->n_chunks, .seed = seed, .enabled = 1};
  size_t n = (size_t)o->n_chunks + 1;
  gc->choice = ax_calloc(n, sizeof *gc->choice);
  gc->states = ax_calloc(n, sizeof *gc->states);
  if (!gc->choice || !gc->states) {
    ax_grad_compress_free(gc);
    return AX_ERR;
  }
  memcpy(gc->choice, choice, (size_t)o->n_chunks * sizeof *choice);
  for (int c = 0; c < o->n_chunks; c++) {
    if (!choice[c].compress) continue;
    size_t lo, hi;
    ax_offload_chunk_range(o, c, &lo, &hi);
    AxCommConfig cc = ax_grad_compress_cc(gc, base, c, hi - lo);
    if (ax_casync_state_new(codec, hi - lo, ranks, &cc, &gc->states[c]) != AX_OK) {
      ax_grad_compress_free(gc);
      return AX_ERR;
    }
  }
  return AX_OK;
}

AxCommConfig ax_grad_compress_cc(const AxGradCompress *gc, const AxCommConfig *base, int c,
                                 size_t count) {
  AxCommConfig cc = ax_comm_config_resolve(base);
  int parts = gc->choice[c].parts;
  if (parts > gc->ranks) cc.chunk_bytes = (count * sizeof(float) + (size_t)parts - 1) / (size_t)parts;
  return cc;
}

void ax_grad_compress_free(AxGradCompress *gc) {
  if (gc->states)
    for (int c = 0; c < gc->n_chunks; c++) ax_casync_state_free(gc->states[c]);
  free(gc->states);
  free(gc->choice);
  *gc = (AxGradCompress){0};
}

int ax_grad_compress_uses(const AxGradCompress *gc, int c) {
  return gc && gc->enabled && c < gc->n_chunks && gc->choice[c].compress;
}

size_t ax_grad_compress_state_bytes(const AxGradCompress *gc) {
  size_t total = 0;
  for (int c = 0; c < gc->n_chunks; c++)
    if (gc->states[c]) total += ax_casync_state_bytes(gc->states[c]);
  return total;
}

int ax_grad_compress_save(const AxGradCompress *gc, void *buf) {
  char *p = buf;
  for (int c = 0; c < gc->n_chunks; c++) {
    if (!gc->states[c]) continue;
    AX_TRY(ax_casync_state_save(gc->states[c], p));
    p += ax_casync_state_bytes(gc->states[c]);
  }
  return AX_OK;
}

int ax_grad_compress_load(AxGradCompress *gc, const void *buf, size_t bytes) {
  if (bytes != ax_grad_compress_state_bytes(gc))
    return AX_FAIL("codec state of %zu bytes, expected %zu (another codec or grid?)", bytes,
                   ax_grad_compress_state_bytes(gc));
  const char *p = buf;
  for (int c = 0; c < gc->n_chunks; c++) {
    if (!gc->states[c]) continue;
    size_t b = ax_casync_state_bytes(gc->states[c]);
    AX_TRY(ax_casync_state_load(gc->states[c], p, b));
    p += b;
  }
  return AX_OK;
}
