/* train_config.h — every option of `axonn train`, its defaults and its checks, in groups
 * (below). The option names are the command-line contract (`axonn train --help`, the README):
 * scripts, config files and the summary's config object depend on them. */
#ifndef AX_TRAIN_CONFIG_H
#define AX_TRAIN_CONFIG_H

#include "src/plan/fusion.h"
#include "models/gpt_config.h"
#include "src/core/options.h"
#include "src/core/tp_comm.h"
#include "src/core/watchdog.h"
#include "src/memckpt/memckpt.h"

typedef enum { AX_LR_CONSTANT = 0, AX_LR_COSINE } AxLrKind;

typedef enum { AX_PREC_FP32 = 0, AX_PREC_BF16, AX_PREC_FP16 } AxPrecision;
/* auto: dynamic loss scaling for fp16 compute only (bf16 and fp32 do not need it). */
typedef enum { AX_LOSS_SCALING_AUTO = 0, AX_LOSS_SCALING_DYNAMIC, AX_LOSS_SCALING_OFF } AxLossScaling;

/* The configuration in groups: each module takes the group it needs (the memory checkpoints
 * AxMemCkptOptions, the simulator the model and grid, ...). The option table in
 * train_config.c lists the groups in this order, and its names (not these fields) are the
 * command-line, config-file and summary-JSON contract. */
typedef struct {
  char *preset; /* --model: a preset (models/gpt_presets.h); explicit dimension flags win */
  char *init;
  int layers, hidden, heads, seq, vocab;
  double dropout; /* GPT-2's residual and embedding dropout (models/dropout.h) */
  double attention_dropout; /* GPT's attention-probability dropout (models/dropout.h) */
} AxModelOptions;

typedef struct {
  char *shards, *val_shards; /* --data, --val-data: llm.c token shards */
  int shuffle;
  long long seed;
  int batch, micro_batch;
} AxDataOptions;

/* The parallel grid, and the network it runs over. */
typedef struct {
  int g_inter, g_data;
  int gx, gy, gz; /* tensor-parallel grid (docs/tensor-parallel.md) */
  int tp_oar;     /* tensor parallel: OAR on */
  int tp_ors;     /* tensor parallel: ORS on */
  int tp_oag;     /* tensor parallel: OAG on */
  int tp_ag_cache; /* tensor parallel: gathered weights kept across micro-batches and for the
                   * recompute */
  double tp_gather_budget; /* MB of gathered block weights kept (< 0: every block) */
  int pipeline_limit;
  char *stage_layers;
  int allreduce; /* AxAllreduceAlgo */
  /* virtual nodes and the emulated link between them (mpi/link/link_emulator.h) */
  int ranks_per_node;  /* 0: the real nodes */
  char *emulate_link;  /* BW[,LATENCY] (mpi/link/link_spec.h); NULL: not emulated */
} AxGridOptions;

/* One default a compression recipe (train_recipe.h) set: the option or codec keys, the value
 * in effect, and the paper and section it comes from. */
typedef struct {
  const char *what;   /* "compress-warmup", "codec", ... */
  char value[160];
  const char *source; /* static text */
} AxRecipeItem;

/* What the recipes set in a run (ax_train_resolve_compression): nothing when codec is NULL. */
typedef struct {
  const char *codec; /* the recipe's codec (static); NULL: no recipe applied */
  int n;
  AxRecipeItem item[8];
} AxRecipeApplied;

/* Gradient compression (mpi/casync/casync.h, offload/grad_compress.h) and Optimus-CC on the
 * pipeline (pipeline/backprop_compress.h). */
typedef struct {
  char *compress;           /* codec spec, "none": off, "auto": Espresso with compress_codec */
  char *compress_codec;     /* --compress auto's codec */
  char *fusion;             /* --fusion, NULL: the default */
  char *compress_scheme;    /* --compress-scheme: auto or an Espresso option */
  char *sparse_embedding_sync; /* auto|zen|allgather|dense */
  int zen_owners;           /* --zen-owners: AxZenOwners (hash|balanced) */
  int zen_hierarchy;        /* --zen-hierarchy: 0 auto (two levels where the ranks sit so), 1 flat */
  int compress_sync;        /* AxCasyncAlgo */
  char *compress_min_bytes; /* "auto" or a size */
  char *compress_warmup;    /* "auto" (the codec's recipe) or steps */
  char *compress_freeze_variance; /* "auto" (the recipe), 0 or 1 (1-bit Adam's frozen v) */
  char *compress_local_clip; /* "auto" (the recipe), 0 or 1 (DGC's local gradient clipping) */
  int compress_remeasure;   /* 1: a resumed run measures its costs again (0: the
                               checkpoint's, train_measured.h) */
  int compress_vectors;     /* 1: parts of at most one row (1-D tensors) may compress too */
  char *compress_stages;    /* "all" or F: the earliest fraction F of stages (Optimus-CC SC) */
  char *compress_backprop;  /* "none" or powersgd[:rank=R] */
  int lazy_error, epilogue_only;
  int fuse_embedding_sync;  /* tied wte gradient in one all-reduce over its 2 x D holders */
  /* Not options: what runs, resolved from the options and the codec's recipe
   * (ax_train_resolve_compression). */
  char codec_spec[192];     /* the codec's canonical spec, recipe keys added ("": none) */
  int warmup_steps;         /* plain steps first (data-parallel and backward messages) */
  int freeze_variance;      /* Adam's variance frozen after them */
  int local_clip;           /* DGC's local gradient clipping while compressing: each rank's
                               gradient clipped to --grad-clip / sqrt(G_data) before the codec,
                               in place of the global clip of the sum */
  AxRecipeApplied recipe;
} AxCompressionOptions;

/* The optimizer, its schedule and its offload (offload/). */
typedef struct {
  int steps;
  double lr, min_lr_frac;
  int lr_schedule; /* AxLrKind */
  int warmup;
  double weight_decay, beta1, beta2, eps, grad_clip;
  int decay_all;
  int offload;         /* 1: chunked all-reduce interleaved with the host AdamW */
  int optimizer_device; /* --optimizer: 0 host (the arena), 1 device (offload/device_opt.h) */
  long long bucket_size;
  int coarsening;
  int optimizer_threads;
  int allreduce_dtype; /* AxCommDtype index: 0 fp32, 1 bf16 */
  int progress;        /* 0: progress calls, 1: communication thread */
  int dp_sync_early;   /* 1: the data-parallel sum starts in the last micro-batch's backward */
  int loss_scaling;    /* AxLossScaling */
  int loss_scale_window; /* clean steps before the scale doubles */
} AxOptimOptions;

/* Where and how the model computes. */
typedef struct {
  char *device;
  int precision; /* AxPrecision */
  int fused_attention; /* --attention: 0 explicit, 1 fused where the backend has it */
  int cuda_aware_mpi; /* 0 auto, 1 off, 2 on (choice index of auto|0|1) */
  int threads, bind;
  int checkpoint_activations, ac;
} AxExecOptions;

/* --val-steps all: every whole batch of the validation data (the trainer counts them). */
enum { AX_VAL_STEPS_ALL = -1 };

typedef struct {
  char *metrics, *metrics_jsonl, *tensorboard, *save;
  int val_every;
  char *val_steps_arg; /* --val-steps as given: N or all */
  int val_steps;       /* batches per validation; AX_VAL_STEPS_ALL until the trainer counts them */
  char *trace, *trace_steps;
  int log_every, quiet;
  char *summary;
  int timing_skip, timing_steps;
  double peak_tflops;
  int dry_run;
} AxOutputOptions;

/* File checkpoints and resume (src/io/checkpoint.h). */
typedef struct {
  char *checkpoint_dir;
  int checkpoint_every, keep, resume;
} AxCkptOptions;

/* In-memory checkpoints: AxMemCkptOptions (src/memckpt/memckpt.h). */

/* Fault and timing injection for tests, and the watchdog (src/core/watchdog.h). */
typedef struct {
  int debug_overflow_step;
  int debug_delay_stage, debug_delay_ms;
  int debug_forward_ms, debug_backward_ms; /* every stage, every forward / backward */
  double step_timeout; /* seconds per step, validation, checkpoint, final save; 0: off */
  double startup_timeout; /* seconds for the start-up; 0: step_timeout's */
  int debug_hang_rank, debug_hang_step, debug_hang_mode; /* AxDebugHang */
} AxDebugOptions;

typedef struct {
  AxModelOptions model;
  AxDataOptions data;
  AxGridOptions grid;
  AxCompressionOptions compression;
  AxOptimOptions optim;
  AxExecOptions exec;
  AxOutputOptions output;
  AxCkptOptions ckpt;
  AxMemCkptOptions memckpt;
  AxDebugOptions debug;
} AxTrainConfig;

extern const AxOptionTable AX_TRAIN_OPTIONS;

/* Parses argv into cfg (defaults, --config FILE, then flags), then resolves the compression
 * recipe (below). *help is set for --help. */
int ax_train_config_parse(AxTrainConfig *cfg, int argc, char **argv, AxOptState *st);
/* The compression in effect, into cfg->compression's codec_spec, warmup_steps,
 * freeze_variance and recipe: --compress-stages F without --compress takes Optimus-CC's
 * PowerSGD; the codec's recipe (train_recipe.h) adds its codec keys the spec does not give, and
 * --compress-warmup auto and --compress-freeze-variance auto take the recipe's (0 without
 * one); every flag and key the user gave wins. Call again after changing --compress. Fails
 * with one line on a --compress-warmup or --compress-freeze-variance that is not auto or a
 * number; a codec spec that does not parse is left to ax_train_config_check. */
int ax_train_resolve_compression(AxTrainConfig *cfg, const AxOptState *st);
/* The model dimensions the options describe (without --init). */
AxGptConfig ax_train_model_config(const AxTrainConfig *cfg);
/* Checks that do not need files or MPI: batch divisibility, ranges, combinations (also
 * --emulate-link's text and --ranks-per-node against the grid's ranks). When they pass, warns
 * (ax_warn: rank 0, also under --quiet) about each flag given in `st` that the configuration
 * ignores, e.g. --lazy-error without --compress-backprop. */
int ax_train_config_check(const AxTrainConfig *cfg, const AxOptState *st);
/* The files written at the end of a run (--save, --summary, --trace) can be written: each
 * probed now (ax_file_check_writable: a /dev/full fails here), so that a run is never lost at
 * its end and fails before it writes anything. `train` (rank 0) and `simulate` call it before
 * their first step; --metrics is opened and --checkpoint-dir probed by their own set-up. */
int ax_train_check_outputs(const AxTrainConfig *cfg);
/* Ranks of the whole grid (G_inter x G_data x Gx x Gy x Gz) and of one tensor-parallel grid. */
long long ax_train_ranks(const AxTrainConfig *cfg);
/* --g-data, when the user left it unset, from the job's ranks: world / (--g-inter x --gx x --gy
 * x --gz) where those divide world (else it stays 1, and the grid's check says what the grid
 * needs after the configuration's own checks). */
int ax_train_grid_from_world(AxTrainConfig *cfg, const AxOptState *st, int world);
long long ax_train_tp_ranks(const AxTrainConfig *cfg);
/* The --gx x --gy x --gz grid as sizes only (coordinates 0): every rank of it holds shards of
 * the same sizes (models/tp_shard.h), so it stands for all of them in plans. */
AxTpComm ax_train_tp_sizes(const AxTrainConfig *cfg);
/* --compress-min-bytes: 1 for auto (*bytes untouched), 0 with *bytes set; AX_ERR otherwise. */
int ax_train_compress_min_bytes(const AxTrainConfig *cfg, int *is_auto, long long *bytes);
/* Whether --compress-backprop asks for compressed backpropagation. */
int ax_train_backprop_on(const AxTrainConfig *cfg);
/* Whether dynamic loss scaling is on (--loss-scaling; auto: for fp16 compute). */
int ax_train_loss_scaling_on(const AxTrainConfig *cfg);
/* One rank's pipeline message (an activation or its gradient): rows x cols floats, the rows of
 * its micro-batch's sequences (under tensor parallelism its Z rank's) by the channels (its Y
 * rank's). What --compress-backprop compresses. */
void ax_train_message_shape(const AxTrainConfig *cfg, size_t *rows, size_t *cols);
/* Whether --compress asks for compression (anything but "none"). */
int ax_train_compresses(const AxTrainConfig *cfg);
/* Whether --compress is auto (Espresso decides per tensor group). */
int ax_train_compress_auto(const AxTrainConfig *cfg);
/* The codec spec compression runs: --compress, or --compress-codec under --compress auto,
 * with its recipe's keys (ax_train_resolve_compression). */
const char *ax_train_codec_spec(const AxTrainConfig *cfg);
/* --compress-scheme: -1 for auto (Espresso decides), else the Espresso option every group not
 * kept plain takes (espresso.h); AX_ERR for a name that is neither. */
int ax_train_compress_scheme(const AxTrainConfig *cfg, int *option);
/* --fusion as fusion.h's spec (its default: auto under --compress auto, else none). */
int ax_train_fusion(const AxTrainConfig *cfg, AxFusionSpec *spec);
/* --sparse-embedding-sync: *algo, and *is_auto for auto (then *algo is untouched). */
int ax_train_sparse_embedding_sync(const AxTrainConfig *cfg, int *is_auto, int *algo);
/* Whether the ends of each pipeline sum wte over the data-parallel ranks before the tied pair
 * (auto or zen|allgather, 2+ stages and rows, no fused sync, no tensor parallelism). */
int ax_train_sparse_embedding_path(const AxTrainConfig *cfg);
/* --compress-stages: *fraction = F, or 1 for all; AX_ERR (one line recorded) when it is
 * neither all nor a number in [0, 1). */
int ax_train_compress_stage_fraction(const AxTrainConfig *cfg, double *fraction);
/* Whether --compress-stages selects stages (F < 1): an explicit request that they compress,
 * so on them every part the codec shrinks compresses whatever the cost model predicts
 * (unless --compress-min-bytes N sets a threshold). */
int ax_train_stages_requested(const AxTrainConfig *cfg);
/* How many of `stages` pipeline stages compress their data-parallel gradients: stages
 * [0, n) do (Optimus-CC §7: the earliest, floor(F x stages), never the last); every one with
 * all; 0 without --compress. */
int ax_train_compressed_stages(const AxTrainConfig *cfg, int stages);
/* The steps of --trace-steps A-B; fails with one line when it is not such a range (each of A
 * and B in [1, INT_MAX], A <= B). */
int ax_train_trace_range(const AxTrainConfig *cfg, int *lo, int *hi);
void ax_train_config_free(AxTrainConfig *cfg);

#endif
