/* cuda_device.cuh — what the CUDA backend's kernel files share (cuda_kernels.cu,
 * cuda_tp_kernels.cu): the storage types and their fp32 conversions, the dispatch on the compute
 * type, warp and block reductions, grid-stride indexing and launch shapes. Device code only;
 * everything in an unnamed namespace, so each file gets its own copy. */
#ifndef AX_CUDA_DEVICE_CUH
#define AX_CUDA_DEVICE_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>

#include "cuda_kernels.h"

namespace {

const int kBlock = 256;  /* threads per block of element-wise and row kernels */
const int kWarp = 32;

/* ------------------------------------------------------------------ storage types */

__device__ __forceinline__ float to_f(float x) { return x; }
__device__ __forceinline__ float to_f(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float to_f(__half x) { return __half2float(x); }

template <typename E> __device__ __forceinline__ E from_f(float x);
template <> __device__ __forceinline__ float from_f<float>(float x) { return x; }
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}
template <> __device__ __forceinline__ __half from_f<__half>(float x) {
  return __float2half_rn(x);
}

/* Runs the statement with E bound to the storage type of `dtype`. */
#define AXK_DISPATCH(dtype, ...)                                                                 \
  switch (dtype) {                                                                               \
  case AX_DTYPE_F32: {                                                                           \
    typedef float E;                                                                             \
    __VA_ARGS__;                                                                                 \
  } break;                                                                                       \
  case AX_DTYPE_BF16: {                                                                          \
    typedef __nv_bfloat16 E;                                                                     \
    __VA_ARGS__;                                                                                 \
  } break;                                                                                       \
  case AX_DTYPE_F16: {                                                                           \
    typedef __half E;                                                                            \
    __VA_ARGS__;                                                                                 \
  } break;                                                                                       \
  default: return cudaErrorInvalidValue;                                                         \
  }

/* ------------------------------------------------------------------ reductions */

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = kWarp / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ double warp_sum_d(double v) {
  for (int o = kWarp / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
  for (int o = kWarp / 2; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

/* Sum (or max) over the block; every thread gets the result. blockDim.x: a multiple of 32. */
template <bool MAX> __device__ float block_reduce(float v) {
  __shared__ float part[kWarp];
  int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp, n = blockDim.x / kWarp;
  v = MAX ? warp_max(v) : warp_sum(v);
  __syncthreads(); /* a previous call's readers are done with part[] */
  if (lane == 0) part[warp] = v;
  __syncthreads();
  float t = lane < n ? part[lane] : (MAX ? -INFINITY : 0.0f);
  return MAX ? warp_max(t) : warp_sum(t);
}

__device__ __forceinline__ size_t thread_index() {
  return (size_t)blockIdx.x * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ size_t thread_count() { return (size_t)gridDim.x * blockDim.x; }

/* Row served by this warp in a one-warp-per-row launch; lane = position in the warp. */
__device__ __forceinline__ long long warp_row(int *lane) {
  *lane = threadIdx.x % kWarp;
  return (long long)blockIdx.x * (blockDim.x / kWarp) + threadIdx.x / kWarp;
}

/* ------------------------------------------------------------------ launch shapes */

/* Blocks for a grid-stride loop over n elements: enough to fill the device, no more. */
inline unsigned stride_blocks(const AxkCtx *k, size_t n) {
  size_t want = (n + kBlock - 1) / kBlock, cap = (size_t)(k->sms > 0 ? k->sms : 16) * 32;
  if (want < 1) want = 1;
  return (unsigned)(want < cap ? want : cap);
}

/* Blocks for one warp per row. */
inline unsigned row_blocks(long long rows) {
  long long per = kBlock / kWarp, b = (rows + per - 1) / per;
  return (unsigned)(b > 0 ? b : 1);
}

inline cudaError_t launched() { return cudaGetLastError(); }

} // namespace

#endif
