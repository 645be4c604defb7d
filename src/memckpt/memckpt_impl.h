/* memckpt_impl.h — the memory-checkpoint module's own types and the functions its files
 * share (memckpt.c: setup, copies, settles, recovery; memckpt_replicas.c: the replicas'
 * transfers and Gemini's schedule; memckpt_slot_maps.c: the slot files as this rank maps them).
 * Nothing outside src/memckpt includes it. */
#ifndef AX_MEMCKPT_IMPL_H
#define AX_MEMCKPT_IMPL_H

#include <pthread.h>
#include <stdint.h>

#include "memckpt.h"
#include "memckpt_store.h"
#include "mpi/link/link_log.h"
#include "src/core/fileio.h"

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
/* What each rank tells the others at a memory checkpoint's settle (memckpt.c). */
typedef struct {
  int rc, handed;          /* its part went well; its replicas are all handed over */
  int interval;            /* the interval its link's profile allows (ax_replicas_interval) */
  unsigned long long ckpt_bytes, step_bytes; /* its replicas a checkpoint on its busiest link;
                                              * what that link's idle spans hold a step */
  long long data_position; /* of the copy just joined (0 on ranks that load no data) */
  AxCkptFile file;         /* the stage file it wrote (bytes 0: none) */
} AxSettleNote;
/* The tag of a file's messages on the memory checkpoints' communicator. */
static inline int ax_memckpt_tag(int file) { return file + 2; }

/* A replica transfer as this rank takes part in it (memckpt_replicas.c). */
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
  AX_REPLICA_WINDOW = 20,  /* steps each link's idle spans are profiled over (thesis §6.5.4) */
};

/* The module's state (memckpt.h). */
struct AxMemCkpt {
  AxMemCkptView v;   /* what the trainer lends (memckpt.h) */
  AxMemCkptOps ops;  /* what it may ask of the trainer */
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
  const AxStageLayout *whole; /* the stage whole (ops.gather; valid until gather_close) */
  float *const *whole_buf;    /* its master weights, m and v */
  int gathering;              /* ops.gather_open was called and not yet closed */
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
  /* zero-copy (ax_memckpt_before_optim): the slot each step's optimizer writes the state into,
   * the same on every rank of a node (-1: none yet); whether this rank's optimizer writes
   * there itself (a writer without tensor parallelism whose stage file holds its arrays
   * whole), and the slot whose file holds this rank's master weights as they are (-1: none) */
  int state_slot, zero_copy, master_slot;
  AxCkptSections sections; /* of this rank's stage file (zero_copy) */
  const float *fill[3];   /* what the copy thread writes of master, m, v (NULL: in place) */
  /* the step's replicas (memckpt_replicas.c): from start until they have all landed */
  int replicating;
  AxReplicaXfer *xfer;
  int n_xfer;
  AxFileMap send;             /* the file this rank writes (a writer's copy thread) and sends
                               * its replicas from: a view of its slot map */
  _Atomic int file_ready;     /* the copy thread is done with the file and its mapping */
  int completing;             /* in complete_all (its own passes; none from the waits) */
  int wait_rc;                /* a pass run from a wait that failed (reported next) */
  char wait_err[512];
  /* Gemini's schedule (--replica-schedule idle) */
  int idle;
  AxReplicaLink link;         /* the replicas' link model and Algorithm 6.2's parameters */
  long long step_begin_ns, prev_begin_ns;
  AxSpanProfile *profile;     /* [n_nodes]: each link's spans over the last steps */
  AxSpan *spans;              /* [n_nodes][AX_REPLICA_SPANS]: the profile's (each gap as
                               * long as its shortest over the window) */
  int *n_spans;               /* [n_nodes] */
  double *span_used, *busy_until; /* [n_nodes][AX_REPLICA_SPANS] link time taken; [n_nodes] */
  double *share;              /* [n_nodes]: this rank's part of each link's spans (1 / the
                               * ranks of its node sending over that link) */
  AxLinkUse *uses;            /* scratch: a link's log */
  int step_now;     /* the step under way (ax_memckpt_step_begin) */
  int interval;     /* checkpoints are taken every `interval` steps: --memory-checkpoint-every,
                     * or the smallest multiple of it whose idle spans hold the replicas */
  int none_fits;    /* no idle span holds a chunk (said once) */
  int interval_decided; /* the interval is decided (the first copy's first settle) */
  int profile_steps; /* steps in this rank's newest profile (for rank 0's line) */
  int reprofiled;   /* times a link's profile restarted (a step of another shape) */
  /* what the schedule did (the end-of-run line) */
  int skipped, landed_copies, flights, late; /* due checkpoints not taken; copies replicated;
                                              * steps they took; copies whose leftover went at
                                              * the settle before the next checkpoint */
  unsigned long long idle_bytes, end_bytes; /* sent in idle spans; sent at a settle */
};

/* memckpt_slot_maps.c: new (at setup) and free, and *view = the mapping of stage `file`'s
 * file in this node's `slot`, `size` bytes (created or resized when it is not mapped at that
 * size, or the path holds another file now: then *fresh = 1, and the first writes into it
 * fault its pages in; fresh may be NULL). The map stays the module's; the view is valid
 * until the next call for that file or the free. */
int ax_memckpt_slot_maps_new(AxMemCkpt *mc);
void ax_memckpt_slot_maps_free(AxMemCkpt *mc);
int ax_memckpt_slot_map(AxMemCkpt *mc, int slot, int file, size_t size, AxFileMap *view,
                        int *fresh);
/* memckpt_replicas.c: the replicas' transfers (above). Setup: the link model (collective);
 * begin: this rank's part of the step's transfers x[0..n); step_begin: at the start of every
 * step (the idle spans learned); tick: what the schedule allows now (the stage callbacks call
 * it). At a settle, none of them collective: hand_over sends what the schedule allows now
 * (*handed: all of this rank's bytes are on their way; flush: everything goes at completion);
 * may_land: whether this settle can complete the copy, as far as this rank knows; land_now:
 * whether it does, given whether every rank has handed over (counts the settle): it does when
 * they have, or when a checkpoint is due at this step's end (the leftover is sent now, in the
 * step's last span: the copy is late); interval: the interval this rank's profile allows
 * (0: no span holds a chunk; the settle's note), agree_interval: the run's, from every rank's
 * note (decided once, at the first copy's first settle; rank 0 says so); due: whether a checkpoint is taken at `step`'s end;
 * complete: sends what is left and waits for this rank's transfers. free: drops what is in
 * flight; report: rank 0's line at the end. */
int ax_replicas_setup(AxMemCkpt *mc, const AxMemTransfer *x, int n);
int ax_replicas_begin(AxMemCkpt *mc, const AxMemTransfer *x, int n);
int ax_replicas_step_begin(AxMemCkpt *mc);
int ax_replicas_tick(AxMemCkpt *mc);
int ax_replicas_hand_over(AxMemCkpt *mc, int flush, int *handed);
int ax_replicas_may_land(const AxMemCkpt *mc, int flush, int handed);
int ax_replicas_land_now(AxMemCkpt *mc, int flush, int handed_everywhere);
void ax_replicas_interval(const AxMemCkpt *mc, AxSettleNote *note);
void ax_replicas_agree_interval(AxMemCkpt *mc, const AxSettleNote *notes, int n);
int ax_replicas_due(const AxMemCkpt *mc, int step);
int ax_replicas_complete(AxMemCkpt *mc);
void ax_replicas_free(AxMemCkpt *mc);
void ax_replicas_report(const AxMemCkpt *mc);

/* This rank in the job (0 without a grid). */
static inline int ax_memckpt_rank(const AxMemCkpt *mc) {
  return (mc->v.grid != NULL) ? mc->v.grid->rank : 0;
}
/* --debug-hang-rank/-step/-mode: whether this rank is to fail in `mode` at `step`'s copy. */
static inline int ax_memckpt_debug_at(const AxMemCkpt *mc, int step, int mode) {
  return ax_memckpt_rank(mc) == mc->v.hang_rank && step == mc->v.hang_step &&
         mc->v.hang_mode == mode;
}

#endif
