/* replica_schedule.h — when memory-checkpoint replicas may use a link (Gemini, thesis §6.5):
 * the idle spans of a step's link use, and Algorithm 6.2's partition of a checkpoint into
 * chunks that fill at most mu of each span, each chunk sized from the link's fitted
 * f(s) = alpha + s / B. Pure computation: the memory checkpoints (memckpt_replicas.c) learn
 * the spans from the link's log (mpi/link/link_log.h) and send the chunks.
 *
 * Algorithm 6.2's inner loop, as implemented (per span t, remain_span = mu * t):
 *   while remain_span > 0 and bytes remain:
 *     size = R              if remain_span >= f(R)      (R: the largest chunk, R/p there)
 *          = (remain_span - alpha) * B  otherwise (nothing when that is not positive)
 *     size = min(size, what remains);  remain_span -= f(size)
 * The thesis's line 16 subtracts f(remain_size), the checkpoint's remainder, where the chunk
 * just placed is meant; we subtract f(size). A chunk smaller than `min_chunk` is not sent
 * (unless it is the last of the checkpoint): a sliver of a span costs alpha for no bytes.
 *
 * The spans come from a profile over several steps (§6.5.4; AxSpanProfile): each gap where
 * the newest step had it, as long as its shortest over the last `window` steps (the thesis
 * averages; its public code takes each gap's minimum), restarted when a step's gaps differ in
 * number (the step changed shape). Over a step, the chunks fill mu of
 * every span but the last; what does not fit is the leftover, sent in the last span, which the
 * thesis makes unbounded (Algorithm 6.2's line 2): so a checkpoint is replicated before the
 * next one starts. Where the spans of one step hold less than a checkpoint's replicas, the
 * smallest feasible interval is the fewest steps (a multiple of the requested one) whose spans
 * hold them (ax_replica_interval). */
#ifndef AX_REPLICA_SCHEDULE_H
#define AX_REPLICA_SCHEDULE_H

#include <stddef.h>

#include "mpi/casync/casync_cost.h"
#include "mpi/link/link_log.h"

typedef struct {
  double start_s, end_s; /* seconds from the step's start */
} AxSpan;

typedef struct {
  AxLinearCost f;   /* the link: f(s) = latency + s / bytes_per_s */
  double mu;        /* the share of a span replicas may fill (0 < mu <= 1; the thesis: 0.8) */
  size_t max_chunk; /* R / p: the largest chunk */
  size_t min_chunk; /* the smallest worth sending (but the last) */
} AxReplicaLink;

/* The idle spans of the window [from_ns, to_ns) in which none of `uses` (except those of
 * class skip_cls, the replicas' own) held the link, in order, each at least min_s long:
 * at most cap of them into out; returns how many. */
int ax_idle_spans(const AxLinkUse *uses, int n, long long from_ns, long long to_ns, int skip_cls,
                  double min_s, AxSpan *out, int cap);

/* The span of spans[0..n) that contains time t (seconds from the step's start), or -1. */
int ax_span_at(const AxSpan *spans, int n, double t);

/* Algorithm 6.2's inner loop for one span of `span_s` seconds (mu already applied): chunks
 * cut from *remain bytes (updated), at most cap of them into sizes (may be NULL with cap 0:
 * only counts). Returns how many chunks; *used_s gets the link time they take. */
int ax_fill_span(const AxReplicaLink *l, double span_s, size_t *remain, size_t *sizes, int cap,
                 double *used_s);

/* Algorithm 6.2 over one step: `bytes` into mu of each of spans[0..n) but the last (the
 * leftover's, unbounded). Returns the bytes placed before the last span; *chunks (may be NULL)
 * gets the chunks cut. The leftover is bytes less the return. */
size_t ax_step_fill(const AxReplicaLink *l, const AxSpan *spans, int n, size_t bytes, int *chunks);

/* The smallest interval, a multiple of `every`, whose steps' spans (each as spans[0..n), the
 * last left out) hold `bytes` of replicas; 0 when no span holds a chunk (no interval does). */
int ax_replica_interval(const AxReplicaLink *l, const AxSpan *spans, int n, size_t bytes,
                        int every);

/* The idle spans of the last `window` steps. */
typedef struct {
  AxSpan *ring;  /* [window][cap]: each step's spans */
  int *n;        /* [window]: how many */
  int window, cap;
  int steps;     /* steps held (at most window) */
  int next;      /* the ring's slot for the next step */
} AxSpanProfile;

int ax_span_profile_init(AxSpanProfile *p, int window, int cap); /* AX_OK or AX_ERR (memory) */
void ax_span_profile_free(AxSpanProfile *p);
/* A step's spans added (the oldest beyond the window dropped). Returns 1 when they differ in
 * number from the profile's: the profile restarts from this step (re-profiled), else 0. */
int ax_span_profile_add(AxSpanProfile *p, const AxSpan *spans, int n);
/* Each gap of the newest step, from its start there and as long as its shortest over the
 * profile's steps, into out (at least cap); returns how many. */
int ax_span_profile_min(const AxSpanProfile *p, AxSpan *out);

#endif
