/* grad_compress.h — compression of a stage's data-parallel gradient sum (HiPress's CaSync,
 * mpi/casync/casync.h), layer-wise: every optimizer chunk is cut into parts at the boundaries of
 * the stage's tensors (handed over as data by the trainer, like the decay segments: one range per
 * tensor, per layer for the stacked kinds), and each part has its own decision of selective
 * compression (compress or not, into how many partitions, which CaSync then runs:
 * mpi/casync/casync_cost.h), its own codec (a linear codec like PowerSGD is configured with the
 * part's row length) and its own codec state, which lives here from step to step and goes into checkpoints. The interleaver
 * (interleave.h) sums a chunk with a group of operations: one CaSync all-reduce per compressed
 * part and one plain all-reduce per maximal run of adjacent plain parts (less a range the
 * caller summed already: interleave.h), started in part order. */
#ifndef AX_GRAD_COMPRESS_H
#define AX_GRAD_COMPRESS_H

#include <stddef.h>
#include <stdint.h>

#include "mpi/casync/casync.h"
#include "mpi/casync/casync_cost.h"
#include "mpi/sparse/two_level.h"
#include "offload.h"

/* One tensor (or one layer's slice of a stacked tensor) in the stage's flat range: cols is
 * the row length of a matrix, the element count of a 1-D tensor; name and layer (-1: none)
 * only label it in logs; replicated: ranks outside the data-parallel group (tensor-parallel
 * replicas) hold the same values and must get the same sum, so a codec sees it alone (fused
 * with other values, a shared scale, top-k or factor would differ between the replicas). */
typedef struct {
  size_t offset, count, cols;
  const char *name; /* not owned; NULL: none */
  int layer;
  int replicated;
} AxTensorRange;

/* A piece of one chunk inside one tensor range (or a gap between ranges: cols 0). */
typedef struct {
  size_t lo, hi;          /* [lo, hi) of the stage's flat range */
  size_t cols;            /* the tensor's row length; 0: unknown */
  const char *name;       /* the tensor's (NULL: a gap) */
  int layer;              /* the tensor's layer, -1: none */
  int chunk;              /* the optimizer chunk it belongs to */
  AxCasyncChoice choice;  /* compress or not, and K */
  const AxCodec *codec;   /* the codec of a compressed part (not owned) */
  AxCasyncState *state;   /* NULL where the part is not compressed (owned) */
} AxGradPart;

typedef struct {
  AxCasyncAlgo algo;
  int ranks;               /* of the data-parallel communicator */
  int n_chunks, n_parts;
  AxGradPart *parts;       /* [n_parts], in range order */
  int *first;              /* [n_chunks + 1]: chunk c's parts are [first[c], first[c+1]) */
  uint64_t seed, step;     /* the codec context of this step (the trainer sets step) */
  float grad_scale;        /* ... and the loss scale its gradients carry (0 or 1: none) */
  int enabled;             /* 0: every part plain (--compress-warmup) */
  const AxTwoLevel *two_level; /* the communicators of two-level parts (not owned; NULL: none) */
} AxGradCompress;

/* The parts of o's chunks cut at the boundaries of tensors t[n_t] (in order, not
 * overlapping; what they leave uncovered becomes parts of cols 0): writes at most `cap` into
 * out (NULL: counts only) and returns how many there are. choice, codec and state are zero. */
int ax_grad_parts_cut(const AxOffload *o, const AxTensorRange *t, int n_t, AxGradPart *out,
                      int cap);
/* Takes parts[n_parts] (from ax_grad_parts_cut, with choice and, where compressed, codec
 * filled in; copied) and makes a fresh state for each compressed part: in exactly the K =
 * choice.parts partitions of the cost model (HiPress's SeCoPa: mpi/casync/casync_cost.h), one
 * per segment (choice.whole_segments), or, with choice.parts 0, in the pieces of base's chunk
 * size (base: the data-parallel communication's configuration, which the operations are then
 * started with); a two-level part's state is for its shard on the communicator between nodes
 * (two_level must then be given and usable, and outlive gc). */
int ax_grad_compress_init(AxGradCompress *gc, const AxOffload *o, const AxGradPart *parts,
                          int n_parts, AxCasyncAlgo algo, int ranks, uint64_t seed,
                          const AxCommConfig *base, const AxTwoLevel *two_level);
/* What part p's CaSync sums: the part on gc->ranks, or (two-level) this rank's shard of it on
 * the ranks between nodes; offset: where that starts in the part. */
void ax_grad_compress_sum_shape(const AxGradCompress *gc, int p, size_t *offset, size_t *count,
                                int *ranks);
void ax_grad_compress_free(AxGradCompress *gc);
/* The momentum of every compressed part's codec (one that carries the optimizer's first
 * moment) becomes m over what its CaSync sums (m: the stage's flat range, as the parts' lo/hi;
 * a two-level part's shard), times loss_scale / the ranks of that sum: when compression
 * starts, the codec takes over the optimizer's moment, each of the sum's ranks its share (the
 * ranks' gradients, or the nodes' sums of them, add up to the batch's gradient, and so do
 * their momenta). */
void ax_grad_compress_set_momentum(AxGradCompress *gc, const float *m, float loss_scale);
/* Every compressed part's state times factor (the loss scale changed by it). */
void ax_grad_compress_rescale(AxGradCompress *gc, float factor);
/* Whether part p is summed by an operation of its own now (CaSync, or two levels). */
int ax_grad_compress_part_uses(const AxGradCompress *gc, int p);
/* Whether any part of chunk c is (the rest: plain all-reduces of runs of parts). */
int ax_grad_compress_uses(const AxGradCompress *gc, int c);
/* A CRC of every part's range and decision (compress, CaSync algorithm, K, whole segments,
 * two levels): two runs whose decisions differ (a cost model that decided otherwise on
 * resume) have other fingerprints. */
uint32_t ax_grad_compress_fingerprint(const AxGradCompress *gc);
/* The same over the parts[n] inside [lo, hi) (before a gc is made of them). */
uint32_t ax_grad_parts_fingerprint(const AxGradPart *parts, int n, size_t lo, size_t hi);
/* Checkpointing: every compressed part's state, in part order (same codec, parts and
 * ranks). */
size_t ax_grad_compress_state_bytes(const AxGradCompress *gc);
int ax_grad_compress_save(const AxGradCompress *gc, void *buf);
int ax_grad_compress_load(AxGradCompress *gc, const void *buf, size_t bytes);

#endif
