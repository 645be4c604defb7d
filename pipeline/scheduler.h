/* scheduler.h — the message-driven pipeline schedule of one stage (axonn-ipdps22, Algorithm 2).
 * Stage 0 injects `limit` micro-batches, then one more each time it finishes a backward.
 * Every stage waits on its pre-posted receives and runs the forward or backward of whichever
 * message arrives first; the last stage runs a micro-batch's backward right after its forward.
 * There is no barrier in a step and every rank knows up front how many messages it handles. A
 * message that does not belong to the pass (tagged with a micro-batch outside it, or a second
 * activation or gradient of one) fails the pass before anything is computed on it.
 *
 * With compressed backpropagation (backprop_compress.h) the backward messages the rule picks
 * travel compressed; a message's tag is 2 x micro-batch + form (1: compressed), and the
 * receiver checks the form against the rule before it decodes.
 *
 * What to run when is the pure rule of sched_rule.h (shared with the simulator); this file
 * executes its actions.
 *
 * The scheduler knows nothing of the model: it calls the stage through AxStageOps, hands it a
 * stash slot per in-flight micro-batch, and moves the data through the p2p engine. It tells the
 * watchdog (src/core/watchdog.h) what it does: which micro-batch it computes, and which activation
 * or gradient, from which stage and world rank, it is waiting for. */
#ifndef AX_SCHEDULER_H
#define AX_SCHEDULER_H

#include "backprop_compress.h"
#include "sched_rule.h"
#include "mpi/link/p2p.h"
#include "src/core/trace.h"

typedef struct {
  void *ctx;
  /* Forward of micro-batch mb into stash slot `slot`. input: the received activation, NULL on
   * the first stage, in host or device memory as input_mem says (the p2p engine's buffers, see
   * mpi/link/p2p.h: copy it before the call returns, on the compute stream when on the device).
   * *output: the activation for the next stage (device), valid until the next call; ignored
   * on the last stage. */
  int (*forward)(void *ctx, int mb, int slot, const void *input, AxMemKind input_mem,
                 const void **output);
  /* Backward of mb. doutput: the received gradient, NULL on the last stage (which computes its
   * loss first), in host or device memory as doutput_mem says. *dinput: the gradient for the
   * previous stage (device); ignored on the first stage. */
  int (*backward)(void *ctx, int mb, int slot, const void *doutput, AxMemKind doutput_mem,
                  const void **dinput);
} AxStageOps;

/* Testing: how --debug-hang-rank makes this rank stop making progress in one step. */
typedef enum {
  AX_SCHED_HANG_NONE = 0,
  AX_SCHED_HANG_SLEEP, /* sleeps forever in its next forward (a compute that never returns) */
  AX_SCHED_HANG_DROP,  /* never sends its next pipeline message (its neighbour waits for it) */
} AxSchedHang;

typedef struct {
  MPI_Comm pipe;   /* the pipeline row: rank = stage */
  int stage, P;
  int limit;       /* micro-batches in flight (pipeline limit, >= 1) */
  int max_micro;   /* micro-batches of the largest pass */
  size_t act_bytes; /* one micro-batch's activation (and gradient) */
  AxBackend *be;
  AxStageOps ops;
  AxTrace *trace;  /* may be NULL */
  AxCommConfig cc; /* how the pipeline's waits wait (the grid's) */
  int device_buffers; /* messages go to MPI in device memory (CUDA-aware MPI), see mpi/link/p2p.h */
  AxBackprop *backprop; /* compressed backward messages (not owned); NULL: none */
  /* the stage's tensor-parallel grid (rank 0 leads), MPI_COMM_NULL: none. Its ranks must run
   * their micro-batches in one order (each issues the same collectives in the same order):
   * where a message may come from either side, the lead takes whichever arrives first and
   * tells the others which side to wait on. Each side's messages arrive in one order on every
   * rank (one sender, itself in such an order), so the whole order is the lead's. NULL (or
   * pointing to MPI_COMM_NULL): none. */
  const MPI_Comm *lockstep;
} AxSchedConfig;

typedef struct {
  int stage, P;
  int limit;       /* micro-batches in flight (pipeline limit) */
  int n_slots;     /* stash slots this stage needs: limit, or 1 on the last stage */
  AxStageOps ops;
  AxP2P p2p;
  AxTrace *trace;
  int delay_ms;    /* debug: sleep before each forward/backward on this stage */
  int forward_ms, backward_ms; /* debug: and before each forward / backward (fixed compute) */
  AxSchedHang hang; /* debug: set for one step; cleared once a message is dropped */
  unsigned char *got[2]; /* per direction, per micro-batch: received in this pass */
  int low[2];      /* per direction: no micro-batch below it is still to be received */
  int n_now;       /* micro-batches of the pass in progress */
  int *slot_of;    /* micro-batch -> slot, -1 when none */
  int *slot_used;
  int max_micro;
  AxBackprop *backprop;
  MPI_Comm lockstep; /* see AxSchedConfig */
  /* of the last pass, per micro-batch: its gradient went to the previous stage compressed
   * ([0]), came from the next stage compressed ([1]) */
  unsigned char *compressed[2];
  /* while the rule's actions run: the message being handled (NULL: none), its form, and the
   * output of the last forward or backward (what a send sends) */
  const void *msg;
  int msg_form;
  const void *out;
} AxScheduler;

/* On failure nothing is left to destroy. */
int ax_sched_init(AxScheduler *s, const AxSchedConfig *cfg);
void ax_sched_destroy(AxScheduler *s);
/* Stash slots a stage needs for a pipeline limit (for sizing its activation arena). */
int ax_sched_slots(int stage, int P, int limit);
/* One training step's pipeline phase: forward and backward of n_micro micro-batches. */
int ax_sched_train(AxScheduler *s, int n_micro);
/* Forward only (validation): the last stage's backward callback is not called; instead each
 * micro-batch's forward on the last stage is expected to compute its loss. */
int ax_sched_forward(AxScheduler *s, int n_micro);

#endif
