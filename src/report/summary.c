/* summary.c — the figures of the end-of-run summary and its JSON line (no MPI here; the
 * collective part is summary_run.c); see summary.h and docs/summary.md. */
#include "summary.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "src/backend/peak.h"
#include "src/core/error.h"
#include "src/core/fileio.h"
#include "src/core/log.h"

void ax_summary_figures(AxFigures *f, const AxGptConfig *m, long long batch, int seq,
                        double batch_ms, int ranks, double peak_tflops_per_rank, int recompute) {
  f->batch_s = batch_ms / 1e3;
  f->tokens_per_step = (double)batch * seq;
  f->tokens_per_s = f->tokens_per_step / f->batch_s;
  f->recompute = recompute != 0;
  f->flops_per_step = ax_gpt_train_flops(m, batch, seq, f->recompute);
  f->flops_per_s = f->flops_per_step / f->batch_s;
  f->peak_flops_per_s = peak_tflops_per_rank * 1e12 * ranks;
  f->percent_of_peak = 100.0 * f->flops_per_s / f->peak_flops_per_s;
  f->above_peak = f->percent_of_peak > 100.0;
  f->paper_flops_per_step = ax_gpt_train_flops(m, batch, seq, 1);
  f->paper_flops_per_s = f->paper_flops_per_step / f->batch_s;
  f->paper_percent_of_peak = 100.0 * f->paper_flops_per_s / f->peak_flops_per_s;
  f->days = AX_SUMMARY_TOKENS * f->batch_s / f->tokens_per_step / 86400.0;
}

void ax_summary_timing(AxTiming *t, const AxMetrics *m, int skip, int requested) {
  /* a run with no step after the warm-up is timed over every step it has */
  const AxStepTimes *w = m->timed.n ? &m->timed : &m->all;
  memset(t, 0, sizeof *t);
  t->skip = m->timed.n ? skip : 0;
  t->requested = requested;
  t->first = w->first;
  t->last = w->last;
  t->n = w->n;
  t->mean_ms = t->n ? w->sum_ms / t->n : NAN;
  t->min_ms = t->n ? w->min_ms : NAN;
  t->max_ms = t->n ? w->max_ms : NAN;
}

int ax_summary_peak_lookup(AxPeakInfo *p, double peak_tflops_option, const char *device,
                           const char *gpu_name) {
  p->tflops_per_rank = NAN;
  p->shapes[0] = p->best_shape[0] = 0;
  if (peak_tflops_option > 0) {
    p->tflops_per_rank = peak_tflops_option;
    snprintf(p->source, sizeof p->source, "--peak-tflops");
    return 1;
  }
  if (strcmp(device, "cpu") == 0) {
    snprintf(p->source, sizeof p->source, "not measured");
    return 0;
  }
  double table = ax_peak_gpu_table(gpu_name);
  if (table > 0) {
    p->tflops_per_rank = table;
    snprintf(p->source, sizeof p->source, "table: %s, dense fp16/bf16 peak", gpu_name);
    return 1;
  }
  snprintf(p->source, sizeof p->source, "unknown GPU '%s' (give --peak-tflops)",
           gpu_name && *gpu_name ? gpu_name : "none found");
  return 0;
}

/* ------------------------------------------------------------------------------ JSON */

/* One option as the JSON type its table entry has. */
static void option_json(AxJsonW *j, const AxOption *o, const void *cfg) {
  char buf[256];
  const char *text = ax_options_value_text(o, cfg, buf, sizeof buf);
  switch (o->type) {
  case AX_OPT_INT:
  case AX_OPT_LONG: ax_jsonw_int(j, o->name, strtoll(text, NULL, 10)); break;
  case AX_OPT_FLOAT: ax_jsonw_num(j, o->name, strtod(text, NULL)); break;
  case AX_OPT_FLAG: ax_jsonw_bool(j, o->name, strcmp(text, "0") != 0); break;
  case AX_OPT_STRING: ax_jsonw_str(j, o->name, *text ? text : NULL); break;
  case AX_OPT_CHOICE: ax_jsonw_str(j, o->name, text); break;
  }
}

static void config_json(AxJsonW *j, const AxSummary *s) {
  ax_jsonw_object(j, "config");
  for (int i = 0; i < s->options->n_opts; i++) option_json(j, &s->options->opts[i], s->cfg);
  ax_jsonw_end(j);
}

/* Every default a compression recipe set, with its source (null: no recipe applied). */
static void recipe_json(AxJsonW *j, const AxRecipeApplied *r) {
  if (!r->n) {
    ax_jsonw_null(j, "recipe");
    return;
  }
  ax_jsonw_object(j, "recipe");
  ax_jsonw_str(j, "codec", r->codec);
  ax_jsonw_array(j, "defaults");
  for (int i = 0; i < r->n; i++) {
    ax_jsonw_object(j, NULL);
    ax_jsonw_str(j, "option", r->item[i].what);
    ax_jsonw_str(j, "value", r->item[i].value);
    ax_jsonw_str(j, "source", r->item[i].source);
    ax_jsonw_end(j);
  }
  ax_jsonw_end(j);
  ax_jsonw_end(j);
}

static void model_json(AxJsonW *j, const AxSummary *s) {
  ax_jsonw_object(j, "model");
  ax_jsonw_str(j, "preset", s->preset);
  ax_jsonw_int(j, "layers", s->model.layers);
  ax_jsonw_int(j, "hidden", s->model.channels);
  ax_jsonw_int(j, "heads", s->model.heads);
  ax_jsonw_int(j, "max_seq", s->model.max_seq);
  ax_jsonw_int(j, "vocab", s->model.vocab);
  ax_jsonw_int(j, "padded_vocab", s->model.padded_vocab);
  ax_jsonw_int(j, "params", (long long)ax_gpt_num_params(&s->model));
  ax_jsonw_end(j);
}

/* run.resumed: null, or where the state came from and what became of the compression state. */
static void resumed_json(AxJsonW *j, const AxResumeReport *r) {
  static const char *const FROM[] = {NULL, "file", "memory"};
  static const char *const CODEC[] = {NULL, "restored", "restarted"};
  if (r->from == AX_RESUMED_NONE) {
    ax_jsonw_null(j, "resumed");
    return;
  }
  ax_jsonw_object(j, "resumed");
  ax_jsonw_str(j, "from", FROM[r->from]);
  ax_jsonw_int(j, "step", r->step);
  if (r->codec_state == AX_CODEC_STATE_NONE) ax_jsonw_null(j, "compression_state");
  else ax_jsonw_str(j, "compression_state", CODEC[r->codec_state]);
  ax_jsonw_end(j);
}

static void run_json(AxJsonW *j, const AxSummary *s) {
  ax_jsonw_object(j, "run");
  ax_jsonw_int(j, "ranks", s->ranks);
  ax_jsonw_int(j, "g_inter", s->g_inter);
  ax_jsonw_int(j, "g_data", s->g_data);
  ax_jsonw_str(j, "device", s->device);
  ax_jsonw_str(j, "host", s->host);
  ax_jsonw_int(j, "steps", s->steps_run);
  ax_jsonw_num(j, "final_loss", s->final_loss);
  ax_jsonw_num(j, "final_val_loss", s->final_val_loss);
  ax_jsonw_int(j, "val_batches", s->val_batches);
  ax_jsonw_num(j, "loss_scale", s->loss_scale);
  ax_jsonw_int(j, "skipped_steps", s->skipped_steps);
  if (s->replicas_differ < 0) ax_jsonw_null(j, "replicas_identical");
  else ax_jsonw_bool(j, "replicas_identical", s->replicas_differ == 0);
  if (s->tied_differ < 0) ax_jsonw_null(j, "tied_copies_identical");
  else ax_jsonw_bool(j, "tied_copies_identical", s->tied_differ == 0);
  resumed_json(j, &s->resumed);
  ax_jsonw_end(j);
}

static void timing_json(AxJsonW *j, const AxTiming *t) {
  ax_jsonw_object(j, "timing");
  ax_jsonw_int(j, "skip", t->skip);
  ax_jsonw_int(j, "steps_requested", t->requested);
  ax_jsonw_int(j, "steps_used", t->n);
  if (t->n) {
    ax_jsonw_int(j, "first_step", t->first);
    ax_jsonw_int(j, "last_step", t->last);
  } else {
    ax_jsonw_null(j, "first_step");
    ax_jsonw_null(j, "last_step");
  }
  ax_jsonw_bool(j, "complete", t->n == t->requested);
  ax_jsonw_num(j, "batch_time_s", t->mean_ms / 1e3);
  ax_jsonw_num(j, "batch_time_min_s", t->min_ms / 1e3);
  ax_jsonw_num(j, "batch_time_max_s", t->max_ms / 1e3);
  ax_jsonw_str(j, "over_ranks", "max of the per-rank means");
  ax_jsonw_end(j);
}

/* The headline counts executed FLOPs; the paper's bound follows under its own name. */
static void throughput_json(AxJsonW *j, const AxSummary *s) {
  const AxFigures *f = &s->fig;
  ax_jsonw_object(j, "throughput");
  ax_jsonw_num(j, "tokens_per_step", f->tokens_per_step);
  ax_jsonw_num(j, "tokens_per_s", f->tokens_per_s);
  ax_jsonw_str(j, "flops_counted", f->recompute ? "executed, with the recompute of activation "
                                                  "checkpointing" : "executed");
  ax_jsonw_str(j, "flops_formula", f->recompute ? AX_SUMMARY_FLOPS_96 : AX_SUMMARY_FLOPS_72);
  ax_jsonw_num(j, "flops_per_step", f->flops_per_step);
  ax_jsonw_num(j, "flops_per_s", f->flops_per_s);
  ax_jsonw_num(j, "tflops", f->flops_per_s / 1e12);
  ax_jsonw_num(j, "tflops_per_rank", f->flops_per_s / 1e12 / s->ranks);
  ax_jsonw_str(j, "paper_flops_formula", AX_SUMMARY_FLOPS_96);
  ax_jsonw_num(j, "paper_flops_per_step", f->paper_flops_per_step);
  ax_jsonw_num(j, "paper_flops_per_s", f->paper_flops_per_s);
  ax_jsonw_num(j, "paper_tflops", f->paper_flops_per_s / 1e12);
  ax_jsonw_end(j);
}

static void peak_json(AxJsonW *j, const AxSummary *s) {
  ax_jsonw_object(j, "peak");
  ax_jsonw_num(j, "tflops_per_rank", s->peak.tflops_per_rank);
  ax_jsonw_num(j, "tflops_total", s->fig.peak_flops_per_s / 1e12);
  ax_jsonw_str(j, "source", s->peak.source);
  ax_jsonw_str(j, "shapes", s->peak.shapes[0] ? s->peak.shapes : NULL);
  ax_jsonw_str(j, "best_shape", s->peak.best_shape[0] ? s->peak.best_shape : NULL);
  ax_jsonw_num(j, "percent_of_peak", s->fig.percent_of_peak);
  ax_jsonw_bool(j, "above_peak", s->fig.above_peak);
  ax_jsonw_num(j, "paper_percent_of_peak", s->fig.paper_percent_of_peak);
  ax_jsonw_end(j);
  ax_jsonw_object(j, "training_time");
  ax_jsonw_num(j, "tokens", AX_SUMMARY_TOKENS);
  ax_jsonw_num(j, "days", s->fig.days);
  ax_jsonw_end(j);
}

/* [{bytes, seconds}, ...] of measured (or derived) points; [] where there are none. */
static void sized_times_json(AxJsonW *j, const char *key, const AxSizedTimes *at) {
  ax_jsonw_array(j, key);
  for (int i = 0; i < at->n; i++) {
    ax_jsonw_object(j, NULL);
    ax_jsonw_num(j, "bytes", at->bytes[i]);
    ax_jsonw_num(j, "seconds", at->seconds[i]);
    ax_jsonw_end(j);
  }
  ax_jsonw_end(j);
}

/* A cost's line, and the measured points it is read off (at NULL: a line alone). */
static void linear_cost_json(AxJsonW *j, const char *key, const AxLinearCost *c,
                             const AxSizedTimes *at) {
  ax_jsonw_object(j, key);
  ax_jsonw_num(j, "latency_s", c->latency_s);
  ax_jsonw_num(j, "bytes_per_s", c->bytes_per_s);
  if (at) sized_times_json(j, "measured", at);
  ax_jsonw_end(j);
}

/* Under --compress auto, what Espresso priced from start-up measurements beyond the costs:
 * CaSync alone under each algorithm, and the share of its latency a queued operation pays. */
static void espresso_terms_json(AxJsonW *j, const AxCompressReport *r) {
  static const char *const ALGOS[AX_PROBE_ALGOS] = {"ring", "ps", "ag"};
  ax_jsonw_object(j, "casync_timed");
  for (int a = 0; a < AX_PROBE_ALGOS; a++) sized_times_json(j, ALGOS[a], &r->casync_timed[a]);
  ax_jsonw_end(j);
  ax_jsonw_num(j, "queued_latency_paid", r->latency_paid);
}

/* The gradient compression: what ran (the codec, the recipe's warm-up and frozen variance,
 * vectors, stages, the recipe's defaults), what decided rank 0's stage's parts, the costs the
 * cost model used (agreed by every rank), and the parts. null: the run compresses nothing. */
static void compression_json(AxJsonW *j, const AxCompressReport *r,
                             const AxCompressionOptions *o) {
  if (!r->codec && (!o || !o->codec_spec[0])) {
    ax_jsonw_null(j, "compression");
    return;
  }
  ax_jsonw_object(j, "compression");
  ax_jsonw_str(j, "codec", r->codec ? r->codec : o->codec_spec);
  ax_jsonw_str(j, "decided_by", r->decided_by);
  ax_jsonw_str(j, "link", r->link);
  if (r->costed) {
    ax_jsonw_object(j, "costs");
    ax_jsonw_str(j, "measured_by", r->costs_from);
    if (r->costs.plain.bytes_per_s > 0) {
      linear_cost_json(j, "plain_allreduce", &r->costs.plain, &r->costs.plain_at);
      sized_times_json(j, "casync_engine", &r->costs.engine); /* [] where not timed */
    }
    linear_cost_json(j, "send", &r->costs.send, NULL);
    linear_cost_json(j, "encode", &r->costs.enc, &r->costs.enc_at);
    linear_cost_json(j, "decode", &r->costs.dec, &r->costs.dec_at);
    ax_jsonw_num(j, "ratio", r->costs.ratio);
    if (r->strategy) espresso_terms_json(j, r);
    ax_jsonw_end(j);
  } else {
    ax_jsonw_null(j, "costs");
  }
  ax_jsonw_int(j, "parts", r->parts);
  ax_jsonw_int(j, "parts_compressed", r->compressed);
  ax_jsonw_int(j, "bytes", (long long)r->bytes);
  ax_jsonw_int(j, "bytes_compressed", (long long)r->compressed_bytes);
  if (o) {
    ax_jsonw_int(j, "warmup_steps", o->warmup_steps);
    ax_jsonw_bool(j, "freeze_variance", o->freeze_variance);
    ax_jsonw_bool(j, "vectors", o->compress_vectors);
    ax_jsonw_str(j, "stages", o->compress_stages);
    recipe_json(j, &o->recipe);
  }
  ax_jsonw_end(j);
}

/* The first stage's sparse embedding sync: what ran in the first step, what decided it and,
 * under auto, every algorithm's predicted cost (src/plan/sparse_cost.h). null: not this run. */
static void embed_sync_json(AxJsonW *j, const AxEmbedSyncReport *r) {
  if (!r->on) {
    ax_jsonw_null(j, "embedding_sync");
    return;
  }
  static const char *const NAMES[AX_SPARSE_COST_N] = {"zen", "allgather", "dense"};
  ax_jsonw_object(j, "embedding_sync");
  ax_jsonw_str(j, "algorithm", r->algo);
  ax_jsonw_str(j, "zen_owners", r->owners);
  ax_jsonw_int(j, "zen_levels", r->levels);
  ax_jsonw_int(j, "nodes", r->nodes);
  ax_jsonw_int(j, "ranks_per_node", r->per_node);
  ax_jsonw_str(j, "decided_by", r->decided_by);
  ax_jsonw_int(j, "rows_first_step", (long long)r->rows_first);
  if (r->predicted) {
    ax_jsonw_object(j, "predicted");
    for (int a = 0; a < AX_SPARSE_COST_N; a++) {
      ax_jsonw_object(j, NAMES[a]);
      ax_jsonw_int(j, "bytes", (long long)r->cost.by[a].bytes);
      ax_jsonw_int(j, "inter_node_bytes", (long long)r->cost.by[a].inter_bytes);
      if (r->priced) ax_jsonw_num(j, "seconds", r->cost.by[a].seconds);
      else ax_jsonw_null(j, "seconds");
      ax_jsonw_end(j);
    }
    ax_jsonw_end(j);
  } else {
    ax_jsonw_null(j, "predicted");
  }
  ax_jsonw_end(j);
}

static long long max_of(const long long *v, int n) {
  long long m = v[0];
  for (int i = 1; i < n; i++) m = v[i] > m ? v[i] : m;
  return m;
}

static void bytes_array(AxJsonW *j, const char *key, const long long *v, int n) {
  ax_jsonw_array(j, key);
  for (int i = 0; i < n; i++) ax_jsonw_int(j, NULL, v[i]);
  ax_jsonw_end(j);
}

static void memory_json(AxJsonW *j, const AxSummary *s) {
  const AxMemory *m = &s->mem;
  ax_jsonw_object(j, "memory");
  bytes_array(j, "host_peak_bytes", m->host_bytes, s->ranks);
  ax_jsonw_int(j, "host_peak_bytes_max", max_of(m->host_bytes, s->ranks));
  if (m->device_bytes) {
    bytes_array(j, "device_peak_bytes", m->device_bytes, s->ranks);
    ax_jsonw_int(j, "device_peak_bytes_max", max_of(m->device_bytes, s->ranks));
  } else {
    ax_jsonw_null(j, "device_peak_bytes");
    ax_jsonw_null(j, "device_peak_bytes_max");
  }
  ax_jsonw_str(j, "device_source", m->device_source);
  ax_jsonw_end(j);
}

static void simulation_json(AxJsonW *j, const AxSimInfo *x) {
  ax_jsonw_object(j, "simulation");
  ax_jsonw_str(j, "costs", x->costs);
  ax_jsonw_str(j, "network", x->network);
  ax_jsonw_num(j, "pipeline_s", x->pipeline_s);
  ax_jsonw_num(j, "allreduce_optimizer_s", x->allreduce_optimizer_s);
  ax_jsonw_num(j, "bubble_fraction", x->bubble_fraction);
  ax_jsonw_array(j, "idle_fraction");
  for (int r = 0; r < x->ranks; r++) ax_jsonw_num(j, NULL, x->idle_fraction[r]);
  ax_jsonw_end(j);
  ax_jsonw_int(j, "events_per_step", x->events);
  ax_jsonw_num(j, "wall_s", x->wall_s);
  ax_jsonw_end(j);
}

void ax_summary_write_json(FILE *f, const AxSummary *s) {
  AxJsonW j;
  ax_jsonw_init(&j, f);
  ax_jsonw_object(&j, NULL);
  ax_jsonw_int(&j, "axonn_summary", AX_SUMMARY_SCHEMA); /* schema version */
  ax_jsonw_bool(&j, "simulated", s->sim != NULL);
  ax_summary_provenance_json(&j, s->prov);
  run_json(&j, s);
  model_json(&j, s);
  timing_json(&j, &s->timing);
  throughput_json(&j, s);
  peak_json(&j, s);
  memory_json(&j, s);
  ax_summary_comm_json(&j, &s->comm);
  ax_summary_ckpt_json(&j, &s->ckpt);
  compression_json(&j, &s->compress, s->compression);
  embed_sync_json(&j, &s->embed_sync);
  if (s->sim) simulation_json(&j, s->sim);
  config_json(&j, s);
  ax_jsonw_end(&j);
}

/* ------------------------------------------------------------------------------ output */

static int write_file(const char *path, const char *text, size_t len) {
  AxFile f;
  AX_TRY(ax_file_open_write(&f, path));
  if (ax_file_write(&f, text, len) != AX_OK || ax_file_write(&f, "\n", 1) != AX_OK) {
    ax_file_abort(&f);
    return ax_error_context("writing the summary");
  }
  return ax_file_commit(&f);
}

/* "64.01% of peak 207.5 GFLOP/s (measured at this run's GEMM shapes, best qkv 2048x384x128)",
 * flagged above 100%. */
static void describe_peak(char *buf, size_t cap, const AxSummary *s) {
  const AxFigures *f = &s->fig;
  char peak[32];
  if (!isfinite(f->percent_of_peak)) {
    snprintf(buf, cap, "peak unknown (%s)", s->peak.source);
    return;
  }
  ax_metrics_format_flops(peak, sizeof peak, f->peak_flops_per_s);
  if (s->peak.best_shape[0])
    snprintf(buf, cap, "%.2f%% of peak %s (measured at this run's GEMM shapes, best %s)%s",
             f->percent_of_peak, peak, s->peak.best_shape,
             f->above_peak ? " -- ABOVE the measured peak: the peak measurement was noisy" : "");
  else
    snprintf(buf, cap, "%.2f%% of peak %s (%s)%s", f->percent_of_peak, peak, s->peak.source,
             f->above_peak ? " -- ABOVE the given peak" : "");
}

static void print_human(const AxSummary *s) {
  const AxTiming *t = &s->timing;
  const AxFigures *f = &s->fig;
  if (!t->n) {
    ax_log_result("summary: no steps timed");
    return;
  }
  char flops[32], paper[32], peak[512];
  ax_metrics_format_flops(flops, sizeof flops, f->flops_per_s);
  ax_metrics_format_flops(paper, sizeof paper, f->paper_flops_per_s);
  describe_peak(peak, sizeof peak, s);
  ax_log_result("summary%s: batch time %.3f ms (steps %d-%d, %d of %d%s), %.0f tokens/s, %s "
                "executed = %s; paper's 96-form bound %s; %.4g days for 300B tokens, max host "
                "memory %.1f MiB", s->sim ? " (SIMULATED)" : "", t->mean_ms, t->first, t->last, t->n, t->requested,
                t->n < t->requested ? ": run too short" : "", f->tokens_per_s, flops, peak,
                paper, f->days, (double)s->mem.host_bytes[0] / 1048576.0);
  if (s->ranks > 1 && s->comm.ranks) {
    char comm[640];
    ax_summary_comm_describe(&s->comm, comm, sizeof comm);
    ax_log_result("communication: %s", comm);
  }
}

int ax_summary_emit(const AxSummary *s, const char *path) {
  char *text = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&text, &len);
  if (!mem) return AX_FAIL("out of memory building the summary");
  ax_summary_write_json(mem, s);
  if (fclose(mem) != 0) {
    free(text);
    return AX_FAIL("out of memory building the summary");
  }
  print_human(s);
  ax_log_result("%s", text);
  int rc = path ? write_file(path, text, len) : AX_OK;
  free(text);
  return rc;
}

