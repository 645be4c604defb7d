/* ops_sign.c — signs: bit i = (x[i] >= 0) packed 1 bit a value with the sign statistics of the
 * same pass (the whole of onebit's encode: one read of the gradient), and back to two values.
 * The sums follow ops.h's fixed lane order (16 double lanes, then the tail), so the AVX2 and
 * scalar paths agree bit for bit. */
#include <string.h>

#include "ops.h"
#include "src/core/simd.h"

enum { LANES = 16 };

static double combine16(const double l[LANES]) {
  double c[4];
  for (int j = 0; j < 4; j++) c[j] = (l[j] + l[j + 8]) + (l[j + 4] + l[j + 12]);
  return (c[0] + c[2]) + (c[1] + c[3]);
}

typedef struct {
  double p[LANES], q[LANES]; /* lane sums of the positive and the negative parts */
  size_t n_pos, n_neg;
} Acc;

/* Elements [i, n) one by one: bits from byte i/8 on (i is a multiple of 8), sums into the
 * finished totals in order. */
static void tail(const float *x, size_t i, size_t n, uint8_t *bits, AxSignStats *s) {
  uint8_t byte = 0;
  for (; i < n; i++) {
    float v = x[i];
    int pos = v >= 0;
    byte |= (uint8_t)(pos << (i & 7));
    if (bits && ((i & 7) == 7 || i + 1 == n)) bits[i >> 3] = byte, byte = 0;
    s->sum_pos += pos ? (double)v : 0.0;
    s->sum_neg += v < 0 ? (double)v : 0.0;
    s->n_pos += (size_t)pos;
    s->n_neg += v < 0;
  }
}

static void finish(const Acc *a, const float *x, size_t i, size_t n, uint8_t *bits,
                   AxSignStats *s) {
  s->sum_pos = combine16(a->p);
  s->sum_neg = combine16(a->q);
  s->n_pos = a->n_pos;
  s->n_neg = a->n_neg;
  tail(x, i, n, bits, s);
}

/* The whole blocks of 16 of x[0..n) into the lane sums of a (continuing them), bits from
 * bits[0] on (may be NULL); returns the count of values done. */
static size_t blocks_scalar(Acc *a, const float *x, size_t n, uint8_t *bits) {
  size_t i = 0;
  for (; i + LANES <= n; i += LANES) {
    unsigned m = 0;
    for (int j = 0; j < LANES; j++) {
      float v = x[i + j];
      m |= (unsigned)(v >= 0) << j;
      a->p[j] += v >= 0 ? (double)v : 0.0;
      a->q[j] += v < 0 ? (double)v : 0.0;
      a->n_neg += v < 0;
    }
    a->n_pos += (size_t)__builtin_popcount(m);
    if (bits) bits[i >> 3] = (uint8_t)m, bits[(i >> 3) + 1] = (uint8_t)(m >> 8);
  }
  return i;
}

#ifdef AX_SIMD_AVX2
static inline __m256d lo4(__m256 v) { return _mm256_cvtps_pd(_mm256_castps256_ps128(v)); }
static inline __m256d hi4(__m256 v) { return _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)); }

static size_t blocks_avx2(Acc *a, const float *x, size_t n, uint8_t *bits) {
  const __m256 zero = _mm256_setzero_ps();
  __m256d p0 = _mm256_loadu_pd(a->p), p1 = _mm256_loadu_pd(a->p + 4),
          p2 = _mm256_loadu_pd(a->p + 8), p3 = _mm256_loadu_pd(a->p + 12);
  __m256d q0 = _mm256_loadu_pd(a->q), q1 = _mm256_loadu_pd(a->q + 4),
          q2 = _mm256_loadu_pd(a->q + 8), q3 = _mm256_loadu_pd(a->q + 12);
  size_t i = 0;
  for (; i + LANES <= n; i += LANES) {
    __m256 v0 = _mm256_loadu_ps(x + i), v1 = _mm256_loadu_ps(x + i + 8);
    __m256 g0 = _mm256_cmp_ps(v0, zero, _CMP_GE_OQ), g1 = _mm256_cmp_ps(v1, zero, _CMP_GE_OQ);
    __m256 l0 = _mm256_cmp_ps(v0, zero, _CMP_LT_OQ), l1 = _mm256_cmp_ps(v1, zero, _CMP_LT_OQ);
    unsigned mg = (unsigned)_mm256_movemask_ps(g0) | (unsigned)_mm256_movemask_ps(g1) << 8;
    unsigned ml = (unsigned)_mm256_movemask_ps(l0) | (unsigned)_mm256_movemask_ps(l1) << 8;
    if (bits) {
      uint16_t w = (uint16_t)mg;
      memcpy(bits + (i >> 3), &w, 2); /* little-endian: byte i/8 first */
    }
    a->n_pos += (size_t)__builtin_popcount(mg);
    a->n_neg += (size_t)__builtin_popcount(ml);
    __m256 pp0 = _mm256_and_ps(v0, g0), pp1 = _mm256_and_ps(v1, g1);
    __m256 qq0 = _mm256_and_ps(v0, l0), qq1 = _mm256_and_ps(v1, l1);
    p0 = _mm256_add_pd(p0, lo4(pp0)), p1 = _mm256_add_pd(p1, hi4(pp0));
    p2 = _mm256_add_pd(p2, lo4(pp1)), p3 = _mm256_add_pd(p3, hi4(pp1));
    q0 = _mm256_add_pd(q0, lo4(qq0)), q1 = _mm256_add_pd(q1, hi4(qq0));
    q2 = _mm256_add_pd(q2, lo4(qq1)), q3 = _mm256_add_pd(q3, hi4(qq1));
  }
  _mm256_storeu_pd(a->p, p0), _mm256_storeu_pd(a->p + 4, p1);
  _mm256_storeu_pd(a->p + 8, p2), _mm256_storeu_pd(a->p + 12, p3);
  _mm256_storeu_pd(a->q, q0), _mm256_storeu_pd(a->q + 4, q1);
  _mm256_storeu_pd(a->q + 8, q2), _mm256_storeu_pd(a->q + 12, q3);
  return i;
}
#define BLOCKS blocks_avx2
#else
#define BLOCKS blocks_scalar
#endif

static void pass(size_t (*blocks)(Acc *, const float *, size_t, uint8_t *), const float *x,
                 size_t n, uint8_t *bits, AxSignStats *s) {
  Acc a;
  memset(&a, 0, sizeof a);
  size_t i = blocks(&a, x, n, bits);
  finish(&a, x, i, n, bits, s);
}

void ax_op_sign_pack_scalar(const float *x, size_t n, uint8_t *bits, AxSignStats *s) {
  AxSignStats tmp;
  pass(blocks_scalar, x, n, bits, s ? s : &tmp);
}

void ax_op_sign_stats_scalar(const float *x, size_t n, AxSignStats *s) {
  pass(blocks_scalar, x, n, NULL, s);
}

void ax_op_sign_pack(const float *x, size_t n, uint8_t *bits, AxSignStats *s) {
  AxSignStats tmp;
  pass(BLOCKS, x, n, bits, s ? s : &tmp);
}

void ax_op_sign_stats(const float *x, size_t n, AxSignStats *s) { pass(BLOCKS, x, n, NULL, s); }

/* ---------------------------------------------------------------- error feedback, fused */

enum { CHUNK = 4096 }; /* a multiple of LANES: the lanes continue across chunks unchanged */

void ax_op_add_sign_stats(float *acc, const float *in, size_t n, AxSignStats *s) {
  Acc a;
  memset(&a, 0, sizeof a);
  size_t i = 0;
  for (; i < n; i += CHUNK) { /* the add, then the statistics of the chunk while in cache */
    size_t len = n - i < CHUNK ? n - i : CHUNK;
    ax_op_add(acc + i, in + i, len);
    size_t done = BLOCKS(&a, acc + i, len, NULL);
    if (done < len) {
      i += done;
      break;
    }
  }
  finish(&a, acc, i < n ? i : n, n, NULL, s);
}

void ax_op_sign_pack_sub(float *x, size_t n, float neg, float pos, uint8_t *bits) {
  size_t i = 0;
#ifdef AX_SIMD_AVX2
  const __m256 vn = _mm256_set1_ps(neg), vp = _mm256_set1_ps(pos), zero = _mm256_setzero_ps();
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_loadu_ps(x + i), ge = _mm256_cmp_ps(v, zero, _CMP_GE_OQ);
    bits[i >> 3] = (uint8_t)_mm256_movemask_ps(ge);
    _mm256_storeu_ps(x + i, _mm256_sub_ps(v, _mm256_blendv_ps(vn, vp, ge)));
  }
#endif
  uint8_t byte = 0;
  for (; i < n; i++) {
    int up = x[i] >= 0;
    byte |= (uint8_t)(up << (i & 7));
    x[i] -= up ? pos : neg;
    if ((i & 7) == 7 || i + 1 == n) bits[i >> 3] = byte, byte = 0;
  }
}

/* ---------------------------------------------------------------- back to values */

static inline float pick(const uint8_t *bits, size_t i, float neg, float pos) {
  return (bits[i >> 3] >> (i & 7)) & 1 ? pos : neg;
}

void ax_op_sign_unpack_scalar(const uint8_t *bits, size_t n, float neg, float pos, float *out,
                              int add) {
  for (size_t i = 0; i < n; i++) out[i] = add ? out[i] + pick(bits, i, neg, pos) : pick(bits, i, neg, pos);
}

void ax_op_sign_unpack(const uint8_t *bits, size_t n, float neg, float pos, float *out,
                       int add) {
  size_t i = 0;
#ifdef AX_SIMD_AVX2
  const __m256i mask = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
  const __m256 vn = _mm256_set1_ps(neg), vp = _mm256_set1_ps(pos);
  for (; i + 8 <= n; i += 8) {
    __m256i b = _mm256_and_si256(_mm256_set1_epi32(bits[i >> 3]), mask);
    __m256 on = _mm256_castsi256_ps(_mm256_cmpeq_epi32(b, mask));
    __m256 v = _mm256_blendv_ps(vn, vp, on);
    if (add) v = _mm256_add_ps(_mm256_loadu_ps(out + i), v);
    _mm256_storeu_ps(out + i, v);
  }
#endif
  ax_op_sign_unpack_scalar(bits + (i >> 3), n - i, neg, pos, out + i, add);
}
