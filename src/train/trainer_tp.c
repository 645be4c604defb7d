/* trainer_tp.c — the trainer's side of tensor parallelism that is not the layers': whole
 * stages and this rank's shards. The initialization, model files and checkpoints all hold whole
 * tensors (gpt_config.h's stage layout), so none of them depends on the grid: a rank reads its
 * stage whole and keeps its shards (models/tp_shard.h), and for writing the ranks of a
 * (stage, row) cell send their shards to the cell's rank 0, which puts the stage back together.
 * Without tensor parallelism the whole stage is the rank's own buffer and nothing is copied.
 * Writing keeps cell rank 0's copy of a replicated tensor, so the replicas are checked to be
 * alike first (ax_trainer_check_replicas). */
#include <stdlib.h>

#include "models/tp_shard.h"
#include "mpi/mpi_util.h"
#include "src/core/error.h"
#include "src/core/log.h"
#include "src/core/watchdog.h"
#include "trainer_impl.h"

enum { TAG_SHARDS = 78 };

int ax_trainer_tp_on(const AxTrainer *t) { return ax_grid_tp_size(&t->grid) > 1; }

/* The tensor-parallel coordinates of cell rank `index` (sizes and coordinates only). */
static AxTpComm cell_rank(const AxTrainer *t, int index) {
  AxTpComm c = {.size = {t->grid.tp[0], t->grid.tp[1], t->grid.tp[2]}};
  c.coord[0] = index % c.size[0];
  c.coord[1] = index / c.size[0] % c.size[1];
  c.coord[2] = index / (c.size[0] * c.size[1]);
  return c;
}

int ax_trainer_whole_open(AxTrainer *t, AxWholeStage *w, float *const shards[], int n,
                          int everywhere) {
  *w = (AxWholeStage){.n = n, .owned = ax_trainer_tp_on(t)};
  const AxStageSpec *s = &t->spec;
  ax_stage_layout(&w->whole, &t->model, s->l0, s->l1, s->first, s->last);
  if (w->owned && !everywhere && ax_grid_tp_index(&t->grid) != 0) return AX_OK; /* no copy */
  for (int i = 0; i < n; i++) {
    w->buf[i] = w->owned ? ax_malloc(w->whole.total * sizeof(float)) : shards[i];
    if (!w->buf[i]) {
      ax_trainer_whole_close(w);
      return ax_error_context("a whole copy of stage %d (%.1f MB) to shard",
                              t->grid.stage, w->whole.total * 4.0 / 1e6);
    }
  }
  return AX_OK;
}

void ax_trainer_whole_close(AxWholeStage *w) {
  for (int i = 0; i < w->n && w->owned; i++) free(w->buf[i]);
  w->n = 0;
}

void ax_trainer_whole_extract(AxTrainer *t, AxWholeStage *w, float *const shards[]) {
  if (!w->owned) return;
  AxTpComm me = cell_rank(t, ax_grid_tp_index(&t->grid));
  for (int i = 0; i < w->n; i++)
    ax_tp_shard_copy(&t->model, &w->whole, ax_stage_layout_of(t->stage), &me, w->buf[i],
                     shards[i], AX_TP_EXTRACT);
}

/* Cell rank 0: receives every other cell rank's shards and puts them in place. Every rank of
 * the cell has the same shard layout (the sizes depend on the grid, not the coordinates); only
 * where its rows sit in the whole tensors differs. */
static int collect(AxTrainer *t, AxWholeStage *w, float *const shards[]) {
  const AxStageLayout *lay = ax_stage_layout_of(t->stage);
  int T = ax_grid_tp_size(&t->grid), rc = AX_OK;
  float *tmp = ax_malloc(lay->total * sizeof *tmp);
  if (!tmp) return AX_ERR;
  for (int r = 0; r < T && rc == AX_OK; r++) {
    AxTpComm c = cell_rank(t, r);
    for (int i = 0; i < w->n && rc == AX_OK; i++) {
      const float *from = shards[i];
      if (r > 0) {
        AX_WD_NOTE(-1, "receiving the shards of tensor-parallel rank %d of stage %d", r,
                   t->grid.stage);
        rc = ax_mpi_recv_floats(&t->grid.comm_cfg, tmp, lay->total, r, TAG_SHARDS,
                                t->grid.cell);
        from = tmp;
      }
      if (rc == AX_OK)
        ax_tp_shard_copy(&t->model, &w->whole, lay, &c, w->buf[i], (float *)from,
                         AX_TP_INSERT);
    }
  }
  free(tmp);
  return rc;
}

int ax_trainer_whole_gather(AxTrainer *t, AxWholeStage *w, float *const shards[]) {
  if (!w->owned) return AX_OK;
  if (ax_grid_tp_index(&t->grid) == 0) return collect(t, w, shards);
  size_t n = ax_stage_layout_of(t->stage)->total;
  AX_WD_NOTE(-1, "sending this rank's shards to tensor-parallel rank 0 of stage %d",
             t->grid.stage);
  for (int i = 0; i < w->n; i++) {
    ax_traffic_add(&t->traffic, AX_TRAFFIC_OTHER,
                   ax_link_crosses(t->links, t->grid.rank - ax_grid_tp_index(&t->grid)),
                   n * sizeof(float));
    AX_TRY(ax_mpi_send_floats(shards[i], n, 0, TAG_SHARDS, t->grid.cell));
  }
  return AX_OK;
}

/* Group g's replicated tensors whose CRCs differ within it: the first's id, or -1. */
static int differs_over(AxTrainer *t, int g, uint32_t crc[AX_N_PARAMS], int *first) {
  uint32_t lo[AX_N_PARAMS], hi[AX_N_PARAMS];
  *first = -1;
  if (t->grid.tpc[g] == MPI_COMM_NULL) return AX_OK;
  AX_MPI(MPI_Allreduce(crc, lo, AX_N_PARAMS, MPI_UINT32_T, MPI_MIN, t->grid.tpc[g]));
  AX_MPI(MPI_Allreduce(crc, hi, AX_N_PARAMS, MPI_UINT32_T, MPI_MAX, t->grid.tpc[g]));
  for (int id = 0; id < AX_N_PARAMS && *first < 0; id++)
    if ((ax_tp_param_replicas(id) >> g & 1u) && lo[id] != hi[id]) *first = id;
  return AX_OK;
}

int ax_trainer_check_replicas(AxTrainer *t) {
  if (!ax_trainer_tp_on(t)) return AX_OK;
  AX_TRY(ax_trainer_state_to_host(t));
  const AxStageLayout *lay = ax_stage_layout_of(t->stage);
  const float *state[3] = {t->off.master, t->off.m, t->off.v};
  uint32_t crc[AX_N_PARAMS] = {0};
  for (int i = 0; i < 3; i++) ax_tp_replica_crcs(lay, state[i], crc);
  AX_WD_NOTE(-1, "comparing the tensor-parallel replicas of stage %d", t->grid.stage);
  int rc = AX_OK;
  for (int g = 0; g < 3; g++) {
    int id;
    AX_TRY(differs_over(t, g, crc, &id));
    if (id >= 0 && rc == AX_OK)
      rc = AX_FAIL("the tensor-parallel replicas of %s on stage %d differ over %c (weights or "
                   "Adam moments): replicated tensors must take the same update on every rank",
                   ax_param_name(id), t->grid.stage, "XYZ"[g]);
  }
  AX_TRY(ax_grid_agree(&t->grid, rc));
  ax_log("tensor parallel: every replicated tensor is alike bit for bit on the ranks that hold "
         "it (weights and Adam moments)");
  return AX_OK;
}
