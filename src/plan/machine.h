/* machine.h — the description of a GPU cluster that the communication model (comm_model.h)
 * prices collectives on: GPUs per node (G_node), the peer-to-peer bandwidth between two GPUs
 * of one node (beta_intra) and between GPUs on different nodes (beta_inter), in bytes per
 * second one way, and an optional per-message latency (the paper's model has none: 0).
 *
 * Built in: summit, perlmutter, frontier, h100 (machine.c says where each figure comes from);
 * the same four ship as data/machines/NAME.machine. A machine file is `key = value` lines in
 * the --config format (src/core/options.h: `#` comments, blanks ignored):
 *
 *     name = perlmutter
 *     gpus_per_node = 4
 *     intra_bw = 100GB/s      # units of mpi/link/link_spec.h: GB/s, MB/s, Gbps, Mbps, ...
 *     inter_bw = 25GB/s
 *     latency = 0us           # optional (s, ms, us, ns)
 *
 * The schedule simulator (`axonn simulate`, src/sim/sim_costs.h) prices compute on the same
 * machine with optional keys (ignored by the communication model):
 *
 *     device = A100           # what a rank computes on: V100, A100, H100, H200, MI250X, cpu
 *     peak_tflops = 312       # per rank (default: the device's dense fp16/bf16 peak)
 *     efficiency = 0.6        # fraction of that peak a layer reaches (default 0.6)
 *     host_bw = 51GB/s        # host memory bandwidth per rank: the offloaded AdamW
 *     host_link_bw = 31.5GB/s # a GPU's link to host memory, one way: the offload's copies
 *     device_mem_bw = 1555GB/s # a GPU's own memory (default: the device's): --optimizer device
 *     cores_per_node = 0      # cores the node's ranks share (a CPU machine); 0: a device each
 *
 * and `plan --rank-grids` checks each grid's memory per rank against an optional
 *
 *     device_memory_gb = 40   # a GPU's own memory, GB = 10^9 bytes (0 or absent: unknown)
 *
 * Every key up to latency is required, latency and the simulator's keys are optional; an
 * unknown key, a missing one, a bad number, one out of its key's range (a bandwidth below
 * 1 bit/s or beyond a double's range, a latency above an hour, an efficiency above 1) or an
 * unreadable file is one error naming the file and the key. */
#ifndef AX_MACHINE_H
#define AX_MACHINE_H

#include <stddef.h>

enum { AX_MACHINE_NAME_MAX = 64 };

typedef struct {
  char name[AX_MACHINE_NAME_MAX];
  int gpus_per_node;   /* G_node */
  double intra_bytes_per_s; /* beta_intra: GPU to GPU within a node, one way */
  double inter_bytes_per_s; /* beta_inter: GPU to GPU across nodes, one way */
  double latency_s;         /* per message step; 0 = ignored, as in the paper */
  /* the simulator's (0 / "" when not given) */
  char device[16];          /* V100, A100, H100, H200, MI250X, cpu */
  double peak_tflops;       /* per rank */
  double efficiency;        /* of peak, in (0, 1] */
  double host_bytes_per_s;  /* host memory bandwidth per rank */
  double host_link_bytes_per_s; /* a GPU's link to host memory, one way (0: intra's) */
  double device_mem_bytes_per_s; /* a GPU's own memory (0: unknown) */
  int cores_per_node;       /* 0: a device per rank */
  double device_memory_bytes; /* a GPU's own memory (0: unknown) */
} AxMachine;

/* The fraction of peak a layer reaches when the machine does not say (its efficiency key). */
#define AX_MACHINE_DEFAULT_EFFICIENCY 0.6

/* A rank's sustained FLOP/s: peak (peak_tflops, else the device's dense fp16/bf16 peak of
 * src/backend/peak.h) x efficiency (default AX_MACHINE_DEFAULT_EFFICIENCY); 0 when no peak is
 * known (no device, or a CPU). */
double ax_machine_flops_per_s(const AxMachine *m);

/* A built-in machine by name; AX_ERR (listing the names) when there is none. */
int ax_machine_builtin(const char *name, AxMachine *out);
/* "summit, perlmutter, frontier, h100" */
const char *ax_machine_names(void);
/* A machine file. */
int ax_machine_load(const char *path, AxMachine *out);
/* --machine NAME|FILE: a built-in name, else a file; neither is one error saying so. */
int ax_machine_resolve(const char *name_or_path, AxMachine *out);
/* "perlmutter (4 GPUs/node, intra 800 Gb/s, inter 200 Gb/s, latency 0 s)" */
void ax_machine_format(const AxMachine *m, char *buf, size_t cap);

#endif
