/* train_plan.c — `axonn plan` and `axonn train --dry-run`: the memory plan; see train_plan.h. */
#include "train_plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/gpt_stage.h"
#include "models/tp_shard.h"
#include "offload/device_opt.h"
#include "offload/offload.h"
#include "pipeline/partition.h"
#include "pipeline/scheduler.h"
#include "src/backend/backend.h"
#include "src/core/error.h"
#include "src/core/log.h"
#include "src/io/model_file.h"
#include "train_compress.h"

static int plan_model(const AxTrainConfig *cfg, AxGptConfig *m) {
  if (cfg->model.init) return ax_model_file_read_config(cfg->model.init, m);
  *m = ax_train_model_config(cfg);
  return ax_gpt_config_check(m);
}


static int micro_batch(const AxTrainConfig *cfg) {
  return cfg->data.micro_batch ? cfg->data.micro_batch : cfg->data.batch / cfg->grid.g_data;
}

void ax_plan_stage(const AxTrainConfig *cfg, const AxGptConfig *m, const int *first, int s,
                   AxStagePlan *out) {
  int P = cfg->grid.g_inter, limit = cfg->grid.pipeline_limit ? cfg->grid.pipeline_limit : P;
  int shard = cfg->data.batch / cfg->grid.g_data, micro = micro_batch(cfg);
  if (limit > shard / micro) limit = shard / micro; /* as the trainer: no more than there are */
  size_t esz = ax_dtype_size((AxDType)cfg->exec.precision);
  /* under tensor parallelism a rank's shards, as the trainer's stage holds them */
  AxTpComm tp = ax_train_tp_sizes(cfg);
  AxStageLayout lay;
  ax_tp_stage_layout(&lay, m, first[s], first[s + 1], s == 0, s == P - 1, &tp);
  AxStageSpec spec = {.l0 = first[s], .l1 = first[s + 1], .first = s == 0, .last = s == P - 1,
                      .B = micro, .T = cfg->model.seq, .n_slots = ax_sched_slots(s, P, limit),
                      .tp = ax_train_tp_ranks(cfg) > 1 ? &tp : NULL, .oar = cfg->grid.tp_oar,
                      .ors = cfg->grid.tp_ors, .oag = cfg->grid.tp_oag,
                      .ag_cache = cfg->grid.tp_ag_cache, .dropout = (float)cfg->model.dropout,
                      .attention_dropout = (float)cfg->model.attention_dropout};
  double n = (double)lay.total;
  out->params = n;
  out->weights = out->grads = n * (double)esz;
  out->act = (double)ax_stage_activation_bytes(m, &spec, esz);
  spec.ac = cfg->exec.ac ? cfg->exec.ac : ax_partition_default_ac(spec.l1 - spec.l0, m->layers);
  out->act_ckpt = (double)ax_stage_activation_bytes(m, &spec, esz);
  int host_fp32 = strcmp(cfg->exec.device, "cpu") == 0 && esz == 4;
  /* --optimizer device on several ranks: the staging copy its host-staged sum needs (a sum in
   * device memory, with CUDA-aware MPI, needs none: the plan counts the most) */
  int state_only = cfg->optim.optimizer_device && ax_train_ranks(cfg) == 1;
  out->host = (double)ax_offload_arena_bytes(lay.total, host_fp32, cfg->optim.allreduce_dtype == 1,
                                             state_only);
  double bucket = (double)cfg->optim.bucket_size < n ? (double)cfg->optim.bucket_size : n;
  out->paper_plain = 20.0 * n;
  out->paper_offload = 4.0 * n + 16.0 * bucket;
}

static void print_row(const char *label, const AxStagePlan *p) {
  const double G = 1e9;
  printf("%-10s %9.3f %9.2f %9.2f %11.2f %11.2f %10.2f %11.2f %11.2f\n", label, p->params / 1e9,
         p->weights / G, p->grads / G, p->act / G, p->act_ckpt / G, p->host / G,
         p->paper_plain / G, p->paper_offload / G);
}

static void add(AxStagePlan *sum, const AxStagePlan *p, double times) {
  double *a = &sum->params;
  const double *b = &p->params;
  for (size_t i = 0; i < sizeof *sum / sizeof(double); i++) a[i] += b[i] * times;
}

/* The model and its stages' first blocks (*first: P + 1 entries, the caller frees). The
 * tensor-parallel grid must fit the model, checked as the trainer's stage checks it. */
static int plan_stages(const AxTrainConfig *cfg, AxGptConfig *m, int **first) {
  AX_TRY(plan_model(cfg, m));
  AxTpComm tp = ax_train_tp_sizes(cfg);
  AX_TRY(ax_tp_stage_check(m, &tp, micro_batch(cfg)));
  *first = ax_malloc((size_t)(cfg->grid.g_inter + 1) * sizeof **first);
  if (!*first) return AX_ERR;
  if (ax_partition(m->layers, cfg->grid.g_inter, cfg->grid.stage_layers, *first) != AX_OK) {
    free(*first);
    return AX_ERR;
  }
  return AX_OK;
}

int ax_plan_print_compression(const AxTrainConfig *cfg) {
  AxGptConfig m;
  int *first;
  AX_TRY(plan_stages(cfg, &m, &first));
  int rc = ax_plan_print_compress(cfg, &m, first);
  free(first);
  return rc;
}

/* "2 x 4", or under tensor parallelism "2 x 4 x (Gx 2 x Gy 1 x Gz 2)". */
static void format_grid(const AxTrainConfig *cfg, char *buf, size_t cap) {
  int n = snprintf(buf, cap, "%d x %d", cfg->grid.g_inter, cfg->grid.g_data);
  if (ax_train_tp_ranks(cfg) > 1 && n > 0 && (size_t)n < cap)
    snprintf(buf + n, cap - (size_t)n, " x (Gx %d x Gy %d x Gz %d)", cfg->grid.gx, cfg->grid.gy, cfg->grid.gz);
}

static void print_header(const AxTrainConfig *cfg, const AxGptConfig *m) {
  char grid[96];
  format_grid(cfg, grid, sizeof grid);
  printf("memory plan: GPT L=%d C=%d NH=%d T=%d V=%d, %.3fB parameters; grid %s = %lld ranks; "
         "%s %s; micro-batch %d; bucket %lld elements\n", m->layers, m->channels, m->heads,
         cfg->model.seq, m->vocab, ax_gpt_num_params(m) / 1e9, grid, ax_train_ranks(cfg),
         cfg->exec.device, ax_dtype_name((AxDType)cfg->exec.precision), micro_batch(cfg),
         cfg->optim.bucket_size);
  if (ax_train_tp_ranks(cfg) > 1)
    printf("tensor parallelism: a rank holds its shards of its stage (docs/tensor-parallel.md): "
           "the matrices split %lld ways, the vectors over X or Y; acts: its arena, the "
           "all-gathered weight blocks included\n", ax_train_tp_ranks(cfg));
  printf("per rank, GB   (device: weights, gradients, activations without / with checkpointing; "
         "host: optimizer arena; paper: 20phi vs 4phi + 16b)\n");
}

int ax_plan_print(const AxTrainConfig *cfg) {
  AxGptConfig m;
  int *first, P = cfg->grid.g_inter;
  AX_TRY(plan_stages(cfg, &m, &first));
  print_header(cfg, &m);
  printf("%-10s %9s %9s %9s %11s %11s %10s %11s %11s\n", "stage", "params(B)", "weights",
         "grads", "acts", "acts(ckpt)", "host", "paper 20phi", "4phi+16b");
  AxStagePlan total = {0}, p;
  for (int s = 0; s < P; s++) {
    /* stages of the same shape as the one before need no new plan (thousands of stages) */
    int same = s > 1 && s < P - 1 && first[s + 1] - first[s] == first[s] - first[s - 1];
    if (!same) ax_plan_stage(cfg, &m, first, s, &p);
    char label[32];
    snprintf(label, sizeof label, "%d", s);
    if (P <= 16 || s < 4 || s >= P - 2) print_row(label, &p);
    else if (s == 4) printf("%-10s\n", "...");
    add(&total, &p, (double)cfg->grid.g_data * (double)ax_train_tp_ranks(cfg));
  }
  print_row("all ranks", &total);
  printf("paper accounting over all ranks: %.2f GB without offload, %.2f GB with (%.1fx less); "
         "with checkpointed activations: %.2f GB against %.2f GB\n",
         total.paper_plain / 1e9, total.paper_offload / 1e9,
         total.paper_plain / total.paper_offload, (total.paper_plain + total.act_ckpt) / 1e9,
         (total.paper_offload + total.act_ckpt) / 1e9);
  if (cfg->optim.optimizer_device) {
    size_t esz = ax_dtype_size((AxDType)cfg->exec.precision);
    int host_memory = strcmp(cfg->exec.device, "cpu") == 0;
    printf("--optimizer device: %.2f GB of fp32 master weights and Adam moments in device "
           "memory beside the weights%s\n",
           ax_device_opt_bytes((size_t)total.params, esz, host_memory) / 1e9,
           host_memory ? " (the host arena itself: the CPU backend's device memory is host "
                         "memory)" : "");
  }
  int rc = ax_plan_print_compress(cfg, &m, first);
  free(first);
  return rc;
}
