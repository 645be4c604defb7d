/* trainer_replicas.c — the end-of-run check that data parallelism kept its promise: every
 * data-parallel replica of a stage (each tensor-parallel shard's) holds the same fp32 master
 * weights and Adam moments, bit for bit. Each rank takes a CRC-32 of its state, its column
 * compares them; a column that differs is a defect (the checkpoints and the saved model hold
 * row 0's and lose the others'), said in one warning and in the summary. (The replicas of a
 * tensor inside a tensor-parallel cell: ax_trainer_check_replicas, trainer_tp.c.) */
#include "mpi/mpi_util.h"
#include "src/core/crc32.h"
#include "src/core/error.h"
#include "src/core/log.h"
#include "trainer_impl.h"

/* This rank's CRC-32 of its master weights, then its first and second moments. */
static uint32_t state_crc(const AxTrainer *t) {
  size_t bytes = t->off.n * sizeof(float);
  uint32_t crc = 0;
  const float *state[3] = {t->off.master, t->off.m, t->off.v};
  for (int k = 0; k < 3; k++)
    if (state[k]) crc = ax_crc32(crc, state[k], bytes);
  return crc;
}

/* Whether the ranks of this rank's data-parallel column hold different states: the smallest
 * and the largest of their CRCs. */
static int column_differs(AxTrainer *t, int *differs) {
  uint32_t mine = state_crc(t), lo, hi;
  AX_MPI(MPI_Allreduce(&mine, &lo, 1, MPI_UINT32_T, MPI_MIN, t->grid.data));
  AX_MPI(MPI_Allreduce(&mine, &hi, 1, MPI_UINT32_T, MPI_MAX, t->grid.data));
  *differs = lo != hi;
  return AX_OK;
}

int ax_trainer_compare_data_replicas(AxTrainer *t) {
  t->replicas_differ = -1;
  if (!t->have_grid || t->grid.D < 2) return AX_OK;
  AX_WD_NOTE(-1, "comparing the data-parallel replicas' weights and moments (CRC-32)");
  AX_TRY(ax_trainer_state_to_host(t));
  int differs = 0;
  AX_TRY(column_differs(t, &differs));
  int counted = differs && t->grid.row == 0; /* one count a column */
  AX_MPI(MPI_Allreduce(&counted, &t->replicas_differ, 1, MPI_INT, MPI_SUM, t->grid.world));
  if (t->replicas_differ && t->grid.rank == 0)
    ax_warn("the data-parallel replicas of %d stage shard(s) hold different weights or Adam "
            "moments at the end of the run: a defect of axonn (please report it with the "
            "command line); the checkpoints and the saved model hold row 0's",
            t->replicas_differ);
  return AX_OK;
}

int ax_trainer_data_replicas_differ(const AxTrainer *t) { return t->replicas_differ; }
