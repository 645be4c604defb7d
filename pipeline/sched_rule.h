/* sched_rule.h — the decisions of Algorithm 2 (axonn-ipdps22), pure: what a stage does when a
 * pass begins and when a message arrives. Stage 0 injects `limit` micro-batches (forward, send
 * on), then one more each time it finishes a backward; a stage that receives an activation runs
 * its forward and sends it on, except the last, which turns around at once (backward, send
 * back); a stage that receives a gradient runs its backward and sends it back. A pass on one
 * stage runs every micro-batch's forward then backward, with no messages.
 *
 * No MPI, no compute, no clock: the rule hands its actions, in order, to a callback. The real
 * scheduler (scheduler.c) executes them through the stage and the p2p engine; the simulator
 * (simulate.c) prices them. Both call this one rule, so the two cannot drift. Which waiting
 * message a stage takes first is the p2p engine's (MPI_Waitany over [activation, gradient]:
 * the lower index when both are in); ax_rule_pick states it for the simulator. */
#ifndef AX_SCHED_RULE_H
#define AX_SCHED_RULE_H

typedef enum { AX_ACT_FORWARD = 0, AX_ACT_BACKWARD, AX_ACT_SEND_NEXT, AX_ACT_SEND_PREV } AxActKind;

typedef struct {
  AxActKind kind;
  int mb;
} AxAction;

/* Executes one action; a non-zero return stops the rule and is returned. */
typedef int (*AxActionFn)(void *ctx, AxAction a);

typedef struct {
  int stage, P, limit, n_micro;
  int next_mb;  /* stage 0: the next micro-batch to inject */
  int handled;  /* messages handled in this pass */
  int expected; /* messages this stage handles in a pass */
} AxSchedRule;

/* A pass of n_micro micro-batches on `stage` of P with `limit` in flight (>= 1). */
void ax_rule_begin(AxSchedRule *r, int stage, int P, int limit, int n_micro);
/* What the stage does before its first message (stage 0 injects; one stage runs it all). */
int ax_rule_start(AxSchedRule *r, AxActionFn fn, void *ctx);
/* What it does on a message: an activation (from_next 0) or a gradient (1) of micro-batch mb. */
int ax_rule_on_message(AxSchedRule *r, int from_next, int mb, AxActionFn fn, void *ctx);
/* 1 when every message of the pass has been handled. */
int ax_rule_done(const AxSchedRule *r);
/* Which message a stage takes when it looks: the activation (0) when it is in, else the
 * gradient (1) when it is in, else -1 (it waits for whichever comes first). */
int ax_rule_pick(int activation_in, int gradient_in);

#endif
