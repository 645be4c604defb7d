/* casync_cost.c — HiPress §3.3's cost model (T_orig, T_cpr, the choice), the fit of a linear
 * cost through measured points, and the profiling of a codec's encode and decode on this core;
 * see casync_cost.h. */
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

/* The line through points i and i + 1 of e at `bytes`. */
static double between(const AxSizedTimes *e, int i, double bytes) {
  double slope = (e->seconds[i + 1] - e->seconds[i]) / (e->bytes[i + 1] - e->bytes[i]);
  return e->seconds[i] + (bytes - e->bytes[i]) * slope;
}

/* Seconds a byte beyond the largest point: the rate between it and the largest point at most a
 * quarter its size (the top of the measured range, where a per-call cost no longer counts;
 * points that close are not so close that their noise sets it), never faster than twice that
 * point's own average rate; the line's where no such point is or the rise is not positive. */
static double upper_slope(const AxLinearCost *line, const AxSizedTimes *at) {
  int last = at->n - 1, j = -1;
  for (int i = 0; i < last; i++)
    if (at->bytes[i] <= at->bytes[last] / 4) j = i;
  double slope =
      j < 0 ? 0 : (at->seconds[last] - at->seconds[j]) / (at->bytes[last] - at->bytes[j]);
  if (!(slope > 0) || !isfinite(slope)) return 1.0 / line->bytes_per_s;
  double average = at->seconds[last] / at->bytes[last];
  return slope > average / 2 ? slope : average / 2;
}

double ax_cost_at(const AxLinearCost *line, const AxSizedTimes *at, double bytes) {
  if (!at || at->n < 1) return ax_linear_cost_at(line, bytes);
  int last = at->n - 1;
  if (bytes >= at->bytes[last])
    return at->seconds[last] + (bytes - at->bytes[last]) * upper_slope(line, at);
  if (bytes <= at->bytes[0]) {
    double t = at->seconds[0] - (at->bytes[0] - bytes) / line->bytes_per_s;
    double floor = line->latency_s < at->seconds[0] ? line->latency_s : at->seconds[0];
    return t > floor ? t : floor;
  }
  int i = 0;
  while (bytes > at->bytes[i + 1]) i++;
  return between(at, i, bytes);
}

AxSizedTimes ax_sized_times(const double *bytes, const double *seconds, int n) {
  AxSizedTimes at = {0};
  for (int i = 0; i < n; i++) {
    if (at.n > 0 && bytes[i] <= at.bytes[at.n - 1]) {
      if (seconds[i] > at.seconds[at.n - 1]) at.seconds[at.n - 1] = seconds[i];
      continue;
    }
    if (at.n == AX_SIZED_MAX) break;
    at.bytes[at.n] = bytes[i];
    at.seconds[at.n++] = seconds[i];
  }
  return at;
}

double ax_casync_engine_at(const AxCasyncCosts *c, double bytes) {
  const AxSizedTimes *e = &c->engine;
  if (e->n < 1) return 0;
  if (e->n == 1 || bytes <= e->bytes[0]) return e->seconds[0];
  int i = 0;
  while (i < e->n - 2 && bytes > e->bytes[i + 1]) i++;
  double t = between(e, i, bytes);
  return t > 0 ? t : 0;
}

/* Weighted least squares of y = a + b x with weights 1 / y^2 (relative error). */
static void relative_least_squares(const double *x, const double *y, int n, double *a,
                                   double *b) {
  double s = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (int i = 0; i < n; i++) {
    double w = 1.0 / (y[i] * y[i]);
    s += w, sx += w * x[i], sy += w * y[i], sxx += w * x[i] * x[i], sxy += w * x[i] * y[i];
  }
  double det = s * sxx - sx * sx;
  *b = det > 0 ? (s * sxy - sx * sy) / det : 0;
  *a = (sy - *b * sx) / s;
}

AxLinearCost ax_linear_fit(const double *bytes, const double *seconds, int n) {
  int lo = 0, hi = 0;
  for (int i = 1; i < n; i++) {
    if (bytes[i] < bytes[lo]) lo = i;
    if (bytes[i] > bytes[hi]) hi = i;
  }
  double a, b;
  relative_least_squares(bytes, seconds, n, &a, &b);
  if (!(b > 0)) { /* noise hid the slope: the largest size's rate, through the smallest */
    b = seconds[hi] / bytes[hi];
    a = seconds[lo] - b * bytes[lo];
  }
  double floor = seconds[lo] - b * bytes[lo]; /* never below the smallest size's time */
  if (a < floor) a = floor;
  if (!(a > 0)) a = seconds[lo];
  return (AxLinearCost){a, 1.0 / b};
}

void ax_casync_coefficients(AxCasyncAlgo algo, int ranks, int parts, double *alpha,
                            double *beta, double *gamma) {
  if (algo == AX_CASYNC_PS) { /* co-located (HiPress §6): no message from a rank to itself */
    *alpha = 2.0 * (ranks - 1);
    *beta = parts;
    *gamma = ranks;
  } else if (algo == AX_CASYNC_AG) { /* each partition to every peer, N contributions decoded */
    *alpha = (double)parts * (ranks - 1);
    *beta = parts;
    *gamma = (double)parts * ranks;
  } else {
    *alpha = 2.0 * (ranks - 1);
    *beta = ranks;
    *gamma = ranks;
  }
}

/* Rounds of N partitions when K exceeds N (the paper's grouping); the coefficients are those
 * of one round, whose K is at most N. */
static double rounds_of(int ranks, int parts) {
  return parts <= ranks ? 1.0 : ceil((double)parts / ranks);
}

/* What the plain all-reduce measured at `bytes` beyond its line (either sign; 0 where it was
 * not measured at several sizes). */
static double plain_beyond_line(const AxCasyncCosts *c, double bytes) {
  if (c->plain_at.n < 1 || !(c->plain.bytes_per_s > 0)) return 0;
  return ax_cost_at(&c->plain, &c->plain_at, bytes) - ax_linear_cost_at(&c->plain, bytes);
}

double ax_casync_t_orig(const AxCasyncCosts *c, int ranks, double bytes, int parts) {
  double alpha, beta, gamma;
  int in_round = parts < ranks ? parts : ranks;
  ax_casync_coefficients(AX_CASYNC_RING, ranks, in_round, &alpha, &beta, &gamma);
  double t = rounds_of(ranks, parts) * alpha * ax_linear_cost_at(&c->send, bytes / parts) +
             plain_beyond_line(c, bytes);
  return t > 0 ? t : 0;
}

/* T_cpr without the engine term: HiPress's alpha, beta, gamma terms (or a linear codec's). */
static double model_t_cpr(const AxCasyncCosts *c, AxCasyncAlgo algo, int ranks, double bytes,
                          int parts) {
  if (c->linear)
    return ax_cost_at(&c->enc, &c->enc_at, bytes) +
           ax_casync_t_orig(c, ranks, c->ratio * bytes, parts);
  double alpha, beta, gamma;
  int in_round = parts < ranks ? parts : ranks;
  ax_casync_coefficients(algo, ranks, in_round, &alpha, &beta, &gamma);
  double part = bytes / parts, encoded = c->ratio * part;
  double one = alpha * ax_linear_cost_at(&c->send, encoded) +
               beta * ax_cost_at(&c->enc, &c->enc_at, part) +
               gamma * ax_cost_at(&c->dec, &c->dec_at, encoded);
  return rounds_of(ranks, parts) * one;
}

double ax_casync_t_cpr(const AxCasyncCosts *c, AxCasyncAlgo algo, int ranks, double bytes,
                       int parts) {
  return model_t_cpr(c, algo, ranks, bytes, parts) + ax_casync_engine_at(c, bytes);
}

AxSizedTimes ax_casync_engine_from(const AxCasyncCosts *c, AxCasyncAlgo algo, int ranks,
                                   const AxSizedTimes *measured) {
  AxSizedTimes e = *measured;
  for (int i = 0; i < e.n; i++) {
    double excess = measured->seconds[i] - model_t_cpr(c, algo, ranks, measured->bytes[i], ranks);
    e.seconds[i] = excess > 0 ? excess : 0;
  }
  return e;
}

AxCasyncChoice ax_casync_choose(const AxCasyncCosts *c, AxCasyncAlgo algo, int ranks,
                                double bytes, int max_parts) {
  AxCasyncChoice ch = {.t_cpr = INFINITY, .cpr_parts = 1, .algo = algo};
  if (max_parts < 1) max_parts = ranks;
  ch.orig_parts = ranks; /* the plain ring cuts N segments */
  ch.t_orig = ax_casync_t_orig(c, ranks, bytes, ranks);
  for (int k = 1; k <= max_parts; k++) {
    double p = ax_casync_t_cpr(c, algo, ranks, bytes, k);
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

enum { PROFILE_ENCODE = 0, PROFILE_DECODE = 1 };

/* One encode (with the codec's state: prepare included) or one decode that merges (adds) into
 * out, as CaSync's aggregation does (the codecs merge inside the decode); a linear codec's
 * pass counts as its encode. Every call uses the context of the encode it decodes. */
static int run_once(Sample *s, int what) {
  AxCodecCtx ctx = {.seed = 1, .step = 1, .range = 0};
  if (ax_codec_rounds(s->c) > 0)
    return ax_casync_linear_pass(s->c, s->st, &ctx, s->in, s->out, s->n, s->wire, &s->encoded);
  if (what == PROFILE_ENCODE)
    return ax_codec_encode_own(s->c, s->st, &ctx, s->in, s->n, s->out, s->wire, &s->encoded);
  return ax_codec_decode(s->c, &ctx, s->wire, s->encoded, s->out, s->n, 1);
}

/* Seconds of one call: calls back to back until MIN_TIMED_S have passed (a tiny size's call is
 * shorter than the clock's resolution allows to time alone), divided by their number. */
static const double MIN_TIMED_S = 50e-6;

static int time_call(Sample *s, int what, double *seconds) {
  long calls = 0;
  double t0 = ax_now(), dt;
  do {
    AX_TRY(run_once(s, what));
    calls++;
    dt = ax_now() - t0;
  } while (dt < MIN_TIMED_S);
  *seconds = dt / (double)calls;
  return AX_OK;
}

/* Median seconds per call over `reps` timings of `what` (after one untimed encode, which also
 * makes the bytes a decode reads). */
static int time_runs(Sample *s, int what, int reps, double *median) {
  double t[16];
  if (reps > 16) reps = 16;
  if (reps < 1) reps = 1;
  AX_TRY(run_once(s, PROFILE_ENCODE));
  for (int i = 0; i < reps; i++) AX_TRY(time_call(s, what, &t[i]));
  double m = ax_median(t, reps);
  *median = m > 1e-12 ? m : 1e-12;
  return AX_OK;
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
  s.out = ax_calloc(n, sizeof(float));
  s.wire = ax_malloc(wire + 4);
  int rc = s.in && s.out && s.wire ? AX_OK : AX_ERR;
  /* with its state, as a step encodes: error feedback's and momentum's passes count */
  if (rc == AX_OK) rc = ax_codec_state_new(codec, n, &s.st);
  if (rc == AX_OK) {
    AxRng rng;
    ax_rng_seed(&rng, 1234);
    for (size_t i = 0; i < n; i++) s.in[i] = (float)(ax_rng_normal(&rng) * 1e-3);
    *out = (Timing){.n = n};
    rc = time_runs(&s, PROFILE_ENCODE, reps, &out->enc_s);
    if (rc == AX_OK && !linear) rc = time_runs(&s, PROFILE_DECODE, reps, &out->dec_s);
    out->encoded = s.encoded;
  }
  ax_codec_state_free(s.st);
  free(s.in);
  free(s.out);
  free(s.wire);
  return rc;
}

/* The sample sizes: TINY_N values (the size of a small LayerNorm gain, where the per-call cost
 * is all there is), then x SIZE_STEP up to the large sample (close enough that a cost read
 * between two of them holds: DGC's threshold sample starts above 4096 values, and its encode
 * took 26 us at 16 KB, 58 at 32 KB and 62 at 64 KB, where a x4 grid read 38 us at 32 KB and
 * so priced a 64 KB part's two 32 KB partitions below what they cost). The
 * large sample is 4M values (16 MB: out of the caches), and the bound on a rank's work: the 128
 * x 128 matrix of 16K values (PowerSGD's shape) allows no rank above 128, so a codec with a
 * rank is profiled at min(rank, 128) in every sample (one codec, one fit; the tiny samples'
 * smaller matrices cap the rank used in them, as they cap it for a tensor that small), and its
 * large sample shrinks to PROFILE_WORK / rank values: its products cost values x rank, and 4M
 * values at rank 8 is what the profile spends at the default rank (at 4M values and rank 1024
 * it spent minutes). A rank above 128 is priced as 128: its encode costs more than the profile
 * says. */
enum { TINY_N = 64, SIZE_STEP = 2, LARGE_N = 4 * 1024 * 1024, PROFILE_RANK = 128,
       PROFILE_WORK = 8 * LARGE_N, MAX_SAMPLES = AX_SIZED_MAX };

/* The sample sizes up to large_n: TINY_N, x SIZE_STEP, ..., large_n. */
static int sample_sizes(size_t large_n, size_t *n) {
  int k = 0;
  for (size_t v = TINY_N; v < large_n && k < MAX_SAMPLES - 1; v *= SIZE_STEP) n[k++] = v;
  n[k++] = large_n;
  return k;
}

int ax_casync_profile_codec(const AxCodec *codec, int reps, AxCasyncCosts *out) {
  AxCodec *probe;
  int rank;
  AX_TRY(ax_codec_cap_rank(codec, PROFILE_RANK, &probe, &rank));
  size_t large_n = rank > PROFILE_WORK / LARGE_N ? (size_t)(PROFILE_WORK / rank) : LARGE_N;
  size_t n[MAX_SAMPLES];
  Timing t[MAX_SAMPLES];
  int k = sample_sizes(large_n, n), rc = AX_OK;
  for (int i = 0; i < k && rc == AX_OK; i++) rc = sample_size(probe, reps, n[i], &t[i]);
  ax_codec_free(probe);
  AX_TRY(rc);
  double raw[MAX_SAMPLES], encoded[MAX_SAMPLES], enc[MAX_SAMPLES], dec[MAX_SAMPLES];
  for (int i = 0; i < k; i++) {
    raw[i] = 4.0 * (double)t[i].n;
    encoded[i] = (double)t[i].encoded;
    enc[i] = t[i].enc_s;
    dec[i] = t[i].dec_s;
  }
  out->linear = ax_codec_rounds(codec) > 0;
  out->enc = ax_linear_fit(raw, enc, k);
  out->enc_at = ax_sized_times(raw, enc, k);
  out->dec = out->linear ? (AxLinearCost){0, INFINITY} : ax_linear_fit(encoded, dec, k);
  out->dec_at = out->linear ? (AxSizedTimes){0} : ax_sized_times(encoded, dec, k);
  out->ratio = encoded[k - 1] / raw[k - 1];
  return AX_OK;
}
