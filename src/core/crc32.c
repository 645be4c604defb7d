/* crc32.c — CRC-32 (see crc32.h) three ways, one result: slicing-by-8 (eight tables, eight
 * bytes a round, about 2.4 GB/s on one core here) everywhere; on x86-64 CPUs with PCLMULQDQ the
 * carry-less multiplication folding of Gopal et al. ("Fast CRC Computation for Generic
 * Polynomials Using PCLMULQDQ", Intel, 2009): four 128-bit lanes folded 64 bytes a round, then
 * one lane 16 bytes a round; and on CPUs with AVX-512 VPCLMULQDQ the same folding sixteen lanes
 * at a time (four 512-bit registers, 256 bytes a round), reduced to the four-lane state it
 * starts from. The last folded 16 bytes and any tail go through the tables, so no Barrett
 * reduction is needed. The fastest path the CPU has is chosen once, at the first call. */
#include "crc32.h"

#include <pthread.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define AX_CRC32_CLMUL 1
#endif

static uint32_t table[8][256];
static AxCrc32Path best = AX_CRC32_TABLES;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void init(void) {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    table[0][i] = c;
  }
  for (int t = 1; t < 8; t++)
    for (int i = 0; i < 256; i++)
      table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xFF];
#ifdef AX_CRC32_CLMUL
  __builtin_cpu_init();
  if (__builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1")) best = AX_CRC32_CLMUL;
  if (best == AX_CRC32_CLMUL && __builtin_cpu_supports("avx512f") &&
      __builtin_cpu_supports("vpclmulqdq"))
    best = AX_CRC32_VCLMUL;
#endif
}

/* The register without its pre- and post-inversion: crc is the running remainder. */
static uint32_t by_tables(uint32_t crc, const unsigned char *p, size_t n) {
  for (; n >= 8; n -= 8, p += 8) { /* little-endian words: byte k of the round is p[k] */
    uint32_t lo, hi;
    memcpy(&lo, p, 4);
    memcpy(&hi, p + 4, 4);
    lo ^= crc;
    crc = table[7][lo & 0xFF] ^ table[6][(lo >> 8) & 0xFF] ^ table[5][(lo >> 16) & 0xFF] ^
          table[4][lo >> 24] ^ table[3][hi & 0xFF] ^ table[2][(hi >> 8) & 0xFF] ^
          table[1][(hi >> 16) & 0xFF] ^ table[0][hi >> 24];
  }
  for (; n > 0; n--) crc = table[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
  return crc;
}

#ifdef AX_CRC32_CLMUL
/* x^(k) mod P, bit-reflected and shifted left once, for the fold distances the paper names:
 * 512 + 32 and 512 - 32 bits (four lanes), 128 + 32 and 128 - 32 bits (one lane), and for
 * sixteen lanes 2048 + 32 and 2048 - 32. Checked against a direct computation when this file
 * was written (tests check the results). */
#define K_FOLD16_LO 0x11542778aull
#define K_FOLD16_HI 0x1322d1430ull
#define K_FOLD4_LO 0x154442bd4ull
#define K_FOLD4_HI 0x1c6e41596ull
#define K_FOLD1_LO 0x1751997d0ull
#define K_FOLD1_HI 0x0ccaa009eull

__attribute__((target("pclmul,sse4.1"))) static __m128i fold(__m128i x, __m128i k, __m128i next) {
  __m128i lo = _mm_clmulepi64_si128(x, k, 0x00), hi = _mm_clmulepi64_si128(x, k, 0x11);
  return _mm_xor_si128(_mm_xor_si128(lo, hi), next);
}

/* Four lanes folded over the rest of p (any length), then one: the remainder of all of it. */
__attribute__((target("pclmul,sse4.1"))) static uint32_t finish_clmul(__m128i x[4],
                                                                      const unsigned char *p,
                                                                      size_t n) {
  const __m128i k4 = _mm_set_epi64x((long long)K_FOLD4_HI, (long long)K_FOLD4_LO);
  const __m128i k1 = _mm_set_epi64x((long long)K_FOLD1_HI, (long long)K_FOLD1_LO);
  for (; n >= 64; p += 64, n -= 64)
    for (int i = 0; i < 4; i++)
      x[i] = fold(x[i], k4, _mm_loadu_si128((const __m128i *)(p + 16 * i)));
  __m128i acc = x[0];
  for (int i = 1; i < 4; i++) acc = fold(acc, k1, x[i]);
  for (; n >= 16; p += 16, n -= 16) acc = fold(acc, k1, _mm_loadu_si128((const __m128i *)p));
  unsigned char last[16];
  _mm_storeu_si128((__m128i *)last, acc);
  return by_tables(by_tables(0, last, 16), p, n);
}

/* n >= 64 */
__attribute__((target("pclmul,sse4.1"))) static uint32_t by_clmul(uint32_t crc,
                                                                  const unsigned char *p,
                                                                  size_t n) {
  __m128i x[4];
  for (int i = 0; i < 4; i++) x[i] = _mm_loadu_si128((const __m128i *)(p + 16 * i));
  x[0] = _mm_xor_si128(x[0], _mm_cvtsi32_si128((int)crc));
  return finish_clmul(x, p + 64, n - 64);
}

#define AX_VCLMUL_TARGET __attribute__((target("avx512f,vpclmulqdq,pclmul,sse4.1")))

/* fold() on four 128-bit lanes at once */
AX_VCLMUL_TARGET static __m512i fold4(__m512i x, __m512i k, __m512i next) {
  __m512i lo = _mm512_clmulepi64_epi128(x, k, 0x00), hi = _mm512_clmulepi64_epi128(x, k, 0x11);
  return _mm512_ternarylogic_epi64(lo, hi, next, 0x96); /* lo ^ hi ^ next */
}

/* n >= 256: sixteen lanes 256 bytes a round; folded down to one register of four lanes, which
 * are by_clmul's four lanes after the same bytes. */
AX_VCLMUL_TARGET static uint32_t by_vclmul(uint32_t crc, const unsigned char *p, size_t n) {
  const __m512i k16 = _mm512_broadcast_i32x4(
      _mm_set_epi64x((long long)K_FOLD16_HI, (long long)K_FOLD16_LO));
  const __m512i k4 =
      _mm512_broadcast_i32x4(_mm_set_epi64x((long long)K_FOLD4_HI, (long long)K_FOLD4_LO));
  __m512i x[4];
  for (int i = 0; i < 4; i++) x[i] = _mm512_loadu_si512(p + 64 * i);
  x[0] = _mm512_xor_si512(x[0], _mm512_zextsi128_si512(_mm_cvtsi32_si128((int)crc)));
  p += 256, n -= 256;
  for (; n >= 256; p += 256, n -= 256)
    for (int i = 0; i < 4; i++) x[i] = fold4(x[i], k16, _mm512_loadu_si512(p + 64 * i));
  __m512i acc = x[0];
  for (int i = 1; i < 4; i++) acc = fold4(acc, k4, x[i]);
  __m128i lanes[4] = {_mm512_extracti32x4_epi32(acc, 0), _mm512_extracti32x4_epi32(acc, 1),
                      _mm512_extracti32x4_epi32(acc, 2), _mm512_extracti32x4_epi32(acc, 3)};
  return finish_clmul(lanes, p, n);
}
#endif

uint32_t ax_crc32_by(AxCrc32Path path, uint32_t crc, const void *buf, size_t n) {
  pthread_once(&init_once, init);
  const unsigned char *p = buf;
  if (path > best) path = best;
#ifdef AX_CRC32_CLMUL
  if (path == AX_CRC32_VCLMUL && n >= 256) return ~by_vclmul(~crc, p, n);
  if (path >= AX_CRC32_CLMUL && n >= 64) return ~by_clmul(~crc, p, n);
#endif
  return ~by_tables(~crc, p, n);
}

uint32_t ax_crc32(uint32_t crc, const void *buf, size_t n) {
  return ax_crc32_by(AX_CRC32_VCLMUL, crc, buf, n);
}

AxCrc32Path ax_crc32_best_path(void) {
  pthread_once(&init_once, init);
  return best;
}

/* ------------------------------------------------------------------ combining */

/* A 32x32 matrix over GF(2), column i the image of bit i, applied to v. */
static uint32_t gf2_apply(const uint32_t m[32], uint32_t v) {
  uint32_t r = 0;
  for (int i = 0; v; i++, v >>= 1)
    if (v & 1) r ^= m[i];
  return r;
}

static void gf2_square(uint32_t out[32], const uint32_t m[32]) {
  for (int i = 0; i < 32; i++) out[i] = gf2_apply(m, m[i]);
}

/* The CRC of A then B is A's CRC carried over B's length of zero bytes, xor B's CRC (the pre-
 * and post-inversions cancel). Carrying over one zero bit is the register's shift, a linear
 * map; squaring it gives two bits, four, a byte, then each power of two bytes of len_b. */
uint32_t ax_crc32_combine(uint32_t crc_a, uint32_t crc_b, unsigned long long len_b) {
  uint32_t a[32], b[32], *op = a, *next = b;
  a[0] = 0xEDB88320u; /* one zero bit: shift right, the polynomial where bit 0 falls out */
  for (int i = 1; i < 32; i++) a[i] = 1u << (i - 1);
  for (int k = 0; k < 3; k++) { /* 1 -> 2 -> 4 -> 8 bits */
    gf2_square(next, op);
    uint32_t *t = op;
    op = next, next = t;
  }
  for (; len_b; len_b >>= 1) {
    if (len_b & 1) crc_a = gf2_apply(op, crc_a);
    if (len_b > 1) {
      gf2_square(next, op);
      uint32_t *t = op;
      op = next, next = t;
    }
  }
  return crc_a ^ crc_b;
}
