/* metrics.h — what a step reports: a progress line on stdout (rank 0; every --log-every steps,
 * the first and the last step always) and, for every step, one row in each metrics file asked
 * for: the CSV (--metrics), JSON lines (--metrics-jsonl) and TensorBoard events
 * (--tensorboard, tfevents.h). The CSV header is
 * `step,loss,lr,batch_ms,tokens_per_s,tflops,grad_norm,val_loss`: the loss is the one computed
 * in that step's forward pass, before the update; val_loss is empty on steps without
 * validation; tflops counts the FLOPs the step executes (ax_trainer_flops_per_step). A JSON
 * line has the same fields ({"step":1,"loss":...,"val_loss":null}), TensorBoard the same
 * scalars under the same names (val_loss only where there is one). A resumed run appends to the
 * CSV and JSON-lines files it finds, after dropping their rows of steps after the checkpoint's
 * (so a step run again is never there twice); TensorBoard gets a new event file per run. Every
 * write, flush and close is checked: a failure is an error of the run. It also keeps this
 * rank's step times for the batch time of the end-of-run summary (src/report/summary.h): over
 * the timing window and over every step. */
#ifndef AX_METRICS_H
#define AX_METRICS_H

#include <stdio.h>

#include "src/train/trainer.h" /* AxStepRecord */
#include "tfevents.h"

/* The files of a run (NULL: none) and where it starts. */
typedef struct {
  const char *csv, *jsonl, *tensorboard_dir;
  int resume_step; /* -1: a new run (the files are created anew); else the checkpoint's step */
} AxMetricsFiles;

/* One file of rows (the CSV, the JSON lines). */
typedef struct {
  FILE *f;
  const char *path;
  int fresh; /* created by this run (nothing of an earlier run's in it) */
} AxRowFile;

#define AX_METRICS_CSV_HEADER "step,loss,lr,batch_ms,tokens_per_s,tflops,grad_norm,val_loss"


/* Step times over a set of steps (step numbers of the first and last one counted). */
typedef struct {
  int first, last, n;
  double sum_ms, min_ms, max_ms;
} AxStepTimes;

typedef struct {
  AxRowFile csv, jsonl;
  AxTfEvents tb;
  int quiet;
  int total_steps;
  int log_every; /* progress line every N steps (first and last always) */
  long long tokens_per_step;
  double flops_per_step; /* executed FLOPs of one step */
  double start_s;        /* ax_now() at open: elapsed time and ETA of the progress lines */
  /* running figures for the summary */
  int n;
  double sum_ms, last_loss, last_val;
  /* the timing window: the (skip+1)-th to (skip+steps)-th step this process runs (so a resumed
   * run leaves its own warm-up out too), and every step */
  int timing_skip, timing_steps;
  AxStepTimes timed, all;
} AxMetrics;

/* Opens the files (a resumed run: trims and appends, see above; the CSV's header is written
 * when the file is new); fails when one cannot be written, or when a file to append to is not
 * one of these (a CSV with another header, a line that is not a row). */
int ax_metrics_open(AxMetrics *m, const AxMetricsFiles *files, int quiet, int total_steps,
                    long long tokens_per_step, double flops_per_step);
/* metrics_rows.c: opens one file of rows for a run, as above (header NULL: none); a row's step
 * is the number after `step_prefix` at its start. */
int ax_row_file_open(AxRowFile *r, const char *path, const char *header, const char *step_prefix,
                     int resume_step);
/* The buffered rows reach the file (a full disk is found here); printed < 0: a failed print. */
int ax_row_file_flush(const AxRowFile *r, int printed);
/* Closes (nothing open: AX_OK); fails when the last rows cannot be written. */
int ax_row_file_close(AxRowFile *r);
/* Sets the timing window (default: no skip, every step). */
void ax_metrics_timing_window(AxMetrics *m, int skip, int steps);
/* Progress line every `every` steps; 0 (the default): ax_metrics_auto_every(total steps). */
void ax_metrics_log_every(AxMetrics *m, int every);
/* The automatic interval: the smallest of 1, 2, 4, 5, 10, 20, 25, 50, 100, 200, 250, ...
 * that gives at most 40 lines, so a run of 20 steps or more prints 20 to 40 of them. */
int ax_metrics_auto_every(int total_steps);
/* Records a step: the summary's figures, the progress line when due, the CSV row. Fails (and
 * says which file) when the row cannot be written. */
int ax_metrics_step(AxMetrics *m, const AxStepRecord *r);
/* After a failed run: closes the files and, when the run wrote no step and the CSV or
 * JSON-lines file is new, removes it (a run that failed before its first step leaves no
 * metrics behind). */
void ax_metrics_discard(AxMetrics *m);
/* Closes the files; fails when the last buffered rows cannot be written. */
int ax_metrics_close(AxMetrics *m);
/* "137.1 GFLOP/s" below 1 TFLOP/s, "1.37 TFLOP/s" from there on. */
void ax_metrics_format_flops(char *buf, size_t cap, double flops_per_s);

#endif
