/* casync_cost.c — HiPress §3.3's cost model (T_orig, T_cpr, the choice) and the profiling of
 * a codec's encode and decode on this core; see casync_cost.h. */
#include "casync_cost.h"

#include <math.h>
#include <stdlib.h>

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
  AxCasyncChoice ch = {0, 1, INFINITY, INFINITY, 1, 1};
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

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Median seconds of `reps` encodes (decode = 0) or decodes of n values. */
static int time_codec(const AxCodec *codec, int decode, const float *in, size_t n, void *wire,
                      float *out, int reps, double *median, size_t *encoded) {
  double t[16];
  if (reps > 16) reps = 16;
  AxCodecCtx ctx = {.seed = 1, .step = 1, .range = 0};
  AX_TRY(ax_codec_encode(codec, NULL, &ctx, in, n, wire, encoded));
  for (int i = 0; i < reps; i++) {
    double t0 = ax_now();
    if (decode)
      AX_TRY(ax_codec_decode(codec, &ctx, wire, *encoded, out, n, 0));
    else
      AX_TRY(ax_codec_encode(codec, NULL, &ctx, in, n, wire, encoded));
    t[i] = ax_now() - t0;
  }
  qsort(t, (size_t)reps, sizeof t[0], cmp_double);
  *median = t[reps / 2] > 1e-9 ? t[reps / 2] : 1e-9;
  return AX_OK;
}

/* A line through (x0, y0) and (x1, y1): latency and bandwidth (both kept positive). */
static AxLinearCost fit(double x0, double y0, double x1, double y1) {
  double slope = (y1 - y0) / (x1 - x0);
  if (slope <= 0) slope = y1 / x1;
  double latency = y0 - slope * x0;
  return (AxLinearCost){latency > 0 ? latency : 0, 1.0 / slope};
}

/* Encode and decode of one size: seconds each, encoded bytes. */
typedef struct {
  size_t n, encoded;
  double enc_s, dec_s;
} Sample;

static int sample_size(const AxCodec *codec, int reps, size_t n, Sample *s) {
  float *in = ax_malloc(n * sizeof *in), *out = ax_malloc(n * sizeof *out);
  void *wire = ax_malloc(ax_codec_max_bytes(codec, n));
  int rc = in && out && wire ? AX_OK : AX_ERR;
  if (rc == AX_OK) {
    AxRng rng;
    ax_rng_seed(&rng, 1234);
    for (size_t i = 0; i < n; i++) in[i] = (float)(ax_rng_normal(&rng) * 1e-3);
    s->n = n;
    rc = time_codec(codec, 0, in, n, wire, out, reps, &s->enc_s, &s->encoded);
    if (rc == AX_OK) rc = time_codec(codec, 1, in, n, wire, out, reps, &s->dec_s, &s->encoded);
  }
  free(in);
  free(out);
  free(wire);
  return rc;
}

int ax_casync_profile_codec(const AxCodec *codec, int reps, AxCasyncCosts *out) {
  if (ax_codec_rounds(codec) > 0)
    return AX_FAIL("profiling: %s is a linear codec (its cost is that of its factor "
                   "all-reduces)", ax_codec_name(codec));
  Sample small, large;
  AX_TRY(sample_size(codec, reps, 16 * 1024, &small));
  AX_TRY(sample_size(codec, reps, 1024 * 1024, &large));
  out->enc = fit(4.0 * small.n, small.enc_s, 4.0 * large.n, large.enc_s);
  out->dec = fit((double)small.encoded, small.dec_s, (double)large.encoded, large.dec_s);
  out->ratio = (double)large.encoded / (4.0 * large.n);
  return AX_OK;
}
