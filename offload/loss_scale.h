/* loss_scale.h — dynamic loss scaling for reduced-precision gradients: the loss (and so every
 * gradient) is multiplied by `scale`; a step whose gradients overflow anywhere is skipped on
 * every rank and the scale halves; after `growth_interval` clean steps in a row it doubles.
 * The agreement on overflow is the caller's (one flag reduced over all ranks). */
#ifndef AX_LOSS_SCALE_H
#define AX_LOSS_SCALE_H

typedef struct {
  int enabled;
  float scale;         /* 1 when disabled */
  int clean_steps;     /* consecutive steps without overflow */
  int growth_interval; /* 200 */
  long long skipped;   /* steps skipped so far */
} AxLossScale;

void ax_loss_scale_init(AxLossScale *ls, int enabled);
/* Records the step's outcome; returns 1 when the step must be skipped. */
int ax_loss_scale_update(AxLossScale *ls, int overflow);

#endif
