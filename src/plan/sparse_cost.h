/* sparse_cost.h — what the data-parallel sum of a row-sparse embedding gradient costs by each
 * algorithm of mpi/sparse/sparse_sync.h (Zen, flat or hierarchical as sparse_hier.h runs it;
 * the all-gather of rows; the dense ring all-reduce), for one step's row counts, priced as the
 * 4D communication model prices collectives (comm_model.h, ax_comm_price: bytes / beta plus the
 * latency once a message or ring step) over the link between nodes and the one inside them;
 * and the cheapest (`--sparse-embedding-sync auto`). No MPI.
 *
 * Bytes are the busiest rank's, per message as sparse_sync.h states them, with what a rank
 * cannot know before the exchange estimated (N ranks, g to a node on n nodes, V rows of C
 * floats, n_max the most rows a rank holds, U = min(V, the sum of the counts) the union,
 * U_node = min(V, sum / n) a node's union):
 *   dense      the ring all-reduce of V C floats over N ranks (comm_model.h's exact bytes);
 *              its ring crosses the link between nodes when n > 1;
 *   all-gather to each peer: 4 (the count) + n_max (4 + 4C);
 *   Zen flat   to each peer: the counts (4; balanced owners: ceil(V/8), the rows as a bitmap),
 *              the push n_max (4 + 4C) / N, the pull ceil(V / 8N) + 4C U / N;
 *   Zen hier.  inside the node, the same on g ranks; between nodes, Zen on n ranks over a table
 *              of V/g rows holding U_node / g each: counts (4 or ceil(V / 8g)), push
 *              U_node (4 + 4C) / (g n), pull ceil(V / 8gn) + 4C U / (g n).
 * Each message to a peer on another node costs latency + bytes / bandwidth of the link between
 * nodes, to one on the same node those of the link inside it; a rank's messages add up (they
 * share its link). Every message of Zen's and the all-gather's four (counts, push or rows,
 * bitmap, values) pays the latency. */
#ifndef AX_SPARSE_COST_H
#define AX_SPARSE_COST_H

#include <stddef.h>
#include <stdint.h>

enum { AX_SPARSE_COST_ZEN = 0, AX_SPARSE_COST_ALLGATHER, AX_SPARSE_COST_DENSE,
       AX_SPARSE_COST_N }; /* AxSparseSyncAlgo's order */

typedef struct {
  double latency_s, bytes_per_s;
} AxSparseLink;

typedef struct {
  int ranks;             /* N */
  int per_node;          /* g: ranks to a node (1: each its own; N: one node) */
  int hierarchical;      /* Zen runs two levels (sparse_hier.h): n = N / g >= 2 nodes, g >= 2 */
  int balanced;          /* Zen's owners balanced (the counts go as bitmaps) */
  uint32_t rows;         /* V */
  size_t cols;           /* C */
  const unsigned long long *counts; /* [N]: each rank's rows this step */
  AxSparseLink inter, intra; /* between nodes, inside one */
} AxSparseCostIn;

typedef struct {
  unsigned long long bytes;       /* the busiest rank sends */
  unsigned long long inter_bytes; /* of which to other nodes */
  double seconds;
} AxSparseCost;

typedef struct {
  AxSparseCost by[AX_SPARSE_COST_N];
  int choice; /* the fewest seconds (ties: the earlier: Zen, all-gather, dense) */
} AxSparseCostOut;

void ax_sparse_cost(const AxSparseCostIn *in, AxSparseCostOut *out);

#endif
