/* casync_linear.c — CaSync for a linear codec (ax_codec_rounds > 0: PowerSGD, rand-k), as an
 * AxColl engine: round by round, this rank's factor (ax_codec_factor), its plain fp32 ring
 * all-reduce (ring.c's schedule on this operation's tag and configuration, so it is emulated
 * and counted like any collective), ax_codec_factor_reduced; after the last round
 * ax_codec_rebuild into buf. Rounds run one after the other, so they share the tag: a rank
 * sends a round's first message only after its previous round completed, and MPI matches one
 * source's messages of a tag in order. */
#include <stdlib.h>

#include "casync_internal.h"
#include "src/core/watchdog.h"

typedef struct {
  AxColl *coll;
  const AxCodec *codec;
  AxCasyncState *st;
  AxCodecCtx ctx;
  float *buf;
  size_t count;
  int rounds, round;
  float *factor;
  AxColl *inner; /* this round's all-reduce */
} LinOp;

static AxCodecState *state_of(const LinOp *l) { return l->st->states[0]; }

static int start_round(LinOp *l) {
  size_t len = ax_codec_factor_len(l->codec, l->count, l->round);
  free(l->factor);
  l->factor = ax_malloc((len ? len : 1) * sizeof *l->factor);
  if (!l->factor) return AX_ERR;
  AX_TRY(ax_codec_factor(l->codec, state_of(l), &l->ctx, l->buf, l->count, l->round,
                         l->factor));
  AxColl *c = l->coll;
  AX_TRY(ax_coll_create_on_tag(&l->inner, c->comm, &c->cc, AX_COMM_F32, c->bytes, c->tag));
  AX_TRY(ax_ring_allreduce(l->inner, l->factor, len));
  return ax_coll_launch(l->inner);
}

static int finish_round(LinOp *l) {
  AX_TRY(ax_codec_factor_reduced(l->codec, state_of(l), &l->ctx, l->count, l->round,
                                 l->factor));
  ax_coll_free(l->inner);
  l->inner = NULL;
  l->round++;
  if (l->round < l->rounds) return start_round(l);
  AX_TRY(ax_codec_rebuild(l->codec, state_of(l), &l->ctx, l->count, l->buf));
  l->coll->finished = 1;
  l->st->busy = 0;
  return AX_OK;
}

static int linear_test(AxColl *op) {
  LinOp *l = op->engine_state;
  while (!op->finished) {
    int done = 0;
    AX_TRY(ax_coll_test(l->inner, &done));
    if (!done) break;
    AX_TRY(finish_round(l));
  }
  return AX_OK;
}

static void linear_note(AxColl *op) {
  const LinOp *l = op->engine_state;
  ax_wd_detail("casync: in the factor all-reduce of round %d", l->round, -1);
}

static void linear_free(AxColl *op) {
  LinOp *l = op->engine_state;
  if (!l) return;
  ax_coll_free(l->inner);
  free(l->factor);
  if (l->st) l->st->busy = 0;
  free(l);
  op->engine_state = NULL;
}

static const AxCollEngine LINEAR = {linear_test, linear_note, linear_free};

int ax_casync_linear_start(AxColl *op, const AxCodec *c, AxCasyncState *st, const AxCodecCtx *ctx,
                           float *buf, size_t count) {
  LinOp *l = ax_calloc(1, sizeof *l);
  if (!l) return AX_ERR;
  *l = (LinOp){.coll = op, .codec = c, .st = st, .ctx = *ctx, .buf = buf, .count = count,
               .rounds = ax_codec_rounds(c)};
  op->engine = &LINEAR; /* from here on ax_coll_free frees l */
  op->engine_state = l;
  AX_TRY(start_round(l));
  return linear_test(op);
}
