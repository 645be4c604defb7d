/* dropout.c — a dropout's mask for one site and piece (dropout.h), applied by the backend. */
#include "dropout.h"

static uint64_t site_of(const AxDropout *d, int what) {
  return what == AX_DROP_EMBEDDING ? 0 : 1 + 2 * (uint64_t)d->layer + (uint64_t)what;
}

/* The mask of `site` at probability p over rows x cols of a [*, width] tensor from (row0, col0). */
static AxDropoutMask mask_of(const AxDropout *d, uint64_t site, float p, int rows, int cols,
                             uint64_t row0, uint64_t col0, uint64_t width) {
  return (AxDropoutMask){
      .key = ax_crng_key(d->seed, d->step, (site << 8) | AX_CRNG_DROPOUT),
      .threshold = (uint32_t)((double)p * 4294967296.0),
      .scale = 1.0f / (1.0f - p),
      .rows = rows,
      .cols = cols,
      .row0 = row0,
      .col0 = col0,
      .width = width};
}

void ax_dropout_apply(AxBackend *be, const AxDropout *d, int what, void *out, const void *x,
                      const void *residual, int rows, int cols) {
  AxDropoutMask m = mask_of(d, site_of(d, what), d->p, rows, cols, d->row0, d->col0, d->width);
  be->ops->dropout(be, out, x, residual, &m);
}

void ax_dropout_probs(AxBackend *be, const AxDropout *d, int seq, int heads, int T, void *out,
                      const void *x) {
  uint64_t sequence = d->row0 / (uint64_t)T + (uint64_t)seq;
  /* rows: (sequence, head, query) of the step's [sequences, heads, T]; columns: the keys */
  uint64_t row0 = (sequence * d->heads + d->head0) * (uint64_t)T;
  AxDropoutMask m = mask_of(d, (1ull << 32) + (uint64_t)d->layer, d->p_att, heads * T, T, row0,
                            0, (uint64_t)T);
  be->ops->dropout(be, out, x, NULL, &m);
}
