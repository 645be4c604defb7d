/* dropout.h — GPT-2's dropout (Radford et al. 2018 §4.1, kept by GPT-2: "residual, embedding,
 * and attention dropouts with a rate of 0.1"; here the residual and embedding ones): the
 * embedding's output and each residual branch (the attention's and the MLP's projection)
 * before it is added are dropped with probability p and the rest scaled by 1 / (1 - p), in
 * training forwards only.
 *
 * GPT's third, the attention probabilities' dropout (`--attention-dropout`), drops each
 * softmax probability of block l before it weighs the values, with its own probability.
 *
 * Masks are drawn per element from (seed, step, site, the element's place in the step's whole
 * batch) by src/core/dropout_mask.h: the same elements are dropped whatever the pipeline,
 * data-parallel or tensor-parallel layout, on a recomputed segment, and in a resumed run.
 * Sites: 0 the embedding, 1 + 2l block l's attention branch, 2 + 2l its MLP branch, 2^32 + l
 * its attention probabilities (l the model's block index, not the stage's); a probability's
 * place is (sequence, head, query, key) of the step's [sequences, heads, T, T]. */
#ifndef AX_DROPOUT_H
#define AX_DROPOUT_H

#include <stdint.h>

#include "src/backend/backend.h"

typedef struct {
  float p;              /* 0: none (validation, sampling, or no --dropout) */
  float p_att;          /* the attention probabilities' (--attention-dropout); 0: none */
  uint64_t seed, step;
  uint64_t row0;        /* the step's global token row of the piece's first row */
  uint64_t col0, width; /* the piece's first channel, and the whole width C */
  uint64_t head0, heads; /* the piece's first attention head, and the model's heads */
  int layer;            /* the model's index of the block it is handed to */
  void *probs;          /* with p_att: scratch of [the piece's heads, T, T] elements, where one
                         * sequence's dropped probabilities are formed (the stage's) */
} AxDropout;

enum { AX_DROP_EMBEDDING = -1, AX_DROP_ATTENTION = 0, AX_DROP_MLP = 1 };

static inline int ax_dropout_on(const AxDropout *d) { return d && d->p > 0; }
static inline int ax_attention_dropout_on(const AxDropout *d) { return d && d->p_att > 0; }

/* out = residual + drop(x) over rows x cols (residual may be NULL; out may alias x): `what`
 * is AX_DROP_EMBEDDING, or a branch of block d->layer. A forward drops its output so; a
 * backward drops the incoming gradient with the same mask (out = drop(dout)). */
void ax_dropout_apply(AxBackend *be, const AxDropout *d, int what, void *out, const void *x,
                      const void *residual, int rows, int cols);

/* out = drop(x) over the attention probabilities of the piece's sequence `seq` (its first is
 * row0 / T) in block d->layer: x and out [heads of the piece, T, T] (out may alias x). The
 * forward drops the probabilities so before they weigh the values; the backward forms them
 * again, and drops the gradient reaching them with the same mask. */
void ax_dropout_probs(AxBackend *be, const AxDropout *d, int seq, int heads, int T, void *out,
                      const void *x);

#endif
