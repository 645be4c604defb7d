/* comm_config.h — how this rank's MPI communication behaves, as one value that travels with
 * the objects that communicate rather than process-wide state: the chunk size and window of our
 * point-to-point collectives (collectives.h), whether waiting yields the core between polls
 * (polite waiting, mpi_util.h), the virtual nodes and emulated link every send of our engines
 * goes through (link_emulator.h), and the traffic counters it adds to, with the class the bytes
 * count as (traffic.h). The trainer sets the grid's once (grid.h) and hands it to the
 * scheduler, the p2p engine, the collectives and its waits; a benchmark makes its own from its
 * options. A started collective copies the configuration it was started with, the p2p engine
 * the one it was created with; every wait takes one. NULL, wherever one is taken, means the
 * defaults: 2 MiB chunks, 2 in flight, busy waiting, no emulated link, nothing counted. */
#ifndef AX_COMM_CONFIG_H
#define AX_COMM_CONFIG_H

#include <stddef.h>

#include "traffic.h"

typedef struct AxLinkEmu AxLinkEmu; /* link_emulator.h */

/* Chosen with `axonn bench allreduce --chunk C --window W` on 2 ranks (docs/benchmarks.md):
 * 2 MiB chunks, 2 in flight, did best from 4 MB to 256 MB (smaller chunks pay MPICH/UCX's
 * per-message rendezvous cost, 64 KB-512 KB lost 10-25% at 64 MB); messages smaller than two
 * chunks per segment are not cut at all, so small sizes do not depend on it. */
enum { AX_COMM_CHUNK_BYTES = 2 * 1024 * 1024, AX_COMM_WINDOW = 2 };

typedef struct {
  size_t chunk_bytes; /* collectives cut messages into chunks of this many bytes (0: default) */
  int window;         /* chunks in flight per direction (0: default) */
  int polite;         /* 1: waits yield the core between polls (ranks outnumber cores) */
  /* This rank's virtual nodes and emulated link (NULL: none: sends are posted at once and
   * count as within the node). Shared by everything this rank sends; mutable. */
  AxLinkEmu *links;
  AxTraffic *traffic;           /* where sent bytes are counted (NULL: not counted) */
  AxTrafficClass traffic_class; /* what a collective started with this configuration counts as */
} AxCommConfig;

/* The defaults: AX_COMM_CHUNK_BYTES, AX_COMM_WINDOW, busy waiting, no link, no counting. */
static inline AxCommConfig ax_comm_config_default(void) {
  AxCommConfig c = {AX_COMM_CHUNK_BYTES, AX_COMM_WINDOW, 0, NULL, NULL, AX_TRAFFIC_OTHER};
  return c;
}

/* The same configuration, counting as class c (for one operation). */
static inline AxCommConfig ax_comm_config_as(const AxCommConfig *cfg, AxTrafficClass c) {
  AxCommConfig out = cfg ? *cfg : ax_comm_config_default();
  out.traffic_class = c;
  return out;
}

/* *cfg with zero fields replaced by the defaults; the defaults for NULL. */
static inline AxCommConfig ax_comm_config_resolve(const AxCommConfig *cfg) {
  AxCommConfig c = ax_comm_config_default();
  if (!cfg) return c;
  c.polite = cfg->polite;
  c.links = cfg->links;
  c.traffic = cfg->traffic;
  c.traffic_class = cfg->traffic_class;
  if (cfg->chunk_bytes) c.chunk_bytes = cfg->chunk_bytes;
  if (cfg->window > 0) c.window = cfg->window;
  return c;
}

#endif
