/* rhd.c — recursive halving / doubling all-reduce schedule (Rabenseifner): over 2^k ranks,
 * k halving steps exchange half of the current range with the partner at distance
 * 2^(k-1), ..., 1 and add in the half kept, leaving each rank one fully summed block; k
 * doubling steps then exchange the owned range with partners at distance 1, ..., 2^(k-1).
 * 2·log2(p) steps against the ring's 2(p-1): fewer latencies for small messages.
 * A group of p = 2^k + rem ranks folds first: among ranks 0..2rem-1 each even rank sends its
 * whole buffer to the odd rank above it and sits out; that odd rank sends it the result at the
 * end. So explicit rhd is correct on every group size, at two extra full-buffer transfers. */
#include "coll_internal.h"

static int real_rank(int vrank, int rem) { return vrank < rem ? 2 * vrank + 1 : vrank + rem; }

/* One exchange with peer: send blocks [send_lo, send_hi), receive blocks [recv_lo, recv_hi) of
 * the buffer cut into `parts` blocks. */
static int range_step(AxColl *op, char *buf, size_t n, int parts, int peer, int send_lo,
                      int send_hi, int recv_lo, int recv_hi, AxRecvMode mode) {
  size_t e = op->esz, so = ax_block_offset(n, parts, send_lo);
  size_t ro = ax_block_offset(n, parts, recv_lo);
  AxCollStep s = ax_coll_step(peer, buf + so * e, ax_block_offset(n, parts, send_hi) - so, peer,
                              buf + ro * e, ax_block_offset(n, parts, recv_hi) - ro, mode);
  return ax_coll_add_step(op, &s);
}

static int halving_doubling(AxColl *op, char *buf, size_t n, int pof2, int rem, int vrank) {
  int lo = 0, hi = pof2;
  for (int mask = pof2 / 2; mask > 0; mask /= 2) {
    int peer = real_rank(vrank ^ mask, rem), mid = lo + mask;
    if (vrank & mask) {
      AX_TRY(range_step(op, buf, n, pof2, peer, lo, mid, mid, hi, AX_RECV_ADD));
      lo = mid;
    } else {
      AX_TRY(range_step(op, buf, n, pof2, peer, mid, hi, lo, mid, AX_RECV_ADD));
      hi = mid;
    }
  }
  for (int mask = 1; mask < pof2; mask *= 2) {
    int peer = real_rank(vrank ^ mask, rem), width = hi - lo;
    if (vrank & mask) {
      AX_TRY(range_step(op, buf, n, pof2, peer, lo, hi, lo - width, lo, AX_RECV_COPY));
      lo -= width;
    } else {
      AX_TRY(range_step(op, buf, n, pof2, peer, lo, hi, hi, hi + width, AX_RECV_COPY));
      hi += width;
    }
  }
  return AX_OK;
}

int ax_rhd_allreduce(AxColl *op, void *buf, size_t count) {
  int p = op->size, r = op->rank, pof2 = 1;
  if (p == 1 || count == 0) return AX_OK;
  while (pof2 * 2 <= p) pof2 *= 2;
  int rem = p - pof2, vrank = r - rem;
  AxCollStep s;
  if (r < 2 * rem && r % 2 == 0) { /* folds into r+1, gets the result back */
    s = ax_coll_step(r + 1, buf, count, MPI_PROC_NULL, NULL, 0, AX_RECV_COPY);
    AX_TRY(ax_coll_add_step(op, &s));
    s = ax_coll_step(MPI_PROC_NULL, NULL, 0, r + 1, buf, count, AX_RECV_COPY);
    return ax_coll_add_step(op, &s);
  }
  if (r < 2 * rem) {
    s = ax_coll_step(MPI_PROC_NULL, NULL, 0, r - 1, buf, count, AX_RECV_ADD);
    AX_TRY(ax_coll_add_step(op, &s));
    vrank = r / 2;
  }
  AX_TRY(halving_doubling(op, buf, count, pof2, rem, vrank));
  if (r < 2 * rem) {
    s = ax_coll_step(r - 1, buf, count, MPI_PROC_NULL, NULL, 0, AX_RECV_COPY);
    AX_TRY(ax_coll_add_step(op, &s));
  }
  return AX_OK;
}
