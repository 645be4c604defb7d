/* sparse_hier.h — Zen's hierarchical step: the sum of row-sparse gradients (sparse_sync.h) over
 * ranks that sit on nodes, with Zen inside each node and Zen again between the nodes' ranks of
 * the same local index, so that only node sums cross between nodes (the thesis deploys Zen so,
 * §3.4.1: "Zen communicates dense tensors within machines with ReduceScatter/AllGather", Zen
 * between them; inside a node this one stays sparse too). On n nodes of g ranks each
 * (two_level.h's node and cross communicators; local index l, node index k):
 *   1. node push and sum: Zen's steps 1-3 over the node with h_0's owners among g (the same
 *      owner sets P_0 .. P_{g-1} on every node: one seed, one g), so local rank l sums, from +0
 *      in node-rank order, the node's rows that fall in P_l: U_l, the node's sum S_k(U_l);
 *   2. between the nodes: Zen over cross (n ranks, rank = node index) on a table of |P_l| rows
 *      (row p standing for the p-th smallest member of P_l), each rank giving its U_l with
 *      S_k's values; every rank of cross ends with sum_k S_k of every row some node touched
 *      in P_l (each from +0 in node order), and the list of those rows W_l;
 *   3. node pull: Zen's step 4 over the node with W_l in U_l's place: the bitmap of W_l over
 *      P_l and its values to the node's other ranks.
 * Every row is therefore ((0 + S_0) + S_1) + ... over the nodes, S_k = ((0 + g_a) + g_b) + ...
 * over node k's ranks in node order: the same order as two_level.h's dense sum on 2 ranks a node
 * and 2 nodes (bit for bit: a + b = b + a), another order than the flat Zen's rank order
 * elsewhere (fp32 rounding apart: each within (N-1) 2^-24 sum|g| of the exact sum).
 * Bytes: the node level as sparse_sync.h's Zen on g ranks with U_l replaced by W_l in the pull
 * (st->node); the cross level as Zen on n ranks over |P_l| rows (st->cross): the only messages
 * between nodes. The cross level takes the owners set by ax_sparse_hier_set_owners (balanced
 * or h_0, as the flat Zen); the node level always h_0 (every node must cut alike). Collective
 * over the comm t was made from; blocking; errors as sparse_sync.h. */
#ifndef AX_SPARSE_HIER_H
#define AX_SPARSE_HIER_H

#include "mpi/sparse/sparse_sync.h"
#include "mpi/sparse/two_level.h"

typedef struct AxSparseHier AxSparseHier;

typedef struct {
  AxSparseSyncStats node, cross; /* this rank's, by level (cross: between nodes) */
} AxSparseHierStats;

/* Collective over t's communicators (t usable: two_level.h): a table of rows x cols, the hash
 * functions of the seed of node 0's rank 0. t must outlive it. */
int ax_sparse_hier_create(AxSparseHier **out, const AxTwoLevel *t, uint32_t rows, size_t cols,
                          uint64_t seed);
void ax_sparse_hier_free(AxSparseHier *h); /* NULL is a no-op */
/* The cross level's owners from the next call on; every rank must set the same. */
void ax_sparse_hier_set_owners(AxSparseHier *h, AxZenOwners owners);
/* The cross level's sync (its communicator: rank = node index), for its imbalance. */
AxSparseSync *ax_sparse_hier_cross(AxSparseHier *h);

/* The sum into every rank's table, as ax_sparse_sync_zen's input and output (st may be NULL). */
int ax_sparse_hier_zen(AxSparseHier *h, const AxCommConfig *cc, const AxSparseRows *in,
                       float *table, AxSparseHierStats *st);

#endif
