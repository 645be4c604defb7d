/* test_codec.c — the gradient-compression codecs (mpi/compress/codec.h) against plain results:
 * identity bit for bit; onebit's signs and scales; TBQ on its levels; TernGrad and QSGD
 * unbiased (the mean over many seeds within 5 standard errors of the known variance); top-k's
 * exact k largest; rand-k's shared indices; PowerSGD exact on rank-r matrices and linear over
 * two ranks; every encoded size within ax_codec_max_bytes; error feedback bounded over 1000
 * steps; bad specs; state checkpoints; decode add=1; the vectorized operators against their
 * scalar paths. Deterministic (fixed seeds), no timing. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/compress/codec.h"
#include "mpi/compress/ops.h"
#include "src/core/error.h"
#include "src/core/rng.h"
#include "testutil.h"

/* Check records every passing ck_assert (a write to a file in fork mode): these assert only
 * when the condition fails, so checks inside per-element loops cost nothing. */
#define EXPECT(cond)                                                                             \
  do {                                                                                           \
    if (!(cond)) ck_assert(cond);                                                                \
  } while (0)
#define EXPECT_MSG(cond, ...)                                                                    \
  do {                                                                                           \
    if (!(cond)) ck_assert_msg(cond, __VA_ARGS__);                                               \
  } while (0)

#define EXPECT_NEAR(a, b, tol)                                                                   \
  EXPECT_MSG(fabs((double)(a) - (double)(b)) <= (tol), "%s = %g, %s = %g (tolerance %g)", #a,   \
             (double)(a), #b, (double)(b), (double)(tol))
#define EXPECT_OK(expr) EXPECT_MSG((expr) == AX_OK, "%s: %s", #expr, ax_error_message())

enum { GUARD = 64, STATE_HEADER = 40 /* codec.c's checkpoint header */ };

static AxCodec *parse(const char *spec) {
  AxCodec *c = NULL;
  ax_error_clear();
  EXPECT_MSG(ax_codec_parse(spec, &c) == AX_OK, "%s: %s", spec, ax_error_message());
  return c;
}

static AxCodecState *state_of(const AxCodec *c, size_t n) {
  AxCodecState *st = NULL;
  EXPECT_OK(ax_codec_state_new(c, n, &st));
  return st;
}

/* An encode buffer of max_bytes + GUARD bytes, the guard filled with 0xA5 (4-byte aligned). */
static uint8_t *enc_buf(const AxCodec *c, size_t n) {
  size_t max = ax_codec_max_bytes(c, n);
  uint8_t *b = tu_alloc(max + GUARD);
  memset(b, 0xA5, max + GUARD);
  return b;
}

static size_t encode_ok(const AxCodec *c, AxCodecState *st, const AxCodecCtx *ctx,
                        const float *x, size_t n, uint8_t *buf) {
  size_t bytes = 0, max = ax_codec_max_bytes(c, n);
  EXPECT_MSG(ax_codec_encode(c, st, ctx, x, n, buf, &bytes) == AX_OK, "%s n=%zu: %s",
                ax_codec_spec(c), n, ax_error_message());
  EXPECT_MSG(bytes <= max, "%s n=%zu: %zu bytes > max %zu", ax_codec_spec(c), n, bytes, max);
  EXPECT_MSG(bytes % 4 == 0, "%s n=%zu: %zu bytes", ax_codec_spec(c), n, bytes);
  for (size_t i = max; i < max + GUARD; i++)
    EXPECT_MSG(buf[i] == 0xA5, "%s n=%zu: wrote past max_bytes", ax_codec_spec(c), n);
  return bytes;
}

static void decode_ok(const AxCodec *c, const uint8_t *buf, size_t bytes, float *out, size_t n,
                      int add) {
  AxCodecCtx ctx = {0, 0, 0, NULL, 1};
  EXPECT_MSG(ax_codec_decode(c, &ctx, buf, bytes, out, n, add) == AX_OK, "%s: %s",
                ax_codec_spec(c), ax_error_message());
}

/* encode then decode (no state), into out */
static void roundtrip(const AxCodec *c, const AxCodecCtx *ctx, const float *x, size_t n,
                      float *out) {
  uint8_t *buf = enc_buf(c, n);
  size_t bytes = encode_ok(c, NULL, ctx, x, n, buf);
  decode_ok(c, buf, bytes, out, n, 0);
}

/* The state's checkpointed floats (after the documented 40-byte header), into buf (which holds
 * ax_codec_state_bytes, or is NULL for a fresh tu_alloc). */
static float *saved_floats(const AxCodecState *st, size_t *len, uint8_t *buf) {
  size_t bytes = ax_codec_state_bytes(st);
  uint8_t *b = buf ? buf : tu_alloc(bytes);
  EXPECT_OK(ax_codec_state_save(st, b));
  *len = (bytes - STATE_HEADER) / sizeof(float);
  return (float *)(b + STATE_HEADER);
}

/* n floats uniform in [-1, 1) into x */
static void fill_uniform(float *x, size_t n, uint64_t seed) {
  AxRng r;
  ax_rng_seed(&r, seed);
  for (size_t i = 0; i < n; i++) x[i] = 2 * ax_rng_float(&r) - 1;
}

/* ---------------------------------------------------------------- parsing */

START_TEST(canonical_specs_write_every_parameter) {
  static const char *const cases[][2] = {
      {"identity", "identity:ef=0"},
      {"onebit", "onebit:scale=mean,ef=0"},
      {"onebit:ef=1,scale=twomeans", "onebit:scale=twomeans,ef=1"},
      {"tbq:tau=0.5", "tbq:tau=0.5,ef=0"},
      {"terngrad", "terngrad:bits=2,ef=0"},
      {"qsgd:levels=7", "qsgd:levels=7,ef=0"},
      {"efsignsgd", "efsignsgd"},
      {"dgc", "dgc:ratio=0.001,momentum=0.9"},
      {"graddrop:ratio=0.1", "graddrop:ratio=0.1"},
      {"topk:k=10", "topk:k=10,ef=0"},
      {"topk", "topk:ratio=0.01,ef=0"},
      {"randk:ratio=0.5", "randk:ratio=0.5,ef=0"},
      {"powersgd", "powersgd:rank=4,cols=auto,ef=0"},
      {"powersgd:cols=16,rank=2,ef=1", "powersgd:rank=2,cols=16,ef=1"},
      {"powersgd:rank=auto", "powersgd:rank=auto,cols=auto,ef=0"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    AxCodec *c = parse(cases[i][0]);
    ck_assert_str_eq(ax_codec_spec(c), cases[i][1]);
    AxCodec *again = parse(ax_codec_spec(c)); /* the canonical spec parses to itself */
    ck_assert_str_eq(ax_codec_spec(again), cases[i][1]);
    ax_codec_free(again);
    ax_codec_free(c);
  }
  AxCodec *c = parse("powersgd");
  ck_assert_int_eq(ax_codec_rounds(c), 2);
  ck_assert_str_eq(ax_codec_name(c), "powersgd");
  ax_codec_free(c);
  ck_assert_ptr_nonnull(strstr(ax_codec_names(), "onebit, "));
}
END_TEST

/* A copy with its rank capped (what the cost profile runs): PowerSGD's rank is clamped and its
 * spec says so; a codec without a rank is copied as it is. */
START_TEST(a_capped_copy_clamps_only_the_rank) {
  static const char *const cases[][3] = { /* spec, the copy's spec at a cap of 128, its rank */
      {"powersgd:rank=1024,ef=1", "powersgd:rank=128,cols=auto,ef=1", "128"},
      {"powersgd:rank=8,cols=16", "powersgd:rank=8,cols=16,ef=0", "8"},
      {"onebit:ef=1", "onebit:scale=mean,ef=1", "0"},
      {"powersgd:rank=auto,ef=1", "powersgd:rank=16,cols=auto,ef=1", "16"}, /* a typical rank */
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    AxCodec *c = parse(cases[i][0]), *capped;
    int rank = -1;
    ck_assert_int_eq(ax_codec_cap_rank(c, 128, &capped, &rank), AX_OK);
    ck_assert_str_eq(ax_codec_spec(capped), cases[i][1]);
    ck_assert_int_eq(rank, atoi(cases[i][2]));
    ax_codec_free(capped);
    ax_codec_free(c);
  }
}
END_TEST

/* rank=auto: floor(rows·cols / (10 (rows + cols))), at least 1, at most 128 (codec.h), and
 * never more than min(rows, cols); the factors then send about a tenth of the matrix. */
START_TEST(powersgd_auto_rank_sends_a_tenth_of_each_matrix) {
  static const size_t cases[][3] = { /* rows, cols, rank */
      {192, 64, 4},    /* a qkv matrix of a 64-wide model: 12288 / 2560 */
      {64, 64, 3},     /* 4096 / 1280 */
      {768, 192, 15},  /* fc of a 192-wide model: 147456 / 9600 */
      {4, 4, 1},       /* too small for a tenth: rank 1 */
      {9216, 3072, 128}, /* Optimus-CC's GPT-8.3B qkv: 2304 by the rule, capped at 128 */
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char spec[64];
    snprintf(spec, sizeof spec, "powersgd:rank=auto,cols=%zu", cases[i][1]);
    AxCodec *c = parse(spec);
    size_t n = cases[i][0] * cases[i][1];
    ck_assert_int_eq(ax_codec_rank_for(c, n), (int)cases[i][2]);
    ck_assert_uint_eq(ax_codec_factor_len(c, n, 0), cases[i][0] * cases[i][2]);
    if (cases[i][2] > 1 && cases[i][2] < 128) ck_assert_double_le(ax_codec_ratio(c, n), 0.1);
    ax_codec_free(c);
  }
  AxCodec *fixed = parse("powersgd:rank=8,cols=4"), *o = parse("onebit");
  ck_assert_int_eq(ax_codec_rank_for(fixed, 16), 4); /* min(rank, rows, cols) */
  ck_assert_int_eq(ax_codec_rank_for(o, 100), 0);   /* no rank */
  ax_codec_free(fixed);
  ax_codec_free(o);
}
END_TEST

/* A recipe's keys go into a spec that does not give them; a key the spec gives stays. */
START_TEST(spec_defaults_add_only_the_keys_not_given) {
  static const char *const cases[][4] = { /* spec, defaults, result, added */
      {"onebit", "ef=1", "onebit:ef=1", "ef=1"},
      {"onebit:ef=0", "ef=1", "onebit:ef=0", ""},
      {"powersgd:rank=4", "ef=1,rank=auto", "powersgd:rank=4,ef=1", "ef=1"},
      {"powersgd:efx=1", "ef=1", "powersgd:efx=1,ef=1", "ef=1"}, /* "efx" is not "ef" */
      {"dgc:ratio=0.01", "", "dgc:ratio=0.01", ""},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char out[96], added[32];
    ck_assert_int_eq(ax_codec_spec_defaults(cases[i][0], cases[i][1], out, sizeof out, added,
                                            sizeof added), AX_OK);
    ck_assert_str_eq(out, cases[i][2]);
    ck_assert_str_eq(added, cases[i][3]);
  }
  ck_assert(ax_codec_spec_has("powersgd:cols=4,rank=2", "rank"));
  ck_assert(!ax_codec_spec_has("powersgd:cols=4", "rank"));
  ck_assert(!ax_codec_spec_has("rank", "rank")); /* the name is no key */
  char tiny[8];
  ck_assert_int_eq(ax_codec_spec_defaults("onebit", "ef=1", tiny, sizeof tiny, NULL, 0), AX_ERR);
  ax_error_clear();
}
END_TEST

START_TEST(bad_specs_fail_with_one_message_naming_codec_and_key) {
  static const char *const cases[][3] = { /* spec, two pieces the message must hold */
      {"nosuch", "unknown codec \"nosuch\"", "identity, onebit"},
      {"none", "none", "codecs: "},
      {"", "empty", "onebit"},
      {"onebit:foo=1", "onebit", "unknown key \"foo\""},
      {"onebit:scale=median", "onebit", "scale"},
      {"powersgd:rank=0", "powersgd", "rank"},
      {"topk:ratio=0", "topk", "ratio"},
      {"topk:ratio=1.5", "topk", "ratio"},
      {"dgc:ratio=-0.1", "dgc", "ratio"},
      {"randk:ratio=abc", "randk", "ratio"},
      {"terngrad:bits=3", "terngrad", "bits"},
      {"qsgd:levels=0", "qsgd", "levels"},
      {"qsgd:levels=128", "qsgd", "levels"},
      {"tbq:tau=0", "tbq", "tau"},
      {"dgc:momentum=1", "dgc", "momentum"},
      {"dgc:ramp=-1", "dgc", "ramp"},
      {"dgc:ramp_from=x", "dgc", "ramp_from"},
      {"topk:ramp=10", "topk", "\"ramp\""},
      {"dgc:ratio", "dgc", "malformed"},
      {"dgc:=3", "dgc", "malformed"},
      {"onebit:", "onebit", "malformed"},
      {"onebit:ef=1,", "onebit", "malformed"},
      {"onebit:ef=1,ef=0", "onebit", "twice"},
      {"topk:ratio=0.1,k=3", "topk", "not both"},
      {"topk:k=0", "topk", "k="},
      {"efsignsgd:ef=0", "efsignsgd", "\"ef\""},
      {"dgc:ef=1", "dgc", "\"ef\""},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    AxCodec *c = (AxCodec *)&c; /* must become NULL */
    ax_error_clear();
    ck_assert_int_eq(ax_codec_parse(cases[i][0], &c), AX_ERR);
    ck_assert_ptr_null(c);
    const char *msg = ax_error_text();
    EXPECT_MSG(strstr(msg, cases[i][1]) && strstr(msg, cases[i][2]),
                  "\"%s\": message \"%s\" lacks \"%s\" or \"%s\"", cases[i][0], msg, cases[i][1],
                  cases[i][2]);
  }
  ax_error_clear();
}
END_TEST

/* ---------------------------------------------------------------- encode/decode codecs */

START_TEST(identity_is_exact_bit_for_bit) {
  size_t n = 1001;
  float *x = tu_random(n, 5.0f, 1), *y = tu_zeros(n);
  x[3] = -0.0f, x[4] = INFINITY, x[5] = 1e-42f, x[6] = -INFINITY;
  AxCodec *c = parse("identity");
  AxCodecCtx ctx = {1, 2, 3, NULL, 1};
  roundtrip(c, &ctx, x, n, y);
  ck_assert_int_eq(memcmp(x, y, n * sizeof *x), 0);
  ck_assert_double_eq(ax_codec_ratio(c, n), 1.0);
  ax_codec_free(c);
}
END_TEST

START_TEST(onebit_keeps_every_sign_and_the_scales) {
  size_t n = 4097;
  float *x = tu_random(n, 2.0f, 2), *y = tu_zeros(n);
  for (size_t i = 0; i < n; i += 7) x[i] = fabsf(x[i]) * 3; /* positives and negatives differ */
  x[10] = 0.0f;
  double abs = 0, pos = 0, neg = 0;
  size_t npos = 0;
  for (size_t i = 0; i < n; i++) {
    abs += fabs(x[i]);
    if (x[i] >= 0) pos += x[i], npos++;
    else neg += x[i];
  }
  AxCodecCtx ctx = {1, 2, 3, NULL, 1};
  AxCodec *mean = parse("onebit"), *two = parse("onebit:scale=twomeans"), *ef = parse("efsignsgd");
  roundtrip(mean, &ctx, x, n, y);
  for (size_t i = 0; i < n; i++) {
    EXPECT_MSG((x[i] >= 0) == (y[i] > 0), "sign of %zu", i);
    EXPECT_NEAR(fabs(y[i]), abs / (double)n, 1e-6 * abs / (double)n);
  }
  roundtrip(ef, &ctx, x, n, y); /* efsignsgd without state: sign times ||x||_1 / n */
  for (size_t i = 0; i < n; i++)
    EXPECT_NEAR(y[i], (x[i] >= 0 ? 1 : -1) * abs / (double)n, 1e-6 * abs / (double)n);
  roundtrip(two, &ctx, x, n, y);
  double mp = pos / (double)npos, mn = neg / (double)(n - npos);
  for (size_t i = 0; i < n; i++)
    EXPECT_NEAR(y[i], x[i] >= 0 ? mp : mn, 1e-6 * fabs(x[i] >= 0 ? mp : mn));
  EXPECT_NEAR(ax_codec_ratio(mean, 1 << 20), 1.0 / 32, 1e-4);
  ax_codec_free(mean);
  ax_codec_free(two);
  ax_codec_free(ef);
}
END_TEST

START_TEST(tbq_is_exact_on_its_levels) {
  AxCodec *c = parse("tbq:tau=0.25");
  size_t n = 1000;
  float *x = tu_random(n, 1.0f, 3), *y = tu_zeros(n);
  x[0] = 0.25f, x[1] = -0.25f, x[2] = 0.2499999f, x[3] = -0.2499999f;
  AxCodecCtx ctx = {0, 0, 0, NULL, 1};
  roundtrip(c, &ctx, x, n, y);
  for (size_t i = 0; i < n; i++) {
    float want = x[i] >= 0.25f ? 0.25f : x[i] <= -0.25f ? -0.25f : 0.0f;
    EXPECT_MSG(y[i] == want, "%zu: %g -> %g, want %g", i, x[i], y[i], want);
  }
  /* values that carry a loss scale meet tau times it: the unscaled decisions, scaled */
  float *scaled = tu_zeros(n), *ys = tu_zeros(n);
  for (size_t i = 0; i < n; i++) scaled[i] = 1024.0f * x[i];
  AxCodecCtx at_scale = {.grad_scale = 1024.0f};
  roundtrip(c, &at_scale, scaled, n, ys);
  for (size_t i = 0; i < n; i++)
    EXPECT_MSG(ys[i] == 1024.0f * y[i], "%zu: %g at scale 1024 -> %g, want %g", i, x[i], ys[i],
               1024.0f * y[i]);
  ax_codec_free(c);
}
END_TEST

/* The mean of decode over `trials` steps is within 5 standard errors of x: stochastic rounding
 * of y = x * L / s to an integer has variance f (1 - f) (s / L)^2, f = y - floor(y). */
static void check_unbiased(const char *spec, int levels, int use_norm) {
  enum { N = 200, TRIALS = 3000 };
  AxCodec *c = parse(spec);
  float *x = tu_random(N, 1.0f, 4), *y = tu_zeros(N);
  x[0] = 0, x[1] = 1.0f, x[2] = -1.0f; /* the extremes and zero */
  double *mean = tu_alloc(N * sizeof *mean), sq = 0, mx = 0;
  for (size_t i = 0; i < N; i++) {
    sq += (double)x[i] * x[i], mx = fmax(mx, fabs(x[i]));
    mean[i] = 0;
  }
  double s = use_norm ? sqrt(sq) : mx, step = s / levels;
  uint8_t *buf = enc_buf(c, N);
  for (uint64_t t = 0; t < TRIALS; t++) {
    AxCodecCtx ctx = {7, t, 11, NULL, 1};
    size_t bytes = encode_ok(c, NULL, &ctx, x, N, buf);
    decode_ok(c, buf, bytes, y, N, 0);
    for (size_t i = 0; i < N; i++) {
      double level = y[i] / step;
      EXPECT_MSG(fabs(level - nearbyint(level)) < 1e-3 && fabs(level) <= levels + 1e-3,
                    "%s: %g is no level", spec, y[i]);
      mean[i] += y[i] / TRIALS;
    }
  }
  for (size_t i = 0; i < N; i++) {
    double yl = x[i] / step, f = yl - floor(yl);
    double se = step * sqrt(f * (1 - f) / TRIALS);
    EXPECT_MSG(fabs(mean[i] - x[i]) <= 5 * se + 1e-5 * s,
                  "%s: value %zu = %g, mean of decode %g, 5 SE = %g", spec, i, x[i], mean[i],
                  5 * se);
  }
  ax_codec_free(c);
}

START_TEST(terngrad_is_unbiased_for_every_width) {
  check_unbiased("terngrad", 1, 0);
  check_unbiased("terngrad:bits=4", 7, 0);
  check_unbiased("terngrad:bits=8", 127, 0);
}
END_TEST

START_TEST(qsgd_is_unbiased) {
  check_unbiased("qsgd:levels=1", 1, 1);
  check_unbiased("qsgd", 4, 1);
  check_unbiased("qsgd:levels=100", 100, 1);
}
END_TEST

/* A NaN or an infinity in the input leaves the decoded range non-finite (an overflow check
 * after the all-reduce still sees it) for the codecs that scale by the input. */
START_TEST(scaled_codecs_pass_non_finite_input_on) {
  static const char *const specs[] = {"identity", "onebit", "onebit:scale=twomeans",
                                      "efsignsgd", "terngrad", "terngrad:bits=8", "qsgd"};
  size_t n = 100;
  float *x = tu_random(n, 1.0f, 12), *y = tu_zeros(n);
  for (size_t s = 0; s < sizeof specs / sizeof *specs; s++)
    for (int bad = 0; bad < 3; bad++) {
      AxCodec *c = parse(specs[s]);
      AxCodecCtx ctx = {1, 2, 3, NULL, 1};
      float keep = x[37];
      x[37] = bad == 0 ? NAN : bad == 1 ? INFINITY : -INFINITY;
      roundtrip(c, &ctx, x, n, y);
      x[37] = keep;
      int finite = 1;
      for (size_t i = 0; i < n; i++) finite &= isfinite(y[i]) != 0;
      EXPECT_MSG(!finite, "%s: a %s input decoded finite", specs[s], bad ? "infinite" : "NaN");
      ax_codec_free(c);
    }
}
END_TEST

START_TEST(stochastic_codecs_are_deterministic_given_the_context) {
  static const char *const specs[] = {"terngrad", "qsgd", "dgc:ratio=0.01", "graddrop"};
  size_t n = 3000;
  float *x = tu_random(n, 1.0f, 5);
  for (size_t s = 0; s < sizeof specs / sizeof *specs; s++) {
    AxCodec *c = parse(specs[s]);
    uint8_t *a = enc_buf(c, n), *b = enc_buf(c, n), *d = enc_buf(c, n);
    AxCodecCtx ctx = {3, 4, 5, NULL, 1}, other = {3, 5, 5, NULL, 1};
    size_t na = encode_ok(c, NULL, &ctx, x, n, a), nb = encode_ok(c, NULL, &ctx, x, n, b);
    EXPECT(na == nb && !memcmp(a, b, na));
    if (s < 2) { /* the quantizers draw other roundings at another step */
      size_t nd = encode_ok(c, NULL, &other, x, n, d);
      EXPECT(nd != na || memcmp(a, d, na));
    }
    ax_codec_free(c);
  }
}
END_TEST

/* The k largest |x|, ties to the lower index, by sorting. */
static const float *sort_key;
static int by_magnitude(const void *a, const void *b) {
  uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
  float x = fabsf(sort_key[i]), y = fabsf(sort_key[j]);
  if (x != y) return x > y ? -1 : 1;
  return i < j ? -1 : 1;
}

START_TEST(topk_keeps_exactly_the_k_largest) {
  static const size_t sizes[] = {1, 7, 64, 1000, 4097, 50000};
  for (size_t t = 0; t < sizeof sizes / sizeof *sizes; t++) {
    size_t n = sizes[t];
    float *x = tu_random(n, 1.0f, 6 + t), *y = tu_zeros(n);
    for (size_t i = 0; i < n; i += 5) x[i] = roundf(x[i] * 4) / 4; /* many ties */
    uint32_t *order = tu_alloc(n * sizeof *order);
    for (size_t i = 0; i < n; i++) order[i] = (uint32_t)i;
    sort_key = x;
    qsort(order, n, sizeof *order, by_magnitude);
    size_t ks[] = {1, n / 3 + 1, n / 100 + 1, n > 1 ? n - 1 : 1, n};
    for (int q = 0; q < 5; q++) {
      char spec[64];
      snprintf(spec, sizeof spec, "topk:k=%zu", ks[q]);
      AxCodec *c = parse(spec);
      AxCodecCtx ctx = {1, t, 2, NULL, 1};
      roundtrip(c, &ctx, x, n, y);
      uint8_t *kept = tu_alloc(n);
      memset(kept, 0, n);
      for (size_t j = 0; j < ks[q]; j++) kept[order[j]] = 1;
      for (size_t i = 0; i < n; i++)
        EXPECT_MSG(y[i] == (kept[i] ? x[i] : 0.0f), "%s n=%zu: index %zu", spec, n, i);
      ax_codec_free(c);
    }
  }
}
END_TEST

START_TEST(decode_add_adds) {
  static const char *const specs[] = {"identity", "onebit", "onebit:scale=twomeans", "tbq",
                                      "terngrad:bits=4", "qsgd", "efsignsgd", "dgc:ratio=0.05",
                                      "graddrop", "topk:ratio=0.1"};
  size_t n = 1003;
  float *x = tu_random(n, 1.0f, 7), *base = tu_random(n, 3.0f, 8), *y = tu_zeros(n),
        *z = tu_zeros(n);
  for (size_t s = 0; s < sizeof specs / sizeof *specs; s++) {
    AxCodec *c = parse(specs[s]);
    AxCodecCtx ctx = {1, 1, 1, NULL, 1};
    uint8_t *buf = enc_buf(c, n);
    size_t bytes = encode_ok(c, NULL, &ctx, x, n, buf);
    for (size_t i = 0; i < n; i++) y[i] = NAN; /* add = 0 overwrites everything */
    decode_ok(c, buf, bytes, y, n, 0);
    memcpy(z, base, n * sizeof *z);
    decode_ok(c, buf, bytes, z, n, 1);
    for (size_t i = 0; i < n; i++)
      EXPECT_MSG(z[i] == base[i] + y[i], "%s: element %zu", specs[s], i);
    ax_error_clear(); /* a wrong size or a truncated buffer is refused */
    ck_assert_int_eq(ax_codec_decode(c, &ctx, buf, bytes + 4, y, n, 0), AX_ERR);
    ck_assert_int_eq(ax_codec_decode(c, &ctx, buf, bytes - 4, y, n, 0), AX_ERR);
    ax_error_clear();
    ax_codec_free(c);
  }
}
END_TEST

/* Every encoded size within max_bytes (exactly it for the fixed-size codecs), for sizes and
 * inputs (random, all zero, constant, with and without state), and decodable. */
START_TEST(encoded_sizes_stay_within_max_bytes) {
  static const char *const specs[] = {
      "identity", "onebit", "onebit:scale=twomeans,ef=1", "tbq:tau=0.5", "terngrad",
      "terngrad:bits=4", "terngrad:bits=8,ef=1", "qsgd:levels=1", "qsgd:levels=7",
      "qsgd:levels=127", "efsignsgd", "dgc", "dgc:ratio=0.3", "graddrop", "graddrop:ratio=1",
      "topk", "topk:k=5,ef=1", "topk:ratio=1"};
  static const size_t sizes[] = {0, 1, 7, 64, 1000, 4097};
  for (size_t s = 0; s < sizeof specs / sizeof *specs; s++) {
    AxCodec *c = parse(specs[s]);
    int fixed = !strstr(specs[s], "dgc") && !strstr(specs[s], "graddrop");
    for (size_t t = 0; t < sizeof sizes / sizeof *sizes; t++) {
      size_t n = sizes[t];
      float *y = tu_zeros(n + 1);
      AxCodecState *st = state_of(c, n);
      for (int input = 0; input < 4; input++) {
        float *x = input == 0 ? tu_random(n + 1, 1.0f, 10 + t) : tu_zeros(n + 1);
        if (input == 2)
          for (size_t i = 0; i < n; i++) x[i] = 0.5f;
        if (input == 3)
          for (size_t i = 0; i < n; i++) x[i] = (i & 1) ? 1e30f : -1e-30f;
        for (int with_state = 0; with_state < 2; with_state++) {
          AxCodecCtx ctx = {9, (uint64_t)input, t, NULL, 1};
          uint8_t *buf = enc_buf(c, n);
          size_t bytes = encode_ok(c, with_state ? st : NULL, &ctx, x, n, buf);
          if (fixed) ck_assert_uint_eq(bytes, ax_codec_max_bytes(c, n));
          decode_ok(c, buf, bytes, y, n, 0);
        }
      }
      ax_codec_state_free(st);
    }
    ax_codec_free(c);
  }
}
END_TEST

/* Error feedback keeps x - decode(encode(x)): the state stays bounded over 1000 steps of random
 * gradients (without feedback the dropped part would be a random walk: over 1000 steps of
 * uniform [-1, 1] its largest element reaches about 60), and for the ef codecs the residual is
 * what was given minus what was decoded. */
static void check_feedback_bounded(const char *spec, double bound) {
  enum { N = 1000, STEPS = 1000 };
  AxCodec *c = parse(spec);
  AxCodecState *st = state_of(c, N);
  ck_assert_ptr_nonnull(st);
  float *y = tu_zeros(N);
  double *given = tu_alloc(N * sizeof *given), *got = tu_alloc(N * sizeof *got), worst = 0;
  memset(given, 0, N * sizeof *given);
  memset(got, 0, N * sizeof *got);
  uint8_t *buf = enc_buf(c, N), *ckpt = tu_alloc(ax_codec_state_bytes(st));
  float *g = tu_zeros(N);
  int is_dgc = !strncmp(spec, "dgc", 3);
  float *x = tu_zeros(N);
  for (uint64_t step = 0; step < STEPS; step++) {
    fill_uniform(g, N, 1000 + step);
    AxCodecCtx ctx = {1, step, 0, NULL, 1};
    memcpy(x, g, N * sizeof *x);
    EXPECT_OK(ax_codec_prepare(c, st, x, N)); /* dgc: its momentum; the others: nothing */
    size_t bytes = encode_ok(c, st, &ctx, x, N, buf);
    decode_ok(c, buf, bytes, y, N, 0);
    for (size_t i = 0; i < N; i++) given[i] += g[i], got[i] += y[i];
    size_t len;
    float *saved = saved_floats(st, &len, ckpt);
    for (size_t i = 0; i < len; i++) worst = fmax(worst, fabs(saved[i]));
    if (!is_dgc)
      for (size_t i = 0; i < N; i++) /* residual = all given - all decoded */
        EXPECT_NEAR(saved[i], given[i] - got[i], 1e-3 * (1 + fabs(given[i])));
  }
  EXPECT_MSG(worst < bound, "%s: state reached %g (bound %g)", spec, worst, bound);
  ax_codec_state_free(st);
  ax_codec_free(c);
}

/* With ef the residual after a step is exactly x - decode(encode(x)), x = residual + g, and
 * the bytes are those of encoding x without state (onebit's fused path included). */
START_TEST(error_feedback_residual_is_exactly_what_encoding_lost) {
  static const char *const specs[] = {"onebit:ef=1", "onebit:scale=twomeans,ef=1", "efsignsgd",
                                      "tbq:tau=0.3,ef=1", "terngrad:ef=1", "topk:ratio=0.1,ef=1",
                                      "graddrop:ratio=0.1"};
  static const size_t sizes[] = {1, 15, 1000, 4096 + 4096 + 17, 8192};
  for (size_t s = 0; s < sizeof specs / sizeof *specs; s++)
    for (size_t t = 0; t < sizeof sizes / sizeof *sizes; t++) {
      size_t n = sizes[t], len;
      AxCodec *c = parse(specs[s]);
      AxCodecState *st = state_of(c, n);
      float *x = tu_zeros(n), *y = tu_zeros(n);
      uint8_t *with = enc_buf(c, n), *without = enc_buf(c, n), *ckpt = tu_alloc(ax_codec_state_bytes(st));
      for (uint64_t step = 0; step < 3; step++) {
        float *g = tu_random(n, 1.0f, 80 + step);
        float *res = saved_floats(st, &len, ckpt);
        for (size_t i = 0; i < n; i++) x[i] = res[i] + g[i];
        AxCodecCtx ctx = {3, step, 1, NULL, 1};
        size_t nw = encode_ok(c, st, &ctx, g, n, with), no = encode_ok(c, NULL, &ctx, x, n, without);
        EXPECT_MSG(nw == no && !memcmp(with, without, nw), "%s n=%zu: other bytes", specs[s], n);
        decode_ok(c, without, no, y, n, 0);
        res = saved_floats(st, &len, ckpt);
        for (size_t i = 0; i < n; i++)
          EXPECT_MSG(res[i] == x[i] - y[i], "%s n=%zu step %d: residual %zu", specs[s], n,
                     (int)step, i);
      }
      ax_codec_state_free(st);
      ax_codec_free(c);
    }
}
END_TEST

START_TEST(error_feedback_stays_bounded) {
  check_feedback_bounded("onebit:ef=1", 8);
  check_feedback_bounded("efsignsgd", 8);
  check_feedback_bounded("topk:ratio=0.1,ef=1", 5);
  check_feedback_bounded("graddrop:ratio=0.1", 5);
  check_feedback_bounded("dgc:ratio=0.1", 12); /* u ~ g / (1 - momentum) */
}
END_TEST

static int descending(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x < y) - (x > y);
}

/* The k-th largest of x[n] (x is reordered). */
static float kth_largest(float *x, size_t n, size_t k) {
  qsort(x, n, sizeof *x, descending);
  return x[k - 1];
}

/* DGC against its definition, replayed here in plain loops: prepare gives
 * u = m u + g; encode accumulates v += x, sends the values of v at or above the k-th largest
 * |v| (exact: a range of at most 4096 values is its own sample), and clears v and u where it
 * sent. x is what the rank sends: its prepared values, or (a CaSync partial sum) those plus
 * another rank's, which must get no second momentum. */
/* DGC's sparsity warm-up (ramp=8 from step 11): steps 11-12 keep 25% of the values, 13-14
 * 6.25%, 15-16 1.5625%, 17-18 0.390625%, then (and before step 11) the ratio, 0.1%; with 4096
 * values the sample is all of them, so exactly ceil(density x 4096) are sent. The worst case
 * covers the warm-up's first density, the cost model's ratio is the steady one, and the spec
 * without the keys is the codec as before. */
START_TEST(dgc_warms_up_its_sparsity) {
  enum { N = 4096 };
  AxCodec *c = parse("dgc:ratio=0.001,momentum=0,ramp=8,ramp_from=11");
  ck_assert_str_eq(ax_codec_spec(c), "dgc:ratio=0.001,momentum=0,ramp=8,ramp_from=11");
  static const size_t want[] = {5, 1024, 1024, 256, 256, 64, 64, 16, 16, 5, 5}; /* steps 10-20 */
  float *x = tu_random(N, 1.0f, 77);
  uint8_t *buf = enc_buf(c, N);
  for (uint64_t step = 10; step <= 20; step++) {
    AxCodecCtx ctx = {5, step, 0, NULL, 1};
    encode_ok(c, NULL, &ctx, x, N, buf);
    uint32_t count;
    memcpy(&count, buf, sizeof count);
    EXPECT_MSG(count == want[step - 10], "step %d: %u values sent, expected %zu", (int)step,
               count, want[step - 10]);
  }
  ck_assert_uint_ge(ax_codec_max_bytes(c, N), 4 + 8 * 2048);
  AxCodec *steady = parse("dgc:ratio=0.001,momentum=0");
  ck_assert_str_eq(ax_codec_spec(steady), "dgc:ratio=0.001,momentum=0");
  ck_assert_double_eq(ax_codec_ratio(c, N), ax_codec_ratio(steady, N));
  ax_codec_free(steady);
  ax_codec_free(c);
}
END_TEST

/* Under Adam (the context's adam_v) DGC sends the values of the largest updates |x| / sqrt(v):
 * with v 1e-4 on the even values and 1 on the odd ones, the 41 sent (1% of 4096; the sample is
 * all of them, so exactly) are the 41 even values of largest magnitude, sent as they are;
 * without it, the 41 largest values, odd ones among them. */
START_TEST(dgc_under_adam_sends_the_largest_updates) {
  enum { N = 4096, KEEP = 41 };
  AxCodec *c = parse("dgc:ratio=0.01,momentum=0");
  float *x = tu_random(N, 1.0f, 78), v[N], mag[N / 2], got[N];
  for (size_t i = 0; i < N; i++) v[i] = i % 2 ? 1.0f : 1e-4f;
  for (size_t i = 0; i < N / 2; i++) mag[i] = fabsf(x[2 * i]);
  float thr = kth_largest(mag, N / 2, KEEP);
  uint8_t *buf = enc_buf(c, N);
  AxCodecCtx adam = {5, 1, 0, v, 1}, plain = {5, 1, 0, NULL, 1};
  size_t bytes = encode_ok(c, NULL, &adam, x, N, buf);
  decode_ok(c, buf, bytes, got, N, 0);
  size_t sent = 0;
  for (size_t i = 0; i < N; i++) {
    int want = i % 2 == 0 && fabsf(x[i]) >= thr;
    sent += got[i] != 0;
    EXPECT_MSG(got[i] == (want ? x[i] : 0.0f), "value %zu: %g, expected %g", i, got[i],
               want ? x[i] : 0.0f);
  }
  ck_assert_uint_eq(sent, KEEP);
  bytes = encode_ok(c, NULL, &plain, x, N, buf);
  decode_ok(c, buf, bytes, got, N, 0);
  size_t odd = 0;
  for (size_t i = 1; i < N; i += 2) odd += got[i] != 0;
  ck_assert_uint_gt(odd, 0);
  ax_codec_free(c);
}
END_TEST

START_TEST(dgc_corrects_momentum_once_and_masks_what_it_sends) {
  enum { N = 300, K = 30, STEPS = 4 };
  AxCodec *c = parse("dgc:ratio=0.1,momentum=0.9");
  ck_assert_double_eq(ax_codec_momentum(c), 0.9);
  ck_assert_int_eq(ax_codec_has_prepare(c), 1);
  AxCodecState *st = state_of(c, N);
  float u[N] = {0}, v[N] = {0}, x[N], got[N];
  uint8_t *buf = enc_buf(c, N);
  for (uint64_t step = 0; step < STEPS; step++) {
    float *g = tu_random(N, 1.0f, 300 + step), *other = tu_random(N, 1.0f, 400 + step);
    memcpy(x, g, sizeof x);
    EXPECT_OK(ax_codec_prepare(c, st, x, N));
    for (size_t i = 0; i < N; i++) {
      u[i] = u[i] * 0.9f + g[i] * (float)(1.0 - 0.9); /* Adam's form of the momentum */
      EXPECT_MSG(x[i] == u[i], "step %d: prepared %zu is %g, not u = %g", (int)step, i, x[i],
                 u[i]);
      if (step % 2) x[i] += other[i]; /* odd steps: a partial sum holding another rank's */
      v[i] += x[i];
    }
    AxCodecCtx ctx = {5, step, 0, NULL, 1};
    size_t bytes = encode_ok(c, st, &ctx, x, N, buf);
    decode_ok(c, buf, bytes, got, N, 0);
    float mag[N];
    for (size_t i = 0; i < N; i++) mag[i] = fabsf(v[i]);
    float thr = kth_largest(mag, N, K);
    for (size_t i = 0; i < N; i++) {
      int sent = fabsf(v[i]) >= thr;
      EXPECT_MSG(got[i] == (sent ? v[i] : 0.0f), "step %d: value %zu is %g, expected %g",
                 (int)step, i, got[i], sent ? v[i] : 0.0f);
      if (sent) u[i] = v[i] = 0;
    }
    size_t len;
    const float *saved = saved_floats(st, &len, NULL); /* u then v */
    ck_assert_uint_eq(len, 2 * N);
    for (size_t i = 0; i < N; i++)
      EXPECT_MSG(saved[i] == u[i] && saved[N + i] == v[i], "step %d: state %zu: u %g v %g, "
                 "expected %g %g", (int)step, i, saved[i], saved[N + i], u[i], v[i]);
  }
  float y[N] = {0};
  EXPECT_OK(ax_codec_prepare(c, NULL, y, N)); /* no state: nothing to correct */
  for (size_t i = 0; i < N; i++) ck_assert_float_eq(y[i], 0.0f);
  EXPECT_MSG(ax_codec_prepare(c, st, y, N - 1) != AX_OK, "a range of another size was prepared");
  AxCodec *plain = parse("topk:ratio=0.1,ef=1");
  ck_assert_double_eq(ax_codec_momentum(plain), 0.0);
  ck_assert_int_eq(ax_codec_has_prepare(plain), 0);
  ax_codec_free(plain);
  ax_codec_state_free(st);
  ax_codec_free(c);
}
END_TEST

/* onebit:momentum=M is 1-bit Adam's compression stage: the rank's own gradient becomes its
 * momentum u = M u + (1 - M) g, and what is encoded (with error feedback) is u; M = 0, the
 * default, prepares nothing and stays out of the canonical spec. */
START_TEST(onebit_momentum_is_one_bit_adams) {
  enum { N = 64, STEPS = 3 };
  AxCodec *c = parse("onebit:ef=1,momentum=0.9"), *plain = parse("onebit:ef=1");
  ck_assert_str_eq(ax_codec_spec(c), "onebit:scale=mean,ef=1,momentum=0.9");
  ck_assert_str_eq(ax_codec_spec(plain), "onebit:scale=mean,ef=1");
  ck_assert_double_eq(ax_codec_momentum(c), 0.9);
  ck_assert_int_eq(ax_codec_has_prepare(c), 1);
  ck_assert_int_eq(ax_codec_has_prepare(plain), 0);
  AxCodecState *st = state_of(c, N), *ref = state_of(plain, N);
  uint8_t *buf = enc_buf(c, N), *rbuf = enc_buf(plain, N);
  float u[N] = {0}, x[N];
  for (uint64_t step = 0; step < STEPS; step++) {
    float *g = tu_random(N, 1.0f, 900 + step);
    memcpy(x, g, sizeof x);
    EXPECT_OK(ax_codec_prepare(c, st, x, N));
    for (size_t i = 0; i < N; i++) {
      u[i] = u[i] * 0.9f + g[i] * (float)(1.0 - 0.9);
      EXPECT_MSG(x[i] == u[i], "step %d: prepared %zu is %g, not u = %g", (int)step, i, x[i],
                 u[i]);
    }
    AxCodecCtx ctx = {1, step, 0, NULL, 1};
    size_t bytes = encode_ok(c, st, &ctx, x, N, buf), rbytes = encode_ok(plain, ref, &ctx, u, N,
                                                                         rbuf);
    ck_assert_uint_eq(bytes, rbytes); /* u with error feedback: what onebit:ef=1 sends of u */
    ck_assert_int_eq(memcmp(buf, rbuf, bytes), 0);
  }
  ax_codec_state_free(st);
  ax_codec_state_free(ref);
  ax_codec_free(c);
  ax_codec_free(plain);
}
END_TEST

/* The momentum handed over when compression starts (ax_codec_state_set_momentum: scale x the
 * optimizer's moment) is where the next prepare starts: u = 0.9 (0.25 m) + 0.1 g for DGC and
 * onebit with a momentum, bit for bit as the codec's own step rounds it; codecs without one
 * (onebit, powersgd) keep nothing and prepare nothing. */
START_TEST(momentum_handed_over_is_where_prepare_starts) {
  enum { N = 96 };
  static const char *const specs[] = {"dgc:ratio=0.1,momentum=0.9", "onebit:ef=1,momentum=0.9",
                                      "onebit:ef=1", "powersgd:rank=2"};
  float *m = tu_random(N, 1.0f, 41), *g = tu_random(N, 1.0f, 42);
  for (size_t s = 0; s < sizeof specs / sizeof specs[0]; s++) {
    AxCodec *c = parse(specs[s]);
    AxCodecState *st = state_of(c, N);
    float x[N];
    memcpy(x, g, sizeof x);
    ax_codec_state_set_momentum(c, st, m, 0.25f);
    EXPECT_OK(ax_codec_prepare(c, st, x, N));
    for (size_t i = 0; i < N; i++) {
      float u = (0.25f * m[i]) * 0.9f + g[i] * (float)(1.0 - 0.9);
      float want = ax_codec_momentum(c) > 0 ? u : g[i];
      EXPECT_MSG(x[i] == want, "%s: prepared %zu is %g, not %g", specs[s], i, x[i], want);
    }
    ax_codec_state_free(st);
    ax_codec_free(c);
  }
}
END_TEST

START_TEST(state_checkpoint_round_trips_exactly) {
  static const char *const specs[] = {"onebit:ef=1", "onebit:ef=1,momentum=0.5",
                                      "dgc:ratio=0.05", "graddrop",
                                      "topk:ratio=0.1,ef=1", "terngrad:ef=1"};
  size_t n = 777;
  for (size_t s = 0; s < sizeof specs / sizeof *specs; s++) {
    AxCodec *c = parse(specs[s]);
    AxCodecState *a = state_of(c, n), *b = state_of(c, n);
    uint8_t *ea = enc_buf(c, n), *eb = enc_buf(c, n);
    for (uint64_t step = 0; step < 5; step++) {
      AxCodecCtx ctx = {2, step, 3, NULL, 1};
      encode_ok(c, a, &ctx, tu_random(n, 1.0f, 50 + step), n, ea);
    }
    size_t bytes = ax_codec_state_bytes(a);
    uint8_t *ckpt = tu_alloc(bytes);
    ck_assert_int_eq(ax_codec_state_save(a, ckpt), AX_OK);
    ck_assert_int_eq(ax_codec_state_load(b, ckpt, bytes), AX_OK);
    for (uint64_t step = 5; step < 8; step++) { /* resumed: the same bytes, step after step */
      AxCodecCtx ctx = {2, step, 3, NULL, 1};
      float *g = tu_random(n, 1.0f, 50 + step);
      size_t na = encode_ok(c, a, &ctx, g, n, ea), nb = encode_ok(c, b, &ctx, g, n, eb);
      EXPECT(na == nb && !memcmp(ea, eb, na));
    }
    ax_error_clear(); /* another range size, another codec, a short buffer: refused */
    AxCodecState *other = state_of(c, n + 1);
    ck_assert_int_eq(ax_codec_state_load(other, ckpt, bytes), AX_ERR);
    ck_assert_int_eq(ax_codec_state_load(b, ckpt, bytes - 1), AX_ERR);
    AxCodec *d = parse("onebit:ef=1,scale=twomeans");
    AxCodecState *sd = state_of(d, n);
    if (ax_codec_state_bytes(sd) == bytes) ck_assert_int_eq(ax_codec_state_load(sd, ckpt, bytes), AX_ERR);
    ax_error_clear();
    ax_codec_state_free(sd);
    ax_codec_free(d);
    ax_codec_state_free(other);
    ax_codec_state_free(a);
    ax_codec_state_free(b);
    ax_codec_free(c);
  }
  AxCodec *c = parse("tbq");
  AxCodecState *none = state_of(c, 100);
  ck_assert_ptr_null(none); /* keeps nothing */
  ck_assert_uint_eq(ax_codec_state_bytes(none), 0);
  ax_codec_free(c);
}
END_TEST

/* ---------------------------------------------------------------- linear codecs */

/* One synchronization of a linear codec over `ranks` simulated ranks: each computes its factor,
 * the factors are summed, every rank applies factor_reduced to its copy; out[r] gets each rank's
 * rebuild. */
static void linear_sync(const AxCodec *c, AxCodecState **st, const AxCodecCtx *ctx,
                        float *const *in, int ranks, size_t n, float *const *out) {
  for (int round = 0; round < ax_codec_rounds(c); round++) {
    size_t len = ax_codec_factor_len(c, n, round);
    float *sum = tu_zeros(len + 1), *f = tu_zeros(len + 1);
    for (int r = 0; r < ranks; r++) {
      EXPECT_OK(ax_codec_factor(c, st[r], ctx, in[r], n, round, f));
      for (size_t i = 0; i < len; i++) sum[i] += f[i];
    }
    for (int r = 0; r < ranks; r++) {
      float *mine = tu_alloc((len + 1) * sizeof *mine);
      memcpy(mine, sum, len * sizeof *sum);
      EXPECT_OK(ax_codec_factor_reduced(c, st[r], ctx, n, round, mine));
    }
  }
  for (int r = 0; r < ranks; r++) EXPECT_OK(ax_codec_rebuild(c, st[r], ctx, n, out[r]));
}

/* Linear codecs over the same sizes and inputs: max_bytes is the factors' bytes, and the
 * rebuild is finite (zero input: zero, PowerSGD's orthogonalization of a zero P included). */
START_TEST(linear_codecs_handle_every_size) {
  static const char *const specs[] = {"randk", "randk:ratio=1,ef=1", "powersgd",
                                      "powersgd:rank=1,ef=1", "powersgd:rank=8,cols=5"};
  static const size_t sizes[] = {0, 1, 7, 64, 1000, 4097};
  for (size_t s = 0; s < sizeof specs / sizeof *specs; s++) {
    AxCodec *c = parse(specs[s]);
    for (size_t t = 0; t < sizeof sizes / sizeof *sizes; t++) {
      size_t n = sizes[t], total = 0;
      for (int r = 0; r < ax_codec_rounds(c); r++) total += ax_codec_factor_len(c, n, r);
      ck_assert_uint_eq(ax_codec_max_bytes(c, n), 4 * total);
      AxCodecState *st = state_of(c, n);
      float *out = tu_zeros(n + 1);
      for (int input = 0; input < 3; input++) {
        float *x = input == 0 ? tu_random(n + 1, 1.0f, 10 + t) : tu_zeros(n + 1);
        if (input == 2)
          for (size_t i = 0; i < n; i++) x[i] = 0.5f;
        AxCodecCtx ctx = {9, (uint64_t)input, t, NULL, 1};
        linear_sync(c, &st, &ctx, &x, 1, n, &out);
        for (size_t i = 0; i < n; i++) {
          EXPECT_MSG(isfinite(out[i]), "%s n=%zu: %g at %zu", specs[s], n, out[i], i);
          if (input == 1 && !strstr(specs[s], "ef=1")) EXPECT(out[i] == 0); /* ef: the residual */
        }
      }
      ax_codec_state_free(st);
    }
    ax_codec_free(c);
  }
}
END_TEST

START_TEST(randk_picks_the_same_indices_on_every_rank) {
  size_t n = 1000;
  AxCodec *c = parse("randk:ratio=0.05");
  size_t k = ax_codec_factor_len(c, n, 0);
  ck_assert_uint_eq(k, 50);
  ck_assert_uint_eq(ax_codec_max_bytes(c, n), 4 * k);
  AxCodecState *st[2] = {state_of(c, n), state_of(c, n)};
  float *a = tu_random(n, 1.0f, 20), *b = tu_random(n, 1.0f, 21), *ra = tu_zeros(n),
        *rb = tu_zeros(n);
  AxCodecCtx ctx = {4, 10, 6, NULL, 1};
  linear_sync(c, st, &ctx, (float *[]){a, b}, 2, n, (float *[]){ra, rb});
  size_t kept = 0;
  for (size_t i = 0; i < n; i++) {
    EXPECT(ra[i] == rb[i]);
    if (ra[i] != 0) {
      EXPECT(ra[i] == a[i] + b[i]); /* the sum of both ranks' values there */
      kept++;
    }
  }
  ck_assert_uint_eq(kept, k);
  /* the indices depend on (seed, step, range), not on the values */
  float *ones = tu_zeros(n), *f1 = tu_zeros(k), *f2 = tu_zeros(k);
  for (size_t i = 0; i < n; i++) ones[i] = (float)(i + 1);
  ck_assert_int_eq(ax_codec_factor(c, st[0], &ctx, ones, n, 0, f1), AX_OK);
  for (size_t j = 0; j < k; j++) EXPECT(ra[(size_t)f1[j] - 1] != 0);
  AxCodecCtx next = {4, 11, 6, NULL, 1};
  ck_assert_int_eq(ax_codec_factor(c, st[0], &next, ones, n, 0, f2), AX_OK);
  EXPECT(memcmp(f1, f2, k * sizeof *f1) != 0);
  ax_codec_state_free(st[0]);
  ax_codec_state_free(st[1]);
  ax_codec_free(c);
}
END_TEST

/* A rows x cols matrix of rank r: A B^T with A, B uniform. */
static float *low_rank(size_t rows, size_t cols, int r, uint64_t seed) {
  float *a = tu_random(rows * (size_t)r, 1.0f, seed), *b = tu_random(cols * (size_t)r, 1.0f, seed + 1);
  float *m = tu_zeros(rows * cols);
  for (size_t i = 0; i < rows; i++)
    for (size_t j = 0; j < cols; j++)
      for (int l = 0; l < r; l++) m[i * cols + j] += a[i * r + l] * b[j * r + l];
  return m;
}

START_TEST(powersgd_rebuilds_a_rank_r_matrix) {
  size_t rows = 40, cols = 32, n = rows * cols;
  float *m = low_rank(rows, cols, 3, 30), *out = tu_zeros(n);
  double mx = 0;
  for (size_t i = 0; i < n; i++) mx = fmax(mx, fabs(m[i]));
  static const char *const specs[] = {"powersgd:rank=3,cols=32", "powersgd:rank=6,cols=32",
                                      "powersgd:rank=3,cols=32,ef=1"};
  for (size_t s = 0; s < 3; s++) {
    AxCodec *c = parse(specs[s]);
    AxCodecState *st = state_of(c, n);
    ck_assert_uint_eq(ax_codec_max_bytes(c, n),
                      4 * (ax_codec_factor_len(c, n, 0) + ax_codec_factor_len(c, n, 1)));
    for (uint64_t step = 0; step < 3; step++) { /* the first Q from the seed, then warm */
      AxCodecCtx ctx = {5, step, 0, NULL, 1};
      linear_sync(c, &st, &ctx, &m, 1, n, &out);
      EXPECT_MSG(tu_max_rel(out, m, n, 1e-5 * mx, 0) <= 1, "%s step %d", specs[s], (int)step);
    }
    if (strstr(specs[s], "ef=1")) { /* nothing left behind */
      size_t len;
      float *saved = saved_floats(st, &len, NULL);
      for (size_t i = 0; i < n; i++) EXPECT(fabs(saved[i]) < 1e-4 * mx);
    }
    ax_codec_state_free(st);
    ax_codec_free(c);
  }
  AxCodec *c = parse("powersgd:rank=2,cols=32"); /* rank 2 cannot hold it */
  AxCodecState *st = state_of(c, n);
  AxCodecCtx ctx = {5, 0, 0, NULL, 1};
  linear_sync(c, &st, &ctx, &m, 1, n, &out);
  EXPECT(tu_max_rel(out, m, n, 1e-3 * mx, 0) > 1);
  ax_codec_state_free(st);
  ax_codec_free(c);
}
END_TEST

START_TEST(powersgd_factors_of_two_ranks_rebuild_their_sum) {
  size_t n = 1000; /* cols = 32, rows = 32, the last row short */
  AxCodec *c = parse("powersgd:rank=4");
  float *a = tu_random(n, 1.0f, 40), *b = tu_random(n, 1.0f, 41), *sum = tu_zeros(n);
  for (size_t i = 0; i < n; i++) sum[i] = a[i] + b[i];
  float *ra = tu_zeros(n), *rb = tu_zeros(n), *r1 = tu_zeros(n);
  AxCodecState *two[2] = {state_of(c, n), state_of(c, n)}, *one = state_of(c, n);
  for (uint64_t step = 0; step < 3; step++) {
    AxCodecCtx ctx = {6, step, 7, NULL, 1};
    linear_sync(c, two, &ctx, (float *[]){a, b}, 2, n, (float *[]){ra, rb});
    linear_sync(c, &one, &ctx, &sum, 1, n, &r1);
    ck_assert_int_eq(memcmp(ra, rb, n * sizeof *ra), 0); /* every rank rebuilds the same bits */
    EXPECT_MSG(tu_max_rel(ra, r1, n, 1e-4, 1e-3) <= 1, "step %d", (int)step);
  }
  /* the warm Q of a checkpointed state resumes bit for bit */
  size_t bytes = ax_codec_state_bytes(two[0]);
  uint8_t *ckpt = tu_alloc(bytes);
  AxCodecState *resumed = state_of(c, n);
  ck_assert_int_eq(ax_codec_state_save(two[0], ckpt), AX_OK);
  ck_assert_int_eq(ax_codec_state_load(resumed, ckpt, bytes), AX_OK);
  AxCodecCtx ctx = {6, 3, 7, NULL, 1};
  float *fa = tu_zeros(32 * 4), *fr = tu_zeros(32 * 4);
  ck_assert_int_eq(ax_codec_factor(c, two[0], &ctx, a, n, 0, fa), AX_OK);
  ck_assert_int_eq(ax_codec_factor(c, resumed, &ctx, a, n, 0, fr), AX_OK);
  ck_assert_int_eq(memcmp(fa, fr, 32 * 4 * sizeof *fa), 0);
  ax_codec_state_free(resumed);
  ax_codec_state_free(two[0]);
  ax_codec_state_free(two[1]);
  ax_codec_state_free(one);
  ax_codec_free(c);
}
END_TEST

/* A pipeline link (Optimus-CC): one sender with the state, a stateless receiver. */
START_TEST(powersgd_link_message_is_p_and_q_and_rebuilds_a_rank_r_matrix) {
  size_t rows = 48, cols = 32, n = rows * cols;
  float *m = low_rank(rows, cols, 3, 31), *out = tu_zeros(n);
  double mx = 0;
  for (size_t i = 0; i < n; i++) mx = fmax(mx, fabs(m[i]));
  AxCodec *c = parse("powersgd:rank=4,cols=32");
  AxCodecState *st = state_of(c, n);
  ck_assert_uint_eq(ax_codec_p2p_max_bytes(c, n), (rows + cols) * 4 * 4);
  uint8_t *msg = tu_alloc(ax_codec_p2p_max_bytes(c, n));
  for (uint64_t step = 0; step < 2; step++) {
    AxCodecCtx ctx = {9, step, 1, NULL, 1};
    size_t bytes;
    ck_assert_int_eq(ax_codec_p2p_encode(c, st, &ctx, m, n, msg, &bytes), AX_OK);
    ck_assert_uint_eq(bytes, (rows + cols) * 4 * 4); /* (n + m) x r x 4 */
    ck_assert_int_eq(ax_codec_p2p_decode(c, &ctx, msg, bytes, out, n), AX_OK);
    EXPECT_MSG(tu_max_rel(out, m, n, 1e-5 * mx, 0) <= 1, "step %d", (int)step);
  }
  ck_assert_int_eq(ax_codec_p2p_decode(c, NULL, msg, 8, out, n), AX_ERR); /* a short message */
  EXPECT(strstr(ax_error_message(), "link message of 8 bytes") != NULL);
  ax_error_clear();
  AxCodec *r = parse("randk:ratio=0.1"); /* linear, but indices need no message: not a link */
  AxCodecState *rst = state_of(r, n);
  AxCodecCtx ctx = {9, 0, 1, NULL, 1};
  size_t bytes;
  ck_assert_int_eq(ax_codec_p2p_encode(r, rst, &ctx, m, n, msg, &bytes), AX_ERR);
  EXPECT(strstr(ax_error_message(), "cannot compress a point-to-point link") != NULL);
  ax_error_clear();
  ax_codec_state_free(rst);
  ax_codec_free(r);
  ax_codec_state_free(st);
  ax_codec_free(c);
}
END_TEST

/* Lazy error propagation telescopes: over a run of messages, what the receiver rebuilt sums to
 * what was sent plus the residual at the start minus the residual at the end. */
START_TEST(link_error_feedback_telescopes) {
  size_t n = 24 * 16;
  AxCodec *c = parse("powersgd:rank=2,cols=16,ef=1");
  AxCodecState *st = state_of(c, n);
  uint8_t *msg = tu_alloc(ax_codec_p2p_max_bytes(c, n));
  float *got = tu_zeros(n), *sum_got = tu_zeros(n), *sum_true = tu_zeros(n);
  size_t len;
  for (int round = 0; round < 2; round++) { /* round 0 leaves a residual: e_start != 0 */
    float *e_start = saved_floats(st, &len, NULL);
    double e_size = 0;
    for (size_t i = 0; i < n; i++) e_size += fabs(e_start[i]);
    EXPECT(round == 0 ? e_size == 0 : e_size > 0);
    memset(sum_got, 0, n * sizeof *sum_got);
    memset(sum_true, 0, n * sizeof *sum_true);
    for (int mb = 0; mb < 5; mb++) {
      float *g = tu_random(n, 1.0f, 100 + 10 * round + mb);
      AxCodecCtx ctx = {3, (uint64_t)round, 0, NULL, 1};
      size_t bytes;
      ck_assert_int_eq(ax_codec_p2p_encode(c, st, &ctx, g, n, msg, &bytes), AX_OK);
      ck_assert_int_eq(ax_codec_p2p_decode(c, &ctx, msg, bytes, got, n), AX_OK);
      for (size_t i = 0; i < n; i++) sum_got[i] += got[i], sum_true[i] += g[i];
    }
    float *e_end = saved_floats(st, &len, NULL);
    double worst = 0, scale = 0;
    for (size_t i = 0; i < n; i++) {
      double want = (double)sum_true[i] + e_start[i] - e_end[i];
      worst = fmax(worst, fabs(sum_got[i] - want));
      scale = fmax(scale, fabs(sum_true[i]));
    }
    EXPECT_MSG(worst <= 1e-5 * scale, "round %d: off by %g of %g", round, worst, scale);
  }
  ax_codec_state_free(st);
  ax_codec_free(c);
}
END_TEST

START_TEST(linear_and_encode_calls_are_not_mixed_up) {
  AxCodec *p = parse("powersgd"), *o = parse("onebit");
  float x[8] = {0}, f[8];
  uint8_t buf[64];
  size_t bytes;
  AxCodecCtx ctx = {0, 0, 0, NULL, 1};
  AxCodecState *st = state_of(p, 8);
  ax_error_clear();
  ck_assert_int_eq(ax_codec_encode(p, st, &ctx, x, 8, buf, &bytes), AX_ERR);
  ck_assert_ptr_nonnull(strstr(ax_error_text(), "linear"));
  ax_error_clear();
  ck_assert_int_eq(ax_codec_factor(o, NULL, &ctx, x, 8, 0, f), AX_ERR);
  ax_error_clear();
  ck_assert_int_eq(ax_codec_factor(p, NULL, &ctx, x, 8, 0, f), AX_ERR); /* needs its state */
  ax_error_clear();
  ck_assert_int_eq(ax_codec_factor(p, st, &ctx, x, 9, 0, f), AX_ERR); /* another range */
  ax_error_clear();
  ck_assert_int_eq(ax_codec_encode(o, NULL, &ctx, x, 8, buf + 1, &bytes), AX_ERR); /* aligned */
  ax_error_clear();
  ax_codec_state_free(st);
  ax_codec_free(p);
  ax_codec_free(o);
}
END_TEST

/* ---------------------------------------------------------------- operators */

START_TEST(vector_operators_match_their_scalar_paths) {
  static const size_t sizes[] = {0, 1, 15, 16, 31, 33, 100, 257, 4099, 8192, 8192 + 40};
  AxCrng r = ax_crng_key(1, 2, 3);
  for (size_t t = 0; t < sizeof sizes / sizeof *sizes; t++) {
    size_t n = sizes[t];
    float *x = tu_random(n + 1, 2.0f, 60 + t);
    if (n > 3) x[1] = 0.0f, x[2] = -0.0f, x[3] = NAN;
    EXPECT(ax_op_sum_abs(x + 4, n > 4 ? n - 4 : 0) ==
              ax_op_sum_abs_scalar(x + 4, n > 4 ? n - 4 : 0));
    EXPECT(ax_op_sum_sq(x + 4, n > 4 ? n - 4 : 0) ==
              ax_op_sum_sq_scalar(x + 4, n > 4 ? n - 4 : 0));
    AxSignStats sv, ss;
    uint8_t *bv = tu_alloc(n / 8 + 1), *bs = tu_alloc(n / 8 + 1);
    ax_op_sign_pack(x, n, bv, &sv);
    ax_op_sign_pack_scalar(x, n, bs, &ss);
    EXPECT(!memcmp(bv, bs, ax_bits_bytes(n, 1)) && sv.sum_pos == ss.sum_pos &&
              sv.sum_neg == ss.sum_neg && sv.n_pos == ss.n_pos && sv.n_neg == ss.n_neg);
    float *acc = tu_random(n + 1, 1.0f, 90 + t), *sum = tu_zeros(n + 1); /* fused feedback */
    for (size_t i = 0; i < n; i++) sum[i] = acc[i] + x[i];
    ax_op_sign_stats(sum, n, &ss);
    ax_op_add_sign_stats(acc, x, n, &sv);
    EXPECT(!memcmp(acc, sum, n * sizeof *acc) && sv.sum_pos == ss.sum_pos &&
           sv.sum_neg == ss.sum_neg && sv.n_pos == ss.n_pos && sv.n_neg == ss.n_neg);
    ax_op_sign_pack(sum, n, bs, NULL);
    ax_op_sign_pack_sub(acc, n, -0.25f, 0.5f, bv);
    EXPECT(!memcmp(bv, bs, ax_bits_bytes(n, 1)));
    for (size_t i = 0; i < n; i++) {
      float want = sum[i] - (sum[i] >= 0 ? 0.5f : -0.25f);
      EXPECT(acc[i] == want || (isnan(acc[i]) && isnan(want)));
    }
    uint8_t *cv = tu_alloc(n + 1), *cs = tu_alloc(n + 1), *back = tu_alloc(n + 1);
    ax_op_quantize(x, n, 3.0f, 7, r, 5, cv);
    ax_op_quantize_scalar(x, n, 3.0f, 7, r, 5, cs);
    EXPECT(!memcmp(cv, cs, n));
    ax_op_threshold_codes(x, n, 0.5f, cv);
    ax_op_threshold_codes_scalar(x, n, 0.5f, cs);
    EXPECT(!memcmp(cv, cs, n));
    for (int w = 1; w <= 8; w *= 2) { /* pack and unpack */
      for (size_t i = 0; i < n; i++) cs[i] = (uint8_t)((i * 7 + t) & ((1u << w) - 1));
      ax_op_pack(cs, n, w, bv = tu_alloc(n + 1));
      uint8_t *ps = tu_alloc(n + 1);
      ax_op_pack_scalar(cs, n, w, ps);
      EXPECT(!memcmp(bv, ps, ax_bits_bytes(n, w)));
      ax_op_unpack(bv, n, w, back);
      EXPECT(!memcmp(back, cs, n));
    }
    uint32_t *iv = tu_alloc((n + 1) * 4), *is = tu_alloc((n + 1) * 4);
    size_t cnt = ax_op_select_ge(x, n, 1.0f, iv, n);
    ck_assert_uint_eq(cnt, ax_op_select_ge_scalar(x, n, 1.0f, is, n));
    ck_assert_uint_eq(cnt, ax_op_count_ge(x, n, 1.0f));
    EXPECT(!memcmp(iv, is, cnt * 4));
    float *uv = tu_zeros(n + 1), *us = tu_zeros(n + 1);
    ax_op_random_unit(r, 3, n, uv);
    ax_op_random_unit_scalar(r, 3, n, us);
    EXPECT(!memcmp(uv, us, n * 4));
    for (size_t i = 0; i < n; i++) EXPECT(uv[i] >= 0 && uv[i] < 1);
    if (n > 10) { /* a piece of the range draws what the whole range draws there */
      ax_op_random_unit(r, 3 + 10, n - 10, us);
      EXPECT(!memcmp(uv + 10, us, (n - 10) * 4));
    }
  }
}
END_TEST

START_TEST(sampled_threshold_is_exact_with_a_full_sample) {
  size_t n = 5000;
  float *x = tu_random(n, 1.0f, 70), *scratch = tu_zeros(n), *sorted = tu_zeros(n);
  for (size_t i = 0; i < n; i++) sorted[i] = fabsf(x[i]);
  float t = ax_op_sample_threshold(x, n, 100, ax_crng_key(0, 0, 0), n, 0, scratch);
  EXPECT(t == ax_op_nth_largest(sorted, n, 99));
  ck_assert_uint_eq(ax_op_count_ge(x, n, t), 100);
  /* from a 10% sample the estimate keeps about 100 */
  t = ax_op_sample_threshold(x, n, 100, ax_crng_key(0, 0, 0), 500, 0, scratch);
  size_t kept = ax_op_count_ge(x, n, t);
  EXPECT_MSG(kept >= 50 && kept <= 200, "kept %zu", kept);
}
END_TEST

int main(void) {
  Suite *s = suite_create("codec");
  TCase *tc = tu_tcase(s, "codec", 120);
  tcase_add_test(tc, canonical_specs_write_every_parameter);
  tcase_add_test(tc, a_capped_copy_clamps_only_the_rank);
  tcase_add_test(tc, powersgd_auto_rank_sends_a_tenth_of_each_matrix);
  tcase_add_test(tc, spec_defaults_add_only_the_keys_not_given);
  tcase_add_test(tc, bad_specs_fail_with_one_message_naming_codec_and_key);
  tcase_add_test(tc, identity_is_exact_bit_for_bit);
  tcase_add_test(tc, onebit_keeps_every_sign_and_the_scales);
  tcase_add_test(tc, tbq_is_exact_on_its_levels);
  tcase_add_test(tc, terngrad_is_unbiased_for_every_width);
  tcase_add_test(tc, qsgd_is_unbiased);
  tcase_add_test(tc, scaled_codecs_pass_non_finite_input_on);
  tcase_add_test(tc, stochastic_codecs_are_deterministic_given_the_context);
  tcase_add_test(tc, topk_keeps_exactly_the_k_largest);
  tcase_add_test(tc, decode_add_adds);
  tcase_add_test(tc, encoded_sizes_stay_within_max_bytes);
  tcase_add_test(tc, linear_codecs_handle_every_size);
  tcase_add_test(tc, error_feedback_residual_is_exactly_what_encoding_lost);
  tcase_add_test(tc, error_feedback_stays_bounded);
  tcase_add_test(tc, dgc_corrects_momentum_once_and_masks_what_it_sends);
  tcase_add_test(tc, dgc_warms_up_its_sparsity);
  tcase_add_test(tc, dgc_under_adam_sends_the_largest_updates);
  tcase_add_test(tc, onebit_momentum_is_one_bit_adams);
  tcase_add_test(tc, momentum_handed_over_is_where_prepare_starts);
  tcase_add_test(tc, state_checkpoint_round_trips_exactly);
  tcase_add_test(tc, randk_picks_the_same_indices_on_every_rank);
  tcase_add_test(tc, powersgd_rebuilds_a_rank_r_matrix);
  tcase_add_test(tc, powersgd_factors_of_two_ranks_rebuild_their_sum);
  tcase_add_test(tc, powersgd_link_message_is_p_and_q_and_rebuilds_a_rank_r_matrix);
  tcase_add_test(tc, link_error_feedback_telescopes);
  tcase_add_test(tc, linear_and_encode_calls_are_not_mixed_up);
  tcase_add_test(tc, vector_operators_match_their_scalar_paths);
  tcase_add_test(tc, sampled_threshold_is_exact_with_a_full_sample);
  return tu_run(s);
}
