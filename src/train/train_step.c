/* train_step.c — one training step on this rank: the pipeline phase (the scheduler calling
 * back into this rank's stage), the gradient sync (tied embedding across the row's ends, then
 * the data-parallel column; or, fused, the tied embedding over all its holders and the column
 * without it), global-norm clipping, AdamW, and the loss every rank agrees on;
 * and forward-only validation. Each collective counts its bytes as its traffic class
 * (mpi/traffic.h: embedding_sync, data_parallel; the p2p engine counts the pipeline's), and
 * each step adds what it sent to the step totals of the summary. Each phase starts the watchdog's clock (src/core/watchdog.h) and
 * notes its collectives; the scheduler and the interleaver note the rest. */
#include <math.h>
#include <signal.h>
#include <string.h>

#include "models/tp_shard.h"
#include "mpi/mpi_util.h"
#include "offload/host_sumsq.h"
#include "src/core/error.h"
#include "src/core/log.h"
#include "src/core/timer.h"
#include "src/core/watchdog.h"
#include "trainer_impl.h"

/* ------------------------------------------------------------------ stage callbacks */

static size_t mb_offset(const AxTrainer *t, int mb) { return (size_t)mb * t->micro * t->cfg.model.seq; }

static int cb_forward(void *ctx, int mb, int slot, const void *input, AxMemKind input_mem,
                      const void **output) {
  AxTrainer *t = ctx;
  const int32_t *tokens = t->spec.first ? t->inputs + mb_offset(t, mb) : NULL;
  AX_TRY(ax_step_hooks_run(&t->hooks, AX_STEP_TICK, 0, 0));
  if (!t->validating) /* the micro-batch's first sequence in the step's global batch */
    ax_stage_set_dropout_origin(t->stage, (uint64_t)t->step_now,
                                (uint64_t)t->grid.row * t->shard + (uint64_t)mb * t->micro);
  AX_TRY(ax_stage_forward(t->stage, slot, tokens, input, input_mem));
  *output = ax_stage_output(t->stage, slot);
  if (t->validating && t->spec.last) { /* forward-only: the loss, no gradients */
    double mean;
    AX_TRY(ax_stage_loss_backward(t->stage, slot, t->targets + mb_offset(t, mb), 0.0f, &mean));
    t->loss_sum += mean;
  }
  return AX_OK;
}

static int cb_backward(void *ctx, int mb, int slot, const void *doutput, AxMemKind doutput_mem,
                       const void **dinput) {
  AxTrainer *t = ctx;
  AX_TRY(ax_step_hooks_run(&t->hooks, AX_STEP_TICK, 0, 0));
  AX_TRY(ax_trainer_early_begin(t)); /* --dp-sync-early: the step's last backward */
  if (t->spec.last) {
    /* d(step loss)/d(token loss): the loss is the mean over every token of the global batch */
    float dloss = t->loss_scale.scale / ((float)t->cfg.data.batch * (float)t->cfg.model.seq);
    double mean;
    AX_TRY(ax_stage_loss_backward(t->stage, slot, t->targets + mb_offset(t, mb), dloss, &mean));
    t->loss_sum += mean;
  } else {
    AX_TRY(ax_stage_backward(t->stage, slot, doutput, doutput_mem));
  }
  ax_trainer_early_end_backward(t);
  *dinput = ax_stage_dinput(t->stage);
  return AX_OK;
}

int ax_trainer_make_ops(AxTrainer *t, AxStageOps *ops) {
  *ops = (AxStageOps){.ctx = t, .forward = cb_forward, .backward = cb_backward};
  return AX_OK;
}

/* ------------------------------------------------------------------ reductions */

/* The step's small agreements wait as the engines do (ax_link_wait_collective). */
static int sum_over(const AxTrainer *t, MPI_Comm comm, double *x) {
  if (comm == MPI_COMM_NULL) return AX_OK;
  MPI_Request req;
  AX_MPI(MPI_Iallreduce(MPI_IN_PLACE, x, 1, MPI_DOUBLE, MPI_SUM, comm, &req));
  return ax_link_wait_collective(&t->grid.comm_cfg, comm, &req);
}

/* Mean loss of the global batch: the last stage of each row holds its row's sum (tensor
 * parallel: each Z rank its sequences', counted by the X = Y = 0 ranks). */
static int agree_on_loss(AxTrainer *t, int batches, double *loss) {
  const int *c = t->grid.tc;
  int counts = t->spec.last && c[AX_TP_X] == 0 && c[AX_TP_Y] == 0;
  double row = counts ? t->loss_sum / (t->n_micro * (double)batches * t->grid.tp[AX_TP_Z]) : 0.0;
  AX_WD_NOTE(-1, "in the all-reduce of the loss over all ranks");
  AX_TRY(sum_over(t, t->grid.world, &row));
  *loss = row / t->grid.D;
  return AX_OK;
}

/* --fuse-embedding-sync on a rank that holds a tied copy of wte (the ends of a pipeline). */
static int fuses_embedding(const AxTrainer *t) {
  return t->cfg.compression.fuse_embedding_sync && t->grid.embed != MPI_COMM_NULL;
}

/* The tied LM head: the first and last stage of every row hold wte; their gradients are summed
 * so every copy takes the same update. Unfused: over the row's pair, before the data-parallel
 * sum (sums commute), which sums wte again with the rest. Fused (Optimus-CC §6): one all-reduce
 * over all 2 x D holders, and the data-parallel sum leaves wte out (reduce_spec). */
static int sync_tied(AxTrainer *t) {
  int fused = fuses_embedding(t);
  MPI_Comm comm = fused ? t->grid.embed : t->grid.tied;
  if (comm == MPI_COMM_NULL) return AX_OK;
  const AxStageLayout *lay = ax_stage_layout_of(t->stage);
  int other = t->grid.row * t->grid.P + (t->spec.first ? t->grid.P - 1 : 0);
  if (fused)
    AX_WD_NOTE(-1, "in the fused tied-embedding gradient all-reduce over its %d holders",
               2 * t->grid.D);
  else
    AX_WD_NOTE(other, "in the tied-embedding gradient all-reduce with rank %d", other);
  double t0 = ax_trace_begin(&t->trace);
  AxCommConfig cc = ax_comm_config_as(&t->grid.comm_cfg, AX_TRAFFIC_EMBEDDING_SYNC);
  AX_TRY(ax_allreduce(comm, &cc, t->off.grads + lay->offset[AX_P_WTE], lay->count[AX_P_WTE],
                      AX_COMM_F32, ax_trainer_grads_algo(t), &t->comm_bytes));
  ax_trace_end(&t->trace, AX_EV_ALLREDUCE, -1, t0);
  return AX_OK;
}

/* Whether overflows are checked for: dynamic loss scaling, or --debug-overflow-step, which
 * poisons one gradient of the last rank at that step to test the path. */
static int checks_overflow(const AxTrainer *t) {
  return t->loss_scale.enabled || t->cfg.debug.debug_overflow_step;
}

static int poisons(const AxTrainer *t, int step) {
  return step == t->cfg.debug.debug_overflow_step && t->grid.rank == t->grid.size - 1 && t->off.n;
}

/* *overflow = 1 on every rank when `local` is 1 on some rank. */
static int agree_overflow(AxTrainer *t, int local, int *overflow) {
  AX_WD_NOTE(-1, "in the gradient overflow check over all ranks");
  if (t->grid.size == 1) {
    *overflow = local;
    return AX_OK;
  }
  MPI_Request req;
  AX_MPI(MPI_Iallreduce(&local, overflow, 1, MPI_INT, MPI_MAX, t->grid.world, &req));
  return ax_link_wait_collective(&t->grid.comm_cfg, t->grid.world, &req);
}

/* Dynamic loss scaling: did any rank's (host) gradients overflow? Every rank gets the same
 * answer. */
static int any_overflow(AxTrainer *t, int step, int *overflow) {
  *overflow = 0;
  if (!checks_overflow(t)) return AX_OK;
  if (poisons(t, step)) t->off.grads[0] = INFINITY;
  return agree_overflow(t, !isfinite(ax_host_sumsq_pool(t->off.pool, t->off.grads, t->off.n)),
                        overflow);
}

/* AdamW's settings this step: Adam's own, and in *codec those of the parameters a compressing
 * job gives its codec's (train_compress.c: mark_codec_settings), which may carry the first
 * moment and freeze the second; codec must outlive the settings' use. */
static AxAdamWHyper adamw_hyper(const AxTrainer *t, double lr, float grad_scale,
                                AxAdamWHyper *codec) {
  AxAdamWHyper h = {.lr = (float)lr, .beta1 = (float)t->cfg.optim.beta1,
                    .beta2 = (float)t->cfg.optim.beta2, .eps = (float)t->cfg.optim.eps,
                    .weight_decay = (float)t->cfg.optim.weight_decay,
                    .step = (int)(t->adam_steps + 1), .grad_scale = grad_scale};
  *codec = h;
  codec->beta1 = (float)ax_trainer_adam_beta1(t);
  codec->v_frozen_at = ax_trainer_v_frozen_at(t);
  h.codec = codec;
  return h;
}

/* The global gradient norm: each stage's sum of squares summed along the pipeline row and over
 * its tensor-parallel grid. */
static int finish_norm(AxTrainer *t, double sumsq, double *norm) {
  AX_WD_NOTE(-1, "in the gradient-norm sum along the pipeline row and the tensor groups");
  AX_TRY(sum_over(t, t->grid.pipe, &sumsq));
  for (int g = 0; g < 3; g++) AX_TRY(sum_over(t, t->grid.tpc[g], &sumsq));
  *norm = sqrt(sumsq > 0 ? sumsq : 0) / t->loss_scale.scale;
  return AX_OK;
}

/* The clipping factor of the global norm (1: no clipping). */
static float clip_factor(const AxTrainer *t, double norm) {
  return t->cfg.optim.grad_clip > 0 && norm > t->cfg.optim.grad_clip ? (float)(t->cfg.optim.grad_clip / norm)
                                                          : 1.0f;
}

static double grads_span(void *ctx, size_t lo, size_t hi) {
  const AxOffload *o = ctx;
  return ax_host_sumsq_pool(o->pool, o->grads + lo, hi - lo);
}

/* DGC's local gradient clipping (ax_trainer_row_clips_locally): this rank's own gradient, the
 * norm of its pipeline row's (and tensor-parallel grid's) like the global one, scaled down to
 * the local threshold before the codec accumulates it where the stage compresses. A range the
 * data-parallel ranks summed already (r's summed range: the tied embedding, by Zen, the rows'
 * all-gather or the fused tied sum) is no rank's own gradient: scaled by each rank's own factor
 * it would give every replica another update, so it is left out here and clipped by the
 * global norm once the rest is summed (clip_left_out); so is the tied embedding's copy where
 * another stage compresses nothing (ax_trainer_clip_left_out). */
static int clip_locally(AxTrainer *t, const AxReduceSpec *r) {
  double norm, limit = ax_trainer_local_clip_threshold(t);
  size_t n = t->off.n, lo, hi;
  ax_trainer_clip_left_out(t, r, &lo, &hi);
  double sumsq = ax_reduce_spec_sumsq(r, 0, lo, grads_span, &t->off) +
                 ax_reduce_spec_sumsq(r, hi, n, grads_span, &t->off);
  AX_TRY(finish_norm(t, sumsq, &norm));
  if (!ax_trainer_clips_locally(t) || !(norm > limit)) return AX_OK;
  float f = (float)(limit / norm);
  for (size_t i = 0; i < n; i++)
    if (i < lo || i >= hi) t->off.grads[i] *= f;
  return AX_OK;
}

/* Under local clipping, the range left out of it (clip_locally) clipped as without it: by the
 * global norm of the summed gradient, the same factor on every replica. */
static void clip_left_out(AxTrainer *t, const AxReduceSpec *r, double norm) {
  float f = clip_factor(t, norm);
  size_t lo, hi;
  ax_trainer_clip_left_out(t, r, &lo, &hi);
  for (size_t i = lo; i < hi; i++) t->off.grads[i] *= f;
}

/* Sum the gradients over the data-parallel column and update the master weights, chunk by
 * chunk; interleaved unless clipping needs the whole norm first (or --offload 0). With DGC's
 * local clipping each rank's gradient is clipped before the sum and the sum is not. */
static int reduce_and_update(AxTrainer *t, double lr, double *norm) {
  AxCommConfig cc = ax_comm_config_as(&t->grid.comm_cfg, AX_TRAFFIC_DATA_PARALLEL);
  AxReduceSpec late = ax_trainer_reduce_spec(t, &cc);
  const AxReduceSpec r = t->early ? t->early_spec : late; /* started in the backward */
  void *params = ax_stage_params(t->stage);
  float unscale = 1.0f / t->loss_scale.scale;
  double sumsq;
  int may_clip = t->cfg.optim.grad_clip > 0;
  if (t->cfg.optim.offload && !may_clip) {
    AxAdamWHyper codec, h = adamw_hyper(t, lr, unscale, &codec);
    AX_TRY(ax_offload_reduce_update(&t->off, &r, params, &h, &sumsq));
    return finish_norm(t, sumsq, norm);
  }
  if (ax_trainer_row_clips_locally(t)) AX_TRY(clip_locally(t, &r));
  int local = ax_trainer_clips_locally(t);
  AX_TRY(ax_offload_reduce(&t->off, &r, &sumsq));
  AX_TRY(finish_norm(t, sumsq, norm));
  if (local) clip_left_out(t, &r, *norm);
  AxAdamWHyper codec, h = adamw_hyper(t, lr, (local ? 1.0f : clip_factor(t, *norm)) * unscale,
                                      &codec);
  return ax_offload_update_all(&t->off, params, &h, &t->trace);
}

/* Dynamic loss scaling's record of a step, once its update is done or skipped (so the update
 * divides by the scale its gradients were computed with): where the scale changes, the codec
 * state that keeps gradients across steps at the old scale (the data-parallel codecs' error
 * feedback and momenta, the backward links' lazy error) changes with it. */
static void record_loss_scale(AxTrainer *t, int overflow) {
  float factor = ax_loss_scale_update(&t->loss_scale, overflow);
  if (factor == 1.0f) return;
  ax_grad_compress_rescale(&t->gc, factor);
  if (t->have_backprop) ax_backprop_rescale(&t->backprop, factor);
}

/* The skipped step of an overflow (dynamic loss scaling): 1 when the step is skipped. */
static int skip_on_overflow(AxTrainer *t, int step, int overflow, AxStepRecord *rec) {
  if (!overflow) return 0;
  record_loss_scale(t, 1);
  rec->grad_norm = NAN;
  ax_warn("step %d: gradients overflowed; step skipped on every rank (loss scale now %g)", step,
          t->loss_scale.scale);
  return 1;
}

/* --optimizer device: the overflow check, then the gradients' sum where the device optimizer
 * sums them (device_opt.h): the tied embedding, then the data-parallel column, as the host
 * optimizer sums them; *sumsq gets the norm's part. *skip = 1: an overflow skips the step. */
static int device_sum(AxTrainer *t, int step, void *grads, AxStepRecord *rec, double *sumsq,
                      int *skip) {
  int overflow = 0;
  if (checks_overflow(t)) {
    AX_WD_NOTE(-1, "checking the gradients for an overflow on the device");
    AX_TRY(ax_device_opt_sumsq(&t->dopt, grads, sumsq));
    AX_TRY(agree_overflow(t, !isfinite(*sumsq), &overflow));
  }
  *skip = skip_on_overflow(t, step, overflow, rec);
  if (*skip) return AX_OK;
  if (t->dopt.sum != AX_DEVICE_SUM_NONE) {
    AX_WD_NOTE(-1, "bringing the gradients where they are summed");
    AX_TRY(ax_device_opt_grads_to_host(&t->dopt, grads));
    AX_TRY(ax_trainer_sync_embed_data(t));
    AX_TRY(sync_tied(t));
  }
  AxCommConfig cc = ax_comm_config_as(&t->grid.comm_cfg, AX_TRAFFIC_DATA_PARALLEL);
  AxReduceSpec r = ax_trainer_reduce_spec(t, &cc);
  AX_WD_NOTE(-1, "summing the gradients over the data-parallel ranks and taking their norm");
  return ax_device_opt_reduce(&t->dopt, &r, grads, sumsq);
}

/* --optimizer device: the norm and AdamW where the gradients are, once they are summed. */
static int device_optimizer_step(AxTrainer *t, int step, AxStepRecord *rec) {
  void *grads = ax_stage_grads(t->stage);
  if (poisons(t, step)) {
    const float inf = INFINITY;
    AX_TRY(t->be->ops->upload_f32(t->be, grads, &inf, 1, AX_STREAM_COMPUTE));
  }
  double sumsq = 0;
  int skip;
  AX_TRY(device_sum(t, step, grads, rec, &sumsq, &skip));
  if (skip) return AX_OK;
  AX_TRY(finish_norm(t, sumsq, &rec->grad_norm));
  float unscale = 1.0f / t->loss_scale.scale;
  AxAdamWHyper codec, h = adamw_hyper(t, rec->lr, clip_factor(t, rec->grad_norm) * unscale,
                                      &codec);
  double t0 = ax_trace_begin(&t->trace);
  ax_device_opt_update(&t->dopt, ax_stage_params(t->stage), grads, &h);
  ax_trace_end(&t->trace, AX_EV_OPTIMIZER, -1, t0);
  t->adam_steps++;
  record_loss_scale(t, 0);
  return AX_OK;
}

int ax_trainer_state_to_host(AxTrainer *t) {
  return t->cfg.optim.optimizer_device ? ax_device_opt_to_host(&t->dopt) : AX_OK;
}

/* The schedule follows the updates taken, not the steps: a step skipped for an overflow does
 * not advance it (as Megatron-LM and DeepSpeed step their schedulers on updates only). */
static int optimizer_step(AxTrainer *t, int step, AxStepRecord *rec) {
  rec->lr = ax_lr_at(&t->lr, (int)t->adam_steps + 1);
  if (t->cfg.optim.optimizer_device) return device_optimizer_step(t, step, rec);
  AX_WD_NOTE(-1, "copying the gradients to host memory");
  AX_TRY(ax_offload_download_grads(&t->off, ax_stage_grads(t->stage)));
  int overflow;
  AX_TRY(any_overflow(t, step, &overflow));
  if (skip_on_overflow(t, step, overflow, rec)) return AX_OK;
  AX_TRY(ax_trainer_sync_embed_data(t));
  AX_TRY(sync_tied(t));
  ax_trainer_compress_step(t, step);
  int rc = reduce_and_update(t, rec->lr, &rec->grad_norm);
  ax_trainer_early_close(t, step);
  AX_TRY(rc);
  t->adam_steps++;
  record_loss_scale(t, 0);
  return AX_OK;
}

/* ------------------------------------------------------------------ step and validation */

static int load_batch(AxTrainer *t, AxLoader *L) {
  if (!t->have_data) return AX_OK;
  AX_WD_NOTE(-1, "loading a batch");
  return ax_loader_next(L, t->grid.row * t->shard, t->shard, t->inputs, t->targets);
}

/* --debug-hang-rank/-step/-mode: this rank stops making progress in this step's pipeline,
 * or dies as it begins. */
static void debug_hang(AxTrainer *t, int step) {
  int mode = t->cfg.debug.debug_hang_mode;
  if (t->grid.rank != t->cfg.debug.debug_hang_rank || step != t->cfg.debug.debug_hang_step) return;
  if (mode == AX_DEBUG_HANG_KILL) raise(SIGKILL);
  if (mode == AX_DEBUG_HANG_SLEEP || mode == AX_DEBUG_HANG_DROP)
    t->sched.hang = mode == AX_DEBUG_HANG_SLEEP ? AX_SCHED_HANG_SLEEP : AX_SCHED_HANG_DROP;
}

static int pipeline_phase(AxTrainer *t) {
  double t0 = ax_trace_begin(&t->trace);
  AX_TRY(ax_sched_train(&t->sched, t->n_micro));
  ax_trace_end(&t->trace, AX_EV_PIPELINE, -1, t0);
  return AX_OK;
}

int ax_trainer_step(AxTrainer *t, int step, AxStepRecord *rec) {
  AxTraffic before = t->traffic; /* this step's bytes: what it adds */
  AxTpStats tp_before = t->tpm.stats;
  ax_wd_phase(AX_WD_STEP, step);
  ax_trace_set_step(&t->trace, step);
  double t0 = ax_now(), tr0 = ax_trace_begin(&t->trace);
  AX_TRY(ax_step_hooks_run(&t->hooks, AX_STEP_BEGIN, step, 0));
  /* the weights changed in the last step: their first all-gathers start before the batch */
  AX_TRY(ax_stage_begin_pass(t->stage));
  AX_TRY(ax_stage_zero_grads(t->stage));
  AX_TRY(load_batch(t, &t->train));
  t->loss_sum = 0;
  t->validating = 0;
  t->step_now = step;
  debug_hang(t, step);
  ax_trainer_backprop_step(t, step);
  t->backwards = 0;
  if (ax_trainer_early_on(t)) ax_trainer_compress_step(t, step); /* before the sum starts */
  AX_TRY(pipeline_phase(t));
  AX_WD_NOTE(-1, "in the all-reduces over Z of the replicated tensors' gradients");
  AX_TRY(ax_stage_reduce_replicas(t->stage));
  AX_TRY(ax_step_hooks_run(&t->hooks, AX_STEP_BEFORE_OPTIMIZER, step, 0));
  long long updates = t->adam_steps;
  AX_TRY(optimizer_step(t, step, rec));
  AX_TRY(ax_step_hooks_run(&t->hooks, AX_STEP_AFTER_OPTIMIZER, step, t->adam_steps != updates));
  AX_TRY(agree_on_loss(t, 1, &rec->loss));
  /* after the loss, where every rank meets anyway (the memory checkpoints settle their copy
   * here: before the optimizer, their collective held each stage's sums until the first
   * stage's pipeline ended) */
  AX_TRY(ax_step_hooks_run(&t->hooks, AX_STEP_AFTER_LOSS, step, 0));
  if (!isfinite(rec->loss))
    return AX_FAIL("loss is %f at step %d: training diverged", rec->loss, step);
  AX_WD_NOTE(-1, "waiting for the device to finish the step");
  AX_TRY(ax_sync(t->be));
  /* inside the step's time: what attaches here (a memory checkpoint starting its copy) counts
   * where the step times compare runs with and without it */
  AX_TRY(ax_step_hooks_run(&t->hooks, AX_STEP_END, step, 0));
  ax_trace_end(&t->trace, AX_EV_STEP, -1, tr0);
  rec->ms = (ax_now() - t0) * 1e3;
  ax_traffic_add_delta(&t->step_traffic, &t->traffic, &before);
  ax_tp_stats_add_delta(&t->step_tp, &t->tpm.stats, &tp_before);
  t->traffic_steps++;
  rec->step = step;
  rec->val_loss = NAN;
  return AX_OK;
}

static int validate(AxTrainer *t, double *val_loss) {
  if (t->have_data) ax_loader_set_position(&t->val, 0); /* same batches every time */
  t->loss_sum = 0;
  t->validating = 1;
  AX_TRY(ax_stage_begin_pass(t->stage));
  for (int i = 0; i < t->cfg.output.val_steps; i++) {
    AX_TRY(load_batch(t, &t->val));
    AX_TRY(ax_sched_forward(&t->sched, t->n_micro));
  }
  t->validating = 0;
  return agree_on_loss(t, t->cfg.output.val_steps, val_loss);
}

int ax_trainer_validate_if_due(AxTrainer *t, int step, AxStepRecord *rec) {
  if (!t->have_val || t->cfg.output.val_steps == 0) return AX_OK;
  int due = step == t->cfg.optim.steps || (t->cfg.output.val_every && step % t->cfg.output.val_every == 0);
  if (!due) return AX_OK;
  ax_wd_phase(AX_WD_VALIDATION, step);
  AX_TRY(validate(t, &rec->val_loss));
  if (!isnan(t->floor))
    ax_log("val  step %d | val loss %.6f | floor %.4f (gap %.4f)", step, rec->val_loss, t->floor,
           rec->val_loss - t->floor);
  else
    ax_log("val  step %d | val loss %.6f", step, rec->val_loss);
  return AX_OK;
}
