/* check_cuda_compress.c — the compression kernels (src/backend/cuda_compress.cu) against the
 * host operators of mpi/compress/ops.h (make check-cuda). Linked with the kernels' object and
 * cudart directly (they are not backend ops, so the plugin's registry does not reach them).
 *
 * Every kernel runs on random inputs of lengths 0, 1, 7, 8, 1000 and 2^20 + 3; the inputs of
 * the element-wise ones also hold 0, -0, the thresholds themselves, +-inf and NaN. Element-wise
 * results must equal the host's bit for bit (floats: the same bits, or both NaN: the GPU's
 * arithmetic gives the canonical NaN, not the operand's payload); counts and indices exactly.
 * Sums (sum, sum|x|, sum x^2, the sign statistics' sums) are summed in another order on the
 * GPU: they must agree within 1e-10 of sum |x| (or of sum x^2). max |x| must be exact.
 * Without a GPU (no driver or no device) it prints "skipped: no GPU" and exits 0. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/compress/ops.h"
#include "src/backend/cuda_compress.h"

static int g_fails;
static cudaStream_t g_s;

#define CK(call)                                                                                 \
  do {                                                                                           \
    cudaError_t e_ = (call);                                                                     \
    if (e_ != cudaSuccess) {                                                                     \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));     \
      exit(1);                                                                                   \
    }                                                                                            \
  } while (0)

static void fail(const char *what, size_t n, const char *detail) {
  printf("FAIL: %s (n = %zu): %s\n", what, n, detail);
  g_fails++;
}

/* ------------------------------------------------------------------ data */

static uint64_t g_rng = 0x1234567890ABCDEFull;
static uint64_t next_u64(void) {
  g_rng ^= g_rng << 13, g_rng ^= g_rng >> 7, g_rng ^= g_rng << 17;
  return g_rng;
}
static float next_float(float scale) { /* uniform in [-scale, scale) */
  return scale * (2.0f * (float)(next_u64() >> 40) / 16777216.0f - 1.0f);
}

/* n random floats; with specials, every 13th one of 0, -0, +-0.5, +-1, +-inf, NaN */
static float *random_floats(size_t n, int specials) {
  static const float sp[] = {0.0f, -0.0f, 0.5f, -0.5f, 1.0f, -1.0f, INFINITY, -INFINITY, NAN};
  float *x = malloc((n ? n : 1) * sizeof *x);
  for (size_t i = 0; i < n; i++)
    x[i] = specials && i % 13 == 5 ? sp[(i / 13) % 9] : next_float(2.0f);
  return x;
}
static uint8_t *random_bytes(size_t n, unsigned mask) {
  uint8_t *b = malloc(n ? n : 1);
  for (size_t i = 0; i < n; i++) b[i] = (uint8_t)(next_u64() >> 56) & mask;
  return b;
}

/* ------------------------------------------------------------------ device buffers */

static void *dev(size_t bytes) {
  void *p;
  CK(cudaMalloc(&p, bytes ? bytes : 1));
  return p;
}
static void *up(const void *h, size_t bytes) {
  void *p = dev(bytes);
  if (bytes) CK(cudaMemcpy(p, h, bytes, cudaMemcpyHostToDevice));
  return p;
}
static void *down(const void *d, size_t bytes) { /* after the stream is done */
  void *h = malloc(bytes ? bytes : 1);
  CK(cudaStreamSynchronize(g_s));
  if (bytes) CK(cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost));
  return h;
}

/* ------------------------------------------------------------------ comparisons */

static int same_f(float a, float b) {
  return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof a) == 0;
}
static void expect_floats(const char *what, size_t n, const float *want, const float *dgot) {
  float *got = down(dgot, n * sizeof *got);
  for (size_t i = 0; i < n; i++)
    if (!same_f(want[i], got[i])) {
      char d[96];
      snprintf(d, sizeof d, "[%zu] %.9g, host %.9g", i, got[i], want[i]);
      fail(what, n, d);
      break;
    }
  free(got);
}
static void expect_bytes(const char *what, size_t n, const void *want, const void *dgot) {
  uint8_t *got = down(dgot, n);
  if (n && memcmp(want, got, n) != 0) fail(what, n, "bytes differ");
  free(got);
}
static void expect_close(const char *what, size_t n, double want, double got, double scale) {
  if (want == got || (isnan(want) && isnan(got))) return; /* infinities too */
  if (!(fabs(got - want) <= 1e-10 * (scale > 1 ? scale : 1))) {
    char d[96];
    snprintf(d, sizeof d, "%.17g, host %.17g", got, want);
    fail(what, n, d);
  }
}

/* ------------------------------------------------------------------ the tests */

static void test_reduce(size_t n) {
  float *x = random_floats(n, 0), *dx = up(x, n * 4);
  double *part = dev(AXC_PARTIALS * sizeof(double)), *dout = dev(sizeof(double));
  double scale[3] = {ax_op_sum_abs(x, n), ax_op_sum_abs(x, n), ax_op_sum_sq(x, n)};
  double want[3] = {ax_op_sum(x, n), ax_op_sum_abs(x, n), ax_op_sum_sq(x, n)};
  static const char *names[3] = {"sum", "sum_abs", "sum_sq"};
  for (int k = 0; k < 3; k++) {
    CK(axc_sum(g_s, (AxcSumKind)k, dx, n, part, dout));
    double *got = down(dout, sizeof(double));
    expect_close(names[k], n, want[k], *got, scale[k]);
    free(got);
  }
  float *fpart = dev(AXC_PARTIALS * sizeof(float)), *fout = dev(sizeof(float));
  for (int sp = 0; sp < 2; sp++) {
    float *y = random_floats(n, sp), *dy = up(y, n * 4), m = ax_op_max_abs(y, n);
    CK(axc_max_abs(g_s, dy, n, fpart, fout));
    expect_floats(sp ? "max_abs (specials)" : "max_abs", 1, &m, fout);
    free(y), cudaFree(dy);
  }
  free(x), cudaFree(dx), cudaFree(part), cudaFree(dout), cudaFree(fpart), cudaFree(fout);
}

/* scale, add, scale_add: in place on a copy of x */
static void test_map(size_t n) {
  float *x = random_floats(n, 1), *y = random_floats(n, 1), *dx = up(x, n * 4);
  float *dy = up(y, n * 4);
  ax_op_scale(x, n, 0.37f);
  CK(axc_scale(g_s, dx, n, 0.37f));
  expect_floats("scale", n, x, dx);
  ax_op_add(x, y, n);
  CK(axc_add(g_s, dx, dy, n));
  expect_floats("add", n, x, dx);
  ax_op_scale_add(x, 0.9f, y, n);
  CK(axc_scale_add(g_s, dx, 0.9f, dy, n));
  expect_floats("scale_add", n, x, dx);
  free(x), free(y), cudaFree(dx), cudaFree(dy);
}

static void test_codes(size_t n) {
  float *x = random_floats(n, 1), *dx = up(x, n * 4);
  uint8_t *want = malloc(n ? n : 1), *dc = dev(n);
  ax_op_threshold_codes(x, n, 0.5f, want);
  CK(axc_threshold_codes(g_s, dx, n, 0.5f, dc));
  expect_bytes("threshold_codes", n, want, dc);
  static const int levels[] = {1, 7, 127};
  AxCrng r = ax_crng_key(42, 7, AX_CRNG_QUANT);
  uint64_t first = 0xFFFFFF00ull; /* the counter's high half changes inside the longer runs */
  for (int l = 0; l < 3; l++) {
    float mul = (float)levels[l] / 2.0f;
    ax_op_quantize(x, n, mul, levels[l], r, first, want);
    CK(axc_quantize(g_s, dx, n, mul, levels[l], r, first, dc));
    expect_bytes("quantize", n, want, dc);
  }
  float *u = malloc((n ? n : 1) * 4), *du = dev(n * 4);
  ax_op_random_unit(r, first, n, u);
  CK(axc_random_unit(g_s, r, first, n, du));
  expect_floats("random_unit", n, u, du);
  free(x), free(want), free(u), cudaFree(dx), cudaFree(dc), cudaFree(du);
}

static void test_lookup(size_t n) {
  uint8_t *codes = random_bytes(n, 0xFF), *dc = up(codes, n);
  float *table = random_floats(256, 1), *dt = up(table, 256 * 4);
  float *out = random_floats(n, 0), *dout = up(out, n * 4);
  for (int add = 0; add < 2; add++) {
    ax_op_lookup(codes, n, table, out, add);
    CK(axc_lookup(g_s, dc, n, dt, dout, add));
    expect_floats(add ? "lookup (add)" : "lookup", n, out, dout);
  }
  free(codes), free(table), free(out), cudaFree(dc), cudaFree(dt), cudaFree(dout);
}

static void test_bits(size_t n) {
  static const int widths[] = {1, 2, 4, 8};
  for (int w = 0; w < 4; w++) {
    int width = widths[w];
    size_t nb = ax_bits_bytes(n, width);
    uint8_t *codes = random_bytes(n, (1u << width) - 1), *dc = up(codes, n);
    uint8_t *packed = malloc(nb ? nb : 1), *dp = dev(nb), *dback = dev(n);
    ax_op_pack(codes, n, width, packed);
    CK(axc_pack(g_s, dc, n, width, dp));
    expect_bytes("pack", nb, packed, dp);
    uint8_t *dpacked = up(packed, nb);
    CK(axc_unpack(g_s, dpacked, n, width, dback));
    ax_op_unpack(packed, n, width, codes);
    expect_bytes("unpack", n, codes, dback);
    free(codes), free(packed), cudaFree(dc), cudaFree(dp), cudaFree(dback), cudaFree(dpacked);
  }
}

static void test_signs(size_t n) {
  float *x = random_floats(n, 1), *dx = up(x, n * 4);
  size_t nb = (n + 7) / 8;
  uint8_t *bits = malloc(nb ? nb : 1), *db = dev(nb);
  AxSignStats st;
  AxcSignStats *part = dev(AXC_PARTIALS * sizeof *part), *dst = dev(sizeof *dst);
  ax_op_sign_pack(x, n, bits, &st);
  CK(axc_sign_pack(g_s, dx, n, db, part, dst));
  expect_bytes("sign_pack bits", nb, bits, db);
  AxcSignStats *got = down(dst, sizeof *got);
  if (got->n_pos != st.n_pos || got->n_neg != st.n_neg) fail("sign_pack counts", n, "differ");
  double sx = st.sum_pos - st.sum_neg; /* sum |x| of the counted values */
  expect_close("sign_pack sum_pos", n, st.sum_pos, got->sum_pos, sx);
  expect_close("sign_pack sum_neg", n, st.sum_neg, got->sum_neg, sx);
  CK(cudaMemset(db, 0xAB, nb ? nb : 1));
  CK(axc_sign_pack(g_s, dx, n, db, NULL, NULL));
  expect_bytes("sign_pack bits (no stats)", nb, bits, db);
  float *out = random_floats(n, 0), *dout = up(out, n * 4);
  for (int add = 0; add < 2; add++) {
    ax_op_sign_unpack(bits, n, -0.75f, 1.25f, out, add);
    CK(axc_sign_unpack(g_s, db, n, -0.75f, 1.25f, dout, add));
    expect_floats(add ? "sign_unpack (add)" : "sign_unpack", n, out, dout);
  }
  free(x), free(bits), free(got), free(out);
  cudaFree(dx), cudaFree(db), cudaFree(part), cudaFree(dst), cudaFree(dout);
}

/* count and select >= 1 (cap: all, and half), then gather and scatter at the indices */
static void test_select(size_t n) {
  float *x = random_floats(n, 1), *dx = up(x, n * 4);
  unsigned long long *scratch = dev(AXC_SELECT_SCRATCH * 8), *dcount = dev(8);
  size_t c = ax_op_count_ge(x, n, 1.0f);
  CK(axc_count_ge(g_s, dx, n, 1.0f, scratch, dcount));
  unsigned long long *got = down(dcount, 8);
  if (*got != c) fail("count_ge", n, "counts differ");
  free(got);
  uint32_t *idx = malloc((c ? c : 1) * 4), *didx = dev(c * 4);
  size_t caps[2] = {c, c / 2};
  for (int k = 0; k < 2; k++) {
    ax_op_select_ge(x, n, 1.0f, idx, caps[k]);
    CK(axc_select_ge(g_s, dx, n, 1.0f, didx, caps[k], scratch, dcount));
    got = down(dcount, 8);
    if (*got != c) fail("select_ge", n, "counts differ");
    expect_bytes("select_ge indices", caps[k] * 4, idx, didx);
    free(got);
  }
  ax_op_select_ge(x, n, 1.0f, idx, c);
  CK(cudaMemcpy(didx, idx, c * 4, cudaMemcpyHostToDevice));
  float *vals = malloc((c ? c : 1) * 4), *dvals = dev(c * 4);
  ax_op_gather(x, idx, c, vals);
  CK(axc_gather(g_s, dx, didx, c, dvals));
  expect_floats("gather", c, vals, dvals);
  float *out = random_floats(n, 0), *dout = up(out, n * 4);
  for (int add = 0; add < 2; add++) {
    ax_op_scatter(out, idx, vals, c, add);
    CK(axc_scatter(g_s, dout, didx, dvals, c, add));
    expect_floats(add ? "scatter (add)" : "scatter", n, out, dout);
  }
  free(x), free(idx), free(vals), free(out);
  cudaFree(dx), cudaFree(scratch), cudaFree(dcount), cudaFree(didx), cudaFree(dvals);
  cudaFree(dout);
}

int main(void) {
  int devices = 0;
  cudaError_t e = cudaGetDeviceCount(&devices);
  if (e != cudaSuccess || devices == 0) {
    printf("skipped: no GPU (cudaGetDeviceCount: %s)\n",
           e != cudaSuccess ? cudaGetErrorString(e) : "no device");
    return 0;
  }
  CK(cudaStreamCreate(&g_s));
  static const size_t lengths[] = {0, 1, 7, 8, 1000, (1u << 20) + 3};
  for (int i = 0; i < 6; i++) {
    size_t n = lengths[i];
    test_reduce(n);
    test_map(n);
    test_codes(n);
    test_lookup(n);
    test_bits(n);
    test_signs(n);
    test_select(n);
  }
  CK(cudaStreamDestroy(g_s));
  if (g_fails) {
    printf("check_cuda_compress: %d failure(s)\n", g_fails);
    return 1;
  }
  printf("check_cuda_compress: all kernels match the host operators\n");
  return 0;
}
