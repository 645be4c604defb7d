/* summary_ckpt.c — the memory-checkpoint object of the end-of-run summary (Gemini,
 * docs/memory-checkpoints.md): the settings, how many copies were made, completed, skipped and
 * late, the replica bytes sent in idle spans and outside them,
 * and each rank's cost (stage files written, those its optimizer wrote in place, its copy thread's CPU per file, all of them and
 * those after each slot's first fill, its main thread's time joining and settling per copy),
 * gathered to rank 0. Schema: docs/summary.md. */
#include <stdlib.h>
#include <string.h>

#include "mpi/mpi_util.h"
#include "src/core/error.h"
#include "summary.h"

int ax_summary_ckpt_gather(AxCkptSummary *c, const AxTrainer *t) {
  const AxGrid *g = ax_trainer_grid(t);
  AxMemCkptStats mine;
  ax_trainer_memckpt_stats(t, &mine);
  memset(c, 0, sizeof *c);
  if (!mine.every) return AX_OK; /* the same on every rank: it is the configuration */
  int root = g->rank == 0;
  if (root) {
    c->of_rank = ax_calloc((size_t)g->size, sizeof *c->of_rank);
    if (c->of_rank) c->ranks = g->size;
  }
  AX_TRY(ax_grid_agree(g, root && !c->of_rank ? AX_ERR : AX_OK));
  return ax_mpi_gather_bytes(g->world, &mine, sizeof mine, c->of_rank);
}

void ax_summary_ckpt_free(AxCkptSummary *c) {
  free(c->of_rank);
  memset(c, 0, sizeof *c);
}

/* A mean in milliseconds, null when there was nothing to average. */
static void mean_ms(AxJsonW *j, double seconds, int count) {
  if (count > 0) ax_jsonw_num(j, NULL, 1e3 * seconds / count);
  else ax_jsonw_null(j, NULL);
}

void ax_summary_ckpt_json(AxJsonW *j, const AxCkptSummary *c) {
  if (c->ranks == 0) return;
  const AxMemCkptStats *r0 = &c->of_rank[0];
  ax_jsonw_object(j, "memory_checkpoints");
  ax_jsonw_int(j, "every", r0->every);
  ax_jsonw_int(j, "replicas", r0->replicas);
  ax_jsonw_int(j, "nodes", r0->nodes);
  ax_jsonw_str(j, "replica_schedule", r0->idle_schedule ? "idle" : "end");
  ax_jsonw_int(j, "copies", r0->copies);
  ax_jsonw_int(j, "copies_complete", r0->complete);
  ax_jsonw_int(j, "skipped", r0->skipped);
  ax_jsonw_int(j, "interval", r0->interval);
  ax_jsonw_int(j, "late", r0->late);
  unsigned long long in_spans = 0, outside = 0;
  for (int r = 0; r < c->ranks; r++) {
    in_spans += c->of_rank[r].bytes_in_spans;
    outside += c->of_rank[r].bytes_outside;
  }
  ax_jsonw_int(j, "replica_bytes_in_spans", (long long)in_spans);
  ax_jsonw_int(j, "replica_bytes_outside_spans", (long long)outside);
  ax_jsonw_array(j, "files_written");
  for (int r = 0; r < c->ranks; r++) ax_jsonw_int(j, NULL, c->of_rank[r].files_written);
  ax_jsonw_end(j);
  ax_jsonw_array(j, "files_in_place");
  for (int r = 0; r < c->ranks; r++) ax_jsonw_int(j, NULL, c->of_rank[r].files_in_place);
  ax_jsonw_end(j);
  ax_jsonw_array(j, "copy_thread_cpu_ms_per_file");
  for (int r = 0; r < c->ranks; r++)
    mean_ms(j, c->of_rank[r].copy_cpu_s, c->of_rank[r].files_written);
  ax_jsonw_end(j);
  ax_jsonw_array(j, "copy_thread_cpu_ms_per_file_steady");
  for (int r = 0; r < c->ranks; r++)
    mean_ms(j, c->of_rank[r].steady_cpu_s, c->of_rank[r].steady_files);
  ax_jsonw_end(j);
  ax_jsonw_array(j, "join_and_settle_ms_per_copy");
  for (int r = 0; r < c->ranks; r++) mean_ms(j, c->of_rank[r].finish_s, c->of_rank[r].copies);
  ax_jsonw_end(j);
  ax_jsonw_end(j);
}
