/* interleave.h — the data-parallel gradient all-reduce over chunks, interleaved with the host
 * AdamW (AxoNN §V-C). Chunks are started non-blocking, a window at a time; when chunk c is
 * summed, its buckets are updated while chunks c+1.. are in flight, and the new weights of
 * chunk c are written back to the device copy. MPI progresses either by a progress call on
 * every in-flight chunk between sub-blocks of the update (AX_PROGRESS_CALLS), or by a
 * communication thread that alone calls MPI during the step, polls the chunks in order and
 * yields the core between polls (AX_PROGRESS_THREAD: needs MPI_THREAD_SERIALIZED). Each summed chunk's sum of squares is accumulated for the
 * global gradient norm.
 *
 * Global-norm clipping needs the norm of the whole summed gradient before any update, so a
 * step that may clip runs the two halves separately: ax_offload_reduce (all chunks, sums of
 * squares as they complete), then ax_offload_update_all. */
#ifndef AX_INTERLEAVE_H
#define AX_INTERLEAVE_H

#include <mpi.h>

#include "grad_compress.h"
#include "host_sumsq.h"
#include "mpi/coll/collectives.h"
#include "offload.h"
#include "src/core/trace.h"

enum { AX_REDUCE_MAX_SKIPS = 32 };

typedef enum {
  AX_PROGRESS_NONE = 0, /* only between chunks */
  AX_PROGRESS_CALLS,    /* a test on every chunk in flight between update sub-blocks */
  AX_PROGRESS_THREAD    /* a communication thread */
} AxProgressMode;

typedef struct {
  MPI_Comm comm;        /* data-parallel column; MPI_COMM_NULL or one rank: nothing to sum */
  const AxCommConfig *cc; /* chunking and waiting of the all-reduce (NULL: the defaults) */
  AxAllreduceAlgo algo;
  AxCommBytes *bytes;   /* payload counters, may be NULL */
  int window;           /* chunks in flight at once (>= 1) */
  AxProgressMode progress; /* how MPI progresses while AdamW runs */
  /* elements left out of the sum of squares, spans in ascending order: the tied copy of wte,
   * tensor-parallel replicas that another rank counts */
  struct { size_t lo, hi; } norm_skip[AX_REDUCE_MAX_SKIPS];
  int n_norm_skip;
  /* elements [summed_lo, summed_hi) were already summed by the caller (the fused tied
   * embedding): the all-reduce leaves them out, plain, bf16 and compressed chunks alike (a
   * compressed part must lie wholly inside or outside); the sum of squares still covers them */
  size_t summed_lo, summed_hi;
  AxTrace *trace;       /* may be NULL */
  /* the layer-wise parts it says so go through CaSync with their codec (grad_compress.h);
   * NULL: all plain */
  const AxGradCompress *compress;
  /* the sum was opened early (ax_early_sum_open with this spec) and some of it started: the
   * chunks take its operations; NULL: none */
  struct AxEarlySum *early;
} AxReduceSpec;

/* Sums every chunk; *sumsq gets the summed gradient's sum of squares (outside the skip),
 * taken over the whole range once every chunk is in, so it does not depend on the chunking;
 * 0 where the gradients are in device memory (o->grads_on_device: the caller takes it there,
 * and r->algo must be one that lets MPI sum, AX_ALLREDUCE_MPI). */
int ax_offload_reduce(AxOffload *o, const AxReduceSpec *r, double *sumsq);
/* ax_offload_reduce, each summed chunk of a host copy uploaded into device_grads as soon as it
 * is in, while later chunks are still in flight (--optimizer device, host-staged); the copy
 * stream synchronized at the end. */
int ax_offload_reduce_upload(AxOffload *o, const AxReduceSpec *r, void *device_grads,
                             double *sumsq);
/* The sum over [lo, hi) outside r's skipped spans of span(ctx, a, b) over the spans left. */
double ax_reduce_spec_sumsq(const AxReduceSpec *r, size_t lo, size_t hi,
                            double (*span)(void *ctx, size_t lo, size_t hi), void *ctx);
/* The early data-parallel sum (--dp-sync-early): the sum of the chunks opened before the
 * gradients are all final, cut into pieces (each chunk's compressed or two-level parts whole,
 * its plain ranges cut at cuts[n_cuts], ascending: the tensors' bounds), and each piece
 * started as soon as the caller says its gradients are final; ax_offload_reduce(_update) with
 * spec.early set then starts the rest, chunk by chunk, and waits for all of them as usual.
 * Every rank of the column must start the same pieces in the same order (the same stage's
 * blocks finishing in the same order do). Needs progress calls (not a communication thread)
 * and fp32 gradients summed in place in host memory (no bf16 wire, no device sums). With two
 * ranks every element is summed as a + b either way, so the result equals the late sum's bit
 * for bit; with more, a plain piece's ring may add in another order than its chunk's did. */
typedef struct AxEarlySum AxEarlySum;
/* Opens the sum over r (which must outlive it, with early = the result); nothing started. */
int ax_early_sum_open(AxEarlySum **out, AxOffload *o, const AxReduceSpec *r, const size_t *cuts,
                      int n_cuts);
/* Starts, in range order, every piece not yet started for which ready(ctx, lo, hi) is 1, then
 * gives every operation in flight one progress call. */
int ax_early_sum_start(AxEarlySum *e, int (*ready)(void *ctx, size_t lo, size_t hi), void *ctx);
/* The pieces started so far and all of them (0, 0 for NULL). */
void ax_early_sum_counts(const AxEarlySum *e, int *started, int *pieces);
/* Frees the sum, after the reduce that used it waited for every piece. */
void ax_early_sum_close(AxEarlySum *e);

/* AdamW on every chunk and write-back to the device copy. */
int ax_offload_update_all(AxOffload *o, void *device_params, const AxAdamWHyper *h,
                          AxTrace *trace);
/* Both at once, interleaved (h must not depend on the norm). */
int ax_offload_reduce_update(AxOffload *o, const AxReduceSpec *r, void *device_params,
                             const AxAdamWHyper *h, double *sumsq);

#endif
