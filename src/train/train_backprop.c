/* train_backprop.c — the trainer's side of Optimus-CC's compressed backpropagation
 * (--compress-backprop, --lazy-error, --epilogue-only; pipeline/backprop_compress.h): the link
 * codec and state of this stage, each step's codec context, the header's line, and the link
 * state's part of the per-rank checkpoint files. */
#include <stdio.h>
#include <string.h>

#include "src/core/error.h"
#include "src/core/log.h"
#include "trainer_impl.h"

int ax_train_backprop_on(const AxTrainConfig *cfg) {
  return cfg->compress_backprop && strcmp(cfg->compress_backprop, "none") != 0;
}

/* A compressed message must be smaller than the n x m one it replaces. */
static int check_message_size(const AxTrainConfig *cfg) {
  AxCodec *codec;
  size_t cols = (size_t)ax_train_model_config(cfg).channels;
  size_t micro = (size_t)(cfg->micro_batch ? cfg->micro_batch : cfg->batch / cfg->g_data);
  size_t n = micro * (size_t)cfg->seq * cols;
  AX_TRY(ax_backprop_codec(cfg->compress_backprop, cols, cfg->lazy_error, &codec));
  size_t bytes = ax_codec_p2p_max_bytes(codec, n);
  ax_codec_free(codec);
  if (bytes >= n * sizeof(float))
    return AX_FAIL("--compress-backprop %s: a compressed message (%zu bytes for %zu x %zu) is "
                   "not smaller than the %zu bytes it replaces; use a lower rank",
                   cfg->compress_backprop, bytes, n / cols, cols, n * sizeof(float));
  return AX_OK;
}

int ax_train_check_backprop(const AxTrainConfig *cfg) {
  if (!ax_train_backprop_on(cfg)) return AX_OK;
  AX_TRY(check_message_size(cfg));
  if (cfg->g_inter < 2)
    return AX_FAIL("--compress-backprop compresses the gradients sent between pipeline stages: "
                   "it needs --g-inter 2 or more (got %d)", cfg->g_inter);
  if (cfg->precision != AX_PREC_FP32)
    return AX_FAIL("--compress-backprop needs --precision fp32 (its codec encodes fp32 "
                   "gradients)");
  return AX_OK;
}

int ax_trainer_setup_backprop(AxTrainer *t) {
  if (!ax_train_backprop_on(&t->cfg)) return AX_OK;
  AxCodec *codec;
  size_t cols = (size_t)t->model.channels, n = (size_t)t->micro * t->cfg.seq * cols;
  AX_TRY(ax_backprop_codec(t->cfg.compress_backprop, cols, t->cfg.lazy_error, &codec));
  AX_TRY(ax_backprop_init(&t->backprop, codec, t->be, t->grid.stage, t->grid.P, n,
                          t->cfg.epilogue_only, (uint64_t)t->cfg.seed));
  t->have_backprop = 1;
  return AX_OK;
}

void ax_trainer_backprop_step(AxTrainer *t, int step) {
  if (t->have_backprop) t->backprop.step = (uint64_t)step;
}

void ax_trainer_print_backprop(const AxTrainer *t) {
  if (!t->have_backprop) return;
  const AxBackprop *b = &t->backprop;
  ax_log("compressed backpropagation: %s; %s; a gradient message of %zu bytes travels as %zu "
         "(P and Q)%s", ax_codec_spec(b->codec),
         b->epilogue_only ? "epilogue only: the last P-1-s micro-batches into stage s"
                          : "every backward message",
         b->n * sizeof(float), ax_backprop_max_bytes(b),
         t->cfg.lazy_error ? "; lazy error propagation" : "; no error propagation");
}

void ax_trainer_backprop_label(const AxTrainer *t, char *buf, size_t cap) {
  snprintf(buf, cap, "backprop %s epilogue %d grid %dx%d rank %d values %zu",
           ax_codec_spec(t->backprop.codec), t->backprop.epilogue_only, t->grid.P, t->grid.D,
           t->grid.rank, t->backprop.n);
}
