/* optimizer.h — the optimizer state of one stage: Adam moments in host memory mirroring the
 * stage's flat parameter layout, the decay segments derived from that layout, and a step
 * over any element range (the whole buffer, or one all-reduce chunk at a time). */
#ifndef AX_OPTIMIZER_H
#define AX_OPTIMIZER_H

#include <stddef.h>

#include "adamw.h"
#include "models/gpt_config.h"
#include "src/backend.h"

typedef struct {
  AxBackend *be;   /* owns the host (pinned) allocations */
  size_t n;        /* elements */
  float *m, *v;    /* Adam moments, host */
  AxParamSegment segs[AX_N_PARAMS];
  int n_segs;
  AxPool *pool;    /* optimizer threads; NULL: the calling thread */
} AxOptimizer;

int ax_optimizer_init(AxOptimizer *o, AxBackend *be, const AxStageLayout *layout, int decay_all,
                      AxPool *pool);
void ax_optimizer_free(AxOptimizer *o);
/* AdamW on elements [lo, hi) of host arrays params and grads. */
void ax_optimizer_update(AxOptimizer *o, float *params, const float *grads, size_t lo, size_t hi,
                         const AxAdamWHyper *h);

#endif
