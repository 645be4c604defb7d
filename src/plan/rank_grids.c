/* rank_grids.c — enumerate, predict and rank the grids of a number of ranks; see rank_grids.h. */
#include "rank_grids.h"

#include <stdlib.h>
#include <string.h>

#include "src/core/error.h"

typedef struct {
  const AxGridQuery *query;
  AxRankGridList *out;
  int cap;
} Search;

static int keep(Search *q, const AxRankGrid *g) {
  AxRankGridList *l = q->out;
  l->n_considered++;
  char why[256];
  if (ax_comm_grid_problem(&q->query->setup, g, why, sizeof why)) return AX_OK;
  if (l->n == q->cap) {
    int cap = q->cap ? 2 * q->cap : 64;
    AxCommPrediction *grown = realloc(l->grids, (size_t)cap * sizeof *grown);
    if (!grown) return AX_FAIL("out of memory for %d grid predictions", cap);
    l->grids = grown;
    q->cap = cap;
  }
  AX_TRY(ax_comm_predict(&q->query->setup, &q->query->machine, g, &l->grids[l->n]));
  l->n++;
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

static int fastest_first(const void *pa, const void *pb) {
  const AxCommPrediction *a = pa, *b = pb;
  if (a->seconds != b->seconds) return a->seconds < b->seconds ? -1 : 1;
  return grid_order(&a->grid, &b->grid);
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
  Search q = {query, out, 0};
  if (enumerate(&q) != AX_OK) {
    ax_rank_grids_free(out);
    return AX_ERR;
  }
  if (!out->n) {
    int considered = out->n_considered;
    ax_rank_grids_free(out);
    return none_fits(&query->setup, query->ranks, considered);
  }
  qsort(out->grids, (size_t)out->n, sizeof *out->grids, fastest_first);
  return AX_OK;
}

void ax_rank_grids_free(AxRankGridList *l) {
  free(l->grids);
  memset(l, 0, sizeof *l);
}
