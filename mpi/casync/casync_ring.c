/* casync_ring.c — CaSync's ring (casync.h) on the message engine (casync_wire.c). Step t of
 * 2(p-1) sends segment r-t to the right and receives segment r-t-1 from the left, as the plain
 * ring does (ring.c), so segment s's chain starts at rank s and its owner is rank s-1:
 *  - aggregation, t < p-1: step 0 encodes this rank's own values; each received partial is
 *    decoded and added into buf (this rank's values), and step t+1 encodes that partial sum;
 *  - t = p-1: the owner encodes its aggregate (segment r+1) and keeps decode(encode(aggregate));
 *  - dissemination, t >= p-1: each received aggregate is decoded over buf and its bytes are
 *    relayed unchanged at step t+1 (the last step's are not).
 * Every step runs piece by piece: piece k of step t+1 goes out as soon as piece k of step t
 * has arrived and been merged, while later pieces are still on the wire. */
#include "casync_internal.h"

typedef struct {
  int steps;
  size_t in_first[]; /* [steps]: the in channel's index of step t's first piece */
} RingData;

static int owner_of(const AxCasyncOp *o, int seg) { return ax_ring_mod(seg - 1, o->size); }

/* Has piece k of step t arrived and been consumed? */
static int received(const AxCasyncOp *o, int t, size_t k) {
  const RingData *d = o->algo_data;
  return o->in[0].done > d->in_first[t] + k;
}

static int ring_produce(AxCasyncOp *o, AxCasyncChannel *ch, AxCasyncMsg *m, int *ready) {
  (void)ch;
  int t = m->step, p = o->size;
  if (t > 0 && !received(o, t - 1, m->piece)) return AX_OK;
  if (t < p) {
    AX_TRY(ax_casync_encode_piece(o, m->seg, m->piece, m)); /* own values, partial or aggregate */
    if (t == p - 1) /* the owner keeps what every other rank will decode */
      AX_TRY(ax_casync_decode_piece(o, m->seg, m->piece, o->rank, m->buf, m->bytes, 0));
  } else {
    const RingData *d = o->algo_data;
    AxCasyncMsg *src = &o->in[0].msgs[d->in_first[t - 1] + m->piece];
    m->buf = src->buf; /* relayed as received */
    m->bytes = src->bytes;
    m->owns_buf = src->owns_buf;
    src->owns_buf = 0;
  }
  *ready = 1;
  return AX_OK;
}

static int ring_consume(AxCasyncOp *o, AxCasyncChannel *ch, AxCasyncMsg *m) {
  (void)ch;
  int t = m->step, p = o->size;
  if (t < p - 1) { /* a partial sum: merge into this rank's values */
    AX_TRY(ax_casync_decode_piece(o, m->seg, m->piece, ax_ring_mod(o->rank - 1, p), m->buf,
                                  m->bytes, 1));
    ax_casync_msg_release(m);
    return AX_OK;
  }
  AX_TRY(ax_casync_decode_piece(o, m->seg, m->piece, owner_of(o, m->seg), m->buf, m->bytes, 0));
  if (t == 2 * p - 3) ax_casync_msg_release(m); /* else kept for the relay */
  return AX_OK;
}

static const AxCasyncHooks RING = {ring_produce, ring_consume, NULL};

int ax_casync_ring_start(AxColl *op, const AxCodec *c, AxCasyncState *st, const AxCodecCtx *ctx,
                         float *buf) {
  int p = op->size, r = op->rank, right = ax_ring_mod(r + 1, p), left = ax_ring_mod(r - 1, p);
  int steps = 2 * (p - 1);
  AxCasyncOp *o = NULL;
  AX_TRY(ax_casync_op_create(op, c, st, ctx, buf, &RING, &right, 1, &left, 1, &o));
  RingData *d = ax_calloc(1, sizeof *d + (size_t)steps * sizeof d->in_first[0]);
  if (!d) return AX_ERR;
  o->algo_data = d;
  d->steps = steps;
  for (int t = 0; t < steps; t++) {
    int send_seg = ax_ring_mod(r - t, p), recv_seg = ax_ring_mod(r - t - 1, p);
    for (size_t k = 0; k < ax_casync_seg_pieces(st, send_seg); k++)
      AX_TRY(ax_casync_channel_add(&o->out[0], send_seg, k, t));
    d->in_first[t] = o->in[0].n;
    for (size_t k = 0; k < ax_casync_seg_pieces(st, recv_seg); k++)
      AX_TRY(ax_casync_channel_add(&o->in[0], recv_seg, k, t));
  }
  return ax_casync_op_launch(o);
}
