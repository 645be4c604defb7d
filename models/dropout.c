/* dropout.c — a dropout's mask for one site and piece (dropout.h), applied by the backend. */
#include "dropout.h"

static uint64_t site_of(const AxDropout *d, int what) {
  return what == AX_DROP_EMBEDDING ? 0 : 1 + 2 * (uint64_t)d->layer + (uint64_t)what;
}

void ax_dropout_apply(AxBackend *be, const AxDropout *d, int what, void *out, const void *x,
                      const void *residual, int rows, int cols) {
  AxDropoutMask m = {
      .key = ax_crng_key(d->seed, d->step, (site_of(d, what) << 8) | AX_CRNG_DROPOUT),
      .threshold = (uint32_t)((double)d->p * 4294967296.0),
      .scale = 1.0f / (1.0f - d->p),
      .rows = rows,
      .cols = cols,
      .row0 = d->row0,
      .col0 = d->col0,
      .width = d->width};
  be->ops->dropout(be, out, x, residual, &m);
}
