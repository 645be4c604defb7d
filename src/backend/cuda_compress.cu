/* cuda_compress.cu — the compression operators as CUDA kernels, with the launchers declared in
 * cuda_compress.h (semantics: mpi/compress/ops.h, which this layer cannot include).
 *
 * Layout of the work: element-wise kernels are grid-stride loops over size_t indices, one
 * rounding per float operation (__fmul_rn / __fadd_rn keep nvcc from contracting a multiply
 * and an add into an FMA, as the host's -ffp-contract=off does); bit packing gives a thread
 * one output byte, unpacking one code; sign packing gives a warp 32 values (a ballot is 4
 * bytes of bits). Reductions run AXC_PARTIALS blocks of kBlock threads, each thread a
 * grid-stride accumulator, each block a fixed shared-memory tree; one more block combines the
 * partials by the same tree, so reruns give the same bits. Selection is three passes: counts
 * of contiguous chunks, their offsets (one thread, in chunk order), then each chunk writes its
 * indices in order (warp ballots rank the hits of a tile). */
#include <math.h>

#include "cuda_compress.h"

namespace {

const int kBlock = 256; /* threads per block; AXC_PARTIALS partials are combined by one block */
const int kWarp = 32;
const unsigned kMaxGrid = 4096; /* blocks of a grid-stride launch */
static_assert(AXC_PARTIALS == kBlock, "the combining block has one thread per partial");

unsigned grid_for(size_t n) {
  size_t g = (n + kBlock - 1) / kBlock;
  return g == 0 ? 1u : g > kMaxGrid ? kMaxGrid : (unsigned)g;
}

cudaError_t launched() { return cudaGetLastError(); }

__device__ __forceinline__ size_t tid() { return (size_t)blockIdx.x * blockDim.x + threadIdx.x; }
__device__ __forceinline__ size_t stride() { return (size_t)gridDim.x * blockDim.x; }

/* ------------------------------------------------------------------ block trees */

/* The block's values combined by a fixed tree (result valid in thread 0). */
template <typename T, typename Op> __device__ T block_tree(T v, Op op) {
  __shared__ T buf[kBlock];
  buf[threadIdx.x] = v;
  __syncthreads();
  for (int h = kBlock / 2; h > 0; h /= 2) {
    if ((int)threadIdx.x < h) buf[threadIdx.x] = op(buf[threadIdx.x], buf[threadIdx.x + h]);
    __syncthreads();
  }
  return buf[0];
}

struct AddOp {
  template <typename T> __device__ T operator()(T a, T b) const { return a + b; }
};
/* max that keeps a NaN (fmaxf would drop it) */
struct MaxNanOp {
  __device__ float operator()(float a, float b) const {
    return isnan(a) ? a : isnan(b) ? b : fmaxf(a, b);
  }
};
struct StatsOp {
  __device__ AxcSignStats operator()(AxcSignStats a, AxcSignStats b) const {
    AxcSignStats r;
    r.sum_pos = a.sum_pos + b.sum_pos;
    r.sum_neg = a.sum_neg + b.sum_neg;
    r.n_pos = a.n_pos + b.n_pos;
    r.n_neg = a.n_neg + b.n_neg;
    return r;
  }
};

/* One block of kBlock threads: *out = the tree over partials[kBlock]. */
template <typename T, typename Op> __global__ void combine(const T *partials, T *out, Op op) {
  T v = block_tree(partials[threadIdx.x], op);
  if (threadIdx.x == 0) *out = v;
}

/* ------------------------------------------------------------------ reduce */

template <int KIND> __device__ __forceinline__ double term(float x) {
  double d = (double)x;
  return KIND == AXC_SUM ? d : KIND == AXC_SUM_ABS ? fabs(d) : d * d;
}

template <int KIND> __global__ void sum_partials(const float *x, size_t n, double *partials) {
  double acc = 0;
  for (size_t i = tid(); i < n; i += stride()) acc += term<KIND>(x[i]);
  acc = block_tree(acc, AddOp());
  if (threadIdx.x == 0) partials[blockIdx.x] = acc;
}

__global__ void max_abs_partials(const float *x, size_t n, float *partials) {
  float m = 0;
  MaxNanOp op;
  for (size_t i = tid(); i < n; i += stride()) m = op(m, fabsf(x[i]));
  m = block_tree(m, op);
  if (threadIdx.x == 0) partials[blockIdx.x] = m;
}

/* ------------------------------------------------------------------ map */

__global__ void scale_k(float *x, size_t n, float sc) {
  for (size_t i = tid(); i < n; i += stride()) x[i] = __fmul_rn(x[i], sc);
}
__global__ void add_k(float *dst, const float *src, size_t n) {
  for (size_t i = tid(); i < n; i += stride()) dst[i] = __fadd_rn(dst[i], src[i]);
}
__global__ void scale_add_k(float *y, float sc, const float *x, size_t n) {
  for (size_t i = tid(); i < n; i += stride()) y[i] = __fadd_rn(__fmul_rn(y[i], sc), x[i]);
}
__global__ void threshold_codes_k(const float *x, size_t n, float tau, uint8_t *codes) {
  for (size_t i = tid(); i < n; i += stride()) {
    float v = x[i];
    codes[i] = v >= tau ? 1 : v <= -tau ? 2 : 0;
  }
}

/* ops_map.c's quantize1: each operation rounded alone; NaN goes to -L as the host's max does */
__device__ __forceinline__ uint8_t quantize1(float x, float mul, float u, float lv) {
  float f = floorf(__fadd_rn(__fmul_rn(x, mul), u));
  f = f > -lv ? f : -lv;
  f = f < lv ? f : lv;
  return (uint8_t)((int)f + (int)lv);
}
__global__ void quantize_k(const float *x, size_t n, float mul, float lv, AxCrng r,
                           uint64_t first, uint8_t *codes) {
  for (size_t i = tid(); i < n; i += stride())
    codes[i] = quantize1(x[i], mul, ax_crng_unit(r, first + i), lv);
}
__global__ void lookup_k(const uint8_t *codes, size_t n, const float *table, float *out,
                         int add) {
  for (size_t i = tid(); i < n; i += stride()) {
    float v = table[codes[i]];
    out[i] = add ? __fadd_rn(out[i], v) : v;
  }
}
__global__ void random_unit_k(AxCrng r, uint64_t first, size_t n, float *u) {
  for (size_t i = tid(); i < n; i += stride()) u[i] = ax_crng_unit(r, first + i);
}

/* ------------------------------------------------------------------ bits */

size_t bits_bytes(size_t n, int width) {
  return (n / 8) * (size_t)width + ((n % 8) * (size_t)width + 7) / 8;
}
bool width_ok(int width) { return width == 1 || width == 2 || width == 4 || width == 8; }

__global__ void pack_k(const uint8_t *codes, size_t n, int width, size_t nb, uint8_t *out) {
  size_t per = (size_t)(8 / width);
  unsigned mask = (1u << width) - 1;
  for (size_t b = tid(); b < nb; b += stride()) {
    unsigned byte = 0;
    for (size_t j = 0; j < per && b * per + j < n; j++)
      byte |= (codes[b * per + j] & mask) << (j * (size_t)width);
    out[b] = (uint8_t)byte;
  }
}
__global__ void unpack_k(const uint8_t *in, size_t n, int width, uint8_t *codes) {
  unsigned mask = (1u << width) - 1;
  for (size_t i = tid(); i < n; i += stride()) {
    size_t bit = i * (size_t)width;
    codes[i] = (uint8_t)((in[bit >> 3] >> (bit & 7)) & mask);
  }
}

/* ------------------------------------------------------------------ signs */

/* A warp takes 32 values at a time (warp-uniform loop, so every lane reaches the ballot);
 * lanes 0..3 write the ballot's 4 bytes that lie within ceil(n/8). */
__global__ void sign_pack_k(const float *x, size_t n, uint8_t *bits, AxcSignStats *partials) {
  size_t warps = stride() / kWarp, nb = (n + 7) / 8;
  unsigned lane = threadIdx.x % kWarp;
  AxcSignStats st = {0, 0, 0, 0};
  for (size_t w = tid() / kWarp; w * kWarp < n; w += warps) {
    size_t i = w * kWarp + lane;
    float v = i < n ? x[i] : 0.0f;
    bool pos = i < n && v >= 0, neg = i < n && v < 0;
    unsigned m = __ballot_sync(0xffffffffu, pos);
    size_t b = w * 4 + lane;
    if (lane < 4 && b < nb) bits[b] = (uint8_t)(m >> (8 * lane));
    st.sum_pos += pos ? (double)v : 0.0;
    st.sum_neg += neg ? (double)v : 0.0;
    st.n_pos += pos;
    st.n_neg += neg;
  }
  if (!partials) return; /* uniform over the grid: no thread reaches the tree */
  st = block_tree(st, StatsOp());
  if (threadIdx.x == 0) partials[blockIdx.x] = st;
}
__global__ void sign_unpack_k(const uint8_t *bits, size_t n, float neg, float pos, float *out,
                              int add) {
  for (size_t i = tid(); i < n; i += stride()) {
    float v = (bits[i >> 3] >> (i & 7)) & 1 ? pos : neg;
    out[i] = add ? __fadd_rn(out[i], v) : v;
  }
}

/* ------------------------------------------------------------------ select */

__device__ __forceinline__ bool hit(const float *x, size_t i, float thr) {
  return fabsf(x[i]) >= thr;
}

/* Chunk b = [b*chunk, min(n, (b+1)*chunk)): counts[b] = its hits. */
__global__ void count_chunks_k(const float *x, size_t n, float thr, size_t chunk,
                               unsigned long long *counts) {
  size_t lo = blockIdx.x * chunk, hi = lo + chunk < n ? lo + chunk : n;
  unsigned long long c = 0;
  for (size_t i = lo + threadIdx.x; i < hi; i += blockDim.x) c += hit(x, i, thr);
  c = block_tree(c, AddOp());
  if (threadIdx.x == 0) counts[blockIdx.x] = c;
}

/* One thread: counts -> exclusive offsets (in place), the total into *count. */
__global__ void offsets_k(unsigned long long *counts, unsigned chunks, unsigned long long *count) {
  unsigned long long run = 0;
  for (unsigned b = 0; b < chunks; b++) {
    unsigned long long c = counts[b];
    counts[b] = run;
    run += c;
  }
  *count = run;
}

/* Block b writes the hits of chunk b, tile by tile of kBlock values: a hit's place is the
 * chunk's offset, the hits of earlier tiles, of earlier warps, and of earlier lanes. */
__global__ void write_chunks_k(const float *x, size_t n, float thr, size_t chunk,
                               const unsigned long long *offsets, uint32_t *idx, size_t cap) {
  __shared__ unsigned warp_hits[kBlock / kWarp];
  size_t lo = blockIdx.x * chunk, hi = lo + chunk < n ? lo + chunk : n;
  unsigned lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  unsigned long long base = offsets[blockIdx.x];
  for (size_t t = lo; t < hi; t += kBlock) {
    size_t i = t + threadIdx.x;
    bool h = i < hi && hit(x, i, thr);
    unsigned m = __ballot_sync(0xffffffffu, h);
    if (lane == 0) warp_hits[warp] = (unsigned)__popc(m);
    __syncthreads();
    unsigned before = 0, tile = 0;
    for (unsigned w = 0; w < kBlock / kWarp; w++) {
      before += w < warp ? warp_hits[w] : 0;
      tile += warp_hits[w];
    }
    unsigned long long at = base + before + (unsigned)__popc(m & ((1u << lane) - 1));
    if (h && at < cap) idx[at] = (uint32_t)i;
    base += tile;
    __syncthreads(); /* warp_hits is read before the next tile writes it */
  }
}

__global__ void gather_k(const float *x, const uint32_t *idx, size_t k, float *vals) {
  for (size_t j = tid(); j < k; j += stride()) vals[j] = x[idx[j]];
}
__global__ void scatter_k(float *out, const uint32_t *idx, const float *vals, size_t k, int add) {
  for (size_t j = tid(); j < k; j += stride()) {
    float *o = out + idx[j];
    *o = add ? __fadd_rn(*o, vals[j]) : vals[j];
  }
}

/* Chunks of whole tiles, at most AXC_SELECT_SCRATCH of them. */
size_t chunk_for(size_t n) {
  size_t c = (n + AXC_SELECT_SCRATCH - 1) / AXC_SELECT_SCRATCH;
  c = (c + kBlock - 1) / kBlock * kBlock;
  return c ? c : kBlock;
}

cudaError_t count_pass(cudaStream_t s, const float *x, size_t n, float thr, size_t chunk,
                       unsigned long long *scratch, unsigned long long *count) {
  if (n > 0xFFFFFFFFull) return cudaErrorInvalidValue;
  unsigned chunks = (unsigned)((n + chunk - 1) / chunk);
  if (chunks) count_chunks_k<<<chunks, kBlock, 0, s>>>(x, n, thr, chunk, scratch);
  offsets_k<<<1, 1, 0, s>>>(scratch, chunks, count);
  return launched();
}

} // namespace

/* ------------------------------------------------------------------ launchers */

extern "C" {

cudaError_t axc_sum(cudaStream_t s, AxcSumKind kind, const float *x, size_t n, double *partials,
                    double *out) {
  switch (kind) {
  case AXC_SUM: sum_partials<AXC_SUM><<<AXC_PARTIALS, kBlock, 0, s>>>(x, n, partials); break;
  case AXC_SUM_ABS:
    sum_partials<AXC_SUM_ABS><<<AXC_PARTIALS, kBlock, 0, s>>>(x, n, partials);
    break;
  case AXC_SUM_SQ: sum_partials<AXC_SUM_SQ><<<AXC_PARTIALS, kBlock, 0, s>>>(x, n, partials); break;
  default: return cudaErrorInvalidValue;
  }
  combine<<<1, kBlock, 0, s>>>(partials, out, AddOp());
  return launched();
}

cudaError_t axc_max_abs(cudaStream_t s, const float *x, size_t n, float *partials, float *out) {
  max_abs_partials<<<AXC_PARTIALS, kBlock, 0, s>>>(x, n, partials);
  combine<<<1, kBlock, 0, s>>>(partials, out, MaxNanOp());
  return launched();
}

cudaError_t axc_scale(cudaStream_t s, float *x, size_t n, float sc) {
  if (n) scale_k<<<grid_for(n), kBlock, 0, s>>>(x, n, sc);
  return launched();
}

cudaError_t axc_add(cudaStream_t s, float *dst, const float *src, size_t n) {
  if (n) add_k<<<grid_for(n), kBlock, 0, s>>>(dst, src, n);
  return launched();
}

cudaError_t axc_scale_add(cudaStream_t s, float *y, float sc, const float *x, size_t n) {
  if (n) scale_add_k<<<grid_for(n), kBlock, 0, s>>>(y, sc, x, n);
  return launched();
}

cudaError_t axc_threshold_codes(cudaStream_t s, const float *x, size_t n, float tau,
                                uint8_t *codes) {
  if (n) threshold_codes_k<<<grid_for(n), kBlock, 0, s>>>(x, n, tau, codes);
  return launched();
}

cudaError_t axc_quantize(cudaStream_t s, const float *x, size_t n, float mul, int levels,
                         AxCrng r, uint64_t first, uint8_t *codes) {
  if (levels < 1 || levels > 127) return cudaErrorInvalidValue;
  if (n) quantize_k<<<grid_for(n), kBlock, 0, s>>>(x, n, mul, (float)levels, r, first, codes);
  return launched();
}

cudaError_t axc_lookup(cudaStream_t s, const uint8_t *codes, size_t n, const float *table,
                       float *out, int add) {
  if (n) lookup_k<<<grid_for(n), kBlock, 0, s>>>(codes, n, table, out, add);
  return launched();
}

cudaError_t axc_random_unit(cudaStream_t s, AxCrng r, uint64_t first, size_t n, float *u) {
  if (n) random_unit_k<<<grid_for(n), kBlock, 0, s>>>(r, first, n, u);
  return launched();
}

cudaError_t axc_pack(cudaStream_t s, const uint8_t *codes, size_t n, int width, uint8_t *out) {
  if (!width_ok(width)) return cudaErrorInvalidValue;
  size_t nb = bits_bytes(n, width);
  if (nb) pack_k<<<grid_for(nb), kBlock, 0, s>>>(codes, n, width, nb, out);
  return launched();
}

cudaError_t axc_unpack(cudaStream_t s, const uint8_t *in, size_t n, int width, uint8_t *codes) {
  if (!width_ok(width)) return cudaErrorInvalidValue;
  if (n) unpack_k<<<grid_for(n), kBlock, 0, s>>>(in, n, width, codes);
  return launched();
}

cudaError_t axc_sign_pack(cudaStream_t s, const float *x, size_t n, uint8_t *bits,
                          AxcSignStats *partials, AxcSignStats *stats) {
  if (!stats) {
    if (n) sign_pack_k<<<grid_for(n), kBlock, 0, s>>>(x, n, bits, NULL);
    return launched();
  }
  sign_pack_k<<<AXC_PARTIALS, kBlock, 0, s>>>(x, n, bits, partials);
  combine<<<1, kBlock, 0, s>>>(partials, stats, StatsOp());
  return launched();
}

cudaError_t axc_sign_unpack(cudaStream_t s, const uint8_t *bits, size_t n, float neg, float pos,
                            float *out, int add) {
  if (n) sign_unpack_k<<<grid_for(n), kBlock, 0, s>>>(bits, n, neg, pos, out, add);
  return launched();
}

cudaError_t axc_count_ge(cudaStream_t s, const float *x, size_t n, float thr,
                         unsigned long long *scratch, unsigned long long *count) {
  return count_pass(s, x, n, thr, chunk_for(n), scratch, count);
}

cudaError_t axc_select_ge(cudaStream_t s, const float *x, size_t n, float thr, uint32_t *idx,
                          size_t cap, unsigned long long *scratch, unsigned long long *count) {
  size_t chunk = chunk_for(n);
  cudaError_t e = count_pass(s, x, n, thr, chunk, scratch, count);
  unsigned chunks = (unsigned)((n + chunk - 1) / chunk);
  if (e != cudaSuccess || !chunks || !cap) return e;
  write_chunks_k<<<chunks, kBlock, 0, s>>>(x, n, thr, chunk, scratch, idx, cap);
  return launched();
}

cudaError_t axc_gather(cudaStream_t s, const float *x, const uint32_t *idx, size_t k,
                       float *vals) {
  if (k) gather_k<<<grid_for(k), kBlock, 0, s>>>(x, idx, k, vals);
  return launched();
}

cudaError_t axc_scatter(cudaStream_t s, float *out, const uint32_t *idx, const float *vals,
                        size_t k, int add) {
  if (k) scatter_k<<<grid_for(k), kBlock, 0, s>>>(out, idx, vals, k, add);
  return launched();
}

} // extern "C"
