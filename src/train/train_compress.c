/* train_compress.c — the trainer's side of gradient compression: the codec of --compress, the
 * per-part decisions of layer-wise compression (--compress-min-bytes N, or HiPress's cost model
 * fed by costs profiled here and agreed by every rank, which keeps every part plain where the
 * data-parallel ranks share memory; PowerSGD's encode priced at each part's rank), then the
 * policy on top (1-D tensors plain unless --compress-vectors 1; on the stages --compress-stages F
 * selects, every part the codec shrinks), the codec states (offload/grad_compress.h), the stages
 * that compress, the recipe and decision table in the run's header and the summary's report of
 * it, and the step's codec context (the warm-up, the frozen variance). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/mpi_util.h"
#include "src/core/error.h"
#include "src/core/log.h"
#include "src/core/timer.h"
#include "src/plan/compress_auto.h"
#include "train_compress.h"
#include "trainer_impl.h"

const char *ax_data_link_name(AxDataLink l) {
  return l == AX_DP_EMULATED   ? "the emulated link"
         : l == AX_DP_MEASURED ? "measured ping-pong; max over ranks"
                               : "shared memory";
}

/* The CaSync algorithms the run times side by side with its plain all-reduce: under
 * --compress auto every one Espresso's flat schemes run (ring, PS, all-gather: AxCasyncAlgo
 * order, so casync[a] is algorithm a's), else the one --compress-sync takes. */
static int probed_algos(const AxTrainer *t, int strategy, AxCasyncAlgo *algos) {
  if (!strategy) {
    algos[0] = (AxCasyncAlgo)t->cfg.compression.compress_sync;
    return 1;
  }
  algos[0] = AX_CASYNC_RING, algos[1] = AX_CASYNC_PS, algos[2] = AX_CASYNC_AG;
  return AX_PROBE_ALGOS;
}

/* The seconds of every measured point of c and of casync[n_casync] into out (back 1: from
 * out into them), in one list: what the ranks agree on, point by point. */
static void measured_seconds(AxCasyncCosts *c, AxSizedTimes *casync, int n_casync, double *out,
                             int back) {
  AxSizedTimes *sets[3 + AX_PROBE_ALGOS] = {&c->enc_at, &c->dec_at, &c->plain_at};
  for (int a = 0; a < n_casync; a++) sets[3 + a] = &casync[a];
  int n = 0;
  for (int s = 0; s < 3 + n_casync; s++)
    for (int i = 0; i < sets[s]->n; i++, n++)
      if (back) sets[s]->seconds[i] = out[n];
      else out[n] = sets[s]->seconds[i];
}

/* Costs every rank agrees on: each profiles its codec, the data-parallel group times the plain
 * all-reduce it runs over its own path, whose per-message cost is the send's (the link's
 * figures alone miss what a message costs on top of them), and CaSync with the codec side by
 * side with it (probed_algos), then the slowest figure of every term wins. Layer-wise,
 * CaSync's time beyond the model's terms is the engine term (ax_casync_engine_from); under
 * --compress auto (`strategy`) Espresso prices its schemes' own (compress_auto.h), from the
 * times kept in casync[AX_PROBE_ALGOS]. */
static int agreed_costs(AxTrainer *t, AxCasyncCosts *c, int strategy, AxSizedTimes *casync) {
  enum { LINES = 8, N = LINES + 2 * AX_SIZED_MAX + (1 + AX_PROBE_ALGOS) * AX_PROBE_SIZES, REPS = 5 };
  AX_TRY(ax_casync_profile_codec(t->codec, 5, c));
  AX_TRY(ax_trainer_link_cost(t, t->grid.data, &c->send));
  AxCasyncAlgo algos[AX_PROBE_ALGOS];
  int n_algos = probed_algos(t, strategy, algos);
  AX_TRY(ax_casync_measure_paths(t->grid.data, &t->grid.comm_cfg,
                                 (AxAllreduceAlgo)t->cfg.grid.allreduce, t->codec, algos,
                                 n_algos, REPS, &c->plain, &c->plain_at, casync));
  double v[N] = {c->send.latency_s, 1.0 / c->send.bytes_per_s, c->enc.latency_s,
                 1.0 / c->enc.bytes_per_s, c->dec.latency_s, 1.0 / c->dec.bytes_per_s,
                 c->plain.latency_s, 1.0 / c->plain.bytes_per_s};
  /* the points' sizes are the same on every rank (the profile's and the probe's) */
  measured_seconds(c, casync, n_algos, v + LINES, 0);
  AX_MPI(MPI_Allreduce(MPI_IN_PLACE, v, N, MPI_DOUBLE, MPI_MAX, t->grid.world));
  c->send = (AxLinearCost){v[0], 1.0 / v[1]};
  c->enc = (AxLinearCost){v[2], 1.0 / v[3]};
  c->dec = (AxLinearCost){v[4], 1.0 / v[5]};
  c->plain = (AxLinearCost){v[6], 1.0 / v[7]};
  measured_seconds(c, casync, n_algos, v + LINES, 1);
  c->engine.n = 0;
  if (t->grid.D < 2) return AX_OK;
  c->send = ax_casync_send_from_plain(&c->plain, t->grid.D);
  if (!strategy && casync[0].n) c->engine = ax_casync_engine_from(c, algos[0], t->grid.D, casync);
  return AX_OK;
}

/* The agreed costs: measured now or, on a resume that keeps the checkpointed run's figures
 * (train_measured.h), those. */
static int run_costs(AxTrainer *t, AxCasyncCosts *c, int strategy, AxSizedTimes *casync) {
  if (!ax_measured_replaying(&t->measured)) AX_TRY(agreed_costs(t, c, strategy, casync));
  AX_TRY(ax_measured_take(&t->measured, c, sizeof *c));
  return ax_measured_take(&t->measured, casync, AX_PROBE_ALGOS * sizeof *casync);
}

/* The profile's encode cost priced at the part's own rank: a codec with a rank (PowerSGD,
 * whose products grow linearly with it) is profiled at the rank ax_codec_cap_rank gives for
 * 128 (casync_cost.h: min(rank, 128); rank=auto at 16), and a part runs at
 * min(rank, rows, cols) (rank=auto: its shape's), so its encode costs part / profiled times
 * the profile's. */
static AxCasyncCosts at_part_rank(const AxCodec *codec, const AxCasyncCosts *c, size_t count) {
  enum { PROFILED_RANK_CAP = 128 };
  AxCasyncCosts k = *c;
  AxCodec *probe;
  int profiled, part = ax_codec_rank_for(codec, count);
  if (!part || ax_codec_cap_rank(codec, PROFILED_RANK_CAP, &probe, &profiled) != AX_OK) {
    ax_error_clear();
    return k;
  }
  ax_codec_free(probe);
  double scale = (double)part / profiled;
  k.enc.latency_s *= scale;
  k.enc.bytes_per_s /= scale;
  for (int i = 0; i < k.enc_at.n; i++) k.enc_at.seconds[i] *= scale;
  return k;
}

AxCasyncChoice ax_compress_decide(const AxCodec *codec, const AxCasyncCosts *costs,
                                  AxCasyncAlgo algo, int ranks, int is_auto, long long min_bytes,
                                  size_t count) {
  double bytes = 4.0 * (double)count;
  /* a linear codec's factors cover the whole part; the others encode segments */
  AxCasyncCosts c = *costs;
  c.ratio = ax_codec_ratio(codec, c.linear ? count : count / (size_t)ranks + 1);
  AxCasyncCosts k = at_part_rank(codec, &c, count);
  AxCasyncChoice ch = ax_casync_choose(&k, algo, ranks, bytes, 0);
  if (!is_auto) {
    ch.compress = ranks > 1 && bytes >= (double)min_bytes;
    ch.parts = 0;
  }
  return ch;
}

int ax_trainer_tensor_ranges(const AxStageLayout *lay, AxTensorRange *out, int cap) {
  int n = 0;
  for (int id = 0; id < AX_N_PARAMS; id++) {
    if (!lay->has[id] || !lay->count[id]) continue;
    int layers = ax_param_is_layer(id) ? lay->l1 - lay->l0 : 1;
    size_t each = lay->count[id] / (size_t)layers, cols = lay->cols[id];
    for (int l = 0; l < layers; l++, n++)
      if (out && n < cap)
        out[n] = (AxTensorRange){lay->offset[id] + (size_t)l * each, each, cols ? cols : each,
                                 ax_param_name(id), ax_param_is_layer(id) ? lay->l0 + l : -1,
                                 lay->replicas[id] != 0};
  }
  return n;
}

int ax_shaped_codec(AxShapedCodecs *cache, const AxCodec *base, size_t cols,
                    const AxCodec **out) {
  const char *spec = ax_codec_spec(base), *at = strstr(spec, "cols=auto");
  *out = base;
  if (!at || !cols) return AX_OK;
  char want[512];
  int len = snprintf(want, sizeof want, "%.*scols=%zu%s", (int)(at - spec), spec, cols,
                     at + strlen("cols=auto"));
  if (len < 0 || (size_t)len >= sizeof want) return AX_FAIL("codec spec too long: %s", spec);
  for (int i = 0; i < cache->n; i++)
    if (!strcmp(ax_codec_spec(cache->codecs[i]), want)) return *out = cache->codecs[i], AX_OK;
  AxCodec **grown = realloc(cache->codecs, ((size_t)cache->n + 1) * sizeof *grown);
  if (!grown) return AX_FAIL("out of memory for the codecs of the tensors");
  cache->codecs = grown;
  AX_TRY(ax_codec_parse(want, &cache->codecs[cache->n]));
  *out = cache->codecs[cache->n++];
  return AX_OK;
}

void ax_shaped_codecs_free(AxShapedCodecs *cache) {
  for (int i = 0; i < cache->n; i++) ax_codec_free(cache->codecs[i]);
  free(cache->codecs);
  *cache = (AxShapedCodecs){0};
}

int ax_compress_cut_parts(const AxOffload *o, const AxStageLayout *lay, AxGradPart **out,
                          int *n) {
  int n_t = ax_trainer_tensor_ranges(lay, NULL, 0);
  AxTensorRange *tr = ax_calloc((size_t)n_t + 1, sizeof *tr);
  if (!tr) return AX_ERR;
  ax_trainer_tensor_ranges(lay, tr, n_t);
  *n = ax_grad_parts_cut(o, tr, n_t, NULL, 0);
  *out = ax_calloc((size_t)*n + 1, sizeof **out);
  if (*out) ax_grad_parts_cut(o, tr, n_t, *out, *n);
  free(tr);
  return *out ? AX_OK : AX_ERR;
}

int ax_compress_policy(const AxTrainConfig *cfg, const AxCodec *codec, int ranks,
                       AxCompressPolicy *pol) {
  *pol = (AxCompressPolicy){.codec = codec, .algo = (AxCasyncAlgo)cfg->compression.compress_sync,
                            .ranks = ranks, .vectors = cfg->compression.compress_vectors};
  AX_TRY(ax_train_compress_min_bytes(cfg, &pol->is_auto, &pol->min_bytes));
  pol->requested = pol->is_auto && ax_train_stages_requested(cfg);
  return AX_OK;
}

int ax_compress_part_is_vector(const AxGradPart *p) {
  return p->cols > 0 && p->hi - p->lo <= p->cols;
}

/* Whether the part's encoding (or factors) is smaller than its values. */
static int part_shrinks(const AxGradPart *p, int ranks) {
  size_t count = p->hi - p->lo;
  const AxCodec *c = p->codec;
  return c && ax_codec_ratio(c, ax_codec_rounds(c) ? count : count / (size_t)ranks + 1) < 1.0;
}

/* The policy's word on top of the cost model or threshold: vectors, a stage request. */
static void apply_policy(const AxCompressPolicy *pol, AxGradPart *p) {
  AxCasyncChoice *ch = &p->choice;
  if (!pol->vectors && ax_compress_part_is_vector(p)) ch->compress = 0;
  else if (pol->requested) ch->compress = pol->ranks > 1 && part_shrinks(p, pol->ranks);
  else return;
  if (pol->is_auto) ch->parts = ch->compress ? ch->cpr_parts : ch->orig_parts;
}

int ax_compress_decide_parts(const AxCompressPolicy *pol, AxShapedCodecs *cache,
                             const AxCasyncCosts *costs, AxGradPart *parts, int n) {
  for (int i = 0; i < n; i++) {
    AX_TRY(ax_shaped_codec(cache, pol->codec, parts[i].cols, &parts[i].codec));
    parts[i].choice = ax_compress_decide(parts[i].codec, costs, pol->algo, pol->ranks,
                                         pol->is_auto, pol->min_bytes,
                                         parts[i].hi - parts[i].lo);
    apply_policy(pol, &parts[i]);
  }
  return AX_OK;
}

/* A stage --compress-stages leaves out keeps no codec: its gradients take exactly the plain
 * path. Every rank profiled first (the costs are agreed over all ranks), so a selected stage
 * decides as it would with every stage compressing. */
static int drop_codec_unless_selected(AxTrainer *t) {
  if (t->grid.stage < ax_train_compressed_stages(&t->cfg, t->grid.P)) return 0;
  ax_codec_free(t->codec);
  t->codec = NULL;
  return 1;
}

int ax_compress_tied_alone(const AxStageLayout *lay, int stages) {
  return stages > 1 && lay->has[AX_P_WTE];
}

int ax_compress_tied_plain(const AxStageLayout *lay, int stages, int selected, int presummed) {
  return ax_compress_tied_alone(lay, stages) && (selected < stages || presummed);
}

void ax_compress_keep_tied_plain(const AxStageLayout *lay, AxGradPart *parts, int n) {
  if (!lay->has[AX_P_WTE]) return;
  size_t lo = lay->offset[AX_P_WTE], hi = lo + lay->count[AX_P_WTE];
  for (int i = 0; i < n; i++)
    if (parts[i].lo >= lo && parts[i].hi <= hi) parts[i].choice.compress = 0;
}

/* How many of the data-parallel ranks share a node, the same figure on every one of them: the
 * fewest on any node holding one (1 when they spread unevenly: then the ranks_per_node that
 * divides them is not one number); and the communicators of the two-level sum (t->two_level,
 * usable when the ranks sit evenly, 2 or more to a node on 2 or more nodes). */
static int data_nodes(AxTrainer *t, int *g) {
  int D = t->grid.D, *node = ax_calloc((size_t)D, sizeof *node);
  if (!node) return AX_ERR;
  int rc = ax_trainer_data_nodes(t, node, g);
  if (rc == AX_OK && D > 1) rc = ax_two_level_new(t->grid.data, node, &t->two_level);
  free(node);
  return rc;
}

/* Tensor parallelism: the ranks of a cell decide alike, each on its own shards of the same
 * sizes, so a tensor they replicate takes the same update on every rank that holds it. What
 * each measured alone becomes the cell's: the slowest message inside a node, the fewest ranks
 * to a node, two levels only where every one of them can. */
static int agree_over_cell(AxTrainer *t, AxAutoCompressInput *in) {
  if (t->grid.cell == MPI_COMM_NULL) return AX_OK;
  double v[3] = {in->intra.latency_s, 1.0 / in->intra.bytes_per_s, in->latency_paid};
  int n[2] = {in->ranks_per_node, in->two_level};
  AX_MPI(MPI_Allreduce(MPI_IN_PLACE, v, 3, MPI_DOUBLE, MPI_MAX, t->grid.cell));
  in->latency_paid = v[2];
  AX_MPI(MPI_Allreduce(MPI_IN_PLACE, n, 2, MPI_INT, MPI_MIN, t->grid.cell));
  in->intra = (AxLinearCost){v[0], 1.0 / v[1]};
  in->ranks_per_node = n[0];
  in->two_level = n[1];
  return AX_OK;
}

/* What Espresso adds to the agreed costs, measured (a message inside a node costs a raw
 * ping-pong when the link is emulated, else what the link measured; the overlap's latency
 * paid), or as the checkpointed run measured them. */
static int auto_costs(AxTrainer *t, AxAutoCompressInput *in) {
  if (!ax_measured_replaying(&t->measured)) {
    if (ax_link_emulating(t->links)) AX_TRY(ax_casync_measure_send(t->grid.data, &in->intra));
    AX_TRY(ax_casync_measure_overlap(t->grid.data, &t->grid.comm_cfg, in->plain, 15,
                                     &in->latency_paid));
    AX_TRY(agree_over_cell(t, in));
  }
  AX_TRY(ax_measured_take(&t->measured, &in->intra, sizeof in->intra));
  AX_TRY(ax_measured_take(&t->measured, &in->latency_paid, sizeof in->latency_paid));
  AX_TRY(ax_measured_take(&t->measured, &in->ranks_per_node, sizeof in->ranks_per_node));
  return ax_measured_take(&t->measured, &in->two_level, sizeof in->two_level);
}

/* When each of the n tensors' gradients is ready in the backward, and the backward's time:
 * probed, or as the checkpointed run probed them. */
static int timeline(AxTrainer *t, const AxTensorRange *tr, int n, double *ready, double *total) {
  if (!ax_measured_replaying(&t->measured))
    AX_TRY(ax_trainer_backward_timeline(t, tr, n, ready, total));
  AX_TRY(ax_measured_take(&t->measured, ready, (size_t)n * sizeof *ready));
  return ax_measured_take(&t->measured, total, sizeof *total);
}

/* --compress auto: Cupcake's groups and Espresso's decision per group (compress_auto.h), from
 * the agreed costs and Espresso's own (auto_costs). */
static int auto_parts(AxTrainer *t, AxGradPart **parts, int *n) {
  const AxStageLayout *lay = ax_stage_layout_of(t->stage);
  AxAutoCompressInput in = {
      .costs = t->compress_costs, .intra = t->compress_costs.send, .ranks = t->grid.D,
      .plain = (AxAllreduceAlgo)t->cfg.grid.allreduce,
      .plain_first = ax_compress_tied_alone(lay, t->grid.P)};
  AX_TRY(ax_train_fusion(&t->cfg, &in.fusion));
  AX_TRY(data_nodes(t, &in.ranks_per_node));
  in.two_level = t->two_level.usable;
  in.first_presummed = ax_trainer_wte_presummed(t);
  in.scheme = t->cfg.compression.compress_scheme;
  memcpy(in.casync_at, t->compress_casync, sizeof in.casync_at);
  AX_TRY(auto_costs(t, &in));
  int n_t = ax_trainer_tensor_ranges(lay, NULL, 0);
  AxTensorRange *tr = ax_calloc((size_t)n_t + 1, sizeof *tr);
  if (!tr) return AX_ERR;
  ax_trainer_tensor_ranges(lay, tr, n_t);
  /* --dp-sync-early: the sum starts in the backward, so Espresso gets its timeline */
  double *ready = ax_trainer_early_on(t) ? ax_calloc((size_t)n_t + 1, sizeof *ready) : NULL;
  int rc = ax_trainer_early_on(t) && !ready ? AX_ERR : AX_OK;
  if (rc == AX_OK && ready) rc = timeline(t, tr, n_t, ready, &in.backward_s);
  in.ready_s = ready;
  if (rc == AX_OK) rc = ax_compress_auto_plan(tr, n_t, t->codec, &in, &t->auto_compress);
  free(ready);
  free(tr);
  if (rc != AX_OK) return rc;
  const AxAutoCompress *a = &t->auto_compress;
  *n = ax_grad_parts_cut(&t->off, a->groups, a->n_groups, NULL, 0);
  *parts = ax_calloc((size_t)*n + 1, sizeof **parts);
  if (!*parts) return AX_ERR;
  ax_grad_parts_cut(&t->off, a->groups, a->n_groups, *parts, *n);
  ax_compress_auto_apply(a, t->grid.D, *parts, *n);
  for (int i = 0; i < *n && rc == AX_OK; i++)
    if ((*parts)[i].choice.compress)
      rc = ax_shaped_codec(&t->shaped, t->codec, (*parts)[i].cols, &(*parts)[i].codec);
  return rc;
}

/* Layer-wise: every part by the HiPress cost model or the --compress-min-bytes threshold,
 * and the policy (vectors, a stage request); with the ranks in one machine's memory the cost
 * model keeps every part plain. */
static int layerwise_parts(AxTrainer *t, AxGradPart **parts, int *n) {
  AX_TRY(ax_compress_cut_parts(&t->off, ax_stage_layout_of(t->stage), parts, n));
  if (t->compress_in_memory) return AX_OK; /* cut: every choice zero, plain */
  AxCompressPolicy pol;
  AX_TRY(ax_compress_policy(&t->cfg, t->codec, t->grid.D, &pol));
  return ax_compress_decide_parts(&pol, &t->shaped, &t->compress_costs, *parts, *n);
}

/* Whether the ranks of a tensor-parallel cell decided every part alike (agree_over_cell; the
 * costs are agreed over all ranks), as a replicated tensor needs. Collective over the cell. */
static int cell_decided_alike(AxTrainer *t, int *alike) {
  *alike = 1;
  if (t->grid.cell == MPI_COMM_NULL) return AX_OK;
  unsigned v[2] = {ax_grad_compress_fingerprint(&t->gc), 0};
  v[1] = ~v[0];
  AX_MPI(MPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_UNSIGNED, MPI_MIN, t->grid.cell));
  *alike = v[0] == ~v[1]; /* the smallest fingerprint is the largest */
  return AX_OK;
}

/* The tied wte's parts on this end (ax_compress_tied_alone/_plain): plain where they must be;
 * layer-wise on every stage, each end decides its copy alone, and both keep it plain unless
 * every holder decided alike (a CRC of the ranges, which are also the codec contexts', and the
 * decisions, compared over the world: the ranks that hold no copy, or one the data-parallel
 * sum leaves out, give the neutral value). Collective over the world when every stage
 * compresses layer-wise. */
static int keep_tied_alike(AxTrainer *t, int strategy, AxGradPart *parts, int n) {
  const AxStageLayout *lay = ax_stage_layout_of(t->stage);
  int P = t->grid.P, selected = ax_train_compressed_stages(&t->cfg, P);
  int presummed = ax_trainer_wte_presummed(t);
  if (P < 2) return AX_OK;
  int alike = !strategy && !ax_compress_tied_plain(lay, P, selected, presummed);
  if (!strategy && selected == P) { /* every rank is here */
    int holder = lay->has[AX_P_WTE] && !presummed;
    size_t lo = lay->offset[AX_P_WTE];
    uint32_t crc = ax_grad_parts_fingerprint(parts, n, lo, lo + lay->count[AX_P_WTE]);
    uint32_t v[2] = {holder ? crc : UINT32_MAX, holder ? ~crc : UINT32_MAX};
    AX_MPI(MPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_UINT32_T, MPI_MIN, t->grid.world));
    alike = alike && v[0] == ~v[1]; /* the smallest CRC is the largest */
  }
  if (!alike) ax_compress_keep_tied_plain(lay, parts, n);
  return AX_OK;
}

/* This stage's codec, costs and per-part decisions (collective where the cost model profiles). */
static int setup_stage_compression(AxTrainer *t) {
  AX_TRY(ax_codec_parse(ax_train_codec_spec(&t->cfg), &t->codec));
  int is_auto, strategy = ax_train_compress_auto(&t->cfg);
  long long min_bytes = 0;
  AX_TRY(ax_train_compress_min_bytes(&t->cfg, &is_auto, &min_bytes));
  AxCasyncCosts costs = {0};
  if (t->grid.D > 1) AX_TRY(ax_trainer_data_link(t, &t->compress_link));
  /* an explicit --compress-stages F is compressed wherever the ranks are */
  t->compress_in_memory = is_auto && !strategy && t->grid.D > 1 &&
                          t->compress_link == AX_DP_MEMORY && !ax_train_stages_requested(&t->cfg);
  t->compress_profiled = (is_auto || strategy) && t->grid.D > 1 && !t->compress_in_memory;
  if (t->compress_profiled) AX_TRY(run_costs(t, &costs, strategy, t->compress_casync));
  t->compress_costs = costs;
  if (drop_codec_unless_selected(t)) return AX_OK;
  AxGradPart *parts = NULL;
  int n = 0;
  int rc = strategy ? auto_parts(t, &parts, &n) : layerwise_parts(t, &parts, &n);
  int kept = keep_tied_alike(t, strategy, parts, n);
  rc = rc == AX_OK ? kept : rc;
  if (rc == AX_OK)
    rc = ax_grad_compress_init(&t->gc, &t->off, parts, n, (AxCasyncAlgo)t->cfg.compression.compress_sync,
                               t->grid.D, (uint64_t)t->cfg.data.seed, &t->grid.comm_cfg,
                               &t->two_level);
  free(parts);
  int alike, agreed = cell_decided_alike(t, &alike);
  if (rc == AX_OK && agreed == AX_OK && !alike)
    return AX_FAIL("the tensor-parallel ranks of stage %d decided their compression "
                   "differently: a tensor they replicate would take different updates",
                   t->grid.stage);
  return rc == AX_OK ? agreed : rc;
}

/* Whether some part of the stage is compressed once the warm-up is over. */
static int stage_compresses(const AxTrainer *t) {
  if (!t->codec) return 0;
  for (int i = 0; i < t->gc.n_parts; i++)
    if (t->gc.parts[i].choice.compress) return 1;
  return 0;
}

/* Whether some stage of the job compresses, and under a codec that carries Adam's momentum
 * (agreed over all ranks: the stages of a row decide apart, DGC's local clipping takes a norm
 * along it, and the tied embedding's copies take the job's settings). */
static int agree_on_stages(AxTrainer *t) {
  int mine = stage_compresses(t), v[3] = {mine, mine && ax_codec_momentum(t->codec) > 0, !mine};
  if (t->have_grid && t->grid.size > 1)
    AX_MPI(MPI_Allreduce(MPI_IN_PLACE, v, 3, MPI_INT, MPI_MAX, t->grid.world));
  t->compress_somewhere = v[0];
  t->momentum_somewhere = v[1];
  t->plain_somewhere = v[2];
  return AX_OK;
}

/* Which parameters take the codec's Adam settings (ax_trainer_adam_beta1,
 * ax_trainer_v_frozen_at; ax_offload_mark_codec): every one of a stage that compresses
 * something, as 1-bit Adam's compression stage and DGC's momentum SGD treat the whole model
 * (the plain parts there keep beta1 0 and the frozen variance too: giving them Adam's own
 * settings measured worse, docs/benchmarks.md, "Adam's settings and the tied embedding"); and
 * on a stage that compresses nothing, the tied embedding's copy where another stage
 * compresses: its two copies, on the first and the last stage, take the job's settings, so
 * they take one update whichever of them compresses. */
static int mark_codec_settings(AxTrainer *t) {
  const AxStageLayout *lay = ax_stage_layout_of(t->stage);
  AxParamSpan span = {0, 0};
  if (stage_compresses(t)) span.hi = t->off.n;
  else if (t->compress_somewhere && t->grid.P > 1 && lay->has[AX_P_WTE])
    span = (AxParamSpan){lay->offset[AX_P_WTE], lay->offset[AX_P_WTE] + lay->count[AX_P_WTE]};
  return span.hi > span.lo ? ax_offload_mark_codec(&t->off, &span, 1) : AX_OK;
}

/* The stage's compression, then what the stages agree on (agree_on_stages). */
int ax_trainer_setup_compress(AxTrainer *t) {
  if (ax_train_compressed_stages(&t->cfg, t->grid.P) == 0) return AX_OK;
  int rc = setup_stage_compression(t);
  if (rc == AX_OK) rc = ax_measured_done(&t->measured); /* a replay took every figure */
  AX_TRY(ax_grid_agree(&t->grid, rc));
  AX_TRY(agree_on_stages(t));
  return mark_codec_settings(t);
}

/* Compression starts this step, after a plain warm-up: a codec that carries the optimizer's
 * first moment starts from Adam's, not from zero (1-bit Adam's compression stage takes its
 * warm-up's momentum; DGC's momentum correction runs through its warm-up). Each rank's codec
 * momentum is its share of it: the ranks' own gradients, each 1 / G_data of the batch's (the
 * loss is the mean over the global batch), sum to the batch's, and so do their momenta (a
 * two-level part: each node's sum, 1 / the nodes); times the loss scale, as the gradients the
 * codec sees carry it. (Compression runs with the optimizer on the host only: Adam's moments
 * are in t->off.) */
static void hand_momentum_to_codec(AxTrainer *t) {
  if (!t->off.m || ax_codec_momentum(t->codec) <= 0) return;
  ax_grad_compress_set_momentum(&t->gc, t->off.m, t->loss_scale.scale);
}

/* Called once or twice a step (--dp-sync-early: again before the sum starts): the hand-over at
 * the first call of the first step after the warm-up, also in a run resumed from the warm-up's
 * last step (its gc starts enabled: the first call's step is what tells). */
void ax_trainer_compress_step(AxTrainer *t, int step) {
  int warmup = t->cfg.compression.warmup_steps, again = t->gc.step == (uint64_t)step;
  t->gc.step = (uint64_t)step;
  t->gc.grad_scale = t->loss_scale.scale;
  t->gc.enabled = step > warmup;
  if (t->codec && !again && warmup > 0 && step == warmup + 1) hand_momentum_to_codec(t);
}

/* Whether some part of the stage is compressed this step. */
static int compresses_now(const AxTrainer *t) { return t->gc.enabled && stage_compresses(t); }

/* 1-bit Adam's frozen variance, on the parameters that take the codec's settings
 * (mark_codec_settings), once some stage compresses (where none compresses anything, as in one
 * machine's memory, the run trains as the uncompressed one). */
int ax_trainer_v_frozen_at(const AxTrainer *t) {
  const AxCompressionOptions *c = &t->cfg.compression;
  return c->freeze_variance && t->gc.enabled && t->compress_somewhere ? c->warmup_steps : 0;
}

/* Whether the job's compressed gradients carry their momentum from the codec (DGC's momentum
 * correction, 1-bit Adam's) this step: then the optimizer must not apply a second one on the
 * parameters that take the codec's settings (mark_codec_settings). */
static int codec_carries_momentum(const AxTrainer *t) {
  return t->gc.enabled && t->momentum_somewhere;
}

int ax_trainer_row_clips_locally(const AxTrainer *t) {
  return t->cfg.compression.local_clip && t->cfg.optim.grad_clip > 0 && t->grid.D > 1 &&
         t->gc.enabled && t->compress_somewhere;
}

int ax_trainer_clips_locally(const AxTrainer *t) {
  return ax_trainer_row_clips_locally(t) && compresses_now(t);
}

void ax_trainer_clip_left_out(const AxTrainer *t, const AxReduceSpec *r, size_t *lo, size_t *hi) {
  const AxStageLayout *lay = ax_stage_layout_of(t->stage);
  *lo = r->summed_lo, *hi = r->summed_hi > r->summed_lo ? r->summed_hi : r->summed_lo;
  if (*hi > *lo || t->grid.P < 2 || !t->plain_somewhere || !lay->has[AX_P_WTE]) return;
  *lo = lay->offset[AX_P_WTE];
  *hi = *lo + lay->count[AX_P_WTE];
}

double ax_trainer_local_clip_threshold(const AxTrainer *t) {
  return t->cfg.optim.grad_clip / sqrt((double)t->grid.D);
}

double ax_trainer_adam_beta1(const AxTrainer *t) {
  return codec_carries_momentum(t) ? 0.0 : t->cfg.optim.beta1;
}

/* "2.1 ms" / "35 us" */
static const char *seconds_text(double s, char *buf, size_t cap) {
  if (!isfinite(s)) snprintf(buf, cap, "-");
  else if (s >= 1e-3) snprintf(buf, cap, "%.3g ms", s * 1e3);
  else snprintf(buf, cap, "%.3g us", s * 1e6);
  return buf;
}

void ax_compress_print_costs(const AxCasyncCosts *k, const char *send_source) {
  char dec[96] = "no decode (a linear codec: the encode is its factors and rebuild)";
  char plain[160] = "", engine[200] = "";
  if (!k->linear)
    snprintf(dec, sizeof dec, "decode and merge %.3g us + bytes / %.3g GB/s",
             k->dec.latency_s * 1e6, k->dec.bytes_per_s / 1e9);
  if (k->plain.bytes_per_s > 0)
    snprintf(plain, sizeof plain, "plain all-reduce measured %.3g us + bytes / %.3g GB/s; a "
             "message of it: ", k->plain.latency_s * 1e6, k->plain.bytes_per_s / 1e9);
  if (k->plain.bytes_per_s > 0 && k->engine.n) {
    int at = snprintf(engine, sizeof engine, "; CaSync's engine (timed, beyond those terms)");
    for (int i = 0; i < k->engine.n && at > 0 && (size_t)at < sizeof engine; i++)
      at += snprintf(engine + at, sizeof engine - (size_t)at, "%s %.3g us at %.0f KB",
                     i ? "," : "", k->engine.seconds[i] * 1e6, k->engine.bytes[i] / 1024);
  }
  ax_log("  costs: %ssend %.3g us + bytes / %.3g GB/s (%s); encode %.3g us + bytes / %.3g "
         "GB/s; %s%s (profiled on this machine, max over ranks; the lines through %d encode, "
         "%d decode and %d all-reduce sizes, each cost read off its sizes)", plain,
         k->send.latency_s * 1e6, k->send.bytes_per_s / 1e9, send_source,
         k->enc.latency_s * 1e6, k->enc.bytes_per_s / 1e9, dec, engine, k->enc_at.n,
         k->dec_at.n, k->plain_at.n);
}

/* A part's line: its figures (the cost model's when is_auto) and the verdict. */
static void print_choice(const char *what, size_t bytes, const AxCasyncChoice *ch, int is_auto,
                         const char *verdict) {
  char a[32], b[32];
  if (!is_auto) {
    ax_log("  %s: %zu bytes: %s", what, bytes, verdict);
    return;
  }
  ax_log("  %s: %zu bytes, T_orig %s, T_cpr %s (best K=%d): %s", what, bytes,
         seconds_text(ch->t_orig, a, sizeof a), seconds_text(ch->t_cpr, b, sizeof b),
         ch->cpr_parts, verdict);
}

enum { PRINT_PARTS = 20 }; /* parts listed in a run's header; the rest are summarized */

/* "qkvw L1 (chunk 0)" / "gap (chunk 2)" */
static void part_label(const AxGradPart *p, char *buf, size_t cap) {
  if (p->layer >= 0)
    snprintf(buf, cap, "%s L%d (chunk %d)", p->name ? p->name : "gap", p->layer, p->chunk);
  else
    snprintf(buf, cap, "%s (chunk %d)", p->name ? p->name : "gap", p->chunk);
}

/* Why a part is summed as it is, where the policy (not the cost model) had a say. */
static const char *verdict(const AxCompressPolicy *pol, const AxGradPart *p, char *buf,
                           size_t cap) {
  int rank = p->codec ? ax_codec_rank_for(p->codec, p->hi - p->lo) : 0;
  char k[16] = "", r[16] = "";
  if (pol->is_auto) snprintf(k, sizeof k, ", K=%d", p->choice.parts);
  if (rank) snprintf(r, sizeof r, ", rank %d", rank);
  if (p->choice.compress)
    snprintf(buf, cap, "compress%s%s%s", k, pol->requested ? " (--compress-stages)" : "", r);
  else if (!pol->vectors && ax_compress_part_is_vector(p))
    snprintf(buf, cap, "plain (1-D: --compress-vectors 0)");
  else if (pol->requested && !part_shrinks(p, pol->ranks))
    snprintf(buf, cap, "plain (the codec does not shrink it)");
  else if (pol->requested)
    snprintf(buf, cap, "plain (the tied wte, summed plain)");
  else
    snprintf(buf, cap, "plain");
  return buf;
}

void ax_compress_print_parts(const AxGradPart *parts, int n, const AxCompressPolicy *pol,
                             const char *prefix, int max_lines) {
  for (int i = 0; i < n && i < max_lines; i++) {
    char what[128], label[96], why[64];
    part_label(&parts[i], label, sizeof label);
    snprintf(what, sizeof what, "%s%s", prefix, label);
    print_choice(what, (parts[i].hi - parts[i].lo) * sizeof(float), &parts[i].choice,
                 pol->is_auto, verdict(pol, &parts[i], why, sizeof why));
  }
  if (n > max_lines) ax_log("  ... and %d more part(s)", n - max_lines);
}

void ax_compress_explain_none(const AxGradPart *parts, int n, const AxCompressPolicy *pol,
                              const char *stage_label) {
  enum { VECTOR, UNSHRUNK, SMALL, PRICED, TIED, KINDS };
  static const char *const why[KINDS] = {
      "1-D (--compress-vectors 0)", "not shrunk by the codec",
      "below --compress-min-bytes",
      ("priced plain by the cost model (T_cpr >= T_orig; --compress-min-bytes N compresses "
       "parts of N bytes or more)"),
      "the tied wte (summed plain)"};
  int count[KINDS] = {0};
  if (pol->ranks < 2) return; /* one rank: nothing to sum */
  for (int i = 0; i < n; i++) {
    const AxGradPart *p = &parts[i];
    if (p->choice.compress) return;
    count[!pol->vectors && ax_compress_part_is_vector(p) ? VECTOR
          : !part_shrinks(p, pol->ranks)                 ? UNSHRUNK
          : !pol->is_auto                                ? SMALL
          : !pol->requested                              ? PRICED
                                                         : TIED]++;
  }
  char text[512];
  size_t len = 0;
  for (int k = 0; k < KINDS; k++)
    if (count[k] && len < sizeof text)
      len += (size_t)snprintf(text + len, sizeof text - len, "%s%d %s", len ? ", " : "",
                              count[k], why[k]);
  ax_log("compression: %s compresses none of its %d part(s): %s", stage_label, n, text);
}

void ax_compress_part_totals(const AxGradPart *parts, int n, int *compressed, size_t *bytes,
                             size_t *compressed_bytes) {
  *compressed = 0;
  *bytes = *compressed_bytes = 0;
  for (int i = 0; i < n; i++) {
    size_t b = (parts[i].hi - parts[i].lo) * sizeof(float);
    *bytes += b;
    if (parts[i].choice.compress) ++*compressed, *compressed_bytes += b;
  }
}

/* Which stages compress (--compress-stages, Optimus-CC §7), when that is not simply all. */
static void print_compress_stages(const AxTrainer *t) {
  int P = t->grid.P, n = ax_train_compressed_stages(&t->cfg, P);
  double f;
  if (!ax_train_compresses(&t->cfg) || ax_train_compress_stage_fraction(&t->cfg, &f) != AX_OK ||
      f >= 1)
    return;
  if (n == 0)
    ax_log("compression: no stage of %d compresses (--compress-stages %s: floor(%g x %d) = 0); "
           "every gradient is summed plain", P, t->cfg.compression.compress_stages, f, P);
  else
    ax_log("compression: stage(s) 0-%d of %d compress their data-parallel gradients "
           "(--compress-stages %s); stage(s) %d-%d and the tied embedding are summed plain",
           n - 1, P, t->cfg.compression.compress_stages, n, P - 1);
}

/* What decided the parts of this run. */
static const char *decided_by(const AxTrainer *t) {
  if (t->grid.D <= 1) return "one data-parallel rank: nothing summed";
  if (t->auto_compress.n_groups > 0) return "--compress auto";
  if (t->compress_in_memory) return "shared memory: plain";
  if (t->compress_profiled && ax_train_stages_requested(&t->cfg))
    return "--compress-stages: every part the codec shrinks";
  return t->compress_profiled ? "cost model" : "--compress-min-bytes";
}

/* The data-parallel ranks share memory: the cost model's one line. */
static void print_in_memory(const AxTrainer *t) {
  ax_log("compression: %s: the %d data-parallel rank(s) share memory (no emulated link between "
         "virtual nodes), where compression does not pay: all %d part(s) of stage %d are summed "
         "plain (--compress-min-bytes N compresses the parts of at least N bytes anyway)",
         ax_codec_spec(t->codec), t->grid.D, t->gc.n_parts, t->grid.stage);
}

void ax_train_print_recipe(const AxTrainConfig *cfg) {
  const AxRecipeApplied *r = &cfg->compression.recipe;
  if (!r->n) return;
  ax_log("compression recipe%s%s%s: the paper's defaults in effect (a flag or codec key given "
         "wins; docs/compression.md, \"Recipes\")", r->codec ? " (" : "", r->codec ? r->codec : "",
         r->codec ? ")" : "");
  for (int i = 0; i < r->n; i++)
    ax_log("  %s %s: %s", r->item[i].what, r->item[i].value, r->item[i].source);
}

void ax_trainer_print_compress(const AxTrainer *t) {
  ax_train_print_recipe(&t->cfg);
  print_compress_stages(t);
  if (!t->codec) return;
  if (t->compress_in_memory) {
    print_in_memory(t);
    return;
  }
  const AxGradCompress *gc = &t->gc;
  int compressed;
  size_t bytes, cbytes;
  ax_compress_part_totals(gc->parts, gc->n_parts, &compressed, &bytes, &cbytes);
  int strategy = t->auto_compress.n_groups > 0;
  AxCompressPolicy pol = {0};
  if (ax_compress_policy(&t->cfg, t->codec, t->grid.D, &pol) != AX_OK) ax_error_clear();
  pol.is_auto = t->compress_profiled && !strategy;
  ax_log("compression: %s over CaSync %s on %d data-parallel rank(s), %s; %d of %d "
         "part(s) (%zu of %zu bytes) in %d chunk(s) of stage %d compressed (%s)%s",
         ax_codec_spec(t->codec), strategy ? "schemes per group" : ax_casync_algo_name(gc->algo),
         t->grid.D, strategy ? "fused groups" : "layer-wise", compressed, gc->n_parts, cbytes,
         bytes, gc->n_chunks, t->grid.stage, decided_by(t),
         t->cfg.compression.warmup_steps ? "; plain during the warm-up steps" : "");
  if (ax_codec_momentum(t->codec) > 0 && compressed)
    ax_log("  the codec carries the momentum (%g, %s): Adam's first moment is off (beta1 0) "
           "while the gradients are compressed", ax_codec_momentum(t->codec),
           strcmp(ax_codec_name(t->codec), "dgc") ? "1-bit Adam's compressed momentum"
                                                  : "DGC's momentum correction");
  if (t->compress_profiled)
    ax_compress_print_costs(&t->compress_costs, ax_data_link_name(t->compress_link));
  if (strategy) {
    ax_compress_auto_print(&t->auto_compress, "  ", PRINT_PARTS);
    return;
  }
  ax_compress_print_parts(gc->parts, gc->n_parts, &pol, "", PRINT_PARTS);
  char label[32];
  snprintf(label, sizeof label, "stage %d", t->grid.stage);
  ax_compress_explain_none(gc->parts, gc->n_parts, &pol, label);
}

void ax_trainer_compress_report(const AxTrainer *t, AxCompressReport *out) {
  *out = (AxCompressReport){0};
  if (!t->codec) return;
  out->codec = ax_codec_spec(t->codec);
  out->decided_by = decided_by(t);
  out->link = t->grid.D > 1 ? ax_data_link_name(t->compress_link) : NULL;
  out->costed = t->compress_profiled;
  out->costs_from = ax_measured_replaying(&t->measured)
                        ? "the checkpointed run, at its start (taken back on --resume)"
                        : "this run, at its start";
  out->costs = t->compress_costs;
  out->strategy = t->auto_compress.n_groups > 0;
  memcpy(out->casync_timed, t->compress_casync, sizeof out->casync_timed);
  out->latency_paid = t->auto_compress.latency_paid;
  out->parts = t->gc.n_parts;
  ax_compress_part_totals(t->gc.parts, t->gc.n_parts, &out->compressed, &out->bytes,
                          &out->compressed_bytes);
}
