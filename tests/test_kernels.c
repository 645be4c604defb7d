/* test_kernels.c — CPU kernels against plain references: fast exp/tanh against libm, the
 * vectorized multithreaded AdamW against the scalar reference, causal softmax rows, GEMM
 * transposes and batching, kernels that must not depend on the thread count, and dropout's
 * masks (placed by the element's place in the whole tensor). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/dropout.h"
#include "models/layers.h"
#include "offload/adamw.h"
#include "src/backend/vecmath.h"
#include "src/core/bf16.h"
#include "src/core/error.h"
#include "src/core/fp16.h"
#include "src/core/threadpool.h"
#include "testutil.h"

START_TEST(exp_and_tanh_accuracy) {
  double worst_exp = 0, worst_tanh = 0;
  for (int i = -8700; i <= 8800; i++) {
    float x = i * 0.01f;
    double e = exp((double)x), te = fabs(ax_expf(x) - e) / e;
    worst_exp = te > worst_exp ? te : worst_exp;
  }
  for (int i = -2000; i <= 2000; i++) {
    float x = i * 0.005f;
    double t = tanh((double)x), tt = fabs(ax_tanhf(x) - t);
    worst_tanh = tt > worst_tanh ? tt : worst_tanh;
  }
  ck_assert_msg(worst_exp < 4e-7, "exp relative error %g", worst_exp);
  ck_assert_msg(worst_tanh < 3e-7, "tanh absolute error %g", worst_tanh);
  ck_assert(isnan(ax_expf(NAN)) && isnan(ax_tanhf(NAN))); /* and no UB on the way (UBSan) */
#ifdef AX_SIMD_AVX2
  float in[8] = {-3.1f, -0.7f, -0.01f, 0.0f, 0.3f, 0.62f, 0.63f, 9.0f}, out[8];
  _mm256_storeu_ps(out, ax_tanh8(_mm256_loadu_ps(in)));
  for (int i = 0; i < 8; i++) ck_assert_float_eq(out[i], ax_tanhf(in[i]));
  _mm256_storeu_ps(out, ax_exp8(_mm256_loadu_ps(in)));
  for (int i = 0; i < 8; i++) ck_assert_float_eq(out[i], ax_expf(in[i]));
#endif
}
END_TEST

START_TEST(adamw_matches_reference) {
  size_t n = 1003; /* odd: vector body and scalar tail */
  float *p = tu_random(n, 1.0f, 1), *g = tu_random(n, 0.1f, 2);
  float *m = tu_random(n, 0.01f, 3), *v = tu_random(n, 0.01f, 4);
  for (size_t i = 0; i < n; i++) v[i] = fabsf(v[i]);
  float *p2 = tu_alloc(n * 4), *m2 = tu_alloc(n * 4), *v2 = tu_alloc(n * 4);
  memcpy(p2, p, n * 4), memcpy(m2, m, n * 4), memcpy(v2, v, n * 4);
  AxAdamWHyper h = {.lr = 1e-2f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f,
                    .weight_decay = 0.1f, .step = 3, .grad_scale = 0.5f};
  /* three segments: decay, no decay, decay; updated by 3 threads with range cuts */
  AxParamSegment segs[3] = {{0, 400, 1, 0}, {400, 203, 0, 0}, {603, 400, 1, 0}};
  AxPool *pool = ax_pool_create(3, NULL, NULL);
  ax_adamw_update(pool, p, g, m, v, 0, n, segs, 3, &h);
  for (int s = 0; s < 3; s++) {
    size_t o = segs[s].offset;
    ax_adamw_ref(p2 + o, g + o, m2 + o, v2 + o, segs[s].count, &h, segs[s].decay);
  }
  ck_assert_double_le(tu_max_rel(p, p2, n, 1e-7, 1e-5), 1.0);
  ck_assert_double_le(tu_max_rel(m, m2, n, 1e-9, 1e-5), 1.0);
  ck_assert_double_le(tu_max_rel(v, v2, n, 1e-10, 1e-5), 1.0);
  /* decay off for the middle segment: with g = 0, m = v = 0 the parameter must not move */
  float pz = 1.5f, gz = 0, mz = 0, vz = 0;
  ax_adamw_range(&pz, &gz, &mz, &vz, 1, &h, 0);
  ck_assert_float_eq(pz, 1.5f);
  ax_adamw_range(&pz, &gz, &mz, &vz, 1, &h, 1);
  ck_assert_float_eq_tol(pz, 1.5f * (1 - 1e-2f * 0.1f), 1e-7f);
  ax_pool_destroy(pool);
}
END_TEST

/* Out of place: the in-place update's bits, inputs untouched, at every start offset of the
 * outputs (aligned and not, so both the streaming and the plain stores run). */
START_TEST(adamw_out_of_place_matches_in_place) {
  size_t n = 1003;
  AxAdamWHyper h = {.lr = 1e-2f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f,
                    .weight_decay = 0.1f, .step = 3, .grad_scale = 0.5f};
  float *g = tu_random(n, 0.1f, 2), *in = tu_random(3 * n, 0.01f, 5);
  for (size_t i = 2 * n; i < 3 * n; i++) in[i] = fabsf(in[i]);
  float *want = tu_alloc(3 * n * 4), *kept = tu_alloc(3 * n * 4);
  memcpy(kept, in, 3 * n * 4);
  size_t stride = 1008; /* n rounded up to 8 floats: po, mo, vo 32 bytes apart or not */
  float *out = tu_alloc((3 * stride + 3 * 16) * 4);
  for (int shift = 0; shift < 16; shift++)
    for (int same = 0; same < 2; same++) { /* same: the outputs share their alignment */
      size_t len = n - (size_t)shift;
      memcpy(want, in, 3 * n * 4);
      ax_adamw_range(want, g, want + n, want + 2 * n, len, &h, shift % 2);
      float *po = out + shift, *mo = po + stride + !same, *vo = mo + stride + 2 * !same;
      float *keep = same ? malloc(n * 4) : NULL; /* the weights written a second time */
      ax_adamw_range_to(po, mo, vo, keep, in, g, in + n, in + 2 * n, len, &h, shift % 2);
      ck_assert_int_eq(memcmp(po, want, len * 4), 0);
      ck_assert_int_eq(memcmp(mo, want + n, len * 4), 0);
      ck_assert_int_eq(memcmp(vo, want + 2 * n, len * 4), 0);
      ck_assert_int_eq(memcmp(in, kept, 3 * n * 4), 0);
      if (keep) ck_assert_int_eq(memcmp(keep, want, len * 4), 0);
      free(keep);
      /* keeping the weights in place, as the optimizer writing a memory checkpoint does */
      float *p = malloc(n * 4);
      ck_assert_ptr_nonnull(p);
      memcpy(p, in, n * 4);
      ax_adamw_range_to(po, mo, vo, p, p, g, in + n, in + 2 * n, len, &h, shift % 2);
      ck_assert_int_eq(memcmp(p, want, len * 4), 0);
      ck_assert_int_eq(memcmp(po, want, len * 4), 0);
      ck_assert_int_eq(memcmp(vo, want + 2 * n, len * 4), 0);
      free(p);
    }
}
END_TEST

START_TEST(gemm_transposes_and_batches) {
  AxBackend *be = tu_backend(1);
  int M = 5, N = 4, K = 3, batch = 2;
  float *a = tu_random((size_t)batch * M * K, 1.0f, 1), *b = tu_random((size_t)batch * K * N, 1.0f, 2);
  for (int ta = 0; ta < 2; ta++)
    for (int tb = 0; tb < 2; tb++) {
      float *c = tu_random((size_t)batch * M * N, 1.0f, 3), *ref = tu_alloc((size_t)batch * M * N * 4);
      memcpy(ref, c, (size_t)batch * M * N * 4);
      AxGemm g = {.trans_a = ta, .trans_b = tb, .m = M, .n = N, .k = K, .alpha = 0.5f,
                  .beta = 2.0f, .lda = ta ? M : K, .ldb = tb ? K : N, .ldc = N, .batch = batch,
                  .stride_a = (long long)M * K, .stride_b = (long long)K * N,
                  .stride_c = (long long)M * N};
      ax_gemm(be, &g, a, b, c);
      for (int q = 0; q < batch; q++)
        for (int i = 0; i < M; i++)
          for (int j = 0; j < N; j++) {
            double s = 0;
            for (int k = 0; k < K; k++) {
              float av = ta ? a[q * M * K + k * M + i] : a[q * M * K + i * K + k];
              float bv = tb ? b[q * K * N + j * K + k] : b[q * K * N + k * N + j];
              s += (double)av * bv;
            }
            ref[q * M * N + i * N + j] = (float)(0.5 * s + 2.0 * ref[q * M * N + i * N + j]);
          }
      ck_assert_double_le(tu_max_rel(c, ref, (size_t)batch * M * N, 1e-6, 1e-5), 1.0);
      
    }
  ax_backend_destroy(be);
}
END_TEST

/* Reductions split by columns and row kernels split by rows: any thread count gives the same
 * bits as one thread. */
START_TEST(kernels_independent_of_thread_count) {
  AxBackend *b1 = tu_backend(1), *b3 = tu_backend(3);
  int N = 37, C = 29;
  size_t nc = (size_t)N * C;
  float *x = tu_random(nc, 2.0f, 1), *w = tu_random(C, 1.0f, 2), *bb = tu_random(C, 1.0f, 3);
  float *d = tu_random(nc, 1.0f, 4);
  float *o1 = tu_zeros(nc), *o3 = tu_zeros(nc), *m1 = tu_zeros(N), *r1 = tu_zeros(N);
  float *m3 = tu_zeros(N), *r3 = tu_zeros(N);
  b1->ops->layernorm_forward(b1, o1, m1, r1, x, w, bb, N, C);
  b3->ops->layernorm_forward(b3, o3, m3, r3, x, w, bb, N, C);
  ck_assert_mem_eq(o1, o3, nc * 4);
  float *dx1 = tu_zeros(nc), *dx3 = tu_zeros(nc), *dw1 = tu_zeros(C), *dw3 = tu_zeros(C);
  float *db1 = tu_zeros(C), *db3 = tu_zeros(C);
  b1->ops->layernorm_backward(b1, dx1, dw1, db1, d, x, w, m1, r1, N, C);
  b3->ops->layernorm_backward(b3, dx3, dw3, db3, d, x, w, m3, r3, N, C);
  ck_assert_mem_eq(dx1, dx3, nc * 4);
  ck_assert_mem_eq(dw1, dw3, (size_t)C * 4);
  ck_assert_mem_eq(db1, db3, (size_t)C * 4);
  float *s1 = tu_random((size_t)3 * 11 * 11, 3.0f, 5), *s3 = tu_alloc((size_t)3 * 11 * 11 * 4);
  memcpy(s3, s1, (size_t)3 * 11 * 11 * 4);
  b1->ops->softmax_causal_forward(b1, s1, 3, 11);
  b3->ops->softmax_causal_forward(b3, s3, 3, 11);
  ck_assert_mem_eq(s1, s3, (size_t)3 * 11 * 11 * 4);
  for (int r = 0; r < 3 * 11; r++) { /* each row is a distribution over columns 0..t */
    double sum = 0;
    for (int j = 0; j < 11; j++) sum += s1[r * 11 + j];
    ck_assert_double_le(fabs(sum - 1.0), 1e-6);
  }
  ck_assert_double_eq(b1->ops->sumsq(b1, x, nc), b1->ops->sumsq(b1, x, nc));
  double ss = 0;
  for (size_t i = 0; i < nc; i++) ss += (double)x[i] * x[i];
  ck_assert_double_le(fabs(b3->ops->sumsq(b3, x, nc) - ss), 1e-6 * ss);
  ax_backend_destroy(b1);
  ax_backend_destroy(b3);
}
END_TEST

/* fp16 conversions: every finite fp16 comes back exactly; fp32 values round to nearest even,
 * subnormals included, and past 65504 to infinity; NaN stays NaN. */
START_TEST(fp16_conversions_round_to_nearest_even) {
  for (unsigned h = 0; h < 0x10000u; h++) {
    if ((h & 0x7c00u) == 0x7c00u && (h & 0x3ffu)) { /* NaN */
      ck_assert(isnan(ax_f16_to_f32((uint16_t)h)));
      ck_assert(isnan(ax_f16_to_f32(ax_f32_to_f16(ax_f16_to_f32((uint16_t)h)))));
      continue;
    }
    ck_assert_uint_eq(ax_f32_to_f16(ax_f16_to_f32((uint16_t)h)), h);
  }
  static const struct { float x; uint16_t h; } CASES[] = {
      {1.0f, 0x3c00}, {-2.0f, 0xc000}, {65504.0f, 0x7bff}, {65519.0f, 0x7bff},
      {65520.0f, 0x7c00}, {1e9f, 0x7c00}, {-1e9f, 0xfc00}, {0x1p-24f, 0x0001},
      {0x1p-25f, 0x0000}, {0x3p-25f, 0x0002}, {0x1p-14f, 0x0400}, {0x1.ffcp-15f, 0x0400},
      {1.0f + 0x1p-11f, 0x3c00}, {1.0f + 0x3p-11f, 0x3c02}, {0.1f, 0x2e66}};
  for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++)
    ck_assert_msg(ax_f32_to_f16(CASES[i].x) == CASES[i].h, "%a -> 0x%04x, not 0x%04x", CASES[i].x,
                  ax_f32_to_f16(CASES[i].x), CASES[i].h);
  ck_assert(isnan(ax_f16_to_f32(ax_f32_to_f16(NAN))));
  ck_assert_float_eq(ax_f16_to_f32(0x0001), 0x1p-24f);
}
END_TEST

static AxBackend *backend16(AxDType t) {
  AxBackendConfig bc = {.device = "cpu", .dtype = t, .threads = 1, .local_size = 1,
                        .cpu_storage16 = 1};
  AxBackend *be = ax_backend_create(&bc);
  ck_assert_msg(be != NULL, "backend: %s", ax_error_message());
  ck_assert_uint_eq(be->esz, 2);
  return be;
}

/* n random values as the 16-bit type (dev) and widened back to fp32 (wide). */
static void random16(AxDType t, size_t n, uint64_t seed, uint16_t **dev, float **wide) {
  float *x = tu_random(n, 2.0f, seed);
  *dev = tu_alloc(n * 2);
  *wide = tu_alloc(n * 4);
  for (size_t i = 0; i < n; i++) {
    (*dev)[i] = t == AX_DTYPE_BF16 ? ax_f32_to_bf16(x[i]) : ax_f32_to_f16(x[i]);
    (*wide)[i] = t == AX_DTYPE_BF16 ? ax_bf16_to_f32((*dev)[i]) : ax_f16_to_f32((*dev)[i]);
  }
}

/* Each 16-bit result is the fp32 result rounded once, bit for bit. */
static void same_rounded(AxDType t, const uint16_t *got, const float *f32, size_t n) {
  for (size_t i = 0; i < n; i++) {
    uint16_t want = t == AX_DTYPE_BF16 ? ax_f32_to_bf16(f32[i]) : ax_f32_to_f16(f32[i]);
    ck_assert_msg(got[i] == want, "%s element %zu: 0x%04x, not 0x%04x (%g)", ax_dtype_name(t),
                  i, got[i], want, f32[i]);
  }
}

/* The CPU backend's bf16/fp16 storage: a GEMM accumulating into C (beta 1) and the LayerNorm
 * backward, whose three outputs accumulate, give the fp32 kernels' results on the widened
 * operands, rounded once; the conversions to and from fp32 are the scalar ones. */
START_TEST(storage16_rounds_the_fp32_kernels_once) {
  static const AxDType TYPES[] = {AX_DTYPE_BF16, AX_DTYPE_F16};
  AxBackend *f32 = tu_backend(1);
  for (int k = 0; k < 2; k++) {
    AxDType t = TYPES[k];
    AxBackend *be = backend16(t);
    int M = 7, N = 5, K = 6;
    uint16_t *a, *b, *c, *x, *w, *d, *dx, *dw, *db;
    float *fa, *fb, *fc, *fx, *fw, *fd, *fdx, *fdw, *fdb;
    random16(t, (size_t)M * K, 1, &a, &fa);
    random16(t, (size_t)N * K, 2, &b, &fb);
    random16(t, (size_t)M * N, 3, &c, &fc);
    AxGemm g = {.trans_b = 1, .m = M, .n = N, .k = K, .alpha = 1, .beta = 1, .lda = K, .ldb = K,
                .ldc = N};
    ax_gemm(be, &g, a, b, c);
    ax_gemm(f32, &g, fa, fb, fc);
    same_rounded(t, c, fc, (size_t)M * N);
    random16(t, (size_t)M * N, 4, &x, &fx);
    random16(t, (size_t)N, 5, &w, &fw);
    random16(t, (size_t)M * N, 6, &d, &fd);
    random16(t, (size_t)M * N, 7, &dx, &fdx);
    random16(t, (size_t)N, 8, &dw, &fdw);
    random16(t, (size_t)N, 9, &db, &fdb);
    float *mean = tu_zeros((size_t)M), *rstd = tu_zeros((size_t)M), *out = tu_zeros((size_t)M * N);
    f32->ops->layernorm_forward(f32, out, mean, rstd, fx, fw, fw, M, N);
    be->ops->layernorm_backward(be, dx, dw, db, d, x, w, mean, rstd, M, N);
    f32->ops->layernorm_backward(f32, fdx, fdw, fdb, fd, fx, fw, mean, rstd, M, N);
    same_rounded(t, dx, fdx, (size_t)M * N);
    same_rounded(t, dw, fdw, (size_t)N);
    same_rounded(t, db, fdb, (size_t)N);
    float up[3] = {1.0f / 3, -65536.0f, 1e-9f}, down[3];
    uint16_t dev[3];
    ck_assert_int_eq(be->ops->upload_f32(be, dev, up, 3, AX_STREAM_COMPUTE), AX_OK);
    same_rounded(t, dev, up, 3);
    ck_assert_int_eq(be->ops->download_f32(be, down, dev, 3, AX_STREAM_COMPUTE), AX_OK);
    for (int i = 0; i < 3; i++)
      ck_assert_float_eq(down[i],
                         t == AX_DTYPE_BF16 ? ax_bf16_to_f32(dev[i]) : ax_f16_to_f32(dev[i]));
    ax_backend_destroy(be);
  }
  ax_backend_destroy(f32);
}
END_TEST

/* Dropout: about p of the elements dropped, the others scaled by 1 / (1 - p) and added to the
 * residual; the mask is the element's in the whole tensor, so a piece (rows and channels of
 * it placed by row0/col0, as a tensor-parallel rank holds them) drops what the whole does, any
 * thread count alike; another step or site draws another mask; the backward's mask is the
 * forward's; 16-bit storage rounds the fp32 result once. */
START_TEST(dropout_masks_follow_the_element) {
  AxBackend *b1 = tu_backend(1), *b3 = tu_backend(3);
  int N = 64, C = 48;
  size_t nc = (size_t)N * C;
  float *x = tu_random(nc, 1.0f, 1), *res = tu_random(nc, 1.0f, 2), *whole = tu_zeros(nc);
  AxDropout d = {.p = 0.25f, .seed = 11, .step = 4, .row0 = 128, .width = (uint64_t)C,
                 .layer = 3};
  ax_dropout_apply(b1, &d, AX_DROP_MLP, whole, x, res, N, C);
  size_t dropped = 0;
  for (size_t i = 0; i < nc; i++) {
    if (whole[i] == res[i]) {
      dropped++;
      continue;
    }
    ck_assert_float_eq(whole[i], res[i] + x[i] * (1.0f / 0.75f));
  }
  /* 3072 draws at p = 0.25: 768 expected, 24 their standard deviation */
  ck_assert_msg(dropped > 768 - 5 * 24 && dropped < 768 + 5 * 24, "%zu of %zu dropped", dropped,
                nc);
  /* the piece of rows 16..47, channels 24..47, on 3 threads, in place */
  int r0 = 16, rows = 32, c0 = 24, cols = 24;
  float *piece = tu_alloc((size_t)rows * cols * 4), *pres = tu_alloc((size_t)rows * cols * 4);
  for (int r = 0; r < rows; r++)
    for (int c = 0; c < cols; c++) {
      piece[r * cols + c] = x[(size_t)(r0 + r) * C + c0 + c];
      pres[r * cols + c] = res[(size_t)(r0 + r) * C + c0 + c];
    }
  AxDropout dp = d;
  dp.row0 += (uint64_t)r0;
  dp.col0 = (uint64_t)c0;
  ax_dropout_apply(b3, &dp, AX_DROP_MLP, piece, piece, pres, rows, cols);
  for (int r = 0; r < rows; r++)
    for (int c = 0; c < cols; c++)
      ck_assert_float_eq(piece[r * cols + c], whole[(size_t)(r0 + r) * C + c0 + c]);
  /* the backward (no residual) drops the same elements; another step or site others */
  float *back = tu_zeros(nc), *other = tu_zeros(nc), *site = tu_zeros(nc);
  ax_dropout_apply(b1, &d, AX_DROP_MLP, back, x, NULL, N, C);
  AxDropout later = d;
  later.step++;
  ax_dropout_apply(b1, &later, AX_DROP_MLP, other, x, NULL, N, C);
  ax_dropout_apply(b1, &d, AX_DROP_ATTENTION, site, x, NULL, N, C);
  size_t differ_step = 0, differ_site = 0;
  for (size_t i = 0; i < nc; i++) {
    ck_assert_int_eq(back[i] == 0.0f, whole[i] == res[i]);
    differ_step += (other[i] == 0.0f) != (back[i] == 0.0f);
    differ_site += (site[i] == 0.0f) != (back[i] == 0.0f);
  }
  ck_assert_uint_gt(differ_step, nc / 5);
  ck_assert_uint_gt(differ_site, nc / 5);
  static const AxDType TYPES[] = {AX_DTYPE_BF16, AX_DTYPE_F16};
  for (int k = 0; k < 2; k++) {
    AxBackend *be = backend16(TYPES[k]);
    uint16_t *hx, *hres;
    float *fx, *fres, *want = tu_zeros(nc);
    random16(TYPES[k], nc, 3, &hx, &fx);
    random16(TYPES[k], nc, 4, &hres, &fres);
    ax_dropout_apply(be, &d, AX_DROP_EMBEDDING, hx, hx, hres, N, C);
    ax_dropout_apply(b1, &d, AX_DROP_EMBEDDING, want, fx, fres, N, C);
    same_rounded(TYPES[k], hx, want, nc);
    ax_backend_destroy(be);
  }
  ax_backend_destroy(b1);
  ax_backend_destroy(b3);
}
END_TEST

/* The backend's dropout against the mask's definition (ax_dropout_keeps, one draw at a
 * time), bit for bit: pieces of 45 channels of a 64-wide tensor (eight-lane blocks and a
 * remainder), the third row crossing index 2^32 at its 26th channel (an eight-lane draw
 * starting at the 25th would give seven lanes the wrong upper half), on 1 and 3 threads, with
 * and without a residual. */
START_TEST(dropout_kernel_matches_the_mask_definition) {
  enum { ROWS = 4, COLS = 45 };
  size_t n = (size_t)ROWS * COLS;
  float *x = tu_random(n, 1.0f, 5), *res = tu_random(n, 1.0f, 6), *out = tu_zeros(n);
  AxDropoutMask m = {.key = ax_crng_key(3, 7, AX_CRNG_DROPOUT), .threshold = 1u << 30,
                     .scale = 1.0f / 0.75f, .rows = ROWS, .cols = COLS,
                     .row0 = 4294967296ull / 64 - 3, .col0 = 39, .width = 64};
  ck_assert(ax_dropout_index(&m, 2, 24) == 4294967295ull); /* row 2 crosses 2^32 */
  for (int threads = 1; threads <= 3; threads += 2) {
    AxBackend *be = tu_backend(threads);
    for (int with_res = 0; with_res < 2; with_res++) {
      const float *r = with_res ? res : NULL;
      be->ops->dropout(be, out, x, r, &m);
      size_t dropped = 0;
      for (int i = 0; i < ROWS; i++)
        for (int c = 0; c < COLS; c++) {
          size_t k = (size_t)i * COLS + c;
          float kept = ax_dropout_keeps(&m, i, c) ? x[k] * m.scale : 0.0f;
          float want = r ? r[k] + kept : kept;
          dropped += !ax_dropout_keeps(&m, i, c);
          ck_assert_msg(memcmp(&out[k], &want, sizeof want) == 0,
                        "row %d channel %d: %a, the mask's definition %a", i, c, out[k], want);
        }
      ck_assert_uint_gt(dropped, 0);
      ck_assert_uint_lt(dropped, n);
    }
    ax_backend_destroy(be);
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("kernels");
  TCase *tc = tu_tcase(s, "kernels", 60);
  tcase_add_test(tc, exp_and_tanh_accuracy);
  tcase_add_test(tc, adamw_matches_reference);
  tcase_add_test(tc, adamw_out_of_place_matches_in_place);
  tcase_add_test(tc, gemm_transposes_and_batches);
  tcase_add_test(tc, kernels_independent_of_thread_count);
  tcase_add_test(tc, fp16_conversions_round_to_nearest_even);
  tcase_add_test(tc, storage16_rounds_the_fp32_kernels_once);
  tcase_add_test(tc, dropout_masks_follow_the_element);
  tcase_add_test(tc, dropout_kernel_matches_the_mask_definition);
  return tu_run(s);
}
