/* offload.h — the optimizer side of a stage, in host memory (AxoNN §V-B, §V-C).
 *
 * One page-locked host arena holds the stage's fp32 master weights and Adam moments (and,
 * when the device is not ordinary host memory or the all-reduce payload is bf16, a host
 * staging copy of the gradients and the bf16 wire buffer). The flat parameter range is cut
 * into buckets of `bucket` elements; a chunk is `coarsening` consecutive buckets and is the
 * unit of the data-parallel all-reduce. The last bucket and chunk may be short.
 *
 * The device keeps only the compute copy of the weights and the gradients. A step downloads
 * the gradients (a no-op when the CPU backend's fp32 gradients are used in place), reduces
 * them chunk by chunk over the data-parallel communicator and, as soon as a chunk is summed,
 * runs AdamW on its buckets while later chunks are still in flight (progress calls between
 * sub-blocks keep MPI moving), then writes the updated weights of the chunk back to the
 * device copy. See interleave.h for the step itself. */
#ifndef AX_OFFLOAD_H
#define AX_OFFLOAD_H

#include <stddef.h>
#include <stdint.h>

#include "adamw.h"
#include "src/backend/backend.h"

typedef struct {
  size_t bucket_size; /* elements per bucket */
  int coarsening;     /* buckets per all-reduce chunk */
  int wire_bf16;      /* all-reduce payload in bf16 (summed in fp32) */
  int single_chunk;   /* the whole range is one chunk (the plain, non-interleaved step) */
  int state_only;     /* the arena holds the state only, no gradients (--optimizer device
                         with nothing to sum: grads is NULL) */
  int grads_on_device; /* the gradients are summed where they are, in device memory handed to
                          CUDA-aware MPI (--optimizer device): grads is the device buffer, which
                          host code never reads; no staging, no bf16 wire */
  size_t piece;       /* bf16 gradients a piece of the download (0: AX_OFFLOAD_PIECE) */
  /* the weight-decay mask of the range: segments in order, covering [0, n) (the model's
   * knowledge, handed over as data; copied) */
  const AxParamSegment *segs;
  int n_segs;
} AxOffloadConfig;

typedef struct {
  AxBackend *be;
  size_t n;          /* parameters of the stage */
  size_t bucket;     /* elements per bucket */
  size_t chunk;      /* elements per chunk (coarsening x bucket) */
  int n_buckets, n_chunks;
  void *arena;       /* the single host allocation */
  size_t arena_bytes;
  float *master;     /* fp32 master weights [n]: in the arena, or the device buffer itself */
  int params_alias;  /* master is the device parameter buffer (CPU backend, fp32) */
  float *m, *v;      /* Adam moments [n]: the arena's own, or where ax_offload_move_state put
                        them */
  float *own_m, *own_v; /* the arena's own moments */
  float *grads;      /* fp32 gradients on the host [n]: staging, the device buffer itself, or
                        NULL (state_only) */
  int grads_alias;   /* grads is the device gradient buffer (CPU backend, fp32) */
  int grads_on_device; /* grads is the device gradient buffer in device memory (the config's) */
  uint16_t *wire;    /* bf16 all-reduce payload [n], or NULL */
  uint16_t *bounce[2]; /* pinned pieces of `piece` bf16 gradients on their way down (a device
                          computing in bf16), or NULL */
  size_t piece;
  AxParamSegment *segs; /* the decay mask (a copy of the config's), cut where codec spans are
                           marked (ax_offload_mark_codec) */
  int n_segs;
  AxPool *pool;      /* optimizer threads; NULL: the calling thread */
  /* Set for one step by a caller that keeps the state elsewhere (the memory checkpoints'
   * zero-copy, docs/memory-checkpoints.md): the updates write m and v there, and the master
   * weights both in place and there; ax_offload_move_state then makes `to` the moments.
   * to.m NULL: updates in place. */
  AxAdamWOut to;
} AxOffload;

/* Host bytes the arena needs for n parameters (for plans; nothing is allocated). */
size_t ax_offload_arena_bytes(size_t n, int host_fp32, int wire_bf16, int state_only);

/* Builds the arena for a stage of n parameters. device_params and device_grads are the
 * stage's buffers: on a backend that computes in fp32 in host memory (host_fp32: the CPU
 * backend) the compute copy is the master copy, so master aliases device_params, and grads
 * aliases device_grads unless a bf16 wire needs a staging copy. The master weights are left
 * for the caller to fill. Fails when cfg's segments do not cover [0, n) in order. */
int ax_offload_init(AxOffload *o, AxBackend *be, size_t n, void *device_params,
                    void *device_grads, const AxOffloadConfig *cfg, AxPool *pool);
void ax_offload_free(AxOffload *o);

/* Element range [lo, hi) of chunk c. */
void ax_offload_chunk_range(const AxOffload *o, int c, size_t *lo, size_t *hi);
/* Device gradients -> host fp32 gradients (no-op when aliased). From a device computing in
 * bf16 they come down as they are, half the bytes of fp32, a piece at a time into o->bounce;
 * the pool's threads widen each piece to fp32 (exactly) while the next one comes down. */
int ax_offload_download_grads(AxOffload *o, const void *device_grads);
enum { AX_OFFLOAD_PIECE = 8 << 20 }; /* bf16 gradients a piece of that download: 16 MiB */
/* Master weights [lo, hi) -> the device compute copy (on the copy stream; no-op when
 * aliased). */
int ax_offload_write_back(AxOffload *o, void *device_params, size_t lo, size_t hi);
/* Host gradients [lo, hi) -> the device gradient buffer (the device optimizer's summed
 * gradients; on the copy stream; no-op when grads is that buffer). */
int ax_offload_upload_grads(AxOffload *o, void *device_grads, size_t lo, size_t hi);
/* AdamW on [lo, hi) of the master weights from the host gradients (into o->to, when set). */
void ax_offload_update(AxOffload *o, size_t lo, size_t hi, const AxAdamWHyper *h);
/* The spans (in order, not overlapping) whose gradients come through a codec that carries part
 * of the optimizer: the segments are cut at their bounds, and the updates give those inside
 * them the hyper-parameters' codec settings (adamw.h), the others the plain ones. */
int ax_offload_mark_codec(AxOffload *o, const AxParamSpan *spans, int n_spans);
/* After a step whose updates went into o->to: its m and v are the moments from now on
 * (updated: 0 when the step was skipped, leaving the moments where they were); o->to is
 * cleared either way. */
void ax_offload_move_state(AxOffload *o, int updated);
/* The moments copied back into the arena's own (before what holds them goes away). */
void ax_offload_state_home(AxOffload *o);

#endif
