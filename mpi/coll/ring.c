/* ring.c — ring schedules. All-reduce: p-1 reduce-scatter steps (send segment r-t to the right,
 * receive segment r-t-1 from the left and add it in), after which rank r holds segment r+1
 * summed, then p-1 all-gather steps (send segment r+1-t, receive segment r-t in place).
 * Segments are the p near-equal blocks of the buffer (ax_block_offset). Each step forwards
 * what the step before it received, so consecutive steps are chained chunk by chunk: chunk k
 * moves on as soon as it has arrived and been reduced, while it is still in cache and while
 * later chunks are on the wire. Standalone reduce-scatter and all-gather are the two halves
 * on caller-sized blocks; the in-place "segments" variants are the two halves on the buffer's
 * own near-equal segments, shifted so that rank r holds segment r in between (the two-level
 * all-reduce's intra-node steps, two_level.c). */
#include <string.h>

#include "coll_internal.h"

static AxCollStep segment_step(const AxColl *op, char *buf, size_t count, int send_seg,
                               int recv_seg, AxRecvMode mode) {
  int p = op->size, right = (op->rank + 1) % p, left = (op->rank + p - 1) % p;
  size_t e = op->esz;
  return ax_coll_step(right, buf + ax_block_offset(count, p, send_seg) * e,
                      ax_block_count(count, p, send_seg), left,
                      buf + ax_block_offset(count, p, recv_seg) * e,
                      ax_block_count(count, p, recv_seg), mode);
}

/* The p - 1 steps of one pass around the ring over buf's own segments: step t sends segment
 * r+shift-t and receives segment r+shift-1-t (added or copied), chained to the step before. */
static int segment_pass(AxColl *op, void *buf, size_t count, int shift, AxRecvMode mode) {
  int p = op->size, r = op->rank;
  for (int t = 0; t < p - 1; t++) {
    AxCollStep s = segment_step(op, buf, count, ax_ring_mod(r + shift - t, p),
                                ax_ring_mod(r + shift - 1 - t, p), mode);
    s.chained = t > 0;
    AX_TRY(ax_coll_add_step(op, &s));
  }
  return AX_OK;
}

int ax_ring_allreduce(AxColl *op, void *buf, size_t count) {
  int p = op->size, r = op->rank;
  if (p == 1 || count == 0) return AX_OK;
  AX_TRY(segment_pass(op, buf, count, 0, AX_RECV_ADD));
  for (int t = 0; t < p - 1; t++) {
    AxCollStep s = segment_step(op, buf, count, ax_ring_mod(r + 1 - t, p), ax_ring_mod(r - t, p),
                                AX_RECV_COPY);
    s.chained = 1;
    s.reuses_step = t; /* segment r-t went out in reduce-scatter step t */
    AX_TRY(ax_coll_add_step(op, &s));
  }
  return AX_OK;
}

/* Step t passes the partial sum of block r-1-t to the right and receives the left's partial of
 * block r-2-t, adding this rank's own contribution; after p-1 steps recv holds block r. The
 * partial travels through recv itself, so a chunk is overwritten only once it has been sent. */
int ax_ring_reduce_scatter(AxColl *op, const void *send, void *recv, size_t recv_count) {
  int p = op->size, r = op->rank, right = (r + 1) % p, left = (r + p - 1) % p;
  const char *in = send;
  size_t block_bytes = recv_count * op->esz;
  if (p == 1) {
    if (recv_count) memcpy(recv, send, block_bytes);
    return AX_OK;
  }
  if (recv_count == 0) return AX_OK;
  for (int t = 0; t < p - 1; t++) {
    const char *src = t == 0 ? in + (size_t)ax_ring_mod(r - 1, p) * block_bytes : recv;
    AxCollStep s = ax_coll_step(right, src, recv_count, left, recv, recv_count, AX_RECV_SUM);
    s.addend = in + (size_t)ax_ring_mod(r - 2 - t, p) * block_bytes;
    s.write_after_send = t > 0;
    s.chained = t > 0;
    AX_TRY(ax_coll_add_step(op, &s));
  }
  return AX_OK;
}

int ax_ring_allgather(AxColl *op, const void *send, void *recv, size_t send_count) {
  int p = op->size, r = op->rank, right = (r + 1) % p, left = (r + p - 1) % p;
  char *out = recv;
  size_t block_bytes = send_count * op->esz;
  if (send_count == 0) return AX_OK;
  if ((const char *)send != out + (size_t)r * block_bytes)
    memcpy(out + (size_t)r * block_bytes, send, block_bytes);
  for (int t = 0; t < p - 1; t++) {
    AxCollStep s = ax_coll_step(right, out + (size_t)ax_ring_mod(r - t, p) * block_bytes,
                                send_count, left,
                                out + (size_t)ax_ring_mod(r - t - 1, p) * block_bytes, send_count,
                                AX_RECV_COPY);
    s.chained = t > 0;
    AX_TRY(ax_coll_add_step(op, &s));
  }
  return AX_OK;
}

/* As the all-reduce's first half, one segment earlier: step t sends segment r-1-t and adds in
 * segment r-2-t, so segment s's chain starts at rank s+1 and ends at its owner s. */
int ax_ring_reduce_scatter_segments(AxColl *op, void *buf, size_t count) {
  if (op->size == 1 || count == 0) return AX_OK;
  return segment_pass(op, buf, count, -1, AX_RECV_ADD);
}

/* Step t forwards segment r-t and receives segment r-1-t in place. */
int ax_ring_allgather_segments(AxColl *op, void *buf, size_t count) {
  if (op->size == 1 || count == 0) return AX_OK;
  return segment_pass(op, buf, count, 0, AX_RECV_COPY);
}
