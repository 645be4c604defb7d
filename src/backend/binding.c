/* binding.c — hwloc core binding; see binding.h. */
#include "binding.h"

#include <hwloc.h>
#include <hwloc/glibc-sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "binding_rule.h"
#include "src/core/error.h"
#include "src/core/start_cpus.h"

struct AxBinding {
  hwloc_topology_t topo;
  hwloc_bitmap_t set; /* the CPU set the process started with, within this machine */
  int launcher;       /* set is smaller than the machine: the launcher bound the process */
  int enabled;
  int ncores;         /* whole cores inside set */
  int first_core;     /* index among them of this rank's first core */
  int nthreads;
  char desc[512];
};

/* The CPU set the process started with (src/core/start_cpus.h: the launcher's or the whole
 * machine), as hwloc's bitmap into set: later backends (benchmarks, the end-of-run peak, a
 * second trainer) would otherwise see our own binding. */
static void start_set(hwloc_topology_t topo, hwloc_bitmap_t set) {
  cpu_set_t start;
  if (!ax_start_cpus(&start) || CPU_COUNT(&start) == 0 ||
      hwloc_cpuset_from_glibc_sched_affinity(topo, set, &start, sizeof start) != 0)
    hwloc_bitmap_fill(set);
}

static hwloc_obj_t core_obj(const AxBinding *b, int tid) {
  return hwloc_get_obj_inside_cpuset_by_type(b->topo, b->set, HWLOC_OBJ_CORE,
                                             (unsigned)(b->first_core + tid));
}

static void describe_bound(AxBinding *b) {
  char cores[64], pus[256] = "", from[96] = "";
  snprintf(cores, sizeof cores, "%d-%d", b->first_core, b->first_core + b->nthreads - 1);
  size_t len = 0;
  for (int t = 0; t < b->nthreads && len + 32 < sizeof pus; t++) {
    char set[32];
    hwloc_bitmap_list_snprintf(set, sizeof set, core_obj(b, t)->cpuset);
    len += (size_t)snprintf(pus + len, sizeof pus - len, "%sthread %d -> PU %s", t ? ", " : "",
                            t, set);
  }
  if (b->launcher) {
    char set[64];
    hwloc_bitmap_list_snprintf(set, sizeof set, b->set);
    snprintf(from, sizeof from, " of the launcher's CPU set %s", set);
  }
  snprintf(b->desc, sizeof b->desc, "bound to cores %s%s (%s)", cores, from, pus);
}

/* Why not to bind, or NULL to bind (binding_rule.h): switched off, no whole core, or more
 * threads than cores. */
static const char *refuse(AxBinding *b, int share_rank, int share_size, int enable, char *why,
                          size_t cap) {
  if (!enable) return "not bound (--bind 0)";
  if (b->ncores < 1) {
    char set[64];
    hwloc_bitmap_list_snprintf(set, sizeof set, b->set);
    snprintf(why, cap, "not bound: the CPU set it started with (PUs %s) holds no whole core; "
             "kept that set", set);
    return why;
  }
  if (ax_binding_first_core(b->ncores, b->nthreads, share_rank, share_size, 1) >= 0) return NULL;
  snprintf(why, cap, "not bound: %d rank(s) x %d thread(s) on %s exceed its %d core(s)",
           share_size, b->nthreads, b->launcher ? "the CPU set they share" : "this node",
           b->ncores);
  return why;
}

static void bind_process(AxBinding *b) {
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  for (int t = 0; t < b->nthreads; t++) hwloc_bitmap_or(set, set, core_obj(b, t)->cpuset);
  /* Confine every thread of the process (BLAS's own included) to this rank's cores. */
  if (hwloc_set_cpubind(b->topo, set, HWLOC_CPUBIND_PROCESS) != 0)
    hwloc_set_cpubind(b->topo, set, 0);
  hwloc_bitmap_free(set);
}

AxBinding *ax_binding_create(int nthreads, int share_rank, int share_size, int enable) {
  AxBinding *b = ax_calloc(1, sizeof *b);
  if (!b) return NULL;
  if (hwloc_topology_init(&b->topo) != 0 || hwloc_topology_load(b->topo) != 0) {
    free(b);
    AX_FAIL("hwloc cannot read the machine topology");
    return NULL;
  }
  hwloc_const_bitmap_t machine = hwloc_topology_get_topology_cpuset(b->topo);
  b->set = hwloc_bitmap_alloc();
  if (!b->set) {
    ax_binding_destroy(b);
    AX_FAIL("out of memory");
    return NULL;
  }
  start_set(b->topo, b->set);
  hwloc_bitmap_and(b->set, b->set, machine);
  if (hwloc_bitmap_iszero(b->set)) hwloc_bitmap_copy(b->set, machine);
  b->launcher = !hwloc_bitmap_isequal(b->set, machine);
  b->ncores = hwloc_get_nbobjs_inside_cpuset_by_type(b->topo, b->set, HWLOC_OBJ_CORE);
  b->nthreads = nthreads < 1 ? 1 : nthreads;
  char why[256];
  const char *no = refuse(b, share_rank, share_size < 1 ? 1 : share_size, enable, why, sizeof why);
  if (no) {
    snprintf(b->desc, sizeof b->desc, "%s", no);
    return b;
  }
  b->first_core = ax_binding_first_core(b->ncores, b->nthreads, share_rank, share_size, 1);
  b->enabled = 1;
  bind_process(b);
  describe_bound(b);
  return b;
}

void ax_binding_destroy(AxBinding *b) {
  if (!b) return;
  if (b->set) hwloc_bitmap_free(b->set);
  hwloc_topology_destroy(b->topo);
  free(b);
}

void ax_binding_pin_thread(AxBinding *b, int tid) {
  if (!b || !b->enabled || tid >= b->nthreads) return;
  hwloc_set_cpubind(b->topo, core_obj(b, tid)->cpuset, HWLOC_CPUBIND_THREAD);
}

int ax_binding_available_cores(const AxBinding *b) { return b && b->ncores > 0 ? b->ncores : 1; }

const char *ax_binding_describe(const AxBinding *b) { return b ? b->desc : "not bound"; }
