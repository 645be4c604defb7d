/* host_sumsq.c — sums of squares of host fp32 arrays; see host_sumsq.h. The threaded form
 * computes each block's 8 lane sums in parallel and adds them in the serial form's order, so
 * the two agree bit for bit whatever the thread count (clipping decisions do not depend on it).
 * On one H100 node the serial sum was 40 ms of a 197 ms GPT-2 small step (docs/benchmarks.md,
 * GPU). */
#include "host_sumsq.h"

enum {
  BLOCK = 4096, /* elements summed in fp32 lanes */
  LANES = 8,
  ROUND = 1024  /* blocks summed in parallel at a time (their lane sums: 32 KiB) */
};

static void block_lanes(const float *x, size_t n, float acc[LANES]) {
  for (int k = 0; k < LANES; k++) acc[k] = 0;
  size_t i = 0;
  for (; i + LANES <= n; i += LANES)
    for (int k = 0; k < LANES; k++) acc[k] += x[i + k] * x[i + k];
  for (; i < n; i++) acc[0] += x[i] * x[i];
}

static size_t block_len(size_t n, size_t b) {
  size_t at = b * BLOCK;
  return n - at < BLOCK ? n - at : BLOCK;
}

double ax_host_sumsq(const float *x, size_t n) {
  double total = 0;
  float acc[LANES];
  for (size_t b = 0; b * BLOCK < n; b++) {
    block_lanes(x + b * BLOCK, block_len(n, b), acc);
    for (int k = 0; k < LANES; k++) total += acc[k];
  }
  return total;
}

typedef struct {
  const float *x; /* this round's first block */
  size_t n;       /* elements left from x */
  size_t blocks;  /* blocks in this round */
  float (*lanes)[LANES];
} Round;

static void round_task(void *ctx, int tid, int nt) {
  Round *r = ctx;
  size_t lo, hi;
  ax_split(r->blocks, tid, nt, &lo, &hi);
  for (size_t b = lo; b < hi; b++) block_lanes(r->x + b * BLOCK, block_len(r->n, b), r->lanes[b]);
}

double ax_host_sumsq_pool(AxPool *pool, const float *x, size_t n) {
  if (!pool || ax_pool_size(pool) < 2 || n <= BLOCK) return ax_host_sumsq(x, n);
  float lanes[ROUND][LANES];
  double total = 0;
  for (size_t at = 0; at < n; at += (size_t)ROUND * BLOCK) {
    size_t left = n - at, blocks = (left + BLOCK - 1) / BLOCK;
    Round r = {x + at, left, blocks < ROUND ? blocks : ROUND, lanes};
    ax_pool_run(pool, round_task, &r);
    for (size_t b = 0; b < r.blocks; b++)
      for (int k = 0; k < LANES; k++) total += lanes[b][k];
  }
  return total;
}
