/* trainer_embed_sync.c — the data-parallel sum of the tied embedding's gradient when the first
 * stage's copy is row-sparse (Zen, wang-thesis ch. 3; --sparse-embedding-sync). With more than
 * one pipeline stage the first stage's wte gradient comes only from the token lookup: its
 * nonzero rows are the tokens the rank's micro-batches saw. Before the tied pair sums the two
 * ends (which would make it dense), each end sums its own copy over the data-parallel ranks:
 * the first stage with Zen, the all-gather of rows or the dense all-reduce (auto: the cheapest
 * for this step's row counts, decision_link below), the last stage densely; the
 * pair sum then gives every copy the whole sum, and the data-parallel sum of the stage leaves
 * wte out. Fused embedding sync (--fuse-embedding-sync) excludes it: it adds the dense LM-head
 * copy in first. */
#include <math.h>
#include <stdlib.h>

#include "mpi/mpi_util.h"
#include "mpi/sparse/sparse_sync.h"
#include "src/core/error.h"
#include "src/core/log.h"
#include "src/core/watchdog.h"
#include "trainer_impl.h"

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
  ax_sparse_sync_set_owners(e->sync, (AxZenOwners)t->cfg.compression.zen_owners);
  return AX_OK;
}

void ax_trainer_free_embed_sync(AxTrainer *t) {
  AxEmbedSync *e = &t->embed_sync;
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

/* Predicted seconds of each algorithm on N ranks for these counts (sparse_sync.h's bytes; a
 * rank's messages share its link one after another). */
static void predict(const AxEmbedSync *e, int N, double out[3]) {
  double a = e->link.latency_s, b = 1.0 / e->link.bytes_per_s, C = (double)e->cols;
  double V = e->rows, most = 0, all = 0;
  for (int r = 0; r < N; r++) {
    all += (double)e->counts[r];
    if (e->counts[r] > most) most = (double)e->counts[r];
  }
  double row = 4 + 4 * C, uni = fmin(V, all);
  out[AX_SPARSE_SYNC_DENSE] = 2.0 * (N - 1) * (a + 4 * V * C / N * b);
  out[AX_SPARSE_SYNC_ALLGATHER] = (N - 1) * (2 * a + most * row * b);
  out[AX_SPARSE_SYNC_ZEN] = (N - 1) * (2 * a + most * row / N * b) +
                            (N - 1) * (2 * a + (uni / N * 4 * C + V / (8.0 * N)) * b);
}

/* auto: every rank's count (one small all-gather), then the cheapest prediction. */
static int choose(AxTrainer *t, size_t n, double predicted[3]) {
  AxEmbedSync *e = &t->embed_sync;
  unsigned long long mine = n;
  AX_MPI(MPI_Allgather(&mine, 1, MPI_UNSIGNED_LONG_LONG, e->counts, 1, MPI_UNSIGNED_LONG_LONG,
                       t->grid.data));
  predict(e, t->grid.D, predicted);
  e->algo = AX_SPARSE_SYNC_ZEN;
  for (int a = 0; a < 3; a++)
    if (predicted[a] < predicted[e->algo]) e->algo = a;
  return AX_OK;
}

static void report_first(const AxTrainer *t, size_t n, const AxSparseSyncStats *st,
                         const double *predicted) {
  const AxEmbedSync *e = &t->embed_sync;
  char why[160] = "--sparse-embedding-sync";
  if (predicted && !e->priced) /* no link: the bytes alone decided, no time to predict */
    snprintf(why, sizeof why, "auto: the fewest bytes, no link to price them");
  else if (predicted)
    snprintf(why, sizeof why, "auto: predicted zen %.3g ms, allgather %.3g ms, dense %.3g ms",
             predicted[AX_SPARSE_SYNC_ZEN] * 1e3, predicted[AX_SPARSE_SYNC_ALLGATHER] * 1e3,
             predicted[AX_SPARSE_SYNC_DENSE] * 1e3);
  ax_log("embedding sync: first step: %s over %d data-parallel rank(s), %zu of %u wte rows "
         "touched on rank 0 of the column, %llu bytes sent (%s)",
         ax_sparse_sync_algo_name((AxSparseSyncAlgo)e->algo), t->grid.D, n, e->rows,
         st->sent, why);
}

int ax_trainer_sync_embed_data(AxTrainer *t) {
  AxEmbedSync *e = &t->embed_sync;
  if (!e->on) return AX_OK;
  const AxStageLayout *lay = ax_stage_layout_of(t->stage);
  float *wte = t->off.grads + lay->offset[AX_P_WTE];
  AxCommConfig cc = ax_comm_config_as(&t->grid.comm_cfg, AX_TRAFFIC_EMBEDDING_SYNC);
  AxAllreduceAlgo dense = (AxAllreduceAlgo)t->cfg.grid.allreduce;
  AX_WD_NOTE(-1, "in the data-parallel sum of the tied embedding's gradient over %d rank(s)",
             t->grid.D);
  double t0 = ax_trace_begin(&t->trace);
  if (!t->spec.first) {
    AX_TRY(ax_allreduce(t->grid.data, &cc, wte, lay->count[AX_P_WTE], AX_COMM_F32, dense,
                        &t->comm_bytes));
  } else {
    size_t n = touched_rows(e, t->inputs, (size_t)t->shard * (size_t)t->cfg.model.seq);
    double predicted[3];
    if (e->decides) AX_TRY(choose(t, n, predicted));
    AxSparseRows in = {e->idx, n, NULL};
    AxSparseSyncStats st;
    AX_TRY(ax_sparse_sync(e->sync, (AxSparseSyncAlgo)e->algo, dense, &cc, &in, wte, &st));
    t->comm_bytes.sent += st.sent;
    t->comm_bytes.received += st.received;
    if (!e->steps++ && t->grid.row == 0) report_first(t, n, &st, e->decides ? predicted : NULL);
  }
  ax_trace_end(&t->trace, AX_EV_ALLREDUCE, -1, t0);
  return AX_OK;
}
