/* casync_ps.c — CaSync's co-located parameter server (casync.h) on the message engine
 * (casync_wire.c). Rank r owns segment r. One channel each way per peer, peers in ring order
 * r+1, r+2, ..., r-1; on each, first the pushes (to peer s: this rank's values of segment s,
 * encoded piece by piece), then the pulls (to peer s: the aggregate of segment r, piece by
 * piece). The owner adds the contributions of piece k in ring order as they become available
 * (a contribution that arrives early waits for those before it), then encodes the aggregate
 * once, keeps decode(encode(aggregate)) and sends those same bytes to every peer. */
#include <stdlib.h>

#include "casync_internal.h"

enum { PS_PUSH = 0, PS_PULL = 1 };

typedef struct {
  size_t pieces;    /* of this rank's segment */
  int *added;       /* [pieces]: contributions merged so far (in channel order) */
  AxCasyncMsg *agg; /* [pieces]: the encoded aggregate, once encoded */
} PsData;

static void ps_free_data(void *data) {
  PsData *d = data;
  if (!d) return;
  for (size_t k = 0; d->agg && k < d->pieces; k++) ax_casync_msg_release(&d->agg[k]);
  free(d->agg);
  free(d->added);
  free(d);
}

/* Merges the contributions to piece k that are next in ring order and have arrived. */
static int merge_arrived(AxCasyncOp *o, size_t k) {
  PsData *d = o->algo_data;
  while (d->added[k] < o->n_in) {
    AxCasyncChannel *ch = &o->in[d->added[k]];
    if (ch->done <= k) break; /* its push of piece k is message k */
    AxCasyncMsg *m = &ch->msgs[k];
    AX_TRY(ax_casync_decode_piece(o, o->rank, k, ch->peer, m->buf, m->bytes, 1));
    ax_casync_msg_release(m);
    d->added[k]++;
  }
  return AX_OK;
}

static int ps_consume(AxCasyncOp *o, AxCasyncChannel *ch, AxCasyncMsg *m) {
  if (m->step == PS_PUSH) return merge_arrived(o, m->piece);
  AX_TRY(ax_casync_decode_piece(o, m->seg, m->piece, ch->peer, m->buf, m->bytes, 0));
  ax_casync_msg_release(m);
  return AX_OK;
}

/* The aggregate of piece k, encoded once all contributions are in (NULL: not yet). */
static int aggregate(AxCasyncOp *o, size_t k, const AxCasyncMsg **out) {
  PsData *d = o->algo_data;
  *out = NULL;
  if (d->added[k] < o->n_in) return AX_OK;
  AxCasyncMsg *a = &d->agg[k];
  if (!a->buf) {
    AX_TRY(ax_casync_encode_piece(o, o->rank, k, a));
    AX_TRY(ax_casync_decode_piece(o, o->rank, k, o->rank, a->buf, a->bytes, 0));
  }
  *out = a;
  return AX_OK;
}

static int ps_produce(AxCasyncOp *o, AxCasyncChannel *ch, AxCasyncMsg *m, int *ready) {
  (void)ch;
  if (m->step == PS_PUSH) {
    AX_TRY(ax_casync_encode_piece(o, m->seg, m->piece, m));
    *ready = 1;
    return AX_OK;
  }
  const AxCasyncMsg *a = NULL;
  AX_TRY(aggregate(o, m->piece, &a));
  if (!a) return AX_OK;
  m->buf = a->buf; /* the same bytes to every peer; the aggregate keeps them */
  m->bytes = a->bytes;
  m->owns_buf = 0;
  *ready = 1;
  return AX_OK;
}

static const AxCasyncHooks PS = {ps_produce, ps_consume, ps_free_data};

/* One channel each way per peer: pushes of the receiver's segment, then pulls of the
 * sender's. */
static int plan(AxCasyncOp *o) {
  const AxCasyncState *st = o->st;
  for (int j = 0; j < o->n_out; j++) {
    AxCasyncChannel *out = &o->out[j], *in = &o->in[j];
    for (size_t k = 0; k < ax_casync_seg_pieces(st, out->peer); k++)
      AX_TRY(ax_casync_channel_add(out, out->peer, k, PS_PUSH));
    for (size_t k = 0; k < ax_casync_seg_pieces(st, o->rank); k++)
      AX_TRY(ax_casync_channel_add(out, o->rank, k, PS_PULL));
    for (size_t k = 0; k < ax_casync_seg_pieces(st, o->rank); k++)
      AX_TRY(ax_casync_channel_add(in, o->rank, k, PS_PUSH));
    for (size_t k = 0; k < ax_casync_seg_pieces(st, in->peer); k++)
      AX_TRY(ax_casync_channel_add(in, in->peer, k, PS_PULL));
  }
  return AX_OK;
}

int ax_casync_ps_start(AxColl *op, const AxCodec *c, AxCasyncState *st, const AxCodecCtx *ctx,
                       float *buf) {
  AxCasyncOp *o = NULL;
  AX_TRY(ax_casync_op_create_all_peers(op, c, st, ctx, buf, &PS, &o));
  PsData *d = ax_calloc(1, sizeof *d);
  if (!d) return AX_ERR;
  o->algo_data = d;
  d->pieces = ax_casync_seg_pieces(st, op->rank);
  d->added = ax_calloc(d->pieces ? d->pieces : 1, sizeof *d->added);
  d->agg = ax_calloc(d->pieces ? d->pieces : 1, sizeof *d->agg);
  if (!d->added || !d->agg) return AX_ERR;
  AX_TRY(plan(o));
  return ax_casync_op_launch(o);
}
