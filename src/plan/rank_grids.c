/* rank_grids.c — enumerate, predict and rank the grids of a number of ranks; see rank_grids.h. */
#include "rank_grids.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/error.h"

typedef struct {
  const AxGridQuery *query;
  AxRankGridList *out;
  int cap, cap_unfit;
} Search;

static int grow(AxGridEstimate **list, int n, int *cap) {
  if (n < *cap) return AX_OK;
  int want = *cap ? 2 * *cap : 64;
  AxGridEstimate *grown = realloc(*list, (size_t)want * sizeof *grown);
  if (!grown) return AX_FAIL("out of memory for %d grid estimates", want);
  *list = grown;
  *cap = want;
  return AX_OK;
}

/* The share of the pipeline's idle time that costs a node whose ranks outnumber its cores
 * (a CPU machine's cores_per_node): a stage that waits for its neighbour gives its core to the
 * node's other ranks, which have work, so with twice as many ranks as cores the fill and drain
 * cost nothing, with a core a rank all of it, linearly between (module header). */
double ax_rank_grids_bubble_share(const AxMachine *m) {
  if (m->cores_per_node <= 0 || m->gpus_per_node <= m->cores_per_node) return 1;
  double share = 2.0 - (double)m->gpus_per_node / m->cores_per_node;
  return share > 0 ? share : 0;
}

/* compute and bubble seconds of g (module header) */
static void price_compute(const AxGridQuery *q, const AxCommSetup *s, AxGridEstimate *e) {
  e->compute_s = e->bubble_s = 0;
  if (q->flops_per_s <= 0) return;
  double flops = ax_gpt_train_flops(&s->model, s->batch, s->seq, s->checkpoint);
  e->compute_s = flops / q->ranks / q->flops_per_s;
  if (e->comm.n_micro > 0)
    e->bubble_s = e->compute_s * (e->comm.grid.inter - 1) / (double)e->comm.n_micro *
                  ax_rank_grids_bubble_share(&q->machine);
}

static int fits(const AxGridQuery *q, const AxGridMemory *m) {
  return !q->memory || q->machine.device_memory_bytes <= 0 ||
         m->total <= q->machine.device_memory_bytes;
}

static void explain_unfit(const AxGridQuery *q, AxGridEstimate *e) {
  const double G = 1e9;
  const AxGridMemory *m = &e->mem;
  snprintf(e->unfit, sizeof e->unfit,
           "%.1f GB a rank > %.1f GB of device memory (weights %.1f + gradients %.1f + "
           "activations %.1f + optimizer %.1f)%s",
           m->total / G, q->machine.device_memory_bytes / G, m->weights / G, m->grads / G,
           m->act / G, m->optimizer / G,
           q->setup.micro_batch ? "" : " at the smallest micro-batch");
}

static int estimate_with(const AxGridQuery *q, const AxCommSetup *s, const AxRankGrid *g,
                         AxGridEstimate *out) {
  memset(out, 0, sizeof *out);
  AX_TRY(ax_comm_predict(s, &q->machine, g, &out->comm));
  price_compute(q, s, out);
  out->step_s = out->comm.seconds + out->compute_s + out->bubble_s;
  if (q->memory) AX_TRY(q->memory(q->memory_ctx, s, g, out->comm.micro_batch, &out->mem));
  return AX_OK;
}

/* With the micro-batch left to the rule: the largest smaller one (a multiple of Gz dividing
 * the row's sequences, more micro-batches a step) whose memory fits; 0 when none does. */
static int smaller_micro_batch(const AxGridQuery *q, const AxRankGrid *g, int from, int *bm) {
  *bm = 0;
  char why[256];
  for (int m = from - g->z; m >= g->z && !*bm; m -= g->z) {
    AxCommSetup s = q->setup;
    s.micro_batch = m;
    if (ax_comm_grid_problem(&s, g, why, sizeof why)) continue;
    AxGridMemory mem;
    AX_TRY(q->memory(q->memory_ctx, &s, g, m, &mem));
    if (fits(q, &mem)) *bm = m;
  }
  return AX_OK;
}

int ax_rank_grid_estimate(const AxGridQuery *q, const AxRankGrid *g, AxGridEstimate *out) {
  AX_TRY(estimate_with(q, &q->setup, g, out));
  if (fits(q, &out->mem)) return AX_OK;
  int bm = 0;
  if (!q->setup.micro_batch) AX_TRY(smaller_micro_batch(q, g, out->comm.micro_batch, &bm));
  if (!bm) {
    if (!q->setup.micro_batch) { /* the reason at the smallest micro-batch tried */
      AxCommSetup s = q->setup;
      s.micro_batch = g->z;
      char why[256];
      if (!ax_comm_grid_problem(&s, g, why, sizeof why)) AX_TRY(estimate_with(q, &s, g, out));
    }
    explain_unfit(q, out);
    return AX_OK;
  }
  AxCommSetup s = q->setup;
  s.micro_batch = bm;
  return estimate_with(q, &s, g, out);
}

static int keep(Search *q, const AxRankGrid *g) {
  AxRankGridList *l = q->out;
  l->n_considered++;
  char why[256];
  if (ax_comm_grid_problem(&q->query->setup, g, why, sizeof why)) return AX_OK;
  AxGridEstimate e;
  AX_TRY(ax_rank_grid_estimate(q->query, g, &e));
  if (e.unfit[0]) {
    AX_TRY(grow(&l->unfit, l->n_unfit, &q->cap_unfit));
    l->unfit[l->n_unfit++] = e;
  } else {
    AX_TRY(grow(&l->grids, l->n, &q->cap));
    l->grids[l->n++] = e;
  }
  return AX_OK;
}

/* Every factorization ranks = inter·x·y·z·data (dimension by dimension, the last takes the
 * rest). */
static int enumerate(Search *q) {
  const int ranks = q->query->ranks, max_inter = q->query->max_inter;
  for (int p = 1; p <= ranks; p++) {
    if (ranks % p || (max_inter && p > max_inter)) continue;
    for (int x = 1; x <= ranks / p; x++) {
      if ((ranks / p) % x) continue;
      for (int y = 1; y <= ranks / p / x; y++) {
        if ((ranks / p / x) % y) continue;
        for (int z = 1; z <= ranks / p / x / y; z++) {
          if ((ranks / p / x / y) % z) continue;
          AxRankGrid g = {p, x, y, z, ranks / p / x / y / z};
          AX_TRY(keep(q, &g));
        }
      }
    }
  }
  return AX_OK;
}

static int grid_order(const AxRankGrid *a, const AxRankGrid *b) {
  const int ka[] = {a->inter, a->x, a->y, a->z, a->data};
  const int kb[] = {b->inter, b->x, b->y, b->z, b->data};
  for (int i = 0; i < 5; i++)
    if (ka[i] != kb[i]) return ka[i] < kb[i] ? -1 : 1;
  return 0;
}

int ax_rank_grid_compare(const AxGridEstimate *a, const AxGridEstimate *b) {
  double scale = fmax(fabs(a->step_s), fabs(b->step_s));
  if (fabs(a->step_s - b->step_s) > 1e-9 * scale) return a->step_s < b->step_s ? -1 : 1;
  if (a->mem.total != b->mem.total) return a->mem.total < b->mem.total ? -1 : 1;
  return grid_order(&a->comm.grid, &b->comm.grid);
}

static int fastest_first(const void *pa, const void *pb) {
  return ax_rank_grid_compare(pa, pb);
}

static int none_fits(const AxCommSetup *s, int ranks, int considered) {
  char why[256];
  AxRankGrid data_only = {1, 1, 1, 1, ranks};
  const char *reason = ax_comm_grid_problem(s, &data_only, why, sizeof why);
  return AX_FAIL("no grid of %d ranks fits (%d considered); 1x1x1x1x%d: %s", ranks, considered,
                 ranks, reason ? reason : "excluded by --max-inter");
}

int ax_rank_grids(const AxGridQuery *query, AxRankGridList *out) {
  memset(out, 0, sizeof *out);
  if (query->ranks < 1) return AX_FAIL("ranks must be at least 1, got %d", query->ranks);
  Search q = {query, out, 0, 0};
  if (enumerate(&q) != AX_OK) {
    ax_rank_grids_free(out);
    return AX_ERR;
  }
  if (!out->n && !out->n_unfit) {
    int considered = out->n_considered;
    ax_rank_grids_free(out);
    return none_fits(&query->setup, query->ranks, considered);
  }
  if (out->n) qsort(out->grids, (size_t)out->n, sizeof *out->grids, fastest_first);
  return AX_OK;
}

void ax_rank_grids_free(AxRankGridList *l) {
  free(l->grids);
  free(l->unfit);
  memset(l, 0, sizeof *l);
}
