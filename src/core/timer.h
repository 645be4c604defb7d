/* timer.h — monotonic wall-clock time, and the CPU time of this process or of the calling
 * thread, in seconds. */
#ifndef AX_TIMER_H
#define AX_TIMER_H

#include <time.h>

static inline double ax_clock_seconds(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline double ax_now(void) { return ax_clock_seconds(CLOCK_MONOTONIC); }

/* CPU time of every thread of this process (MPI's own included). */
static inline double ax_cpu_now(void) { return ax_clock_seconds(CLOCK_PROCESS_CPUTIME_ID); }

/* CPU time of the calling thread alone. */
static inline double ax_thread_cpu_now(void) { return ax_clock_seconds(CLOCK_THREAD_CPUTIME_ID); }

#endif
