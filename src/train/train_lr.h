/* train_lr.h — learning rate per step: linear warm-up from 0, then constant or cosine
 * decay to min_frac * lr at the last step. Steps count from 1; the trainer counts the updates
 * taken (a step skipped for an overflow does not advance the schedule). */
#ifndef AX_LR_SCHEDULE_H
#define AX_LR_SCHEDULE_H

typedef struct {
  int cosine;
  double lr, min_frac;
  int warmup, total;
} AxLrSchedule;

double ax_lr_at(const AxLrSchedule *s, int step);

#endif
