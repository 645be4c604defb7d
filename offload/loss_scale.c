/* loss_scale.c — the dynamic loss-scale state machine; see loss_scale.h. */
#include "loss_scale.h"

enum { INITIAL_SCALE = 1 << 16 };
static const float MIN_SCALE = 1.0f / (1 << 24), MAX_SCALE = 1.0e30f;

void ax_loss_scale_init(AxLossScale *ls, int enabled, int window) {
  *ls = (AxLossScale){.enabled = enabled, .scale = enabled ? (float)INITIAL_SCALE : 1.0f,
                      .growth_interval = window > 0 ? window : 1};
}

float ax_loss_scale_update(AxLossScale *ls, int overflow) {
  float before = ls->scale;
  if (overflow) {
    ls->skipped++;
    ls->clean_steps = 0;
    if (ls->enabled && ls->scale * 0.5f >= MIN_SCALE) ls->scale *= 0.5f;
  } else if (ls->enabled && ++ls->clean_steps >= ls->growth_interval) {
    ls->clean_steps = 0;
    if (ls->scale * 2.0f <= MAX_SCALE) ls->scale *= 2.0f;
  }
  return ls->scale / before;
}
