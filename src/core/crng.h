/* crng.h — a counter-based random generator: the value at index i under a key is a pure
 * function of (key, i), so every rank (and the GPU) computes the same value for the same
 * element without any shared sequence, and a range split in pieces gets the values it would
 * get whole. The key comes from (seed, step, stream) through splitmix64; the value is
 * murmur3's 32-bit finalizer applied twice, keyed, to the index's two halves:
 *   h = fmix32(fmix32(lo ^ k0) ^ (k1 + hi * 0x9E3779B9))
 * Header-only and plain integer arithmetic, so C, its AVX2 lanes (crng_simd.h)
 * and CUDA (`__host__ __device__` under nvcc) give the same bits. */
#ifndef AX_CRNG_H
#define AX_CRNG_H

#include <stdint.h>

#if defined(__CUDACC__)
#define AX_CRNG_FN static inline __host__ __device__
#else
#define AX_CRNG_FN static inline
#endif

typedef struct {
  uint32_t k0, k1;
} AxCrng;

/* Streams keep the uses of one (seed, step) apart. */
enum {
  AX_CRNG_QUANT = 1,   /* stochastic rounding of quantizers */
  AX_CRNG_SAMPLE = 2,  /* threshold samples */
  AX_CRNG_RANDK = 3,   /* rand-k's indices */
  AX_CRNG_POWERSGD = 4, /* PowerSGD's initial Q */
  AX_CRNG_DROPOUT = 5   /* dropout masks (dropout_mask.h; the site in the stream's upper bits) */
};

AX_CRNG_FN uint64_t ax_crng_mix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

AX_CRNG_FN uint32_t ax_crng_fmix32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x85EBCA6Bu;
  x ^= x >> 13;
  x *= 0xC2B2AE35u;
  return x ^ (x >> 16);
}

AX_CRNG_FN AxCrng ax_crng_key(uint64_t seed, uint64_t step, uint64_t stream) {
  uint64_t z = ax_crng_mix64(ax_crng_mix64(ax_crng_mix64(seed) ^ step) ^ stream);
  AxCrng r;
  r.k0 = (uint32_t)z;
  r.k1 = (uint32_t)(z >> 32);
  return r;
}

AX_CRNG_FN uint32_t ax_crng_u32(AxCrng r, uint64_t i) {
  uint32_t lo = (uint32_t)i, hi = (uint32_t)(i >> 32);
  return ax_crng_fmix32(ax_crng_fmix32(lo ^ r.k0) ^ (r.k1 + hi * 0x9E3779B9u));
}

/* Uniform in [0, 1): the top 24 bits. */
AX_CRNG_FN float ax_crng_unit(AxCrng r, uint64_t i) {
  return (float)(ax_crng_u32(r, i) >> 8) * (1.0f / 16777216.0f);
}

/* Uniform integer in [0, n), n <= 2^32 (multiply-shift: a bias below n / 2^32). */
AX_CRNG_FN uint32_t ax_crng_below(AxCrng r, uint64_t i, uint64_t n) {
  return (uint32_t)(((uint64_t)ax_crng_u32(r, i) * n) >> 32);
}

#endif
