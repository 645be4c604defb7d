/* backend_cuda_bind.c — binds a CUDA rank's process to the cores nearest its GPU: hwloc's CUDA
 * runtime helper (hwloc/cudart.h) names the cores local to the GPU's PCI slot; the ranks of
 * this node whose GPUs share those cores split them evenly, in local-rank order. Without the
 * helper, or when it cannot place the GPU, binding.c's per-rank core ranges are used.
 * See backend_cuda.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hwloc.h>

#if defined(__has_include)
#if __has_include(<hwloc/cudart.h>)
#include <hwloc/cudart.h>
#define AX_HWLOC_CUDART 1
#endif
#endif

#include "backend_cuda.h"
#include "binding.h"
#include "src/core/error.h"

struct AxCudaBinding {
  AxBinding *fallback; /* binding.c, when the GPU's cores are unknown */
  int threads;
  char desc[384];
};

static int default_threads(const AxBackendConfig *cfg, int share) {
  if (cfg->threads > 0) return cfg->threads;
  return share > 0 ? share : 1;
}

static void use_fallback(AxCudaBinding *b, const AxBackendConfig *cfg, const char *why) {
  int rank, ranks;
  ax_backend_cpu_share(cfg, &rank, &ranks);
  b->threads = cfg->threads > 0 ? cfg->threads : 1;
  b->fallback = ax_binding_create(b->threads, rank, ranks, 0);
  if (!b->fallback) return;
  b->threads = default_threads(cfg, ax_binding_available_cores(b->fallback) / ranks);
  ax_binding_destroy(b->fallback);
  b->fallback = ax_binding_create(b->threads, rank, ranks, cfg->bind);
  if (b->fallback)
    snprintf(b->desc, sizeof b->desc, "%s (%s)", ax_binding_describe(b->fallback), why);
}

#ifdef AX_HWLOC_CUDART

/* The cores near GPU `device` that this process may use; 0 when hwloc could place it. */
static int near_cpus(hwloc_topology_t topo, int device, hwloc_bitmap_t set) {
  if (hwloc_cudart_get_device_cpuset(topo, device, set) != 0) return -1;
  hwloc_bitmap_and(set, set, hwloc_topology_get_topology_cpuset(topo));
  return hwloc_bitmap_iszero(set) ? -1 : 0;
}

/* How many ranks of this node have their GPU near the same cores as ours, and our index. */
static void sharers(hwloc_topology_t topo, hwloc_const_bitmap_t mine, int n_devices,
                    const AxBackendConfig *cfg, int *count, int *index) {
  hwloc_bitmap_t other = hwloc_bitmap_alloc();
  int ranks = cfg->local_size > 0 ? cfg->local_size : 1;
  *count = *index = 0;
  for (int r = 0; r < ranks; r++) {
    if (near_cpus(topo, r % n_devices, other) != 0 || !hwloc_bitmap_isequal(other, mine)) continue;
    if (r < cfg->local_rank) (*index)++;
    (*count)++;
  }
  hwloc_bitmap_free(other);
  if (*count < 1) *count = 1;
}

/* Our even share of the cores in `near`: cores [index*per, (index+1)*per). Returns per. */
static int share_of(hwloc_topology_t topo, hwloc_const_bitmap_t near, int count, int index,
                    hwloc_bitmap_t out) {
  int cores = hwloc_get_nbobjs_inside_cpuset_by_type(topo, near, HWLOC_OBJ_CORE);
  int per = cores / count;
  hwloc_bitmap_zero(out);
  for (int i = index * per; i < (index + 1) * per; i++) {
    hwloc_obj_t core = hwloc_get_obj_inside_cpuset_by_type(topo, near, HWLOC_OBJ_CORE, (unsigned)i);
    if (core) hwloc_bitmap_or(out, out, core->cpuset);
  }
  return per;
}

static void bind_near(AxCudaBinding *b, hwloc_topology_t topo, hwloc_const_bitmap_t near,
                      int device, int n_devices, const AxBackendConfig *cfg) {
  int count, index;
  char list[160];
  sharers(topo, near, n_devices, cfg, &count, &index);
  hwloc_bitmap_t mine = hwloc_bitmap_alloc();
  int per = share_of(topo, near, count, index, mine);
  b->threads = default_threads(cfg, per);
  hwloc_bitmap_list_snprintf(list, sizeof list, per > 0 ? mine : near);
  if (!cfg->bind) {
    snprintf(b->desc, sizeof b->desc, "not bound (--bind 0); PUs %s are near GPU %d", list, device);
  } else if (per < 1) {
    snprintf(b->desc, sizeof b->desc, "not bound: %d rank(s) share the PUs %s near GPU %d", count,
             list, device);
  } else {
    if (hwloc_set_cpubind(topo, mine, HWLOC_CPUBIND_PROCESS) != 0)
      hwloc_set_cpubind(topo, mine, 0);
    snprintf(b->desc, sizeof b->desc,
             "bound to PUs %s (%d core(s) near GPU %d, %d rank(s) share them)", list, per, device,
             count);
  }
  hwloc_bitmap_free(mine);
}

/* 0 when the GPU's cores were found (bound or described); -1 to fall back. */
static int try_hwloc_cudart(AxCudaBinding *b, int device, int n_devices,
                            const AxBackendConfig *cfg) {
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0) return -1;
  int rc = -1;
  if (hwloc_topology_load(topo) == 0) {
    hwloc_bitmap_t near = hwloc_bitmap_alloc();
    if (near_cpus(topo, device, near) == 0 &&
        hwloc_get_nbobjs_inside_cpuset_by_type(topo, near, HWLOC_OBJ_CORE) > 0) {
      bind_near(b, topo, near, device, n_devices, cfg);
      rc = 0;
    }
    hwloc_bitmap_free(near);
  }
  hwloc_topology_destroy(topo);
  return rc;
}

#endif /* AX_HWLOC_CUDART */

AxCudaBinding *ax_cuda_binding_create(int device, int n_devices, const AxBackendConfig *cfg) {
  AxCudaBinding *b = ax_calloc(1, sizeof *b);
  if (!b) return NULL;
#ifdef AX_HWLOC_CUDART
  if (try_hwloc_cudart(b, device, n_devices > 0 ? n_devices : 1, cfg) == 0) return b;
  use_fallback(b, cfg, "hwloc could not place the GPU; cores by local rank");
#else
  (void)device, (void)n_devices;
  use_fallback(b, cfg, "hwloc built without CUDA support; cores by local rank");
#endif
  if (!b->fallback) {
    free(b);
    return NULL;
  }
  return b;
}

void ax_cuda_binding_destroy(AxCudaBinding *b) {
  if (!b) return;
  ax_binding_destroy(b->fallback);
  free(b);
}

int ax_cuda_binding_threads(const AxCudaBinding *b) { return b ? b->threads : 1; }

const char *ax_cuda_binding_describe(const AxCudaBinding *b) {
  return b ? b->desc : "not bound";
}
