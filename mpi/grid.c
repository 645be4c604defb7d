/* grid.c — the G_inter x G_data grid and its communicators; see grid.h. */
#include "grid.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpi_util.h"
#include "src/core/error.h"
#include "src/core/log.h"

enum { DETAIL_CAP = 256 };

static int split_comms(AxGrid *g) {
  AX_MPI(MPI_Comm_split(MPI_COMM_WORLD, g->row, g->stage, &g->pipe));
  AX_MPI(MPI_Comm_split(MPI_COMM_WORLD, g->stage, g->row, &g->data));
  int end = g->P > 1 && (g->stage == 0 || g->stage == g->P - 1);
  AX_MPI(MPI_Comm_split(MPI_COMM_WORLD, end ? g->row : MPI_UNDEFINED, g->stage, &g->tied));
  AX_MPI(MPI_Comm_split(MPI_COMM_WORLD, end ? 0 : MPI_UNDEFINED, g->rank, &g->embed));
  AX_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &g->world));
  return AX_OK;
}

int ax_grid_create(AxGrid *g, int P, int D) {
  memset(g, 0, sizeof *g);
  g->pipe = g->data = g->tied = g->embed = g->world = MPI_COMM_NULL;
  g->comm_cfg = ax_comm_config_default();
  AX_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &g->rank));
  AX_MPI(MPI_Comm_size(MPI_COMM_WORLD, &g->size));
  if (P < 1 || D < 1 || P * D != g->size)
    return AX_FAIL("the grid --g-inter %d x --g-data %d needs %d ranks, but the job has %d", P,
                   D, P * D, g->size);
  g->P = P;
  g->D = D;
  g->stage = g->rank % P;
  g->row = g->rank / P;
  AxNodeRanks nr;
  AX_TRY(ax_mpi_node_ranks(MPI_COMM_WORLD, &nr));
  g->local_rank = nr.local_rank;
  g->local_size = nr.local_size;
  g->share_rank = nr.share_rank;
  g->share_size = nr.share_size;
  if (gethostname(g->host, sizeof g->host) != 0) snprintf(g->host, sizeof g->host, "?");
  g->host[sizeof g->host - 1] = 0;
  return split_comms(g);
}

void ax_grid_solo(AxGrid *g) {
  memset(g, 0, sizeof *g);
  g->size = g->P = g->D = g->local_size = g->share_size = 1;
  g->pipe = g->data = g->tied = g->embed = g->world = MPI_COMM_NULL;
  g->comm_cfg = ax_comm_config_default();
  if (gethostname(g->host, sizeof g->host) != 0) snprintf(g->host, sizeof g->host, "?");
  g->host[sizeof g->host - 1] = 0;
}

static void free_comm(MPI_Comm *c) {
  if (*c != MPI_COMM_NULL) MPI_Comm_free(c);
  *c = MPI_COMM_NULL;
}

void ax_grid_destroy(AxGrid *g) {
  free_comm(&g->pipe);
  free_comm(&g->data);
  free_comm(&g->tied);
  free_comm(&g->embed);
  free_comm(&g->world);
}

int ax_grid_print(const AxGrid *g, const char *detail) {
  if (g->world == MPI_COMM_NULL) {
    ax_log("grid: 1 stage x 1 data-parallel row (one process) | %s | %s", g->host, detail);
    return AX_OK;
  }
  char mine[DETAIL_CAP];
  snprintf(mine, sizeof mine, "%s | %s", g->host, detail);
  char *all = NULL;
  if (g->rank == 0 && !(all = ax_malloc((size_t)g->size * DETAIL_CAP))) return AX_ERR;
  AX_MPI(MPI_Gather(mine, DETAIL_CAP, MPI_CHAR, all, DETAIL_CAP, MPI_CHAR, 0, g->world));
  if (g->rank == 0) {
    ax_log("grid: %d stage(s) x %d data-parallel row(s) = %d rank(s)", g->P, g->D, g->size);
    for (int r = 0; r < g->size; r++)
      ax_log("  rank %3d  stage %2d  row %3d  %s", r, r % g->P, r / g->P,
             all + (size_t)r * DETAIL_CAP);
  }
  free(all);
  return AX_OK;
}

int ax_grid_agree(const AxGrid *g, int status) {
  if (g->world == MPI_COMM_NULL) return status;
  return ax_mpi_agree(g->world, status);
}
