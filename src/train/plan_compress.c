/* plan_compress.c — `axonn plan --compress CODEC`: the selective-compression decision of every
 * layer-wise part of every stage (train_compress.h: the same cut into tensors, the same
 * codecs and the same decision a run makes; a stage --compress-stages leaves out is plain),
 * from this core's profiled encode and decode costs and the link of --emulate-link, or,
 * without it, an assumed 10 Gb/s, 5 us link (the plan says which). A run decides from costs every rank agrees on, so its table can differ where
 * T_orig and T_cpr are close. */
#include <stdio.h>
#include <stdlib.h>

#include "models/gpt_stage.h"
#include "mpi/link_spec.h"
#include "src/core/error.h"
#include "src/core/log.h"
#include "train_compress.h"

enum { PLAN_PROFILE_REPS = 5 };
static const char ASSUMED_LINK[] = "10Gbps,5us";

static int plan_costs(const AxTrainConfig *cfg, const AxCodec *codec, AxCasyncCosts *c,
                      const char **source) {
  AxLinkSpec link;
  const char *text = cfg->emulate_link ? cfg->emulate_link : ASSUMED_LINK;
  AX_TRY(ax_link_spec_parse(text, &link));
  *source = cfg->emulate_link ? "--emulate-link" : "ASSUMED 10 Gb/s, 5 us: give --emulate-link";
  AX_TRY(ax_casync_profile_codec(codec, PLAN_PROFILE_REPS, c));
  c->send = (AxLinearCost){link.latency_s, link.bytes_per_s};
  return AX_OK;
}

/* The chunking of a stage of n parameters as the offload arena cuts it (only what the cut
 * reads: n, chunk, n_chunks). */
static AxOffload stage_chunks(const AxTrainConfig *cfg, size_t n) {
  size_t chunk = (size_t)cfg->bucket_size * (size_t)cfg->coarsening;
  if (!cfg->offload || chunk >= n || chunk == 0) chunk = n ? n : 1;
  return (AxOffload){.n = n, .chunk = chunk, .n_chunks = (int)((n + chunk - 1) / chunk)};
}

static int print_stage(const AxTrainConfig *cfg, const AxGptConfig *m, const int *first, int s,
                       const AxCompressPolicy *pol, AxShapedCodecs *cache, AxCasyncCosts *c) {
  int P = cfg->g_inter, selected = ax_train_compressed_stages(cfg, P);
  if (s >= selected) {
    ax_log("stage %d: plain (--compress-stages %s: only stages below %d compress)", s,
           cfg->compress_stages, selected);
    return AX_OK;
  }
  AxStageLayout lay;
  ax_stage_layout(&lay, m, first[s], first[s + 1], s == 0, s == P - 1);
  AxOffload o = stage_chunks(cfg, lay.total);
  AxGradPart *parts;
  int n;
  AX_TRY(ax_compress_cut_parts(&o, &lay, m, &parts, &n));
  int rc = ax_compress_decide_parts(pol, cache, c, parts, n);
  ax_compress_keep_tied_plain(&lay, P, selected, cfg->fuse_embedding_sync, parts, n);
  if (rc == AX_OK) {
    int compressed;
    size_t bytes, cbytes;
    ax_compress_part_totals(parts, n, &compressed, &bytes, &cbytes);
    ax_log("stage %d: %d of %d part(s) compressed (%zu of %zu bytes)", s, compressed, n, cbytes,
           bytes);
    char prefix[32];
    snprintf(prefix, sizeof prefix, "stage %d ", s);
    ax_compress_print_parts(parts, n, pol->is_auto, prefix);
  }
  free(parts);
  return rc;
}

int ax_plan_print_compress(const AxTrainConfig *cfg, const AxGptConfig *m, const int *first) {
  if (!ax_train_compresses(cfg)) return AX_OK;
  AxCodec *codec;
  AX_TRY(ax_codec_parse(cfg->compress, &codec));
  AxCompressPolicy pol = {codec, (AxCasyncAlgo)cfg->compress_sync, cfg->g_data, 0, 0};
  AxCasyncCosts c = {0};
  AxShapedCodecs cache = {0};
  const char *source = "";
  int rc = ax_train_compress_min_bytes(cfg, &pol.is_auto, &pol.min_bytes);
  if (rc == AX_OK && pol.is_auto) rc = plan_costs(cfg, codec, &c, &source);
  if (rc == AX_OK) {
    ax_log("compression plan: %s over CaSync %s, %d data-parallel rank(s), layer-wise parts; %s",
           ax_codec_spec(codec), ax_casync_algo_name(pol.algo), cfg->g_data,
           pol.is_auto ? "HiPress cost model (T_orig vs T_cpr)" : "--compress-min-bytes threshold");
    if (pol.is_auto) ax_compress_print_costs(&c, source);
  }
  for (int s = 0; s < cfg->g_inter && rc == AX_OK; s++)
    rc = print_stage(cfg, m, first, s, &pol, &cache, &c);
  ax_shaped_codecs_free(&cache);
  ax_codec_free(codec);
  return rc;
}
