/* binding.c — hwloc core binding; see binding.h. */
#include "binding.h"

#include <hwloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

struct AxBinding {
  hwloc_topology_t topo;
  int enabled;
  int ncores;
  int first_core;
  int nthreads;
  char desc[512];
};

static hwloc_obj_t core_obj(const AxBinding *b, int tid) {
  return hwloc_get_obj_by_type(b->topo, HWLOC_OBJ_CORE, b->first_core + tid);
}

static void describe_bound(AxBinding *b) {
  char cores[64], pus[256] = "";
  snprintf(cores, sizeof cores, "%d-%d", b->first_core, b->first_core + b->nthreads - 1);
  size_t len = 0;
  for (int t = 0; t < b->nthreads && len + 32 < sizeof pus; t++) {
    char set[32];
    hwloc_bitmap_list_snprintf(set, sizeof set, core_obj(b, t)->cpuset);
    len += (size_t)snprintf(pus + len, sizeof pus - len, "%sthread %d -> PU %s", t ? ", " : "",
                            t, set);
  }
  snprintf(b->desc, sizeof b->desc, "bound to cores %s (%s)", cores, pus);
}

AxBinding *ax_binding_create(int nthreads, int local_rank, int local_size, int enable) {
  AxBinding *b = ax_calloc(1, sizeof *b);
  if (!b) return NULL;
  if (hwloc_topology_init(&b->topo) != 0 || hwloc_topology_load(b->topo) != 0) {
    free(b);
    AX_FAIL("hwloc cannot read the machine topology");
    return NULL;
  }
  b->ncores = hwloc_get_nbobjs_by_type(b->topo, HWLOC_OBJ_CORE);
  if (b->ncores < 1) b->ncores = 1;
  b->nthreads = nthreads < 1 ? 1 : nthreads;
  b->first_core = local_rank * b->nthreads;
  int needed = local_size * b->nthreads;
  if (!enable) {
    snprintf(b->desc, sizeof b->desc, "not bound (--bind 0)");
  } else if (needed > b->ncores) {
    snprintf(b->desc, sizeof b->desc,
             "not bound: %d rank(s) x %d thread(s) on this node exceed its %d core(s)",
             local_size, b->nthreads, b->ncores);
  } else {
    b->enabled = 1;
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    for (int t = 0; t < b->nthreads; t++) hwloc_bitmap_or(set, set, core_obj(b, t)->cpuset);
    /* Confine every thread of the process (BLAS's own included) to this rank's cores. */
    if (hwloc_set_cpubind(b->topo, set, HWLOC_CPUBIND_PROCESS) != 0)
      hwloc_set_cpubind(b->topo, set, 0);
    hwloc_bitmap_free(set);
    describe_bound(b);
  }
  return b;
}

void ax_binding_destroy(AxBinding *b) {
  if (!b) return;
  hwloc_topology_destroy(b->topo);
  free(b);
}

void ax_binding_pin_thread(AxBinding *b, int tid) {
  if (!b || !b->enabled || tid >= b->nthreads) return;
  hwloc_set_cpubind(b->topo, core_obj(b, tid)->cpuset, HWLOC_CPUBIND_THREAD);
}

int ax_binding_available_cores(const AxBinding *b) { return b ? b->ncores : 1; }

const char *ax_binding_describe(const AxBinding *b) { return b ? b->desc : "not bound"; }
