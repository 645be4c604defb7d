/* plan_compress.c — `axonn plan --compress CODEC`: the selective-compression decision of every
 * all-reduce chunk of every stage (train_compress.h), from this core's profiled encode and
 * decode costs and the link of --emulate-link, or, without it, an assumed 10 Gb/s, 5 us link
 * (the plan says which). The trainer decides with the same function from agreed costs. */
#include <stdio.h>

#include "mpi/link_spec.h"
#include "src/core/error.h"
#include "src/core/log.h"
#include "train_compress.h"

enum { PLAN_PROFILE_REPS = 5 };
static const char ASSUMED_LINK[] = "10Gbps,5us";

/* The chunks of a stage of n parameters (as offload.c cuts them). */
static size_t chunk_elems(const AxTrainConfig *cfg, size_t n) {
  size_t chunk = (size_t)cfg->bucket_size * (size_t)cfg->coarsening;
  return !cfg->offload || chunk >= n || chunk == 0 ? n : chunk;
}

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

static void print_stage(const AxTrainConfig *cfg, const AxCodec *codec, AxCasyncCosts *c,
                        int is_auto, long long min_bytes, int s, size_t n) {
  size_t chunk = chunk_elems(cfg, n);
  for (size_t lo = 0, k = 0; lo < n; lo += chunk, k++) {
    size_t count = n - lo < chunk ? n - lo : chunk;
    AxCasyncChoice ch = ax_compress_decide(codec, c, (AxCasyncAlgo)cfg->compress_sync,
                                           cfg->g_data, is_auto, min_bytes, count);
    char what[48];
    snprintf(what, sizeof what, "stage %d chunk %zu", s, k);
    ax_compress_print_choice(what, count * sizeof(float), &ch, is_auto);
  }
}

int ax_plan_print_compress(const AxTrainConfig *cfg, const size_t *stage_params, int stages) {
  if (!ax_train_compresses(cfg)) return AX_OK;
  AxCodec *codec;
  AX_TRY(ax_codec_parse(cfg->compress, &codec));
  int is_auto;
  long long min_bytes;
  AxCasyncCosts c = {0};
  const char *source = "";
  int rc = ax_compress_policy(cfg, codec, &is_auto, &min_bytes);
  if (rc == AX_OK && is_auto) rc = plan_costs(cfg, codec, &c, &source);
  if (rc == AX_OK) {
    ax_log("compression plan: %s over CaSync %s, %d data-parallel rank(s); %s",
           ax_codec_spec(codec), cfg->compress_sync ? "ps" : "ring", cfg->g_data,
           is_auto ? "HiPress cost model (T_orig vs T_cpr)" : "--compress-min-bytes threshold");
    if (is_auto) ax_compress_print_costs(&c, source);
    for (int s = 0; s < stages; s++)
      print_stage(cfg, codec, &c, is_auto, min_bytes, s, stage_params[s]);
  }
  ax_codec_free(codec);
  return rc;
}
