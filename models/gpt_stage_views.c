/* gpt_stage_views.c — views into a stage's flat buffers and slots, shared by its serial
 * (gpt_stage.c) and tensor-parallel (gpt_stage_tp.c) compute; see gpt_stage_impl.h. */
#include <string.h>

#include "gpt_stage_impl.h"

void *ax_stage_param_view(AxGptStage *st, void *flat, int id) {
  return st->layout.has[id] ? ax_at(st->be, flat, st->layout.offset[id]) : NULL;
}

/* Parameters (flat = params) or gradients (flat = grads) of local block b. */
void ax_stage_block_params(AxGptStage *st, void *flat, int b, AxBlockParams *out) {
  memset(out, 0, sizeof *out);
  for (int id = 0; id < AX_N_PARAMS; id++) {
    if (!ax_param_is_layer(id)) continue;
    size_t per = st->layout.count[id] / (size_t)st->n_blocks;
    out->t[id] = ax_at(st->be, flat, st->layout.offset[id] + (size_t)b * per);
  }
}

void *ax_stage_final_output(AxGptStage *st, int slot) {
  Slot *sl = &st->slots[slot];
  return st->spec.ac ? sl->output : sl->acts[st->n_blocks - 1].out;
}
