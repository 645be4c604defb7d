/* train_lr.c — warm-up + constant/cosine learning rate; see train_lr.h. */
#include "train_lr.h"

#include <math.h>

double ax_lr_at(const AxLrSchedule *s, int step) {
  if (s->warmup > 0 && step <= s->warmup) return s->lr * step / s->warmup;
  if (!s->cosine || s->total <= s->warmup) return s->lr;
  double progress = (double)(step - s->warmup) / (double)(s->total - s->warmup);
  if (progress > 1) progress = 1;
  double floor = s->lr * s->min_frac;
  return floor + 0.5 * (s->lr - floor) * (1.0 + cos(3.14159265358979323846 * progress));
}
