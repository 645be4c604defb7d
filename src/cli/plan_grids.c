/* plan_grids.c — `axonn plan --rank-grids`: every grid G_inter x Gx x Gy x Gz x G_data of N
 * ranks that fits the device memory, ranked by estimated step time (src/plan/rank_grids.h; the
 * memory from `plan`'s own accounting, src/train/train_plan_grid.h), the ones that do not fit
 * listed apart; both placements side by side with --compare-placement; or one grid's
 * collectives with --grid. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "models/gpt_presets.h"
#include "src/core/command.h"
#include "src/core/error.h"
#include "src/core/fileio.h"
#include "src/core/options.h"
#include "src/plan/rank_grids.h"
#include "src/train/train_plan_grid.h"

typedef struct {
  int rank_grids, ranks;
  char *model;
  int layers, hidden, heads, seq, vocab;
  char *machine;
  long long batch;
  int micro_batch, precision, checkpoint, ag_cache, placement, top, max_inter;
  int optimizer, compare;
  char *json, *grid;
} GridsConfig;

#define PAPER_BATCH_TOKENS (4LL << 20) /* axonn-4d-hybrid §VII: 4M tokens per batch */

#define OFF(f) offsetof(GridsConfig, f)
#define NUM(name, type, f, def, mv, help, lo, hi) {name, type, OFF(f), def, mv, help, lo, hi, NULL}
#define STR(name, f, def, mv, help) {name, AX_OPT_STRING, OFF(f), def, mv, help, 1, 0, NULL}
static const AxOption OPTIONS[] = {
    {"rank-grids", AX_OPT_FLAG, OFF(rank_grids), "0", NULL,
     "rank every grid of --ranks that fits the device memory by estimated step time "
     "(communication + compute + the pipeline's bubble; this mode)", 1, 0, NULL},
    NUM("ranks", AX_OPT_INT, ranks, "0", "N", "ranks (GPUs) to place (required without --grid)",
        0, 1 << 20),
    STR("model", model, NULL, "NAME",
        "model preset (gpt-5b, gpt-10b, gpt-20b, gpt-40b, gpt-80b, gpt2-small, ...); explicit "
        "dimension flags override it"),
    NUM("layers", AX_OPT_INT, layers, "4", "N", "transformer blocks", 1, 100000),
    NUM("hidden", AX_OPT_INT, hidden, "128", "N", "hidden size (channels)", 1, 1 << 20),
    NUM("heads", AX_OPT_INT, heads, "4", "N", "attention heads (must divide --hidden)", 1,
        1 << 16),
    NUM("seq", AX_OPT_INT, seq, "64", "N", "sequence length (tokens)", 1, 1 << 20),
    NUM("vocab", AX_OPT_INT, vocab, "256", "N", "vocabulary size (padded to 128)", 2, 1 << 24),
    STR("machine", machine, "perlmutter", "NAME|FILE",
        "summit, perlmutter, frontier, h100, or a machine file (key = value lines: name, "
        "gpus_per_node, intra_bw, inter_bw, optional latency and device_memory_gb, and the "
        "simulator's optional device, peak_tflops, efficiency, host_bw, cores_per_node; see "
        "data/machines/)"),
    NUM("batch", AX_OPT_LONG, batch, "0", "B",
        "global batch in sequences (0: 4M tokens / --seq, the paper's batch: 2048 at 2048)", 0,
        1 << 30),
    NUM("micro-batch", AX_OPT_INT, micro_batch, "0", "M",
        "sequences per micro-batch of a data-parallel row (0: per grid, the largest multiple "
        "of Gz that leaves at least G_inter micro-batches; the whole row when G_inter = 1)",
        0, 1 << 30),
    {"precision", AX_OPT_CHOICE, OFF(precision), "bf16", NULL,
     "element size of weights, activations and gradients (LayerNorm and loss statistics stay "
     "fp32)", 1, 0, "fp32|bf16|fp16"},
    {"checkpoint-activations", AX_OPT_FLAG, OFF(checkpoint), "0", NULL,
     "the blocks' forward runs again in the backward pass (its collectives twice)", 1, 0, NULL},
    NUM("ag-cache", AX_OPT_INT, ag_cache, "0", "0|1",
        "the all-gathered weights are kept for the step's later micro-batches and the "
        "recompute of checkpointing (gathered once a step, as the trainer's default "
        "--tp-ag-cache 1 with every block within --tp-gather-budget)", 0, 1),
    {"placement", AX_OPT_CHOICE, OFF(placement), "aware", NULL,
     "aware: Eq. 10 bandwidths by where groups sit; agnostic: every group at the inter-node "
     "bandwidth", 1, 0, "agnostic|aware"},
    {"optimizer", AX_OPT_CHOICE, OFF(optimizer), "host", NULL,
     "where the fp32 master weights and Adam moments live, as the trainer's --optimizer: host "
     "(the offloaded arena, not device memory) or device (counted against it)", 1, 0,
     "host|device"},
    {"compare-placement", AX_OPT_FLAG, OFF(compare), "0", NULL,
     "rank with both placements and print the two rankings side by side (--placement ignored)",
     1, 0, NULL},
    NUM("top", AX_OPT_INT, top, "10", "K", "grids listed (0: all)", 0, 1 << 30),
    NUM("max-inter", AX_OPT_INT, max_inter, "0", "P", "largest G_inter considered (0: any)", 0,
        1 << 20),
    STR("json", json, NULL, "FILE", "write every valid grid with per-class seconds and bytes"),
    STR("grid", grid, NULL, "P,X,Y,Z,D",
        "one grid (G_inter,Gx,Gy,Gz,G_data): its line and every collective it issues"),
};
static const AxOptionTable TABLE = {
    "plan --rank-grids",
    "Every grid G_inter x Gx x Gy x Gz x G_data of N ranks that fits the machine's device\n"
    "memory, ranked by estimated time per training step: communication (axonn-4d-hybrid §V)\n"
    "+ compute + the pipeline's bubble; the grids that do not fit listed apart with the reason\n"
    "(docs/tensor-parallel.md).",
    OPTIONS, (int)(sizeof OPTIONS / sizeof OPTIONS[0])};

static const char *const PRECISIONS[] = {"fp32", "bf16", "fp16"};

static int model_of(GridsConfig *c, const AxOptState *st, AxGptConfig *m) {
  if (c->model) {
    AxGptDimFields dims = {&c->layers, &c->hidden, &c->heads, &c->seq, &c->vocab};
    AX_TRY(ax_gpt_preset_apply(c->model, &TABLE, st, dims));
  }
  *m = (AxGptConfig){.max_seq = c->seq, .vocab = c->vocab,
                     .padded_vocab = ax_gpt_pad_vocab(c->vocab), .layers = c->layers,
                     .heads = c->heads, .channels = c->hidden};
  return ax_gpt_config_check(m);
}

static int query_of(GridsConfig *c, const AxOptState *st, AxGridQuery *q) {
  memset(q, 0, sizeof *q);
  AxCommSetup *s = &q->setup;
  AX_TRY(model_of(c, st, &s->model));
  s->seq = c->seq;
  s->batch = c->batch ? c->batch : PAPER_BATCH_TOKENS / c->seq;
  if (s->batch < 1) s->batch = 1;
  s->micro_batch = c->micro_batch;
  s->elem_size = c->precision == 0 ? 4 : 2;
  s->checkpoint = c->checkpoint;
  s->ag_cache = c->ag_cache;
  s->placement_aware = c->placement == 1;
  if (ax_machine_resolve(c->machine, &q->machine) != AX_OK) return ax_error_context("--machine");
  q->ranks = c->ranks;
  q->max_inter = c->max_inter;
  q->model_name = c->model;
  q->precision_name = PRECISIONS[c->precision];
  q->flops_per_s = ax_machine_flops_per_s(&q->machine);
  q->optimizer_device = c->optimizer;
  q->memory = ax_plan_grid_memory; /* memory_ctx: set by run() */
  return AX_OK;
}

/* "P,X,Y,Z,D" (or with x between the numbers). */
static int parse_grid(const char *text, AxRankGrid *g) {
  static const AxIntList GRID = {"grid", ",x", "G_inter,Gx,Gy,Gz,G_data such as 1,2,2,8,1", 1,
                                 INT_MAX, 5, 5};
  long long v[5];
  int n;
  AX_TRY(ax_options_int_list(&GRID, text, v, &n));
  *g = (AxRankGrid){(int)v[0], (int)v[1], (int)v[2], (int)v[3], (int)v[4]};
  return AX_OK;
}

/* --grid: one prediction, with its collectives. */
static int run_one(GridsConfig *c, AxGridQuery *q) {
  AxRankGrid g;
  long long ranks;
  AX_TRY(parse_grid(c->grid, &g));
  AX_TRY(ax_comm_grid_ranks(&g, &ranks));
  if (q->ranks && ranks != q->ranks)
    return AX_FAIL("--grid %s has %lld ranks, not --ranks %d", c->grid, ranks, q->ranks);
  q->ranks = (int)ranks;
  AxRankGridList one = {ax_malloc(sizeof *one.grids), 1, NULL, 0, 1};
  if (!one.grids) return AX_ERR;
  int rc = ax_rank_grid_estimate(q, &g, one.grids);
  if (rc == AX_OK) {
    if (one.grids->unfit[0]) { /* listed apart, as in the ranking */
      one.unfit = one.grids;
      one.n_unfit = 1;
      one.n = 0;
    }
    ax_rank_grids_print_header(stdout, q);
    ax_rank_grids_print_table(stdout, &one, 0);
    ax_comm_print_entries(stdout, &(one.n ? one.grids : one.unfit)->comm);
    if (c->json) rc = ax_rank_grids_write_json(c->json, q, &one, 1);
    one.grids = one.n ? one.grids : one.unfit;
    one.unfit = NULL;
  }
  ax_rank_grids_free(&one);
  return rc;
}

static int run_all(GridsConfig *c, const AxGridQuery *q) {
  if (q->ranks < 1) return AX_FAIL("--ranks N is required (a positive number of ranks)");
  AxRankGridList l;
  AX_TRY(ax_rank_grids(q, &l));
  ax_rank_grids_print_header(stdout, q);
  ax_rank_grids_print_table(stdout, &l, c->top);
  int rc = c->json ? ax_rank_grids_write_json(c->json, q, &l, 0) : AX_OK;
  ax_rank_grids_free(&l);
  return rc;
}

/* --compare-placement: the aware and the agnostic ranking side by side. */
static int run_pair(GridsConfig *c, AxGridQuery *q) {
  if (q->ranks < 1) return AX_FAIL("--ranks N is required (a positive number of ranks)");
  if (c->grid || c->json)
    return AX_FAIL("--compare-placement takes neither --grid nor --json (run each placement "
                   "with --placement for those)");
  AxRankGridList aware, agnostic;
  q->setup.placement_aware = 1;
  AX_TRY(ax_rank_grids(q, &aware));
  q->setup.placement_aware = 0;
  if (ax_rank_grids(q, &agnostic) != AX_OK) {
    ax_rank_grids_free(&aware);
    return AX_ERR;
  }
  q->setup.placement_aware = 1;
  ax_rank_grids_print_header(stdout, q);
  ax_rank_grids_print_pair(stdout, "placement-aware", &aware, "placement-agnostic", &agnostic,
                           c->top);
  ax_rank_grids_free(&aware);
  ax_rank_grids_free(&agnostic);
  return AX_OK;
}

static int run(void *config, const AxOptState *st) {
  GridsConfig *c = config;
  AxGridQuery q;
  AX_TRY(query_of(c, st, &q));
  if (c->json) AX_TRY(ax_file_check_writable(c->json));
  AxPlanGridCtx ctx;
  AX_TRY(ax_plan_grid_ctx_init(&ctx, &q.setup, c->optimizer));
  q.memory_ctx = &ctx;
  int rc = c->compare ? run_pair(c, &q) : c->grid ? run_one(c, &q) : run_all(c, &q);
  ax_plan_grid_ctx_free(&ctx);
  return rc;
}

int ax_cmd_plan_grids(int argc, char **argv) {
  static const AxCommandSpec spec = {&TABLE, sizeof(GridsConfig), 0, run};
  return ax_command_run(&spec, argc, argv);
}
