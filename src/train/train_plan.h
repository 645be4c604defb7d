/* train_plan.h — the memory plan of a training run, computed without allocating anything: per
 * pipeline stage (every data-parallel row holds the same), the device bytes of weights,
 * gradients and activations (with and without activation checkpointing) and the host bytes
 * of the optimizer arena, for any model and grid; and the paper's accounting of the same
 * stage without and with offloading (20φ against 4φ + 16·bucket, axonn-ipdps22 §V-B). Under
 * tensor parallelism (--gx/--gy/--gz) every figure is one rank's, holding its shards of the
 * stage (models/tp_shard.h), and a grid the model's shape does not allow is refused by the
 * trainer's own check. */
#ifndef AX_PLAN_H
#define AX_PLAN_H

#include "train_config.h"

/* One stage's plan, in bytes (params: elements). */
typedef struct {
  double params, weights, grads, act, act_ckpt, host, paper_plain, paper_offload;
} AxStagePlan;

/* Stage s of m under cfg, its blocks [first[s], first[s+1]) (pipeline/partition.h), on one
 * rank of its tensor-parallel grid. */
void ax_plan_stage(const AxTrainConfig *cfg, const AxGptConfig *m, const int *first, int s,
                   AxStagePlan *out);
/* Prints the plan for cfg to stdout (--dry-run, `axonn plan`). */
int ax_plan_print(const AxTrainConfig *cfg);
/* Only the compression plan (`axonn plan --compression`; train_plan_compress.c). */
int ax_plan_print_compression(const AxTrainConfig *cfg);

#endif
