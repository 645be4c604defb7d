/* zen_balance.h — a balanced owner assignment for one step of Zen's sparse synchronization,
 * computed from every rank's row set (known to all ranks), where the thesis's data-independent
 * owner hash h_0 (zen_hash.h) leaves the push imbalance at 1 + Θ(sqrt(n log n / m)) (Theorem
 * 3.2, m rows a rank): on Zipf(1) batches of 8192 tokens over 50257 rows (m ~ 3.4K) that is
 * 1.16-1.21 on 8 and 16 ranks, against the thesis's 1.1, and no fixed map of rows to owners does
 * better (the tail rows each rank touches are a random draw; dealing the hot rows round robin
 * was measured to leave 1.12-1.20 on 16 ranks). Every rank runs the same deterministic greedy
 * on the same input and so gets the same owners:
 *
 *   rows held by more ranks first (then ascending), each to the owner j that minimizes the
 *   largest push load c_ij among the ranks i holding it, ties to the owner with fewer rows,
 *   then the lower j.
 *
 * Definition 3.6's ratios of the result (push: max over i, j of n c_ij / |I_i|; pull: max over
 * j of n |U_j| / |U|) are measured by tests/test_zen_hash.c below 1.01 on those batches at 2 to
 * 16 ranks. mpi/sparse/sparse_sync.h uses it for AX_ZEN_OWNERS_BALANCED (the bitmaps travel in
 * the counts' place). Pure C, no MPI. */
#ifndef AX_ZEN_BALANCE_H
#define AX_ZEN_BALANCE_H

#include <stddef.h>
#include <stdint.h>

enum { AX_ZEN_UNOWNED = UINT32_MAX }; /* the owner of a row no rank holds */

/* held: n bitmaps of rows bits each, ceil(rows / 8) bytes apart (bit v of byte v / 8, least
 * significant first: rank i holds row v). owner (room for rows) gets each held row's owner in
 * [0, n), AX_ZEN_UNOWNED for the others. AX_OK, or AX_ERR (bad n, out of memory). */
int ax_zen_balance(int n, uint32_t rows, const uint8_t *held, uint32_t *owner);

/* Definition 3.6 for an assignment (owner as above): the push and pull imbalance ratios (1
 * where a set is empty). AX_OK, or AX_ERR out of memory. */
int ax_zen_balance_ratios(int n, uint32_t rows, const uint8_t *held, const uint32_t *owner,
                          double *push, double *pull);

#endif
