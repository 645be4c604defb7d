/* casync_ag.c — CaSync's all-gather (casync.h) on the message engine (casync_wire.c): the
 * indivisible scheme of Espresso (wang-thesis §4.5, Fig. 4.3). Every rank encodes its own values
 * once, piece by piece, and sends those same bytes to every peer; every rank then holds every
 * rank's encoded contribution and sums their decodings itself, so nothing is re-encoded on the
 * way. One channel each way per peer, peers in ring order r+1, ..., r-1, each carrying every
 * piece of every segment in state order (segment 0's pieces first). Piece k of segment s is
 * summed in ring order from the segment's index: decode(rank s's) then + decode(rank s+1's),
 * ..., + decode(rank s-1's), as contributions become available (one that arrives early waits
 * for those before it), which is the plain ring's order, so identity gives its sum bit for bit;
 * every rank sums the same bytes in the same order, so all replicas are bitwise identical.
 * This rank's own contribution is decoded from its own encoding like the others. */
#include <stdlib.h>

#include "casync_internal.h"

typedef struct {
  size_t n;         /* pieces of every segment (the state's n_states) */
  int *added;       /* [n]: contributions merged so far, in ring order from the segment's index */
  AxCasyncMsg *own; /* [n]: this rank's encoding of each piece, once made */
} AgData;

static void ag_free_data(void *data) {
  AgData *d = data;
  if (!d) return;
  for (size_t g = 0; d->own && g < d->n; g++) ax_casync_msg_release(&d->own[g]);
  free(d->own);
  free(d->added);
  free(d);
}

/* This rank's encoding of piece k of segment s (global index g), made on first use: before
 * any contribution is decoded over those values. */
static int own_bytes(AxCasyncOp *o, int s, size_t k, size_t g, const AxCasyncMsg **out) {
  AgData *d = o->algo_data;
  if (!d->own[g].buf) AX_TRY(ax_casync_encode_piece(o, s, k, &d->own[g]));
  *out = &d->own[g];
  return AX_OK;
}

/* Merges the contributions to piece k of segment s that are next in ring order and have
 * arrived (the in channel from rank e is ax_ring_mod(e - r - 1, p); its message g is the
 * piece's). */
static int merge_arrived(AxCasyncOp *o, int s, size_t k) {
  AgData *d = o->algo_data;
  size_t g = o->st->seg_first[s] + k;
  const AxCasyncMsg *first = NULL;
  AX_TRY(own_bytes(o, s, k, g, &first));
  while (d->added[g] < o->size) {
    int e = ax_ring_mod(s + d->added[g], o->size);
    AxCasyncMsg *m = NULL;
    if (e != o->rank) {
      AxCasyncChannel *ch = &o->in[ax_ring_mod(e - o->rank - 1, o->size)];
      if (ch->done <= g) break;
      m = &ch->msgs[g];
    }
    const AxCasyncMsg *bytes = m ? m : first;
    AX_TRY(ax_casync_decode_piece(o, s, k, e, bytes->buf, bytes->bytes, d->added[g] > 0));
    if (m) ax_casync_msg_release(m);
    d->added[g]++;
  }
  return AX_OK;
}

static int ag_consume(AxCasyncOp *o, AxCasyncChannel *ch, AxCasyncMsg *m) {
  (void)ch;
  return merge_arrived(o, m->seg, m->piece);
}

static int ag_produce(AxCasyncOp *o, AxCasyncChannel *ch, AxCasyncMsg *m, int *ready) {
  (void)ch;
  const AxCasyncMsg *own = NULL;
  AX_TRY(own_bytes(o, m->seg, m->piece, o->st->seg_first[m->seg] + m->piece, &own));
  m->buf = own->buf; /* the same bytes to every peer; own keeps them */
  m->bytes = own->bytes;
  m->owns_buf = 0;
  *ready = 1;
  return AX_OK;
}

static const AxCasyncHooks AG = {ag_produce, ag_consume, ag_free_data};

int ax_casync_ag_start(AxColl *op, const AxCodec *c, AxCasyncState *st, const AxCodecCtx *ctx,
                       float *buf) {
  AxCasyncOp *o = NULL;
  AX_TRY(ax_casync_op_create_all_peers(op, c, st, ctx, buf, &AG, &o));
  AgData *d = ax_calloc(1, sizeof *d);
  if (!d) return AX_ERR;
  o->algo_data = d;
  d->n = st->n_states;
  d->added = ax_calloc(d->n ? d->n : 1, sizeof *d->added);
  d->own = ax_calloc(d->n ? d->n : 1, sizeof *d->own);
  if (!d->added || !d->own) return AX_ERR;
  for (int j = 0; j < o->n_out; j++)
    for (int s = 0; s < op->size; s++)
      for (size_t k = 0; k < ax_casync_seg_pieces(st, s); k++) {
        AX_TRY(ax_casync_channel_add(&o->out[j], s, k, 0));
        AX_TRY(ax_casync_channel_add(&o->in[j], s, k, 0));
      }
  return ax_casync_op_launch(o);
}
