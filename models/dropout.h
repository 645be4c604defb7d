/* dropout.h — GPT-2's dropout (Radford et al. 2018 §4.1, kept by GPT-2: "residual, embedding,
 * and attention dropouts with a rate of 0.1"; here the residual and embedding ones): the
 * embedding's output and each residual branch (the attention's and the MLP's projection)
 * before it is added are dropped with probability p and the rest scaled by 1 / (1 - p), in
 * training forwards only.
 *
 * Masks are drawn per element from (seed, step, site, the element's place in the step's whole
 * batch) by src/core/dropout_mask.h: the same elements are dropped whatever the pipeline,
 * data-parallel or tensor-parallel layout, on a recomputed segment, and in a resumed run.
 * Sites: 0 the embedding, 1 + 2l block l's attention branch, 2 + 2l its MLP branch (l the
 * model's block index, not the stage's). */
#ifndef AX_DROPOUT_H
#define AX_DROPOUT_H

#include <stdint.h>

#include "src/backend/backend.h"

typedef struct {
  float p;              /* 0: none (validation, sampling, or no --dropout) */
  uint64_t seed, step;
  uint64_t row0;        /* the step's global token row of the piece's first row */
  uint64_t col0, width; /* the piece's first channel, and the whole width C */
  int layer;            /* the model's index of the block it is handed to */
} AxDropout;

enum { AX_DROP_EMBEDDING = -1, AX_DROP_ATTENTION = 0, AX_DROP_MLP = 1 };

static inline int ax_dropout_on(const AxDropout *d) { return d && d->p > 0; }

/* out = residual + drop(x) over rows x cols (residual may be NULL; out may alias x): `what`
 * is AX_DROP_EMBEDDING, or a branch of block d->layer. A forward drops its output so; a
 * backward drops the incoming gradient with the same mask (out = drop(dout)). */
void ax_dropout_apply(AxBackend *be, const AxDropout *d, int what, void *out, const void *x,
                      const void *residual, int rows, int cols);

#endif
