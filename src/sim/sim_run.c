/* sim_run.c — `axonn simulate`'s run: the cost model (sim_costs.h) of cfg on the machine, one
 * simulated step (src/sim/sim_engine.h; every step of a deterministic simulation is the same),
 * then what a real run writes, from the same code: the step records through the metrics
 * (timing window, CSV), the summary's figures (ax_summary_figures), memory per rank from the
 * planner (train_plan.h), the summary's lines and file (ax_summary_emit) marked simulated, and the
 * timeline in the trace format of a real --trace (ax_trace_write_json); see sim_run.h. */
#include "sim_run.h"

#include <math.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/partition.h"
#include "src/train/train_plan.h"
#include "sim_costs.h"
#include "src/core/error.h"
#include "src/core/log.h"
#include "src/core/timer.h"
#include "src/report/summary.h"

enum { TRACE_RANKS_MAX = 4096 }; /* beyond: the trace holds the first row only */

/* The steps through the metrics, as the trainer records them: timing window and CSV. */
static int record_steps(const AxTrainConfig *cfg, const AxSimModel *sm, double step_s,
                        AxMetrics *met) {
  double flops = ax_gpt_train_flops(&sm->model, cfg->data.batch, cfg->model.seq, sm->recompute);
  AxMetricsFiles files = {cfg->output.metrics, cfg->output.metrics_jsonl, cfg->output.tensorboard,
                          -1};
  AX_TRY(ax_metrics_open(met, &files, 1, cfg->optim.steps, (long long)cfg->data.batch * cfg->model.seq,
                         flops));
  ax_metrics_timing_window(met, cfg->output.timing_skip, cfg->output.timing_steps);
  int rc = AX_OK;
  for (int step = 1; step <= cfg->optim.steps && rc == AX_OK; step++) {
    AxStepRecord r = {.step = step, .loss = NAN, .lr = NAN, .ms = step_s * 1e3,
                      .grad_norm = NAN, .val_loss = NAN};
    rc = ax_metrics_step(met, &r);
  }
  if (ax_metrics_close(met) != AX_OK) rc = AX_ERR;
  return rc;
}

/* Memory per rank from the planner: device = weights, gradients, activations (checkpointed
 * when the run checkpoints); host = the optimizer arena, plus the device's on the CPU. */
static int plan_memory(const AxTrainConfig *cfg, const AxSimModel *sm, AxMemory *mem) {
  int P = sm->P, cpu = strcmp(cfg->exec.device, "cpu") == 0;
  int *first = ax_malloc((size_t)(P + 1) * sizeof *first);
  mem->host_bytes = ax_malloc((size_t)sm->ranks * sizeof *mem->host_bytes);
  mem->device_bytes = ax_malloc((size_t)sm->ranks * sizeof *mem->device_bytes);
  if (!first || !mem->host_bytes || !mem->device_bytes) {
    free(first);
    return AX_ERR;
  }
  int rc = ax_partition(sm->model.layers, P, cfg->grid.stage_layers, first);
  for (int s = 0; s < P && rc == AX_OK; s++) {
    AxStagePlan p;
    ax_plan_stage(cfg, &sm->model, first, s, &p);
    double dev = p.weights + p.grads + (sm->recompute ? p.act_ckpt : p.act);
    for (int d = 0; d < sm->D; d++) {
      mem->device_bytes[d * P + s] = (long long)dev;
      mem->host_bytes[d * P + s] = (long long)(p.host + (cpu ? dev : 0));
    }
  }
  free(first);
  mem->device_source = "planned (src/train/train_plan.c): weights, gradients, activations";
  return rc;
}

/* Per rank: the step's time it does not compute; per stage the pipeline phase's idle. */
static int fill_info(AxSimInfo *x, const AxSimModel *sm, const AxSimResult *r, double *idle) {
  double bubble = 0;
  for (int s = 0; s < sm->P; s++) {
    double f = 1.0 - r->busy_s[s] / r->step_s;
    for (int d = 0; d < sm->D; d++) idle[d * sm->P + s] = f;
    bubble += 1.0 - r->pipe_busy_s[s] / r->pipeline_s;
  }
  x->costs = sm->costs;
  x->network = sm->network;
  x->ranks = sm->ranks;
  x->idle_fraction = idle;
  x->bubble_fraction = bubble / sm->P;
  x->pipeline_s = r->pipeline_s;
  x->allreduce_optimizer_s = r->step_s - r->pipeline_s;
  x->events = r->n_events;
  return AX_OK;
}

/* --trace: the steps of --trace-steps, one after another, on every rank (the first row only
 * beyond TRACE_RANKS_MAX ranks). */
static int write_trace(const AxTrainConfig *cfg, const AxSimModel *sm, const AxSimResult *r) {
  int lo, hi;
  AX_TRY(ax_train_trace_range(cfg, &lo, &hi));
  if (hi > cfg->optim.steps) hi = cfg->optim.steps;
  int rows = sm->ranks <= TRACE_RANKS_MAX ? sm->D : 1, ranks = rows * sm->P, steps = hi - lo + 1;
  if (steps < 1) steps = 0;
  size_t total = 0;
  for (int s = 0; s < sm->P; s++) total += (size_t)r->count[s];
  AxTraceEvent *ev = ax_malloc(total * (size_t)rows * (size_t)steps * sizeof *ev + 1);
  int *counts = ax_calloc((size_t)ranks, sizeof *counts);
  int rc = ev && counts ? AX_OK : AX_ERR;
  size_t k = 0;
  for (int rank = 0; rank < ranks && rc == AX_OK; rank++) {
    int s = rank % sm->P, n;
    const AxTraceEvent *e = ax_sim_events(r, s, &n);
    for (int step = lo; step <= hi; step++)
      for (int i = 0; i < n; i++, k++) {
        ev[k] = e[i];
        ev[k].step = step;
        ev[k].t0 += (step - 1) * r->step_s;
        ev[k].t1 += (step - 1) * r->step_s;
      }
    counts[rank] = n * steps;
  }
  AxRankLayout layout = ax_rank_layout_plain(sm->P);
  if (rc == AX_OK) rc = ax_trace_write_json(cfg->output.trace, ev, counts, ranks, &layout);
  if (rc == AX_OK)
    ax_log("wrote the simulated trace of steps %d-%d (%d ranks) to %s", lo, hi, ranks, cfg->output.trace);
  free(ev);
  free(counts);
  return rc;
}

/* The summary with the provenance of this process (the simulation runs on one host). */
static int emit(AxSummary *s, const AxTrainConfig *cfg) {
  AxProvenance prov;
  char host[AX_PROVENANCE_HOST] = "localhost";
  gethostname(host, sizeof host - 1);
  int rc = ax_summary_provenance_gather(&prov, NULL, host);
  s->prov = &prov;
  if (rc == AX_OK) rc = ax_summary_emit(s, cfg->output.summary);
  ax_summary_provenance_free(&prov);
  return rc;
}

static void fill_summary(AxSummary *s, const AxTrainConfig *cfg, const AxSimModel *sm,
                         const AxMachine *m, const AxMetrics *met) {
  memset(s, 0, sizeof *s);
  s->options = &AX_TRAIN_OPTIONS;
  s->cfg = cfg;
  s->model = sm->model;
  s->preset = cfg->model.preset;
  s->device = m->device[0] && strcmp(m->device, "cpu") ? m->device : cfg->exec.device;
  s->host = m->name;
  s->ranks = sm->ranks;
  s->g_inter = sm->P;
  s->g_data = sm->D;
  s->steps_run = cfg->optim.steps;
  s->replicas_differ = s->tied_differ = -1; /* nothing trained */
  s->final_loss = s->final_val_loss = s->loss_scale = NAN; /* no training: null */
  ax_summary_timing(&s->timing, met, cfg->output.timing_skip, cfg->output.timing_steps);
  s->peak.tflops_per_rank = sm->peak_tflops_per_rank;
  snprintf(s->peak.source, sizeof s->peak.source, "%s", sm->peak_source);
  ax_summary_figures(&s->fig, &s->model, cfg->data.batch, cfg->model.seq, s->timing.mean_ms, s->ranks,
                     s->peak.tflops_per_rank, sm->recompute);
}

static int report(const AxTrainConfig *cfg, const AxSimModel *sm, const AxMachine *m,
                  const AxSimResult *r, double wall_s) {
  AxMetrics met;
  AxSummary s;
  AxSimInfo info = {0};
  AxMemory mem = {0};
  double *idle = ax_malloc((size_t)sm->ranks * sizeof *idle);
  int rc = idle ? record_steps(cfg, sm, r->step_s, &met) : AX_ERR;
  if (rc == AX_OK) rc = plan_memory(cfg, sm, &mem);
  if (rc == AX_OK) rc = fill_info(&info, sm, r, idle);
  if (rc == AX_OK) {
    info.wall_s = wall_s;
    fill_summary(&s, cfg, sm, m, &met);
    s.mem = mem;
    s.sim = &info;
    rc = emit(&s, cfg);
  }
  free(idle);
  free(mem.host_bytes);
  free(mem.device_bytes);
  return rc;
}

/* What the simulator does not model is refused rather than simulated as another run (it
 * priced a --gx 2 run as 1 x 1 x 1 and a compressed one as plain). */
static int check_modelled(const AxTrainConfig *cfg) {
  if (ax_train_tp_ranks(cfg) > 1)
    return AX_FAIL("simulate does not model tensor parallelism (--gx %d --gy %d --gz %d): it "
                   "would simulate the run without it; leave --gx, --gy and --gz at 1 "
                   "(docs/simulator.md)", cfg->grid.gx, cfg->grid.gy, cfg->grid.gz);
  if (ax_train_compresses(cfg))
    return AX_FAIL("simulate does not model gradient compression (--compress %s): it would "
                   "simulate plain all-reduces; leave --compress none (docs/simulator.md)",
                   cfg->compression.compress);
  if (strcmp(cfg->compression.compress_backprop, "none") != 0)
    return AX_FAIL("simulate does not model compressed pipeline gradients (--compress-backprop "
                   "%s): leave --compress-backprop none (docs/simulator.md)",
                   cfg->compression.compress_backprop);
  return AX_OK;
}

int ax_sim_simulate(const AxTrainConfig *cfg, const AxMachine *m, const AxSimProfile *prof) {
  AxSimModel sm;
  AxSimResult r;
  AX_TRY(check_modelled(cfg));
  AX_TRY(ax_sim_model_build(&sm, cfg, m, prof));
  double t0 = ax_now();
  int rc = ax_sim_run(&sm.sim, cfg->output.trace != NULL, &r);
  double wall = ax_now() - t0;
  if (rc == AX_OK) {
    ax_log("simulated one step of %d x %d = %d ranks (%d micro-batches of %d a row, limit %d) "
           "in %.3f s: %lld pipeline events; compute %s; %s", sm.P, sm.D, sm.ranks, sm.n_micro,
           sm.micro, sm.limit, wall, r.n_events, sm.costs, sm.network);
    rc = report(cfg, &sm, m, &r, wall);
    if (rc == AX_OK && cfg->output.trace) rc = write_trace(cfg, &sm, &r);
    ax_sim_result_free(&r);
  }
  ax_sim_model_free(&sm);
  return rc;
}
