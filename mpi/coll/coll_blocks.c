/* coll_blocks.c — how the collectives cut a buffer into near-equal blocks, and the bytes a ring
 * all-reduce moves (also what an MPI_Iallreduce is counted as); plain arithmetic, no MPI. See
 * coll_internal.h. */
#include "coll_internal.h"

size_t ax_block_offset(size_t n, int parts, int b) {
  size_t q = n / (size_t)parts, r = n % (size_t)parts, ub = (size_t)b;
  return ub * q + (ub < r ? ub : r);
}

size_t ax_block_count(size_t n, int parts, int b) {
  return n / (size_t)parts + ((size_t)b < n % (size_t)parts ? 1 : 0);
}

int ax_ring_mod(int a, int p) { return ((a % p) + p) % p; }

void ax_ring_allreduce_bytes(size_t count, size_t esz, int rank, int size, AxCommBytes *out) {
  out->sent = out->received = 0;
  if (size < 2) return;
  /* reduce-scatter sends every segment but r+1 and receives every one but r; all-gather sends
   * every segment but r+2 and receives every one but r+1 */
  size_t seg_r = ax_block_count(count, size, rank);
  size_t seg_r1 = ax_block_count(count, size, ax_ring_mod(rank + 1, size));
  size_t seg_r2 = ax_block_count(count, size, ax_ring_mod(rank + 2, size));
  out->sent = (unsigned long long)((2 * count - seg_r1 - seg_r2) * esz);
  out->received = (unsigned long long)((2 * count - seg_r - seg_r1) * esz);
}
