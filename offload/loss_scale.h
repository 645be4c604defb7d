/* loss_scale.h — dynamic loss scaling for reduced-precision gradients: the loss (and so every
 * gradient) is multiplied by `scale`; a step whose gradients overflow anywhere is skipped on
 * every rank and the scale halves; after `window` clean steps in a row it doubles. The step's
 * outcome is recorded once its update is done (or skipped), so the update divides by the scale
 * its gradients were computed with; whatever holds gradients across steps at the old scale
 * (codec state: error feedback, momenta) is the caller's to rescale by the returned factor.
 * The agreement on overflow is the caller's (one flag reduced over all ranks). */
#ifndef AX_LOSS_SCALE_H
#define AX_LOSS_SCALE_H

typedef struct {
  int enabled;
  float scale;         /* 1 when disabled */
  int clean_steps;     /* consecutive steps without overflow */
  int growth_interval; /* the window: clean steps before the scale doubles */
  long long skipped;   /* steps skipped so far */
} AxLossScale;

/* window: clean steps before the scale doubles (at least 1; --loss-scale-window, 200). */
void ax_loss_scale_init(AxLossScale *ls, int enabled, int window);
/* Records a step's outcome, after its update (or its skip: overflow); returns the factor the
 * scale changed by: 0.5 after an overflow, 2 at the end of a window of clean steps, else 1
 * (also where halving or doubling would leave the scale's range, and always when disabled). */
float ax_loss_scale_update(AxLossScale *ls, int overflow);

#endif
