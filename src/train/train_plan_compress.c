/* train_plan_compress.c — `axonn plan --compress CODEC` (and `axonn plan --compression`): the
 * selective-compression decision of every layer-wise part of every stage (train_compress.h:
 * the same cut into tensors, the same codecs and the same decision a run makes; a stage
 * --compress-stages leaves out is plain), or under --compress auto every stage's fused groups
 * and their strategies with predicted times and how long deciding took (compress_auto.h), from
 * this core's profiled encode and decode costs and the link of --emulate-link, or, without it,
 * an assumed 10 Gb/s, 5 us link (the plan says which; messages inside a node cost the same
 * here, where a run measures them), between the data-parallel ranks: the plan is of ranks on
 * separate nodes, unless --ranks-per-node puts a stage's data-parallel ranks on one node,
 * where, as in a run whose ranks share memory, the cost model keeps every part plain. Every
 * part's line: T_orig, T_cpr at its best K, the decision and the K CaSync would run. Under
 * tensor parallelism the parts are one rank's shards (every rank of the grid holds shards of
 * the same sizes). A run decides from costs every rank agrees on, so its table can differ where
 * the choices are close. */
#include <stdio.h>
#include <stdlib.h>

#include "models/gpt_stage.h"
#include "mpi/link/link_spec.h"
#include "src/core/error.h"
#include "src/core/log.h"
#include "src/plan/compress_auto.h"
#include "models/tp_shard.h"
#include "train_compress.h"
#include "trainer.h"

enum { PLAN_PROFILE_REPS = 5 };
static const char ASSUMED_LINK[] = "10Gbps,5us";

static int plan_costs(const AxTrainConfig *cfg, const AxCodec *codec, AxCasyncCosts *c,
                      const char **source) {
  AxLinkSpec link;
  const char *text = cfg->grid.emulate_link ? cfg->grid.emulate_link : ASSUMED_LINK;
  AX_TRY(ax_link_spec_parse(text, &link));
  *source = cfg->grid.emulate_link
                ? "--emulate-link, between every data-parallel rank"
                : "ASSUMED 10 Gb/s, 5 us between every data-parallel rank: give --emulate-link";
  AX_TRY(ax_casync_profile_codec(codec, PLAN_PROFILE_REPS, c));
  c->send = (AxLinearCost){link.latency_s, link.bytes_per_s};
  return AX_OK;
}

/* The chunking of a stage of n parameters as the offload arena cuts it (only what the cut
 * reads: n, chunk, n_chunks). */
static AxOffload stage_chunks(const AxTrainConfig *cfg, size_t n) {
  size_t chunk = (size_t)cfg->optim.bucket_size * (size_t)cfg->optim.coarsening;
  if (!cfg->optim.offload || chunk >= n || chunk == 0) chunk = n ? n : 1;
  return (AxOffload){.n = n, .chunk = chunk, .n_chunks = (int)((n + chunk - 1) / chunk)};
}

/* How many data-parallel ranks share a node: consecutive ranks fill a node and one row's
 * P x T ranks are consecutive (mpi/grid.h), so a column's ranks are P x T apart; 0 (the real
 * nodes, one machine here) puts them all on one. */
static int column_ranks_per_node(const AxTrainConfig *cfg) {
  long long row = (long long)cfg->grid.g_inter * ax_train_tp_ranks(cfg), rpn = cfg->grid.ranks_per_node;
  if (rpn <= 0) return cfg->grid.g_data;
  long long g = rpn / row;
  return g < 1 ? 1 : g > cfg->grid.g_data ? cfg->grid.g_data : (int)g;
}

/* --compress auto: Cupcake's groups and Espresso's decisions for stage s (compress_auto.h),
 * on the plan's link for messages inside a node too. */
static int print_auto_stage(const AxTrainConfig *cfg, const AxStageLayout *lay, int s,
                            const AxCodec *codec, const AxCasyncCosts *c, double *decide_s) {
  int P = cfg->grid.g_inter;
  AxAutoCompressInput in = {
      .costs = *c, .intra = c->send, .ranks = cfg->grid.g_data,
      .ranks_per_node = column_ranks_per_node(cfg), .plain = (AxAllreduceAlgo)cfg->grid.allreduce,
      .plain_first = ax_compress_tied_alone(lay, P),
      .scheme = cfg->compression.compress_scheme};
  in.two_level = in.ranks_per_node >= 2 && in.ranks / in.ranks_per_node >= 2 &&
                 in.ranks % in.ranks_per_node == 0;
  AX_TRY(ax_train_fusion(cfg, &in.fusion));
  int n = ax_trainer_tensor_ranges(lay, NULL, 0);
  AxTensorRange *tr = ax_calloc((size_t)n + 1, sizeof *tr);
  if (!tr) return AX_ERR;
  ax_trainer_tensor_ranges(lay, tr, n);
  AxAutoCompress a;
  int rc = ax_compress_auto_plan(tr, n, codec, &in, &a);
  free(tr);
  if (rc != AX_OK) return rc;
  char prefix[32];
  snprintf(prefix, sizeof prefix, "stage %d ", s);
  ax_compress_auto_print(&a, prefix, a.n_groups);
  *decide_s += a.fusion_s + a.decide_s;
  ax_compress_auto_free(&a);
  return AX_OK;
}

/* The cost model with --ranks-per-node putting a stage's data-parallel ranks on one node: they
 * share memory, every part stays plain (a run says the same). */
static int column_in_memory(const AxTrainConfig *cfg, const AxCompressPolicy *pol) {
  return pol->is_auto && !pol->requested && !ax_train_compress_auto(cfg) && cfg->grid.ranks_per_node > 0 &&
         cfg->grid.g_data > 1 && column_ranks_per_node(cfg) >= cfg->grid.g_data;
}

static int print_stage(const AxTrainConfig *cfg, const AxGptConfig *m, const int *first, int s,
                       const AxCompressPolicy *pol, AxShapedCodecs *cache, AxCasyncCosts *c,
                       double *decide_s) {
  int P = cfg->grid.g_inter, selected = ax_train_compressed_stages(cfg, P);
  if (s >= selected) {
    ax_log("stage %d: plain (--compress-stages %s: only stages below %d compress)", s,
           cfg->compression.compress_stages, selected);
    return AX_OK;
  }
  AxStageLayout lay; /* under tensor parallelism a rank's shards: its data-parallel sum's */
  AxTpComm tp = ax_train_tp_sizes(cfg);
  ax_tp_stage_layout(&lay, m, first[s], first[s + 1], s == 0, s == P - 1, &tp);
  if (ax_train_compress_auto(cfg))
    return print_auto_stage(cfg, &lay, s, pol->codec, c, decide_s);
  AxOffload o = stage_chunks(cfg, lay.total);
  AxGradPart *parts;
  int n;
  AX_TRY(ax_compress_cut_parts(&o, &lay, &parts, &n));
  int rc = column_in_memory(cfg, pol) ? AX_OK : ax_compress_decide_parts(pol, cache, c, parts, n);
  if (ax_compress_tied_plain(&lay, P, selected, cfg->compression.fuse_embedding_sync ||
                                                     ax_train_sparse_embedding_path(cfg)))
    ax_compress_keep_tied_plain(&lay, parts, n);
  if (rc == AX_OK) {
    int compressed;
    size_t bytes, cbytes;
    ax_compress_part_totals(parts, n, &compressed, &bytes, &cbytes);
    ax_log("stage %d: %d of %d part(s) compressed (%zu of %zu bytes)", s, compressed, n, cbytes,
           bytes);
    char prefix[32];
    snprintf(prefix, sizeof prefix, "stage %d ", s);
    if (column_in_memory(cfg, pol)) {
      ax_log("  the %d data-parallel rank(s) of stage %d share one node (--ranks-per-node %d): "
             "memory, where compression does not pay; every part plain", cfg->grid.g_data, s,
             cfg->grid.ranks_per_node);
    } else {
      ax_compress_print_parts(parts, n, pol, prefix, n);
      snprintf(prefix, sizeof prefix, "stage %d", s);
      ax_compress_explain_none(parts, n, pol, prefix);
    }
  }
  free(parts);
  return rc;
}

int ax_plan_print_compress(const AxTrainConfig *cfg, const AxGptConfig *m, const int *first) {
  if (!ax_train_compresses(cfg)) return AX_OK;
  AxCodec *codec;
  AX_TRY(ax_codec_parse(ax_train_codec_spec(cfg), &codec));
  AxCompressPolicy pol;
  AxCasyncCosts c = {0};
  AxShapedCodecs cache = {0};
  const char *source = "";
  int rc = ax_compress_policy(cfg, codec, cfg->grid.g_data, &pol);
  int strategy = ax_train_compress_auto(cfg);
  ax_train_print_recipe(cfg);
  pol.is_auto |= strategy;
  if (rc == AX_OK && pol.is_auto) rc = plan_costs(cfg, codec, &c, &source);
  if (rc == AX_OK && strategy)
    ax_log("compression plan: --compress auto with %s, %d data-parallel rank(s) (%d per node): "
           "Cupcake's fusion (--fusion %s), then Espresso's strategy per group", ax_codec_spec(codec),
           cfg->grid.g_data, column_ranks_per_node(cfg), cfg->compression.fusion ? cfg->compression.fusion : "auto");
  else if (rc == AX_OK)
    ax_log("compression plan: %s over CaSync %s, %d data-parallel rank(s), layer-wise parts; %s",
           ax_codec_spec(codec), ax_casync_algo_name(pol.algo), cfg->grid.g_data,
           pol.requested ? "--compress-stages: every part the codec shrinks (HiPress's cost model "
                           "picks its K)"
           : pol.is_auto ? "HiPress cost model (T_orig: the plain ring; T_cpr: CaSync at its best "
                           "K partitions; compress where T_cpr < T_orig)"
                         : "--compress-min-bytes threshold");
  if (rc == AX_OK && ax_train_tp_ranks(cfg) > 1)
    ax_log("  tensor parallel %d x %d x %d: the parts are one rank's shards (its data-parallel "
           "group sums the same shards)", cfg->grid.gx, cfg->grid.gy, cfg->grid.gz);
  if (rc == AX_OK && pol.is_auto) ax_compress_print_costs(&c, source);
  double decide_s = 0;
  for (int s = 0; s < cfg->grid.g_inter && rc == AX_OK; s++)
    rc = print_stage(cfg, m, first, s, &pol, &cache, &c, &decide_s);
  if (rc == AX_OK && strategy)
    ax_log("decided in %.3f s for %d stage(s) (fusion and strategy searches)", decide_s,
           cfg->grid.g_inter);
  ax_shaped_codecs_free(&cache);
  ax_codec_free(codec);
  return rc;
}
