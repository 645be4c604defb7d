/* summary_comm.c — the communication object of the end-of-run summary: every rank's traffic
 * counters (mpi/traffic.h) gathered to rank 0, per training step and over the whole run, by
 * class, all bytes and those that crossed virtual nodes, with the link they crossed (real or
 * EMULATED, mpi/link/link_emulator.h); its JSON and its human line. Schema: docs/summary.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/link/link_emulator.h"
#include "mpi/mpi_util.h"
#include "src/core/error.h"
#include "summary.h"

static void describe_nodes(AxCommSummary *c, const AxTrainer *t) {
  const AxLinkEmu *links = ax_trainer_links(t);
  c->link = ax_link_spec_of(links);
  c->n_nodes = ax_link_nodes(links);
  for (int r = 0; r < c->ranks; r++) c->node_of[r] = ax_link_node_of(links, r);
}

int ax_summary_comm_gather(AxCommSummary *c, const AxTrainer *t) {
  const AxGrid *g = ax_trainer_grid(t);
  int root = g->rank == 0, steps = 0;
  const AxTraffic *step_traffic = ax_trainer_step_traffic(t, &steps);
  memset(c, 0, sizeof *c);
  if (root) {
    c->ranks = g->size;
    c->steps = steps;
    c->steps_sum = ax_calloc((size_t)g->size, sizeof *c->steps_sum);
    c->run = ax_calloc((size_t)g->size, sizeof *c->run);
    c->node_of = ax_calloc((size_t)g->size, sizeof *c->node_of);
  }
  int ok = !root || (c->steps_sum && c->run && c->node_of);
  int rc = ax_grid_agree(g, ok ? AX_OK : AX_ERR);
  size_t bytes = sizeof(AxTraffic);
  if (rc == AX_OK) rc = ax_mpi_gather_bytes(g->world, step_traffic, bytes, c->steps_sum);
  if (rc == AX_OK) rc = ax_mpi_gather_bytes(g->world, ax_trainer_traffic(t), bytes, c->run);
  if (rc == AX_OK && root) describe_nodes(c, t);
  for (int d = 0; d < 3; d++) c->tp[d] = g->tp[d];
  c->tp_step = *ax_trainer_step_tp(t);
  return rc;
}

void ax_summary_comm_free(AxCommSummary *c) {
  free(c->steps_sum);
  free(c->run);
  free(c->node_of);
  memset(c, 0, sizeof *c);
}

/* {"bytes": ..., "inter_node_bytes": ...} of class k (AX_TRAFFIC_N_CLASSES: every class),
 * divided by `per` (the steps; 1 for totals). */
static void class_json(AxJsonW *j, const char *key, const AxTraffic *t, int k, double per) {
  ax_jsonw_object(j, key);
  if (per == 1) {
    ax_jsonw_int(j, "bytes", (long long)ax_traffic_bytes(t, k));
    ax_jsonw_int(j, "inter_node_bytes", (long long)ax_traffic_crossed(t, k));
  } else {
    ax_jsonw_num(j, "bytes", (double)ax_traffic_bytes(t, k) / per);
    ax_jsonw_num(j, "inter_node_bytes", (double)ax_traffic_crossed(t, k) / per);
  }
  ax_jsonw_end(j);
}

static void traffic_json(AxJsonW *j, const char *key, const AxTraffic *t, double per) {
  ax_jsonw_object(j, key);
  for (int k = 0; k < AX_TRAFFIC_N_CLASSES; k++)
    class_json(j, ax_traffic_class_name((AxTrafficClass)k), t, k, per);
  class_json(j, "total", t, AX_TRAFFIC_N_CLASSES, per);
  ax_jsonw_end(j);
}

/* {"ranks": [per rank], "sum": over ranks}, each divided by `per`. */
static void ranks_json(AxJsonW *j, const char *key, const AxTraffic *all, int n, double per) {
  AxTraffic sum, zero;
  memset(&sum, 0, sizeof sum);
  memset(&zero, 0, sizeof zero);
  ax_jsonw_object(j, key);
  ax_jsonw_array(j, "ranks");
  for (int r = 0; r < n; r++) {
    traffic_json(j, NULL, &all[r], per);
    ax_traffic_add_delta(&sum, &all[r], &zero);
  }
  ax_jsonw_end(j);
  traffic_json(j, "sum", &sum, per);
  ax_jsonw_end(j);
}

static void link_json(AxJsonW *j, const AxCommSummary *c) {
  char text[96];
  ax_jsonw_object(j, "link");
  ax_jsonw_bool(j, "emulated", c->link.bytes_per_s > 0);
  if (c->link.bytes_per_s > 0) {
    ax_link_spec_format(&c->link, text, sizeof text);
    ax_jsonw_num(j, "bandwidth_bits_per_s", c->link.bytes_per_s * 8);
    ax_jsonw_num(j, "latency_s", c->link.latency_s);
    ax_jsonw_str(j, "text", text);
  }
  ax_jsonw_end(j);
}

static int tp_on(const AxCommSummary *c) { return c->tp[0] * c->tp[1] * c->tp[2] > 1; }

/* "overlap": the overlaps' evidence, counted per step over all groups by operation. */
static void overlap_json(AxJsonW *j, const AxTpStats *s, double per) {
  static const char *const OPS[AX_TP_OPS] = {"all_reduce", "all_gather", "reduce_scatter"};
  ax_jsonw_object(j, "overlap");
  ax_jsonw_str(j, "counted", "rank 0 per training step: collectives started and left running "
                             "(waited for later), of those the prefetches started ahead of "
                             "the step's compute (its first weights), GEMMs of the tensor-parallel layers, the sum "
                             "over those GEMMs of the started collectives not yet waited for as "
                             "each began, progress calls made while one was in flight");
  ax_jsonw_num(j, "gemms", (double)s->gemms / per);
  ax_jsonw_num(j, "progress_calls", (double)s->progress_calls / per);
  for (int op = 0; op < AX_TP_OPS; op++) {
    ax_jsonw_object(j, OPS[op]);
    ax_jsonw_num(j, "started", (double)s->started[op] / per);
    ax_jsonw_num(j, "started_ahead", (double)s->started_ahead[op] / per);
    ax_jsonw_num(j, "in_flight_at_gemms", (double)s->in_flight_at_gemm[op] / per);
    ax_jsonw_end(j);
  }
  ax_jsonw_end(j);
}

/* "tensor_parallel": rank 0's collectives per step, by group and operation, and its waits. */
static void tp_json(AxJsonW *j, const AxCommSummary *c) {
  static const char *const GROUPS[3] = {"x", "y", "z"};
  static const char *const OPS[AX_TP_OPS] = {"all_reduce", "all_gather", "reduce_scatter"};
  double per = c->steps > 0 ? c->steps : 1;
  ax_jsonw_object(j, "tensor_parallel");
  ax_jsonw_str(j, "counted", "rank 0's collectives over each tensor-parallel group, per training "
                             "step: payload bytes sent, calls, seconds blocked waiting");
  ax_jsonw_array(j, "grid");
  for (int d = 0; d < 3; d++) ax_jsonw_int(j, NULL, c->tp[d]);
  ax_jsonw_end(j);
  for (int d = 0; d < 3; d++) {
    ax_jsonw_object(j, GROUPS[d]);
    for (int op = 0; op < AX_TP_OPS; op++) {
      ax_jsonw_object(j, OPS[op]);
      ax_jsonw_num(j, "bytes", (double)c->tp_step.bytes[d][op].sent / per);
      ax_jsonw_num(j, "calls", (double)c->tp_step.calls[d][op] / per);
      ax_jsonw_end(j);
    }
    ax_jsonw_num(j, "wait_s", c->tp_step.wait_s[d] / per);
    ax_jsonw_end(j);
  }
  overlap_json(j, &c->tp_step, per);
  /* device buffers staged through host memory (mpi/coll/tp_mpi.h); 0 on host memory */
  ax_jsonw_num(j, "staged_bytes_down", (double)c->tp_step.staged_down / per);
  ax_jsonw_num(j, "staged_bytes_up", (double)c->tp_step.staged_up / per);
  ax_jsonw_end(j);
}

void ax_summary_comm_json(AxJsonW *j, const AxCommSummary *c) {
  if (!c->ranks) {
    ax_jsonw_null(j, "communication");
    return;
  }
  ax_jsonw_object(j, "communication");
  link_json(j, c);
  ax_jsonw_int(j, "nodes", c->n_nodes);
  ax_jsonw_array(j, "node_of_rank");
  for (int r = 0; r < c->ranks; r++) ax_jsonw_int(j, NULL, c->node_of[r]);
  ax_jsonw_end(j);
  ax_jsonw_str(j, "counted", "payload bytes sent: pipeline messages, our collectives, the "
                             "gather of the saved model; not MPI's own reductions");
  ax_jsonw_int(j, "steps", c->steps);
  if (c->steps > 0)
    ranks_json(j, "per_step", c->steps_sum, c->ranks, (double)c->steps);
  else
    ax_jsonw_null(j, "per_step");
  ranks_json(j, "run_total", c->run, c->ranks, 1);
  if (tp_on(c)) tp_json(j, c);
  ax_jsonw_end(j);
}

void ax_summary_comm_describe(const AxCommSummary *c, char *buf, size_t cap) {
  unsigned long long all = 0, crossed = 0;
  for (int r = 0; r < c->ranks; r++) {
    all += ax_traffic_bytes(&c->steps_sum[r], AX_TRAFFIC_N_CLASSES);
    crossed += ax_traffic_crossed(&c->steps_sum[r], AX_TRAFFIC_N_CLASSES);
  }
  double per = c->steps > 0 ? c->steps : 1;
  char link[96] = "real links";
  if (c->link.bytes_per_s > 0) {
    char spec[80];
    ax_link_spec_format(&c->link, spec, sizeof spec);
    snprintf(link, sizeof link, "EMULATED link %s", spec);
  }
  int n = snprintf(buf, cap, "sent per step (all ranks) %.6g MB, %.6g MB of it between the %d "
                   "virtual node(s) (%s)", all / per / 1e6, crossed / per / 1e6, c->n_nodes,
                   link);
  if (!tp_on(c) || n < 0 || (size_t)n >= cap) return;
  n += snprintf(buf + n, cap - (size_t)n, "; tensor parallel %dx%dx%d, rank 0 per step:",
                c->tp[0], c->tp[1], c->tp[2]);
  for (int d = 0; d < 3 && (size_t)n < cap; d++) {
    unsigned long long bytes = 0, calls = 0;
    for (int op = 0; op < AX_TP_OPS; op++) {
      bytes += c->tp_step.bytes[d][op].sent;
      calls += c->tp_step.calls[d][op];
    }
    if (c->tp[d] > 1)
      n += snprintf(buf + n, cap - (size_t)n, " %c %.4g MB in %.0f calls, waited %.3g ms;",
                    "XYZ"[d], bytes / per / 1e6, calls / per, c->tp_step.wait_s[d] / per * 1e3);
  }
}
