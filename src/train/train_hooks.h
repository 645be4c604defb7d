/* train_hooks.h — the named points of a training step that subsystems attach to, so that
 * ax_trainer_step reads as the step's data path and names no subsystem: the in-memory
 * checkpoints (trainer_memckpt.c) subscribe today. A hook returns AX_OK or fails the step. */
#ifndef AX_TRAIN_HOOKS_H
#define AX_TRAIN_HOOKS_H

typedef enum {
  AX_STEP_BEGIN,            /* before the step's pipeline */
  AX_STEP_TICK,             /* at each forward and backward of a micro-batch (step 0) */
  AX_STEP_BEFORE_OPTIMIZER, /* the gradients summed; the optimizer not yet run */
  AX_STEP_AFTER_OPTIMIZER,  /* arg: 1 when the optimizer updated the state, 0 when skipped */
  AX_STEP_AFTER_LOSS,       /* the step's loss agreed by every rank (a point all ranks reach) */
  AX_STEP_END,              /* the step's device work done; its time still running */
  AX_STEP_POINTS
} AxStepPoint;

typedef int (*AxStepHook)(void *ctx, int step, int arg);
typedef struct {
  AxStepHook at[AX_STEP_POINTS]; /* NULL: not at that point */
  void *ctx;
} AxStepSubscriber;

enum { AX_STEP_MAX_SUBSCRIBERS = 4 };
typedef struct {
  AxStepSubscriber sub[AX_STEP_MAX_SUBSCRIBERS];
  int n;
} AxStepHooks;

int ax_step_hooks_add(AxStepHooks *h, const AxStepSubscriber *s);
/* Runs every subscriber's hook at point p, in the order they were added; stops at a failure. */
int ax_step_hooks_run(const AxStepHooks *h, AxStepPoint p, int step, int arg);

#endif
