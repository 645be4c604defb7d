/* train_hooks.c — the step's named points; see train_hooks.h. */
#include "train_hooks.h"

#include "src/core/error.h"

int ax_step_hooks_add(AxStepHooks *h, const AxStepSubscriber *s) {
  if (h->n == AX_STEP_MAX_SUBSCRIBERS)
    return AX_FAIL("internal: more than %d subscribers to the step", AX_STEP_MAX_SUBSCRIBERS);
  h->sub[h->n++] = *s;
  return AX_OK;
}

int ax_step_hooks_run(const AxStepHooks *h, AxStepPoint p, int step, int arg) {
  for (int i = 0; i < h->n; i++)
    if (h->sub[i].at[p]) AX_TRY(h->sub[i].at[p](h->sub[i].ctx, step, arg));
  return AX_OK;
}
