/* codec_powersgd.c — PowerSGD (Vogels et al.; Optimus-CC's inter-stage use), a linear codec in
 * two rounds. The n values are a rows x cols matrix M, row-major and zero padded:
 * cols = the key cols, or ceil(sqrt(n)) (cols=auto, the default); rows = ceil(n / cols); the
 * rank used is r = min(rank, rows, cols).
 *   round 0  factor P = M Q (rows x r), Q the previous step's reduced Q (warm start) or, on the
 *            first step, uniform in [-0.5, 0.5) from (seed, step, range) (stream
 *            AX_CRNG_POWERSGD), so the same on every rank; factor_reduced orthonormalizes the
 *            summed P into P^ (Gram-Schmidt, deterministic; dependent columns become 0)
 *   round 1  factor Q = M^T P^ (cols x r); factor_reduced keeps the summed Q as the rebuild's
 *            and the next step's warm start
 *   rebuild  M ~ P^ Q^T
 * Keys: rank (default 4; auto: floor(rows·cols / (10·(rows + cols))), at least 1, at most
 * 128, about a tenth of the matrix: codec.h), cols (auto), ef (default 0). With ef=1 the
 * local approximation is P^ P^T M (= P^ times this rank's round-1 factor transposed; the sum
 * over ranks is the rebuild), and residual = M - P^ P^T M is added to the next step's M.
 * State: the residual (ef), Q (cols x r, checkpointed, flag bit 0: Q is warm); scratch: the
 * doubles of the products and Gram-Schmidt, and P^. */
#include <string.h>

#include "codec_impl.h"
#include "src/core/error.h"

enum { WARM = 1 };

typedef struct {
  size_t rows, cols;
  int r;
} Shape;

/* rank=auto (codec.h): about a tenth of the matrix's values, at most rank 128. */
static size_t auto_rank(size_t rows, size_t cols) {
  size_t r = rows * cols / (AX_CODEC_AUTO_RANK_SHRINK * (rows + cols));
  return r < 1 ? 1 : r > AX_CODEC_AUTO_RANK_MAX ? AX_CODEC_AUTO_RANK_MAX : r;
}

static Shape shape_of(const AxCodec *c, size_t n) {
  Shape s = {0, 0, 0};
  if (n == 0) return s;
  if (c->p.cols) s.cols = c->p.cols < n ? c->p.cols : n;
  else
    for (s.cols = 1; s.cols * s.cols < n; s.cols++) {}
  s.rows = (n + s.cols - 1) / s.cols;
  size_t r = c->p.rank ? (size_t)c->p.rank : auto_rank(s.rows, s.cols);
  r = r < s.rows ? r : s.rows;
  s.r = (int)(r < s.cols ? r : s.cols);
  return s;
}

static void defaults(AxCodecParams *p) { p->rank = 4, p->cols = 0, p->ef = 0; }

static int rank_for(const AxCodec *c, size_t n) { return shape_of(c, n).r; }

static size_t factor_len(const AxCodec *c, size_t n, int round) {
  Shape s = shape_of(c, n);
  return (round == 0 ? s.rows : s.cols) * (size_t)s.r;
}

static size_t max_bytes(const AxCodec *c, size_t n) {
  return 4 * (factor_len(c, n, 0) + factor_len(c, n, 1));
}

static size_t own_floats(const AxCodec *c, size_t n) { return factor_len(c, n, 1); }

static size_t scratch_bytes(const AxCodec *c, size_t n) {
  Shape s = shape_of(c, n);
  size_t longer = s.rows > s.cols ? s.rows : s.cols;
  return longer * (size_t)s.r * sizeof(double) + s.rows * (size_t)s.r * sizeof(float);
}

/* Scratch: the doubles first (malloc alignment), then P^. */
static double *work(AxCodecState *st) { return st->scratch; }
static float *p_hat(const AxCodec *c, AxCodecState *st) {
  Shape s = shape_of(c, st->n);
  size_t longer = s.rows > s.cols ? s.rows : s.cols;
  return (float *)(work(st) + longer * (size_t)s.r);
}

static int factor(const AxCodec *c, AxCodecState *st, const AxCodecCtx *ctx, const float *in,
                  size_t n, int round, float *out) {
  Shape s = shape_of(c, n);
  float *q = st->own;
  const float *m = st->residual ? st->residual : in;
  if (round == 0) {
    if (st->residual) ax_op_add(st->residual, in, n);
    if (!(st->flags & WARM)) {
      ax_op_random_unit(ax_codec_rng(ctx, AX_CRNG_POWERSGD), 0, s.cols * (size_t)s.r, q);
      for (size_t e = 0; e < s.cols * (size_t)s.r; e++) q[e] -= 0.5f;
    }
    ax_op_mat_thin(m, n, s.rows, s.cols, q, s.r, out);
    return AX_OK;
  }
  ax_op_mat_t_thin(m, n, s.rows, s.cols, p_hat(c, st), s.r, work(st), out);
  if (st->residual) ax_op_outer(p_hat(c, st), out, s.rows, s.cols, s.r, n, st->residual, 1);
  return AX_OK;
}

static int factor_reduced(const AxCodec *c, AxCodecState *st, const AxCodecCtx *ctx, size_t n,
                          int round, float *reduced) {
  (void)ctx;
  Shape s = shape_of(c, n);
  if (round == 0) {
    ax_op_orthonormalize(reduced, s.rows, s.r, work(st));
    if (s.r) memcpy(p_hat(c, st), reduced, s.rows * (size_t)s.r * sizeof *reduced);
  } else {
    if (s.r) memcpy(st->own, reduced, s.cols * (size_t)s.r * sizeof *reduced);
    st->flags |= WARM;
  }
  return AX_OK;
}

static int rebuild(const AxCodec *c, AxCodecState *st, const AxCodecCtx *ctx, size_t n,
                   float *out) {
  (void)ctx;
  Shape s = shape_of(c, n);
  ax_op_outer(p_hat(c, st), st->own, s.rows, s.cols, s.r, n, out, 0);
  return AX_OK;
}

/* A link message: P^ (rows x r), then Q (cols x r). */
static int rebuild_from(const AxCodec *c, const AxCodecCtx *ctx, const float *factors, size_t n,
                        float *out) {
  (void)ctx;
  Shape s = shape_of(c, n);
  ax_op_outer(factors, factors + s.rows * (size_t)s.r, s.rows, s.cols, s.r, n, out, 0);
  return AX_OK;
}

const AxCodecImpl ax_codec_powersgd = {
    .name = "powersgd", .keys = "rank,cols,ef", .rounds = 2, .defaults = defaults,
    .max_bytes = max_bytes, .own_floats = own_floats, .scratch_bytes = scratch_bytes,
    .factor_len = factor_len, .factor = factor, .factor_reduced = factor_reduced,
    .rebuild = rebuild, .rebuild_from = rebuild_from, .rank_for = rank_for,
};
