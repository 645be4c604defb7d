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
 * (unless it is the last of the checkpoint): a sliver of a span costs alpha for no bytes. */
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

#endif
