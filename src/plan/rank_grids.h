/* rank_grids.h — every grid G_inter x Gx x Gy x Gz x G_data of a number of ranks that the
 * implementation can run (comm_model.h's rules), each with its estimated step time, fastest
 * first: the search of `axonn plan --rank-grids` (axonn-4d-hybrid §V); and its report, as a
 * table and as JSON (rank_grids_report.c).
 *
 * Step time = communication (comm_model.h, not overlapped) + compute + the pipeline's bubble:
 * compute = the step's training FLOPs (ax_gpt_train_flops, the recomputed forward with
 * checkpointing) / ranks / the rank's FLOP/s; bubble = compute x (G_inter - 1) / m for m
 * micro-batches, i.e. (G_inter - 1) / (m + G_inter - 1) of the pipelined compute, times the
 * share of it that costs (ax_rank_grids_bubble_share: 1 with a device or core a rank; on a CPU
 * machine whose nodes' ranks outnumber their cores, cores_per_node, a waiting stage's core goes
 * to the node's other ranks: 0 from twice as many ranks as cores, linear between). Without
 * FLOP/s (flops_per_s 0) both are 0 and the ranking is communication's alone.
 *
 * Memory: a grid whose device bytes per rank (the busiest stage's, from the query's memory
 * function: the trainer's own plan, src/train/train_plan.h) exceed the machine's
 * device_memory_bytes is not ranked but listed apart with the reason. Without a memory function
 * or a device memory figure nothing is excluded.
 *
 * Ties (step times within a relative 1e-9): the smaller memory per rank first, then the
 * smaller G_inter, Gx, Gy, Gz (AX_RANK_GRIDS_TIE_RULE). */
#ifndef AX_RANK_GRIDS_H
#define AX_RANK_GRIDS_H

#include <stdio.h>

#include "comm_model.h"

#define AX_RANK_GRIDS_TIE_RULE                                                              \
  "ties (step times within 1e-9 relative): less device memory per rank first, then smaller "  \
  "G_inter, Gx, Gy, Gz"

/* The share of the pipeline's bubble that costs time on machine m (module header). */
double ax_rank_grids_bubble_share(const AxMachine *m);

/* One rank's device memory under a grid (its busiest stage), bytes. */
typedef struct {
  double weights, grads, act, optimizer, total;
} AxGridMemory;

/* Fills g's device memory per rank for micro-batches of `micro_batch` sequences. */
typedef int (*AxGridMemoryFn)(void *ctx, const AxCommSetup *s, const AxRankGrid *g,
                              int micro_batch, AxGridMemory *out);

/* What to search and how to label it. */
typedef struct {
  AxCommSetup setup;
  AxMachine machine;
  int ranks;
  int max_inter;              /* largest G_inter considered; 0: no cap */
  const char *model_name;     /* the preset, or NULL */
  const char *precision_name; /* "bf16" */
  double flops_per_s;         /* a rank's sustained FLOP/s (0: compute not priced) */
  AxGridMemoryFn memory;      /* NULL: memory not checked */
  void *memory_ctx;
  int optimizer_device;       /* for the header: the optimizer state on the GPU */
} AxGridQuery;

typedef struct {
  AxCommPrediction comm;
  double compute_s, bubble_s, step_s; /* step_s = comm.seconds + compute_s + bubble_s */
  AxGridMemory mem;                   /* all 0 without a memory function */
  char unfit[160];                    /* "" when it fits; else which memory exceeds what */
} AxGridEstimate;

typedef struct {
  AxGridEstimate *grids; /* valid grids that fit, fastest first (AX_RANK_GRIDS_TIE_RULE) */
  int n;
  AxGridEstimate *unfit; /* valid grids that do not fit the device memory, in grid order */
  int n_unfit;
  int n_considered;      /* grids of that many ranks (under max_inter) */
} AxRankGridList;

/* One grid's estimate: its communication, compute, bubble and memory (unfit set when it
 * exceeds the machine's device memory). */
int ax_rank_grid_estimate(const AxGridQuery *q, const AxRankGrid *g, AxGridEstimate *out);
/* <0 when a ranks before b (AX_RANK_GRIDS_TIE_RULE). */
int ax_rank_grid_compare(const AxGridEstimate *a, const AxGridEstimate *b);

/* Estimates every grid of q->ranks ranks. No valid grid is an error giving the reason the pure
 * data-parallel grid 1x1x1x1xN fails; valid grids that all exceed the device memory are not
 * (l->n is 0, l->unfit lists them). Free with ax_rank_grids_free. */
int ax_rank_grids(const AxGridQuery *q, AxRankGridList *out);
void ax_rank_grids_free(AxRankGridList *l);

/* One line: the model, ranks, machine, batch, micro-batch rule, precision, options. */
void ax_rank_grids_print_header(FILE *out, const AxGridQuery *q);
/* Column titles, then the first `top` grids of l (0: all), one line each: rank, G_inter, Gx,
 * Gy, Gz, G_data, micro-batch, step, communication, compute and bubble seconds, memory per rank
 * (GB) and communication seconds per class; then the tie rule and the grids that do not fit,
 * each with its reason. */
void ax_rank_grids_print_table(FILE *out, const AxRankGridList *l, int top);
/* Two rankings side by side (the first `top` of each; 0: all): rank, then each one's grid and
 * step and communication seconds. */
void ax_rank_grids_print_pair(FILE *out, const char *title_a, const AxRankGridList *a,
                              const char *title_b, const AxRankGridList *b, int top);
/* Every collective of one prediction: name, kind, group (size), elements, calls, bytes, seconds. */
void ax_comm_print_entries(FILE *out, const AxCommPrediction *p);
/* The query and every grid of l with its totals and per-class seconds and bytes; with
 * `entries`, every grid's collectives too. */
int ax_rank_grids_write_json(const char *path, const AxGridQuery *q, const AxRankGridList *l,
                             int entries);

#endif
