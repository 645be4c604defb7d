/* casync_cost.c — HiPress §3.3's cost model (T_orig, T_cpr, the choice) and the profiling of
 * a codec's encode and decode on this core; see casync_cost.h. */
#include "casync_cost.h"

#include <math.h>
#include <stdlib.h>

#include "src/backend/peak.h"
#include "src/core/error.h"
#include "src/core/rng.h"
#include "src/core/timer.h"

double ax_linear_cost_at(const AxLinearCost *c, double bytes) {
  return c->latency_s + bytes / c->bytes_per_s;
}

void ax_casync_coefficients(AxCasyncAlgo algo, int ranks, int parts, double *alpha,
                            double *beta, double *gamma) {
  if (algo == AX_CASYNC_PS) {
    *alpha = 2.0 * ranks;
    *beta = parts + 1.0;
    *gamma = ranks + 1.0;
  } else if (algo == AX_CASYNC_AG) { /* every partition to every peer, decoded N times */
    *alpha = (double)ranks * (ranks - 1);
    *beta = parts;
    *gamma = (double)ranks * ranks;
  } else {
    *alpha = 2.0 * (ranks - 1);
    *beta = ranks;
    *gamma = ranks;
  }
}

/* Rounds of N partitions when K exceeds N (the paper's grouping), and the PS's beta, whose K
 * is the partitions of one round. */
static double rounds_of(int ranks, int parts) {
  return parts <= ranks ? 1.0 : ceil((double)parts / ranks);
}

double ax_casync_t_orig(const AxCasyncCosts *c, AxCasyncAlgo algo, int ranks, double bytes,
                        int parts) {
  double alpha, beta, gamma;
  int in_round = parts < ranks ? parts : ranks;
  ax_casync_coefficients(algo, ranks, in_round, &alpha, &beta, &gamma);
  return rounds_of(ranks, parts) * alpha * ax_linear_cost_at(&c->send, bytes / parts);
}

double ax_casync_t_cpr(const AxCasyncCosts *c, AxCasyncAlgo algo, int ranks, double bytes,
                       int parts) {
  if (c->linear)
    return ax_linear_cost_at(&c->enc, bytes) +
           ax_casync_t_orig(c, AX_CASYNC_RING, ranks, c->ratio * bytes, parts);
  double alpha, beta, gamma;
  int in_round = parts < ranks ? parts : ranks;
  ax_casync_coefficients(algo, ranks, in_round, &alpha, &beta, &gamma);
  double part = bytes / parts, encoded = c->ratio * part;
  double one = alpha * ax_linear_cost_at(&c->send, encoded) +
               beta * ax_linear_cost_at(&c->enc, part) +
               gamma * ax_linear_cost_at(&c->dec, encoded);
  return rounds_of(ranks, parts) * one;
}

AxCasyncChoice ax_casync_choose(const AxCasyncCosts *c, AxCasyncAlgo algo, int ranks,
                                double bytes, int max_parts) {
  AxCasyncChoice ch = {0, 1, INFINITY, INFINITY, 1, 1, algo, 0, 0};
  if (max_parts < 1) max_parts = ranks;
  for (int k = 1; k <= max_parts; k++) {
    double o = ax_casync_t_orig(c, algo, ranks, bytes, k);
    double p = ax_casync_t_cpr(c, algo, ranks, bytes, k);
    if (o < ch.t_orig) ch.t_orig = o, ch.orig_parts = k;
    if (p < ch.t_cpr) ch.t_cpr = p, ch.cpr_parts = k;
  }
  ch.compress = ranks > 1 && ch.t_cpr < ch.t_orig;
  ch.parts = ch.compress ? ch.cpr_parts : ch.orig_parts;
  return ch;
}

/* ------------------------------------------------------------------ profiling */

int ax_casync_linear_pass(const AxCodec *c, AxCodecState *st, const AxCodecCtx *ctx,
                          const float *in, float *out, size_t n, float *factor, size_t *wire) {
  *wire = 0;
  for (int r = 0; r < ax_codec_rounds(c); r++) {
    AX_TRY(ax_codec_factor(c, st, ctx, in, n, r, factor));
    AX_TRY(ax_codec_factor_reduced(c, st, ctx, n, r, factor));
    *wire += ax_codec_factor_len(c, n, r) * sizeof(float);
  }
  return ax_codec_rebuild(c, st, ctx, n, out);
}

size_t ax_casync_factor_cap(const AxCodec *c, size_t n) {
  size_t cap = 1;
  for (int r = 0; r < ax_codec_rounds(c); r++)
    if (ax_codec_factor_len(c, n, r) > cap) cap = ax_codec_factor_len(c, n, r);
  return cap;
}

/* One size's buffers and state. */
typedef struct {
  const AxCodec *c;
  AxCodecState *st;
  float *in, *out;
  void *wire;
  size_t n, encoded;
} Sample;

/* One encode (what 0, with the codec's state: prepare included) or decode (1); a linear
 * codec's pass counts as its encode. */
static int run_once(Sample *s, int what, uint64_t step) {
  AxCodecCtx ctx = {.seed = 1, .step = step, .range = 0};
  if (ax_codec_rounds(s->c) > 0)
    return ax_casync_linear_pass(s->c, s->st, &ctx, s->in, s->out, s->n, s->wire, &s->encoded);
  if (what == 0)
    return ax_codec_encode_own(s->c, s->st, &ctx, s->in, s->n, s->out, s->wire, &s->encoded);
  return ax_codec_decode(s->c, &ctx, s->wire, s->encoded, s->out, s->n, 0);
}

/* Median seconds of `reps` runs of `what` (after one untimed encode). */
static int time_runs(Sample *s, int what, int reps, double *median) {
  double t[16];
  if (reps > 16) reps = 16;
  if (reps < 1) reps = 1;
  AX_TRY(run_once(s, 0, 1));
  for (int i = 0; i < reps; i++) {
    double t0 = ax_now();
    AX_TRY(run_once(s, what, (uint64_t)i + 2));
    t[i] = ax_now() - t0;
  }
  double m = ax_median(t, reps);
  *median = m > 1e-9 ? m : 1e-9;
  return AX_OK;
}

/* A line through (x0, y0) and (x1, y1): latency and bandwidth (both kept positive). */
static AxLinearCost fit(double x0, double y0, double x1, double y1) {
  double slope = (y1 - y0) / (x1 - x0);
  if (slope <= 0) slope = y1 / x1;
  double latency = y0 - slope * x0;
  return (AxLinearCost){latency > 0 ? latency : 0, 1.0 / slope};
}

typedef struct {
  size_t n, encoded;
  double enc_s, dec_s;
} Timing;

static int sample_size(const AxCodec *codec, int reps, size_t n, Timing *out) {
  int linear = ax_codec_rounds(codec) > 0;
  size_t wire = linear ? ax_casync_factor_cap(codec, n) * sizeof(float)
                       : ax_codec_max_bytes(codec, n);
  Sample s = {.c = codec, .n = n};
  s.in = ax_malloc(n * sizeof(float));
  s.out = ax_malloc(n * sizeof(float));
  s.wire = ax_malloc(wire + 4);
  int rc = s.in && s.out && s.wire ? AX_OK : AX_ERR;
  /* with its state, as a step encodes: error feedback's and momentum's passes count */
  if (rc == AX_OK) rc = ax_codec_state_new(codec, n, &s.st);
  if (rc == AX_OK) {
    AxRng rng;
    ax_rng_seed(&rng, 1234);
    for (size_t i = 0; i < n; i++) s.in[i] = (float)(ax_rng_normal(&rng) * 1e-3);
    *out = (Timing){.n = n};
    rc = time_runs(&s, 0, reps, &out->enc_s);
    if (rc == AX_OK && !linear) rc = time_runs(&s, 1, reps, &out->dec_s);
    out->encoded = s.encoded;
  }
  ax_codec_state_free(s.st);
  free(s.in);
  free(s.out);
  free(s.wire);
  return rc;
}

/* The two sample sizes, and the bound on a rank's work. The small sample's 128 x 128 matrix
 * (PowerSGD's shape of 16K values) allows no rank above 128, so a codec with a rank is profiled
 * at min(rank, 128) in both samples (one codec, one fit), and its large sample shrinks to
 * PROFILE_WORK / rank values: its products cost values x rank, and 4M values at rank 8 is what
 * the profile spends at the default rank (at 4M values and rank 1024 it spent minutes; every
 * rank from 1 to 4096 now takes about half a second here). A rank above 128 is priced as 128:
 * its encode costs more than the profile says. */
enum { SMALL_N = 16 * 1024, LARGE_N = 4 * 1024 * 1024, PROFILE_RANK = 128,
       PROFILE_WORK = 8 * LARGE_N };

static int profile_samples(const AxCodec *codec, size_t large_n, int reps, Timing *small,
                           Timing *large) {
  AX_TRY(sample_size(codec, reps, SMALL_N, small));
  return sample_size(codec, reps, large_n, large); /* 16 MB at most: out of the caches */
}

int ax_casync_profile_codec(const AxCodec *codec, int reps, AxCasyncCosts *out) {
  Timing small, large;
  AxCodec *probe;
  int rank;
  AX_TRY(ax_codec_cap_rank(codec, PROFILE_RANK, &probe, &rank));
  size_t large_n = rank > PROFILE_WORK / LARGE_N ? (size_t)(PROFILE_WORK / rank) : LARGE_N;
  int rc = profile_samples(probe, large_n, reps, &small, &large);
  ax_codec_free(probe);
  AX_TRY(rc);
  out->linear = ax_codec_rounds(codec) > 0;
  out->enc = fit(4.0 * small.n, small.enc_s, 4.0 * large.n, large.enc_s);
  out->dec = out->linear ? (AxLinearCost){0, INFINITY}
                         : fit((double)small.encoded, small.dec_s, (double)large.encoded,
                               large.dec_s);
  out->ratio = (double)large.encoded / (4.0 * large.n);
  return AX_OK;
}
