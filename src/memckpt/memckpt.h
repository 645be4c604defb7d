/* memckpt.h — in-memory checkpoints (Gemini, thesis ch. 6; docs/memory-checkpoints.md), as a
 * module the trainer attaches to its step: after every --memory-checkpoint-every steps each
 * node keeps the job's state in its shared memory (memckpt_store.h: three slots, the oldest
 * overwritten), the m - 1 other nodes of its replica group get copies of the stage files it
 * wrote (memckpt_replicas.c, scheduled into the link's idle spans), and --resume recovers from
 * the newest step whose every file some node still holds.
 *
 * What it may touch is what the trainer hands it (AxMemCkptView: the options, the grid, the
 * links, the optimizer's arena, the model and this rank's stage) and what it may ask of the
 * trainer goes through AxMemCkptOps (the manifest of a step, the whole stage gathered from its
 * tensor-parallel shards, loading a checkpoint, the link's cost). It never sees AxTrainer. */
#ifndef AX_MEMCKPT_H
#define AX_MEMCKPT_H

#include <mpi.h>

#include "models/gpt_stage.h"
#include "mpi/grid.h"
#include "mpi/link/link_emulator.h"
#include "offload/offload.h"
#include "src/io/checkpoint.h"
#include "src/plan/replica_schedule.h"

/* --replica-schedule */
typedef enum { AX_REPLICAS_IDLE = 0, AX_REPLICAS_AT_END = 1 } AxReplicaSchedule;

/* The options of memory checkpoints (the train config's `memckpt` group). */
typedef struct {
  int memory_checkpoint_every, replicas;
  char *run_name, *memory_dir;
  int replica_schedule;      /* AX_REPLICAS_IDLE or AX_REPLICAS_AT_END */
  double replica_idle_share; /* Gemini's mu */
} AxMemCkptOptions;

/* What the trainer lends the module for the run (pointers stay the trainer's). */
typedef struct {
  AxMemCkptOptions opt;
  const char *name;        /* the run's name: --run-name, or derived (the trainer's) */
  AxGrid *grid;            /* NULL: one process, no MPI */
  AxLinkEmu *links;        /* the nodes and the link between them */
  AxOffload *off;          /* the optimizer's fp32 master weights and moments */
  const AxGptConfig *model;
  const AxStageSpec *spec; /* this rank's stage */
  int tensor_parallel;     /* the stage is sharded: its file is gathered (ops.gather) */
  int optimizer_device;    /* --optimizer device: the state is not the arena's to map */
  int ranks_per_node;      /* --ranks-per-node (for messages) */
  int hang_rank, hang_step, hang_mode; /* --debug-hang-* (AxDebugHang's copy modes) */
} AxMemCkptView;

/* What the module asks of the trainer (ctx: the trainer). gather_open/gather/gather_close:
 * the stage's master weights and moments whole, on its tensor-parallel rank 0 (open: buffers
 * where this rank needs them; gather: collective over the stage's tensor-parallel ranks; the
 * result valid until close). */
typedef struct {
  void *ctx;
  int (*build_manifest)(void *ctx, int step, AxCkptFile *files, AxCkptManifest *man);
  int (*load_checkpoint)(void *ctx, const char *step_dir, int *step);
  int (*link_cost)(void *ctx, MPI_Comm probe, AxLinearCost *out);
  int (*gather_open)(void *ctx);
  int (*gather)(void *ctx, const AxStageLayout **whole, float *const **buf);
  void (*gather_close)(void *ctx);
} AxMemCkptOps;

typedef struct AxMemCkpt AxMemCkpt;

/* What this rank's memory checkpoints did (for the run summary); every == 0: none. The
 * settings and the three counts are the same on every rank. */
typedef struct {
  int every, replicas, nodes, idle_schedule;
  int copies, complete, skipped; /* copies made; complete (replicated, manifests written);
                                  * due checkpoints not taken (the interval widened) */
  int files_written;             /* stage files this rank wrote */
  int files_in_place;            /* of them, those its optimizer wrote in place (zero-copy:
                                  * the copy thread only CRC'd them) */
  double copy_cpu_s;             /* its copy thread's CPU time, all files */
  int steady_files;              /* of them, those written into a mapping made before */
  double steady_cpu_s;           /* (not a slot's first fill) and the CPU time they took */
  double finish_s;               /* its main thread's time joining and settling copies */
  int interval, late;            /* checkpoints taken every `interval` steps (widened from
                                  * `every` where the link's idle spans cannot hold the
                                  * replicas); copies whose leftover went at the settle before
                                  * the next checkpoint (the same on every rank) */
  unsigned long long bytes_in_spans, bytes_outside; /* replica bytes it sent in idle spans,
                                                     * and at settles */
} AxMemCkptStats;

/* Setup (collective over the grid; *out NULL when --memory-checkpoint-every is 0): the tree
 * opened and locked on each node, the replicas planned and their link measured. */
int ax_memckpt_create(AxMemCkpt **out, const AxMemCkptView *view, const AxMemCkptOps *ops);
/* The trainer's step points (any may be called with mc NULL):
 *  step_begin   before the step's pipeline (the idle spans of the last step learned);
 *  tick         at every forward and backward of a micro-batch (replicas into idle spans);
 *  before_optim the last copy has read the state; the slot this step's state goes to chosen
 *               (zero-copy: the optimizer pointed at that slot's file);
 *  after_optim  the state moved there (updated: whether the optimizer ran);
 *  after_loss   the copy's outcome, replicas and manifests (collective);
 *  step_end     this step's copy started when due (on a thread). */
int ax_memckpt_step_begin(AxMemCkpt *mc, int step);
int ax_memckpt_tick(AxMemCkpt *mc);
int ax_memckpt_before_optim(AxMemCkpt *mc);
void ax_memckpt_after_optim(AxMemCkpt *mc, int updated);
int ax_memckpt_after_loss(AxMemCkpt *mc);
int ax_memckpt_step_end(AxMemCkpt *mc, int step);
/* --resume: when memory holds a complete checkpoint newer than file_step (-1: none), loads
 * it through ops.load_checkpoint (*recovered = 1, *step its step). Collective. */
int ax_memckpt_recover(AxMemCkpt *mc, int file_step, int *recovered, int *step);
/* A normal end: the last copy finished, the job's memory files removed (collective). */
int ax_memckpt_close(AxMemCkpt *mc);
/* After a failure (each rank, before the job is torn down): a node that holds no finished
 * copy removes its files, which no resume could use; the others are kept. */
void ax_memckpt_abandon(AxMemCkpt *mc);
void ax_memckpt_free(AxMemCkpt *mc);
void ax_memckpt_stats(const AxMemCkpt *mc, AxMemCkptStats *out);
void ax_memckpt_print(const AxMemCkpt *mc); /* the run header's line */

#endif
