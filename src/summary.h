/* summary.h — the end-of-run summary of `axonn train` (schema: docs/summary.md), as the AxoNN
 * paper (IPDPS'22 §VI-D) measures a run: the batch time averaged over the timing window
 * (--timing-skip 1, --timing-steps 10: steps 2..11), tokens/s, FLOP/s by Narayanan's bound with
 * recomputation, 96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)) / t, % of peak, days to train on 300
 * billion tokens (3e11·t/(B·s)), memory high-water marks of every rank, and the whole
 * configuration. Rank 0 prints it as one line starting with {"axonn_summary": and --summary
 * FILE.json writes the same line to FILE (atomically). */
#ifndef AX_SUMMARY_H
#define AX_SUMMARY_H

#include <stdio.h>

#include "metrics.h"
#include "models/gpt_config.h"
#include "options.h"
#include "train_config.h"
#include "trainer.h"

#define AX_SUMMARY_TOKENS 3e11 /* GPT-3's training regime: 300 billion tokens */

typedef struct {
  int skip, requested;   /* --timing-skip (0 when the run had no step after it), --timing-steps */
  int first, last, n;    /* the steps timed (n = 0: none) */
  double mean_ms;        /* the slowest rank's mean over the window */
  double min_ms, max_ms; /* fastest and slowest step in the window over all ranks */
} AxTiming;

typedef struct {
  double tflops_per_rank; /* NAN when unknown */
  char source[192];       /* where it came from, for the reader */
} AxPeakInfo;

typedef struct {
  double batch_s, tokens_per_step, tokens_per_s;
  double flops_per_step;          /* the paper's bound, recomputation counted (96 form) */
  double flops_per_step_executed; /* what the step computes (72 form; 96 with checkpointing) */
  double flops_per_s, peak_flops_per_s, percent_of_peak;
  double days; /* to train on AX_SUMMARY_TOKENS tokens */
} AxFigures;

typedef struct {
  long long *host_bytes;   /* per rank: ru_maxrss */
  long long *device_bytes; /* per rank; NULL when the backend does not track it */
  const char *device_source;
} AxMemory;

typedef struct {
  const AxOptionTable *options;
  const void *cfg; /* an AxTrainConfig, read through the option table */
  AxGptConfig model;
  const char *preset, *device, *host;
  int ranks, g_inter, g_data, steps_run;
  double final_loss, final_val_loss; /* NAN when none */
  AxTiming timing;
  AxPeakInfo peak;
  AxFigures fig;
  AxMemory mem;
} AxSummary;

/* The figures of a batch time (NAN batch_ms: none); peak_tflops_per_rank may be NAN. */
void ax_summary_figures(AxFigures *f, const AxGptConfig *m, long long batch, int seq,
                        double batch_ms, int ranks, double peak_tflops_per_rank,
                        double executed_flops_per_step);
/* This rank's timing window from its metrics (no MPI). */
void ax_summary_timing(AxTiming *t, const AxMetrics *m, int skip, int requested);
/* Peak from --peak-tflops or the GPU table (no measurement): 1 when found. */
int ax_summary_peak_lookup(AxPeakInfo *p, double peak_tflops_option, const char *device,
                           const char *gpu_name);
/* The summary as one JSON object on one line, without a newline. */
void ax_summary_write_json(FILE *f, const AxSummary *s);

/* Collective over the trainer's grid: reduces the timing window, resolves the peak (measures
 * the CPU SGEMM peak on every rank when needed), gathers memory marks; rank 0 prints the human
 * line and the JSON line and writes --summary. Every rank returns the same status. */
int ax_summary_finish(const AxTrainer *t, const AxTrainConfig *cfg, const AxMetrics *m);

#endif
