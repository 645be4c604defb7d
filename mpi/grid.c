/* grid.c — the process grid (stages x rows x the tensor-parallel grid) and its communicators;
 * see grid.h. */
#include "grid.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpi_util.h"
#include "src/core/error.h"
#include "src/core/log.h"

enum { DETAIL_CAP = 256 };

AxRankLayout ax_grid_layout(const AxGrid *g) {
  return (AxRankLayout){g->P, {g->tp[0], g->tp[1], g->tp[2]}};
}

int ax_grid_tp_size(const AxGrid *g) { return g->tp[0] * g->tp[1] * g->tp[2]; }
int ax_grid_tp_index(const AxGrid *g) { return g->tc[0] + g->tp[0] * (g->tc[1] + g->tp[1] * g->tc[2]); }

/* Colour of the ranks that share every coordinate but those dropped: `cell` numbers the
 * (stage, row) cells, the tensor index the position inside one. */
static int tp_colour(const AxGrid *g, int skip_dim) {
  int c = 0;
  for (int d = 2; d >= 0; d--)
    if (d != skip_dim) c = c * g->tp[d] + g->tc[d];
  return c;
}

static int split_comms(AxGrid *g) {
  int T = ax_grid_tp_size(g), t = ax_grid_tp_index(g);
  AX_MPI(MPI_Comm_split(MPI_COMM_WORLD, g->row * T + t, g->stage, &g->pipe));
  AX_MPI(MPI_Comm_split(MPI_COMM_WORLD, g->stage * T + t, g->row, &g->data));
  int end = g->P > 1 && (g->stage == 0 || g->stage == g->P - 1);
  AX_MPI(MPI_Comm_split(MPI_COMM_WORLD, end ? g->row * T + t : MPI_UNDEFINED, g->stage, &g->tied));
  AX_MPI(MPI_Comm_split(MPI_COMM_WORLD, end ? t : MPI_UNDEFINED, g->rank, &g->embed));
  int cell = g->stage + g->P * g->row;
  for (int d = 0; d < 3; d++) {
    int mine = g->tp[d] > 1 ? cell * (T / g->tp[d]) + tp_colour(g, d) : MPI_UNDEFINED;
    AX_MPI(MPI_Comm_split(MPI_COMM_WORLD, mine, g->tc[d], &g->tpc[d]));
  }
  AX_MPI(MPI_Comm_split(MPI_COMM_WORLD, T > 1 ? cell : MPI_UNDEFINED, t, &g->cell));
  AX_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &g->world));
  return AX_OK;
}

static void set_null(AxGrid *g) {
  g->pipe = g->data = g->tied = g->embed = g->cell = g->world = MPI_COMM_NULL;
  for (int d = 0; d < 3; d++) {
    g->tpc[d] = MPI_COMM_NULL;
    g->tp[d] = 1;
  }
}

int ax_grid_create(AxGrid *g, int P, int D) { return ax_grid_create_tp(g, P, D, (int[3]){1, 1, 1}); }

int ax_grid_create_tp(AxGrid *g, int P, int D, const int tp[3]) {
  memset(g, 0, sizeof *g);
  set_null(g);
  g->comm_cfg = ax_comm_config_default();
  AX_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &g->rank));
  AX_MPI(MPI_Comm_size(MPI_COMM_WORLD, &g->size));
  if (P < 1 || D < 1 || tp[0] < 1 || tp[1] < 1 || tp[2] < 1)
    return AX_FAIL("grid sizes must be positive (--g-inter %d --g-data %d --gx %d --gy %d --gz %d)",
                   P, D, tp[0], tp[1], tp[2]);
  long long want = (long long)P * D * tp[0] * tp[1] * tp[2];
  if (want != g->size) {
    if (tp[0] * tp[1] * tp[2] == 1)
      return AX_FAIL("the grid --g-inter %d x --g-data %d needs %d ranks, but the job has %d", P,
                     D, P * D, g->size);
    return AX_FAIL("the grid --g-inter %d x --gx %d x --gy %d x --gz %d x --g-data %d needs %lld "
                   "ranks, but the job has %d", P, tp[0], tp[1], tp[2], D, want, g->size);
  }
  g->P = P;
  g->D = D;
  for (int d = 0; d < 3; d++) g->tp[d] = tp[d];
  AxRankLayout layout = ax_grid_layout(g);
  AxRankCoords c = ax_rank_coords(&layout, g->rank);
  for (int d = 0; d < 3; d++) g->tc[d] = c.tc[d];
  g->stage = c.stage;
  g->row = c.row;
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
  set_null(g);
  g->size = g->P = g->D = g->local_size = g->share_size = 1;
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
  for (int d = 0; d < 3; d++) free_comm(&g->tpc[d]);
  free_comm(&g->cell);
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
    int T = ax_grid_tp_size(g);
    if (T == 1)
      ax_log("grid: %d stage(s) x %d data-parallel row(s) = %d rank(s)", g->P, g->D, g->size);
    else
      ax_log("grid: %d stage(s) x %d x %d x %d tensor-parallel x %d data-parallel row(s) = %d "
             "rank(s)", g->P, g->tp[0], g->tp[1], g->tp[2], g->D, g->size);
    AxRankLayout layout = ax_grid_layout(g);
    for (int r = 0; r < g->size; r++) {
      AxRankCoords c = ax_rank_coords(&layout, r);
      char tp[48] = "";
      if (T > 1) snprintf(tp, sizeof tp, "  x %d y %d z %d", c.tc[0], c.tc[1], c.tc[2]);
      ax_log("  rank %3d  stage %2d  row %3d%s  %s", r, c.stage, c.row, tp,
             all + (size_t)r * DETAIL_CAP);
    }
  }
  free(all);
  return AX_OK;
}

int ax_grid_agree(const AxGrid *g, int status) {
  if (g->world == MPI_COMM_NULL) return status;
  return ax_mpi_agree_as(&g->comm_cfg, g->world, status);
}
