/* summary.h — the end-of-run summary of `axonn train` (schema: docs/summary.md), as the AxoNN
 * paper (IPDPS'22 §VI-D) measures a run: the batch time averaged over the timing window
 * (--timing-skip 1, --timing-steps 10: steps 2..11), tokens/s, FLOP/s and % of peak, days to
 * train on 300 billion tokens (3e11·t/(B·s)), memory high-water marks of every rank, and the
 * whole configuration. The headline FLOP/s counts what the step executes (72·B·s·l·h²·(1 + s/(6h)
 * + V/(12·l·h)), the 96 form only when activation checkpointing ran) over the peak (on the CPU:
 * measured at this run's own GEMM shapes); the paper's bound with recomputation,
 * 96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)), is reported beside it under its own name. Rank 0 prints
 * it as one line starting with {"axonn_summary": and --summary FILE.json writes the same line
 * to FILE (atomically). The communication object holds the bytes every rank sent, by class,
 * within and between virtual nodes, per training step and over the run, and the link (real or
 * EMULATED) they crossed; the compression object the codec, warm-up and frozen variance in
 * effect and every default the codec's recipe set, with its source. */
#ifndef AX_SUMMARY_H
#define AX_SUMMARY_H

#include <stdio.h>

#include "metrics.h"
#include "models/gpt_config.h"
#include "mpi/grid.h"
#include "mpi/link/link_spec.h"
#include "mpi/traffic.h"
#include "src/core/jsonw.h"
#include "src/core/options.h"
#include "src/train/train_config.h"
#include "src/train/trainer.h"

#define AX_SUMMARY_TOKENS 3e11 /* GPT-3's training regime: 300 billion tokens */
/* Schema version: 2 since FLOP/s and % of peak count executed FLOPs (1: the paper's bound). */
#define AX_SUMMARY_SCHEMA 2

typedef struct {
  int skip, requested;   /* --timing-skip (0 when the run had no step after it), --timing-steps */
  int first, last, n;    /* the steps timed (n = 0: none) */
  double mean_ms;        /* the slowest rank's mean over the window */
  double min_ms, max_ms; /* fastest and slowest step in the window over all ranks */
} AxTiming;

typedef struct {
  double tflops_per_rank; /* NAN when unknown */
  char source[192];       /* where it came from, for the reader */
  char shapes[320];       /* measured: the GEMM shapes (name MxNxK, ...); "" otherwise */
  char best_shape[64];    /* measured: the shape of the best rate (rank 0's) */
} AxPeakInfo;

#define AX_SUMMARY_FLOPS_72 "72*B*s*l*h^2*(1+s/(6*h)+V/(12*l*h))"
#define AX_SUMMARY_FLOPS_96 "96*B*s*l*h^2*(1+s/(6*h)+V/(16*l*h))"

typedef struct {
  double batch_s, tokens_per_step, tokens_per_s;
  int recompute;         /* activation checkpointing ran: the executed count is the 96 form */
  double flops_per_step; /* executed: the 72 form (96 with checkpointing) */
  double flops_per_s, peak_flops_per_s, percent_of_peak;
  int above_peak; /* percent_of_peak > 100: the peak measurement was noisy */
  double paper_flops_per_step; /* the paper's bound, recomputation counted (96 form) */
  double paper_flops_per_s, paper_percent_of_peak;
  double days; /* to train on AX_SUMMARY_TOKENS tokens */
} AxFigures;

typedef struct {
  long long *host_bytes;   /* per rank: ru_maxrss */
  long long *device_bytes; /* per rank; NULL when the backend does not track it */
  const char *device_source;
} AxMemory;

/* The communication object (summary_comm.c): bytes each rank sent by traffic class
 * (mpi/traffic.h), within and between virtual nodes, and the link they went over. */
typedef struct {
  int ranks;            /* 0: nothing gathered (written as null) */
  int steps;            /* the training steps `steps_sum` covers */
  AxTraffic *steps_sum; /* [ranks]: sent during the training steps, summed over them */
  AxTraffic *run;       /* [ranks]: sent during the whole run (validation, saving included) */
  int *node_of;         /* [ranks]: virtual node */
  int n_nodes;
  AxLinkSpec link;      /* bytes_per_s 0: not emulated */
  int tp[3];            /* the tensor-parallel grid (1 x 1 x 1: none) */
  AxTpStats tp_step;    /* rank 0's tensor-parallel collectives, summed over the steps */
} AxCommSummary;

/* What a simulated summary adds (`axonn simulate`, src/cli/simulate.c): the "simulation"
 * object. A real run has none ("simulated": false). */
typedef struct {
  const char *costs, *network; /* where compute costs came from; the machine and its links */
  int ranks;                   /* of idle_fraction */
  const double *idle_fraction; /* [ranks]: the step's time a rank does not compute */
  double bubble_fraction;      /* of the pipeline phase, stages idle (mean over stages) */
  double pipeline_s;           /* the pipeline phase (the last stage to finish it) */
  double allreduce_optimizer_s; /* from there to the step's end */
  long long events;            /* pipeline events simulated in one step */
  double wall_s;               /* seconds the simulation took */
} AxSimInfo;

/* The memory-checkpoint object (summary_ckpt.c; absent when they are off): the settings and
 * counts, and what each rank's copies cost it. */
typedef struct {
  int ranks;               /* 0: memory checkpoints off, or nothing gathered */
  AxMemCkptStats *of_rank; /* [ranks] */
} AxCkptSummary;

/* The provenance object's gathered parts (summary_provenance.c); the build's and the
 * process's come from src/core/provenance.h when it is written. */
enum { AX_PROVENANCE_HOST = 64 };
typedef struct {
  char mpi_library[256], mpi_standard[16], blas[256];
  char *hosts; /* n_hosts names of AX_PROVENANCE_HOST chars, each host once, in rank order */
  int n_hosts;
} AxProvenance;

typedef struct {
  const AxOptionTable *options;
  const void *cfg; /* an AxTrainConfig, read through the option table */
  const AxCompressionOptions *compression; /* the compression in effect; NULL: written null */
  AxGptConfig model;
  const char *preset, *device, *host;
  int ranks, g_inter, g_data, steps_run;
  double final_loss, final_val_loss; /* NAN when none */
  int val_batches; /* batches of --val-data behind final_val_loss */
  double loss_scale; /* at the end (1: no loss scaling) */
  long long skipped_steps; /* skipped on an overflow */
  int replicas_differ; /* stage shards whose data-parallel replicas differ; -1: not compared */
  int tied_differ;     /* pairs of tied embedding copies that differ; -1: not compared */
  AxResumeReport resumed; /* from AX_RESUMED_NONE: a run from its first step */
  AxTiming timing;
  AxPeakInfo peak;
  AxFigures fig;
  AxMemory mem;
  AxCommSummary comm;
  AxCkptSummary ckpt;
  AxCompressReport compress; /* rank 0's stage (codec NULL: no compression there) */
  AxEmbedSyncReport embed_sync; /* rank 0's column (on 0: no sparse embedding sync) */
  const AxSimInfo *sim; /* NULL: a real run */
  const AxProvenance *prov; /* NULL: written as null */
} AxSummary;

/* The figures of a batch time (NAN batch_ms: none); peak_tflops_per_rank may be NAN;
 * recompute: whether the step ran activation checkpointing. */
void ax_summary_figures(AxFigures *f, const AxGptConfig *m, long long batch, int seq,
                        double batch_ms, int ranks, double peak_tflops_per_rank, int recompute);
/* This rank's timing window from its metrics (no MPI). */
void ax_summary_timing(AxTiming *t, const AxMetrics *m, int skip, int requested);
/* Peak from --peak-tflops or the GPU table (no measurement): 1 when found. */
int ax_summary_peak_lookup(AxPeakInfo *p, double peak_tflops_option, const char *device,
                           const char *gpu_name);
/* The summary as one JSON object on one line, without a newline. */
void ax_summary_write_json(FILE *f, const AxSummary *s);
/* Rank 0's output: the human line(s), the JSON line, and FILE when path is not NULL. */
int ax_summary_emit(const AxSummary *s, const char *path);

/* summary_comm.c: collective over the trainer's grid; rank 0 gets every rank's counters. */
int ax_summary_comm_gather(AxCommSummary *c, const AxTrainer *t);
void ax_summary_comm_free(AxCommSummary *c);
/* The "communication" member (null when nothing was gathered). */
void ax_summary_comm_json(AxJsonW *j, const AxCommSummary *c);
/* "sent per step 1.2 MB, 0.6 MB of it between virtual nodes (EMULATED link 10 Gb/s, ...)" */
void ax_summary_comm_describe(const AxCommSummary *c, char *buf, size_t cap);

/* summary_provenance.c: collective over g (NULL: this process alone); rank 0 gets the MPI
 * library, the BLAS and every rank's host. */
int ax_summary_provenance_gather(AxProvenance *p, const AxGrid *g, const char *my_host);
void ax_summary_provenance_free(AxProvenance *p);
/* The "provenance" member (null when p is NULL). */
void ax_summary_provenance_json(AxJsonW *j, const AxProvenance *p);

/* summary_ckpt.c: collective over the trainer's grid; rank 0 gets every rank's figures. */
int ax_summary_ckpt_gather(AxCkptSummary *c, const AxTrainer *t);
void ax_summary_ckpt_free(AxCkptSummary *c);
/* The "memory_checkpoints" member (nothing when c->ranks is 0). */
void ax_summary_ckpt_json(AxJsonW *j, const AxCkptSummary *c);

/* Collective over the trainer's grid: reduces the timing window, resolves the peak (measures
 * the CPU GEMM peak at the run's shapes on every rank when needed), gathers memory marks; rank 0 prints the human
 * line and the JSON line and writes --summary. Every rank returns the same status. */
int ax_summary_finish(const AxTrainer *t, const AxTrainConfig *cfg, const AxMetrics *m);

#endif
