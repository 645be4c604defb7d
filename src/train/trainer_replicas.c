/* trainer_replicas.c — the end-of-run check that data parallelism kept its promise: every
 * data-parallel replica of a stage (each tensor-parallel shard's) holds the same fp32 master
 * weights and Adam moments, bit for bit. Each rank takes a CRC-32 of its state, its column
 * compares them; a column that differs is a defect (the checkpoints and the saved model hold
 * row 0's and lose the others'), said in one warning and in the summary. The same for the
 * tied embedding's two copies on a pipeline's first and last stage: their wte ranges (weights
 * and moments) must agree bit for bit, pair by pair (the checkpoints hold the first stage's).
 * (The replicas of a tensor inside a tensor-parallel cell: ax_trainer_check_replicas,
 * trainer_tp.c.) */
#include "mpi/mpi_util.h"
#include "src/core/crc32.h"
#include "src/core/error.h"
#include "src/core/log.h"
#include "trainer_impl.h"

/* This rank's CRC-32 of elements [lo, hi) of its master weights, then of its first and second
 * moments. */
static uint32_t state_crc(const AxTrainer *t, size_t lo, size_t hi) {
  size_t bytes = (hi - lo) * sizeof(float);
  uint32_t crc = 0;
  const float *state[3] = {t->off.master, t->off.m, t->off.v};
  for (int k = 0; k < 3; k++)
    if (state[k]) crc = ax_crc32(crc, state[k] + lo, bytes);
  return crc;
}

/* Whether the ranks of comm hold different CRCs: the smallest and the largest of them. */
static int crcs_differ(uint32_t mine, MPI_Comm comm, int *differs) {
  uint32_t lo, hi;
  AX_MPI(MPI_Allreduce(&mine, &lo, 1, MPI_UINT32_T, MPI_MIN, comm));
  AX_MPI(MPI_Allreduce(&mine, &hi, 1, MPI_UINT32_T, MPI_MAX, comm));
  *differs = lo != hi;
  return AX_OK;
}

/* How many of the world's groups differ, each counted by one of its ranks (counter). */
static int count_over_world(AxTrainer *t, int differs, int counter, int *count) {
  int counted = differs && counter;
  AX_MPI(MPI_Allreduce(&counted, count, 1, MPI_INT, MPI_SUM, t->grid.world));
  return AX_OK;
}

/* The tied embedding's pairs (first and last stage of a row, each tensor-parallel shard's)
 * whose copies differ. */
static int compare_tied_copies(AxTrainer *t) {
  t->tied_differ = -1;
  if (t->grid.P < 2) return AX_OK;
  int differs = 0;
  if (t->grid.tied != MPI_COMM_NULL) {
    const AxStageLayout *lay = ax_stage_layout_of(t->stage);
    size_t lo = lay->offset[AX_P_WTE];
    AX_TRY(crcs_differ(state_crc(t, lo, lo + lay->count[AX_P_WTE]), t->grid.tied, &differs));
  }
  AX_TRY(count_over_world(t, differs, t->grid.stage == 0, &t->tied_differ));
  if (t->tied_differ && t->grid.rank == 0)
    ax_warn("the tied embedding's copies on the first and the last stage differ at the end of "
            "the run in %d pair(s) of them (weights or Adam moments): a defect of axonn (please "
            "report it with the command line); the checkpoints and the saved model hold the "
            "first stage's",
            t->tied_differ);
  return AX_OK;
}

int ax_trainer_compare_data_replicas(AxTrainer *t) {
  t->replicas_differ = t->tied_differ = -1;
  if (!t->have_grid || (t->grid.D < 2 && t->grid.P < 2)) return AX_OK;
  AX_WD_NOTE(-1, "comparing the replicas' weights and moments (CRC-32)");
  AX_TRY(ax_trainer_state_to_host(t));
  AX_TRY(compare_tied_copies(t));
  if (t->grid.D < 2) return AX_OK;
  int differs = 0;
  AX_TRY(crcs_differ(state_crc(t, 0, t->off.n), t->grid.data, &differs));
  AX_TRY(count_over_world(t, differs, t->grid.row == 0, &t->replicas_differ));
  if (t->replicas_differ && t->grid.rank == 0)
    ax_warn("the data-parallel replicas of %d stage shard(s) hold different weights or Adam "
            "moments at the end of the run: a defect of axonn (please report it with the "
            "command line); the checkpoints and the saved model hold row 0's",
            t->replicas_differ);
  return AX_OK;
}

int ax_trainer_data_replicas_differ(const AxTrainer *t) { return t->replicas_differ; }

int ax_trainer_tied_copies_differ(const AxTrainer *t) { return t->tied_differ; }
