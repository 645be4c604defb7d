/* grad_compress.c — the layer-wise parts of a stage's chunks, their compression decisions and
 * codec states; see grad_compress.h. */
#include "grad_compress.h"

#include <stdlib.h>
#include <string.h>

#include "src/core/crc32.h"
#include "src/core/error.h"

/* The part starting at pos (below hi): inside tensor *k, or a gap up to the next one. */
static AxGradPart part_at(const AxTensorRange *t, int n_t, int *k, size_t pos, size_t hi) {
  while (*k < n_t && t[*k].offset + t[*k].count <= pos) (*k)++;
  AxGradPart p = {.lo = pos, .hi = hi, .layer = -1};
  if (*k >= n_t) return p;
  if (t[*k].offset <= pos) {
    size_t end = t[*k].offset + t[*k].count;
    p.hi = end < hi ? end : hi;
    p.cols = t[*k].cols;
    p.name = t[*k].name;
    p.layer = t[*k].layer;
  } else if (t[*k].offset < hi) {
    p.hi = t[*k].offset;
  }
  return p;
}

int ax_grad_parts_cut(const AxOffload *o, const AxTensorRange *t, int n_t, AxGradPart *out,
                      int cap) {
  int n = 0, k = 0;
  for (int c = 0; c < o->n_chunks; c++) {
    size_t lo, hi;
    ax_offload_chunk_range(o, c, &lo, &hi);
    for (size_t pos = lo; pos < hi; n++) {
      AxGradPart p = part_at(t, n_t, &k, pos, hi);
      p.chunk = c;
      if (out && n < cap) out[n] = p;
      pos = p.hi;
    }
  }
  return n;
}

static int index_chunks(AxGradCompress *gc) {
  gc->first = ax_calloc((size_t)gc->n_chunks + 1, sizeof *gc->first);
  if (!gc->first) return AX_ERR;
  int p = 0;
  for (int c = 0; c < gc->n_chunks; c++) {
    gc->first[c] = p;
    while (p < gc->n_parts && gc->parts[p].chunk == c) p++;
  }
  gc->first[gc->n_chunks] = p;
  if (p != gc->n_parts) return AX_FAIL("compression parts out of chunk order");
  return AX_OK;
}

void ax_grad_compress_sum_shape(const AxGradCompress *gc, int p, size_t *offset, size_t *count,
                                int *ranks) {
  const AxGradPart *part = &gc->parts[p];
  *offset = 0;
  *count = part->hi - part->lo;
  *ranks = gc->ranks;
  if (part->choice.two_level && gc->two_level) {
    *count = ax_two_level_shard(gc->two_level, *count, offset);
    *ranks = gc->two_level->n_nodes;
  }
}

static int new_states(AxGradCompress *gc, const AxCommConfig *base) {
  for (int i = 0; i < gc->n_parts; i++) {
    AxGradPart *p = &gc->parts[i];
    p->state = NULL;
    if (p->choice.two_level && (!gc->two_level || !gc->two_level->usable))
      return AX_FAIL("part %d is to be summed in two levels, but the ranks do not sit evenly "
                     "on two or more nodes", i);
    if (!p->choice.compress) continue;
    if (!p->codec) return AX_FAIL("compressed part %d has no codec", i);
    size_t offset, count;
    int ranks;
    ax_grad_compress_sum_shape(gc, i, &offset, &count, &ranks);
    /* the K partitions its CaSync runs: the choice's (0: the comm's pieces), or one per
     * segment of its sum */
    int k = p->choice.whole_segments ? ranks : p->choice.parts;
    if (k > 0)
      AX_TRY(ax_casync_state_new_parts(p->codec, count, ranks, k, &p->state));
    else
      AX_TRY(ax_casync_state_new(p->codec, count, ranks, base, &p->state));
  }
  return AX_OK;
}

int ax_grad_compress_init(AxGradCompress *gc, const AxOffload *o, const AxGradPart *parts,
                          int n_parts, AxCasyncAlgo algo, int ranks, uint64_t seed,
                          const AxCommConfig *base, const AxTwoLevel *two_level) {
  *gc = (AxGradCompress){.algo = algo, .ranks = ranks, .n_chunks = o->n_chunks,
                         .seed = seed, .enabled = 1, .two_level = two_level};
  gc->parts = ax_calloc((size_t)n_parts + 1, sizeof *gc->parts);
  if (!gc->parts) return AX_ERR;
  memcpy(gc->parts, parts, (size_t)n_parts * sizeof *parts);
  for (int i = 0; i < n_parts; i++) gc->parts[i].state = NULL;
  gc->n_parts = n_parts;
  int rc = index_chunks(gc);
  if (rc == AX_OK) rc = new_states(gc, base);
  if (rc != AX_OK) ax_grad_compress_free(gc);
  return rc;
}

void ax_grad_compress_free(AxGradCompress *gc) {
  if (gc->parts)
    for (int i = 0; i < gc->n_parts; i++) ax_casync_state_free(gc->parts[i].state);
  free(gc->parts);
  free(gc->first);
  *gc = (AxGradCompress){0};
}

void ax_grad_compress_set_momentum(AxGradCompress *gc, const float *m, float loss_scale) {
  for (int p = 0; p < gc->n_parts; p++) {
    if (!gc->parts[p].state) continue;
    size_t offset, count;
    int ranks;
    ax_grad_compress_sum_shape(gc, p, &offset, &count, &ranks);
    ax_casync_state_set_momentum(gc->parts[p].state, m + gc->parts[p].lo + offset,
                                 loss_scale / (float)ranks);
  }
}

void ax_grad_compress_rescale(AxGradCompress *gc, float factor) {
  for (int p = 0; p < gc->n_parts; p++) ax_casync_state_rescale(gc->parts[p].state, factor);
}

int ax_grad_compress_part_uses(const AxGradCompress *gc, int p) {
  return gc && gc->enabled && p < gc->n_parts &&
         (gc->parts[p].choice.compress || gc->parts[p].choice.two_level);
}

int ax_grad_compress_uses(const AxGradCompress *gc, int c) {
  if (!gc || !gc->enabled || c >= gc->n_chunks) return 0;
  for (int p = gc->first[c]; p < gc->first[c + 1]; p++)
    if (ax_grad_compress_part_uses(gc, p)) return 1;
  return 0;
}

uint32_t ax_grad_compress_fingerprint(const AxGradCompress *gc) {
  return ax_grad_parts_fingerprint(gc->parts, gc->n_parts, 0, SIZE_MAX);
}

uint32_t ax_grad_parts_fingerprint(const AxGradPart *parts, int n, size_t lo, size_t hi) {
  uint32_t crc = 0;
  for (int i = 0; i < n; i++) {
    const AxGradPart *p = &parts[i];
    if (p->lo < lo || p->hi > hi) continue;
    uint64_t v[7] = {p->lo, p->hi, (uint64_t)p->choice.compress, (uint64_t)p->choice.algo,
                     (uint64_t)p->choice.parts, (uint64_t)p->choice.whole_segments,
                     (uint64_t)p->choice.two_level};
    crc = ax_crc32(crc, v, sizeof v);
  }
  return crc;
}

size_t ax_grad_compress_state_bytes(const AxGradCompress *gc) {
  size_t total = 0;
  for (int i = 0; i < gc->n_parts; i++)
    if (gc->parts[i].state) total += ax_casync_state_bytes(gc->parts[i].state);
  return total;
}

int ax_grad_compress_save(const AxGradCompress *gc, void *buf) {
  char *p = buf;
  for (int i = 0; i < gc->n_parts; i++) {
    if (!gc->parts[i].state) continue;
    AX_TRY(ax_casync_state_save(gc->parts[i].state, p));
    p += ax_casync_state_bytes(gc->parts[i].state);
  }
  return AX_OK;
}

int ax_grad_compress_load(AxGradCompress *gc, const void *buf, size_t bytes) {
  if (bytes != ax_grad_compress_state_bytes(gc))
    return AX_FAIL("codec state of %zu bytes, expected %zu (another codec or grid?)", bytes,
                   ax_grad_compress_state_bytes(gc));
  const char *p = buf;
  for (int i = 0; i < gc->n_parts; i++) {
    if (!gc->parts[i].state) continue;
    size_t b = ax_casync_state_bytes(gc->parts[i].state);
    AX_TRY(ax_casync_state_load(gc->parts[i].state, p, b));
    p += b;
  }
  return AX_OK;
}
