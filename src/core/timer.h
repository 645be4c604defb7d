/* timer.h — monotonic wall-clock time in seconds. */
#ifndef AX_TIMER_H
#define AX_TIMER_H

#include <time.h>

static inline double ax_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif
