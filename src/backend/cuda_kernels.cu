/* cuda_kernels.cu — the CUDA backend's element-wise, row and column kernels (fp32, bf16, fp16
 * storage; fp32 arithmetic), with the launchers declared in cuda_kernels.h.
 *
 * Layout of the work: element-wise kernels are grid-stride loops; row kernels (LayerNorm,
 * causal softmax) give one warp to a row; cross-entropy gives one block to a row; column
 * reductions (LayerNorm and bias gradients) give a block to a strip of 32 columns and a span
 * of rows, whose 32 row lanes are combined in a fixed order into a partial sum in the scratch,
 * and the spans' partial sums are then added in order; the token-embedding gradient gives each
 * thread one column of the rows whose token falls in its residue class (no atomics, rows in
 * order). So every kernel is deterministic. Gradients accumulate (+=) exactly where backend.h
 * says. */
#include <limits.h>

#include "cuda_device.cuh"

namespace {

const int kTokenGroups = 32; /* residue classes of token ids in the embedding backward */

/* ------------------------------------------------------------------ embedding */

template <typename E>
__global__ void encoder_fwd(E *out, const int32_t *tok, const E *wte, const E *wpe, size_t N,
                            int T, int C) {
  for (size_t i = thread_index(); i < N * C; i += thread_count()) {
    size_t row = i / C, c = i % C;
    out[i] = from_f<E>(to_f(wte[(size_t)tok[row] * C + c]) + to_f(wpe[(row % T) * C + c]));
  }
}

/* Thread (column c, class g) adds, in row order, the rows whose token t has t % groups == g:
 * each element of dwte has exactly one writer. Only tokens in [v0, v1) count; dwte's row 0 is
 * token v0's (the whole vocabulary: v0 = 0, v1 = INT_MAX). */
template <typename E>
__global__ void encoder_bwd_wte(E *dwte, const E *dout, const int32_t *tok, int v0, int v1,
                                int N, int C) {
  int c = blockIdx.x * blockDim.x + threadIdx.x, g = blockIdx.y;
  if (c >= C) return;
  for (int i = 0; i < N; i++) {
    int t = tok[i];
    if (t < v0 || t >= v1 || t % kTokenGroups != g) continue;
    size_t at = (size_t)(t - v0) * C + c;
    dwte[at] = from_f<E>(to_f(dwte[at]) + to_f(dout[(size_t)i * C + c]));
  }
}

template <typename E>
__global__ void encoder_bwd_wpe(E *dwpe, const E *dout, int B, int T, int C) {
  for (size_t i = thread_index(); i < (size_t)T * C; i += thread_count()) {
    float s = 0;
    for (int b = 0; b < B; b++) s += to_f(dout[(size_t)b * T * C + i]);
    dwpe[i] = from_f<E>(to_f(dwpe[i]) + s);
  }
}

/* ------------------------------------------------------------------ layernorm */

template <typename E>
__global__ void layernorm_fwd(E *out, float *mean, float *rstd, const E *inp, const E *w,
                              const E *b, int N, int C) {
  int lane;
  long long row = warp_row(&lane);
  if (row >= N) return;
  const E *x = inp + row * C;
  float s = 0;
  for (int c = lane; c < C; c += kWarp) s += to_f(x[c]);
  float m = warp_sum(s) / C, v = 0;
  for (int c = lane; c < C; c += kWarp) {
    float d = to_f(x[c]) - m;
    v += d * d;
  }
  float r = 1.0f / sqrtf(warp_sum(v) / C + 1e-5f);
  E *o = out + row * C;
  for (int c = lane; c < C; c += kWarp)
    o[c] = from_f<E>((to_f(x[c]) - m) * r * to_f(w[c]) + to_f(b[c]));
  if (lane == 0) {
    mean[row] = m;
    rstd[row] = r;
  }
}

/* The arrays never overlap (backend.h: dinp accumulates, its own buffer), so __restrict__
 * lets the second loop's loads run ahead of its stores. */
template <typename E>
__global__ void layernorm_bwd_rows(E *__restrict__ dinp, const E *__restrict__ dout,
                                   const E *__restrict__ inp, const E *__restrict__ w,
                                   const float *__restrict__ mean,
                                   const float *__restrict__ rstd, int N, int C) {
  int lane;
  long long row = warp_row(&lane);
  if (row >= N) return;
  const E *__restrict__ x = inp + row * C, *__restrict__ d = dout + row * C;
  float m = mean[row], r = rstd[row], a = 0, bn = 0;
  for (int c = lane; c < C; c += kWarp) {
    float wd = to_f(w[c]) * to_f(d[c]);
    a += wd;
    bn += wd * (to_f(x[c]) - m);
  }
  float dnorm_mean = warp_sum(a) / C, dnorm_norm_mean = warp_sum(bn) * r / C;
  E *__restrict__ di = dinp + row * C;
#pragma unroll 4
  for (int c = lane; c < C; c += kWarp) {
    float norm = (to_f(x[c]) - m) * r, wd = to_f(w[c]) * to_f(d[c]);
    di[c] = from_f<E>(to_f(di[c]) + (wd - dnorm_mean - norm * dnorm_norm_mean) * r);
  }
}

/* Column sums of dout over the rows of span blockIdx.y (spans of `span` rows) and, with LN, of
 * dout * norm: partial sums into part_b and part_w, row blockIdx.y (C floats a row).
 * Block (32, 32): x = column of the strip, y = row lane (rows y, y+32, ... of the span). */
template <typename E, bool LN>
__global__ void column_partials(float *part_w, float *part_b, const E *dout, const E *inp,
                                const float *mean, const float *rstd, int N, int C, int span) {
  __shared__ float sw[kWarp][kWarp + 1], sb[kWarp][kWarp + 1];
  int tx = threadIdx.x, ty = threadIdx.y, c = blockIdx.x * kWarp + tx;
  int lo = blockIdx.y * span, hi = lo + span < N ? lo + span : N;
  float aw = 0, ab = 0;
  if (c < C) {
    for (int i = lo + ty; i < hi; i += kWarp) {
      size_t at = (size_t)i * C + c;
      float d = to_f(dout[at]);
      ab += d;
      if (LN) aw += d * (to_f(inp[at]) - mean[i]) * rstd[i];
    }
  }
  sw[ty][tx] = aw;
  sb[ty][tx] = ab;
  __syncthreads();
  if (ty != 0 || c >= C) return;
  float tw = 0, tb = 0;
  for (int k = 0; k < kWarp; k++) {
    tw += sw[k][tx];
    tb += sb[k][tx];
  }
  part_b[(size_t)blockIdx.y * C + c] = tb;
  if (LN) part_w[(size_t)blockIdx.y * C + c] = tw;
}

/* db (+=) and, with LN, dw (+=): the spans' partial sums of each column, in span order. */
template <typename E, bool LN>
__global__ void column_finish(E *dw, E *db, const float *part_w, const float *part_b, int C,
                              int spans) {
  for (size_t c = thread_index(); c < (size_t)C; c += thread_count()) {
    float tw = 0, tb = 0;
    for (int s = 0; s < spans; s++) {
      tb += part_b[(size_t)s * C + c];
      if (LN) tw += part_w[(size_t)s * C + c];
    }
    db[c] = from_f<E>(to_f(db[c]) + tb);
    if (LN) dw[c] = from_f<E>(to_f(dw[c]) + tw);
  }
}

/* ------------------------------------------------------------------ bias, GELU (tanh form) */

template <typename E>
__global__ void bias_residual(E *out, const E *bias, const E *res, size_t N, int C) {
  for (size_t i = thread_index(); i < N * C; i += thread_count()) {
    float v = to_f(bias[i % C]);
    out[i] = from_f<E>(res ? v + to_f(res[i]) : v);
  }
}

/* out may alias x: each element is read before it is written, by the same thread. */
template <typename E>
__global__ void dropout(E *out, const E *x, const E *res, AxDropoutMask m) {
  size_t n = (size_t)m.rows * m.cols;
  for (size_t i = thread_index(); i < n; i += thread_count()) {
    int r = (int)(i / m.cols), c = (int)(i % m.cols);
    float kept = ax_dropout_keeps(&m, r, c) ? to_f(x[i]) * m.scale : 0.0f;
    out[i] = from_f<E>(res ? to_f(res[i]) + kept : kept);
  }
}

#define GELU_SCALE 0.7978845608028654f /* sqrt(2/pi) */
#define GELU_CUBE 0.044715f

template <typename E> __global__ void gelu_fwd(E *out, const E *inp, size_t n) {
  for (size_t i = thread_index(); i < n; i += thread_count()) {
    float v = to_f(inp[i]), u = GELU_SCALE * fmaf(GELU_CUBE * v, v * v, v);
    out[i] = from_f<E>(0.5f * v * (1.0f + tanhf(u)));
  }
}

/* dinp may alias dout: each element is read before it is written, by the same thread. */
template <typename E> __global__ void gelu_bwd(E *dinp, const E *inp, const E *dout, size_t n) {
  for (size_t i = thread_index(); i < n; i += thread_count()) {
    float v = to_f(inp[i]), u = GELU_SCALE * fmaf(GELU_CUBE * v, v * v, v);
    float t = tanhf(u), sech2 = 1.0f - t * t;
    float g = 0.5f * (1.0f + t) +
              0.5f * v * sech2 * GELU_SCALE * (1.0f + 3.0f * GELU_CUBE * v * v);
    dinp[i] = from_f<E>(g * to_f(dout[i]));
  }
}

/* ------------------------------------------------------------------ causal softmax */

template <typename E> __global__ void softmax_fwd(E *att, long long rows, int T) {
  int lane;
  long long row = warp_row(&lane);
  if (row >= rows) return;
  E *p = att + row * T;
  int len = (int)(row % T) + 1; /* row t attends to 0..t */
  float m = -INFINITY, s = 0;
  for (int j = lane; j < len; j += kWarp) m = fmaxf(m, to_f(p[j]));
  m = warp_max(m);
  for (int j = lane; j < len; j += kWarp) s += expf(to_f(p[j]) - m);
  float inv = 1.0f / warp_sum(s);
  for (int j = lane; j < T; j += kWarp)
    p[j] = from_f<E>(j < len ? expf(to_f(p[j]) - m) * inv : 0.0f);
}

template <typename E> __global__ void softmax_bwd(E *datt, const E *att, long long rows, int T) {
  int lane;
  long long row = warp_row(&lane);
  if (row >= rows) return;
  E *d = datt + row * T;
  const E *p = att + row * T;
  int len = (int)(row % T) + 1;
  float dot = 0;
  for (int j = lane; j < len; j += kWarp) dot += to_f(p[j]) * to_f(d[j]);
  dot = warp_sum(dot);
  for (int j = lane; j < T; j += kWarp)
    d[j] = from_f<E>(j < len ? to_f(p[j]) * (to_f(d[j]) - dot) : 0.0f);
}

/* ------------------------------------------------------------------ cross-entropy */

/* One block per row. The target logit is read before any thread writes the row (two block
 * reductions with barriers lie between). With dloss != 0 the padded columns (V..ldv) get 0. */
template <typename E>
__global__ void crossentropy(float *losses, E *logits, const int32_t *targets, int V, int ldv,
                             float dloss) {
  E *x = logits + (size_t)blockIdx.x * ldv;
  int y = targets[blockIdx.x];
  /* one pass for the maximum and the sum of exponentials: the thread's running sum is
   * rescaled when its maximum grows, then to the row's maximum */
  float target = to_f(x[y]), mt = -INFINITY, st = 0;
  for (int j = threadIdx.x; j < V; j += blockDim.x) {
    float v = to_f(x[j]);
    if (v > mt) {
      st = st * expf(mt - v) + 1.0f;
      mt = v;
    } else {
      st += expf(v - mt);
    }
  }
  float m = block_reduce<true>(mt);
  float s = block_reduce<false>(mt == -INFINITY ? 0.0f : st * expf(mt - m));
  if (threadIdx.x == 0) losses[blockIdx.x] = logf(s) + m - target;
  if (dloss == 0.0f) return;
  float k = dloss / s;
  for (int j = threadIdx.x; j < V; j += blockDim.x) {
    float g = expf(to_f(x[j]) - m) * k;
    x[j] = from_f<E>(j == y ? g - dloss : g);
  }
  for (int j = V + threadIdx.x; j < ldv; j += blockDim.x) x[j] = from_f<E>(0.0f);
}

/* ------------------------------------------------------------------ vector ops */

/* Fixed grid (AXK_SUMSQ_BLOCKS x kBlock): runs of 64 squares summed in float, runs in double. */
template <typename E> __global__ void sumsq(double *partials, const E *x, size_t n) {
  __shared__ double part[kBlock / kWarp];
  double acc = 0;
  float run = 0;
  int k = 0;
  for (size_t i = thread_index(); i < n; i += thread_count()) {
    float v = to_f(x[i]);
    run += v * v;
    if (++k == 64) {
      acc += run;
      run = 0;
      k = 0;
    }
  }
  acc = warp_sum_d(acc + run);
  int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  if (lane == 0) part[warp] = acc;
  __syncthreads();
  if (threadIdx.x != 0) return;
  double t = 0;
  for (int w = 0; w < kBlock / kWarp; w++) t += part[w];
  partials[blockIdx.x] = t;
}

template <typename E> __global__ void scale(E *x, float s, size_t n) {
  for (size_t i = thread_index(); i < n; i += thread_count()) x[i] = from_f<E>(to_f(x[i]) * s);
}

template <typename E> __global__ void add(E *dst, const E *src, size_t n) {
  for (size_t i = thread_index(); i < n; i += thread_count())
    dst[i] = from_f<E>(to_f(dst[i]) + to_f(src[i]));
}

template <typename E> __global__ void from_f32(E *dst, const float *src, size_t n) {
  for (size_t i = thread_index(); i < n; i += thread_count()) dst[i] = from_f<E>(src[i]);
}

template <typename E> __global__ void to_f32(float *dst, const E *src, size_t n) {
  for (size_t i = thread_index(); i < n; i += thread_count()) dst[i] = to_f(src[i]);
}

/* AdamW as backend.h writes it: every operation rounded as on the host (the intrinsics keep
 * nvcc from contracting a product into a sum of its own), IEEE division and square root. */
template <typename E>
__global__ void adamw(float *p, float *m, float *v, const E *g, E *w, size_t n, AxAdamWCoef c) {
  for (size_t i = thread_index(); i < n; i += thread_count()) {
    float gi = __fmul_rn(to_f(g[i]), c.gs);
    float mi = __fmaf_rn(c.b1, m[i], __fmul_rn(c.one_b1, gi));
    float vi = __fmaf_rn(c.b2, v[i], __fmul_rn(__fmul_rn(c.one_b2, gi), gi));
    float den = __fadd_rn(__fsqrt_rn(__fmul_rn(vi, c.c2)), c.eps);
    float upd = __fmaf_rn(c.wd, p[i], __fdiv_rn(__fmul_rn(mi, c.c1), den));
    float pi = __fmaf_rn(-c.lr, upd, p[i]);
    p[i] = pi;
    m[i] = mi;
    v[i] = vi;
    w[i] = from_f<E>(pi);
  }
}

/* ------------------------------------------------------------------ launch shapes */

/* Spans of rows for a column reduction over N rows of C columns: enough blocks (strips x
 * spans) for two per multiprocessor, spans of at least 256 rows, and partial sums that fit the
 * scratch (2 x spans x C floats). */
void column_spans(const AxkCtx *k, int N, int C, unsigned *spans, int *span) {
  size_t strips = (C + kWarp - 1) / kWarp, want = (2 * (size_t)k->sms + strips - 1) / strips;
  size_t most_rows = (N + 255) / 256, most_scratch = k->scratch_floats / (2 * (size_t)C);
  size_t s = want < most_rows ? want : most_rows;
  if (s > most_scratch) s = most_scratch;
  if (s < 1) s = 1;
  *span = (int)((N + s - 1) / s);
  *spans = (unsigned)((N + *span - 1) / *span);
}

/* Column sums into db (and, with LN, dw): partial sums per span of rows, then their sum. */
template <typename E, bool LN>
void column_sums(const AxkCtx *k, E *dw, E *db, const E *dout, const E *inp, const float *mean,
                 const float *rstd, int N, int C) {
  unsigned spans;
  int span;
  column_spans(k, N, C, &spans, &span);
  float *part_b = k->scratch, *part_w = part_b + (size_t)spans * C;
  dim3 grid((unsigned)((C + kWarp - 1) / kWarp), spans), strip(kWarp, kWarp);
  column_partials<E, LN><<<grid, strip, 0, k->stream>>>(part_w, part_b, dout, inp, mean, rstd,
                                                        N, C, span);
  column_finish<E, LN><<<stride_blocks(k, (size_t)C), kBlock, 0, k->stream>>>(dw, db, part_w,
                                                                              part_b, C, spans);
}

} // namespace

/* ------------------------------------------------------------------ launchers */

extern "C" {

cudaError_t axk_encoder_forward(const AxkCtx *k, void *out, const int32_t *tokens,
                                const void *wte, const void *wpe, int B, int T, int C) {
  size_t N = (size_t)B * T;
  AXK_DISPATCH(k->dtype, encoder_fwd<E><<<stride_blocks(k, N * C), kBlock, 0, k->stream>>>(
                             (E *)out, tokens, (const E *)wte, (const E *)wpe, N, T, C));
  return launched();
}

cudaError_t axk_embed_backward_range(const AxkCtx *k, void *dwte, void *dwpe, const void *dout,
                                     const int32_t *tokens, int v0, int v1, int N, int T,
                                     int C) {
  if (N <= 0 || T <= 0 || C <= 0) return cudaSuccess;
  dim3 grid((unsigned)((C + 127) / 128), kTokenGroups);
  AXK_DISPATCH(k->dtype,
               encoder_bwd_wte<E><<<grid, 128, 0, k->stream>>>((E *)dwte, (const E *)dout, tokens,
                                                              v0, v1, N, C);
               if (dwpe) encoder_bwd_wpe<E><<<stride_blocks(k, (size_t)T * C), kBlock, 0,
                                              k->stream>>>((E *)dwpe, (const E *)dout, N / T, T,
                                                           C));
  return launched();
}

cudaError_t axk_encoder_backward(const AxkCtx *k, void *dwte, void *dwpe, const void *dout,
                                 const int32_t *tokens, int B, int T, int C) {
  return axk_embed_backward_range(k, dwte, dwpe, dout, tokens, 0, INT_MAX, B * T, T, C);
}

cudaError_t axk_layernorm_forward(const AxkCtx *k, void *out, float *mean, float *rstd,
                                  const void *inp, const void *w, const void *b, int N, int C) {
  AXK_DISPATCH(k->dtype, layernorm_fwd<E><<<row_blocks(N), kBlock, 0, k->stream>>>(
                             (E *)out, mean, rstd, (const E *)inp, (const E *)w, (const E *)b, N,
                             C));
  return launched();
}

cudaError_t axk_layernorm_backward(const AxkCtx *k, void *dinp, void *dw, void *db,
                                   const void *dout, const void *inp, const void *w,
                                   const float *mean, const float *rstd, int N, int C) {
  if (N <= 0 || C <= 0) return cudaSuccess;
  if (2 * (size_t)C > k->scratch_floats) return cudaErrorInvalidValue;
  AXK_DISPATCH(k->dtype,
               layernorm_bwd_rows<E><<<row_blocks(N), kBlock, 0, k->stream>>>(
                   (E *)dinp, (const E *)dout, (const E *)inp, (const E *)w, mean, rstd, N, C);
               column_sums<E, true>(k, (E *)dw, (E *)db, (const E *)dout, (const E *)inp, mean,
                                    rstd, N, C));
  return launched();
}

cudaError_t axk_layernorm_param_grads(const AxkCtx *k, void *dw, void *db, const void *dout,
                                      const void *inp, const float *mean, const float *rstd,
                                      int N, int C) {
  if (N <= 0 || C <= 0) return cudaSuccess;
  if (2 * (size_t)C > k->scratch_floats) return cudaErrorInvalidValue;
  AXK_DISPATCH(k->dtype, column_sums<E, true>(k, (E *)dw, (E *)db, (const E *)dout,
                                              (const E *)inp, mean, rstd, N, C));
  return launched();
}

cudaError_t axk_bias_residual(const AxkCtx *k, void *out, const void *bias, const void *residual,
                              int N, int C) {
  size_t n = (size_t)N * C;
  AXK_DISPATCH(k->dtype, bias_residual<E><<<stride_blocks(k, n), kBlock, 0, k->stream>>>(
                             (E *)out, (const E *)bias, (const E *)residual, (size_t)N, C));
  return launched();
}

cudaError_t axk_bias_backward(const AxkCtx *k, void *dbias, const void *dout, int N, int C) {
  if (N <= 0 || C <= 0) return cudaSuccess;
  if (2 * (size_t)C > k->scratch_floats) return cudaErrorInvalidValue;
  AXK_DISPATCH(k->dtype, column_sums<E, false>(k, NULL, (E *)dbias, (const E *)dout, NULL, NULL,
                                               NULL, N, C));
  return launched();
}

cudaError_t axk_dropout(const AxkCtx *k, void *out, const void *x, const void *residual,
                        const AxDropoutMask *m) {
  size_t n = (size_t)m->rows * m->cols;
  if (!n) return cudaSuccess;
  AXK_DISPATCH(k->dtype, dropout<E><<<stride_blocks(k, n), kBlock, 0, k->stream>>>(
                             (E *)out, (const E *)x, (const E *)residual, *m));
  return launched();
}

cudaError_t axk_gelu_forward(const AxkCtx *k, void *out, const void *inp, size_t n) {
  AXK_DISPATCH(k->dtype, gelu_fwd<E><<<stride_blocks(k, n), kBlock, 0, k->stream>>>(
                             (E *)out, (const E *)inp, n));
  return launched();
}

cudaError_t axk_gelu_backward(const AxkCtx *k, void *dinp, const void *inp, const void *dout,
                              size_t n) {
  AXK_DISPATCH(k->dtype, gelu_bwd<E><<<stride_blocks(k, n), kBlock, 0, k->stream>>>(
                             (E *)dinp, (const E *)inp, (const E *)dout, n));
  return launched();
}

cudaError_t axk_softmax_causal_forward(const AxkCtx *k, void *att, int n_mats, int T) {
  long long rows = (long long)n_mats * T;
  AXK_DISPATCH(k->dtype,
               softmax_fwd<E><<<row_blocks(rows), kBlock, 0, k->stream>>>((E *)att, rows, T));
  return launched();
}

cudaError_t axk_softmax_causal_backward(const AxkCtx *k, void *datt, const void *att, int n_mats,
                                        int T) {
  long long rows = (long long)n_mats * T;
  AXK_DISPATCH(k->dtype, softmax_bwd<E><<<row_blocks(rows), kBlock, 0, k->stream>>>(
                             (E *)datt, (const E *)att, rows, T));
  return launched();
}

cudaError_t axk_crossentropy(const AxkCtx *k, float *losses, void *logits, const int32_t *targets,
                             int N, int V, int ldv, float dloss) {
  if (N <= 0) return cudaSuccess;
  int threads = V >= 4096 ? 512 : 128;
  AXK_DISPATCH(k->dtype, crossentropy<E><<<(unsigned)N, threads, 0, k->stream>>>(
                             losses, (E *)logits, targets, V, ldv, dloss));
  return launched();
}

cudaError_t axk_sumsq_partials(const AxkCtx *k, double *partials, const void *x, size_t n) {
  AXK_DISPATCH(k->dtype, sumsq<E><<<AXK_SUMSQ_BLOCKS, kBlock, 0, k->stream>>>(
                             partials, (const E *)x, n));
  return launched();
}

cudaError_t axk_scale(const AxkCtx *k, void *x, float s, size_t n) {
  AXK_DISPATCH(k->dtype,
               scale<E><<<stride_blocks(k, n), kBlock, 0, k->stream>>>((E *)x, s, n));
  return launched();
}

cudaError_t axk_add(const AxkCtx *k, void *dst, const void *src, size_t n) {
  AXK_DISPATCH(k->dtype, add<E><<<stride_blocks(k, n), kBlock, 0, k->stream>>>(
                             (E *)dst, (const E *)src, n));
  return launched();
}

cudaError_t axk_from_f32(const AxkCtx *k, void *dst, const float *src, size_t n) {
  AXK_DISPATCH(k->dtype,
               from_f32<E><<<stride_blocks(k, n), kBlock, 0, k->stream>>>((E *)dst, src, n));
  return launched();
}

cudaError_t axk_to_f32(const AxkCtx *k, float *dst, const void *src, size_t n) {
  AXK_DISPATCH(k->dtype,
               to_f32<E><<<stride_blocks(k, n), kBlock, 0, k->stream>>>(dst, (const E *)src, n));
  return launched();
}

cudaError_t axk_adamw(const AxkCtx *k, float *p, float *m, float *v, const void *g, void *w,
                      size_t n, const AxAdamWCoef *c) {
  if (n == 0) return cudaSuccess;
  AXK_DISPATCH(k->dtype, adamw<E><<<stride_blocks(k, n), kBlock, 0, k->stream>>>(
                             p, m, v, (const E *)g, (E *)w, n, *c));
  return launched();
}

} /* extern "C" */
