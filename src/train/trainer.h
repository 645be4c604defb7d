/* trainer.h — one training run as seen by one rank: the grid, this rank's pipeline stage,
 * backend, optimizer, data and scheduler. Without MPI initialized it runs as a 1 x 1 grid.
 * `axonn train` drives it step by step; `axonn bench train` times the very same step.
 * Every function here is collective over the grid: all ranks call it together. */
#ifndef AX_TRAINER_H
#define AX_TRAINER_H

#include "models/gpt_config.h"
#include "mpi/coll/tp_mpi.h"
#include "mpi/grid.h"
#include "mpi/link/link_emulator.h"
#include "mpi/traffic.h"
#include "offload/adamw.h"
#include "offload/grad_compress.h"
#include "src/backend/backend.h"
#include "src/backend/peak.h"
#include "src/core/trace.h"
#include "src/memckpt/memckpt.h"
#include "train_compress.h"
#include "train_config.h"
#include "train_embed_sync.h"

typedef struct AxTrainer AxTrainer;

/* What one step produced (the metrics' CSV row and progress line, src/report/metrics.h). */
typedef struct {
  int step;
  double loss, lr, ms, grad_norm;
  double val_loss; /* NAN when not measured this step */
} AxStepRecord;

/* Builds everything the configuration describes (cfg must outlive the trainer). */
int ax_trainer_create(AxTrainer **out, const AxTrainConfig *cfg);
/* The same on a backend that `make` builds from the configuration's backend settings instead
 * of ax_backend_create (tests: the CPU backend posing as a device, tests/posing_device.h); the
 * trainer destroys it with ax_backend_destroy. */
typedef AxBackend *(*AxBackendMaker)(const AxBackendConfig *bc, void *ctx);
int ax_trainer_create_on(AxTrainer **out, const AxTrainConfig *cfg, AxBackendMaker make,
                         void *ctx);
void ax_trainer_destroy(AxTrainer *t);
void ax_trainer_print_header(const AxTrainer *t);
/* One optimizer step (steps count from 1): fills loss, lr, grad_norm and ms of rec. */
int ax_trainer_step(AxTrainer *t, int step, AxStepRecord *rec);
/* Runs validation when `step` is due (every --val-every steps and at the last step). */
int ax_trainer_validate_if_due(AxTrainer *t, int step, AxStepRecord *rec);
/* Rank 0 writes the whole model (llm.c format), gathered from the stages of row 0. */
int ax_trainer_save(AxTrainer *t, const char *path);
/* End of run: writes the merged trace when --trace was given. */
int ax_trainer_finish(AxTrainer *t);
/* Checkpoints (trainer_ckpt.c): writes step's state under --checkpoint-dir. */
int ax_trainer_checkpoint(AxTrainer *t, int step);
/* Loads the newest complete checkpoint under --checkpoint-dir; *step is its step (0: none,
 * start from scratch). */
int ax_trainer_resume(AxTrainer *t, int *step);
/* --memory-checkpoint-every (docs/memory-checkpoints.md): after a step that is due, starts
 * copying the state into node-local memory (finished, with the replicas, within the next
 * step); at a normal end, finishes the last copy and removes the job's memory files. */
int ax_trainer_memckpt_start(AxTrainer *t, int step);
int ax_trainer_memckpt_close(AxTrainer *t);
/* After a failure (each rank, before the job is torn down): a node that holds no complete
 * memory checkpoint removes its files, which no resume could use; the others are kept. */
void ax_trainer_memckpt_abandon(AxTrainer *t);
/* What this rank's memory checkpoints did (for the run summary; src/memckpt/memckpt.h). */
void ax_trainer_memckpt_stats(const AxTrainer *t, AxMemCkptStats *out);
/* *any = 1 on every rank when `local` is 1 on some rank. */
int ax_trainer_agree_flag(AxTrainer *t, int local, int *any);
/* The FLOPs a step executes: the 72 form, or the 96 form when activation checkpointing runs
 * (ax_gpt_train_flops). */
double ax_trainer_flops_per_step(const AxTrainer *t);
/* The weight-decay mask of a stage's flat parameter range for the host optimizer: one segment
 * per tensor, decayed when the model says so (matrices; biases and LayerNorm only with
 * decay_all). Returns the number of segments. Not collective. */
int ax_trainer_decay_segments(const AxStageLayout *lay, int decay_all,
                              AxParamSegment segs[AX_N_PARAMS]);
/* The tensors of a stage's flat parameter range for layer-wise gradient compression: one
 * range per tensor, one per layer for the stacked [L, ...] kinds, with the row length of each
 * matrix (lay->cols: wte, wpe, qkvw, attprojw, fcw C and fcprojw 4C, or under tensor
 * parallelism the shard's) or the length of a 1-D tensor. Writes at most cap into out (NULL:
 * counts only); returns how many there are. */
int ax_trainer_tensor_ranges(const AxStageLayout *lay, AxTensorRange *out, int cap);
/* 1 when this rank's stage recomputes blocks in the backward pass (activation checkpointing). */
int ax_trainer_recomputes(const AxTrainer *t);
/* The GEMM shapes this run's peak is measured at: the model's products at the rows of a
 * micro-batch, prepared by ax_peak_shapes for a CPU (gpu 0) or a GPU. Returns how many. */
int ax_trainer_peak_shapes(const AxTrainer *t, int gpu, AxGemmShape out[AX_PEAK_MAX_SHAPES]);
/* Entropy rate of the built-in corpus (nats/token), NAN with real data. */
double ax_trainer_loss_floor(const AxTrainer *t);
const AxGptConfig *ax_trainer_model(const AxTrainer *t);
const AxGrid *ax_trainer_grid(const AxTrainer *t);
/* Batches a validation takes (--val-steps, with `all` counted from the data). */
int ax_trainer_val_batches(const AxTrainer *t);
/* The end of a run (collective): every data-parallel replica's weights and Adam moments
 * compared with its column's by CRC-32, and the tied embedding's two copies on each row's
 * first and last stage with each other; a column or a pair that differs is warned about (a
 * defect). */
int ax_trainer_compare_data_replicas(AxTrainer *t);
/* The stage shards whose replicas differed at that check; -1: not compared (one data-parallel
 * rank, or not checked yet). */
int ax_trainer_data_replicas_differ(const AxTrainer *t);
/* The pairs of tied embedding copies (a pipeline row's, per tensor-parallel shard) that
 * differed at that check; -1: not compared (one stage, or not checked yet). */
int ax_trainer_tied_copies_differ(const AxTrainer *t);
/* Where a resumed run's state came from (the summary's run.resumed): from (AX_RESUMED_*), the
 * step, and what became of the compression state (AX_CODEC_STATE_*; NONE: the run keeps none). */
enum { AX_RESUMED_NONE = 0, AX_RESUMED_FILE, AX_RESUMED_MEMORY };
enum { AX_CODEC_STATE_NONE = 0, AX_CODEC_STATE_RESTORED, AX_CODEC_STATE_RESTARTED };
typedef struct {
  int from, step, codec_state;
} AxResumeReport;
void ax_trainer_resume_report(const AxTrainer *t, AxResumeReport *out);
/* The loss scale now (1: off) and the steps skipped so far on an overflow. */
void ax_trainer_loss_scale(const AxTrainer *t, double *scale, long long *skipped);
/* The peak of this rank's device allocations so far (backend.h: device_peak_bytes). */
size_t ax_trainer_device_peak_bytes(const AxTrainer *t);
const AxTrace *ax_trainer_trace(const AxTrainer *t);
/* This rank's virtual nodes and emulated link (mpi/link/link_emulator.h; NULL without MPI). */
const AxLinkEmu *ax_trainer_links(const AxTrainer *t);
/* Bytes this rank sent (mpi/traffic.h): over the whole run, or summed over its training steps
 * (*steps gets how many: validation, checkpoints and the saved model are not in a step). */
const AxTraffic *ax_trainer_traffic(const AxTrainer *t);
const AxTraffic *ax_trainer_step_traffic(const AxTrainer *t, int *steps);
/* This rank's tensor-parallel collectives (--gx/--gy/--gz) summed over its training steps, per
 * group and operation (steps as above); all zero without tensor parallelism. */
const AxTpStats *ax_trainer_step_tp(const AxTrainer *t);
/* How this rank's stage decided its gradient compression (train_compress.h; codec NULL: none
 * on this stage). */
void ax_trainer_compress_report(const AxTrainer *t, AxCompressReport *out);
/* How this rank's column summed the first stage's row-sparse wte gradient (on = 0 elsewhere). */
void ax_trainer_embed_sync_report(const AxTrainer *t, AxEmbedSyncReport *out);

#endif
