/* rank_layout.h — where a world rank sits in the process grid, as plain arithmetic (no MPI):
 * G_inter stages x G_data rows, each (stage, row) cell a Gx x Gy x Gz tensor-parallel grid, and
 * world rank r = x + Gx·(y + Gy·(z + Gz·(stage + G_inter·row))) (docs/tensor-parallel.md): X
 * fastest, then Y, Z, the stage, the row. mpi/grid.c places its ranks with it; the watchdog's
 * messages and the trace's track names label ranks with it, so a label is always the rank's
 * real place. */
#ifndef AX_RANK_LAYOUT_H
#define AX_RANK_LAYOUT_H

#include <stddef.h>

typedef struct {
  int P;     /* G_inter (stages) */
  int tp[3]; /* Gx, Gy, Gz (1 each without tensor parallelism) */
} AxRankLayout;

typedef struct {
  int stage, row;
  int tc[3]; /* x, y, z inside the cell's tensor-parallel grid */
} AxRankCoords;

/* A layout of P stages without tensor parallelism (P < 1 counts as 1). */
AxRankLayout ax_rank_layout_plain(int P);
/* Rank r's coordinates (sizes below 1 count as 1). */
AxRankCoords ax_rank_coords(const AxRankLayout *l, int r);
/* "rank 5 (stage 1, row 0)"; with tensor parallelism (Gx·Gy·Gz > 1) the position inside the
 * cell too, "rank 5 (stage 0, x 1 y 0 z 0, row 1)". Into buf, cut to cap; returns buf. */
const char *ax_rank_label(const AxRankLayout *l, int r, char *buf, size_t cap);

#endif
