/* binding_rule.c — the trainer's core-binding rule; see binding_rule.h. */
#include "binding_rule.h"

int ax_binding_first_core(int ncores, int nthreads, int share_rank, int share_size, int enable) {
  int threads = nthreads < 1 ? 1 : nthreads, size = share_size < 1 ? 1 : share_size;
  if (!enable || ncores < 1 || share_rank < 0 || share_rank >= size) return -1;
  if ((long long)size * threads > ncores) return -1;
  return share_rank * threads;
}
