/* two_level.h — the two-level (hierarchical) fp32 all-reduce Espresso's "2l" options model
 * (src/plan/espresso.h), as one non-blocking operation driven like every other collective
 * (ax_coll_test, ax_coll_wait, ax_coll_free of collectives.h). On N ranks spread over n nodes of
 * g ranks each, the range is cut into g near-equal shards (ax_block_offset/ax_block_count of
 * coll_internal.h: the first count mod g are one longer) and:
 *  1. intra-node reduce-scatter: a ring over the node's g ranks, in place in buf, leaves node
 *     rank l holding shard l summed over its node (buf's other shards then hold partial sums);
 *  2. the middle: an all-reduce of shard l, in place, among the n ranks of local index l (one
 *     per node, the "cross" communicator): plain (ax_allreduce_start's algorithms) or CaSync
 *     (casync.h: compressed, with a codec state laid out for the shard on n ranks);
 *  3. intra-node all-gather: a ring over the node, in place, after which every rank holds the
 *     whole sum.
 * The steps run one after the other. Each takes its tag when the operation starts (node: the
 * reduce-scatter's, then the all-gather's; cross: the middle's), so operations started in the
 * same order on every rank match even when their steps start at different times, and other
 * collectives started later on the same communicators do not collide with them. The middle
 * step gives bitwise identical shards on the n ranks that hold one (ring, rhd and CaSync do)
 * and the all-gather copies them, so all ranks end with bitwise identical results; the sum
 * order differs from the flat ring's, so the result agrees with it to fp32 rounding only.
 *
 * Bytes (ADDED to *bytes as messages complete, through the link layer like every collective;
 * e = 4): with r this rank's local index and |s| the length of shard s (indices mod g), the
 * reduce-scatter sends (count - |r|)·e and receives (count - |r-1|)·e, the all-gather sends
 * (count - |r+1|)·e and receives (count - |r|)·e; the middle adds its own for |r| floats on n
 * ranks (ring: ax_ring_allreduce_bytes(|r|, 4, node index, n)). When g divides count that is
 * 2(g-1)/g·count·e each way inside the node.
 *
 * Every function returns AX_OK or AX_ERR with the error recorded (src/core/error.h). */
#ifndef AX_TWO_LEVEL_H
#define AX_TWO_LEVEL_H

#include <mpi.h>
#include <stddef.h>

#include "mpi/casync/casync.h"
#include "mpi/coll/collectives.h"

/* The communicators of a two-level sum over comm whose ranks sit on nodes: node (the ranks of
 * comm on this rank's node, in comm order) and cross (the ranks of comm with this rank's local
 * index on every node, in node order: ascending node id). local is this rank's index on its
 * node (its rank in node), node_index its node's place in node order (its rank in cross). */
typedef struct {
  MPI_Comm node, cross;
  int g, n_nodes; /* ranks per node (0 when nodes differ in size), nodes */
  int local, node_index;
  int usable;
} AxTwoLevel;

/* Collective over comm. node_of_rank[size of comm]: the node of each rank of comm (any ints;
 * equal = same node), the same on every rank (checked: a difference fails on all of them).
 * Usable (out->usable = 1) only when every node holds the same number g >= 2 of comm's ranks
 * and there are n >= 2 nodes; otherwise out->usable = 0 and no communicators are made (not an
 * error: the caller runs the flat collective). The communicators are new ones (their tag
 * sequences start afresh). On failure nothing is left to free. */
int ax_two_level_new(MPI_Comm comm, const int *node_of_rank, AxTwoLevel *out);
/* Frees the communicators; NULL, an unusable one or a zeroed struct is a no-op. */
void ax_two_level_free(AxTwoLevel *t);

/* The middle step's all-reduce: plain (ax_allreduce_start with algo, fp32) when codec is NULL,
 * else CaSync (ax_casync_allreduce_start with codec, casync_algo, state and ctx). The state is
 * this rank's shard's: ax_casync_state_new(codec, ax_two_level_shard(t, count, NULL),
 * t->n_nodes, cc, &state) — shards differ in length by one between local indices, so each
 * rank lays out its own. */
typedef struct {
  AxAllreduceAlgo algo;
  const AxCodec *codec;
  AxCasyncAlgo casync_algo;
  AxCasyncState *state;
  AxCodecCtx ctx;
} AxTwoLevelInner;

/* Floats of this rank's shard of count (shard t->local of g near-equal ones) and, when offset
 * is given, its first float. t not usable: the whole range (offset 0). */
size_t ax_two_level_shard(const AxTwoLevel *t, size_t count, size_t *offset);

/* In-place fp32 sum of buf[count] over node x cross (every rank of the comm t was made from),
 * as one AxColl. inner NULL: plain, AX_ALLREDUCE_AUTO. Arguments, and a CaSync state's layout
 * and that it is not in use, are checked before any tag is taken, so a refused start leaves
 * the communicators' sequences as they were; t not usable is refused. The state is taken only
 * when the middle step starts: no other operation may use it until this one has completed (that
 * would fail then). t's communicators, buf, the codec and the state must outlive the operation
 * (inner itself is copied). */
int ax_two_level_allreduce_start(AxColl **op, const AxTwoLevel *t, const AxCommConfig *cc,
                                 const AxTwoLevelInner *inner, float *buf, size_t count,
                                 AxCommBytes *bytes);
/* start + wait + free */
int ax_two_level_allreduce(const AxTwoLevel *t, const AxCommConfig *cc,
                           const AxTwoLevelInner *inner, float *buf, size_t count,
                           AxCommBytes *bytes);

#endif
