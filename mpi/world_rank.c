/* world_rank.c — a communicator's world ranks, cached on the communicator; see world_rank.h. */
#include "world_rank.h"

#include <stdlib.h>

#include "mpi_util.h"

static int g_keyval = MPI_KEYVAL_INVALID;

static int free_table(MPI_Comm comm, int keyval, void *value, void *extra) {
  (void)comm, (void)keyval, (void)extra;
  free(value);
  return MPI_SUCCESS;
}

/* table[r] = the world rank of rank r of comm (mine: scratch of the same size). */
static int translate(MPI_Comm comm, int size, int *table, int *mine) {
  for (int r = 0; r < size; r++) mine[r] = r;
  MPI_Group group, world;
  AX_MPI(MPI_Comm_group(comm, &group));
  int rc = MPI_Comm_group(MPI_COMM_WORLD, &world);
  if (rc == MPI_SUCCESS) {
    rc = MPI_Group_translate_ranks(group, size, mine, world, table);
    MPI_Group_free(&world);
  }
  MPI_Group_free(&group);
  if (rc != MPI_SUCCESS) return ax_mpi_fail_at(rc, "MPI_Group_translate_ranks", __FILE__, __LINE__);
  return AX_OK;
}

static int build(MPI_Comm comm, int **out) {
  int size;
  AX_MPI(MPI_Comm_size(comm, &size));
  int *table = ax_malloc((size_t)size * sizeof *table);
  int *mine = table ? ax_malloc((size_t)size * sizeof *mine) : NULL;
  int rc = mine ? translate(comm, size, table, mine) : AX_ERR;
  free(mine);
  if (rc != AX_OK) {
    free(table);
    return AX_ERR;
  }
  *out = table;
  return AX_OK;
}

int ax_mpi_world_ranks(MPI_Comm comm, const int **table) {
  if (g_keyval == MPI_KEYVAL_INVALID)
    AX_MPI(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, free_table, &g_keyval, NULL));
  void *value = NULL;
  int found = 0;
  AX_MPI(MPI_Comm_get_attr(comm, g_keyval, &value, &found));
  if (!found) {
    int *fresh = NULL;
    AX_TRY(build(comm, &fresh));
    int rc = MPI_Comm_set_attr(comm, g_keyval, fresh);
    if (rc != MPI_SUCCESS) {
      free(fresh);
      return ax_mpi_fail_at(rc, "MPI_Comm_set_attr", __FILE__, __LINE__);
    }
    value = fresh;
  }
  *table = value;
  return AX_OK;
}

int ax_mpi_world_rank_of(const int *table, int size, int r) {
  return table && r >= 0 && r < size ? table[r] : -1;
}
