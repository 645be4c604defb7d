/* start_cpus.c — the CPU set the process started with; see start_cpus.h. */
#include "start_cpus.h"

#include <pthread.h>

static cpu_set_t start;
static int known;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void read_start(void) {
  CPU_ZERO(&start);
  known = sched_getaffinity(0, sizeof start, &start) == 0;
  if (!known) CPU_ZERO(&start);
}

int ax_start_cpus(cpu_set_t *out) {
  pthread_once(&once, read_start);
  *out = start;
  return known;
}
