/* trainer_memckpt.c — the trainer's side of in-memory checkpoints (src/memckpt/memckpt.h):
 * the run's name, what the module is lent (AxMemCkptView) and may ask (AxMemCkptOps: the
 * manifest, the whole stage gathered from its shards, loading a checkpoint, the link's cost),
 * and its hooks at the step's named points (train_hooks.h). */
#include <stdio.h>
#include <string.h>

#include "src/core/crc32.h"
#include "src/core/error.h"
#include "src/core/options.h"
#include "trainer_impl.h"

/* Options that leave a run's trajectory as it is, or that a restart may change (the grid,
 * the outputs, the schedule of checkpoints, the debugging hooks): left out of the derived run
 * name, so that a resumed run finds its tree. Every other option is part of the name. */
static const char *const NAME_IGNORES[] = {
    "micro-batch", "g-inter", "g-data", "gx", "gy", "gz", "tp-oar", "tp-ors", "tp-oag",
    "tp-ag-cache", "pipeline-limit", "stage-layers", "allreduce", "ranks-per-node",
    "emulate-link", "steps", "optimizer-threads", "progress", "dry-run", "device",
    "cuda-aware-mpi", "threads", "bind", "metrics", "metrics-jsonl", "tensorboard", "save", "val-every", "val-steps",
    "val-data", "trace", "trace-steps", "log-every", "quiet", "summary", "timing-skip",
    "timing-steps", "peak-tflops", "checkpoint-dir", "checkpoint-every", "keep", "resume",
    "memory-checkpoint-every", "replicas", "run-name", "memory-dir", "replica-schedule",
    "replica-idle-share", "debug-delay-stage", "debug-delay-ms", "debug-forward-ms",
    "debug-backward-ms", "step-timeout", "debug-hang-rank", "debug-hang-step",
    "debug-hang-mode", "bucket-size", "coarsening"};

static int name_ignores(const char *option) {
  for (size_t i = 0; i < sizeof NAME_IGNORES / sizeof *NAME_IGNORES; i++)
    if (!strcmp(option, NAME_IGNORES[i])) return 1;
  return 0;
}

/* "axonn-NAME": --run-name, or "run-" and a hash of every option that shapes the trajectory
 * (two runs that differ in --lr get two trees) and of the model as built (--init, --model). */
static void derive_name(const AxTrainer *t, char *buf, size_t cap) {
  if (t->cfg.memckpt.run_name) {
    snprintf(buf, cap, "%s", t->cfg.memckpt.run_name);
    return;
  }
  const AxGptConfig *m = &t->model;
  char text[4200];
  snprintf(text, sizeof text, "L%d C%d NH%d V%d", m->layers, m->channels, m->heads, m->vocab);
  uint32_t lo = ax_crc32(0, text, strlen(text)), hi = ax_crc32(0x9e3779b9u, text, strlen(text));
  const AxOptionTable *opts = &AX_TRAIN_OPTIONS;
  for (int i = 0; i < opts->n_opts; i++) {
    const AxOption *o = &opts->opts[i];
    if (name_ignores(o->name)) continue;
    char value[4096];
    snprintf(text, sizeof text, "%s=%s;", o->name,
             ax_options_value_text(o, &t->cfg, value, sizeof value));
    lo = ax_crc32(lo, text, strlen(text));
    hi = ax_crc32(hi ^ 0x5bd1e995u, text, strlen(text));
  }
  snprintf(buf, cap, "run-%08x%08x", (unsigned)hi, (unsigned)lo);
}

/* ------------------------------------------------------------------ what it may ask */

static int op_manifest(void *ctx, int step, AxCkptFile *files, AxCkptManifest *man) {
  return ax_trainer_build_manifest(ctx, step, files, man);
}

static int op_load(void *ctx, const char *step_dir, int *step) {
  return ax_trainer_load_checkpoint(ctx, step_dir, step);
}

static int op_link_cost(void *ctx, MPI_Comm probe, AxLinearCost *out) {
  return ax_trainer_link_cost(ctx, probe, out);
}

static int op_gather_open(void *ctx) {
  AxTrainer *t = ctx;
  float *const state[3] = {t->off.master, t->off.m, t->off.v};
  return ax_trainer_whole_open(t, &t->mc_whole, state, 3, 0);
}

static int op_gather(void *ctx, const AxStageLayout **whole, float *const **buf) {
  AxTrainer *t = ctx;
  float *const state[3] = {t->off.master, t->off.m, t->off.v};
  AX_TRY(ax_trainer_whole_gather(t, &t->mc_whole, state));
  *whole = &t->mc_whole.whole;
  *buf = t->mc_whole.buf;
  return AX_OK;
}

static void op_gather_close(void *ctx) {
  AxTrainer *t = ctx;
  ax_trainer_whole_close(&t->mc_whole);
}

/* ------------------------------------------------------------------ its hooks */

static int at_begin(void *mc, int step, int arg) {
  (void)arg;
  return ax_memckpt_step_begin(mc, step);
}
static int at_tick(void *mc, int step, int arg) {
  (void)step, (void)arg;
  return ax_memckpt_tick(mc);
}
static int at_before_optimizer(void *mc, int step, int arg) {
  (void)step, (void)arg;
  return ax_memckpt_before_optim(mc);
}
static int at_after_optimizer(void *mc, int step, int updated) {
  (void)step;
  ax_memckpt_after_optim(mc, updated);
  return AX_OK;
}
static int at_after_loss(void *mc, int step, int arg) {
  (void)step, (void)arg;
  return ax_memckpt_after_loss(mc);
}
static int at_end(void *mc, int step, int arg) {
  (void)arg;
  return ax_memckpt_step_end(mc, step);
}

int ax_trainer_setup_memckpt(AxTrainer *t) {
  const AxTrainConfig *c = &t->cfg;
  if (!c->memckpt.memory_checkpoint_every) return AX_OK;
  derive_name(t, t->run_name, sizeof t->run_name);
  AxMemCkptView v = {c->memckpt, t->run_name, t->have_grid ? &t->grid : NULL, t->links, &t->off,
                     &t->model, &t->spec, ax_trainer_tp_on(t), c->optim.optimizer_device,
                     c->grid.ranks_per_node, c->debug.debug_hang_rank, c->debug.debug_hang_step,
                     c->debug.debug_hang_mode};
  AxMemCkptOps ops = {t, op_manifest, op_load, op_link_cost, op_gather_open, op_gather,
                      op_gather_close};
  AX_TRY(ax_memckpt_create(&t->mc, &v, &ops));
  AxStepSubscriber s = {{at_begin, at_tick, at_before_optimizer, at_after_optimizer,
                         at_after_loss, at_end}, t->mc};
  return ax_step_hooks_add(&t->hooks, &s);
}

int ax_trainer_memckpt_close(AxTrainer *t) { return ax_memckpt_close(t->mc); }
void ax_trainer_memckpt_abandon(AxTrainer *t) { ax_memckpt_abandon(t->mc); }
void ax_trainer_memckpt_stats(const AxTrainer *t, AxMemCkptStats *out) {
  ax_memckpt_stats(t->mc, out);
}
