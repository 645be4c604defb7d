/* compress_auto.c — Cupcake's fusion, then Espresso's strategy per group; see compress_auto.h. */
#include "compress_auto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/compress/codec.h"
#include "src/core/error.h"
#include "src/core/log.h"
#include "src/core/timer.h"

static const char *const SCHEME_NAMES[AX_ESP_N_SCHEMES] = {"ar-ring", "ar-rhd", "casync-ring",
                                                           "casync-ps", "a2a+ag", "ag"};

/* The link a flat collective's steps cross: the node's own when every rank shares it. */
static AxLinearCost flat_link(const AxAutoCompressInput *in) {
  return in->ranks_per_node >= in->ranks ? in->intra : in->costs.send;
}

static int ranks_per_node(const AxAutoCompressInput *in) {
  int g = in->ranks_per_node;
  return g >= 1 && g <= in->ranks && in->ranks % g == 0 ? g : 1;
}

/* Cupcake's job on t[n], a run of compressible tensors starting at tensor `base`: no backward
 * or forward time (the sum starts after the backward pass), h the codec's encoding, g a CaSync
 * ring of the encoded group. Appends the run's group ends (absolute) to group_end[*n_groups..]
 * and adds its cost, search counts and time to out's. */
static int fuse(const AxTensorRange *t, int base, int n, double ratio,
                const AxAutoCompressInput *in, int *group_end, int *n_groups,
                AxAutoCompress *out) {
  AxFusionTensor *ft = ax_calloc((size_t)n, sizeof *ft);
  if (!ft) return AX_ERR;
  for (int i = 0; i < n; i++)
    ft[i] = (AxFusionTensor){(long long)(t[base + i].count * sizeof(float)), 0};
  AxLinearCost link = flat_link(in);
  double steps = 2.0 * (in->ranks - 1);
  AxFusionJob job = {.tensors = ft, .n = n, .forward_s = 0,
                     .alpha_h = in->costs.enc.latency_s, .beta_h = 1.0 / in->costs.enc.bytes_per_s,
                     .alpha_g = steps * link.latency_s,
                     .beta_g = steps / in->ranks * ratio / link.bytes_per_s};
  AxFusionSpec spec = in->fusion;
  AxFusionStats st = {0};
  int added = 0;
  double cost = 0, t0 = ax_now();
  int rc = ax_fusion_plan(&job, &spec, group_end + *n_groups, &added, &cost, &st);
  out->fusion_s += ax_now() - t0;
  free(ft);
  if (rc != AX_OK) return rc;
  for (int a = *n_groups; a < *n_groups + added; a++) group_end[a] += base;
  *n_groups += added;
  out->fusion_cost_s += cost;
  out->fusion.nodes += st.nodes;
  out->fusion.leaves += st.leaves;
  out->fusion.optimal &= spec.mode != AX_FUSION_AUTO || st.optimal;
  return AX_OK;
}

/* Whether tensor i is summed plain and alone: every tensor on one rank (nothing is sent, and
 * nothing was profiled), the tied wte when in->plain_first, and every vector (LayerNorm
 * weights, biases: a row as long as the tensor). A group mixing vectors with
 * matrices takes one codec scale for both (LayerNorm weights near 1, weights near 0.02): on
 * tiny Shakespeare (tests/mpi_compress_text.sh) 3.1% above the uncompressed loss with vectors
 * fused in, 2.7% with them plain. */
static int kept_plain(const AxTensorRange *t, int i, const AxAutoCompressInput *in) {
  return in->ranks < 2 || (i == 0 && in->plain_first) || t[i].cols >= t[i].count;
}

/* Whether tensor i is fused with no other: a replicated one (grad_compress.h: its group must
 * hold nothing but its own values, alike on every replica). */
static int fused_alone(const AxTensorRange *t, int i, const AxAutoCompressInput *in) {
  return kept_plain(t, i, in) || t[i].replicated;
}

/* The groups' ends: each kept-plain tensor alone, each replicated one a run of its own (to
 * compress or not), each run of the others fused. */
static int plan_groups(const AxTensorRange *t, int n, double ratio, const AxAutoCompressInput *in,
                       int *group_end, int *n_groups, AxAutoCompress *out) {
  *n_groups = 0;
  out->fusion.optimal = 1;
  for (int i = 0; i < n;) {
    if (kept_plain(t, i, in)) {
      group_end[(*n_groups)++] = ++i;
      continue;
    }
    int j = i + 1;
    while (j < n && !fused_alone(t, i, in) && !fused_alone(t, j, in)) j++;
    AX_TRY(fuse(t, i, j - i, ratio, in, group_end, n_groups, out));
    i = j;
  }
  return AX_OK;
}

/* The groups as tensor ranges: each spans its members (consecutive in the flat range). */
static int make_groups(const AxTensorRange *t, const int *group_end, int n_groups,
                       const AxAutoCompressInput *in, AxAutoCompress *out) {
  out->groups = ax_calloc((size_t)n_groups, sizeof *out->groups);
  out->members = ax_calloc((size_t)n_groups, sizeof *out->members);
  out->decision = ax_calloc((size_t)n_groups, sizeof *out->decision);
  out->alone = ax_calloc((size_t)n_groups, sizeof *out->alone);
  out->ready_s = ax_calloc((size_t)n_groups, sizeof *out->ready_s);
  if (!out->groups || !out->members || !out->decision || !out->alone || !out->ready_s)
    return AX_ERR;
  out->n_groups = n_groups;
  out->backward_s = in->ready_s ? in->backward_s : 0;
  for (int a = 0, lo = 0; a < n_groups; lo = group_end[a++]) {
    for (int i = lo; i < group_end[a] && in->ready_s; i++)
      if (in->ready_s[i] > out->ready_s[a]) out->ready_s[a] = in->ready_s[i];
    const AxTensorRange *first = &t[lo], *last = &t[group_end[a] - 1];
    size_t cols = first->cols;
    for (int i = lo; i < group_end[a]; i++)
      if (t[i].cols != cols) cols = 0;
    size_t count = last->offset + last->count - first->offset;
    out->groups[a] = (AxTensorRange){first->offset, count, cols ? cols : count, first->name,
                                     first->layer, first->replicated};
    out->members[a] = group_end[a] - lo;
    out->alone[a] = out->members[a] == 1 && kept_plain(t, lo, in);
  }
  return AX_OK;
}

/* The plain option at `levels` ("flat" or "2l"): the trainer's all-reduce. */
static int plain_option(const AxAutoCompressInput *in, const char *levels) {
  char name[40];
  snprintf(name, sizeof name, "plain/%s/%s", levels,
           in->plain == AX_ALLREDUCE_RHD && in->ranks > 1 ? "ar-rhd" : "ar-ring");
  return ax_espresso_option_find(name);
}

/* Plain with the trainer's all-reduce, and the codec under every flat scheme CaSync runs:
 * ring, PS, all-to-all + all-gather (the PS with whole segments) and all-gather, on the CPU:
 * the trainer sums the gradients from the host copy, so its codecs run on the CPU threads and
 * there is no GPU codec engine to place them on (compress_auto.h). */
static uint32_t runnable_options(const AxAutoCompressInput *in) {
  const char *schemes[] = {"casync-ring", "casync-ps", "a2a+ag", "ag"};
  const char *levels[] = {"flat", "2l"};
  uint32_t mask = 0;
  for (int l = 0; l < (in->two_level ? 2 : 1); l++) {
    mask |= 1u << plain_option(in, levels[l]);
    for (int i = 0; i < 4; i++) {
      char name[40];
      snprintf(name, sizeof name, "cpu/%s/%s", levels[l], schemes[i]);
      mask |= 1u << ax_espresso_option_find(name);
    }
  }
  return mask;
}

/* --compress-scheme OPTION: every tensor of p takes it, and out[] gets the timelines. */
static int forced(const AxEspressoProblem *p, const char *name, AxEspressoDecision *out,
                  AxEspressoSummary *sum) {
  int o = ax_espresso_option_find(name);
  if (o < 0) return AX_FAIL("--compress-scheme %s: no such option", name);
  if (ax_espresso_option(o)->place == AX_ESP_GPU)
    return AX_FAIL("--compress-scheme %s: the trainer has no GPU codec engine (it sums the "
                   "gradients from their host copy, its codecs run on the CPU threads): take "
                   "its cpu/ twin", name);
  if (ax_espresso_option(o)->levels == AX_ESP_TWO_LEVEL_INTRA)
    return AX_FAIL("--compress-scheme %s: the 2l+intra schemes are in Espresso's model only "
                   "(the gradient sum runs the flat and 2l ones)", name);
  if (!ax_espresso_option_applies(p, o))
    return AX_FAIL("--compress-scheme %s does not apply to %d data-parallel rank(s), %d to a "
                   "node (the plain options follow --allreduce; two-level ones need 2 or more "
                   "ranks on each of 2 or more nodes, as many on every node)", name, p->ranks,
                   p->ranks_per_node);
  int *choices = ax_calloc((size_t)p->n + 1, sizeof *choices);
  if (!choices) return AX_ERR;
  int rc = ax_espresso_nothing(p, choices);
  if (rc == AX_OK) rc = ax_espresso_iteration_time(p, choices, &sum->nothing_s);
  for (int i = 0; i < p->n; i++) choices[i] = o;
  if (rc == AX_OK) rc = ax_espresso_timeline(p, choices, out, &sum->iteration_s);
  sum->greedy_s = sum->iteration_s;
  sum->compressed = ax_espresso_option(o)->place != AX_ESP_PLAIN ? p->n : 0;
  free(choices);
  return rc;
}

/* The CaSync algorithm whose start-up timing stands for each flat compressed scheme alone
 * (espresso.h: its stages are scaled to it): a2a+ag is the PS with whole segments, timed as
 * the PS in pieces. */
static const struct {
  AxEspressoScheme scheme;
  AxCasyncAlgo algo;
} TIMED_AS[] = {{AX_ESP_CASYNC_RING, AX_CASYNC_RING},
                {AX_ESP_CASYNC_PS, AX_CASYNC_PS},
                {AX_ESP_A2A_AG, AX_CASYNC_PS},
                {AX_ESP_AG, AX_CASYNC_AG}};
enum { N_TIMED = sizeof TIMED_AS / sizeof TIMED_AS[0] };

/* The problem of n groups of the given bytes and computation before each (compress_auto.h):
 * the messages, encodes and decodes read off their measured points, the compressed schemes
 * scaled to CaSync as timed. */
static AxEspressoProblem problem_of(const AxAutoCompressInput *in, double ratio, int n,
                                    const double *bytes, const double *compute) {
  const AxCasyncCosts *c = &in->costs;
  AxEspressoCodecCost codec = {c->enc, c->dec, c->enc_at, c->dec_at};
  AxEspressoProblem p = {.n = n, .bytes = bytes, .compute_s = compute, .ranks = in->ranks,
                         .ranks_per_node = ranks_per_node(in), .intra = in->intra,
                         .inter = c->send,
                         .inter_at = ax_casync_send_points(&c->plain_at, in->ranks),
                         .gpu = codec, .cpu = codec, .ratio = ratio,
                         .latency_paid = in->latency_paid,
                         .allowed = runnable_options(in), .cpu_only = 1};
  for (int i = 0; i < N_TIMED; i++) p.timed[TIMED_AS[i].scheme] = in->casync_at[TIMED_AS[i].algo];
  return p;
}

/* which[n] (group indices, ascending) sorted stably by when the groups are ready. */
static void by_ready(const AxAutoCompress *out, int *which, int n) {
  for (int i = 1; i < n; i++) /* insertion: stable, and n is a stage's groups */
    for (int j = i; j > 0 && out->ready_s[which[j]] < out->ready_s[which[j - 1]]; j--) {
      int x = which[j];
      which[j] = which[j - 1], which[j - 1] = x;
    }
}

/* Espresso's tensors: the groups which[n] in the order they become ready, their bytes, and the
 * backward's time before each since the previous one (all 0 without a timeline). */
static void timeline_of(const AxAutoCompress *out, int *which, int n, double *bytes,
                        double *compute) {
  by_ready(out, which, n);
  for (int k = 0; k < n; k++) {
    bytes[k] = 4.0 * (double)out->groups[which[k]].count;
    compute[k] = out->ready_s[which[k]] - (k ? out->ready_s[which[k - 1]] : 0);
  }
}

static int plain_flat(int option) {
  const AxEspressoOption *o = ax_espresso_option(option);
  return o->place == AX_ESP_PLAIN && o->levels == AX_ESP_FLAT;
}

/* All at once (no timeline), the gradient sum runs each maximal run of adjacent flat plain
 * groups as one all-reduce (offload/interleave.c: a chunk's plain parts), so the model does
 * too: such a run becomes one tensor of their bytes. Returns the tensors left. */
static int merge_plain_runs(int n, double *bytes, int *options) {
  int m = 0;
  for (int k = 0; k < n; k++) {
    if (m > 0 && plain_flat(options[k]) && plain_flat(options[m - 1])) {
      bytes[m - 1] += bytes[k];
      continue;
    }
    bytes[m] = bytes[k], options[m++] = options[k];
  }
  return m;
}

/* The step's predicted sync over every group the gradient sum runs, the kept-plain ones
 * included (in the order they become ready, on the same links; all at once, the adjacent plain
 * ones as one all-reduce), from the backward's end, into out->sync_s; a presummed first tensor
 * is not in it. */
static int whole_sync(double ratio, const AxAutoCompressInput *in, AxAutoCompress *out) {
  int n = out->n_groups, *options = ax_calloc((size_t)n, sizeof *options);
  int *which = ax_calloc((size_t)n, sizeof *which);
  double *bytes = ax_calloc((size_t)n, sizeof *bytes), *compute = ax_calloc((size_t)n, sizeof *compute);
  int rc = options && which && bytes && compute ? AX_OK : AX_ERR, summed = 0;
  /* a presummed first tensor is alone in group 0 (plain_first) and not in this sum */
  int skip = in->first_presummed && in->plain_first ? 1 : 0;
  for (int a = skip; a < out->n_groups && rc == AX_OK; a++) which[summed++] = a;
  n = summed;
  if (rc == AX_OK) timeline_of(out, which, n, bytes, compute);
  for (int k = 0; k < n && rc == AX_OK; k++) options[k] = out->decision[which[k]].option;
  if (rc == AX_OK && out->backward_s == 0) n = merge_plain_runs(n, bytes, options);
  AxEspressoProblem p = problem_of(in, ratio, n, bytes, compute);
  double f = 0;
  if (rc == AX_OK && in->ranks > 1 && n > 0) rc = ax_espresso_iteration_time(&p, options, &f);
  out->sync_s = f > out->backward_s ? f - out->backward_s : 0;
  free(options);
  free(which);
  free(bytes);
  free(compute);
  return rc;
}

/* What each timed scheme's stages were scaled by at its timed sizes, into out->timed_factor. */
static void timed_factors(const AxEspressoProblem *p, AxAutoCompress *out) {
  for (int i = 0; i < N_TIMED; i++) {
    AxEspressoScheme sc = TIMED_AS[i].scheme;
    char name[40];
    snprintf(name, sizeof name, "cpu/flat/%s", SCHEME_NAMES[sc]);
    int o = ax_espresso_option_find(name);
    AxSizedTimes *f = &out->timed_factor[sc];
    *f = p->timed[sc];
    for (int j = 0; j < f->n; j++) f->seconds[j] = ax_espresso_timed_factor(p, o, f->bytes[j]);
  }
}

/* Espresso on the groups not kept plain (in the order they become ready); the others take the
 * plain option. */
static int decide(double ratio, const AxAutoCompressInput *in, AxAutoCompress *out) {
  int n = 0, *which = ax_calloc((size_t)out->n_groups, sizeof *which);
  double *bytes = ax_calloc((size_t)out->n_groups, sizeof *bytes);
  double *compute = ax_calloc((size_t)out->n_groups, sizeof *compute);
  AxEspressoDecision *dec = ax_calloc((size_t)out->n_groups, sizeof *dec);
  int rc = which && bytes && compute && dec ? AX_OK : AX_ERR;
  for (int a = 0; a < out->n_groups && rc == AX_OK; a++) {
    out->decision[a] = (AxEspressoDecision){.option = plain_option(in, "flat")};
    if (!out->alone[a]) which[n++] = a;
  }
  if (rc == AX_OK) timeline_of(out, which, n, bytes, compute);
  AxEspressoProblem p = problem_of(in, ratio, n, bytes, compute);
  timed_factors(&p, out);
  out->latency_paid = in->latency_paid;
  int auto_scheme = !in->scheme || !strcmp(in->scheme, "auto");
  if (rc == AX_OK && n > 0)
    rc = auto_scheme ? ax_espresso_decide(&p, dec, &out->espresso)
                     : forced(&p, in->scheme, dec, &out->espresso);
  for (int k = 0; k < n && rc == AX_OK; k++) out->decision[which[k]] = dec[k];
  out->decide_s = out->espresso.decide_s;
  free(which);
  free(bytes);
  free(compute);
  free(dec);
  return rc == AX_OK ? whole_sync(ratio, in, out) : rc;
}

int ax_compress_auto_plan(const AxTensorRange *t, int n, const AxCodec *codec,
                          const AxAutoCompressInput *in, AxAutoCompress *out) {
  *out = (AxAutoCompress){0};
  if (n < 1) return AX_FAIL("--compress auto: the stage has no tensors");
  size_t total = 0;
  int matrices = 0;
  for (int i = 0; i < n; i++)
    if (!kept_plain(t, i, in)) total += t[i].count, matrices++;
  /* the ratio of a typical tensor's segment (a codec's overhead is per message) */
  double ratio = ax_codec_ratio(codec, total / (size_t)(matrices ? matrices : 1) /
                                           (size_t)in->ranks + 1);
  int *group_end = ax_calloc((size_t)n, sizeof *group_end), n_groups = 0;
  if (!group_end) return AX_ERR;
  int rc = plan_groups(t, n, ratio, in, group_end, &n_groups, out);
  if (rc == AX_OK) rc = make_groups(t, group_end, n_groups, in, out);
  if (rc == AX_OK) rc = decide(ratio, in, out);
  free(group_end);
  if (rc != AX_OK) ax_compress_auto_free(out);
  return rc;
}

void ax_compress_auto_free(AxAutoCompress *a) {
  free(a->groups);
  free(a->members);
  free(a->decision);
  free(a->alone);
  free(a->ready_s);
  *a = (AxAutoCompress){0};
}

/* The CaSync algorithm that runs a compressed scheme: a2a+ag is the PS's data movement with
 * one message per segment (mpi/casync/casync.h). */
static void casync_scheme(AxEspressoScheme scheme, AxCasyncChoice *ch) {
  ch->algo = scheme == AX_ESP_CASYNC_PS || scheme == AX_ESP_A2A_AG ? AX_CASYNC_PS
             : scheme == AX_ESP_AG                                ? AX_CASYNC_AG
                                                                  : AX_CASYNC_RING;
  ch->whole_segments = scheme == AX_ESP_A2A_AG;
}

void ax_compress_auto_apply(const AxAutoCompress *a, int ranks, AxGradPart *parts, int n) {
  int g = 0;
  for (int i = 0; i < n; i++) {
    AxGradPart *p = &parts[i];
    while (g < a->n_groups && a->groups[g].offset + a->groups[g].count <= p->lo) g++;
    int inside = g < a->n_groups && a->groups[g].offset <= p->lo;
    const AxEspressoOption *o = inside ? ax_espresso_option(a->decision[g].option) : NULL;
    int compress = o && o->place != AX_ESP_PLAIN;
    /* parts 0: CaSync's own pieces (Espresso's pipelined schemes) or, with whole segments,
     * one per segment; no SeCoPa K */
    p->choice = (AxCasyncChoice){.compress = compress, .parts = 0, .orig_parts = ranks,
                                 .cpr_parts = ranks,
                                 .two_level = o && o->levels == AX_ESP_TWO_LEVEL};
    if (compress) casync_scheme(o->scheme, &p->choice);
  }
}

/* "12.3 ms" */
static double ms(double s) { return s * 1e3; }

/* One line of what Espresso priced from start-up measurements: the latency a queued
 * operation pays, and what each timed scheme's stages were scaled by ("casync-ring x0.71,
 * ...; ag ..."). */
static void print_measured(const AxAutoCompress *a, const char *prefix) {
  char line[640] = "";
  int at = 0;
  for (int s = 0; s < AX_ESP_N_SCHEMES; s++) {
    const AxSizedTimes *f = &a->timed_factor[s];
    for (int i = 0; i < f->n && at >= 0 && (size_t)at < sizeof line; i++)
      at += i ? snprintf(line + at, sizeof line - (size_t)at, " %.2f", f->seconds[i])
              : snprintf(line + at, sizeof line - (size_t)at, "%s%s x%.2f", at ? "; " : "",
                         SCHEME_NAMES[s], f->seconds[i]);
  }
  if (at > 0)
    ax_log("%smeasured at start-up: a queued operation pays %.0f%% of its latency (4 plain "
           "all-reduces of 1 KB started together against one); each compressed scheme's "
           "stages scaled to CaSync timed alone, at 1, 4, 16, 64, 256 KB, 1, 4 MB: %s", prefix,
           100 * a->latency_paid, line);
}

void ax_compress_auto_print(const AxAutoCompress *a, const char *prefix, int max_lines) {
  const AxFusionStats *f = &a->fusion;
  const AxEspressoSummary *e = &a->espresso;
  int tensors = 0;
  for (int g = 0; g < a->n_groups; g++) tensors += a->members[g];
  ax_log("%sfusion (Cupcake): %d tensor(s) in %d group(s), f %.3f ms, %s in %.3f s (%lld "
         "node(s))", prefix, tensors, a->n_groups, ms(a->fusion_cost_s),
         f->optimal ? "optimal" : "best found", a->fusion_s, f->nodes);
  if (a->backward_s > 0)
    ax_log("%sbackward timeline (measured on the stage): %.3f ms; the sum starts during it: "
           "the searched groups' timelines below run from its start", prefix, ms(a->backward_s));
  ax_log("%sstrategy (Espresso): %d group(s) compressed, %d removed; sync predicted %.3f ms "
         "for every group after the backward (the searched ones alone end at %.3f ms, "
         "compress-nothing %.3f ms); decided in %.3f s (%lld timeline(s))", prefix,
         e->compressed, e->removed, ms(a->sync_s), ms(e->iteration_s), ms(e->nothing_s),
         a->decide_s, e->evaluations);
  print_measured(a, prefix);
  for (int g = 0; g < a->n_groups && g < max_lines; g++) {
    const AxTensorRange *r = &a->groups[g];
    const AxEspressoDecision *d = &a->decision[g];
    char label[96];
    if (r->layer >= 0)
      snprintf(label, sizeof label, "%s L%d", r->name ? r->name : "?", r->layer);
    else
      snprintf(label, sizeof label, "%s", r->name ? r->name : "?");
    char when[96] = ", kept plain (outside the model)";
    if (!a->alone[g])
      snprintf(when, sizeof when, "%s, synced at %.3f ms (alone %.3f ms)",
               d->removed ? " (removed)" : "", ms(d->done_s), ms(d->alone_s));
    ax_log("%s  group %d: %s%s (%d tensor(s), %zu bytes): %s%s", prefix, g, label,
           a->members[g] > 1 ? " ..." : "", a->members[g], r->count * sizeof(float),
           ax_espresso_option(d->option)->name, when);
  }
  if (a->n_groups > max_lines) ax_log("%s  ... and %d more group(s)", prefix,
                                      a->n_groups - max_lines);
}
