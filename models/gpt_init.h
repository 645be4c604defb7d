/* gpt_init.h — GPT-2 random initialization of a stage's parameters (host fp32, stage layout).
 * Every (tensor, layer) slice draws from its own stream seeded by (seed, tensor, layer), so the
 * values do not depend on how the layers are split over pipeline stages. */
#ifndef AX_GPT_INIT_H
#define AX_GPT_INIT_H

#include <stdint.h>

#include "gpt_config.h"

/* Weights N(0, 0.02); residual projections (attprojw, fcprojw) N(0, 0.02/sqrt(2L)); biases 0;
 * LayerNorm weights 1, biases 0; padded vocabulary rows of wte 0. */
void ax_gpt_init_stage(const AxGptConfig *c, const AxStageLayout *s, uint64_t seed, float *dst);

#endif
