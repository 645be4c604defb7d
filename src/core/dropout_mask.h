/* dropout_mask.h — which elements a dropout keeps: a pure function of the mask's key and each
 * element's place in the whole tensor (crng.h), so every layout of a run, every rank holding a
 * piece of the tensor and a recomputed forward (activation checkpointing) keep the same
 * elements, and nothing is stored between a forward and its backward. Header-only and plain
 * integer arithmetic, like crng.h, so a device kernel can draw the same bits. */
#ifndef AX_DROPOUT_MASK_H
#define AX_DROPOUT_MASK_H

#include <stdint.h>

#include "crng.h"

typedef struct {
  AxCrng key;         /* (seed, step, site): models/dropout.h */
  uint32_t threshold; /* an element is dropped where its draw is below p · 2^32 */
  float scale;        /* 1 / (1 - p): what a kept element is multiplied by */
  int rows, cols;     /* the piece: rows of cols contiguous elements */
  uint64_t row0, col0, width; /* its element (r, c) is element (row0 + r, col0 + c) of the
                               * whole [*, width] tensor */
} AxDropoutMask;

/* The draw's index of the piece's element (r, c): its place in the whole tensor (a row's
 * elements have consecutive indices, which a vector path draws eight at a time). */
AX_CRNG_FN uint64_t ax_dropout_index(const AxDropoutMask *m, int r, int c) {
  return (m->row0 + (uint64_t)r) * m->width + m->col0 + (uint64_t)c;
}

AX_CRNG_FN int ax_dropout_keeps(const AxDropoutMask *m, int r, int c) {
  return ax_crng_u32(m->key, ax_dropout_index(m, r, c)) >= m->threshold;
}

#endif
