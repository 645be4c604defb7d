/* train_plan_grid.h — the memory plan of `axonn plan` (train_plan.h) for any grid of the 4D
 * planner (`plan --rank-grids`, src/plan/rank_grids.h): one rank's device bytes of its busiest
 * stage, weights, gradients, activations (checkpointed when the setup checkpoints) and, with
 * the optimizer on the device, its fp32 master weights and moments; so the planner and
 * `plan`/--dry-run share one accounting. */
#ifndef AX_TRAIN_PLAN_GRID_H
#define AX_TRAIN_PLAN_GRID_H

#include "src/plan/rank_grids.h"
#include "train_config.h"

typedef struct {
  AxTrainConfig cfg; /* the trainer's defaults on a GPU; the model and grid set per call */
} AxPlanGridCtx;

/* ctx for a model run as s describes (precision, checkpointing), the optimizer state on the
 * device when optimizer_device, else in the host arena. Free with ax_plan_grid_ctx_free. */
int ax_plan_grid_ctx_init(AxPlanGridCtx *ctx, const AxCommSetup *s, int optimizer_device);
void ax_plan_grid_ctx_free(AxPlanGridCtx *ctx);

/* An AxGridMemoryFn: ctx is an AxPlanGridCtx. */
int ax_plan_grid_memory(void *ctx, const AxCommSetup *s, const AxRankGrid *g, int micro_batch,
                        AxGridMemory *out);

#endif
