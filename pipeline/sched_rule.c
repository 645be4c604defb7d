/* sched_rule.c — Algorithm 2's decisions as a pure rule; see sched_rule.h. */
#include "sched_rule.h"

void ax_rule_begin(AxSchedRule *r, int stage, int P, int limit, int n_micro) {
  int first = stage == 0, last = stage == P - 1;
  *r = (AxSchedRule){.stage = stage, .P = P, .limit = limit, .n_micro = n_micro};
  r->expected = P == 1 ? 0 : first || last ? n_micro : 2 * n_micro;
}

static int act(AxActionFn fn, void *ctx, AxActKind kind, int mb) {
  return fn(ctx, (AxAction){kind, mb});
}

/* Stage 0 starts its next micro-batch: forward, send the activation on. */
static int inject(AxSchedRule *r, AxActionFn fn, void *ctx) {
  int mb = r->next_mb++, rc = act(fn, ctx, AX_ACT_FORWARD, mb);
  return rc ? rc : act(fn, ctx, AX_ACT_SEND_NEXT, mb);
}

int ax_rule_start(AxSchedRule *r, AxActionFn fn, void *ctx) {
  int rc = 0;
  if (r->P == 1) { /* one process holds every block: micro-batches one after another */
    for (int mb = 0; mb < r->n_micro && !rc; mb++) {
      rc = act(fn, ctx, AX_ACT_FORWARD, mb);
      if (!rc) rc = act(fn, ctx, AX_ACT_BACKWARD, mb);
    }
    return rc;
  }
  if (r->stage == 0)
    while (!rc && r->next_mb < r->n_micro && r->next_mb < r->limit) rc = inject(r, fn, ctx);
  return rc;
}

int ax_rule_on_message(AxSchedRule *r, int from_next, int mb, AxActionFn fn, void *ctx) {
  r->handled++;
  int rc;
  if (!from_next) {
    rc = act(fn, ctx, AX_ACT_FORWARD, mb);
    if (rc || r->stage < r->P - 1) return rc ? rc : act(fn, ctx, AX_ACT_SEND_NEXT, mb);
    rc = act(fn, ctx, AX_ACT_BACKWARD, mb); /* the last stage turns around at once */
    return rc ? rc : act(fn, ctx, AX_ACT_SEND_PREV, mb);
  }
  rc = act(fn, ctx, AX_ACT_BACKWARD, mb);
  if (rc || r->stage > 0) return rc ? rc : act(fn, ctx, AX_ACT_SEND_PREV, mb);
  return r->next_mb < r->n_micro ? inject(r, fn, ctx) : 0;
}

int ax_rule_done(const AxSchedRule *r) { return r->handled >= r->expected; }

int ax_rule_pick(int activation_in, int gradient_in) {
  return activation_in ? 0 : gradient_in ? 1 : -1;
}
