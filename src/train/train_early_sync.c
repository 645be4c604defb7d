/* train_early_sync.c — --dp-sync-early: the stage's data-parallel gradient sum started during
 * the last micro-batch's backward, each piece as soon as the blocks that write it are done
 * (the stage calls back after every block, models/gpt_stage.h; the pieces and their
 * operations are offload/interleave.h's AxEarlySum; which tensor a block makes final,
 * train_timeline.c). */
#include <stdlib.h>

#include "src/core/error.h"
#include "src/core/log.h"
#include "trainer_impl.h"

int ax_trainer_setup_early_sync(AxTrainer *t) {
  if (!ax_trainer_early_on(t)) return AX_OK;
  const AxStageLayout *lay = ax_stage_layout_of(t->stage);
  int n = ax_trainer_tensor_ranges(lay, NULL, 0);
  t->early_tensors = ax_calloc((size_t)n + 1, sizeof *t->early_tensors);
  t->early_cuts = ax_calloc((size_t)n + 1, sizeof *t->early_cuts);
  if (!t->early_tensors || !t->early_cuts) return AX_ERR;
  ax_trainer_tensor_ranges(lay, t->early_tensors, n);
  for (int i = 0; i < n; i++) t->early_cuts[i] = t->early_tensors[i].offset;
  t->n_early_tensors = n;
  return AX_OK;
}

void ax_trainer_free_early_sync(AxTrainer *t) {
  ax_early_sum_close(t->early);
  t->early = NULL;
  free(t->early_tensors);
  free(t->early_cuts);
  t->early_tensors = NULL;
  t->early_cuts = NULL;
}

/* Whether every tensor [lo, hi) overlaps is final: a block's, of a block done. */
static int final_now(void *ctx, size_t lo, size_t hi) {
  AxTrainer *t = ctx;
  for (int i = 0; i < t->n_early_tensors; i++) {
    const AxTensorRange *r = &t->early_tensors[i];
    if (r->offset >= hi || r->offset + r->count <= lo) continue;
    int b = ax_trainer_final_after(t, r);
    if (b < 0 || b < t->early_done) return 0;
  }
  return 1;
}

static int after_block(void *ctx, int block) {
  AxTrainer *t = ctx;
  t->early_done = block;
  return ax_early_sum_start(t->early, final_now, t);
}

int ax_trainer_early_begin(AxTrainer *t) {
  if (!ax_trainer_early_on(t) || t->validating) return AX_OK;
  if (++t->backwards < t->n_micro) return AX_OK; /* not the step's last backward yet */
  t->early_cc = ax_comm_config_as(&t->grid.comm_cfg, AX_TRAFFIC_DATA_PARALLEL);
  t->early_spec = ax_trainer_reduce_spec(t, &t->early_cc);
  AX_TRY(ax_early_sum_open(&t->early, &t->off, &t->early_spec, t->early_cuts,
                           t->n_early_tensors));
  t->early_spec.early = t->early;
  t->early_done = t->spec.l1 - t->spec.l0; /* no block done yet */
  ax_stage_set_block_hook(t->stage, after_block, t);
  return AX_OK;
}

void ax_trainer_early_end_backward(AxTrainer *t) {
  if (!t->early) return;
  ax_stage_set_block_hook(t->stage, NULL, NULL);
  int pieces;
  ax_early_sum_counts(t->early, &t->early_in_backward, &pieces);
}

void ax_trainer_early_close(AxTrainer *t, int step) {
  if (!t->early) return;
  int started, pieces;
  ax_early_sum_counts(t->early, &started, &pieces); /* all of them by now */
  if (!t->early_reported++)
    ax_log("dp-sync-early: step %d started %d of %d piece(s) of stage %d's data-parallel sum "
           "during the last micro-batch's backward", step, t->early_in_backward, pieces,
           t->grid.stage);
  t->early_started += t->early_in_backward;
  ax_early_sum_close(t->early);
  t->early = NULL;
}

