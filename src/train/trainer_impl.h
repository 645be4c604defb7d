/* trainer_impl.h — the trainer's state, shared by its own files (src/train: its setup in
 * trainer.c, its step in train_step.c and the parts they call); nothing outside src/train
 * includes it. Subsystems below the trainer (src/memckpt) get a view and an ops struct. */
#ifndef AX_TRAINER_IMPL_H
#define AX_TRAINER_IMPL_H

#include <pthread.h>

#include "train_lr.h"
#include "models/gpt_stage.h"
#include "mpi/coll/collectives.h"
#include "mpi/grid.h"
#include "mpi/link/link_emulator.h"
#include "mpi/coll/tp_mpi.h"
#include "mpi/traffic.h"
#include "mpi/casync/casync_cost.h"
#include "mpi/compress/codec.h"
#include "offload/device_opt.h"
#include "offload/grad_compress.h"
#include "offload/interleave.h"
#include "offload/loss_scale.h"
#include "offload/offload.h"
#include "pipeline/scheduler.h"
#include <pthread.h>

#include "src/backend/backend.h"
#include "src/core/fileio.h"
#include "src/io/checkpoint.h"
#include "src/core/threadpool.h"
#include "src/core/trace.h"
#include "src/io/dataloader.h"
#include "src/io/markov.h"
#include "src/plan/replica_schedule.h"
#include "src/plan/compress_auto.h"
#include "train_compress.h"
#include "train_measured.h"
#include "src/memckpt/memckpt.h"
#include "train_hooks.h"
#include "trainer.h"

typedef struct AxSparseSync AxSparseSync;
typedef struct AxSparseHier AxSparseHier;

/* The first stage's sparse embedding sync (trainer_embed_sync.c). */
typedef struct {
  int on;                 /* this rank sums wte over the data column before the tied pair */
  int decides;            /* auto: chosen each step from the row counts */
  int algo;               /* AxSparseSyncAlgo */
  AxSparseSync *sync;     /* first stage only */
  uint32_t rows, *idx;    /* wte's rows; this step's touched rows */
  unsigned char *seen;    /* [rows] scratch: a row looked up this step */
  size_t cols;
  unsigned long long *counts; /* [D] every rank's touched rows (auto) */
  AxLinearCost link;      /* what auto weighs bytes and messages by */
  int priced;             /* link is an emulated link's cost (0: bytes alone, no link known) */
  long long steps;        /* syncs done */
  int owners;             /* AxZenOwners in effect */
  int per_node, nodes;    /* the column's ranks to a node (1: uneven) and nodes */
  AxTwoLevel levels;      /* the column's node and cross communicators (usable: two levels) */
  AxSparseHier *hier;     /* Zen in two levels (sparse_hier.h); NULL: flat */
  AxEmbedSyncReport report; /* the first step's, for the summary */
} AxEmbedSync;

/* trainer_tp.c: whole stages (what files and the initialization hold) and this rank's shards.
 * Open: n whole-stage host buffers (the shard buffers themselves without tensor parallelism),
 * on every rank of the stage or (everywhere = 0: for a gather) on its cell rank 0 only.
 * Extract: whole -> this rank's shards. Gather (collective over the stage's tensor-parallel
 * ranks): cell rank 0's whole buffers get every rank's shards. */
typedef struct {
  AxStageLayout whole;
  float *buf[3];
  int n, owned;
} AxWholeStage;


struct AxTrainer {
  AxTrainConfig cfg; /* a shallow copy; strings stay owned by the caller */
  AxGptConfig model;
  AxGrid grid;
  int have_grid;
  int *first_block; /* P + 1 entries: stage s owns blocks [first_block[s], first_block[s+1]) */
  AxStageSpec spec;
  AxTpMpi tpm;    /* the tensor-parallel layers' communicator (--gx/--gy/--gz) */
  int shard;      /* sequences per data-parallel row */
  int micro;      /* sequences per micro-batch */
  int n_micro;    /* micro-batches per row per step */
  int limit;      /* pipeline limit */
  AxBackend *be;
  AxBackendMaker make_backend; /* NULL: ax_backend_create (tests hand in another, trainer.h) */
  void *make_backend_ctx;
  AxGptStage *stage;
  AxScheduler sched;
  int have_sched;
  int device_buffers;     /* pipeline messages to MPI in device memory (--cuda-aware-mpi) */
  char mpi_path_why[192]; /* why (or why not), for the header */
  AxPool *opt_pool;
  AxOffload off;   /* fp32 master weights, Adam state, host gradients (offload/) */
  AxDeviceOpt dopt; /* --optimizer device: the state in device memory (off.master etc. are its
                       home, up to date where ax_trainer_state_to_host said so) */
  AxLossScale loss_scale;
  long long adam_steps; /* optimizer steps taken (skipped steps do not count) */
  AxLoader train, val;
  int have_data, have_val;
  AxMarkov markov;
  uint16_t *corpus; /* synthetic train + val tokens */
  double floor;     /* entropy rate of the synthetic corpus, NAN with real data */
  int32_t *inputs, *targets; /* this row's shard of the batch */
  AxLrSchedule lr;
  AxTrace trace;
  AxCommBytes comm_bytes;
  AxLinkEmu *links;     /* virtual nodes and the emulated link (NULL without MPI) */
  AxTraffic traffic;    /* every byte this rank sent through our engines (grid.comm_cfg) */
  AxTraffic step_traffic; /* what the training steps sent, summed over them */
  int traffic_steps;    /* the steps step_traffic covers */
  AxTpStats step_tp;    /* the tensor-parallel collectives of those steps */
  /* --compress (train_compress.c) */
  AxCodec *codec;          /* NULL: no compression */
  AxGradCompress gc;       /* per-part decisions and codec states */
  AxShapedCodecs shaped;   /* the codec with a tensor's cols=, one per row length (cols=auto) */
  AxCasyncCosts compress_costs;
  AxSizedTimes compress_casync[AX_PROBE_ALGOS]; /* CaSync timed at start-up under each
                              algorithm the run probed (train_compress.c: probed_algos) */
  int compress_profiled;   /* 1: the cost model decided (costs above) */
  int replicas_differ;     /* stage shards whose data-parallel replicas differ at the end
                              (trainer_replicas.c); -1: not compared */
  int tied_differ;         /* pairs of tied wte copies that differ then; -1: not compared */
  AxMeasured measured;     /* the figures the cost model decided on, as measured or as a
                              resumed checkpoint kept them (train_measured.h) */
  AxDataLink compress_link; /* what carries the data-parallel sum (agreed over all ranks) */
  int compress_in_memory;  /* 1: the cost model's parts kept plain: the ranks share memory */
  int compress_somewhere;  /* 1: some stage of the job compresses a part after the warm-up
                              (agreed over all ranks) */
  int momentum_somewhere;  /* 1: ... under a codec that carries Adam's momentum */
  int plain_somewhere;     /* 1: some stage of the job compresses nothing (agreed likewise) */
  AxAutoCompress auto_compress; /* --compress auto's groups and decisions (n_groups 0: none) */
  AxTwoLevel two_level;    /* --compress auto: the data-parallel ranks' node and cross
                              communicators (usable 0: none) */
  AxEmbedSync embed_sync;  /* --sparse-embedding-sync (trainer_embed_sync.c) */
  /* --compress-backprop (train_backprop.c) */
  AxBackprop backprop;
  int have_backprop;
  int ckpt_lock; /* rank 0: the fd holding --checkpoint-dir's lock, -1 when none */
  struct {          /* the newest complete checkpoint, once found (trainer_ckpt.c): the
                       set-up's measured costs and the resume take the same one */
    int known, found, step;
    char dir[1024];
  } latest;
  AxMemCkpt *mc;       /* --memory-checkpoint-every (NULL: off; trainer_memckpt.c) */
  AxWholeStage mc_whole; /* what it asked gathered (ops.gather) */
  char run_name[80];   /* --run-name, or derived from the run (trainer_memckpt.c) */
  char weights_from[1100]; /* a resumed run's checkpoint and step, for the header ("": none) */
  AxResumeReport resumed;  /* the same for the summary (trainer.h) */
  AxStepHooks hooks;   /* who attaches to the step's named points (train_hooks.h) */
  /* --dp-sync-early (train_early_sync.c) */
  AxEarlySum *early;          /* the step's early sum: open from its last backward to the sum */
  AxReduceSpec early_spec;    /* the sum's spec (early set), and its traffic class */
  AxCommConfig early_cc;
  AxTensorRange *early_tensors; /* the stage's tensors, and their offsets: the pieces' cuts */
  size_t *early_cuts;
  int n_early_tensors;
  int early_done;             /* blocks [early_done, n_blocks) of the last backward are done */
  int backwards;              /* backward passes so far in this step */
  int early_in_backward;      /* pieces the last backward started (this step) */
  int early_reported;
  long long early_started;    /* pieces started early, over the steps */
  /* per-step accumulation by the stage callbacks */
  double loss_sum;
  int validating;
  int step_now;   /* the training step the forwards run in (their dropout masks') */
};

int ax_trainer_tp_on(const AxTrainer *t);
int ax_trainer_whole_open(AxTrainer *t, AxWholeStage *w, float *const shards[], int n,
                          int everywhere);
void ax_trainer_whole_extract(AxTrainer *t, AxWholeStage *w, float *const shards[]);
int ax_trainer_whole_gather(AxTrainer *t, AxWholeStage *w, float *const shards[]);
void ax_trainer_whole_close(AxWholeStage *w);
/* Collective: every tensor that tensor-parallel ranks replicate is alike bit for bit, weights
 * and Adam moments, over each group that replicates it (a CRC per tensor compared over the
 * group); one error naming the first that is not, agreed by every rank. */
int ax_trainer_check_replicas(AxTrainer *t);

/* trainer_ckpt.c, shared with trainer_memckpt.c: the manifest of a checkpoint of `step` (files:
 * P entries, filled in later), and loading the checkpoint of step_dir (any grid). */
int ax_trainer_build_manifest(AxTrainer *t, int step, AxCkptFile *files, AxCkptManifest *man);
int ax_trainer_load_checkpoint(AxTrainer *t, const char *step_dir, int *step);


/* trainer_memckpt.c: the memory checkpoints created and attached to the step (a setup phase;
 * nothing without --memory-checkpoint-every). */
int ax_trainer_setup_memckpt(AxTrainer *t);

/* train_step.c */
int ax_trainer_make_ops(AxTrainer *t, AxStageOps *ops);

/* train_reduce.c: the gradients' all-reduce algorithm (--allreduce's, or the device
 * optimizer's) and the data-parallel sum's spec. */
AxAllreduceAlgo ax_trainer_grads_algo(const AxTrainer *t);
/* (cc: the grid's configuration as data-parallel traffic, living as long as the spec is used) */
AxReduceSpec ax_trainer_reduce_spec(AxTrainer *t, const AxCommConfig *cc);

/* --dp-sync-early on where it applies: 2 or more data-parallel ranks. */
static inline int ax_trainer_early_on(const AxTrainer *t) {
  return t->cfg.optim.dp_sync_early && t->grid.D > 1;
}
/* train_early_sync.c: --dp-sync-early's setup phase and teardown; at each backward's start,
 * the step's last one opens the sum and hooks the stage's blocks; after that backward, the
 * hook is taken off; after the sum, the sum is closed (the first step's counts logged). */
int ax_trainer_setup_early_sync(AxTrainer *t);
void ax_trainer_free_early_sync(AxTrainer *t);
int ax_trainer_early_begin(AxTrainer *t);
void ax_trainer_early_end_backward(AxTrainer *t);
void ax_trainer_early_close(AxTrainer *t, int step);
/* train_timeline.c: the local block whose backward makes tensor r final (-1: only the whole
 * backward: the embeddings, the final LayerNorm, wte); ready[n] of the tensors tr[n], when
 * each is final from the backward's start, and *total the backward's, measured on this stage
 * (collective over the data-parallel column). */
int ax_trainer_final_after(const AxTrainer *t, const AxTensorRange *r);
int ax_trainer_backward_timeline(AxTrainer *t, const AxTensorRange *tr, int n, double *ready,
                                 double *total);
/* trainer_ckpt.c: creates and locks --checkpoint-dir (rank 0) and checks that every rank that
 * writes into it can (a setup phase; nothing when there is no --checkpoint-dir). */
int ax_trainer_setup_checkpoints(AxTrainer *t);
/* --resume with compression (before ax_trainer_setup_compress): where the newest checkpoint
 * holds every rank's measured figures under this run's configuration, they are taken back
 * (train_measured.h) and nothing is measured; else the run measures (--compress-remeasure 1:
 * always). Collective. */
int ax_trainer_keep_measured(AxTrainer *t);
/* trainer_embed_sync.c: whether wte's gradient is summed over the data-parallel ranks before
 * the stage's data-parallel sum (fused embedding sync, or the sparse path), the setup phase
 * (collective over the data column), the sum itself (before the tied pair's), teardown. */
int ax_trainer_wte_presummed(const AxTrainer *t);
/* train_step.c: with --optimizer device, the host arena's master weights and moments brought
 * up to date from the device, for whatever reads them next (files); else nothing to do. */
int ax_trainer_state_to_host(AxTrainer *t);
int ax_trainer_setup_embed_sync(AxTrainer *t);
int ax_trainer_sync_embed_data(AxTrainer *t);
void ax_trainer_free_embed_sync(AxTrainer *t);
/* train_compress.c: the codec, the decisions and states (a setup phase, collective when the
 * cost model profiles); each step's codec context; the header's lines. */
int ax_trainer_setup_compress(AxTrainer *t);
/* trainer_link.c: the link's send cost f(s) = latency + s / bandwidth: the emulated link's
 * figures, or a ping-pong fitted between the first two ranks of probe (collective over probe;
 * a rank outside it passes MPI_COMM_NULL and gets {0, infinity}). */
int ax_trainer_link_cost(AxTrainer *t, MPI_Comm probe, AxLinearCost *out);
/* trainer_link.c: what carries every column's data-parallel sum, the same on every rank
 * (collective over the world): the emulated link when one runs between the virtual nodes of
 * some column, else a real network when some column's ranks do not share one machine's
 * memory, else memory. */
int ax_trainer_data_link(AxTrainer *t, AxDataLink *out);
/* trainer_link.c: the virtual node of each of this rank's data-parallel ranks (node[D], in row
 * order) and how many share a node, the same figure on every one of them: the fewest on any
 * node holding one (1 when they spread unevenly). Collective over the column. */
int ax_trainer_data_nodes(AxTrainer *t, int *node, int *g);
void ax_trainer_compress_step(AxTrainer *t, int step);
void ax_trainer_print_compress(const AxTrainer *t);
/* train_backprop.c: compressed backpropagation's link state (a setup phase before the
 * scheduler's), each step's codec context, the header's line, the checkpoint label. */
int ax_trainer_setup_backprop(AxTrainer *t);
void ax_trainer_backprop_step(AxTrainer *t, int step);
void ax_trainer_print_backprop(const AxTrainer *t);
void ax_trainer_backprop_label(const AxTrainer *t, char *buf, size_t cap);
/* The step Adam's second moment stays frozen at, on the parameters that take the codec's settings,
 * while gradients are compressed (--compress-freeze-variance), 0 when it is updated as usual. */
int ax_trainer_v_frozen_at(const AxTrainer *t);
/* Adam's beta1 this step on the parameters that take the codec's settings: --beta1, or 0 while
 * a codec that applies its own momentum (DGC's momentum correction) compresses gradients (Lin
 * et al.: the momentum moves into the codec, the optimizer applies what arrives). */
double ax_trainer_adam_beta1(const AxTrainer *t);
/* DGC's local gradient clipping this step (--compress-local-clip, Lin et al. §3.3), with
 * --grad-clip > 0 and 2+ data-parallel ranks. Row: 1 while some stage of the job compresses;
 * then every rank takes its own gradient's norm (its pipeline row's, a collective along the row
 * and the tensor groups, so every stage of the row takes part). Stage: 1 where this stage
 * compresses too; it clips its gradient to ax_trainer_local_clip_threshold by that norm before
 * the sum, and the summed gradient is not clipped again (a stage that stays plain clips the
 * sum by the global norm, as without compression). */
int ax_trainer_row_clips_locally(const AxTrainer *t);
int ax_trainer_clips_locally(const AxTrainer *t);
/* Under local clipping, the range of this stage's gradient left out of it and clipped by the
 * global norm once summed: the range the data-parallel ranks summed before (no rank's own), and
 * the tied embedding's copy wherever a stage of the job compresses nothing (that end clips its
 * copy by the global norm, so both ends do, and the copies take one update); lo == hi: none. */
void ax_trainer_clip_left_out(const AxTrainer *t, const AxReduceSpec *r, size_t *lo, size_t *hi);
/* --grad-clip / sqrt(G_data): the global threshold scaled by N^-1/2 (DGC §3.3). */
double ax_trainer_local_clip_threshold(const AxTrainer *t);

#endif
