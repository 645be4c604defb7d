/* grid.h — the process grid: G_inter stages x G_data rows, and inside each (stage, row) cell a
 * Gx x Gy x Gz tensor-parallel grid (docs/tensor-parallel.md). World rank
 * r = x + Gx·(y + Gy·(z + Gz·(stage + G_inter·row))): X fastest (an X group sits inside a node),
 * then Y, Z, the stage, the row. Without tensor parallelism (1 x 1 x 1) rank r is stage r % P
 * of row r / P, so consecutive ranks form one pipeline. The pipeline, data-parallel, tied and
 * embedding communicators below join only ranks of the same tensor coordinates (x, y, z). Communicators: the pipeline row (ranks of
 * one row, ordered by stage), the data-parallel column (ranks of one stage, ordered by row),
 * the tied-embedding pair (first and last stage of one row), every holder of the tied embedding
 * (the first and last stage of every row: Optimus-CC's fused embedding synchronization) and a
 * duplicate of the world for collectives of our own; and the configuration of this rank's communication (comm_config.h:
 * the defaults when created; the trainer sets it once, e.g. polite waiting when its ranks
 * oversubscribe the cores) that everything communicating on the grid is handed. */
#ifndef AX_GRID_H
#define AX_GRID_H

#include <mpi.h>

#include "comm_config.h"
#include "src/core/rank_layout.h"

typedef struct {
  int rank, size;         /* world */
  int P, D;               /* G_inter (stages), G_data (rows) */
  int stage, row;
  int tp[3];              /* Gx, Gy, Gz (AX_TP_X, AX_TP_Y, AX_TP_Z order) */
  int tc[3];              /* this rank's x, y, z */
  MPI_Comm tpc[3];        /* the ranks that differ from this one in x (y, z) only, rank = x
                           * (y, z); MPI_COMM_NULL where that size is 1 */
  MPI_Comm cell;          /* this (stage, row) cell's tensor-parallel grid, rank =
                           * ax_grid_tp_index; MPI_COMM_NULL without tensor parallelism */
  int local_rank, local_size; /* among the ranks on this node */
  int share_rank, share_size; /* among those that started with this rank's CPU set */
  MPI_Comm pipe;          /* this row's stages, rank = stage; pipeline messages only */
  MPI_Comm data;          /* this stage's rows, rank = row */
  MPI_Comm tied;          /* first + last stage of this row (MPI_COMM_NULL elsewhere or P == 1) */
  MPI_Comm embed;         /* first + last stage of every row, by world rank (2 x D ranks;
                           * MPI_COMM_NULL elsewhere or P == 1) */
  MPI_Comm world;         /* a duplicate of MPI_COMM_WORLD for axonn's own collectives */
  AxCommConfig comm_cfg;  /* chunking and waiting of this rank's communication */
  char host[64];
} AxGrid;

/* Collective over MPI_COMM_WORLD. Fails (on every rank alike) when size != P*D. */
int ax_grid_create(AxGrid *g, int P, int D);
/* The same with a Gx x Gy x Gz tensor-parallel grid in every cell (tp = {Gx, Gy, Gz}): fails
 * when size != P*D*Gx*Gy*Gz. */
int ax_grid_create_tp(AxGrid *g, int P, int D, const int tp[3]);
/* Ranks of one tensor-parallel grid (Gx·Gy·Gz) and this rank's index in it (x + Gx·(y + Gy·z)). */
int ax_grid_tp_size(const AxGrid *g);
int ax_grid_tp_index(const AxGrid *g);
/* The grid's shape, to place or label any rank (src/core/rank_layout.h). */
AxRankLayout ax_grid_layout(const AxGrid *g);
/* A 1 x 1 grid for a process that runs without MPI (unit tests, benchmarks): no
 * communicators, and every grid operation below works without calling MPI. */
void ax_grid_solo(AxGrid *g);
void ax_grid_destroy(AxGrid *g);

/* Rank 0 prints one line per rank: rank, stage, row, host and `detail` (e.g. the binding). */
int ax_grid_print(const AxGrid *g, const char *detail);

/* Agreement after a phase that may fail on some ranks only: every rank passes its status; all
 * learn whether any failed. The lowest failing rank's error message is forwarded so that rank
 * 0 can print it with the failing rank named. Returns AX_OK when every rank succeeded. Waits
 * as the grid's comm_cfg says (politely on an oversubscribed node). */
int ax_grid_agree(const AxGrid *g, int status);

#endif
