/* sparse_hier.c — Zen's hierarchical step of sparse_hier.h: Zen over the node with the
 * between-nodes Zen run where its pull would start (sparse_sync.h's AxZenBetween). */
#include "sparse_hier.h"

#include <stdlib.h>
#include <string.h>

#include "mpi/mpi_util.h"
#include "src/core/error.h"

struct AxSparseHier {
  AxSparseSync *node, *cross;
  size_t owned, cols;    /* |P_l|: the rows this rank owns on its node; a row's floats */
  float *compact;        /* owned x cols: the cross level's table */
  uint32_t *pos, *written; /* [owned]: the cross level's rows in and out */
};

typedef struct {
  AxSparseHier *h;
  const AxCommConfig *cc;
  AxSparseSyncStats *cross;
} Between;

int ax_sparse_hier_create(AxSparseHier **out, const AxTwoLevel *t, uint32_t rows, size_t cols,
                          uint64_t seed) {
  *out = NULL;
  if (!t || !t->usable)
    return AX_FAIL("hierarchical Zen: the ranks do not sit evenly, 2 or more to a node on 2 or "
                   "more nodes");
  AX_MPI(MPI_Bcast(&seed, 1, MPI_UINT64_T, 0, t->cross)); /* node 0's, then each node's rank 0 */
  AxSparseHier *h = ax_calloc(1, sizeof *h);
  if (!h) return AX_ERR;
  *out = h;
  h->cols = cols;
  int rc = ax_sparse_sync_create(&h->node, t->node, rows, cols, seed);
  if (rc == AX_OK) {
    h->owned = ax_zen_owned(ax_sparse_sync_layout(h->node), t->local);
    rc = ax_sparse_sync_create(&h->cross, t->cross, (uint32_t)h->owned, cols, seed);
  }
  size_t room = h->owned ? h->owned : 1;
  if (rc == AX_OK) {
    h->compact = ax_malloc(room * cols * sizeof *h->compact);
    h->pos = ax_malloc(room * sizeof *h->pos);
    h->written = ax_malloc(room * sizeof *h->written);
    if (!h->compact || !h->pos || !h->written) rc = AX_ERR;
  }
  if (rc != AX_OK) {
    ax_sparse_hier_free(h);
    *out = NULL;
  }
  return rc;
}

void ax_sparse_hier_free(AxSparseHier *h) {
  if (!h) return;
  ax_sparse_sync_free(h->node);
  ax_sparse_sync_free(h->cross);
  free(h->compact);
  free(h->pos);
  free(h->written);
  free(h);
}

void ax_sparse_hier_set_owners(AxSparseHier *h, AxZenOwners owners) {
  ax_sparse_sync_set_owners(h->cross, owners);
}

AxSparseSync *ax_sparse_hier_cross(AxSparseHier *h) { return h->cross; }

/* Step 2: the node sums of this rank's rows, summed between the nodes; W_l and its sums in
 * their place (rows as places in P_l on the cross level, as rows of the table on the node). */
static int between_nodes(void *ctx, AxZenOwnedRows *o) {
  Between *b = ctx;
  AxSparseHier *h = b->h;
  const AxZenLayout *l = o->layout;
  const uint32_t *members = l->members + l->off[o->rank];
  for (size_t k = 0; k < o->n; k++) h->pos[k] = l->pos[o->rows[k]];
  AxSparseRows in = {h->pos, o->n, o->sums};
  size_t n = 0;
  AX_TRY(ax_sparse_zen_run(h->cross, b->cc, &in, h->compact, b->cross, NULL, h->written, &n));
  for (size_t k = 0; k < n; k++) {
    o->rows[k] = members[h->written[k]];
    memcpy(o->sums + k * h->cols, h->compact + (size_t)h->written[k] * h->cols,
           h->cols * sizeof *o->sums);
  }
  o->n = n;
  return AX_OK;
}

int ax_sparse_hier_zen(AxSparseHier *h, const AxCommConfig *cc, const AxSparseRows *in,
                       float *table, AxSparseHierStats *st) {
  AxSparseHierStats mine;
  if (!st) st = &mine;
  memset(st, 0, sizeof *st);
  Between b = {h, cc, &st->cross};
  const AxZenBetween between = {between_nodes, &b};
  return ax_sparse_zen_run(h->node, cc, in, table, &st->node, &between, NULL, NULL);
}
