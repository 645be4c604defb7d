/* trace.h — per-rank event recording for Chrome trace files (Perfetto opens them): forward,
 * backward, send, receive-wait, all-reduce, optimizer and step spans of the chosen steps.
 * Recording is a timestamp pair per event into a preallocated array; nothing here talks to
 * other ranks (mpi/trace_merge gathers the events to rank 0). */
#ifndef AX_TRACE_H
#define AX_TRACE_H

#include <stdio.h>

#include "rank_layout.h"

typedef enum {
  AX_EV_FORWARD = 0, AX_EV_BACKWARD, AX_EV_SEND, AX_EV_RECV_WAIT, AX_EV_ALLREDUCE,
  AX_EV_OPTIMIZER, AX_EV_PIPELINE, AX_EV_STEP,
  AX_EV_RECV_WAIT_GRAD, /* a wait that ended with a gradient (RECV_WAIT: with an activation) */
  AX_N_EVENT_KINDS
} AxEventKind;

typedef struct {
  double t0, t1; /* seconds since the trace origin */
  int kind, step, mb;
} AxTraceEvent;

typedef struct {
  AxTraceEvent *ev;
  int n, cap;
  int step_lo, step_hi; /* record steps in [lo, hi] */
  int step;             /* current step; events record only when in range */
  int dropped;
  double origin;
} AxTrace;

/* A trace that records nothing: every call is cheap. */
void ax_trace_off(AxTrace *t);
int ax_trace_init(AxTrace *t, int step_lo, int step_hi, int capacity);
void ax_trace_free(AxTrace *t);
void ax_trace_set_origin(AxTrace *t, double origin);
/* Another clock against this one from n exchanges: asked at t0[i] on this clock, read tr[i] on
 * the other, answered at t1[i] here. The exchange with the shortest round trip (*rtt) gives it:
 * tr - (t0 + t1) / 2, what the other clock reads ahead of this one, wrong by at most half that
 * round trip (the reading lies somewhere within it). n >= 1. */
double ax_trace_clock_offset(const double *t0, const double *tr, const double *t1, int n,
                             double *rtt);
void ax_trace_set_step(AxTrace *t, int step);
int ax_trace_active(const AxTrace *t);
/* Start time for an event (0 when not recording; t may be NULL: nothing recorded). */
double ax_trace_begin(const AxTrace *t);
void ax_trace_end(AxTrace *t, int kind, int mb, double t0);
const char *ax_trace_kind_name(int kind);
/* Writes events of every rank (counts[r] events each, concatenated) as Chrome trace JSON, a
 * track per rank named by its place in the layout (ax_rank_label). */
int ax_trace_write_json(const char *path, const AxTraceEvent *ev, const int *counts, int nranks,
                        const AxRankLayout *layout);

#endif
