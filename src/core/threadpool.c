/* threadpool.c — spin-then-sleep fork-join pool; see threadpool.h. */
#include "threadpool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "error.h"
#include "simd.h"

/* About 20-50 microseconds of polling before a worker sleeps: long enough to catch the next
 * kernel of a busy step, short enough not to steal a core from BLAS in a long GEMM. */
enum { SPIN_ROUNDS = 4000 };


struct AxPool {
  int n;
  pthread_t *threads;
  AxPoolInitFn init;
  void *init_arg;
  pthread_mutex_t mu;
  pthread_cond_t wake;
  atomic_uint generation; /* bumped by each run */
  atomic_int remaining;   /* workers still busy with the current run */
  atomic_int stop;
  AxPoolFn fn;
  void *ctx;
};

typedef struct {
  AxPool *pool;
  int tid;
} WorkerArg;

static unsigned wait_for_generation(AxPool *p, unsigned seen) {
  for (int i = 0; i < SPIN_ROUNDS; i++) {
    unsigned g = atomic_load_explicit(&p->generation, memory_order_acquire);
    if (g != seen || atomic_load(&p->stop)) return g;
    ax_cpu_relax();
  }
  pthread_mutex_lock(&p->mu);
  unsigned g;
  while ((g = atomic_load(&p->generation)) == seen && !atomic_load(&p->stop))
    pthread_cond_wait(&p->wake, &p->mu);
  pthread_mutex_unlock(&p->mu);
  return g;
}

static void *worker_main(void *arg) {
  WorkerArg wa = *(WorkerArg *)arg;
  free(arg);
  AxPool *p = wa.pool;
  if (p->init) p->init(p->init_arg, wa.tid);
  unsigned seen = 0;
  for (;;) {
    seen = wait_for_generation(p, seen);
    if (atomic_load(&p->stop)) break;
    p->fn(p->ctx, wa.tid, p->n);
    atomic_fetch_sub_explicit(&p->remaining, 1, memory_order_acq_rel);
  }
  return NULL;
}

AxPool *ax_pool_create(int nthreads, AxPoolInitFn init, void *init_arg) {
  if (nthreads < 1) nthreads = 1;
  AxPool *p = ax_calloc(1, sizeof *p);
  if (!p) return NULL;
  p->n = nthreads;
  p->init = init;
  p->init_arg = init_arg;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->wake, NULL);
  p->threads = ax_calloc((size_t)nthreads, sizeof *p->threads);
  if (!p->threads) {
    free(p);
    return NULL;
  }
  for (int t = 1; t < nthreads; t++) {
    WorkerArg *wa = ax_malloc(sizeof *wa);
    if (!wa) {
      p->n = t;
      ax_pool_destroy(p);
      return NULL;
    }
    wa->pool = p;
    wa->tid = t;
    if (pthread_create(&p->threads[t], NULL, worker_main, wa) != 0) {
      free(wa);
      p->n = t;
      ax_pool_destroy(p);
      AX_FAIL("cannot start compute thread %d", t);
      return NULL;
    }
  }
  return p;
}

void ax_pool_destroy(AxPool *p) {
  if (!p) return;
  pthread_mutex_lock(&p->mu);
  atomic_store(&p->stop, 1);
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);
  for (int t = 1; t < p->n; t++) pthread_join(p->threads[t], NULL);
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->wake);
  free(p->threads);
  free(p);
}

int ax_pool_size(const AxPool *p) { return p ? p->n : 1; }

void ax_pool_run(AxPool *p, AxPoolFn fn, void *ctx) {
  if (!p || p->n == 1) {
    fn(ctx, 0, 1);
    return;
  }
  p->fn = fn;
  p->ctx = ctx;
  atomic_store(&p->remaining, p->n - 1);
  pthread_mutex_lock(&p->mu);
  atomic_fetch_add_explicit(&p->generation, 1, memory_order_release);
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);
  fn(ctx, 0, p->n);
  while (atomic_load_explicit(&p->remaining, memory_order_acquire) > 0) ax_cpu_relax();
}
