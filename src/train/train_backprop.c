/* train_backprop.c — the trainer's side of Optimus-CC's compressed backpropagation
 * (--compress-backprop, --lazy-error, --epilogue-only; pipeline/backprop_compress.h): the link
 * codec and state of this stage, each step's codec context, the header's line, and the link
 * state's part of the per-rank checkpoint files. */
#include <stdio.h>
#include <string.h>

#include "src/core/error.h"
#include "src/core/log.h"
#include "trainer_impl.h"

int ax_trainer_setup_backprop(AxTrainer *t) {
  if (!ax_train_backprop_on(&t->cfg)) return AX_OK;
  AxCodec *codec;
  size_t rows, cols;
  ax_train_message_shape(&t->cfg, &rows, &cols); /* a tensor-parallel rank's own block */
  size_t n = rows * cols;
  if (n * sizeof(float) != ax_stage_message_bytes(t->stage))
    return AX_FAIL("internal: a backward message of %zu x %zu floats, but the stage sends %zu "
                   "bytes", rows, cols, ax_stage_message_bytes(t->stage));
  AX_TRY(ax_backprop_codec(t->cfg.compression.compress_backprop, cols, t->cfg.compression.lazy_error, &codec));
  AX_TRY(ax_backprop_init(&t->backprop, codec, t->be, t->grid.stage, t->grid.P, n,
                          t->cfg.compression.epilogue_only, (uint64_t)t->cfg.data.seed));
  t->have_backprop = 1;
  return AX_OK;
}

void ax_trainer_backprop_step(AxTrainer *t, int step) {
  if (!t->have_backprop) return;
  t->backprop.step = (uint64_t)step;
  t->backprop.enabled = step > t->cfg.compression.warmup_steps;
}

void ax_trainer_print_backprop(const AxTrainer *t) {
  if (!t->have_backprop) return;
  const AxBackprop *b = &t->backprop;
  ax_log("compressed backpropagation: %s; %s; a gradient message of %zu bytes travels as %zu "
         "(P and Q)%s%s", ax_codec_spec(b->codec),
         b->epilogue_only ? "epilogue only: the last P-1-s micro-batches into stage s"
                          : "every backward message",
         b->n * sizeof(float), ax_backprop_max_bytes(b),
         t->cfg.compression.lazy_error ? "; lazy error propagation" : "; no error propagation",
         t->cfg.compression.warmup_steps ? "; in full during the warm-up steps" : "");
}

void ax_trainer_backprop_label(const AxTrainer *t, char *buf, size_t cap) {
  snprintf(buf, cap, "backprop %s epilogue %d grid %dx%d rank %d values %zu",
           ax_codec_spec(t->backprop.codec), t->backprop.epilogue_only, t->grid.P, t->grid.D,
           t->grid.rank, t->backprop.n);
}
