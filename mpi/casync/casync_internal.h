/* casync_internal.h — inside CaSync (mpi/casync/ only). The state's layout of segments and
 * pieces (casync_state.c); the message engine every encode/decode algorithm runs on
 * (casync_wire.c): per peer an ordered channel of messages out and one in, each message one
 * encoded piece, at most `window` of each channel in flight, receives into buffers of the
 * piece's worst-case size; the algorithm (casync_ring.c, casync_ps.c) says when a send's bytes
 * are ready (produce: it encodes, or relays received bytes) and what a received message does
 * (consume: decode and merge, or keep for later). Linear codecs run their factor rounds
 * instead (casync_linear.c). casync.c starts an operation and picks one of them.
 *
 * Order is what makes one tag per operation enough: each rank sends to a peer, and receives
 * from it, one channel's messages in the channel's order, and both sides derive that order
 * from the same plan; MPI matches messages of one tag and source in the order they were sent.
 * Every buffer is a message's own (nothing is reused while a peer may still be waiting), so a
 * message waits only for messages earlier in its own chain: no cycle, no deadlock. */
#ifndef AX_CASYNC_INTERNAL_H
#define AX_CASYNC_INTERNAL_H

#include "casync.h"
#include "mpi/coll/coll_internal.h"

struct AxCasyncState {
  const AxCodec *codec;
  size_t count;
  int size;            /* the comm size it was laid out for */
  size_t piece;        /* floats in a full piece (parts 0) */
  int parts;           /* K partitions (near-equal pieces, casync_state.c); 0: pieces of `piece` */
  int linear;          /* one state for the whole range */
  size_t n_states;     /* encode/decode: every piece of every segment, segment by segment */
  size_t *seg_first;   /* [size + 1]: the index of segment s's first piece state */
  AxCodecState **states;
  int busy;            /* an operation is using it */
};

/* ---- the state's layout (casync_state.c) */

/* Pieces of segment s (0 for an empty segment). */
size_t ax_casync_seg_pieces(const AxCasyncState *st, int seg);
/* First float (in the whole range) and length of piece k of segment s. */
size_t ax_casync_piece_offset(const AxCasyncState *st, int seg, size_t k);
size_t ax_casync_piece_len(const AxCasyncState *st, int seg, size_t k);
AxCodecState *ax_casync_piece_state(const AxCasyncState *st, int seg, size_t k);
/* The pieces' floats for this configuration (cc->chunk_bytes / 4, at least 1), where the state
 * has no K of its own. */
size_t ax_casync_piece_floats(const AxCommConfig *cc);

/* ---- the message engine (casync_wire.c) */

typedef struct {
  int seg;      /* the segment it carries a piece of */
  size_t piece; /* which piece */
  int step;     /* the algorithm's: ring step, or PS push / pull */
  char *buf;    /* the bytes to send, or where a receive lands */
  size_t cap;   /* receive: the piece's ax_codec_max_bytes */
  size_t bytes; /* send: to send; receive: what arrived */
  int owns_buf; /* buf is freed with the message (ax_casync_msg_release) */
} AxCasyncMsg;

typedef struct {
  int peer, peer_world;
  AxCasyncMsg *msgs;
  size_t n, cap;
  size_t posted, done; /* in order: done messages have completed (receives: and been consumed) */
  AxLinkSend *sends;   /* [window], out channels: message i uses entry i % window */
  MPI_Request *recvs;  /* [window], in channels, likewise */
} AxCasyncChannel;

typedef struct AxCasyncOp AxCasyncOp;

typedef struct {
  /* A send's bytes: sets m->buf, m->bytes and m->owns_buf and *ready = 1 once what they need
   * has arrived, else does nothing. Called in the channel's order. */
  int (*produce)(AxCasyncOp *o, AxCasyncChannel *ch, AxCasyncMsg *m, int *ready);
  /* A receive has arrived (ch->done already counts it): decode, merge, or keep the bytes. */
  int (*consume)(AxCasyncOp *o, AxCasyncChannel *ch, AxCasyncMsg *m);
  /* Frees the operation's algo_data (NULL: free()). */
  void (*free_data)(void *data);
} AxCasyncHooks;

struct AxCasyncOp {
  AxColl *coll; /* comm, resolved configuration, rank, size, tag, world ranks, byte counters */
  const AxCodec *codec;
  AxCasyncState *st;
  AxCodecCtx ctx;
  float *buf;
  int rank, size;
  const AxCasyncHooks *algo;
  void *algo_data; /* freed with the operation */
  AxCasyncChannel *out, *in;
  int n_out, n_in;
  size_t noted; /* the watchdog note's position (1 + messages done); 0: none yet */
};

/* An AxCasyncOp on op (created with ax_coll_create) with one out and one in channel per listed peer
 * (NULL, 0: none), empty; op's engine becomes the message engine. */
int ax_casync_op_create(AxColl *op, const AxCodec *c, AxCasyncState *st, const AxCodecCtx *ctx,
                        float *buf, const AxCasyncHooks *algo, const int *out_peers, int n_out,
                        const int *in_peers, int n_in, AxCasyncOp **out);
/* The same with one channel each way per other rank, peers in ring order r+1, ..., r-1 (out[j]
 * and in[j] are the same peer): the PS's and the all-gather's exchange with everyone. */
int ax_casync_op_create_all_peers(AxColl *op, const AxCodec *c, AxCasyncState *st,
                                  const AxCodecCtx *ctx, float *buf, const AxCasyncHooks *algo,
                                  AxCasyncOp **out);
/* Appends a message (segment, piece, step) to a channel's plan. */
int ax_casync_channel_add(AxCasyncChannel *ch, int seg, size_t piece, int step);
/* Starts the planned operation (posts what it can). */
int ax_casync_op_launch(AxCasyncOp *o);
/* Frees m's buffer if it owns it, and forgets it. */
void ax_casync_msg_release(AxCasyncMsg *m);

/* The codec context of piece k of segment seg as encoded by rank `encoder`. */
AxCodecCtx ax_casync_piece_ctx(const AxCasyncOp *o, int seg, size_t k, int encoder);
/* buf's floats of piece k of segment seg. */
float *ax_casync_piece_values(const AxCasyncOp *o, int seg, size_t k);
/* Encodes piece k of segment seg of buf with its state into a new buffer in m (owned). */
int ax_casync_encode_piece(AxCasyncOp *o, int seg, size_t k, AxCasyncMsg *m);
/* Decodes bytes encoded by `encoder` into piece k of segment seg of buf (add: merge). */
int ax_casync_decode_piece(AxCasyncOp *o, int seg, size_t k, int encoder, const void *bytes,
                           size_t n, int add);

/* ---- algorithms: plan an operation on op (casync_ring.c, casync_ps.c, casync_ag.c,
 * casync_linear.c) */

int ax_casync_ring_start(AxColl *op, const AxCodec *c, AxCasyncState *st, const AxCodecCtx *ctx,
                         float *buf);
int ax_casync_ps_start(AxColl *op, const AxCodec *c, AxCasyncState *st, const AxCodecCtx *ctx,
                       float *buf);
int ax_casync_ag_start(AxColl *op, const AxCodec *c, AxCasyncState *st, const AxCodecCtx *ctx,
                       float *buf);
int ax_casync_linear_start(AxColl *op, const AxCodec *c, AxCasyncState *st, const AxCodecCtx *ctx,
                           float *buf, size_t count);

#endif
