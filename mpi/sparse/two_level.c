/* two_level.c — the two-level all-reduce of two_level.h: the node and cross communicators from a
 * node layout, and the operation, an AxColl run by an engine of its own that starts its three
 * steps (ring reduce-scatter on node, the middle all-reduce on cross, ring all-gather on node)
 * one after the other on the tags it reserved when it started, each as a sub-operation it
 * progresses from ax_coll_test. */
#include "two_level.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/coll/coll_internal.h"
#include "mpi/mpi_util.h"

/* ------------------------------------------------------------------ communicators */

static uint64_t layout_hash(const int *node_of, int size) {
  uint64_t h = 1469598103934665603ULL;
  for (int r = 0; r < size; r++) h = (h ^ (uint64_t)(uint32_t)node_of[r]) * 1099511628211ULL;
  return h;
}

/* Every rank must have passed the same layout: the minimum of h and of ~h over comm (the
 * latter is ~max h) tell whether all hashes agree, in one call. */
static int check_same_layout(MPI_Comm comm, const int *node_of, int size) {
  uint64_t h = layout_hash(node_of, size), mine[2] = {h, ~h}, all[2];
  AX_MPI(MPI_Allreduce(mine, all, 2, MPI_UINT64_T, MPI_MIN, comm));
  if (all[0] != ~all[1])
    return AX_FAIL("two-level: the ranks were given different node layouts (node_of_rank "
                   "must be the same on every rank)");
  return AX_OK;
}

static int int_before(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

/* Nodes (in ascending id), their common size (0 when they differ), this rank's node's place
 * and its index on the node. */
static int shape_of(const int *node_of, int size, int rank, AxTwoLevel *t) {
  int *ids = ax_malloc((size_t)size * sizeof *ids);
  if (!ids) return AX_ERR;
  memcpy(ids, node_of, (size_t)size * sizeof *ids);
  qsort(ids, (size_t)size, sizeof *ids, int_before);
  int mine = node_of[rank], even = 1;
  for (int i = 0, j; i < size; i = j) {
    for (j = i; j < size && ids[j] == ids[i];) j++;
    if (t->n_nodes == 0) t->g = j - i;
    even &= j - i == t->g;
    t->node_index += ids[i] < mine;
    t->n_nodes++;
  }
  free(ids);
  if (!even) t->g = 0;
  for (int r = 0; r < rank; r++) t->local += node_of[r] == mine;
  return AX_OK;
}

static void reset(AxTwoLevel *t) {
  memset(t, 0, sizeof *t);
  t->node = t->cross = MPI_COMM_NULL;
}

static int split(MPI_Comm comm, int rank, AxTwoLevel *t) {
  AX_MPI(MPI_Comm_split(comm, t->node_index, rank, &t->node));
  AX_MPI(MPI_Comm_split(comm, t->local, t->node_index, &t->cross));
  return AX_OK;
}

int ax_two_level_new(MPI_Comm comm, const int *node_of_rank, AxTwoLevel *out) {
  reset(out);
  if (comm == MPI_COMM_NULL) return AX_FAIL("two-level: MPI_COMM_NULL");
  if (!node_of_rank) return AX_FAIL("two-level: no node layout (node_of_rank is NULL)");
  int rank, size;
  AX_MPI(MPI_Comm_rank(comm, &rank));
  AX_MPI(MPI_Comm_size(comm, &size));
  AX_TRY(check_same_layout(comm, node_of_rank, size));
  AX_TRY(shape_of(node_of_rank, size, rank, out));
  out->usable = out->g >= 2 && out->n_nodes >= 2;
  if (!out->usable) return AX_OK;
  if (split(comm, rank, out) != AX_OK) {
    ax_two_level_free(out);
    return AX_ERR;
  }
  return AX_OK;
}

void ax_two_level_free(AxTwoLevel *t) {
  if (!t || !t->usable) return; /* nothing made (a zeroed struct included) */
  if (t->node != MPI_COMM_NULL) MPI_Comm_free(&t->node);
  if (t->cross != MPI_COMM_NULL) MPI_Comm_free(&t->cross);
  reset(t);
}

size_t ax_two_level_shard(const AxTwoLevel *t, size_t count, size_t *offset) {
  int whole = !t || !t->usable;
  if (offset) *offset = whole ? 0 : ax_block_offset(count, t->g, t->local);
  return whole ? count : ax_block_count(count, t->g, t->local);
}

/* ------------------------------------------------------------------ the operation */

enum { STEP_SCATTER, STEP_MIDDLE, STEP_GATHER, STEP_DONE };

typedef struct {
  AxColl *coll; /* on node: resolved configuration, byte counters */
  MPI_Comm cross;
  AxTwoLevelInner inner;
  float *buf;
  size_t count, shard, offset;
  int tag[3]; /* per step: node, cross, node */
  int step;
  AxColl *sub; /* the step's operation */
} TwoOp;

static int start_step(TwoOp *o) {
  AxColl *c = o->coll;
  const AxTwoLevelInner *in = &o->inner;
  int tag = o->tag[o->step];
  if (o->step == STEP_SCATTER)
    return ax_reduce_scatter_segments_start_on_tag(&o->sub, c->comm, tag, &c->cc, o->buf,
                                                   o->count, AX_COMM_F32, c->bytes);
  if (o->step == STEP_GATHER)
    return ax_allgather_segments_start_on_tag(&o->sub, c->comm, tag, &c->cc, o->buf, o->count,
                                              AX_COMM_F32, c->bytes);
  float *shard = o->count ? o->buf + o->offset : NULL;
  if (!in->codec)
    return ax_allreduce_start_on_tag(&o->sub, o->cross, tag, &c->cc, shard, o->shard,
                                     AX_COMM_F32, in->algo, c->bytes);
  return ax_casync_allreduce_start_on_tag(&o->sub, o->cross, tag, &c->cc, in->codec,
                                          in->casync_algo, in->state, &in->ctx, shard, o->shard,
                                          c->bytes);
}

/* Progresses the current step; as each completes, starts the next (a step may complete at
 * once: nothing to send). */
static int two_test(AxColl *op) {
  TwoOp *o = op->engine_state;
  while (!op->finished) {
    int done = 0;
    AX_TRY(ax_coll_test(o->sub, &done));
    if (!done) break;
    ax_coll_free(o->sub);
    o->sub = NULL;
    if (++o->step == STEP_DONE)
      op->finished = 1;
    else
      AX_TRY(start_step(o));
  }
  return AX_OK;
}

static void two_note(AxColl *op) {
  const TwoOp *o = op->engine_state;
  if (o && o->sub) ax_coll_note_pending(o->sub);
}

static void two_free(AxColl *op) {
  TwoOp *o = op->engine_state;
  if (!o) return;
  ax_coll_free(o->sub);
  free(o);
  op->engine_state = NULL;
}

static const AxCollEngine TWO_LEVEL = {two_test, two_note, two_free};

/* Everything a start can refuse, before any tag is taken. */
static int check_start(const AxTwoLevel *t, const AxCommConfig *cc, const AxTwoLevelInner *in,
                       const float *buf, size_t count) {
  if (!t) return AX_FAIL("two-level all-reduce: no communicators (AxTwoLevel is NULL)");
  if (!t->usable)
    return AX_FAIL("two-level all-reduce: not usable on this layout (%d node(s), %s); it needs "
                   ">= 2 nodes of the same number >= 2 of ranks: use the flat all-reduce",
                   t->n_nodes, t->g ? "equal in size" : "of different sizes");
  if (count && !buf) return AX_FAIL("two-level all-reduce: no buffer for %zu values", count);
  if (!in->codec) {
    if (in->algo < AX_ALLREDUCE_AUTO || in->algo > AX_ALLREDUCE_RHD)
      return AX_FAIL("two-level all-reduce: unknown all-reduce algorithm %d", (int)in->algo);
    return AX_OK;
  }
  size_t offset, shard = ax_two_level_shard(t, count, &offset);
  if (ax_casync_allreduce_check(t->cross, cc, in->codec, in->casync_algo, in->state,
                                count ? buf + offset : NULL, shard) != AX_OK)
    return ax_error_context("two-level all-reduce, the middle step (%zu of %zu values on %d "
                            "nodes): ", shard, count, t->n_nodes);
  return AX_OK;
}

/* The tags of the three steps (indexed by step), taken in the order the header states: node
 * twice (reduce-scatter, all-gather), then cross. */
static int reserve_tags(const AxTwoLevel *t, int tag[3]) {
  AX_TRY(ax_coll_next_tag(t->node, &tag[STEP_SCATTER]));
  AX_TRY(ax_coll_next_tag(t->node, &tag[STEP_GATHER]));
  return ax_coll_next_tag(t->cross, &tag[STEP_MIDDLE]);
}

static int start(AxColl *op, const AxTwoLevel *t, const AxTwoLevelInner *in, float *buf,
                 size_t count, const int tag[3]) {
  TwoOp *o = ax_calloc(1, sizeof *o);
  if (!o) return AX_ERR;
  *o = (TwoOp){.coll = op, .cross = t->cross, .inner = *in, .buf = buf, .count = count,
               .tag = {tag[0], tag[1], tag[2]}, .step = STEP_SCATTER};
  o->shard = ax_two_level_shard(t, count, &o->offset);
  op->engine = &TWO_LEVEL; /* from here on ax_coll_free frees o */
  op->engine_state = o;
  AX_TRY(start_step(o));
  return two_test(op);
}

int ax_two_level_allreduce_start(AxColl **op, const AxTwoLevel *t, const AxCommConfig *cc,
                                 const AxTwoLevelInner *inner, float *buf, size_t count,
                                 AxCommBytes *bytes) {
  *op = NULL;
  AxTwoLevelInner plain = {.algo = AX_ALLREDUCE_AUTO};
  if (!inner) inner = &plain;
  AX_TRY(check_start(t, cc, inner, buf, count));
  int tag[3];
  AX_TRY(reserve_tags(t, tag));
  /* the operation itself sends nothing: it lives on node, on the reduce-scatter's tag */
  AX_TRY(ax_coll_create_on_tag(op, t->node, cc, AX_COMM_F32, bytes, tag[STEP_SCATTER]));
  if (start(*op, t, inner, buf, count, tag) != AX_OK) {
    ax_coll_free(*op);
    *op = NULL;
    return AX_ERR;
  }
  return AX_OK;
}

int ax_two_level_allreduce(const AxTwoLevel *t, const AxCommConfig *cc,
                           const AxTwoLevelInner *inner, float *buf, size_t count,
                           AxCommBytes *bytes) {
  AxColl *op = NULL;
  AX_TRY(ax_two_level_allreduce_start(&op, t, cc, inner, buf, count, bytes));
  int rc = ax_coll_wait(op);
  ax_coll_free(op);
  return rc;
}
