/* machine.c — built-in machines, machine files and --machine NAME|FILE; see machine.h. */
#include "machine.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mpi/link/link_spec.h"
#include "src/backend/peak.h"
#include "src/core/error.h"
#include "src/core/options.h"

/* A machine as text: the built-in table holds these and a file becomes one, so a shipped file
 * and its built-in are parsed by the same code into the same numbers. */
typedef struct {
  const char *name;
  int gpus_per_node;
  const char *intra_bw, *inter_bw, *latency; /* latency: NULL = 0 */
  /* the simulator's: NULL / 0 = not given */
  const char *device;
  double peak_tflops, efficiency;
  const char *host_bw, *host_link_bw;
  int cores_per_node;
  const char *device_mem_bw; /* NULL: the device's (DEVICES) */
  double device_memory_gb;   /* 0: unknown */
} MachineSpec;

/* What the option parser fills from a file (it owns the strings). */
typedef struct {
  char *name;
  int gpus_per_node;
  char *intra_bw, *inter_bw, *latency;
  char *device;
  double peak_tflops, efficiency;
  char *host_bw, *host_link_bw;
  int cores_per_node;
  char *device_mem_bw;
  double device_memory_gb;
} MachineText;

/* Nominal vendor figures, one way, per GPU. beta_inter is a GPU's share of its node's network
 * injection bandwidth (the node's NICs over its GPUs), which is what each GPU of a ring that
 * leaves the node gets when all of them communicate at once. host_link_bw is a GPU's own link
 * to its CPU (PCIe, or NVLink / Infinity Fabric where the CPU has it). */
static const MachineSpec BUILTIN[] = {
    /* 6 V100 per node, 3 per POWER9 socket; NVLink 2.0: 2 bricks of 25 GB/s between GPUs of a
     * socket = 50 GB/s; 16 GB of HBM2 per V100; dual-rail EDR InfiniBand: 2 x 100 Gb/s = 25 GB/s per node / 6 GPUs;
     * host: 2 POWER9 sockets of 8 DDR4-2666 channels, 340 GB/s / 6 GPUs; each GPU has 2
     * NVLink 2.0 bricks to its POWER9 = 50 GB/s */
    {"summit", 6, "50GB/s", "4.1667GB/s", NULL, "V100", 0, 0, "56.7GB/s", "50GB/s", 0, NULL, 16},
    /* 4 A100 (40 GB of HBM2 each) per node; NVLink 3: 4 links of 25 GB/s between every pair = 100 GB/s; 4
     * Slingshot-11 NICs of 200 Gb/s (25 GB/s) per node: 25 GB/s per GPU; host: one EPYC 7763,
     * 8 DDR4-3200 channels, 204.8 GB/s / 4 GPUs; each GPU on PCIe 4.0 x16, 31.5 GB/s */
    {"perlmutter", 4, "100GB/s", "25GB/s", NULL, "A100", 0, 0, "51.2GB/s", "31.5GB/s", 0, NULL,
     40},
    /* 4 MI250X = 8 GCDs per node (128 GB of HBM2e per MI250X: 64 GB per GCD); Infinity Fabric: 50 GB/s per link between GCDs of different
     * MI250X (the slowest hop of a ring over the node); 4 Slingshot-11 NICs of 25 GB/s per
     * node: 100 GB/s / 8 GCDs; host: one EPYC 7A53, 204.8 GB/s / 8 GCDs; each GCD has an
     * Infinity Fabric link of 36 GB/s to the CPU */
    {"frontier", 8, "50GB/s", "12.5GB/s", NULL, "MI250X", 0, 0, "25.6GB/s", "36GB/s", 0, NULL,
     64},
    /* 8 H100 SXM (80 GB of HBM3 each) per node; NVLink 4 through NVSwitch: 18 links of 25 GB/s = 450 GB/s per GPU;
     * 8 NICs of 400 Gb/s per node: 50 GB/s per GPU; host: 2 Xeon 8480 sockets of 8 DDR5-4800
     * channels, 614 GB/s / 8 GPUs; each GPU on PCIe 5.0 x16, 63 GB/s */
    {"h100", 8, "450GB/s", "50GB/s", NULL, "H100", 0, 0, "76.8GB/s", "63GB/s", 0, NULL, 80},
};
enum { N_BUILTIN = sizeof BUILTIN / sizeof BUILTIN[0] };

#define OFF(f) offsetof(MachineText, f)
static const AxOption KEYS[] = {
    {"name", AX_OPT_STRING, OFF(name), NULL, "NAME", "the machine's name", 1, 0, NULL},
    {"gpus_per_node", AX_OPT_INT, OFF(gpus_per_node), NULL, "N", "GPUs (ranks) per node", 1,
     1 << 20, NULL},
    {"intra_bw", AX_OPT_STRING, OFF(intra_bw), NULL, "BW", "GPU to GPU within a node", 1, 0,
     NULL},
    {"inter_bw", AX_OPT_STRING, OFF(inter_bw), NULL, "BW", "GPU to GPU across nodes", 1, 0,
     NULL},
    {"latency", AX_OPT_STRING, OFF(latency), NULL, "TIME", "per message step (default 0)", 1, 0,
     NULL},
    {"device", AX_OPT_STRING, OFF(device), NULL, "NAME",
     "simulator: V100, A100, H100, H200, MI250X or cpu", 1, 0, NULL},
    {"peak_tflops", AX_OPT_FLOAT, OFF(peak_tflops), "0", "X",
     "simulator: peak TFLOP/s per rank (0: the device's)", 0, 1e6, NULL},
    {"efficiency", AX_OPT_FLOAT, OFF(efficiency), "0", "F",
     "simulator: fraction of peak a layer reaches (0: 0.6)", 0, 1, NULL},
    {"host_bw", AX_OPT_STRING, OFF(host_bw), NULL, "BW",
     "simulator: host memory bandwidth per rank", 1, 0, NULL},
    {"host_link_bw", AX_OPT_STRING, OFF(host_link_bw), NULL, "BW",
     "simulator: a GPU's link to host memory, one way (default: intra_bw)", 1, 0, NULL},
    {"cores_per_node", AX_OPT_INT, OFF(cores_per_node), "0", "N",
     "simulator: cores the node's ranks share (0: a device each)", 0, 1 << 20, NULL},
    {"device_mem_bw", AX_OPT_STRING, OFF(device_mem_bw), NULL, "BW",
     "simulator: a GPU's own memory bandwidth (default: the device's)", 1, 0, NULL},
    {"device_memory_gb", AX_OPT_FLOAT, OFF(device_memory_gb), "0", "GB",
     "a GPU's own memory in GB (10^9 bytes; 0: unknown, no grid is checked against it)", 0,
     1e6, NULL},
};
static const AxOptionTable MACHINE_FILE = {
    "plan --rank-grids", "a machine file", KEYS, (int)(sizeof KEYS / sizeof KEYS[0])};

/* The devices, with the nominal bandwidth of their own memory (one GPU, one MI250X GCD): V100
 * SXM2 HBM2 900 GB/s, A100 40GB HBM2 1555 GB/s, H100 SXM HBM3 3.35 TB/s, H200 HBM3e 4.8 TB/s,
 * MI250X 3.2 TB/s over its two GCDs; a CPU's device memory is host memory (host_bw). */
static const struct {
  const char *name;
  double mem_bytes_per_s;
} DEVICES[] = {{"V100", 900e9}, {"A100", 1555e9}, {"H100", 3350e9}, {"H200", 4800e9},
               {"MI250X", 1600e9}, {"cpu", 0}};

static int simulator_keys(const MachineSpec *t, AxMachine *out) {
  if (t->device) {
    size_t i = 0, n = sizeof DEVICES / sizeof DEVICES[0];
    while (i < n && strcmp(DEVICES[i].name, t->device)) i++;
    if (i == n)
      return AX_FAIL("device '%s' is not one of V100, A100, H100, H200, MI250X, cpu", t->device);
    snprintf(out->device, sizeof out->device, "%s", t->device);
    out->device_mem_bytes_per_s = DEVICES[i].mem_bytes_per_s;
  }
  if (t->device_mem_bw &&
      ax_link_bandwidth_parse(t->device_mem_bw, &out->device_mem_bytes_per_s) != AX_OK)
    return ax_error_context("device_mem_bw");
  out->peak_tflops = t->peak_tflops;
  out->efficiency = t->efficiency;
  out->cores_per_node = t->cores_per_node;
  out->device_memory_bytes = t->device_memory_gb * 1e9;
  if (t->host_bw && ax_link_bandwidth_parse(t->host_bw, &out->host_bytes_per_s) != AX_OK)
    return ax_error_context("host_bw");
  if (t->host_link_bw &&
      ax_link_bandwidth_parse(t->host_link_bw, &out->host_link_bytes_per_s) != AX_OK)
    return ax_error_context("host_link_bw");
  return AX_OK;
}

static int from_spec(const MachineSpec *t, AxMachine *out) {
  memset(out, 0, sizeof *out);
  if (strlen(t->name) >= sizeof out->name)
    return AX_FAIL("name '%.20s...' is longer than %d characters", t->name,
                   AX_MACHINE_NAME_MAX - 1);
  snprintf(out->name, sizeof out->name, "%s", t->name);
  out->gpus_per_node = t->gpus_per_node;
  if (ax_link_bandwidth_parse(t->intra_bw, &out->intra_bytes_per_s) != AX_OK)
    return ax_error_context("intra_bw");
  if (ax_link_bandwidth_parse(t->inter_bw, &out->inter_bytes_per_s) != AX_OK)
    return ax_error_context("inter_bw");
  if (t->latency && ax_link_latency_parse(t->latency, &out->latency_s) != AX_OK)
    return ax_error_context("latency");
  return simulator_keys(t, out);
}

int ax_machine_builtin(const char *name, AxMachine *out) {
  for (int i = 0; i < N_BUILTIN; i++)
    if (!strcmp(BUILTIN[i].name, name)) {
      return from_spec(&BUILTIN[i], out);
    }
  return AX_FAIL("no built-in machine '%s' (built in: %s)", name, ax_machine_names());
}

const char *ax_machine_names(void) {
  static char buf[128];
  if (!buf[0])
    for (int i = 0; i < N_BUILTIN; i++) {
      if (i) strcat(buf, ", ");
      strcat(buf, BUILTIN[i].name);
    }
  return buf;
}

static int required_keys(const AxOptState *st, const char *path) {
  static const char *const required[] = {"name", "gpus_per_node", "intra_bw", "inter_bw"};
  for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
    if (!ax_options_was_set(&MACHINE_FILE, st, required[i]))
      return AX_FAIL("machine file %s has no '%s = ...' line (it needs name, gpus_per_node, "
                     "intra_bw and inter_bw; latency and the simulator's keys are optional)",
                     path, required[i]);
  return AX_OK;
}

int ax_machine_load(const char *path, AxMachine *out) {
  MachineText t;
  AxOptState st;
  memset(&t, 0, sizeof t);
  int rc = ax_options_parse_file(&MACHINE_FILE, &t, path, &st);
  if (rc == AX_OK) rc = required_keys(&st, path);
  MachineSpec spec = {t.name,        t.gpus_per_node, t.intra_bw,       t.inter_bw,
                      t.latency,     t.device,        t.peak_tflops,    t.efficiency,
                      t.host_bw,     t.host_link_bw,  t.cores_per_node, t.device_mem_bw,
                      t.device_memory_gb};
  if (rc == AX_OK && from_spec(&spec, out) != AX_OK)
    rc = ax_error_context("machine file %s", path);
  ax_options_free(&MACHINE_FILE, &t);
  return rc;
}

int ax_machine_resolve(const char *name_or_path, AxMachine *out) {
  for (int i = 0; i < N_BUILTIN; i++)
    if (!strcmp(BUILTIN[i].name, name_or_path)) return ax_machine_builtin(name_or_path, out);
  struct stat sb;
  if (stat(name_or_path, &sb) != 0)
    return AX_FAIL("unknown machine '%s': not a built-in one (%s) nor a machine file",
                   name_or_path, ax_machine_names());
  return ax_machine_load(name_or_path, out);
}

void ax_machine_format(const AxMachine *m, char *buf, size_t cap) {
  snprintf(buf, cap, "%s (%d GPUs/node, intra %.4g GB/s, inter %.4g GB/s, latency %.3g us)",
           m->name, m->gpus_per_node, m->intra_bytes_per_s / 1e9, m->inter_bytes_per_s / 1e9,
           m->latency_s * 1e6);
}

double ax_machine_flops_per_s(const AxMachine *m) {
  double tflops = m->peak_tflops;
  if (tflops <= 0 && m->device[0] && strcmp(m->device, "cpu")) tflops = ax_peak_gpu_table(m->device);
  double eff = m->efficiency > 0 ? m->efficiency : AX_MACHINE_DEFAULT_EFFICIENCY;
  return tflops > 0 ? tflops * 1e12 * eff : 0;
}
