/* casync.c — CaSync's public entry points (casync.h): algorithm names, argument and state
 * checks, then the operation: nothing to do (one rank, no values), the factor rounds of a
 * linear codec (casync_linear.c), or the ring, PS or all-gather (casync_ring.c, casync_ps.c,
 * casync_ag.c) on the message engine (casync_wire.c). The operation is an AxColl run by an
 * engine of its own, so ax_coll_test, ax_coll_wait and ax_coll_free drive and end it like any
 * collective. */
#include <string.h>

#include "casync_internal.h"
#include "mpi/mpi_util.h"

static const char *const ALGO_NAMES[] = {"ring", "ps", "ag"};

const char *ax_casync_algo_name(AxCasyncAlgo a) {
  return a >= AX_CASYNC_RING && a <= AX_CASYNC_AG ? ALGO_NAMES[a] : "?";
}

int ax_casync_algo_parse(const char *name, AxCasyncAlgo *out) {
  for (int a = AX_CASYNC_RING; name && a <= AX_CASYNC_AG; a++)
    if (!strcmp(name, ALGO_NAMES[a])) {
      *out = (AxCasyncAlgo)a;
      return AX_OK;
    }
  return AX_FAIL("unknown CaSync algorithm '%s' (ring, ps, ag)", name ? name : "");
}

static int check_args(const AxCodec *c, AxCasyncAlgo algo, const AxCasyncState *st,
                      const float *buf, size_t count) {
  if (!c) return AX_FAIL("casync all-reduce: no codec");
  if (algo < AX_CASYNC_RING || algo > AX_CASYNC_AG)
    return AX_FAIL("casync all-reduce: unknown algorithm %d", (int)algo);
  if (!st) return AX_FAIL("casync all-reduce: no state");
  if (count && !buf) return AX_FAIL("casync all-reduce: no buffer for %zu values", count);
  return AX_OK;
}

/* The state must be laid out for this operation, and free. */
static int check_state(MPI_Comm comm, const AxCommConfig *cc, const AxCodec *c,
                       const AxCasyncState *st, size_t count) {
  int size = 0;
  if (comm == MPI_COMM_NULL) return AX_FAIL("casync all-reduce: MPI_COMM_NULL");
  AX_MPI(MPI_Comm_size(comm, &size));
  size_t piece = ax_casync_piece_floats(cc);
  if (strcmp(ax_codec_spec(st->codec), ax_codec_spec(c)) != 0 || st->count != count ||
      st->size != size || (!st->linear && !st->parts && st->piece != piece))
    return AX_FAIL("casync all-reduce: the state is for %s, %zu values on %d ranks in pieces of "
                   "%zu; this operation is %s, %zu values on %d ranks in pieces of %zu",
                   ax_codec_spec(st->codec), st->count, st->size, st->piece, ax_codec_spec(c),
                   count, size, piece);
  if (st->busy)
    return AX_FAIL("casync all-reduce: the state is in use by an operation not yet completed");
  return AX_OK;
}

/* This rank's own values, every piece with its state, before any of them is encoded or
 * merged (DGC's momentum correction: ax_codec_prepare). */
static int prepare_own(const AxCodec *c, AxCasyncState *st, float *buf) {
  if (!ax_codec_has_prepare(c)) return AX_OK;
  for (int seg = 0; seg < st->size; seg++)
    for (size_t k = 0; k < ax_casync_seg_pieces(st, seg); k++)
      AX_TRY(ax_codec_prepare(c, ax_casync_piece_state(st, seg, k),
                              buf + ax_casync_piece_offset(st, seg, k),
                              ax_casync_piece_len(st, seg, k)));
  return AX_OK;
}

static int start(AxColl *op, const AxCodec *c, AxCasyncAlgo algo, AxCasyncState *st,
                 const AxCodecCtx *ctx, float *buf, size_t count) {
  if (op->size == 1 || count == 0) return ax_coll_launch(op); /* an empty schedule: done */
  if (!st->linear) AX_TRY(prepare_own(c, st, buf));
  AxCodecCtx zero = {0};
  if (!ctx) ctx = &zero;
  st->busy = 1;
  int rc;
  if (st->linear)
    rc = ax_casync_linear_start(op, c, st, ctx, buf, count);
  else if (algo == AX_CASYNC_RING)
    rc = ax_casync_ring_start(op, c, st, ctx, buf);
  else if (algo == AX_CASYNC_PS)
    rc = ax_casync_ps_start(op, c, st, ctx, buf);
  else
    rc = ax_casync_ag_start(op, c, st, ctx, buf);
  if (rc != AX_OK && !op->engine) st->busy = 0; /* else ax_coll_free clears it */
  return rc;
}

/* A checked operation on its tag: the AxColl created, the algorithm planned. */
static int start_on_tag(AxColl **op, MPI_Comm comm, int tag, const AxCommConfig *cc,
                        const AxCodec *c, AxCasyncAlgo algo, AxCasyncState *st,
                        const AxCodecCtx *ctx, float *buf, size_t count, AxCommBytes *bytes) {
  AX_TRY(ax_coll_create_on_tag(op, comm, cc, AX_COMM_F32, bytes, tag));
  if (start(*op, c, algo, st, ctx, buf, count) != AX_OK) {
    ax_coll_free(*op);
    *op = NULL;
    return AX_ERR;
  }
  return AX_OK;
}

/* Arguments and state are checked before the operation takes its tag, so a refused start
 * leaves the communicator's tag sequence as it was. */
int ax_casync_allreduce_start(AxColl **op, MPI_Comm comm, const AxCommConfig *cc,
                              const AxCodec *c, AxCasyncAlgo algo, AxCasyncState *st,
                              const AxCodecCtx *ctx, float *buf, size_t count,
                              AxCommBytes *bytes) {
  *op = NULL;
  AX_TRY(ax_casync_allreduce_check(comm, cc, c, algo, st, buf, count));
  int tag;
  AX_TRY(ax_coll_next_tag(comm, &tag));
  return start_on_tag(op, comm, tag, cc, c, algo, st, ctx, buf, count, bytes);
}

int ax_casync_allreduce(MPI_Comm comm, const AxCommConfig *cc, const AxCodec *c,
                        AxCasyncAlgo algo, AxCasyncState *st, const AxCodecCtx *ctx, float *buf,
                        size_t count, AxCommBytes *bytes) {
  AxColl *op = NULL;
  AX_TRY(ax_casync_allreduce_start(&op, comm, cc, c, algo, st, ctx, buf, count, bytes));
  int rc = ax_coll_wait(op);
  ax_coll_free(op);
  return rc;
}

int ax_casync_allreduce_check(MPI_Comm comm, const AxCommConfig *cc, const AxCodec *c,
                              AxCasyncAlgo algo, const AxCasyncState *st, const float *buf,
                              size_t count) {
  AX_TRY(check_args(c, algo, st, buf, count));
  return check_state(comm, cc, c, st, count);
}

int ax_casync_allreduce_start_on_tag(AxColl **op, MPI_Comm comm, int tag, const AxCommConfig *cc,
                                     const AxCodec *c, AxCasyncAlgo algo, AxCasyncState *st,
                                     const AxCodecCtx *ctx, float *buf, size_t count,
                                     AxCommBytes *bytes) {
  *op = NULL;
  AX_TRY(ax_casync_allreduce_check(comm, cc, c, algo, st, buf, count));
  return start_on_tag(op, comm, tag, cc, c, algo, st, ctx, buf, count, bytes);
}
