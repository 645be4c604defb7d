/* trainer_embed_sync.c — the data-parallel sum of the tied embedding's gradient when the first
 * stage's copy is row-sparse (Zen, wang-thesis ch. 3; --sparse-embedding-sync). With more than
 * one pipeline stage the first stage's wte gradient comes only from the token lookup: its
 * nonzero rows are the tokens the rank's micro-batches saw. Before the tied pair sums the two
 * ends (which would make it dense), each end sums its own copy over the data-parallel ranks:
 * the first stage with Zen (in two levels where its ranks sit 2 or more to a node on 2 or more
 * nodes: mpi/sparse/sparse_hier.h; --zen-hierarchy), the all-gather of rows or the dense
 * all-reduce (auto: the cheapest for this step's row counts under src/plan/sparse_cost.h), the
 * last stage densely; the pair sum then gives every copy the whole sum, and the data-parallel
 * sum of the stage leaves wte out. Fused embedding sync (--fuse-embedding-sync) excludes it: it
 * adds the dense LM-head copy in first. */
#include <math.h>
#include <stdlib.h>

#include "mpi/mpi_util.h"
#include "mpi/sparse/sparse_hier.h"
#include "mpi/sparse/sparse_sync.h"
#include "src/core/error.h"
#include "src/core/log.h"
#include "src/core/watchdog.h"
#include "trainer_impl.h"

enum { ZEN_BALANCED_MAX_RANKS = 255 }; /* mpi/compress/zen_balance.h */

/* Whether this rank takes the path above. */
static int sparse_path(const AxTrainer *t) {
  return ax_train_sparse_embedding_path(&t->cfg) && (t->spec.first || t->spec.last);
}

int ax_trainer_wte_presummed(const AxTrainer *t) {
  int fused = t->cfg.compression.fuse_embedding_sync && t->grid.embed != MPI_COMM_NULL;
  return fused || sparse_path(t);
}

/* The cost auto weighs the algorithms by: the emulated link's figures, or on real links bytes
 * alone (latency 0). Not a measured ping-pong: on 3 or more ranks the dense ring adds in
 * another order than Zen and the all-gather, so a choice that followed the machine's load would
 * give another run (a resumed one) other fp32 sums. */
static int decision_link(AxTrainer *t, AxLinearCost *out, int *priced) {
  *out = (AxLinearCost){0, 1};
  *priced = ax_link_emulating(t->links);
  return *priced ? ax_trainer_link_cost(t, MPI_COMM_NULL, out) : AX_OK;
}

/* --zen-owners, but h_0 past the balanced owners' 255 ranks (said once). */
static int owners_for(const AxTrainer *t, int ranks) {
  int o = t->cfg.compression.zen_owners;
  if (o != AX_ZEN_OWNERS_BALANCED || ranks <= ZEN_BALANCED_MAX_RANKS) return o;
  if (t->grid.rank == 0)
    ax_log("embedding sync: Zen's owners by h_0: balanced owners take at most %d ranks, the "
           "column has %d", ZEN_BALANCED_MAX_RANKS, ranks);
  return AX_ZEN_OWNERS_HASH;
}

/* The column's nodes; with --zen-hierarchy auto on a layout of two levels, Zen's. */
static int setup_levels(AxTrainer *t, AxEmbedSync *e) {
  int D = t->grid.D, *node = ax_calloc((size_t)D, sizeof *node);
  if (!node) return AX_ERR;
  int rc = ax_trainer_data_nodes(t, node, &e->per_node);
  e->nodes = e->per_node ? D / e->per_node : D;
  if (rc == AX_OK && t->cfg.compression.zen_hierarchy == 0)
    rc = ax_two_level_new(t->grid.data, node, &e->levels);
  free(node);
  if (rc != AX_OK || !e->levels.usable) return rc;
  AX_TRY(ax_sparse_hier_create(&e->hier, &e->levels, e->rows, e->cols,
                               (uint64_t)t->cfg.data.seed));
  ax_sparse_hier_set_owners(e->hier, (AxZenOwners)owners_for(t, e->levels.n_nodes));
  return AX_OK;
}

int ax_trainer_setup_embed_sync(AxTrainer *t) {
  AxEmbedSync *e = &t->embed_sync;
  e->on = sparse_path(t);
  if (!e->on || !t->spec.first) return AX_OK;
  const AxStageLayout *lay = ax_stage_layout_of(t->stage);
  e->cols = (size_t)t->model.channels;
  e->rows = (uint32_t)(lay->count[AX_P_WTE] / e->cols);
  e->idx = ax_calloc(e->rows, sizeof *e->idx);
  e->seen = ax_calloc(e->rows, 1);
  e->counts = ax_calloc((size_t)t->grid.D, sizeof *e->counts);
  if (!e->idx || !e->seen || !e->counts) return AX_ERR;
  int is_auto;
  AX_TRY(ax_train_sparse_embedding_sync(&t->cfg, &is_auto, &e->algo));
  e->decides = is_auto;
  if (e->decides) AX_TRY(decision_link(t, &e->link, &e->priced));
  AX_TRY(ax_sparse_sync_create(&e->sync, t->grid.data, e->rows, e->cols,
                               (uint64_t)t->cfg.data.seed));
  e->owners = owners_for(t, t->grid.D);
  ax_sparse_sync_set_owners(e->sync, (AxZenOwners)e->owners);
  return setup_levels(t, e);
}

void ax_trainer_free_embed_sync(AxTrainer *t) {
  AxEmbedSync *e = &t->embed_sync;
  ax_sparse_hier_free(e->hier);
  ax_two_level_free(&e->levels);
  ax_sparse_sync_free(e->sync);
  free(e->idx);
  free(e->seen);
  free(e->counts);
  *e = (AxEmbedSync){0};
}

/* The rows the step's tokens looked up, ascending: the only rows of the lookup's gradient
 * that can be nonzero (seen[rows] is left cleared). */
static size_t touched_rows(AxEmbedSync *e, const int32_t *tokens, size_t n_tokens) {
  for (size_t i = 0; i < n_tokens; i++)
    if ((uint32_t)tokens[i] < e->rows) e->seen[tokens[i]] = 1;
  size_t n = 0;
  for (uint32_t r = 0; r < e->rows; r++)
    if (e->seen[r]) e->idx[n++] = r, e->seen[r] = 0;
  return n;
}

/* auto: every rank's count (one small all-gather), then the cheapest under the cost model;
 * between nodes the link's figures, inside a node nothing (the emulated link delays only what
 * crosses; without a link, every byte alike). */
static int choose(AxTrainer *t, size_t n, AxSparseCostOut *cost) {
  AxEmbedSync *e = &t->embed_sync;
  unsigned long long mine = n;
  AX_MPI(MPI_Allgather(&mine, 1, MPI_UNSIGNED_LONG_LONG, e->counts, 1, MPI_UNSIGNED_LONG_LONG,
                       t->grid.data));
  AxSparseLink inter = {e->link.latency_s, e->link.bytes_per_s};
  AxSparseCostIn in = {.ranks = t->grid.D, .per_node = e->per_node, .hierarchical = !!e->hier,
                       .balanced = e->owners == AX_ZEN_OWNERS_BALANCED, .rows = e->rows,
                       .cols = e->cols, .counts = e->counts, .inter = inter,
                       .intra = e->priced ? (AxSparseLink){0, INFINITY} : inter};
  ax_sparse_cost(&in, cost);
  e->algo = cost->choice;
  return AX_OK;
}

/* "auto: predicted zen 1.2 ms (34567 B), allgather ..., dense ..." or the other reasons. */
static void why_chosen(const AxEmbedSync *e, char *why, size_t cap) {
  const AxEmbedSyncReport *r = &e->report;
  if (!r->predicted) {
    snprintf(why, cap, "%s", r->decided_by);
    return;
  }
  const AxSparseCost *c = r->cost.by;
  if (!e->priced) { /* the bytes alone decided: no time to predict */
    snprintf(why, cap, "auto: the fewest bytes, no link to price them: zen %llu B, allgather "
             "%llu B, dense %llu B", c[0].bytes, c[1].bytes, c[2].bytes);
    return;
  }
  snprintf(why, cap, "auto: predicted zen %.3g ms (%llu B), allgather %.3g ms (%llu B), dense "
           "%.3g ms (%llu B)", c[0].seconds * 1e3, c[0].bytes, c[1].seconds * 1e3, c[1].bytes,
           c[2].seconds * 1e3, c[2].bytes);
}

static void report_first(AxTrainer *t, size_t n, const AxSparseSyncStats *st,
                         const AxSparseCostOut *cost) {
  AxEmbedSync *e = &t->embed_sync;
  int zen = e->algo == AX_SPARSE_SYNC_ZEN, two = zen && e->hier;
  e->report = (AxEmbedSyncReport){
      .on = 1, .algo = ax_sparse_sync_algo_name((AxSparseSyncAlgo)e->algo),
      .owners = ax_zen_owners_name((AxZenOwners)e->owners), .levels = two ? 2 : 1,
      .nodes = e->nodes, .per_node = e->per_node, .predicted = cost != NULL,
      .priced = e->priced,
      .rows_first = n,
      .decided_by = !cost      ? "--sparse-embedding-sync"
                    : e->priced ? "auto: cost model over the emulated link"
                                : "auto: bytes alone (no link to price)"};
  if (cost) e->report.cost = *cost;
  if (t->grid.row != 0) return;
  char why[320], levels[96] = "";
  why_chosen(e, why, sizeof why);
  if (two)
    snprintf(levels, sizeof levels, ", Zen in two levels (%d nodes of %d ranks)",
             e->levels.n_nodes, e->levels.g);
  ax_log("embedding sync: first step: %s over %d data-parallel rank(s), %zu of %u wte rows "
         "touched on rank 0 of the column, %llu bytes sent%s (%s)", e->report.algo, t->grid.D,
         n, e->rows, st->sent, levels, why);
}

void ax_trainer_embed_sync_report(const AxTrainer *t, AxEmbedSyncReport *out) {
  *out = t->embed_sync.report;
}

/* The first stage's sum: Zen in two levels where it runs so, else one of sparse_sync.h's. */
static int sync_first(AxTrainer *t, const AxCommConfig *cc, const AxSparseRows *in, float *wte,
                      AxSparseSyncStats *st) {
  AxEmbedSync *e = &t->embed_sync;
  AxAllreduceAlgo dense = (AxAllreduceAlgo)t->cfg.grid.allreduce;
  if (e->algo != AX_SPARSE_SYNC_ZEN || !e->hier)
    return ax_sparse_sync(e->sync, (AxSparseSyncAlgo)e->algo, dense, cc, in, wte, st);
  AxSparseHierStats hs;
  AX_TRY(ax_sparse_hier_zen(e->hier, cc, in, wte, &hs));
  *st = hs.node;
  st->sent += hs.cross.sent;
  st->received += hs.cross.received;
  return AX_OK;
}

int ax_trainer_sync_embed_data(AxTrainer *t) {
  AxEmbedSync *e = &t->embed_sync;
  if (!e->on) return AX_OK;
  const AxStageLayout *lay = ax_stage_layout_of(t->stage);
  float *wte = t->off.grads + lay->offset[AX_P_WTE];
  AxCommConfig cc = ax_comm_config_as(&t->grid.comm_cfg, AX_TRAFFIC_EMBEDDING_SYNC);
  AX_WD_NOTE(-1, "in the data-parallel sum of the tied embedding's gradient over %d rank(s)",
             t->grid.D);
  double t0 = ax_trace_begin(&t->trace);
  if (!t->spec.first) {
    AX_TRY(ax_allreduce(t->grid.data, &cc, wte, lay->count[AX_P_WTE], AX_COMM_F32,
                        (AxAllreduceAlgo)t->cfg.grid.allreduce, &t->comm_bytes));
  } else {
    size_t n = touched_rows(e, t->inputs, (size_t)t->shard * (size_t)t->cfg.model.seq);
    AxSparseCostOut cost;
    if (e->decides) AX_TRY(choose(t, n, &cost));
    AxSparseRows in = {e->idx, n, NULL};
    AxSparseSyncStats st;
    AX_TRY(sync_first(t, &cc, &in, wte, &st));
    t->comm_bytes.sent += st.sent;
    t->comm_bytes.received += st.received;
    if (!e->steps++) report_first(t, n, &st, e->decides ? &cost : NULL);
  }
  ax_trace_end(&t->trace, AX_EV_ALLREDUCE, -1, t0);
  return AX_OK;
}
