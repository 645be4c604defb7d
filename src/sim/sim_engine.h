/* sim_engine.h — a discrete-event simulation of one training step of a G_inter x G_data grid,
 * in the order the message-driven rule (sched_rule.h, which the real scheduler executes)
 * produces: every stage's forwards, backwards, sends and receives, the links between stages
 * (alpha-beta, one message at a time per direction, as the link emulator models them), then the
 * data-parallel all-reduce chunks interleaved with the AdamW updates as offload/interleave.c
 * runs them (chunks started a window at a time; chunk c is waited for, c + window started, c
 * updated), the tied embedding's sum between the ends of a row, and the sums that end a step.
 *
 * The data-parallel rows of a deterministic simulation are identical, so one row is simulated
 * and the column's all-reduce is priced analytically (its cost comes in: the caller's cost
 * model, src/sim/sim_costs.c, prices it on the machine). Ranks that share a host's cores and
 * memory (a CPU machine) slow each other down: when k ranks of the host compute at once (a
 * row's computing ranks times its `copies`, the rows on the host, which run in step), each
 * runs at speed[k - 1] of its own speed; beyond the table the last entry's capacity is shared
 * (speed[n-1] n / k). No table: every rank has its own device. Ranks pinned to cores (`core`,
 * from the trainer's binding rule, src/backend/binding_rule.h): k counts the cores busy, and
 * the stages on one core share it equally (processor sharing per core); not pinned (NULL), the
 * host's ranks share it as a pool, as above, and with `waiter_weight` (an oversubscribed host,
 * whose waits poll) k counts the ranks waiting too, at that weight; or, given `waiting` (as
 * measured with the host's other ranks waiting), each of k computing ranks runs at
 * waiting[k - 1].
 *
 * Pure: no MPI, no clock, no model; costs are seconds handed in. Times are seconds from the
 * start of the step. */
#ifndef AX_SIMULATE_H
#define AX_SIMULATE_H

#include "src/core/trace.h"

typedef struct {
  double alpha_s;       /* per message: propagation (does not hold the link) */
  double s_per_byte;    /* 1 / bandwidth */
  int held;             /* 1: the link emulator's (docs/emulator.md): a message is held at its
                         * sender until it has crossed, and goes out at the sender's next call
                         * into the engines: at once if the sender waits then, else at the end
                         * of its next send (a forward or backward makes no call, nor does the
                         * step from one to the next) */
} AxSimLink;

/* What a stage does after its pipeline phase. */
typedef struct {
  double before_s;      /* gradients to host memory, the norm when clipping: before any sum */
  double tied_s;        /* the tied embedding's sum with the other end of the row (ends only,
                         * both ends start it together); 0: none */
  int n_chunks;         /* all-reduce / AdamW chunks */
  const double *allreduce_s; /* [n_chunks]: the column's sum of chunk c (0 on one row) */
  const double *update_s;    /* [n_chunks]: AdamW of chunk c and its write-back */
  int window;           /* chunks in flight (interleave.c: 2) */
  int separate;         /* 1: every chunk summed first, then (once the row agrees on the
                         * gradient norm, as clipping needs) every chunk updated */
} AxSimTail;

typedef struct {
  int P, n_micro, limit;
  const double *fwd_s, *bwd_s; /* [P]: one micro-batch (backward includes any recompute) */
  const double *send_s;        /* [P]: the sender's share of a message (the copy out) */
  double msg_bytes;            /* one activation or gradient */
  const AxSimLink *link;       /* [P - 1]: between stage s and s + 1 */
  const double *speed;         /* [n_speed]: see above; NULL: 1 */
  int n_speed, copies;
  const int *core;             /* [P]: the core stage s's rank is pinned to (stages with the same
                                * one share it; each row pinned alike); NULL: not pinned */
  double waiter_weight;        /* not pinned: how much of a computing rank's share of the host a
                                * rank waiting for a message takes (0: none; 1: a polite wait,
                                * which polls and stays runnable; the link emulator's sleeping
                                * waits about a third); k counts them so (speed interpolated) */
  const double *waiting;       /* not pinned: [P x copies], when k of the host's ranks compute
                                * and the others wait, each computing one's speed (the
                                * profile's waiting_speed); NULL: waiter_weight */
  const AxSimTail *tail;       /* [P] */
  double end_s;                /* after the last update: the norm and loss sums, the step's end */
} AxSimConfig;

typedef struct {
  int P;
  double step_s;          /* the step: every stage's end plus end_s */
  double pipeline_s;      /* when the last stage finished its pipeline phase */
  double *pipe_end_s;     /* [P]: this stage's pipeline phase ended */
  double *busy_s;         /* [P]: seconds computing (forward, backward, sends, updates) */
  double *pipe_busy_s;    /* [P]: of them in the pipeline phase */
  double *tail_end_s;     /* [P]: its last update ended */
  /* the timeline of every stage when asked for (record = 1): ev[s][0 .. count[s]) */
  AxTraceEvent **ev;
  int *count, *cap;
  long long n_events;     /* events simulated (forward, backward, send, receive) */
} AxSimResult;

/* Simulates one step; record: keep the timeline (kinds of trace.h, step 0, times from 0). On
 * failure (a rule that deadlocks: an internal error) nothing is left to free. */
int ax_sim_run(const AxSimConfig *c, int record, AxSimResult *out);
void ax_sim_result_free(AxSimResult *r);
/* Events of stage s (record = 1). */
const AxTraceEvent *ax_sim_events(const AxSimResult *r, int s, int *n);

#endif
