/* trainer_ckpt_state.c — what a checkpoint holds of the trainer, shared by the file
 * checkpoints (trainer_ckpt.c) and the memory ones (trainer_memckpt.c): the manifest of a step,
 * and loading a checkpoint step directory (any grid) into the trainer. */
#include <stdlib.h>
#include <string.h>

#include "src/core/error.h"
#include "src/core/log.h"
#include "src/io/checkpoint.h"
#include "trainer_impl.h"

int ax_trainer_build_manifest(AxTrainer *t, int step, AxCkptFile *files, AxCkptManifest *man) {
  *man = (AxCkptManifest){.step = step, .adam_steps = t->adam_steps,
                          .data_position = t->have_data ? ax_loader_position(&t->train) : 0,
                          .skipped = t->loss_scale.skipped, .loss_scale = t->loss_scale.scale,
                          .clean_steps = t->loss_scale.clean_steps, .model = t->model,
                          .batch = t->cfg.data.batch, .seq = t->cfg.model.seq, .stages = t->grid.P,
                          .files = files, .n_files = t->grid.P, .have_run = 1,
                          .seed = t->cfg.data.seed, .lr = t->cfg.optim.lr, .have_dropout = 1,
                          .dropout = t->cfg.model.dropout,
                          .attention_dropout = t->cfg.model.attention_dropout};
  snprintf(man->data, sizeof man->data, "%s", t->cfg.data.shards ? t->cfg.data.shards : "-");
  for (int s = 0; s < t->grid.P; s++) {
    AxCkptRecord *r;
    int n;
    AX_TRY(ax_ckpt_stage_records(&t->model, t->first_block[s], t->first_block[s + 1], s,
                                 t->grid.P, &r, &n));
    AxCkptRecord *all = realloc(man->records, (size_t)(man->n_records + n) * sizeof *all);
    if (!all) {
      free(r);
      return AX_FAIL("out of memory building the checkpoint manifest");
    }
    memcpy(all + man->n_records, r, (size_t)n * sizeof *r);
    man->records = all;
    man->n_records += n;
    free(r);
  }
  return AX_OK;
}

static int same_shape(const AxTrainer *t, const AxCkptManifest *man, const char *step_dir) {
  const AxGptConfig *a = &man->model, *b = &t->model;
  if (a->layers != b->layers || a->channels != b->channels || a->heads != b->heads ||
      a->vocab != b->vocab || a->padded_vocab != b->padded_vocab)
    return AX_FAIL("checkpoint %s holds a model L=%d C=%d NH=%d V=%d; this run's is L=%d C=%d "
                   "NH=%d V=%d", step_dir, a->layers, a->channels, a->heads, a->vocab,
                   b->layers, b->channels, b->heads, b->vocab);
  if (man->batch != t->cfg.data.batch || man->seq != t->cfg.model.seq)
    return AX_FAIL("checkpoint %s was written with --batch %d --seq %d; resume with the same "
                   "(this run: --batch %d --seq %d)", step_dir, man->batch, man->seq,
                   t->cfg.data.batch, t->cfg.model.seq);
  return AX_OK;
}

/* A resumed run may change these on purpose (a new data mix, a lower learning rate), but
 * never silently. */
static void warn_changes(const AxTrainer *t, const AxCkptManifest *man, const char *step_dir) {
  const char *data = t->cfg.data.shards ? t->cfg.data.shards : "-";
  if (!man->have_run || t->grid.rank != 0) return;
  if (man->seed != t->cfg.data.seed)
    ax_warn("resume: --seed %lld differs from the %lld that %s was trained with", t->cfg.data.seed,
            man->seed, step_dir);
  if (man->lr != t->cfg.optim.lr)
    ax_warn("resume: --lr %g differs from the %g that %s was trained with", t->cfg.optim.lr, man->lr,
            step_dir);
  if (man->have_dropout && (man->dropout != t->cfg.model.dropout ||
                            man->attention_dropout != t->cfg.model.attention_dropout))
    ax_warn("resume: --dropout %g --attention-dropout %g differ from the %g and %g that %s was "
            "trained with", t->cfg.model.dropout, t->cfg.model.attention_dropout, man->dropout,
            man->attention_dropout, step_dir);
  if (strcmp(man->data, data) != 0)
    ax_warn("resume: --data '%s' differs from '%s' that %s was trained on (the data position "
            "carries over)", data, man->data, step_dir);
}

int ax_trainer_load_checkpoint(AxTrainer *t, const char *step_dir, int *step) {
  AxCkptManifest man;
  AX_TRY(ax_ckpt_load_manifest(step_dir, 0, &man));
  int rc = same_shape(t, &man, step_dir);
  if (rc == AX_OK) warn_changes(t, &man, step_dir);
  float *const state[3] = {t->off.master, t->off.m, t->off.v};
  AxWholeStage w = {.n = 0};
  if (rc == AX_OK) rc = ax_trainer_whole_open(t, &w, state, 3, 1);
  if (rc == AX_OK) rc = ax_ckpt_read_stage(step_dir, &man, &w.whole, w.buf[0], w.buf[1], w.buf[2]);
  if (rc == AX_OK) ax_trainer_whole_extract(t, &w, state);
  ax_trainer_whole_close(&w);
  if (rc == AX_OK) {
    *step = man.step;
    t->adam_steps = man.adam_steps;
    t->loss_scale.scale = man.loss_scale;
    t->loss_scale.clean_steps = man.clean_steps;
    t->loss_scale.skipped = man.skipped;
    if (t->have_data) ax_loader_set_position(&t->train, man.data_position);
    rc = t->be->ops->upload_f32(t->be, ax_stage_params(t->stage), t->off.master, t->off.n,
                                AX_STREAM_COMPUTE);
    if (rc == AX_OK && t->cfg.optim.optimizer_device) rc = ax_device_opt_from_host(&t->dopt);
  }
  ax_ckpt_manifest_free(&man);
  return rc == AX_OK ? ax_sync(t->be) : rc;
}
