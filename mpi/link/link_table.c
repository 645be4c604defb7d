/* link_table.c — the node-shared busy-until time of each link; see link_table.h. */
#include "link_table.h"

#include <stdatomic.h>
#include <string.h>

#include "link_log.h"
#include "mpi/mpi_util.h"
#include "src/core/error.h"

/* Processes share these atomics through memory they map at different addresses: that needs
 * lock-free (address-free) operations. */
_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "the link table needs lock-free 64-bit atomics");

enum { LINE = 64 };

static atomic_llong *slot(const AxLinkTable *t, int dst) {
  return (atomic_llong *)(void *)(t->base + (size_t)dst * LINE);
}

void *ax_link_table_log(const AxLinkTable *t, int dst) {
  if (!t->with_logs) return NULL;
  return t->base + (size_t)t->n_nodes * LINE + (size_t)dst * ax_link_log_bytes();
}

static int create(AxLinkTable *t, MPI_Comm node, int n_nodes) {
  int node_rank;
  AX_MPI(MPI_Comm_rank(node, &node_rank));
  MPI_Aint need = (MPI_Aint)n_nodes * (LINE + (t->with_logs ? (MPI_Aint)ax_link_log_bytes() : 0));
  AX_TRY(ax_mpi_shared_segment(node, need, "link table", &t->win, &t->base));
  if (node_rank == 0) /* sequentially consistent stores: visible before the barrier ends */
    for (int d = 0; d < n_nodes; d++) {
      atomic_store(slot(t, d), 0);
      if (t->with_logs) ax_link_log_init(ax_link_table_log(t, d));
    }
  AX_MPI(MPI_Barrier(node)); /* nobody reserves before the table is initialized */
  return AX_OK;
}

int ax_link_table_create(AxLinkTable *t, MPI_Comm node, int n_nodes, int with_logs) {
  memset(t, 0, sizeof *t);
  t->win = MPI_WIN_NULL;
  t->n_nodes = n_nodes;
  t->with_logs = with_logs;
  int rc = create(t, node, n_nodes);
  if (rc != AX_OK) ax_link_table_destroy(t);
  return rc;
}

void ax_link_table_destroy(AxLinkTable *t) {
  if (t->win != MPI_WIN_NULL) MPI_Win_free(&t->win);
  memset(t, 0, sizeof *t);
  t->win = MPI_WIN_NULL;
}

long long ax_link_table_reserve(AxLinkTable *t, int dst, long long now_ns, long long busy_ns) {
  atomic_llong *free_at = slot(t, dst);
  long long old = atomic_load(free_at), start;
  do {
    start = old > now_ns ? old : now_ns;
  } while (!atomic_compare_exchange_weak(free_at, &old, start + busy_ns));
  return start;
}
