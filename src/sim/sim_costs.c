/* sim_costs.c — the simulator's cost model: compute, links, sums and updates of one step;
 * see sim_costs.h. */
#include "sim_costs.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/gpt_stage.h"
#include "mpi/link/link_spec.h"
#include "pipeline/partition.h"
#include "src/backend/binding_rule.h"
#include "src/backend/peak.h"
#include "src/core/error.h"

/* host memory traffic per parameter: AdamW reads weights, gradient, 2 moments and writes 3;
 * the norm reads the gradient */
enum { ADAMW_BYTES = 28, NORM_BYTES = 4 };
/* Of a core, what a rank waiting on the link emulator takes. Its ranks on one host sleep on
 * their doorbells once a wait is idle (mpi/link/link_bell.h): next to nothing (the profile's
 * waiting_speed on the 2-core VM: k computing copies beside 4 - k waiting ones at about the
 * speed of k alone). Over several hosts the bells are off and the waits poll every 40 us:
 * about a third (docs/emulator.md, "Waiting without a core"). A polite wait (sched_yield)
 * stays runnable and takes a whole share. */
#define EMULATED_IDLE_WAITER_WEIGHT 0.0
#define EMULATED_POLLING_WAITER_WEIGHT (1.0 / 3)
/* A message between ranks of a host whose ranks outnumber its cores waits for its receiver to
 * be put on a core: where the waits poll politely (MPI_Test, then sched_yield: no emulated
 * link) every rank stays runnable, and a rank whose message has come in runs when the
 * scheduler next picks it; where they sleep (the link emulator's doorbells) the woken rank
 * waits for a core the computing ranks hold. Fitted, not measured, on two of the validation's
 * four shapes
 * (128x512x256x1 and 32x256x256x1, grids 2x2 and 4x1; the other two held out): 1 ms on the
 * quiet pass of 2026-11-29 14:27, then 0.5 ms on the pass of 20:30, after the step's small
 * agreements stopped spinning in MPI_Wait (mpi/link/link_wait.c; the trainers got faster and
 * 1 ms overpriced them by 1-21%). docs/benchmarks.md, "The simulator after the timing fix".
 * Charged as the latency of every such message: the pipeline's, each step of a ring
 * all-reduce, each round of the step's small agreements; over an emulated link on top of its
 * own since 2026-11-30, when the first trace on one clock measured its messages from the post
 * to their receiver running at 0.50 ms on average (4x1, 4 ranks on 2 cores; docs/benchmarks.md,
 * "Trace clocks"), where the value was not fitted. */
#define OVERSUBSCRIBED_HANDOFF_S 0.5e-3

/* Seconds of one micro-batch on one stage, before the stage's own blocks are counted. */
typedef struct {
  double block_f, block_b, first_f, first_b, last_f, last_b;
} UnitCosts;

static int from_profile(AxSimModel *sm, const AxSimProfile *p, UnitCosts *u) {
  *u = (UnitCosts){p->block_forward_s, p->block_backward_s, p->first_forward_s,
                   p->first_backward_s, p->last_forward_s, p->last_backward_s};
  snprintf(sm->costs, sizeof sm->costs, "profile: measured on %s with %d thread(s) a rank, "
           "blocks timed in a stage of %d", p->device, p->threads, p->stage_blocks);
  return AX_OK;
}

/* A block's FLOPs and the head's, from the count the summary uses (ax_gpt_train_flops): the
 * forward a third, the backward two thirds. */
static int from_device(AxSimModel *sm, const AxMachine *m, int micro, int seq, UnitCosts *u) {
  double eff = m->efficiency > 0 ? m->efficiency : AX_MACHINE_DEFAULT_EFFICIENCY;
  double tflops = isfinite(sm->peak_tflops_per_rank) ? sm->peak_tflops_per_rank : 0;
  if (tflops <= 0)
    return AX_FAIL("machine %s names no device with a known peak: give device = ... or "
                   "peak_tflops = ... in its file, or --profile FILE (axonn profile)", m->name);
  AxGptConfig one = sm->model;
  one.layers = 1;
  one.vocab = 0;
  double block = ax_gpt_train_flops(&one, micro, seq, 0);
  double head = ax_gpt_train_flops(&sm->model, micro, seq, 0) - sm->model.layers * block;
  double rate = tflops * 1e12 * eff;
  *u = (UnitCosts){block / 3 / rate, 2 * block / 3 / rate, 0, 0, head / 3 / rate,
                   2 * head / 3 / rate};
  snprintf(sm->costs, sizeof sm->costs, "device: %s, %.4g TFLOP/s x efficiency %.3g", m->device,
           tflops, eff);
  return AX_OK;
}

/* The peak a rank is read against, in the summary's order: --peak-tflops, the machine's
 * peak_tflops, its device's table entry, a profile's measured GEMM peak (none: NAN). */
static void resolve_peak(AxSimModel *sm, const AxTrainConfig *cfg, const AxMachine *m) {
  double table = m->device[0] && strcmp(m->device, "cpu") ? ax_peak_gpu_table(m->device) : 0;
  sm->peak_tflops_per_rank = NAN;
  if (cfg->output.peak_tflops > 0) {
    sm->peak_tflops_per_rank = cfg->output.peak_tflops;
    snprintf(sm->peak_source, sizeof sm->peak_source, "--peak-tflops");
  } else if (m->peak_tflops > 0) {
    sm->peak_tflops_per_rank = m->peak_tflops;
    snprintf(sm->peak_source, sizeof sm->peak_source, "machine %s: peak_tflops", m->name);
  } else if (table > 0) {
    sm->peak_tflops_per_rank = table;
    snprintf(sm->peak_source, sizeof sm->peak_source, "table: %s, dense fp16/bf16 peak",
             m->device);
  } else {
    snprintf(sm->peak_source, sizeof sm->peak_source,
             "unknown (give --peak-tflops, or a device or peak_tflops in the machine file)");
  }
}

static void stage_compute(AxSimModel *sm, const AxTrainConfig *cfg, const UnitCosts *u,
                          const int *first) {
  for (int s = 0; s < sm->P; s++) {
    int nb = first[s + 1] - first[s], ac = 0;
    if (cfg->exec.checkpoint_activations)
      ac = cfg->exec.ac ? cfg->exec.ac : ax_partition_default_ac(nb, sm->model.layers);
    double f = nb * u->block_f + (s == 0 ? u->first_f : 0) + (s == sm->P - 1 ? u->last_f : 0);
    double b = nb * u->block_b + (s == 0 ? u->first_b : 0) + (s == sm->P - 1 ? u->last_b : 0);
    if (ac > 0) b += nb * u->block_f; /* the backward recomputes the blocks' forward */
    double extra = (s == cfg->debug.debug_delay_stage ? cfg->debug.debug_delay_ms : 0) * 1e-3;
    sm->fwd[s] = f + extra + cfg->debug.debug_forward_ms * 1e-3;
    sm->bwd[s] = b + extra + cfg->debug.debug_backward_ms * 1e-3;
    sm->recompute |= ac > 0;
  }
}

/* ------------------------------------------------------------------ the network */

static int node_of(const AxSimModel *sm, long long rank) { return (int)(rank / sm->ranks_per_node); }

static AxSimLink link_between(const AxSimModel *sm, const AxMachine *m, const AxLinkSpec *emu,
                              long long a, long long b) {
  if (node_of(sm, a) == node_of(sm, b))
    return (AxSimLink){sm->handoff_s, 1.0 / m->intra_bytes_per_s, 0};
  if (emu->bytes_per_s > 0) return (AxSimLink){emu->latency_s + sm->handoff_s, 1.0 / emu->bytes_per_s, 1};
  return (AxSimLink){m->latency_s + sm->handoff_s, 1.0 / m->inter_bytes_per_s, 0};
}

/* The link a column's ring of stage s crosses: the slowest between neighbours. */
static AxSimLink column_link(const AxSimModel *sm, const AxMachine *m, const AxLinkSpec *emu,
                             int s) {
  AxSimLink worst = {0, 0, 0};
  for (int d = 0; d < sm->D; d++) {
    AxSimLink l = link_between(sm, m, emu, (long long)d * sm->P + s,
                               (long long)((d + 1) % sm->D) * sm->P + s);
    if (l.s_per_byte > worst.s_per_byte) worst.s_per_byte = l.s_per_byte;
    if (l.alpha_s > worst.alpha_s) worst.alpha_s = l.alpha_s;
  }
  return worst;
}

/* A ring all-reduce of `elems` elements of `esz` bytes over n ranks: 2 (n-1) steps of a
 * segment, and the reduce-scatter's local sums. */
static double ring_s(double elems, double esz, int n, AxSimLink l, double sum_per_elem) {
  if (n <= 1) return 0;
  return 2.0 * (n - 1) * (l.alpha_s + elems * esz / n * l.s_per_byte) +
         (n - 1.0) / n * elems * sum_per_elem;
}

static int build_links(AxSimModel *sm, const AxTrainConfig *cfg, const AxMachine *m,
                       AxLinkSpec *emu) {
  memset(emu, 0, sizeof *emu);
  if (cfg->grid.emulate_link) AX_TRY(ax_link_spec_parse(cfg->grid.emulate_link, emu));
  sm->ranks_per_node = cfg->grid.ranks_per_node > 0 ? cfg->grid.ranks_per_node : m->gpus_per_node;
  for (int s = 0; s + 1 < sm->P; s++) sm->link[s] = link_between(sm, m, emu, s, s + 1);
  char mach[128], link[64];
  ax_machine_format(m, mach, sizeof mach);
  ax_link_spec_format(emu, link, sizeof link);
  snprintf(sm->network, sizeof sm->network, "%s; %d ranks a node%s%s", mach, sm->ranks_per_node,
           emu->bytes_per_s > 0 ? "; EMULATED link " : "", emu->bytes_per_s > 0 ? link : "");
  return AX_OK;
}

/* ------------------------------------------------------------------ after the pipeline */

/* Seconds per parameter of the optimizer's host work and of the copies between the device
 * and the host arena (offload.c: fp32 both ways over the GPU's host link; none on a CPU). */
typedef struct {
  double update_per_elem, norm_per_elem, sum_per_elem, down_per_elem, up_per_elem;
  double zero_per_elem;
} HostCosts;

static HostCosts host_costs(const AxMachine *m, const AxSimProfile *prof) {
  if (prof)
    return (HostCosts){prof->adamw_s_per_elem,    prof->norm_s_per_elem,
                       prof->reduce_s_per_elem,   prof->download_s_per_elem,
                       prof->upload_s_per_elem,   prof->zero_s_per_elem};
  double host = m->host_bytes_per_s > 0 ? m->host_bytes_per_s : m->intra_bytes_per_s;
  double link = m->host_link_bytes_per_s > 0 ? m->host_link_bytes_per_s : m->intra_bytes_per_s;
  int gpu = strcmp(m->device, "cpu") != 0 && m->cores_per_node == 0;
  double copy = gpu ? sizeof(float) / link : 0;
  return (HostCosts){ADAMW_BYTES / host, NORM_BYTES / host, 12.0 / host, copy, copy, 0};
}

/* --optimizer device (one rank): the norm and AdamW where the weights are, nothing copied.
 * AdamW moves the fp32 weights and moments in and out and the compute-type gradient in and
 * weight out; the norm reads the gradient. A CPU's device memory is host memory: the host's
 * costs. */
static int device_optimizer_costs(const AxMachine *m, const AxSimProfile *prof, double esz,
                                  HostCosts *h) {
  *h = host_costs(m, prof);
  h->down_per_elem = h->up_per_elem = 0;
  if (prof) {
    h->update_per_elem = prof->device_adamw_s_per_elem;
    h->norm_per_elem = prof->device_norm_s_per_elem;
    return AX_OK;
  }
  if (!strcmp(m->device, "cpu") || m->cores_per_node > 0) return AX_OK;
  if (m->device_mem_bytes_per_s <= 0)
    return AX_FAIL("machine %s gives no device memory bandwidth for --optimizer device: add "
                   "device_mem_bw = ... or device = ... to its file, or --profile FILE", m->name);
  h->update_per_elem = (24 + 2 * esz) / m->device_mem_bytes_per_s;
  h->norm_per_elem = esz / m->device_mem_bytes_per_s;
  return AX_OK;
}

/* Elements a chunk of the optimizer's updates: --coarsening buckets, or (the device's AdamW)
 * the whole stage of `total`. */
static double chunk_elems(const AxTrainConfig *cfg, double total) {
  return cfg->optim.optimizer_device ? fmax(total, 1) : (double)cfg->optim.bucket_size * cfg->optim.coarsening;
}

/* The updates of a stage's chunks, each AdamW (and, interleaved, its part of the norm) on the
 * host, each followed by its weights' upload on the copy stream while the next chunk's AdamW
 * runs: the uploads queue behind each other, and what the last one runs past the last AdamW
 * is the step's to wait for (added to the last chunk). */
static void chunk_updates(double *up, int n_chunks, double chunk, double total, double per_elem,
                          double up_per_elem) {
  double adamw_end = 0, upload_end = 0;
  for (int c = 0; c < n_chunks; c++) {
    double elems = fmin(chunk, total - c * chunk);
    up[c] = elems * per_elem;
    adamw_end += up[c];
    upload_end = fmax(upload_end, adamw_end) + elems * up_per_elem;
  }
  if (n_chunks > 0) up[n_chunks - 1] += upload_end - adamw_end;
}

/* A column's ring within one host, where the profile timed the host's all-reduce: its
 * messages cost what that measurement leaves them (ax_sim_profile_ring_s_per_byte), never less
 * than the machine's link says. */
static AxSimLink measured_column(const AxSimModel *sm, const AxSimProfile *prof, AxSimLink col,
                                 int s) {
  int one_node = node_of(sm, s) == node_of(sm, (long long)(sm->D - 1) * sm->P + s);
  if (prof && one_node && !col.held)
    col.s_per_byte = fmax(col.s_per_byte, ax_sim_profile_ring_s_per_byte(prof));
  return col;
}

static int build_tails(AxSimModel *sm, const AxTrainConfig *cfg, const AxMachine *m,
                       const AxLinkSpec *emu, const AxSimProfile *prof, const int *first) {
  double wire = cfg->optim.allreduce_dtype == 1 ? 2 : 4;
  HostCosts h = host_costs(m, prof);
  if (cfg->optim.optimizer_device)
    AX_TRY(device_optimizer_costs(m, prof, (double)ax_dtype_size((AxDType)cfg->exec.precision), &h));
  /* reduce_and_update's two halves; the device optimizer's norm, then AdamW */
  int separate = !cfg->optim.offload || cfg->optim.grad_clip > 0 || cfg->optim.optimizer_device;
  size_t total_chunks = 0;
  for (int s = 0; s < sm->P; s++) {
    AxStageLayout lay;
    ax_stage_layout(&lay, &sm->model, first[s], first[s + 1], s == 0, s == sm->P - 1);
    sm->tail[s].n_chunks = (int)ceil((double)lay.total / chunk_elems(cfg, (double)lay.total));
    total_chunks += (size_t)sm->tail[s].n_chunks;
  }
  sm->chunk_costs = ax_malloc(2 * total_chunks * sizeof *sm->chunk_costs + 1);
  if (!sm->chunk_costs) return AX_ERR;
  double *at = sm->chunk_costs, tied = (double)sm->model.padded_vocab * sm->model.channels;
  AxSimLink ends = link_between(sm, m, emu, 0, sm->P - 1);
  for (int s = 0; s < sm->P; s++) {
    AxStageLayout lay;
    ax_stage_layout(&lay, &sm->model, first[s], first[s + 1], s == 0, s == sm->P - 1);
    AxSimTail *t = &sm->tail[s];
    AxSimLink col = measured_column(sm, prof, column_link(sm, m, emu, s), s);
    double *ar = at, *up = at + t->n_chunks, n = (double)lay.total, chunk = chunk_elems(cfg, n);
    for (int c = 0; c < t->n_chunks; c++)
      ar[c] = ring_s(fmin(chunk, n - c * chunk), wire, sm->D, col, h.sum_per_elem);
    /* the norm: over the whole gradient before the updates (clipping), else chunk by chunk */
    chunk_updates(up, t->n_chunks, chunk, n, h.update_per_elem + (separate ? 0 : h.norm_per_elem),
                  h.up_per_elem);
    at += 2 * t->n_chunks;
    t->allreduce_s = ar;
    t->update_s = up;
    t->window = 2; /* train_step.c's reduce_spec */
    t->separate = separate;
    t->before_s = n * (h.down_per_elem + (separate ? h.norm_per_elem : 0));
    if (sm->P > 1 && (s == 0 || s == sm->P - 1)) t->tied_s = ring_s(tied, 4, 2, ends, h.sum_per_elem);
  }
  /* the step's start (gradients zeroed) and end (the norm's and loss's sums) */
  double zero = (double)ax_gpt_num_params(&sm->model) / sm->P * h.zero_per_elem;
  AxSimLink far = link_between(sm, m, emu, 0, (long long)sm->ranks - 1);
  sm->sim.end_s = zero + 2 * (log2(sm->P) + log2((double)sm->ranks)) * far.alpha_s;
  return AX_OK;
}

/* ------------------------------------------------------------------ the whole */

static int alloc_model(AxSimModel *sm) {
  int P = sm->P;
  sm->fwd = ax_calloc((size_t)P, sizeof *sm->fwd);
  sm->bwd = ax_calloc((size_t)P, sizeof *sm->bwd);
  sm->send = ax_calloc((size_t)P, sizeof *sm->send);
  sm->link = ax_calloc((size_t)P, sizeof *sm->link);
  sm->tail = ax_calloc((size_t)P, sizeof *sm->tail);
  return sm->fwd && sm->bwd && sm->send && sm->link && sm->tail ? AX_OK : AX_ERR;
}

/* How ranks computing at once on the host slow each other: the profile's measured speeds, or
 * with cores_per_node the cores shared (each of k ranks of `threads` gets cores / (k threads)
 * of its speed); the rows of the grid run in step on the host. */
static int build_speed(AxSimModel *sm, const AxMachine *m, const AxSimProfile *prof) {
  if (prof) {
    int n = ax_sim_profile_speeds(prof, sm->speed);
    if (n < 0) return AX_ERR;
    sm->n_speed = n;
    if ((n = ax_sim_profile_waiting_speeds(prof, sm->waiting)) < 0) return AX_ERR;
    sm->n_waiting = n;
  } else if (m->cores_per_node > 0) {
    sm->n_speed = AX_SIM_PROFILE_MAX_K;
    for (int k = 1; k <= sm->n_speed; k++)
      sm->speed[k - 1] = fmin(1.0, (double)m->cores_per_node / k);
  }
  return AX_OK;
}

/* A CPU machine of known cores: 1, with the ranks of one host (gpus_per_node of them, or the
 * whole grid) and each one's threads; else 0. */
static int host_shape(const AxSimModel *sm, const AxTrainConfig *cfg, const AxMachine *m,
                      int *host, int *threads) {
  *host = m->gpus_per_node > 0 && m->gpus_per_node < sm->ranks ? m->gpus_per_node : sm->ranks;
  *threads = cfg->exec.threads > 0 ? cfg->exec.threads : m->cores_per_node / *host;
  if (*threads < 1) *threads = 1;
  return m->cores_per_node >= 1 && strcmp(m->device, "cpu") == 0;
}

/* A host's ranks outnumber its cores: the trainer pins none, and their waits poll. */
static int oversubscribed(const AxSimModel *sm, const AxTrainConfig *cfg, const AxMachine *m) {
  int host, threads;
  return host_shape(sm, cfg, m, &host, &threads) && (long long)host * threads > m->cores_per_node;
}

/* The latency a message pays for its receiver to be scheduled (OVERSUBSCRIBED_HANDOFF_S):
 * on an oversubscribed host; 0 elsewhere. */
static double handoff_s(const AxSimModel *sm, const AxTrainConfig *cfg, const AxMachine *m) {
  return oversubscribed(sm, cfg, m) ? OVERSUBSCRIBED_HANDOFF_S : 0;
}

/* The cores the trainer would pin row 0's ranks to (binding_rule.h), with the machine's
 * cores_per_node shared by the ranks of one host (gpus_per_node of them, or the whole grid);
 * none pinned (unknown cores, --bind 0, oversubscribed): sm->core stays NULL. Oversubscribed,
 * the ranks' waits poll (sched_yield, or the link emulator's sleeps), so waiting ranks may
 * take a share of the host beside computing ones: on the emulated link as the profile
 * measured them, when it measured the whole grid as one host (waiting_speed), else at
 * sm->waiter_weight. */
static int build_cores(AxSimModel *sm, const AxTrainConfig *cfg, const AxMachine *m) {
  int host, threads;
  if (!host_shape(sm, cfg, m, &host, &threads)) return AX_OK;
  if (oversubscribed(sm, cfg, m)) {
    if (cfg->grid.emulate_link && host == sm->ranks && sm->n_waiting == sm->ranks)
      sm->sim_waiting = sm->waiting;
    else
      sm->waiter_weight = !cfg->grid.emulate_link   ? 1.0
                          : host == sm->ranks ? EMULATED_IDLE_WAITER_WEIGHT
                                              : EMULATED_POLLING_WAITER_WEIGHT;
    size_t used = strlen(sm->costs);
    if (sm->sim_waiting)
      snprintf(sm->costs + used, sizeof sm->costs - used, "; cores oversubscribed: ranks "
               "waiting on the emulated link as profiled (waiting_speed)");
    else
      snprintf(sm->costs + used, sizeof sm->costs - used, "; cores oversubscribed: a waiting "
               "rank weighs %.2g of a computing one", sm->waiter_weight);
    used = strlen(sm->costs);
    if (sm->handoff_s > 0)
      snprintf(sm->costs + used, sizeof sm->costs - used, "; a message waits %.3g ms for its "
               "receiver to be scheduled", sm->handoff_s * 1e3);
  }
  int *core = ax_malloc((size_t)sm->P * sizeof *core);
  if (!core) return AX_ERR;
  for (int s = 0; s < sm->P; s++) {
    core[s] = ax_binding_first_core(m->cores_per_node, threads, s % host, host, cfg->exec.bind);
    if (core[s] < 0) { /* the trainer pins every rank of a host or none */
      free(core);
      return AX_OK;
    }
  }
  sm->core = core;
  return AX_OK;
}

static int build(AxSimModel *sm, const AxTrainConfig *cfg, const AxMachine *m,
                 const AxSimProfile *prof, int *first) {
  AX_TRY(ax_partition(sm->model.layers, sm->P, cfg->grid.stage_layers, first));
  resolve_peak(sm, cfg, m);
  UnitCosts u = {0};
  if (prof) {
    AX_TRY(ax_sim_profile_matches(prof, cfg));
    AX_TRY(from_profile(sm, prof, &u));
  } else {
    AX_TRY(from_device(sm, m, sm->micro, cfg->model.seq, &u));
  }
  stage_compute(sm, cfg, &u, first);
  AxLinkSpec emu;
  sm->handoff_s = handoff_s(sm, cfg, m);
  AX_TRY(build_links(sm, cfg, m, &emu));
  double bytes = (double)sm->micro * cfg->model.seq * sm->model.channels *
                 (double)ax_dtype_size((AxDType)cfg->exec.precision);
  for (int s = 0; s < sm->P; s++) sm->send[s] = prof ? bytes / prof->copy_bytes_per_s : 0;
  AX_TRY(build_tails(sm, cfg, m, &emu, prof, first));
  AX_TRY(build_speed(sm, m, prof));
  AX_TRY(build_cores(sm, cfg, m));
  sm->sim = (AxSimConfig){.P = sm->P, .n_micro = sm->n_micro, .limit = sm->limit,
                          .fwd_s = sm->fwd, .bwd_s = sm->bwd, .send_s = sm->send,
                          .msg_bytes = bytes, .link = sm->link,
                          .speed = sm->n_speed ? sm->speed : NULL, .n_speed = sm->n_speed,
                          .copies = sm->D, .core = sm->core,
                          .waiter_weight = sm->waiter_weight, .waiting = sm->sim_waiting,
                          .tail = sm->tail, .end_s = sm->sim.end_s};
  return AX_OK;
}

int ax_sim_model_build(AxSimModel *sm, const AxTrainConfig *cfg, const AxMachine *m,
                       const AxSimProfile *prof) {
  memset(sm, 0, sizeof *sm);
  sm->model = ax_train_model_config(cfg);
  sm->P = cfg->grid.g_inter;
  sm->D = cfg->grid.g_data;
  sm->ranks = sm->P * sm->D;
  sm->micro = cfg->data.micro_batch ? cfg->data.micro_batch : cfg->data.batch / sm->D;
  sm->n_micro = cfg->data.batch / sm->D / sm->micro;
  sm->limit = cfg->grid.pipeline_limit ? cfg->grid.pipeline_limit : sm->P;
  if (sm->limit > sm->n_micro) sm->limit = sm->n_micro; /* as the trainer */
  int *first = ax_malloc((size_t)(sm->P + 1) * sizeof *first);
  int rc = first ? alloc_model(sm) : AX_ERR;
  if (rc == AX_OK) rc = build(sm, cfg, m, prof, first);
  free(first);
  if (rc != AX_OK) ax_sim_model_free(sm);
  return rc;
}

void ax_sim_model_free(AxSimModel *sm) {
  free(sm->fwd);
  free(sm->bwd);
  free(sm->send);
  free(sm->link);
  free(sm->tail);
  free(sm->chunk_costs);
  free(sm->core);
  memset(sm, 0, sizeof *sm);
}
