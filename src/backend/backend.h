/* backend.h — the device interface. Everything device-specific goes through it: memory,
 * copies, streams, GEMMs and the element-wise kernels the GPT model needs.
 *
 * Pointers the kernels take are device pointers. Tensors of activations, weights and their
 * gradients hold the backend's compute type (`be->dtype`: fp32 on the CPU backend, or bf16/fp16
 * storage over its fp32 arithmetic (cpu_storage16.h); bf16/fp16/fp32 on CUDA) and are passed as void *; small per-row statistics (LayerNorm mean/rstd,
 * per-token losses) are always fp32, token ids always int32.
 *
 * Kernels are enqueued on the compute stream and may run asynchronously (CUDA); errors surface
 * at the next ax_sync()/copy, which return AX_ERR with the error recorded. On the CPU backend
 * every call completes before it returns and the streams are ordering labels only. */
#ifndef AX_BACKEND_H
#define AX_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "src/core/dropout_mask.h"

typedef enum { AX_DTYPE_F32 = 0, AX_DTYPE_BF16, AX_DTYPE_F16 } AxDType;
typedef enum { AX_STREAM_COMPUTE = 0, AX_STREAM_COPY, AX_STREAM_COMM, AX_N_STREAMS } AxStream;
typedef enum { AX_COPY_H2D = 0, AX_COPY_D2H, AX_COPY_D2D, AX_COPY_H2H } AxCopyKind;
/* Where a buffer lives: host memory or the backend's device memory (a received pipeline
 * message is in either, see mpi/link/p2p.h). */
typedef enum { AX_MEM_HOST = 0, AX_MEM_DEVICE } AxMemKind;

/* The copy that brings data from memory of kind `from` into device memory. */
static inline AxCopyKind ax_copy_to_device(AxMemKind from) {
  return from == AX_MEM_DEVICE ? AX_COPY_D2D : AX_COPY_H2D;
}

/* Row-major C[m x n] = alpha * op(A)[m x k] @ op(B)[k x n] + beta * C, `batch` times with the
 * given element strides between consecutive matrices (strided-batched GEMM). Leading
 * dimensions are row strides in elements of the stored (untransposed) matrices. */
typedef struct {
  int trans_a, trans_b;
  int m, n, k;
  float alpha, beta;
  int lda, ldb, ldc;
  int batch; /* 0 or 1: a single GEMM */
  long long stride_a, stride_b, stride_c;
} AxGemm;

/* The shape of a C[m x n] = A[m x k] B[n x k]^T product, named (as the model's linear layers
 * compute their forward pass; what the peak is measured at). */
typedef struct {
  int m, n, k;
  const char *name;
} AxGemmShape;

/* The coefficients of one AdamW update of a range (offload/adamw.h derives them from the
 * hyperparameters): with g = grad * gs,
 *   m = fma(b1, m, one_b1 g);  v = fma(b2, v, (one_b2 g) g);
 *   p = fma(-lr, fma(wd, p, (m c1) / (sqrt(v c2) + eps)), p)
 * each operation rounded to fp32 as written, fma fused, so the host's AVX2 kernel and the
 * device's give the same bits (a host build without AVX2 rounds fma's product and sum apart).
 * A frozen second moment has b2 = 1, one_b2 = 0. */
typedef struct {
  float lr, b1, b2, one_b1, one_b2, c1, c2, eps, wd, gs;
} AxAdamWCoef;

typedef struct AxBackend AxBackend;

typedef struct {
  const char *name;
  void (*destroy)(AxBackend *be);

  /* memory */
  void *(*alloc)(AxBackend *be, size_t bytes); /* device; NULL with error recorded on failure */
  void (*free)(AxBackend *be, void *p);
  void *(*host_alloc)(AxBackend *be, size_t bytes); /* pinned host memory (page-locked) */
  void (*host_free)(AxBackend *be, void *p);
  int (*copy)(AxBackend *be, void *dst, const void *src, size_t bytes, AxCopyKind kind,
              AxStream s);
  int (*zero)(AxBackend *be, void *p, size_t bytes, AxStream s);
  int (*sync)(AxBackend *be, AxStream s);
  /* fp32 host <-> compute-type device conversions of n elements (weights up, grads down). */
  int (*upload_f32)(AxBackend *be, void *dst, const float *src, size_t n, AxStream s);
  int (*download_f32)(AxBackend *be, float *dst, const void *src, size_t n, AxStream s);

  /* dense algebra */
  void (*gemm)(AxBackend *be, const AxGemm *g, const void *a, const void *b, void *c);

  /* GPT element-wise kernels; N rows of C channels unless noted */
  void (*encoder_forward)(AxBackend *be, void *out, const int32_t *tokens, const void *wte,
                          const void *wpe, int B, int T, int C);
  void (*encoder_backward)(AxBackend *be, void *dwte, void *dwpe, const void *dout,
                           const int32_t *tokens, int B, int T, int C); /* += */
  void (*layernorm_forward)(AxBackend *be, void *out, float *mean, float *rstd, const void *inp,
                            const void *w, const void *b, int N, int C);
  /* dinp, dw, db all accumulate (+=) */
  void (*layernorm_backward)(AxBackend *be, void *dinp, void *dw, void *db, const void *dout,
                             const void *inp, const void *w, const float *mean,
                             const float *rstd, int N, int C);
  /* out[i][j] = bias[j] + (residual ? residual[i][j] : 0); precedes a beta=1 GEMM */
  void (*bias_residual)(AxBackend *be, void *out, const void *bias, const void *residual, int N,
                        int C);
  void (*bias_backward)(AxBackend *be, void *dbias, const void *dout, int N, int C); /* += */
  void (*gelu_forward)(AxBackend *be, void *out, const void *inp, size_t n);
  /* dinp = gelu'(inp) * dout; dinp may alias dout */
  void (*gelu_backward)(AxBackend *be, void *dinp, const void *inp, const void *dout, size_t n);
  /* rows of length T in groups of T (one T x T matrix per head): row t keeps columns 0..t,
   * softmax in place, the rest set to 0 */
  void (*softmax_causal_forward)(AxBackend *be, void *att, int n_mats, int T);
  /* in place: datt becomes d(pre-softmax scores) */
  void (*softmax_causal_backward)(AxBackend *be, void *datt, const void *att, int n_mats, int T);
  /* Fused causal attention (flash-style: tiled, the T x T scores never stored), the
   * explicit path's results to the compute type's rounding. qkv: B*T rows of 3C (q | k | v,
   * NH heads of C/NH channels side by side in each); out: B*T rows of C; stats: B*NH*T floats
   * the forward keeps for the backward. attention_fused_ok says whether the backend has it
   * for this type and shape; NULL where it has none. models/layers.c takes it only where
   * AxBackendConfig.fused_attention asks for it (--attention fused). */
  int (*attention_fused_ok)(AxBackend *be, int C, int NH);
  void (*attention_fused_forward)(AxBackend *be, void *out, float *stats, const void *qkv, int B,
                                  int T, int C, int NH);
  /* dqkv written (not accumulated) from dout and the forward's out and stats; scratch: B*NH*T
   * floats */
  void (*attention_fused_backward)(AxBackend *be, void *dqkv, float *scratch, const void *dout,
                                   const void *out, const float *stats, const void *qkv, int B,
                                   int T, int C, int NH);
  /* N rows of V logits (row stride ldv): losses[i] = -log softmax(logits_i)[targets[i]];
   * when dloss != 0 the logits are overwritten with dloss * (softmax - onehot), and a row's
   * padded columns V..ldv with 0 (they are no logits: their gradient is 0). */
  void (*crossentropy)(AxBackend *be, float *losses, void *logits, const int32_t *targets,
                       int N, int V, int ldv, float dloss);
  /* Tensor-parallel pieces (models/tp_layers.c), where a row's channels or a vocabulary are
   * split over ranks and the caller sums partial row statistics over its group between calls.
   * A backend without them leaves them NULL (ax_backend_has_tp says so). Rows of C channels. */
  /* out[i] = sum_j x[i][j]; with center (the whole rows' sums over C_total channels):
   * sum_j (x[i][j] - center[i] / C_total)^2 */
  void (*row_sums)(AxBackend *be, float *out, const void *x, const float *center, int C_total,
                   int N, int C);
  /* mean, rstd in: the whole rows' sums and centred sums of squares; out: the row mean and
   * 1/sqrt(variance + 1e-5). out = (x - mean) * rstd * w + b */
  void (*layernorm_apply)(AxBackend *be, void *out, float *mean, float *rstd, const void *x,
                          const void *w, const void *b, int C_total, int N, int C);
  /* sums[2i] = sum_j w_j dout_ij, sums[2i+1] = sum_j w_j dout_ij (x_ij - mean_i) rstd_i */
  void (*layernorm_backward_sums)(AxBackend *be, float *sums, const void *dout, const void *x,
                                  const void *w, const float *mean, const float *rstd, int N,
                                  int C);
  /* with the sums over the whole row of C_total channels: dinp += (w dout - sums[2i]/C_total -
   * xhat sums[2i+1]/C_total) rstd; dw += dout xhat; db += dout */
  void (*layernorm_backward_apply)(AxBackend *be, void *dinp, void *dw, void *db,
                                   const void *dout, const void *x, const void *w,
                                   const float *mean, const float *rstd, const float *sums,
                                   int C_total, int N, int C);
  /* out[i] = (v0 <= tok_i < v1 ? wte[tok_i - v0] : 0) + (wpe ? wpe[i % T] : 0) */
  void (*embed_range_forward)(AxBackend *be, void *out, const int32_t *tokens, const void *wte,
                              const void *wpe, int v0, int v1, int N, int T, int C);
  void (*embed_range_backward)(AxBackend *be, void *dwte, void *dwpe, const void *dout,
                               const int32_t *tokens, int v0, int v1, int N, int T,
                               int C); /* +=; dwpe may be NULL */
  /* Cross-entropy over a vocabulary slice: logits rows (stride ld) hold the nv real columns of
   * vocabulary ids [v0, v0 + nv). row_max: the slice's row maxima (-inf when nv = 0); sums,
   * from the n_maxima slices' maxima (maxima[k*N + i]): mx[i] = the row's maximum, sums[2i] =
   * sum of exp(logit - mx[i]) over the slice, sums[2i+1] = the target's logit when it is in the
   * slice (else 0); finish (with the sums over every slice): losses and, when dloss != 0, the
   * slice's logits overwritten with dloss * (softmax - onehot). */
  void (*xent_row_max)(AxBackend *be, float *mx, const void *logits, int N, int nv, int ld);
  void (*xent_sums)(AxBackend *be, float *sums, float *mx, const float *maxima, int n_maxima,
                    const void *logits, const int32_t *targets, int v0, int N, int nv, int ld);
  void (*xent_finish)(AxBackend *be, float *losses, void *logits, const float *mx,
                      const float *sums, const int32_t *targets, int v0, int N, int nv, int ld,
                      float dloss);
  /* Dropout over the piece m describes (src/core/dropout_mask.h): out = (residual ? residual
   * : 0) + (kept ? x · m->scale : 0), element by element; out may alias x. NULL where the
   * backend has none (a stage with dropout then refuses to start). */
  void (*dropout)(AxBackend *be, void *out, const void *x, const void *residual,
                  const AxDropoutMask *m);
  /* reductions and vector updates over n elements */
  double (*sumsq)(AxBackend *be, const void *x, size_t n); /* synchronizes */
  void (*scale)(AxBackend *be, void *x, float s, size_t n);
  void (*add)(AxBackend *be, void *dst, const void *src, size_t n); /* dst += src */
  /* AdamW in device memory (the optimizer kept on the device, offload/device_opt.h): fp32
   * master weights p and moments m, v, compute-type gradients g, n elements; writes the new
   * weights to p and, in the compute type, to w. NULL where the backend's memory is host memory
   * (the host AdamW runs on it in place). */
  void (*adamw)(AxBackend *be, float *p, float *m, float *v, const void *g, void *w, size_t n,
                const AxAdamWCoef *c);
} AxBackendOps;

struct AxBackend {
  const AxBackendOps *ops;
  AxDType dtype;  /* compute type of activations, weights and gradients */
  size_t esz;     /* bytes per element of dtype */
  int threads;    /* compute threads (CPU backend) */
  int is_host;    /* device memory is ordinary host memory (CPU backend) */
  int fused_attention; /* attention through the fused ops where they serve (AxBackendConfig) */
  /* the peak of the device memory the backend allocated (its own scratch included; not the
   * driver's context or the GEMM library's workspace); 0 where device memory is host memory */
  size_t device_peak_bytes;
  char desc[256]; /* one line for the run log, e.g. binding or GPU name */
  void *impl;
};

/* Gap to leave between large arrays that one kernel streams through together (AdamW: weights,
 * gradients, m, v): arrays a large power of two apart (a stage of 32M parameters) collide in
 * the caches and memory banks. Packed, AdamW over 32M parameters took 59-65 ms on one Zen 3
 * core; 3 pages and 64 or 256 bytes apart, 27-34 ms. A multiple of 256 (device alignment). */
enum { AX_STAGGER_BYTES = 3 * 4096 + 256 };

/* Where the next of several arrays of `bytes` each starts in one allocation: past this one,
 * rounded up to 256 bytes, plus AX_STAGGER_BYTES. */
static inline size_t ax_staggered(size_t bytes) {
  return (bytes + 255) / 256 * 256 + AX_STAGGER_BYTES;
}

typedef struct {
  const char *device;  /* "cpu" or "cuda" */
  AxDType dtype;
  int threads;         /* compute threads; <= 0 means all cores available to this rank */
  int bind;            /* pin threads with hwloc */
  int fused_attention; /* attention through the backend's fused ops where it has them
                          (--attention fused); else GEMMs and a stored T x T softmax */
  int cpu_storage16;   /* "cpu" with dtype bf16/fp16: 16-bit storage over fp32 arithmetic
                          (cpu_storage16.h; training runs); 0: the CPU backend refuses them */
  int local_rank, local_size; /* this rank among the ranks on its node (its GPU) */
  int share_rank, share_size; /* this rank among those of its node that started with the same
                                 CPU set (core binding, binding.h); share_size 0: local_* */
} AxBackendConfig;

/* The share_rank/share_size of cfg, or local_rank/local_size where no share was given. */
void ax_backend_cpu_share(const AxBackendConfig *cfg, int *rank, int *size);

/* Creates the backend named in cfg; NULL with the error recorded when it cannot. "cpu" is
 * built in; "cuda" loads libaxonn-cuda.so on first use (backend_plugin.h, plugin_load.h), and
 * when that fails the error says what to install, load or rebuild. */
AxBackend *ax_backend_create(const AxBackendConfig *cfg);
/* Devices the backend `name` can use (1 for cpu), loading its plugin if it has one: 0 with
 * the reason in why (may be NULL) when it has none (e.g. no GPU or no driver); -1 with the
 * error recorded when the name is unknown or the plugin cannot be loaded. "cuda" initializes
 * the CUDA runtime: do not fork afterwards. */
int ax_backend_device_count(const char *name, char *why, size_t cap);
void ax_backend_destroy(AxBackend *be);

const char *ax_dtype_name(AxDType t);
size_t ax_dtype_size(AxDType t);

/* Device pointer `base` advanced by `elems` elements of the compute type. */
static inline void *ax_at(const AxBackend *be, void *base, size_t elems) {
  return (char *)base + elems * be->esz;
}

/* 1 when attention over C channels in NH heads takes the backend's fused kernels. */
static inline int ax_backend_fused_attention(AxBackend *be, int C, int NH) {
  return be->fused_attention && be->ops->attention_fused_ok &&
         be->ops->attention_fused_ok(be, C, NH);
}

/* Thin wrappers so call sites read like function calls. */
static inline void *ax_alloc(AxBackend *be, size_t bytes) { return be->ops->alloc(be, bytes); }
static inline void ax_free(AxBackend *be, void *p) {
  if (p) be->ops->free(be, p);
}
/* 1 when the backend has every kernel of the tensor-parallel layers (models/tp_layers.h), over
 * its own memory, host or device: the collectives of mpi/coll/tp_mpi.h stage device buffers. */
static inline int ax_backend_has_tp(const AxBackend *be) {
  const AxBackendOps *o = be->ops;
  return o->row_sums && o->layernorm_apply && o->layernorm_backward_sums &&
         o->layernorm_backward_apply && o->embed_range_forward && o->embed_range_backward &&
         o->xent_row_max && o->xent_sums && o->xent_finish;
}
static inline int ax_sync(AxBackend *be) { return be->ops->sync(be, AX_STREAM_COMPUTE); }
static inline void ax_gemm(AxBackend *be, const AxGemm *g, const void *a, const void *b,
                           void *c) {
  be->ops->gemm(be, g, a, b, c);
}

/* The backend names the registry knows, for --help and errors ("cpu, cuda"; cuda is a plugin
 * that may be missing from this installation). */
const char *ax_backends_available(void);
/* The BLAS the CPU backend calls: OpenBLAS's own description (version, build options, the core
 * it chose), or "CBLAS (not OpenBLAS)" when linked against another. */
const char *ax_backend_blas_name(void);

#endif
