/* failure_odds.h — where in-memory checkpoint replicas live (Gemini, wang-thesis §6.4) and the
 * exact odds that a job can recover from CPU memory when k of its N nodes fail at once.
 *
 * Each node keeps its own checkpoint shard and m-1 replicas of other nodes' shards: m copies of
 * every shard in all, on m distinct nodes. The placement is a split of the nodes 0..N-1 into
 * blocks of consecutive nodes, each a ring: in a block [s, s+n), node s+i's shard is held by
 * s+i, s+(i+1)%n, ..., s+(i+m-1)%n.
 *   ring:  one block of all N nodes.
 *   group: blocks of m nodes (node i in group i/m), so a group's m nodes all hold the same m
 *          shards; when m does not divide N, Algorithm 6.1 adds the N mod m leftover nodes to the
 *          last group and that group, m + N mod m nodes, is a ring (§6.4: "for the last
 *          N - m(floor(N/m) - 1) machines, we apply a ring placement strategy").
 * ax_replica_holders is the placement: whatever decides where replicas go uses it.
 *
 * k failed nodes, every k-subset equally likely; the job recovers from memory iff every shard
 * keeps a surviving copy, i.e. no block of n nodes has m cyclically consecutive failed nodes.
 * ax_failure_odds counts the recoverable k-subsets by a product over the blocks of their
 * generating polynomials (a block's count by compositions of its failed nodes into the gaps
 * between its survivors): nonnegative terms only, in long double (_Float128 where long double
 * has only double's range, as on POWER), so the counts are exact integers for N <= 62 (every
 * intermediate below 2^64) and good to about 1e-15 relative beyond, for N up to
 * AX_FAILURE_ODDS_MAX_NODES. No MPI. */
#ifndef AX_FAILURE_ODDS_H
#define AX_FAILURE_ODDS_H

typedef enum { AX_PLACE_GROUP, AX_PLACE_RING } AxPlacement;

enum {
  AX_FAILURE_ODDS_MAX_NODES = 4096, /* the counting's limit (its cost grows as N^2) */
  AX_FAILURE_ENUM_MAX_NODES = 24,   /* ax_failure_odds_enumerate's limit */
};

/* "group" or "ring". */
const char *ax_placement_name(AxPlacement p);

/* The m nodes that hold node's shard, holders[0] == node, all distinct. Fails on N < 1,
 * m < 1, m > N or node outside 0..N-1. */
int ax_replica_holders(int N, int m, AxPlacement p, int node, int *holders);

/* The first node and the size of the block (ring) node belongs to. Same checks. */
int ax_replica_block(int N, int m, AxPlacement p, int node, int *first, int *size);

/* The probability that k simultaneous failures (0 <= k <= N) leave a copy of every shard. */
int ax_failure_odds(int N, int m, int k, AxPlacement p, double *prob);

/* The same for every k at once: prob[k] for k = 0..N (N + 1 entries). */
int ax_failure_odds_all(int N, int m, AxPlacement p, double *prob);

/* The number of recoverable k-subsets (prob times C(N, k)). */
int ax_recoverable_sets(int N, int m, int k, AxPlacement p, long double *count);

/* Counts the recoverable k-subsets one by one against ax_replica_holders, for N up to
 * AX_FAILURE_ENUM_MAX_NODES: the cross-check of the counting. prob may be NULL. */
int ax_failure_odds_enumerate(int N, int m, int k, AxPlacement p, unsigned long long *count,
                              double *prob);

/* Group placement with m dividing N, the thesis's closed form (Corollary 6.1, Eq. 6.5) made
 * exact for every k by inclusion-exclusion over the N/m groups:
 *   1 - sum_{j>=1} (-1)^(j+1) C(N/m, j) C(N - jm, k - jm) / C(N, k).
 * Fails when m does not divide N, and when the alternating sum would cancel away more than 24
 * of long double's 64 bits (large N with k far above m; ax_failure_odds has no such limit). */
int ax_failure_odds_group_formula(int N, int m, int k, double *prob);

#endif
