/* cuda_tp_kernels.cu — the CUDA backend's kernels of the tensor-parallel layers (fp32, bf16,
 * fp16 storage; fp32 arithmetic and row statistics), with the launchers declared in
 * cuda_tp_kernels.h; the CPU's are src/backend/cpu_tp_kernels.c.
 *
 * Layout of the work: LayerNorm's row pieces give one warp to a row (as cuda_kernels.cu's
 * LayerNorm); the vocabulary slice's cross-entropy pieces give one block to a row (a slice is
 * up to the whole vocabulary wide); the embedding lookup is a grid-stride loop. The weight and
 * bias gradients of LayerNorm and the embedding gradient are cuda_kernels.cu's deterministic
 * column reductions (axk_layernorm_param_grads, axk_embed_backward_range). */
#include "cuda_device.cuh"
#include "cuda_tp_kernels.h"

namespace {

/* ------------------------------------------------------------------ LayerNorm over a slice */

/* out[row] = the row's sum, or with center the sum of squared deviations from
 * center[row] / C_total. */
template <typename E>
__global__ void row_sums(float *out, const E *x, const float *center, int Ct, int N, int C) {
  int lane;
  long long row = warp_row(&lane);
  if (row >= N) return;
  const E *xr = x + row * C;
  float s = 0;
  if (center) {
    float m = center[row] / (float)Ct;
    for (int c = lane; c < C; c += kWarp) {
      float d = to_f(xr[c]) - m;
      s += d * d;
    }
  } else {
    for (int c = lane; c < C; c += kWarp) s += to_f(xr[c]);
  }
  s = warp_sum(s);
  if (lane == 0) out[row] = s;
}

/* mean and rstd come in as the whole row's sums and leave as its mean and 1/sqrt(var + eps):
 * every lane reads them before lane 0 overwrites them. */
template <typename E>
__global__ void layernorm_apply(E *out, float *mean, float *rstd, const E *x, const E *w,
                                const E *b, int Ct, int N, int C) {
  int lane;
  long long row = warp_row(&lane);
  if (row >= N) return;
  float m = mean[row] / (float)Ct, r = 1.0f / sqrtf(rstd[row] / (float)Ct + 1e-5f);
  __syncwarp();
  const E *xr = x + row * C;
  E *o = out + row * C;
  for (int c = lane; c < C; c += kWarp)
    o[c] = from_f<E>((to_f(xr[c]) - m) * r * to_f(w[c]) + to_f(b[c]));
  if (lane == 0) {
    mean[row] = m;
    rstd[row] = r;
  }
}

template <typename E>
__global__ void layernorm_bwd_sums(float *sums, const E *dout, const E *x, const E *w,
                                   const float *mean, const float *rstd, int N, int C) {
  int lane;
  long long row = warp_row(&lane);
  if (row >= N) return;
  const E *xr = x + row * C, *d = dout + row * C;
  float m = mean[row], r = rstd[row], s0 = 0, s1 = 0;
  for (int c = lane; c < C; c += kWarp) {
    float dn = to_f(w[c]) * to_f(d[c]);
    s0 += dn;
    s1 += dn * (to_f(xr[c]) - m) * r;
  }
  s0 = warp_sum(s0);
  s1 = warp_sum(s1);
  if (lane == 0) {
    sums[2 * row] = s0;
    sums[2 * row + 1] = s1;
  }
}

template <typename E>
__global__ void layernorm_bwd_apply_rows(E *__restrict__ dinp, const E *__restrict__ dout,
                                         const E *__restrict__ x, const E *__restrict__ w,
                                         const float *__restrict__ mean,
                                         const float *__restrict__ rstd,
                                         const float *__restrict__ sums, int Ct, int N, int C) {
  int lane;
  long long row = warp_row(&lane);
  if (row >= N) return;
  const E *xr = x + row * C, *d = dout + row * C;
  float m = mean[row], r = rstd[row];
  float dn_mean = sums[2 * row] / (float)Ct, dnx_mean = sums[2 * row + 1] / (float)Ct;
  E *di = dinp + row * C;
  for (int c = lane; c < C; c += kWarp) {
    float norm = (to_f(xr[c]) - m) * r;
    di[c] = from_f<E>(to_f(di[c]) + (to_f(w[c]) * to_f(d[c]) - dn_mean - norm * dnx_mean) * r);
  }
}

/* ------------------------------------------------------------------ embedding over a range */

template <typename E>
__global__ void embed_range_fwd(E *out, const int32_t *tok, const E *wte, const E *wpe, int v0,
                                int v1, size_t N, int T, int C) {
  for (size_t i = thread_index(); i < N * C; i += thread_count()) {
    size_t row = i / C, c = i % C;
    int t = tok[row];
    float e = t >= v0 && t < v1 ? to_f(wte[(size_t)(t - v0) * C + c]) : 0.0f;
    float p = wpe ? to_f(wpe[(row % T) * C + c]) : 0.0f;
    out[i] = from_f<E>(e + p);
  }
}

/* ------------------------------------------------------------------ cross-entropy over a slice */

template <typename E> __global__ void xent_row_max(float *mx, const E *logits, int nv, int ld) {
  const E *row = logits + (size_t)blockIdx.x * ld;
  float m = -INFINITY;
  for (int j = threadIdx.x; j < nv; j += blockDim.x) m = fmaxf(m, to_f(row[j]));
  m = block_reduce<true>(m);
  if (threadIdx.x == 0) mx[blockIdx.x] = m;
}

template <typename E>
__global__ void xent_sums(float *sums, float *mx, const float *maxima, int n_maxima,
                          const E *logits, const int32_t *targets, int v0, int N, int nv,
                          int ld) {
  size_t i = blockIdx.x;
  const E *row = logits + i * ld;
  float m = -INFINITY, s = 0;
  for (int k = 0; k < n_maxima; k++) m = fmaxf(m, maxima[(size_t)k * N + i]);
  for (int j = threadIdx.x; j < nv; j += blockDim.x) s += expf(to_f(row[j]) - m);
  s = block_reduce<false>(s);
  if (threadIdx.x != 0) return;
  int t = targets[i] - v0;
  mx[i] = m;
  sums[2 * i] = s;
  sums[2 * i + 1] = t >= 0 && t < nv ? to_f(row[t]) : 0.0f;
}

/* Each element of the row is written by one thread; the target's gradient is its softmax
 * minus dloss, as the CPU kernel's two steps. */
template <typename E>
__global__ void xent_finish(float *losses, E *logits, const float *mx, const float *sums,
                            const int32_t *targets, int v0, int nv, int ld, float dloss) {
  size_t i = blockIdx.x;
  float m = mx[i], sum = sums[2 * i];
  if (threadIdx.x == 0) losses[i] = logf(sum) + m - sums[2 * i + 1];
  if (dloss == 0.0f) return;
  E *row = logits + i * ld;
  int t = targets[i] - v0;
  for (int j = threadIdx.x; j < nv; j += blockDim.x) {
    float g = dloss * expf(to_f(row[j]) - m) / sum;
    row[j] = from_f<E>(j == t ? g - dloss : g);
  }
}

} // namespace

/* ------------------------------------------------------------------ launchers */

extern "C" {

cudaError_t axk_row_sums(const AxkCtx *k, float *out, const void *x, const float *center,
                         int C_total, int N, int C) {
  if (N <= 0) return cudaSuccess;
  AXK_DISPATCH(k->dtype, row_sums<E><<<row_blocks(N), kBlock, 0, k->stream>>>(
                             out, (const E *)x, center, C_total, N, C));
  return launched();
}

cudaError_t axk_layernorm_apply(const AxkCtx *k, void *out, float *mean, float *rstd,
                                const void *x, const void *w, const void *b, int C_total, int N,
                                int C) {
  if (N <= 0) return cudaSuccess;
  AXK_DISPATCH(k->dtype, layernorm_apply<E><<<row_blocks(N), kBlock, 0, k->stream>>>(
                             (E *)out, mean, rstd, (const E *)x, (const E *)w, (const E *)b,
                             C_total, N, C));
  return launched();
}

cudaError_t axk_layernorm_backward_sums(const AxkCtx *k, float *sums, const void *dout,
                                        const void *x, const void *w, const float *mean,
                                        const float *rstd, int N, int C) {
  if (N <= 0) return cudaSuccess;
  AXK_DISPATCH(k->dtype, layernorm_bwd_sums<E><<<row_blocks(N), kBlock, 0, k->stream>>>(
                             sums, (const E *)dout, (const E *)x, (const E *)w, mean, rstd, N,
                             C));
  return launched();
}

cudaError_t axk_layernorm_backward_apply(const AxkCtx *k, void *dinp, void *dw, void *db,
                                         const void *dout, const void *x, const void *w,
                                         const float *mean, const float *rstd,
                                         const float *sums, int C_total, int N, int C) {
  if (N <= 0 || C <= 0) return cudaSuccess;
  AXK_DISPATCH(k->dtype, layernorm_bwd_apply_rows<E><<<row_blocks(N), kBlock, 0, k->stream>>>(
                             (E *)dinp, (const E *)dout, (const E *)x, (const E *)w, mean, rstd,
                             sums, C_total, N, C));
  cudaError_t e = launched();
  return e != cudaSuccess ? e : axk_layernorm_param_grads(k, dw, db, dout, x, mean, rstd, N, C);
}

cudaError_t axk_embed_range_forward(const AxkCtx *k, void *out, const int32_t *tokens,
                                    const void *wte, const void *wpe, int v0, int v1, int N,
                                    int T, int C) {
  size_t n = (size_t)N * C;
  if (n == 0) return cudaSuccess;
  AXK_DISPATCH(k->dtype, embed_range_fwd<E><<<stride_blocks(k, n), kBlock, 0, k->stream>>>(
                             (E *)out, tokens, (const E *)wte, (const E *)wpe, v0, v1, (size_t)N,
                             T, C));
  return launched();
}

cudaError_t axk_xent_row_max(const AxkCtx *k, float *mx, const void *logits, int N, int nv,
                             int ld) {
  if (N <= 0) return cudaSuccess;
  AXK_DISPATCH(k->dtype, xent_row_max<E><<<N, kBlock, 0, k->stream>>>(mx, (const E *)logits, nv,
                                                                        ld));
  return launched();
}

cudaError_t axk_xent_sums(const AxkCtx *k, float *sums, float *mx, const float *maxima,
                          int n_maxima, const void *logits, const int32_t *targets, int v0,
                          int N, int nv, int ld) {
  if (N <= 0) return cudaSuccess;
  AXK_DISPATCH(k->dtype, xent_sums<E><<<N, kBlock, 0, k->stream>>>(
                             sums, mx, maxima, n_maxima, (const E *)logits, targets, v0, N, nv,
                             ld));
  return launched();
}

cudaError_t axk_xent_finish(const AxkCtx *k, float *losses, void *logits, const float *mx,
                            const float *sums, const int32_t *targets, int v0, int N, int nv,
                            int ld, float dloss) {
  if (N <= 0) return cudaSuccess;
  AXK_DISPATCH(k->dtype, xent_finish<E><<<N, kBlock, 0, k->stream>>>(
                             losses, (E *)logits, mx, sums, targets, v0, nv, ld, dloss));
  return launched();
}

} // extern "C"
