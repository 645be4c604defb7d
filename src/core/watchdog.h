/* watchdog.h — what this rank is doing right now, and the watchdog thread that ends the whole
 * job with one line on stderr and a documented exit status when
 *   - a phase (the start-up before the first step, a training step, a validation, a
 *     checkpoint, the final save) runs longer than --step-timeout:  "axonn: error: step 7 exceeded --step-timeout (2 s) on rank 3 (stage 1,
 *     row 1): waiting for the activation of micro-batch 0 from stage 0 (rank 2)"
 *                                                                  exit status AX_EXIT_TIMEOUT
 *   - another rank of this node is no longer running (killed, crashed, exited):
 *     "axonn: error: lost rank 2 (stage 0, row 1): killed by signal 9 (SIGKILL); rank 3 (stage 1,
 *     row 1) was in step 7: waiting for ..."                      exit status AX_EXIT_LOST_RANK
 *   - this rank gets SIGINT:  "... interrupted by SIGINT in step 7: ..."
 *                                                                  exit status AX_EXIT_INTERRUPTED
 * A rank is labelled with its real place (ax_rank_label): "rank 3 (stage 1, row 1)", or with
 * tensor parallelism "rank 3 (stage 0, x 1 y 1 z 0, row 0)".
 *
 * Noting (the hot path). Wait points and compute phases say what they do with ax_wd_phase,
 * AX_WD_NOTE and ax_wd_detail (inline): a dozen relaxed atomic stores into one process-wide
 * record under a sequence lock (so the watchdog never reads half of a note); no lock, no system
 * call. A note is a string literal with up to AX_WD_ARGS "%d" and their values, formatted only
 * when the watchdog reports; `peer` names the world rank the note waits for (-1: none), whose
 * state the report adds. AX_WD_NOTE says what the rank does (set by the layer that knows why:
 * "in the data-parallel gradient all-reduce of chunk 2 (of 4)"); ax_wd_detail is what the
 * innermost wait is blocked on ("waiting for data from rank 5"), set by the engine doing the
 * waiting and cleared by the next note. Only the thread that runs the step notes; a thread
 * that must not (the optimizer's communication thread) calls ax_wd_mute_thread.
 *
 * Why a thread, not deadline checks inside the polling waits of mpi/mpi_util.c: such checks would
 * cost one clock read per poll, see nothing while the rank computes (a BLAS or device call that
 * never returns) or sits in one of the library's own blocking calls (MPI_Allreduce,
 * non-polite MPI_Wait), and could not end the job from a stuck main thread. The thread sleeps in
 * poll(2), wakes every tick (1/20 of the timeout, between 20 and 200 ms), compares the clock
 * with the deadline of the current phase, and looks at up to AX_WD_PEERS_PER_TICK of this
 * node's other ranks (and always at the one the current note waits for) through /proc
 * (procstat.h). A rank that was killed or is gone is lost: the lowest rank of the node still
 * running reports it at once, the others give it a few seconds to end the job before they report
 * too (one line rather than one per survivor). A rank that exited with a status reported its own
 * failure; it counts as lost only if the job has not ended a few seconds later. Ranks on other
 * nodes cannot be seen this way: their loss shows as a time-out, or as whatever the launcher does.
 *
 * Signals (installed by ax_watchdog_start when asked, restored by ax_watchdog_stop): SIGINT
 * ends the job as above. SIGABRT from inside the MPI library (UCX aborts a process whose peer
 * vanished in the middle of a transfer) is handed to the thread, which reports the lost rank if
 * it finds one and otherwise lets the abort proceed unchanged.
 *
 * Ending the job. The thread writes its line (one write(2)), waits AX_WD_FLUSH_MS for the
 * launcher to forward it, and calls the end_job hook (`axonn train`: MPI_Abort(MPI_COMM_WORLD,
 * code)). MPI is initialized MPI_THREAD_SERIALIZED and the main thread may be inside MPI then;
 * with MPICH 4.0 (ch4:ucx, hydra) MPI_Abort from this second thread worked in every trial,
 * whatever the main thread was doing (MPI_Test polling, MPI_Wait, stopped peers): it only talks
 * to the process manager, which kills every rank, a SIGSTOPped one included, and makes mpiexec
 * return the code. A rank that merely _exit()s would be reported by mpiexec as SIGKILL (9), the
 * status hydra's clean-up gives the others. Should the hook not end the process within
 * AX_WD_GRACE_S, SIGALRM does, with the same code. This is the one place in the library that
 * ends the process itself (the exception to error.h's rule). */
#ifndef AX_WATCHDOG_H
#define AX_WATCHDOG_H

#include <stdatomic.h>

#include "procstat.h"
#include "rank_layout.h"

/* Exit statuses of `axonn train` (documented in README.md and --help). */
enum { AX_EXIT_TIMEOUT = 124, AX_EXIT_LOST_RANK = 125, AX_EXIT_INTERRUPTED = 130 };

enum { AX_WD_ARGS = 6, AX_WD_PEERS_PER_TICK = 8, AX_WD_FLUSH_MS = 200, AX_WD_GRACE_S = 5 };

typedef enum {
  AX_WD_IDLE = 0,   /* no deadline (setup, the end of the run) */
  AX_WD_STEP,       /* a training step: pipeline, gradient sync, optimizer, loss */
  AX_WD_VALIDATION, /* the validation after a step */
  AX_WD_CHECKPOINT, /* writing the checkpoint of a step */
  AX_WD_RESUME,     /* loading a checkpoint */
  AX_WD_FINAL,      /* the end of the run: summary, saved model, trace */
  AX_WD_SETUP,      /* the start-up: everything from the watchdog's start to the first step */
} AxWdPhase;

typedef struct {
  int timeout_ms;       /* per phase; 0: no deadline (lost ranks and SIGINT are still seen) */
  int setup_timeout_ms; /* the start-up's (AX_WD_SETUP) deadline instead, when > 0 */
  int rank, size;       /* world rank and size */
  AxRankLayout layout;  /* where each rank sits, for the labels (rank_layout.h) */
  const AxProcId *peers; /* [size], every rank's ax_proc_self (copied) */
  int signals;          /* 1: handle SIGINT and SIGABRT as described above */
  void (*end_job)(int code); /* ends the job (NULL: _exit(code)); need not return */
} AxWatchdogConfig;

/* Starts the thread (one per process). AX_ERR when it cannot. */
int ax_watchdog_start(const AxWatchdogConfig *cfg);
/* Stops the thread and restores the signal handlers; a no-op when it is not running. */
void ax_watchdog_stop(void);
/* For a rank that failed inside a step: when a rank of this node is gone, reports it as lost
 * and ends the job (does not return); otherwise returns. Call with no MPI call in progress. */
void ax_watchdog_check_lost(void);
/* What the notes say now, as the report would print it (for tests). */
void ax_watchdog_describe(char *buf, int cap);

/* ------------------------------------------------------------------ noting (inline) */

typedef struct {
  atomic_uint seq; /* odd while a note is being written */
  atomic_int phase, step;
  atomic_llong phase_start_ns; /* CLOCK_MONOTONIC */
  _Atomic(const char *) what;
  atomic_int arg[AX_WD_ARGS], peer;
  _Atomic(const char *) detail;
  atomic_int detail_arg, detail_peer;
} AxWdRecord;

extern AxWdRecord ax_wd_record;
extern _Thread_local int ax_wd_muted;

static inline unsigned ax_wd_begin_(void) {
  unsigned s = atomic_load_explicit(&ax_wd_record.seq, memory_order_relaxed);
  atomic_store_explicit(&ax_wd_record.seq, s + 1, memory_order_relaxed);
  atomic_thread_fence(memory_order_release);
  return s;
}
static inline void ax_wd_end_(unsigned s) {
  atomic_store_explicit(&ax_wd_record.seq, s + 2, memory_order_release);
}

static inline void ax_wd_note_at(int peer, const char *what, const int *args) {
  if (ax_wd_muted) return;
  unsigned s = ax_wd_begin_();
  atomic_store_explicit(&ax_wd_record.what, what, memory_order_relaxed);
  for (int i = 0; i < AX_WD_ARGS; i++)
    atomic_store_explicit(&ax_wd_record.arg[i], args[i], memory_order_relaxed);
  atomic_store_explicit(&ax_wd_record.peer, peer, memory_order_relaxed);
  atomic_store_explicit(&ax_wd_record.detail, (const char *)0, memory_order_relaxed);
  ax_wd_end_(s);
}

/* AX_WD_NOTE(peer, "the forward of micro-batch %d", mb): what this rank does now. */
#define AX_WD_FIRST_(first, ...) first
#define AX_WD_REST_(first, ...) __VA_ARGS__
#define AX_WD_NOTE(peer, ...)                                                                    \
  ax_wd_note_at((peer), AX_WD_FIRST_(__VA_ARGS__, 0),                                            \
                (const int[AX_WD_ARGS + 1]){AX_WD_REST_(__VA_ARGS__, 0)})

/* What the innermost wait is blocked on: a literal with at most one "%d" (value arg), and the
 * world rank it waits for (-1: unknown). */
static inline void ax_wd_detail(const char *detail, int arg, int peer) {
  if (ax_wd_muted) return;
  unsigned s = ax_wd_begin_();
  atomic_store_explicit(&ax_wd_record.detail, detail, memory_order_relaxed);
  atomic_store_explicit(&ax_wd_record.detail_arg, arg, memory_order_relaxed);
  atomic_store_explicit(&ax_wd_record.detail_peer, peer, memory_order_relaxed);
  ax_wd_end_(s);
}

/* Starts a phase and its deadline (the clock read is the vDSO's, not a system call). */
void ax_wd_phase(AxWdPhase phase, int step);
/* This thread's notes are ignored from now on. */
void ax_wd_mute_thread(void);

/* --debug-hang-mode: how the rank under test stops making progress. */
typedef enum {
  AX_DEBUG_HANG_SLEEP = 0,  /* sleeps forever in a forward */
  AX_DEBUG_HANG_DROP,       /* drops its next pipeline message */
  AX_DEBUG_HANG_CHECKPOINT, /* sleeps forever in the step's checkpoint, its file written */
  AX_DEBUG_HANG_KILL,       /* SIGKILL itself as the step begins */
  AX_DEBUG_HANG_COPY_BEGIN, /* SIGKILL itself in the step's memory checkpoint: slot emptied */
  AX_DEBUG_HANG_COPY_FILES, /* ... its files written, replicas not sent */
  AX_DEBUG_HANG_COPY_REPLICAS, /* ... its replicas handed over, no manifest written */
  AX_DEBUG_HANG_REPLICA_ERROR, /* its first replica pass inside a wait of that step's copy fails */
} AxDebugHang;

#endif
