/* casync_wire.c — the message engine of CaSync's encode/decode algorithms (casync_internal.h):
 * channels of encoded pieces to and from each peer, posted in their order through the link
 * layer (link_emulator.h) with at most `window` in flight per channel, receives into buffers
 * of the piece's worst-case size (the actual size from MPI_Get_count), byte counting as
 * messages complete, and the AxColl engine hooks (test, the watchdog's note, free). Also the
 * per-piece codec calls the algorithms share. */
#include <stdlib.h>
#include <string.h>

#include "casync_internal.h"
#include "mpi/mpi_util.h"
#include "mpi/world_rank.h"
#include "src/core/watchdog.h"

/* ------------------------------------------------------------------ codec calls */

static uint64_t mix64(uint64_t x) { /* splitmix64's finalizer */
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

AxCodecCtx ax_casync_piece_ctx(const AxCasyncOp *o, int seg, size_t k, int encoder) {
  AxCodecCtx c = o->ctx;
  uint64_t h = mix64(c.range + 0x9e3779b97f4a7c15ULL);
  h = mix64(h ^ (uint64_t)(unsigned)seg);
  h = mix64(h ^ (uint64_t)k);
  c.range = mix64(h ^ (uint64_t)(unsigned)encoder);
  if (c.adam_v) c.adam_v += ax_casync_piece_offset(o->st, seg, k); /* the piece's own values */
  return c;
}

float *ax_casync_piece_values(const AxCasyncOp *o, int seg, size_t k) {
  return o->buf + ax_casync_piece_offset(o->st, seg, k);
}

int ax_casync_encode_piece(AxCasyncOp *o, int seg, size_t k, AxCasyncMsg *m) {
  size_t n = ax_casync_piece_len(o->st, seg, k), cap = ax_codec_max_bytes(o->codec, n);
  m->buf = ax_malloc(cap ? cap : 1);
  if (!m->buf) return AX_ERR;
  m->owns_buf = 1;
  AxCodecCtx ctx = ax_casync_piece_ctx(o, seg, k, o->rank);
  AX_TRY(ax_codec_encode(o->codec, ax_casync_piece_state(o->st, seg, k), &ctx,
                         ax_casync_piece_values(o, seg, k), n, m->buf, &m->bytes));
  if (m->bytes > cap)
    return AX_FAIL("casync: %s wrote %zu bytes for %zu values, more than its bound %zu",
                   ax_codec_spec(o->codec), m->bytes, n, cap);
  return AX_OK;
}

int ax_casync_decode_piece(AxCasyncOp *o, int seg, size_t k, int encoder, const void *bytes,
                           size_t n, int add) {
  AxCodecCtx ctx = ax_casync_piece_ctx(o, seg, k, encoder);
  return ax_codec_decode(o->codec, &ctx, bytes, n, ax_casync_piece_values(o, seg, k),
                         ax_casync_piece_len(o->st, seg, k), add);
}

void ax_casync_msg_release(AxCasyncMsg *m) {
  if (m->owns_buf) free(m->buf);
  m->buf = NULL;
  m->owns_buf = 0;
}

/* ------------------------------------------------------------------ plan */

int ax_casync_channel_add(AxCasyncChannel *ch, int seg, size_t piece, int step) {
  if (ch->n == ch->cap) {
    size_t cap = ch->cap ? 2 * ch->cap : 16;
    AxCasyncMsg *grown = realloc(ch->msgs, cap * sizeof *grown);
    if (!grown) return AX_FAIL("out of memory for a plan of %zu messages", cap);
    ch->msgs = grown;
    ch->cap = cap;
  }
  ch->msgs[ch->n++] = (AxCasyncMsg){.seg = seg, .piece = piece, .step = step};
  return AX_OK;
}

static int window(const AxCasyncOp *o) { return o->coll->cc.window; }

static int init_channels(AxCasyncOp *o, AxCasyncChannel *chs, const int *peers, int n,
                         int sending) {
  size_t w = (size_t)window(o);
  for (int i = 0; i < n; i++) {
    AxCasyncChannel *ch = &chs[i];
    ch->peer = peers[i];
    ch->peer_world = ax_mpi_world_rank_of(o->coll->world, o->size, peers[i]);
    if (sending) {
      ch->sends = ax_malloc(w * sizeof *ch->sends);
      if (!ch->sends) return AX_ERR;
      for (size_t j = 0; j < w; j++) ch->sends[j] = AX_LINK_SEND_NULL;
    } else {
      ch->recvs = ax_malloc(w * sizeof *ch->recvs);
      if (!ch->recvs) return AX_ERR;
      for (size_t j = 0; j < w; j++) ch->recvs[j] = MPI_REQUEST_NULL;
    }
  }
  return AX_OK;
}

static const AxCollEngine CS_ENGINE;

int ax_casync_op_create(AxColl *op, const AxCodec *c, AxCasyncState *st, const AxCodecCtx *ctx,
                        float *buf, const AxCasyncHooks *algo, const int *out_peers, int n_out,
                        const int *in_peers, int n_in, AxCasyncOp **out) {
  *out = NULL;
  AxCasyncOp *o = ax_calloc(1, sizeof *o);
  if (!o) return AX_ERR;
  o->coll = op;
  o->codec = c;
  o->st = st;
  o->ctx = *ctx;
  o->buf = buf;
  o->rank = op->rank;
  o->size = op->size;
  o->algo = algo;
  op->engine = &CS_ENGINE; /* from here on ax_coll_free frees o */
  op->engine_state = o;
  o->out = ax_calloc(n_out ? (size_t)n_out : 1, sizeof *o->out);
  o->in = ax_calloc(n_in ? (size_t)n_in : 1, sizeof *o->in);
  if (!o->out || !o->in) return AX_ERR;
  o->n_out = n_out;
  o->n_in = n_in;
  AX_TRY(init_channels(o, o->out, out_peers, n_out, 1));
  AX_TRY(init_channels(o, o->in, in_peers, n_in, 0));
  *out = o;
  return AX_OK;
}

int ax_casync_op_create_all_peers(AxColl *op, const AxCodec *c, AxCasyncState *st,
                                  const AxCodecCtx *ctx, float *buf, const AxCasyncHooks *algo,
                                  AxCasyncOp **out) {
  int p = op->size, r = op->rank;
  int *peers = ax_malloc((size_t)(p - 1) * sizeof *peers);
  if (!peers) return AX_ERR;
  for (int j = 0; j < p - 1; j++) peers[j] = ax_ring_mod(r + 1 + j, p);
  int rc = ax_casync_op_create(op, c, st, ctx, buf, algo, peers, p - 1, peers, p - 1, out);
  free(peers);
  return rc;
}

/* ------------------------------------------------------------------ progress */

static void count_bytes(AxCasyncOp *o, size_t sent, size_t received) {
  AxCommBytes *b = o->coll->bytes;
  if (!b) return;
  b->sent += sent;
  b->received += received;
}

static int post_recvs(AxCasyncOp *o, AxCasyncChannel *ch, int *moved) {
  size_t w = (size_t)window(o);
  while (ch->posted < ch->n && ch->posted - ch->done < w) {
    AxCasyncMsg *m = &ch->msgs[ch->posted];
    m->cap = ax_codec_max_bytes(o->codec, ax_casync_piece_len(o->st, m->seg, m->piece));
    m->buf = ax_malloc(m->cap ? m->cap : 1);
    if (!m->buf) return AX_ERR;
    m->owns_buf = 1;
    AX_MPI(MPI_Irecv(m->buf, (int)m->cap, MPI_BYTE, ch->peer, o->coll->tag, o->coll->comm,
                     &ch->recvs[ch->posted % w]));
    ch->posted++;
    *moved = 1;
  }
  return AX_OK;
}

/* Receives complete in the order they were posted (one source, one tag); only the oldest is
 * tested. */
static int retire_recvs(AxCasyncOp *o, AxCasyncChannel *ch, int *moved) {
  size_t w = (size_t)window(o);
  while (ch->done < ch->posted) {
    int flag = 0, got = 0;
    MPI_Status status;
    AX_MPI(MPI_Test(&ch->recvs[ch->done % w], &flag, &status));
    if (!flag) break;
    AX_MPI(MPI_Get_count(&status, MPI_BYTE, &got));
    AxCasyncMsg *m = &ch->msgs[ch->done++];
    m->bytes = (size_t)got;
    count_bytes(o, 0, m->bytes);
    AX_TRY(o->algo->consume(o, ch, m));
    *moved = 1;
  }
  return AX_OK;
}

static int post_sends(AxCasyncOp *o, AxCasyncChannel *ch, int *moved) {
  size_t w = (size_t)window(o);
  while (ch->posted < ch->n && ch->posted - ch->done < w) {
    AxCasyncMsg *m = &ch->msgs[ch->posted];
    int ready = 0;
    AX_TRY(o->algo->produce(o, ch, m, &ready));
    if (!ready) break;
    AxLinkMsg lm = {.buf = m->buf, .count = (int)m->bytes, .type = MPI_BYTE, .bytes = m->bytes,
                    .dest = ch->peer, .dest_world = ch->peer_world, .tag = o->coll->tag,
                    .comm = o->coll->comm, .cls = o->coll->cc.traffic_class};
    AX_TRY(ax_link_isend(&o->coll->cc, &lm, &ch->sends[ch->posted % w]));
    ch->posted++;
    *moved = 1;
  }
  return AX_OK;
}

static int retire_sends(AxCasyncOp *o, AxCasyncChannel *ch, int *moved) {
  size_t w = (size_t)window(o);
  while (ch->done < ch->posted) {
    int done = 0;
    AX_TRY(ax_link_test(&o->coll->cc, &ch->sends[ch->done % w], &done));
    if (!done) break;
    AxCasyncMsg *m = &ch->msgs[ch->done++];
    count_bytes(o, m->bytes, 0);
    ax_casync_msg_release(m);
    *moved = 1;
  }
  return AX_OK;
}

static int all_done(const AxCasyncOp *o) {
  for (int i = 0; i < o->n_out; i++)
    if (o->out[i].done < o->out[i].n) return 0;
  for (int i = 0; i < o->n_in; i++)
    if (o->in[i].done < o->in[i].n) return 0;
  return 1;
}

static int progress(AxCasyncOp *o) {
  AX_TRY(ax_link_progress(&o->coll->cc)); /* this rank's held sends, of any operation */
  int moved = 1;
  while (moved) {
    moved = 0;
    for (int i = 0; i < o->n_in; i++) {
      AX_TRY(post_recvs(o, &o->in[i], &moved));
      AX_TRY(retire_recvs(o, &o->in[i], &moved));
    }
    for (int i = 0; i < o->n_out; i++) {
      AX_TRY(post_sends(o, &o->out[i], &moved));
      AX_TRY(retire_sends(o, &o->out[i], &moved));
    }
  }
  return AX_OK;
}

static int engine_test(AxColl *op) {
  AxCasyncOp *o = op->engine_state;
  if (!op->finished) {
    AX_TRY(progress(o));
    op->finished = all_done(o);
    if (op->finished) o->st->busy = 0;
  }
  return AX_OK;
}

int ax_casync_op_launch(AxCasyncOp *o) { return engine_test(o->coll); }

/* The watchdog's detail: the first channel with a receive outstanding, else a send. */
static void engine_note(AxColl *op) {
  AxCasyncOp *o = op->engine_state;
  size_t at = 1;
  for (int i = 0; i < o->n_in; i++) at += o->in[i].done;
  for (int i = 0; i < o->n_out; i++) at += o->out[i].done;
  if (o->noted == at) return;
  o->noted = at;
  for (int i = 0; i < o->n_in; i++)
    if (o->in[i].done < o->in[i].n) {
      int w = o->in[i].peer_world;
      ax_wd_detail("casync: waiting for data from rank %d", w, w);
      return;
    }
  for (int i = 0; i < o->n_out; i++)
    if (o->out[i].done < o->out[i].n) {
      int w = o->out[i].peer_world;
      ax_wd_detail("casync: waiting for rank %d to take its data", w, w);
      return;
    }
}

/* ------------------------------------------------------------------ free */

/* Unfinished receives are cancelled and waited for (they return once cancelled). */
static void free_in_channel(AxCasyncChannel *ch, size_t w) {
  for (size_t j = 0; ch->recvs && j < w; j++) {
    if (ch->recvs[j] == MPI_REQUEST_NULL) continue;
    MPI_Cancel(&ch->recvs[j]);
    MPI_Wait(&ch->recvs[j], MPI_STATUS_IGNORE);
  }
  for (size_t i = 0; i < ch->n; i++) ax_casync_msg_release(&ch->msgs[i]);
  free(ch->recvs);
  free(ch->msgs);
}

/* Unfinished sends are released to complete on their own (held ones are never posted); their
 * buffers are left to them (MPI may still read them: only after a failure). */
static void free_out_channel(const AxCommConfig *cc, AxCasyncChannel *ch, size_t w) {
  for (size_t i = ch->done; i < ch->posted; i++) {
    AxLinkSend *s = &ch->sends[i % w];
    int held = s->req != MPI_REQUEST_NULL || s->held;
    ax_link_drop(cc, s);
    if (held) ch->msgs[i].owns_buf = 0;
  }
  for (size_t i = 0; i < ch->n; i++) ax_casync_msg_release(&ch->msgs[i]);
  free(ch->sends);
  free(ch->msgs);
}

static void engine_free(AxColl *op) {
  AxCasyncOp *o = op->engine_state;
  if (!o) return;
  size_t w = (size_t)window(o);
  for (int i = 0; o->out && i < o->n_out; i++) free_out_channel(&op->cc, &o->out[i], w);
  for (int i = 0; o->in && i < o->n_in; i++) free_in_channel(&o->in[i], w);
  free(o->out);
  free(o->in);
  if (o->algo && o->algo->free_data)
    o->algo->free_data(o->algo_data);
  else
    free(o->algo_data);
  if (o->st) o->st->busy = 0;
  free(o);
  op->engine_state = NULL;
}

static const AxCollEngine CS_ENGINE = {engine_test, engine_note, engine_free};
