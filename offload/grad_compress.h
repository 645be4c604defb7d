/* grad_compress.h — compression of a stage's data-parallel gradient sum (HiPress's CaSync,
 * mpi/casync.h): the codec, the per-chunk decision of selective compression (compress or not,
 * into how many partitions: mpi/casync_cost.h) and the codec state of every chunk, which lives
 * here, with the offload arena's ranges, from step to step and goes into checkpoints. The
 * interleaver (interleave.h) starts a chunk's CaSync all-reduce instead of the plain one when
 * this says so. */
#ifndef AX_GRAD_COMPRESS_H
#define AX_GRAD_COMPRESS_H

#include <stddef.h>
#include <stdint.h>

#include "mpi/casync.h"
#include "mpi/casync_cost.h"
#include "offload.h"

typedef struct {
  const AxCodec *codec;    /* not owned */
  AxCasyncAlgo algo;
  int ranks;               /* of the data-parallel communicator */
  int n_chunks;
  AxCasyncChoice *choice;  /* [n_chunks] */
  AxCasyncState **states;  /* [n_chunks]; NULL where the chunk is not compressed */
  uint64_t seed, step;     /* the codec context of this step (the trainer sets step) */
  int enabled;             /* 0: every chunk plain (--compress-warmup) */
} AxGradCompress;

/* One decision per chunk of o (copied) and a fresh state for each compressed chunk, cut as
 * ax_grad_compress_cc says for base (the data-parallel communication's configuration). */
int ax_grad_compress_init(AxGradCompress *gc, const AxOffload *o, const AxCodec *codec,
                          AxCasyncAlgo algo, int ranks, const AxCasyncChoice *choice,
                          uint64_t seed, const AxCommConfig *base);
/* The configuration chunk c's CaSync runs with: base, its messages cut into the chosen K
 * partitions when K exceeds the ranks (HiPress's K > N: ceil(K/N) rounds of pieces). */
AxCommConfig ax_grad_compress_cc(const AxGradCompress *gc, const AxCommConfig *base, int c,
                                 size_t count);
void ax_grad_compress_free(AxGradCompress *gc);
/* Whether chunk c goes through CaSync now. */
int ax_grad_compress_uses(const AxGradCompress *gc, int c);
/* Checkpointing: every chunk's state, in chunk order (same codec, chunks and ranks). */
size_t ax_grad_compress_state_bytes(const AxGradCompress *gc);
int ax_grad_compress_save(const AxGradCompress *gc, void *buf);
int ax_grad_compress_load(AxGradCompress *gc, const void *buf, size_t bytes);

#endif
