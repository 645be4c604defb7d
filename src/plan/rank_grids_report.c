/* rank_grids_report.c — the table, the per-collective list and the JSON of a grid search; see
 * rank_grids.h. */
#include <stdio.h>

#include "rank_grids.h"
#include "src/core/error.h"
#include "src/core/fileio.h"
#include "src/core/jsonw.h"

void ax_rank_grids_print_header(FILE *out, const AxGridQuery *q) {
  const AxCommSetup *s = &q->setup;
  const AxGptConfig *m = &s->model;
  char machine[256], micro[192], memory[64];
  ax_machine_format(&q->machine, machine, sizeof machine);
  if (s->micro_batch) snprintf(micro, sizeof micro, "%d sequences", s->micro_batch);
  else snprintf(micro, sizeof micro, "per grid (Bm: the largest multiple of Gz leaving >= "
                "G_inter micro-batches, or the largest smaller one that fits the device memory)");
  if (q->machine.device_memory_bytes > 0)
    snprintf(memory, sizeof memory, "device memory %.4g GB", q->machine.device_memory_bytes / 1e9);
  else snprintf(memory, sizeof memory, "device memory unknown (not checked)");
  fprintf(out, "rank grids: %s%sL=%d C=%d NH=%d T=%d V=%d (Vp %d) on %d ranks of %s; batch "
          "%lld sequences, micro-batch %s; %s; checkpointing %s%s; placement-%s%s; optimizer "
          "state on the %s; compute at %.4g TFLOP/s a rank; %s\n",
          q->model_name ? q->model_name : "", q->model_name ? " " : "", m->layers,
          m->channels, m->heads, s->seq, m->vocab, m->padded_vocab, q->ranks, machine,
          s->batch, micro, q->precision_name, s->checkpoint ? "on" : "off",
          s->ag_cache     ? "; all-gather cache on (weights gathered once a step)"
          : s->checkpoint ? " without the all-gather cache"
                          : "",
          s->placement_aware ? "aware" : "agnostic",
          q->max_inter ? "; G_inter capped" : "", q->optimizer_device ? "device" : "host",
          q->flops_per_s / 1e12, memory);
}

static void print_grid_line(FILE *out, int rank, const AxGridEstimate *e) {
  const AxCommPrediction *p = &e->comm;
  const AxRankGrid *g = &p->grid;
  fprintf(out, "%5d %7d %4d %4d %4d %6d %5d %10.4g %9.4g %9.4g %9.4g %7.2f", rank, g->inter,
          g->x, g->y, g->z, g->data, p->micro_batch, e->step_s, p->seconds, e->compute_s,
          e->bubble_s, e->mem.total / 1e9);
  for (int c = 0; c < AX_N_CLASSES; c++) fprintf(out, " %9.3g", p->class_seconds[c]);
  fprintf(out, "\n");
}

static void print_unfit(FILE *out, const AxRankGridList *l) {
  if (!l->n_unfit) return;
  fprintf(out, "grids that do not fit the device memory (%d), not ranked:\n", l->n_unfit);
  for (int i = 0; i < l->n_unfit; i++) {
    const AxRankGrid *g = &l->unfit[i].comm.grid;
    fprintf(out, "  - %dx%dx%dx%dx%d Bm %d: %s\n", g->inter, g->x, g->y, g->z, g->data,
            l->unfit[i].comm.micro_batch, l->unfit[i].unfit);
  }
}

void ax_rank_grids_print_table(FILE *out, const AxRankGridList *l, int top) {
  fprintf(out, "%5s %7s %4s %4s %4s %6s %5s %10s %9s %9s %9s %7s", "rank", "G_inter", "Gx",
          "Gy", "Gz", "G_data", "Bm", "step_s", "comm_s", "compute_s", "bubble_s", "mem_GB");
  for (int c = 0; c < AX_N_CLASSES; c++) fprintf(out, " %9s", ax_comm_class_name(c));
  fprintf(out, "\n");
  int n = top > 0 && top < l->n ? top : l->n;
  for (int i = 0; i < n; i++) print_grid_line(out, i + 1, &l->grids[i]);
  fprintf(out, "valid grids that fit: %d of %d%s; %s\n", l->n, l->n_considered,
          n < l->n ? " (--top 0 lists all)" : "", AX_RANK_GRIDS_TIE_RULE);
  print_unfit(out, l);
}

static void grid_cell(char *buf, size_t cap, const AxRankGridList *l, int i) {
  if (i >= l->n) {
    snprintf(buf, cap, "%-16s %10s %9s", "", "", "");
    return;
  }
  const AxGridEstimate *e = &l->grids[i];
  const AxRankGrid *g = &e->comm.grid;
  char name[48];
  snprintf(name, sizeof name, "%dx%dx%dx%dx%d", g->inter, g->x, g->y, g->z, g->data);
  snprintf(buf, cap, "%-16s %10.4g %9.4g", name, e->step_s, e->comm.seconds);
}

void ax_rank_grids_print_pair(FILE *out, const char *title_a, const AxRankGridList *a,
                              const char *title_b, const AxRankGridList *b, int top) {
  int n = a->n > b->n ? a->n : b->n;
  if (top > 0 && top < n) n = top;
  fprintf(out, "%5s | %-37s | %-37s\n", "", title_a, title_b);
  fprintf(out, "%5s | %-16s %10s %9s | %-16s %10s %9s\n", "rank", "grid", "step_s", "comm_s",
          "grid", "step_s", "comm_s");
  for (int i = 0; i < n; i++) {
    char ca[96], cb[96];
    grid_cell(ca, sizeof ca, a, i);
    grid_cell(cb, sizeof cb, b, i);
    fprintf(out, "%5d | %s | %s\n", i + 1, ca, cb);
  }
  fprintf(out, "grids that fit: %d and %d of %d; %s\n", a->n, b->n, a->n_considered,
          AX_RANK_GRIDS_TIE_RULE);
  print_unfit(out, a);
}

void ax_comm_print_entries(FILE *out, const AxCommPrediction *p) {
  fprintf(out, "collectives of stage %d per step (%lld micro-batches of %d sequences):\n",
          p->stage, p->n_micro, p->micro_batch);
  fprintf(out, "%-20s %-14s %-9s %12s %10s %14s %11s\n", "collective", "kind", "group",
          "elements", "calls", "bytes/rank", "seconds");
  for (int i = 0; i < p->n_entries; i++) {
    const AxCommEntry *e = &p->entries[i];
    char group[32];
    snprintf(group, sizeof group, "%s(%d)", ax_comm_group_name(e->group), e->group_size);
    fprintf(out, "%-20s %-14s %-9s %12llu %10llu %14llu %11.4g\n", e->name,
            ax_comm_kind_name(e->kind), group, e->elems, e->calls, e->bytes, e->seconds);
  }
}

static void query_json(AxJsonW *j, const AxGridQuery *q) {
  const AxCommSetup *s = &q->setup;
  ax_jsonw_str(j, "model", q->model_name);
  ax_jsonw_int(j, "layers", s->model.layers);
  ax_jsonw_int(j, "hidden", s->model.channels);
  ax_jsonw_int(j, "heads", s->model.heads);
  ax_jsonw_int(j, "seq", s->seq);
  ax_jsonw_int(j, "vocab", s->model.vocab);
  ax_jsonw_int(j, "padded_vocab", s->model.padded_vocab);
  ax_jsonw_int(j, "ranks", q->ranks);
  ax_jsonw_int(j, "batch", s->batch);
  ax_jsonw_int(j, "micro_batch", s->micro_batch); /* 0: per grid, by the rule */
  ax_jsonw_str(j, "precision", q->precision_name);
  ax_jsonw_int(j, "elem_size", s->elem_size);
  ax_jsonw_bool(j, "checkpoint_activations", s->checkpoint);
  ax_jsonw_bool(j, "ag_cache", s->ag_cache);
  ax_jsonw_str(j, "placement", s->placement_aware ? "aware" : "agnostic");
  ax_jsonw_int(j, "max_inter", q->max_inter);
  ax_jsonw_object(j, "machine");
  ax_jsonw_str(j, "name", q->machine.name);
  ax_jsonw_int(j, "gpus_per_node", q->machine.gpus_per_node);
  ax_jsonw_num(j, "intra_bytes_per_s", q->machine.intra_bytes_per_s);
  ax_jsonw_num(j, "inter_bytes_per_s", q->machine.inter_bytes_per_s);
  ax_jsonw_num(j, "latency_s", q->machine.latency_s);
  ax_jsonw_num(j, "device_memory_bytes", q->machine.device_memory_bytes);
  ax_jsonw_num(j, "flops_per_s", q->flops_per_s);
  ax_jsonw_end(j);
}

static void entries_json(AxJsonW *j, const AxCommPrediction *p) {
  ax_jsonw_array(j, "collectives");
  for (int i = 0; i < p->n_entries; i++) {
    const AxCommEntry *e = &p->entries[i];
    ax_jsonw_object(j, NULL);
    ax_jsonw_str(j, "name", e->name);
    ax_jsonw_str(j, "kind", ax_comm_kind_name(e->kind));
    ax_jsonw_str(j, "group", ax_comm_group_name(e->group));
    ax_jsonw_str(j, "class", ax_comm_class_name(e->cls));
    ax_jsonw_int(j, "group_size", e->group_size);
    ax_jsonw_int(j, "elem_size", e->elem_size);
    ax_jsonw_int(j, "elements", (long long)e->elems);
    ax_jsonw_int(j, "calls", (long long)e->calls);
    ax_jsonw_int(j, "bytes", (long long)e->bytes);
    ax_jsonw_num(j, "seconds", e->seconds);
    ax_jsonw_end(j);
  }
  ax_jsonw_end(j);
}

static void grid_json(AxJsonW *j, const AxGridEstimate *e, int rank, int entries) {
  const AxCommPrediction *p = &e->comm;
  const AxRankGrid *g = &p->grid;
  ax_jsonw_object(j, NULL);
  ax_jsonw_int(j, "rank", rank);
  ax_jsonw_int(j, "g_inter", g->inter);
  ax_jsonw_int(j, "gx", g->x);
  ax_jsonw_int(j, "gy", g->y);
  ax_jsonw_int(j, "gz", g->z);
  ax_jsonw_int(j, "g_data", g->data);
  ax_jsonw_int(j, "micro_batch", p->micro_batch);
  ax_jsonw_int(j, "micro_batches", p->n_micro);
  ax_jsonw_int(j, "stage", p->stage);
  ax_jsonw_num(j, "step_seconds", e->step_s);
  ax_jsonw_num(j, "seconds", p->seconds); /* communication */
  ax_jsonw_num(j, "compute_seconds", e->compute_s);
  ax_jsonw_num(j, "bubble_seconds", e->bubble_s);
  ax_jsonw_object(j, "memory_bytes");
  ax_jsonw_num(j, "weights", e->mem.weights);
  ax_jsonw_num(j, "grads", e->mem.grads);
  ax_jsonw_num(j, "activations", e->mem.act);
  ax_jsonw_num(j, "optimizer", e->mem.optimizer);
  ax_jsonw_num(j, "total", e->mem.total);
  ax_jsonw_end(j);
  if (e->unfit[0]) ax_jsonw_str(j, "unfit", e->unfit);
  ax_jsonw_int(j, "bytes", (long long)p->bytes);
  ax_jsonw_object(j, "bandwidths");
  for (int k = 0; k < AX_N_GROUPS; k++) ax_jsonw_num(j, ax_comm_group_name(k), p->beta[k]);
  ax_jsonw_end(j);
  ax_jsonw_object(j, "classes");
  for (int c = 0; c < AX_N_CLASSES; c++) {
    ax_jsonw_object(j, ax_comm_class_name(c));
    ax_jsonw_num(j, "seconds", p->class_seconds[c]);
    ax_jsonw_int(j, "bytes", (long long)p->class_bytes[c]);
    ax_jsonw_end(j);
  }
  ax_jsonw_end(j);
  if (entries) entries_json(j, p);
  ax_jsonw_end(j);
}

int ax_rank_grids_write_json(const char *path, const AxGridQuery *q, const AxRankGridList *l,
                             int entries) {
  AxFile f;
  AX_TRY(ax_file_open_write(&f, path));
  AxJsonW j;
  ax_jsonw_init(&j, f.f);
  ax_jsonw_object(&j, NULL);
  query_json(&j, q);
  ax_jsonw_int(&j, "grids_considered", l->n_considered);
  ax_jsonw_array(&j, "grids");
  for (int i = 0; i < l->n; i++) grid_json(&j, &l->grids[i], i + 1, entries);
  ax_jsonw_end(&j);
  ax_jsonw_array(&j, "unfit");
  for (int i = 0; i < l->n_unfit; i++) grid_json(&j, &l->unfit[i], 0, entries);
  ax_jsonw_end(&j);
  ax_jsonw_str(&j, "tie_rule", AX_RANK_GRIDS_TIE_RULE);
  ax_jsonw_end(&j);
  fputc('\n', f.f);
  return ax_file_commit(&f);
}
