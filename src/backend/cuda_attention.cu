/* cuda_attention.cu — fused causal attention for the CUDA backend (flash-style): the scores of
 * a tile of 64 queries against a tile of 64 keys are made in shared memory with bf16/fp16
 * tensor-core products (wmma, fp32 accumulation), softmaxed online and multiplied into the
 * output, so the T x T attention matrix is never stored. Launchers in cuda_attention.h.
 *
 * Layout. qkv holds B*T rows of 3C: q, k, v, each NH heads of HS = C/NH channels side by side;
 * out holds B*T rows of C. A block of 4 warps takes one (sequence, head) and one tile of 64
 * rows (queries in the forward and dQ kernels, keys in the dK/dV kernel); each warp owns 16 of
 * those rows. stats[(b*NH + h)*T + t] is the query's log-sum-exp in base 2 of its scores times
 * scale*log2(e), which the backward uses to remake the probabilities.
 *
 * The backward is FlashAttention-2's without atomics: one kernel makes dK and dV (a block per
 * key tile, looping over the query tiles at or after it), another dQ (a block per query tile,
 * looping over the key tiles at or before it), after a kernel that takes each query's
 * D = sum(dO * O). Every sum has a fixed order, so reruns give the same bits. dqkv is
 * overwritten, as the explicit path's GEMMs (beta 0) do. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>
#include <mma.h>

#include "cuda_attention.h"

namespace {

using namespace nvcuda;

const int kTile = 64;    /* queries or keys of a tile */
const int kWarps = 4;    /* 16 rows each */
const int kThreads = kWarps * 32;
const int kLdS = kTile + 4; /* fp32 row stride of a warp's 16 x 64 scores */
const int kLdP = kTile + 8; /* 16-bit row stride of a warp's 16 x 64 probabilities */
const float kLog2e = 1.4426950408889634f;

template <int HS> struct Dims {
  static const int kLd = HS + 8; /* 16-bit row stride of a 64 x HS tile (offsets the banks) */
  static const int kLdO = HS + 4; /* fp32 row stride of a warp's 16 x HS output */
  static const int kTileElems = kTile * kLd;
};

__device__ __forceinline__ float to_f(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float to_f(__half x) { return __half2float(x); }
template <typename E> __device__ __forceinline__ E from_f(float x);
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}
template <> __device__ __forceinline__ __half from_f<__half>(float x) {
  return __float2half_rn(x);
}

/* Rows r0.. r0+63 of one head's q, k or v (col0: its first channel in a row of `ld`
 * elements) into a 64 x HS shared tile; rows at or past T are zeros. 16-byte loads. */
template <typename E, int HS>
__device__ void load_tile(E *tile, const E *base, long long ld, int col0, int r0, int T) {
  const int vecs = HS / 8; /* 8 elements of 16 bits a load */
  for (int i = threadIdx.x; i < kTile * vecs; i += kThreads) {
    int r = i / vecs, c = (i % vecs) * 8;
    uint4 v = make_uint4(0, 0, 0, 0);
    if (r0 + r < T) v = *(const uint4 *)(base + (long long)(r0 + r) * ld + col0 + c);
    *(uint4 *)(tile + r * Dims<HS>::kLd + c) = v;
  }
}

/* 64 floats of one head's rows r0..r0+63 (stats or D), `pad` past T. */
__device__ void load_row_floats(float *dst, const float *src, int r0, int T, float pad) {
  for (int i = threadIdx.x; i < kTile; i += kThreads) dst[i] = r0 + i < T ? src[r0 + i] : pad;
}

typedef wmma::fragment<wmma::accumulator, 16, 16, 16, float> Acc;

/* out (16 x 64 fp32, row stride kLdS) = A (16 x HS rows, stride lda) times the transpose of
 * B (64 x HS rows, stride ldb): each of the 64 columns is a row of B. */
template <typename E, int HS>
__device__ void rows_times_rows_t(float *out, const E *a, const E *b) {
  typedef wmma::fragment<wmma::matrix_a, 16, 16, 16, E, wmma::row_major> FragA;
  typedef wmma::fragment<wmma::matrix_b, 16, 16, 16, E, wmma::col_major> FragBt;
  const int ld = Dims<HS>::kLd;
  FragA fa[HS / 16];
#pragma unroll
  for (int kk = 0; kk < HS / 16; kk++) wmma::load_matrix_sync(fa[kk], a + kk * 16, ld);
#pragma unroll
  for (int j = 0; j < kTile / 16; j++) {
    Acc acc;
    wmma::fill_fragment(acc, 0.0f);
#pragma unroll
    for (int kk = 0; kk < HS / 16; kk++) {
      FragBt fb;
      wmma::load_matrix_sync(fb, b + j * 16 * ld + kk * 16, ld);
      wmma::mma_sync(acc, fa[kk], fb, acc);
    }
    wmma::store_matrix_sync(out + j * 16, acc, kLdS, wmma::mem_row_major);
  }
}

/* acc[j] (16 x HS in 16-column fragments) += P (16 x 64, stride kLdP) times M (64 x HS rows of
 * a shared tile). */
template <typename E, int HS>
__device__ void accumulate_p_times_rows(Acc (&acc)[HS / 16], const E *p, const E *m) {
  typedef wmma::fragment<wmma::matrix_a, 16, 16, 16, E, wmma::row_major> FragA;
  typedef wmma::fragment<wmma::matrix_b, 16, 16, 16, E, wmma::row_major> FragB;
  const int ld = Dims<HS>::kLd;
#pragma unroll
  for (int kk = 0; kk < kTile / 16; kk++) {
    FragA fa;
    wmma::load_matrix_sync(fa, p + kk * 16, kLdP);
#pragma unroll
    for (int j = 0; j < HS / 16; j++) {
      FragB fb;
      wmma::load_matrix_sync(fb, m + kk * 16 * ld + j * 16, ld);
      wmma::mma_sync(acc[j], fa, fb, acc[j]);
    }
  }
}

/* Writes a warp's 16 x HS accumulators times `scale` to rows row0.. of `dst` (row stride ld,
 * first channel col0), rows at or past T left out; `stage`: 16 x kLdS floats of the warp. */
template <typename E, int HS>
__device__ void store_rows(E *dst, long long ld, int col0, int row0, int T, Acc (&acc)[HS / 16],
                           float scale, float *stage) {
  int lane = threadIdx.x % 32;
#pragma unroll
  for (int j = 0; j < HS / 16; j++) {
    wmma::store_matrix_sync(stage, acc[j], kLdS, wmma::mem_row_major);
    __syncwarp();
    for (int i = lane; i < 256; i += 32) {
      int r = i / 16, c = i % 16;
      if (row0 + r < T)
        dst[(long long)(row0 + r) * ld + col0 + j * 16 + c] = from_f<E>(stage[r * kLdS + c] * scale);
    }
    __syncwarp();
  }
}

/* ------------------------------------------------------------------ forward */

template <typename E, int HS>
__global__ void __launch_bounds__(kThreads) flash_forward(E *out, float *stats, const E *qkv, int T,
                                                          int C, int NH, float scale2) {
  extern __shared__ __align__(128) unsigned char smem[];
  typedef Dims<HS> D;
  E *qs = (E *)smem, *ks = qs + D::kTileElems, *vs = ks + D::kTileElems;
  float *s_all = (float *)(vs + D::kTileElems);              /* kWarps x 16 x kLdS */
  E *p_all = (E *)(s_all + kWarps * 16 * kLdS);              /* kWarps x 16 x kLdP */
  float *o_all = (float *)(p_all + kWarps * 16 * kLdP);      /* kWarps x 16 x kLdO */
  const int n_tiles = (T + kTile - 1) / kTile;
  const int qt = n_tiles - 1 - blockIdx.x; /* the longest tiles first */
  const int bh = blockIdx.y, b = bh / NH, h = bh % NH;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const long long ld = 3LL * C;
  const E *seq = qkv + (long long)b * T * ld;
  const int q0 = qt * kTile;
  float *s = s_all + warp * 16 * kLdS, *o = o_all + warp * 16 * D::kLdO;
  E *p = p_all + warp * 16 * kLdP;
  load_tile<E, HS>(qs, seq, ld, h * HS, q0, T);
  for (int i = lane; i < 16 * D::kLdO; i += 32) o[i] = 0.0f;
  /* two lanes a row: lane/2 is the row, lane%2 the half of the 64 columns */
  const int row = lane / 2, half = lane % 2, q = q0 + warp * 16 + row;
  float m = -INFINITY, l = 0.0f;
  for (int kt = 0; kt <= qt; kt++) {
    const int k0 = kt * kTile;
    __syncthreads(); /* the previous tile's readers are done */
    load_tile<E, HS>(ks, seq, ld, C + h * HS, k0, T);
    load_tile<E, HS>(vs, seq, ld, 2 * C + h * HS, k0, T);
    __syncthreads();
    rows_times_rows_t<E, HS>(s, qs + warp * 16 * D::kLd, ks);
    __syncwarp();
    float mx = -INFINITY;
    for (int c = half * 32; c < half * 32 + 32; c++) {
      int key = k0 + c;
      float v = key <= q && key < T ? s[row * kLdS + c] * scale2 : -INFINITY;
      s[row * kLdS + c] = v;
      mx = fmaxf(mx, v);
    }
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    const float m_new = fmaxf(m, mx); /* finite: key k0 <= q is in every row's tile */
    const float alpha = exp2f(m - m_new);
    float sum = 0.0f;
    for (int c = half * 32; c < half * 32 + 32; c++) {
      float e = exp2f(s[row * kLdS + c] - m_new);
      E pe = from_f<E>(e);
      p[row * kLdP + c] = pe;
      sum += to_f(pe); /* the normalizer of the rounded probabilities the product uses */
    }
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    l = alpha * l + sum;
    m = m_new;
    for (int c = half * (HS / 2); c < (half + 1) * (HS / 2); c++) o[row * D::kLdO + c] *= alpha;
    __syncwarp();
    Acc acc[HS / 16];
#pragma unroll
    for (int j = 0; j < HS / 16; j++)
      wmma::load_matrix_sync(acc[j], o + j * 16, D::kLdO, wmma::mem_row_major);
    accumulate_p_times_rows<E, HS>(acc, p, vs);
#pragma unroll
    for (int j = 0; j < HS / 16; j++)
      wmma::store_matrix_sync(o + j * 16, acc[j], D::kLdO, wmma::mem_row_major);
    __syncwarp();
  }
  if (q < T) {
    const float inv = 1.0f / l;
    E *dst = out + ((long long)b * T + q) * C + h * HS;
    for (int c = half * (HS / 2); c < (half + 1) * (HS / 2); c++)
      dst[c] = from_f<E>(o[row * D::kLdO + c] * inv);
    if (half == 0) stats[(long long)bh * T + q] = m + log2f(l);
  }
}

/* ------------------------------------------------------------------ backward */

/* d[(b*NH + h)*T + t] = sum over the head's channels of dout * out, a warp a (row, head). */
template <typename E>
__global__ void flash_dot(float *d, const E *dout, const E *out, int B, int T, int C, int NH) {
  long long w = ((long long)blockIdx.x * blockDim.x + threadIdx.x) / 32;
  int lane = threadIdx.x % 32, hs = C / NH;
  if (w >= (long long)B * T * NH) return;
  long long row = w / NH;
  int h = (int)(w % NH);
  const E *a = dout + row * C + h * hs, *o = out + row * C + h * hs;
  float acc = 0.0f;
  for (int c = lane; c < hs; c += 32) acc += to_f(a[c]) * to_f(o[c]);
  for (int k = 16; k > 0; k /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, k);
  if (lane == 0) {
    long long b = row / T, t = row % T;
    d[(b * NH + h) * T + t] = acc;
  }
}

/* A warp's 16 x 64 probabilities and score gradients from its scores s (in place: P in fp32)
 * and dP (dp): P = exp2(S scale2 - stats) where the (query, key) pair is causal, dS = P (dP - D).
 * Rows are queries when keys_are_rows is 0, keys when it is 1 (the transposed blocks of the
 * dK/dV kernel). ps, ds: P and dS in the 16-bit type (stride kLdP). */
template <typename E>
__device__ void probs_and_dscores(float *s, const float *dp, E *ps, E *ds, const float *stats,
                                  const float *dots, int row0_global, int col0_global,
                                  int keys_are_rows, int T, float scale2) {
  int lane = threadIdx.x % 32;
  for (int i = lane; i < 16 * kTile; i += 32) {
    int r = i / kTile, c = i % kTile;
    int qi = keys_are_rows ? c : r; /* index of the query in its tile's stats and D */
    int query = keys_are_rows ? col0_global + c : row0_global + r;
    int key = keys_are_rows ? row0_global + r : col0_global + c;
    float pr = key <= query && query < T ? exp2f(s[r * kLdS + c] * scale2 - stats[qi]) : 0.0f;
    ps[r * kLdP + c] = from_f<E>(pr);
    if (dp) ds[r * kLdP + c] = from_f<E>(pr * (dp[r * kLdS + c] - dots[qi]));
  }
}

/* dK and dV of the key tile blockIdx.x of head blockIdx.y. */
template <typename E, int HS>
__global__ void __launch_bounds__(kThreads) flash_backward_kv(E *dqkv, const E *qkv,
                                                              const E *dout, const float *stats,
                                                              const float *dots, int T, int C,
                                                              int NH, float scale, float scale2) {
  extern __shared__ __align__(128) unsigned char smem[];
  typedef Dims<HS> D;
  E *ks = (E *)smem, *vs = ks + D::kTileElems, *qs = vs + D::kTileElems,
    *dos = qs + D::kTileElems;
  float *s_all = (float *)(dos + D::kTileElems);       /* kWarps x 16 x kLdS: S^T, then P^T */
  float *dp_all = s_all + kWarps * 16 * kLdS;          /* kWarps x 16 x kLdS: dP^T */
  E *p_all = (E *)(dp_all + kWarps * 16 * kLdS);       /* kWarps x 16 x kLdP */
  E *ds_all = p_all + kWarps * 16 * kLdP;              /* kWarps x 16 x kLdP */
  float *st_s = (float *)(ds_all + kWarps * 16 * kLdP); /* 64 stats, 64 D */
  float *dot_s = st_s + kTile;
  const int n_tiles = (T + kTile - 1) / kTile;
  const int kt = blockIdx.x; /* the first key tiles have the most query tiles */
  const int bh = blockIdx.y, b = bh / NH, h = bh % NH, warp = threadIdx.x / 32;
  const long long ld = 3LL * C;
  const E *seq = qkv + (long long)b * T * ld, *dseq = dout + (long long)b * T * C;
  const int k0 = kt * kTile, key0 = k0 + warp * 16;
  float *s = s_all + warp * 16 * kLdS, *dp = dp_all + warp * 16 * kLdS;
  E *p = p_all + warp * 16 * kLdP, *ds = ds_all + warp * 16 * kLdP;
  load_tile<E, HS>(ks, seq, ld, C + h * HS, k0, T);
  load_tile<E, HS>(vs, seq, ld, 2 * C + h * HS, k0, T);
  Acc dk[HS / 16], dv[HS / 16];
#pragma unroll
  for (int j = 0; j < HS / 16; j++) {
    wmma::fill_fragment(dk[j], 0.0f);
    wmma::fill_fragment(dv[j], 0.0f);
  }
  for (int qt = kt; qt < n_tiles; qt++) {
    const int q0 = qt * kTile;
    __syncthreads();
    load_tile<E, HS>(qs, seq, ld, h * HS, q0, T);
    load_tile<E, HS>(dos, dseq, C, h * HS, q0, T);
    load_row_floats(st_s, stats + (long long)bh * T, q0, T, INFINITY);
    load_row_floats(dot_s, dots + (long long)bh * T, q0, T, 0.0f);
    __syncthreads();
    rows_times_rows_t<E, HS>(s, ks + warp * 16 * D::kLd, qs);   /* S^T: keys x queries */
    rows_times_rows_t<E, HS>(dp, vs + warp * 16 * D::kLd, dos); /* dP^T = V dO^T */
    __syncwarp();
    probs_and_dscores<E>(s, dp, p, ds, st_s, dot_s, key0, q0, 1, T, scale2);
    __syncwarp();
    accumulate_p_times_rows<E, HS>(dv, p, dos); /* dV += P^T dO */
    accumulate_p_times_rows<E, HS>(dk, ds, qs); /* dK += dS^T Q (times scale below) */
  }
  __syncthreads();
  store_rows<E, HS>(dqkv + (long long)b * T * ld, ld, C + h * HS, key0, T, dk, scale, s);
  store_rows<E, HS>(dqkv + (long long)b * T * ld, ld, 2 * C + h * HS, key0, T, dv, 1.0f, s);
}

/* dQ of the query tile of head blockIdx.y. */
template <typename E, int HS>
__global__ void __launch_bounds__(kThreads) flash_backward_q(E *dqkv, const E *qkv,
                                                             const E *dout, const float *stats,
                                                             const float *dots, int T, int C,
                                                             int NH, float scale, float scale2) {
  extern __shared__ __align__(128) unsigned char smem[];
  typedef Dims<HS> D;
  E *qs = (E *)smem, *dos = qs + D::kTileElems, *ks = dos + D::kTileElems,
    *vs = ks + D::kTileElems;
  float *s_all = (float *)(vs + D::kTileElems);
  float *dp_all = s_all + kWarps * 16 * kLdS;
  E *p_all = (E *)(dp_all + kWarps * 16 * kLdS);
  E *ds_all = p_all + kWarps * 16 * kLdP;
  float *st_s = (float *)(ds_all + kWarps * 16 * kLdP);
  float *dot_s = st_s + kTile;
  const int n_tiles = (T + kTile - 1) / kTile;
  const int qt = n_tiles - 1 - blockIdx.x;
  const int bh = blockIdx.y, b = bh / NH, h = bh % NH, warp = threadIdx.x / 32;
  const long long ld = 3LL * C;
  const E *seq = qkv + (long long)b * T * ld, *dseq = dout + (long long)b * T * C;
  const int q0 = qt * kTile, query0 = q0 + warp * 16;
  float *s = s_all + warp * 16 * kLdS, *dp = dp_all + warp * 16 * kLdS;
  E *p = p_all + warp * 16 * kLdP, *ds = ds_all + warp * 16 * kLdP;
  load_tile<E, HS>(qs, seq, ld, h * HS, q0, T);
  load_tile<E, HS>(dos, dseq, C, h * HS, q0, T);
  load_row_floats(st_s, stats + (long long)bh * T, q0, T, INFINITY);
  load_row_floats(dot_s, dots + (long long)bh * T, q0, T, 0.0f);
  Acc dq[HS / 16];
#pragma unroll
  for (int j = 0; j < HS / 16; j++) wmma::fill_fragment(dq[j], 0.0f);
  for (int kt = 0; kt <= qt; kt++) {
    const int k0 = kt * kTile;
    __syncthreads();
    load_tile<E, HS>(ks, seq, ld, C + h * HS, k0, T);
    load_tile<E, HS>(vs, seq, ld, 2 * C + h * HS, k0, T);
    __syncthreads();
    rows_times_rows_t<E, HS>(s, qs + warp * 16 * D::kLd, ks);   /* S */
    rows_times_rows_t<E, HS>(dp, dos + warp * 16 * D::kLd, vs); /* dP = dO V^T */
    __syncwarp();
    probs_and_dscores<E>(s, dp, p, ds, st_s + warp * 16, dot_s + warp * 16, query0, k0, 0, T,
                         scale2);
    __syncwarp();
    accumulate_p_times_rows<E, HS>(dq, ds, ks); /* dQ += dS K */
  }
  __syncthreads();
  store_rows<E, HS>(dqkv + (long long)b * T * ld, ld, h * HS, query0, T, dq, scale, s);
}

/* ------------------------------------------------------------------ launchers */

template <int HS> size_t forward_smem(void) {
  return 3 * Dims<HS>::kTileElems * 2 + kWarps * 16 * (kLdS * 4 + kLdP * 2 + Dims<HS>::kLdO * 4);
}
template <int HS> size_t backward_smem(void) {
  return 4 * Dims<HS>::kTileElems * 2 + kWarps * 16 * (2 * kLdS * 4 + 2 * kLdP * 2) +
         2 * kTile * 4;
}

template <typename E, int HS>
cudaError_t launch_forward(const AxkCtx *k, void *out, float *stats, const void *qkv, int B,
                           int T, int C, int NH) {
  size_t smem = forward_smem<HS>();
  cudaError_t e = cudaFuncSetAttribute(flash_forward<E, HS>,
                                       cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
  if (e != cudaSuccess) return e;
  dim3 grid((T + kTile - 1) / kTile, B * NH);
  float scale2 = kLog2e / sqrtf((float)HS);
  flash_forward<E, HS><<<grid, kThreads, smem, k->stream>>>((E *)out, stats, (const E *)qkv, T,
                                                            C, NH, scale2);
  return cudaGetLastError();
}

template <typename E, int HS>
cudaError_t launch_backward(const AxkCtx *k, void *dqkv, float *dots, const void *dout,
                            const void *out, const float *stats, const void *qkv, int B, int T,
                            int C, int NH) {
  long long warps = (long long)B * T * NH;
  flash_dot<E><<<(unsigned)((warps * 32 + 255) / 256), 256, 0, k->stream>>>(
      dots, (const E *)dout, (const E *)out, B, T, C, NH);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return e;
  size_t smem = backward_smem<HS>();
  e = cudaFuncSetAttribute(flash_backward_kv<E, HS>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           (int)smem);
  if (e == cudaSuccess)
    e = cudaFuncSetAttribute(flash_backward_q<E, HS>,
                             cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
  if (e != cudaSuccess) return e;
  dim3 grid((T + kTile - 1) / kTile, B * NH);
  float scale = 1.0f / sqrtf((float)HS), scale2 = kLog2e * scale;
  flash_backward_kv<E, HS><<<grid, kThreads, smem, k->stream>>>(
      (E *)dqkv, (const E *)qkv, (const E *)dout, stats, dots, T, C, NH, scale, scale2);
  flash_backward_q<E, HS><<<grid, kThreads, smem, k->stream>>>(
      (E *)dqkv, (const E *)qkv, (const E *)dout, stats, dots, T, C, NH, scale, scale2);
  return cudaGetLastError();
}

/* Runs the statement with E the 16-bit type of dtype and HS the head size (a template
 * argument); other types and sizes are not supported (axk_attention_supported). */
#define AXK_FLASH_DISPATCH(dtype, hs, ...)                                                       \
  if (dtype == AX_DTYPE_BF16) {                                                                  \
    typedef __nv_bfloat16 E;                                                                     \
    AXK_FLASH_HS(hs, __VA_ARGS__);                                                               \
  } else if (dtype == AX_DTYPE_F16) {                                                            \
    typedef __half E;                                                                            \
    AXK_FLASH_HS(hs, __VA_ARGS__);                                                               \
  }                                                                                              \
  return cudaErrorInvalidValue;
#define AXK_FLASH_HS(hs, ...)                                                                    \
  switch (hs) {                                                                                  \
  case 16: { const int HS = 16; return __VA_ARGS__; }                                            \
  case 32: { const int HS = 32; return __VA_ARGS__; }                                            \
  case 64: { const int HS = 64; return __VA_ARGS__; }                                            \
  case 128: { const int HS = 128; return __VA_ARGS__; }                                          \
  default: break;                                                                                \
  }

} /* namespace */

extern "C" {

int axk_attention_supported(AxDType dtype, int C, int NH) {
  if (dtype != AX_DTYPE_BF16 && dtype != AX_DTYPE_F16) return 0;
  if (NH <= 0 || C % NH) return 0;
  int hs = C / NH;
  return hs == 16 || hs == 32 || hs == 64 || hs == 128;
}

cudaError_t axk_attention_forward(const AxkCtx *k, void *out, float *stats, const void *qkv,
                                  int B, int T, int C, int NH) {
  if (B <= 0 || T <= 0) return cudaSuccess;
  if (!axk_attention_supported(k->dtype, C, NH)) return cudaErrorInvalidValue;
  AXK_FLASH_DISPATCH(k->dtype, C / NH,
                     launch_forward<E, HS>(k, out, stats, qkv, B, T, C, NH));
}

cudaError_t axk_attention_backward(const AxkCtx *k, void *dqkv, float *dots, const void *dout,
                                   const void *out, const float *stats, const void *qkv, int B,
                                   int T, int C, int NH) {
  if (B <= 0 || T <= 0) return cudaSuccess;
  if (!axk_attention_supported(k->dtype, C, NH)) return cudaErrorInvalidValue;
  AXK_FLASH_DISPATCH(k->dtype, C / NH,
                     launch_backward<E, HS>(k, dqkv, dots, dout, out, stats, qkv, B, T, C, NH));
}

} /* extern "C" */
