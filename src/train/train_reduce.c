/* train_reduce.c — what the step's gradient sums are told: the all-reduce algorithm of the
 * gradients and the data-parallel sum's spec (offload/interleave.h: the column, its chunking
 * and waiting, the norm's skipped spans, the range summed before it, the codec parts). Shared
 * by the step (train_step.c) and the early sum (train_early_sync.c). */
#include "models/tp_shard.h"
#include "trainer_impl.h"

/* The gradients' all-reduce algorithm: --allreduce's, or the one that lets CUDA-aware MPI sum
 * the device optimizer's gradients in device memory (device_opt.h). */
AxAllreduceAlgo ax_trainer_grads_algo(const AxTrainer *t) {
  return ax_device_opt_algo(&t->dopt, (AxAllreduceAlgo)t->cfg.grid.allreduce);
}

/* cc: the grid's configuration as data_parallel traffic (lives as long as the spec is used). */
AxReduceSpec ax_trainer_reduce_spec(AxTrainer *t, const AxCommConfig *cc) {
  AxReduceSpec r = {.comm = t->grid.D > 1 ? t->grid.data : MPI_COMM_NULL,
                    .cc = cc,
                    .algo = ax_trainer_grads_algo(t), .bytes = &t->comm_bytes,
                    .window = 2, .trace = &t->trace,
                    .progress = t->cfg.optim.progress ? AX_PROGRESS_THREAD : AX_PROGRESS_CALLS,
                    .compress = t->codec ? &t->gc : NULL};
  const AxStageLayout *lay = ax_stage_layout_of(t->stage);
  size_t wte_lo = lay->offset[AX_P_WTE], wte_hi = wte_lo + lay->count[AX_P_WTE];
  for (int id = 0; id < AX_N_PARAMS; id++) {
    if (!lay->has[id]) continue;
    /* the tied wte counts once, on the first stage; a tensor-parallel replica on one rank */
    int tied_copy = id == AX_P_WTE && t->grid.P > 1 && t->spec.last;
    if (tied_copy || (t->spec.tp && !ax_tp_param_counted(t->spec.tp, id))) {
      r.norm_skip[r.n_norm_skip].lo = lay->offset[id];
      r.norm_skip[r.n_norm_skip++].hi = lay->offset[id] + lay->count[id];
    }
  }
  if (ax_trainer_wte_presummed(t)) { /* summed over the data column already */
    r.summed_lo = wte_lo;
    r.summed_hi = wte_hi;
  }
  return r;
}

