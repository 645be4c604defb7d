/* trainer_impl.h — the trainer's state, shared by its setup (trainer.c) and its step
 * (train_step.c); nothing outside those two files includes it. */
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
#include "trainer.h"

typedef struct AxSparseSync AxSparseSync;

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
  long long steps;        /* syncs done */
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

/* One file from one rank's slot to another rank's (memory checkpoints). */
typedef struct {
  int file; /* index into the manifest's files, or AX_MEMCKPT_MANIFEST */
  int from, to;
} AxMemTransfer;
enum { AX_MEMCKPT_MANIFEST = -1 };
/* A slot's stage file, mapped once and kept from copy to copy (a fresh mapping costs a page
 * fault per page), with the identity of the file it maps. */
typedef struct {
  AxFileMap map;
  unsigned long long dev, ino;
} AxSlotMap;
/* What each rank tells the others at a memory checkpoint's settle (trainer_memckpt.c). */
typedef struct {
  int rc, handed;          /* its part went well; its replicas are all handed over */
  long long data_position; /* of the copy just joined (0 on ranks that load no data) */
  AxCkptFile file;         /* the stage file it wrote (bytes 0: none) */
} AxSettleNote;
/* The tag of a file's messages on the memory checkpoints' communicator. */
static inline int ax_memckpt_tag(int file) { return file + 2; }

/* A replica transfer as this rank takes part in it (trainer_replicas.c). */
typedef struct {
  int file, peer;                  /* the stage file; the rank at the other end */
  int node;                        /* sender: the node it goes to (the link it uses) */
  int sends;                       /* 1: this rank sends it; 0: receives it */
  int size_known;                  /* sender: its size was sent; receiver: it arrived */
  int landed;                      /* every byte sent and completed, or received and written */
  unsigned long long size, done;   /* the file's bytes; sent (cut into chunks) or received */
  unsigned long long size_msg;     /* receiver: the size message's buffer */
  MPI_Request req;                 /* receiver: the receive in flight */
  AxFileMap into;                  /* receiver: a view of the slot file's map; the bytes land in it */
  AxLinkSend *chunks;              /* sender: the size message and the chunks */
  int n_chunks, cap_chunks;
} AxReplicaXfer;

enum {
  AX_REPLICA_SPANS = 256, /* idle spans kept per link and step */
  AX_REPLICA_MAX_WAIT = 2, /* a copy's replicas use the idle spans of at most this many steps;
                            * at that step's settle what is left is sent at once */
};

/* In-memory checkpoints (trainer_memckpt.c, docs/memory-checkpoints.md). */
typedef struct {
  int on;            /* --memory-checkpoint-every > 0 */
  char name[80];     /* --run-name, or derived from the run */
  int lock_fd;       /* a node leader's hold on node-K/lock (-1: none) */
  int replicas;      /* copies of a node's files, its own counted */
  int node, n_nodes; /* this rank's (virtual) node */
  int *node_of, *stage_of, *writes; /* [world size]: writes = 1 for the rank that writes its
                                     * stage's file into its node's slot */
  AxSettleNote *notes;              /* [world size]: the settle's exchange */
  int *crc_part, *crc_parts;        /* [world size]: a writer's part of its stage file's CRC, of
                                     * how many (1: all of it; more where several nodes hold
                                     * identical copies of the stage and send none of them) */
  uint32_t *crc_scratch;            /* [n_files][n_nodes]: the parts' CRCs of each stage file */
  AxSlotMap *maps;                  /* [AX_MEMCKPT_SLOTS][stages]: ax_memckpt_slot_map */
  int n_files;                      /* stages of the job: the maps' second dimension */
  MPI_Comm comm;     /* the transfers of replicas and of recovery (have_comm) */
  int have_comm;
  /* the copy in flight (pending on every rank from start to finish; joined once the copy
   * thread is done with the state) */
  int pending, joined, step, slot;
  AxWholeStage whole;
  AxCkptFile mine;        /* what this rank wrote (bytes 0: nothing) */
  AxCkptManifest man;     /* the step's, its files filled in by finish */
  pthread_t thread;
  int thread_running, thread_rc;
  char thread_err[512];
  int copies;    /* steps copied */
  double copy_s; /* seconds the main thread spent finishing them (waits, replicas) */
  double copy_cpu_s; /* CPU seconds of the copy thread (CRC and write of the stage files) */
  int files_written; /* stage files this rank wrote into its slots */
  int files_in_place; /* of them, those the optimizer had written (zero-copy) */
  double steady_cpu_s; /* the same for the files written into a mapping made before (not */
  int steady_files;    /* a slot's first fill, which faults the mapping's pages in) */
  int send_fresh;      /* the file of the copy in flight goes into a fresh mapping */
  int last_slot; /* of the newest complete copy on this node (-1: none yet) */
  /* zero-copy (ax_trainer_memckpt_aim): the slot each step's optimizer writes the state into,
   * the same on every rank of a node (-1: none yet); whether this rank's optimizer writes
   * there itself (a writer without tensor parallelism whose stage file holds its arrays
   * whole), and the slot whose file holds this rank's master weights as they are (-1: none) */
  int state_slot, zero_copy, master_slot;
  AxCkptSections sections; /* of this rank's stage file (zero_copy) */
  const float *fill[3];   /* what the copy thread writes of master, m, v (NULL: in place) */
  /* the step's replicas (trainer_replicas.c): from start until they have all landed */
  int replicating;
  AxReplicaXfer *xfer;
  int n_xfer;
  AxFileMap send;             /* the file this rank writes (a writer's copy thread) and sends
                               * its replicas from: a view of its slot map */
  _Atomic int file_ready;     /* the copy thread is done with the file and its mapping */
  /* Gemini's schedule (--replica-schedule idle) */
  int idle;
  AxReplicaLink link;         /* the replicas' link model and Algorithm 6.2's parameters */
  long long step_begin_ns, prev_begin_ns;
  AxSpan *spans;              /* [n_nodes][AX_REPLICA_SPANS]: this step's idle spans */
  int *n_spans;               /* [n_nodes] */
  double *span_used, *busy_until; /* [n_nodes][AX_REPLICA_SPANS] link time taken; [n_nodes] */
  AxLinkUse *uses;            /* scratch: a link's log */
  /* what the schedule did (the end-of-run line) */
  int waited;  /* settles the copy in flight has waited */
  int skipped, landed_copies, flights, overdue; /* checkpoints skipped; copies replicated;
                                                 * steps they took; copies flushed overdue */
  unsigned long long idle_bytes, end_bytes; /* sent in idle spans; sent at a settle */
} AxMemCkpt;

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
  int compress_profiled;   /* 1: the cost model decided (costs above) */
  AxAutoCompress auto_compress; /* --compress auto's groups and decisions (n_groups 0: none) */
  AxTwoLevel two_level;    /* --compress auto: the data-parallel ranks' node and cross
                              communicators (usable 0: none) */
  AxEmbedSync embed_sync;  /* --sparse-embedding-sync (trainer_embed_sync.c) */
  /* --compress-backprop (train_backprop.c) */
  AxBackprop backprop;
  int have_backprop;
  int ckpt_lock; /* rank 0: the fd holding --checkpoint-dir's lock, -1 when none */
  AxMemCkpt mc;  /* --memory-checkpoint-every */
  /* per-step accumulation by the stage callbacks */
  double loss_sum;
  int validating;
};

int ax_trainer_tp_on(const AxTrainer *t);
int ax_trainer_whole_open(AxTrainer *t, AxWholeStage *w, float *const shards[], int n,
                          int everywhere);
void ax_trainer_whole_extract(AxTrainer *t, AxWholeStage *w, float *const shards[]);
int ax_trainer_whole_gather(AxTrainer *t, AxWholeStage *w, float *const shards[]);
void ax_trainer_whole_close(AxWholeStage *w);

/* trainer_ckpt.c, shared with trainer_memckpt.c: the manifest of a checkpoint of `step` (files:
 * P entries, filled in later), and loading the checkpoint of step_dir (any grid). */
int ax_trainer_build_manifest(AxTrainer *t, int step, AxCkptFile *files, AxCkptManifest *man);
int ax_trainer_load_checkpoint(AxTrainer *t, const char *step_dir, int *step);

/* trainer_memckpt.c: in-memory checkpoints. Setup (a phase); start after a step that is due
 * (the copy runs on a thread); join before the optimizer next touches the state (the copy
 * thread has read it; local); settle once a step, after the step's loss is agreed, and at the
 * end (collective: the copy's outcome; the replicas and manifests when every replica has
 * landed, or with flush = 1 at once); recover on --resume when memory holds a complete
 * checkpoint newer than file_step (-1: none), *recovered = 1 then. Start and close:
 * trainer.h. */
int ax_trainer_setup_memckpt(AxTrainer *t);
void ax_trainer_memckpt_join(AxTrainer *t);
/* Around the optimizer of a step (zero-copy, docs/memory-checkpoints.md): aim chooses the slot
 * the step's state goes to and, on a rank that writes it there itself, points the optimizer at
 * the slot's file; moved (updated: whether the optimizer ran) makes it the state. */
int ax_trainer_memckpt_aim(AxTrainer *t);
void ax_trainer_memckpt_moved(AxTrainer *t, int updated);
int ax_trainer_memckpt_settle(AxTrainer *t, int flush);
/* trainer_slot_maps.c: new (at setup) and free, and *view = the mapping of stage `file`'s
 * file in this node's `slot`, `size` bytes (created or resized when it is not mapped at that
 * size, or the path holds another file now: then *fresh = 1, and the first writes into it
 * fault its pages in; fresh may be NULL). The map stays the trainer's; the view is valid
 * until the next call for that file or the free. */
int ax_memckpt_slot_maps_new(AxTrainer *t);
void ax_memckpt_slot_maps_free(AxTrainer *t);
int ax_memckpt_slot_map(AxTrainer *t, int slot, int file, size_t size, AxFileMap *view,
                        int *fresh);
/* trainer_replicas.c: the replicas' transfers (above). Setup: the link model (collective);
 * begin: this rank's part of the step's transfers x[0..n); step_begin: at the start of every
 * step (the idle spans learned); tick: what the schedule allows now (the stage callbacks call
 * it). At a settle, none of them collective: hand_over sends what the schedule allows now
 * (*handed: all of this rank's bytes are on their way; flush: everything goes at completion);
 * may_land: whether this settle can complete the copy, as far as this rank knows; land_now:
 * whether it does, given whether every rank has handed over (counts the settle);
 * complete: sends what is left and waits for this rank's transfers. free: drops what is in
 * flight; report: rank 0's line at the end. */
int ax_replicas_setup(AxTrainer *t, const AxMemTransfer *x, int n);
int ax_replicas_begin(AxTrainer *t, const AxMemTransfer *x, int n);
int ax_replicas_step_begin(AxTrainer *t);
int ax_replicas_tick(AxTrainer *t);
int ax_replicas_hand_over(AxTrainer *t, int flush, int *handed);
int ax_replicas_may_land(const AxTrainer *t, int flush, int handed);
int ax_replicas_land_now(AxTrainer *t, int flush, int handed_everywhere);
int ax_replicas_complete(AxTrainer *t);
void ax_replicas_free(AxTrainer *t);
void ax_replicas_report(const AxTrainer *t);
int ax_trainer_memckpt_recover(AxTrainer *t, int file_step, int *recovered, int *step);
void ax_trainer_memckpt_free(AxTrainer *t);
void ax_trainer_print_memckpt(const AxTrainer *t); /* the header's line */

/* train_step.c */
int ax_trainer_make_ops(AxTrainer *t, AxStageOps *ops);
/* trainer_ckpt.c: creates and locks --checkpoint-dir (rank 0) and checks that every rank that
 * writes into it can (a setup phase; nothing when there is no --checkpoint-dir). */
int ax_trainer_setup_checkpoints(AxTrainer *t);
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
void ax_trainer_compress_step(AxTrainer *t, int step);
void ax_trainer_print_compress(const AxTrainer *t);
/* train_backprop.c: compressed backpropagation's link state (a setup phase before the
 * scheduler's), each step's codec context, the header's line, the checkpoint label. */
int ax_trainer_setup_backprop(AxTrainer *t);
void ax_trainer_backprop_step(AxTrainer *t, int step);
void ax_trainer_print_backprop(const AxTrainer *t);
void ax_trainer_backprop_label(const AxTrainer *t, char *buf, size_t cap);
/* The step Adam's second moment stays frozen at while gradients are compressed
 * (--compress-freeze-variance), 0 when it is updated as usual. */
int ax_trainer_v_frozen_at(const AxTrainer *t);
/* Adam's beta1 this step: --beta1, or 0 while a codec that applies its own momentum (DGC's
 * momentum correction) compresses some of the stage's gradients (Lin et al.: the momentum
 * moves into the codec, the optimizer applies what arrives). */
double ax_trainer_adam_beta1(const AxTrainer *t);

#endif
