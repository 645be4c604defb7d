/* rank_grids.h — every grid G_inter x Gx x Gy x Gz x G_data of a number of ranks that the
 * implementation can run (comm_model.h's rules), each with its predicted communication time per
 * step, fastest first: the search of `axonn plan --rank-grids` (axonn-4d-hybrid §V); and its
 * report, as a table and as JSON (rank_grids_report.c). */
#ifndef AX_RANK_GRIDS_H
#define AX_RANK_GRIDS_H

#include <stdio.h>

#include "comm_model.h"

/* What to search and how to label it. */
typedef struct {
  AxCommSetup setup;
  AxMachine machine;
  int ranks;
  int max_inter;              /* largest G_inter considered; 0: no cap */
  const char *model_name;     /* the preset, or NULL */
  const char *precision_name; /* "bf16" */
} AxGridQuery;

typedef struct {
  AxCommPrediction *grids; /* valid grids, fastest first (ties: smaller G_inter, Gx, ... first) */
  int n;                   /* valid grids */
  int n_considered;        /* grids of that many ranks (under max_inter) */
} AxRankGridList;

/* Predicts every grid of q->ranks ranks. No valid grid is an error giving the reason the pure
 * data-parallel grid 1x1x1x1xN fails. Free with ax_rank_grids_free. */
int ax_rank_grids(const AxGridQuery *q, AxRankGridList *out);
void ax_rank_grids_free(AxRankGridList *l);

/* One line: the model, ranks, machine, batch, micro-batch rule, precision, options. */
void ax_rank_grids_print_header(FILE *out, const AxGridQuery *q);
/* Column titles, then the first `top` grids of l (0: all), one line each: rank, G_inter, Gx,
 * Gy, Gz, G_data, micro-batch, total seconds and seconds per class. */
void ax_rank_grids_print_table(FILE *out, const AxRankGridList *l, int top);
/* Every collective of one prediction: name, kind, group (size), elements, calls, bytes, seconds. */
void ax_comm_print_entries(FILE *out, const AxCommPrediction *p);
/* The query and every grid of l with its totals and per-class seconds and bytes; with
 * `entries`, every grid's collectives too. */
int ax_rank_grids_write_json(const char *path, const AxGridQuery *q, const AxRankGridList *l,
                             int entries);

#endif
