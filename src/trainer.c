/* trainer.c — one training run's state on one process: backend, stage, optimizer and data;
 * a step (every micro-batch forward + backward, clipping, AdamW), validation and saving. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "dataloader.h"
#include "error.h"
#include "log.h"
#include "lr_schedule.h"
#include "markov.h"
#include "model_file.h"
#include "models/gpt_init.h"
#include "models/gpt_stage.h"
#include "offload/optimizer.h"
#include "threadpool.h"
#include "timer.h"
#include "trainer.h"

enum { SYNTH_TRAIN_TOKENS = 2000000, SYNTH_VAL_TOKENS = 200000 };

struct AxTrainer {
  AxTrainConfig cfg; /* a shallow copy; strings stay owned by the caller */
  AxGptConfig model;
  int micro, n_micro, ac;
  AxBackend *be;
  AxGptStage *stage;
  AxPool *opt_pool;
  AxOptimizer opt;
  float *params_host, *grads_host; /* fp32 host copies; alias the stage on the CPU backend */
  int host_alias;
  AxLoader train, val;
  int have_val;
  AxMarkov markov;
  uint16_t *corpus; /* synthetic train + val tokens */
  double floor;     /* entropy rate of the synthetic corpus, NAN with real data */
  int32_t *inputs, *targets;
  AxLrSchedule lr;
};

typedef AxTrainer Trainer;

/* The factor of n closest to sqrt(total) (the paper's choice of checkpoint interval). */
static int default_ac(int n_blocks, int total_layers) {
  double target = sqrt((double)total_layers);
  int best = 1;
  for (int f = 1; f <= n_blocks; f++)
    if (n_blocks % f == 0 && fabs(f - target) < fabs(best - target)) best = f;
  return best;
}

static int setup_model(Trainer *t) {
  if (t->cfg.init) {
    AX_TRY(ax_model_file_read_config(t->cfg.init, &t->model));
  } else {
    t->model = ax_train_model_config(&t->cfg);
    AX_TRY(ax_gpt_config_check(&t->model));
  }
  if (t->cfg.seq > t->model.max_seq)
    return AX_FAIL("--seq %d exceeds the model's maximum sequence length %d", t->cfg.seq,
                   t->model.max_seq);
  int shard = t->cfg.batch / t->cfg.g_data;
  t->micro = t->cfg.micro_batch ? t->cfg.micro_batch : shard;
  t->n_micro = shard / t->micro;
  if (t->cfg.checkpoint_activations)
    t->ac = t->cfg.ac ? t->cfg.ac : default_ac(t->model.layers, t->model.layers);
  if (t->ac > t->model.layers)
    return AX_FAIL("--ac %d exceeds the %d layers", t->ac, t->model.layers);
  return AX_OK;
}

static int setup_backend(Trainer *t) {
  AxBackendConfig bc = {.device = t->cfg.device,
                        .dtype = (AxDType)t->cfg.precision,
                        .threads = t->cfg.threads,
                        .bind = t->cfg.bind,
                        .local_rank = 0,
                        .local_size = 1};
  t->be = ax_backend_create(&bc);
  if (!t->be) return AX_ERR;
  t->opt_pool = ax_pool_create(t->be->threads, NULL, NULL);
  return t->opt_pool ? AX_OK : AX_ERR;
}

static int load_params(Trainer *t, const AxStageLayout *layout) {
  float *host = t->params_host;
  if (t->cfg.init) return ax_model_file_read_stage(t->cfg.init, &t->model, layout, host);
  ax_gpt_init_stage(&t->model, layout, (uint64_t)t->cfg.seed, host);
  return AX_OK;
}

static int setup_stage(Trainer *t) {
  AxStageSpec spec = {.l0 = 0, .l1 = t->model.layers, .first = 1, .last = 1,
                      .B = t->micro, .T = t->cfg.seq, .n_slots = 1, .ac = t->ac};
  AX_TRY(ax_stage_create(&t->stage, t->be, &t->model, &spec));
  const AxStageLayout *layout = ax_stage_layout_of(t->stage);
  t->host_alias = t->be->is_host && t->be->dtype == AX_DTYPE_F32;
  if (t->host_alias) {
    t->params_host = ax_stage_params(t->stage);
    t->grads_host = ax_stage_grads(t->stage);
  } else {
    size_t bytes = layout->total * sizeof(float);
    t->params_host = t->be->ops->host_alloc(t->be, bytes);
    t->grads_host = t->params_host ? t->be->ops->host_alloc(t->be, bytes) : NULL;
    if (!t->grads_host) return AX_ERR;
  }
  AX_TRY(load_params(t, layout));
  if (!t->host_alias)
    AX_TRY(t->be->ops->upload_f32(t->be, ax_stage_params(t->stage), t->params_host,
                                  layout->total, AX_STREAM_COMPUTE));
  return ax_optimizer_init(&t->opt, t->be, layout, t->cfg.decay_all, t->opt_pool);
}

static int setup_synthetic(Trainer *t) {
  if (t->model.vocab < 128)
    return AX_FAIL("the built-in corpus is byte text and needs --vocab >= 128 (got %d); give "
                   "--data for other vocabularies", t->model.vocab);
  ax_markov_build(&t->markov, (uint64_t)t->cfg.seed);
  t->corpus = ax_malloc((SYNTH_TRAIN_TOKENS + SYNTH_VAL_TOKENS) * sizeof *t->corpus);
  if (!t->corpus) return AX_ERR;
  ax_markov_generate(&t->markov, (uint64_t)t->cfg.seed + 1, t->corpus, SYNTH_TRAIN_TOKENS);
  ax_markov_generate(&t->markov, (uint64_t)t->cfg.seed + 2, t->corpus + SYNTH_TRAIN_TOKENS,
                     SYNTH_VAL_TOKENS);
  t->floor = t->markov.entropy_rate;
  AX_TRY(ax_loader_open_tokens(&t->train, t->corpus, SYNTH_TRAIN_TOKENS, t->cfg.batch,
                               t->cfg.seq, t->model.vocab, t->cfg.shuffle,
                               (uint64_t)t->cfg.seed));
  AX_TRY(ax_loader_open_tokens(&t->val, t->corpus + SYNTH_TRAIN_TOKENS, SYNTH_VAL_TOKENS,
                               t->cfg.batch, t->cfg.seq, t->model.vocab, 0, 0));
  t->have_val = 1;
  return AX_OK;
}

static int setup_data(Trainer *t) {
  t->floor = NAN;
  size_t n = (size_t)t->cfg.batch / t->cfg.g_data * t->cfg.seq;
  t->inputs = ax_malloc(n * sizeof *t->inputs);
  t->targets = t->inputs ? ax_malloc(n * sizeof *t->targets) : NULL;
  if (!t->targets) return AX_ERR;
  if (!t->cfg.data) return setup_synthetic(t);
  AX_TRY(ax_loader_open(&t->train, t->cfg.data, t->cfg.batch, t->cfg.seq, t->model.vocab,
                        t->cfg.shuffle, (uint64_t)t->cfg.seed));
  if (t->cfg.val_data) {
    AX_TRY(ax_loader_open(&t->val, t->cfg.val_data, t->cfg.batch, t->cfg.seq, t->model.vocab, 0,
                          0));
    t->have_val = 1;
  }
  return AX_OK;
}

void ax_trainer_print_header(const AxTrainer *t) {
  const AxGptConfig *m = &t->model;
  ax_log("axonn train: GPT-2 L=%d C=%d NH=%d T=%d V=%d (padded %d) | %.2fM parameters%s%s",
         m->layers, m->channels, m->heads, t->cfg.seq, m->vocab, m->padded_vocab,
         ax_gpt_num_params(m) / 1e6, t->cfg.init ? " from " : " (random init)",
         t->cfg.init ? t->cfg.init : "");
  ax_log("device: %s", t->be->desc);
  ax_log("batch: %d sequences x %d tokens = %d tokens/step, %d micro-batch(es) of %d; "
         "activation checkpointing: %s", t->cfg.batch, t->cfg.seq, t->cfg.batch * t->cfg.seq,
         t->n_micro, t->micro, t->ac ? "on" : "off");
  if (t->ac) ax_log("checkpoint segments of %d block(s)", t->ac);
  ax_log("memory: %.1f MB parameters + %.1f MB gradients + %.1f MB Adam state + %.1f MB "
         "activations", ax_stage_layout_of(t->stage)->total * t->be->esz / 1e6,
         ax_stage_layout_of(t->stage)->total * t->be->esz / 1e6,
         2.0 * t->opt.n * sizeof(float) / 1e6, ax_stage_arena_bytes(t->stage) / 1e6);
  if (!isnan(t->floor))
    ax_log("data: built-in order-2 Markov corpus (seed %lld): %d train / %d val tokens; "
           "entropy rate = loss floor %.4f nats/token", t->cfg.seed, SYNTH_TRAIN_TOKENS,
           SYNTH_VAL_TOKENS, t->floor);
  else
    ax_log("data: %s (%zu tokens, %zu batches/epoch)%s%s", t->cfg.data,
           ax_loader_tokens(&t->train), ax_loader_windows(&t->train),
           t->have_val ? "; validation: " : "; no validation data",
           t->have_val ? t->cfg.val_data : "");
}

/* Forward + backward of every micro-batch of one global batch window; mean loss out. */
static int run_batch(Trainer *t, AxLoader *L, int with_grad, double *loss) {
  AX_TRY(ax_loader_next(L, 0, t->cfg.batch, t->inputs, t->targets));
  size_t per = (size_t)t->micro * t->cfg.seq;
  float dloss = with_grad ? 1.0f / ((float)t->cfg.batch * (float)t->cfg.seq) : 0.0f;
  double sum = 0;
  for (int mb = 0; mb < t->n_micro; mb++) {
    double mean;
    AX_TRY(ax_stage_forward(t->stage, 0, t->inputs + mb * per, NULL));
    AX_TRY(ax_stage_loss_backward(t->stage, 0, t->targets + mb * per, dloss, &mean));
    sum += mean;
  }
  *loss = sum / t->n_micro;
  return AX_OK;
}

static int validate(Trainer *t, double *val_loss) {
  ax_loader_set_position(&t->val, 0); /* the same batches every time: comparable figures */
  double sum = 0;
  for (int i = 0; i < t->cfg.val_steps; i++) {
    double l;
    AX_TRY(run_batch(t, &t->val, 0, &l));
    sum += l;
  }
  *val_loss = sum / t->cfg.val_steps;
  return AX_OK;
}

static int optimizer_step(Trainer *t, int step, double *grad_norm, double *lr) {
  AxBackend *be = t->be;
  size_t n = ax_stage_layout_of(t->stage)->total;
  double norm = sqrt(be->ops->sumsq(be, ax_stage_grads(t->stage), n));
  float scale = 1.0f;
  if (t->cfg.grad_clip > 0 && norm > t->cfg.grad_clip) scale = (float)(t->cfg.grad_clip / norm);
  if (!t->host_alias)
    AX_TRY(be->ops->download_f32(be, t->grads_host, ax_stage_grads(t->stage), n,
                                 AX_STREAM_COMPUTE));
  *lr = ax_lr_at(&t->lr, step);
  AxAdamWHyper h = {.lr = (float)*lr, .beta1 = (float)t->cfg.beta1,
                    .beta2 = (float)t->cfg.beta2, .eps = (float)t->cfg.eps,
                    .weight_decay = (float)t->cfg.weight_decay, .step = step,
                    .grad_scale = scale};
  ax_optimizer_update(&t->opt, t->params_host, t->grads_host, 0, n, &h);
  if (!t->host_alias)
    AX_TRY(be->ops->upload_f32(be, ax_stage_params(t->stage), t->params_host, n,
                               AX_STREAM_COMPUTE));
  *grad_norm = norm;
  return AX_OK;
}

int ax_trainer_step(AxTrainer *t, int step, AxStepRecord *rec) {
  double t0 = ax_now();
  AX_TRY(ax_stage_zero_grads(t->stage));
  AX_TRY(run_batch(t, &t->train, 1, &rec->loss));
  if (!isfinite(rec->loss)) return AX_FAIL("loss is %f at step %d: training diverged", rec->loss, step);
  AX_TRY(optimizer_step(t, step, &rec->grad_norm, &rec->lr));
  AX_TRY(ax_sync(t->be));
  rec->ms = (ax_now() - t0) * 1e3;
  rec->step = step;
  rec->val_loss = NAN;
  return AX_OK;
}

int ax_trainer_validate_if_due(AxTrainer *t, int step, AxStepRecord *rec) {
  if (!t->have_val || t->cfg.val_steps == 0) return AX_OK;
  int due = step == t->cfg.steps || (t->cfg.val_every && step % t->cfg.val_every == 0);
  if (!due) return AX_OK;
  AX_TRY(validate(t, &rec->val_loss));
  if (!isnan(t->floor))
    ax_log("val  step %d | val loss %.6f | floor %.4f (gap %.4f)", step, rec->val_loss, t->floor,
           rec->val_loss - t->floor);
  else
    ax_log("val  step %d | val loss %.6f", step, rec->val_loss);
  return AX_OK;
}

int ax_trainer_save(AxTrainer *t, const char *path) {
  if (!t->host_alias)
    AX_TRY(t->be->ops->download_f32(t->be, t->params_host, ax_stage_params(t->stage),
                                    ax_stage_layout_of(t->stage)->total, AX_STREAM_COMPUTE));
  AX_TRY(ax_model_file_write(path, &t->model, t->params_host));
  ax_log("saved model to %s", path);
  return AX_OK;
}

double ax_trainer_flops_per_step(const AxTrainer *t) {
  return ax_gpt_train_flops(&t->model, t->cfg.batch, t->cfg.seq, t->ac > 0);
}

double ax_trainer_loss_floor(const AxTrainer *t) { return t->floor; }

const AxGptConfig *ax_trainer_model(const AxTrainer *t) { return &t->model; }

void ax_trainer_destroy(AxTrainer *t) {
  if (!t) return;
  ax_optimizer_free(&t->opt);
  if (!t->host_alias && t->be) {
    if (t->params_host) t->be->ops->host_free(t->be, t->params_host);
    if (t->grads_host) t->be->ops->host_free(t->be, t->grads_host);
  }
  ax_stage_destroy(t->stage);
  ax_pool_destroy(t->opt_pool);
  ax_backend_destroy(t->be);
  ax_loader_close(&t->train);
  ax_loader_close(&t->val);
  free(t->corpus);
  free(t->inputs);
  free(t->targets);
  free(t);
}

int ax_trainer_create(AxTrainer **out, const AxTrainConfig *cfg) {
  *out = NULL;
  AxTrainer *t = ax_calloc(1, sizeof *t);
  if (!t) return AX_ERR;
  t->cfg = *cfg;
  t->lr = (AxLrSchedule){.cosine = cfg->lr_schedule == AX_LR_COSINE, .lr = cfg->lr,
                         .min_frac = cfg->min_lr_frac, .warmup = cfg->warmup,
                         .total = cfg->steps};
  int rc = setup_model(t);
  if (rc == AX_OK) rc = setup_backend(t);
  if (rc == AX_OK) rc = setup_stage(t);
  if (rc == AX_OK) rc = setup_data(t);
  if (rc != AX_OK) {
    ax_trainer_destroy(t);
    return AX_ERR;
  }
  *out = t;
  return AX_OK;
}
