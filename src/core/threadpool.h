/* threadpool.h — a fork-join pool of compute threads for the CPU backend's kernels.
 * ax_pool_run(fn) runs fn(ctx, tid, n) on every thread (the caller is tid 0) and returns when
 * all are done. Workers spin briefly on a generation counter, then sleep, so back-to-back
 * kernels cost microseconds, idle phases cost nothing. Work is split by the caller with
 * ax_split(), so a given thread count always partitions the same way (reproducible sums). */
#ifndef AX_THREADPOOL_H
#define AX_THREADPOOL_H

#include <stddef.h>

typedef struct AxPool AxPool;
typedef void (*AxPoolFn)(void *ctx, int tid, int nthreads);
/* Called once in each worker thread at start (tid >= 1), e.g. to pin it to a core. */
typedef void (*AxPoolInitFn)(void *arg, int tid);

AxPool *ax_pool_create(int nthreads, AxPoolInitFn init, void *init_arg);
void ax_pool_destroy(AxPool *p);
int ax_pool_size(const AxPool *p);
void ax_pool_run(AxPool *p, AxPoolFn fn, void *ctx);

/* The half-open range [*lo, *hi) of n items that thread tid of nthreads owns. */
static inline void ax_split(size_t n, int tid, int nthreads, size_t *lo, size_t *hi) {
  size_t base = n / (size_t)nthreads, rem = n % (size_t)nthreads, t = (size_t)tid;
  *lo = t * base + (t < rem ? t : rem);
  *hi = *lo + base + (t < rem ? 1 : 0);
}

#endif
