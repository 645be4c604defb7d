/* optimizer.c — Adam state and decay segments of a stage; see optimizer.h. */
#include "optimizer.h"

#include <string.h>

#include "src/error.h"

int ax_optimizer_init(AxOptimizer *o, AxBackend *be, const AxStageLayout *layout, int decay_all,
                      AxPool *pool) {
  memset(o, 0, sizeof *o);
  o->be = be;
  o->n = layout->total;
  o->pool = pool;
  for (int id = 0; id < AX_N_PARAMS; id++) {
    if (!layout->has[id]) continue;
    o->segs[o->n_segs++] = (AxParamSegment){layout->offset[id], layout->count[id],
                                            decay_all || ax_param_decays(id)};
  }
  size_t bytes = o->n * sizeof(float);
  o->m = be->ops->host_alloc(be, bytes);
  o->v = o->m ? be->ops->host_alloc(be, bytes) : NULL;
  if (!o->v) {
    ax_optimizer_free(o);
    return ax_error_context("allocating Adam state (%.1f MB)", 2.0 * bytes / 1e6);
  }
  memset(o->m, 0, bytes);
  memset(o->v, 0, bytes);
  return AX_OK;
}

void ax_optimizer_free(AxOptimizer *o) {
  if (o->be) {
    if (o->m) o->be->ops->host_free(o->be, o->m);
    if (o->v) o->be->ops->host_free(o->be, o->v);
  }
  memset(o, 0, sizeof *o);
}

void ax_optimizer_update(AxOptimizer *o, float *params, const float *grads, size_t lo, size_t hi,
                         const AxAdamWHyper *h) {
  ax_adamw_update(o->pool, params, grads, o->m, o->v, lo, hi, o->segs, o->n_segs, h);
}
