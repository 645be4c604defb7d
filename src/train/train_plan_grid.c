/* train_plan_grid.c — `axonn plan`'s memory plan for a grid of the 4D planner; see
 * train_plan_grid.h. */
#include "train_plan_grid.h"

#include <stdlib.h>
#include <string.h>

#include "offload/device_opt.h"
#include "pipeline/partition.h"
#include "src/core/error.h"
#include "src/core/options.h"
#include "train_plan.h"

int ax_plan_grid_ctx_init(AxPlanGridCtx *ctx, const AxCommSetup *s, int optimizer_device) {
  char *argv[] = {"plan", "--device", "cuda", NULL};
  AxOptState st;
  AX_TRY(ax_train_config_parse(&ctx->cfg, 3, argv, &st));
  AxTrainConfig *c = &ctx->cfg;
  c->model.layers = s->model.layers;
  c->model.hidden = s->model.channels;
  c->model.heads = s->model.heads;
  c->model.seq = s->seq;
  c->model.vocab = s->model.vocab;
  c->exec.precision = s->elem_size == 4 ? AX_PREC_FP32 : AX_PREC_BF16;
  c->exec.checkpoint_activations = s->checkpoint;
  c->grid.tp_ag_cache = s->ag_cache;
  c->optim.optimizer_device = optimizer_device;
  return AX_OK;
}

void ax_plan_grid_ctx_free(AxPlanGridCtx *ctx) { ax_train_config_free(&ctx->cfg); }

/* The stage plan's device bytes, the optimizer's among them when it lives on the device. */
static void stage_memory(const AxTrainConfig *c, const AxStagePlan *p, AxGridMemory *m) {
  size_t esz = c->exec.precision == AX_PREC_FP32 ? 4 : 2;
  m->weights = p->weights;
  m->grads = p->grads;
  m->act = c->exec.checkpoint_activations ? p->act_ckpt : p->act;
  m->optimizer = c->optim.optimizer_device ? (double)ax_device_opt_bytes((size_t)p->params, esz, 0)
                                           : 0;
  m->total = m->weights + m->grads + m->act + m->optimizer;
}

int ax_plan_grid_memory(void *vctx, const AxCommSetup *s, const AxRankGrid *g, int micro_batch,
                        AxGridMemory *out) {
  AxTrainConfig *c = &((AxPlanGridCtx *)vctx)->cfg;
  c->grid.g_inter = g->inter;
  c->grid.g_data = g->data;
  c->grid.gx = g->x;
  c->grid.gy = g->y;
  c->grid.gz = g->z;
  c->data.batch = (int)s->batch;
  c->data.micro_batch = micro_batch;
  AxGptConfig m = ax_train_model_config(c);
  int *first = ax_malloc((size_t)(g->inter + 1) * sizeof *first);
  if (!first) return AX_ERR;
  int rc = ax_partition(m.layers, g->inter, c->grid.stage_layers, first);
  memset(out, 0, sizeof *out);
  for (int st = 0; rc == AX_OK && st < g->inter; st++) {
    AxStagePlan p;
    AxGridMemory mem;
    ax_plan_stage(c, &m, first, st, &p);
    stage_memory(c, &p, &mem);
    if (mem.total > out->total) *out = mem;
  }
  free(first);
  return rc;
}
