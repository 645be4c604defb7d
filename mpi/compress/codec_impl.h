/* codec_impl.h — what codec.c and the codec files (codec_<name>.c) share, internal to
 * mpi/compress/: the parsed parameters, the table of one codec's functions, the state layout,
 * and small helpers (the random key of a context, scratch memory, the sparse format).
 *
 * codec.c owns everything generic (parsing, the canonical spec, the error-feedback wrapper,
 * state and checkpoints, dispatch and argument checks); a codec file only computes. */
#ifndef AX_CODEC_IMPL_H
#define AX_CODEC_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "codec.h"
#include "ops.h"

/* Every parameter any codec takes; a codec reads the ones it lists in its `keys`. */
typedef struct {
  int ef;          /* error feedback: 0 or 1 */
  int twomeans;    /* onebit's scale=twomeans (else scale=mean) */
  double tau;      /* tbq's threshold, > 0 */
  int bits;        /* terngrad: 2, 4 or 8 */
  double ratio;    /* sparsifiers: the fraction kept, (0, 1] */
  size_t k;        /* topk: a count instead of a ratio (0: use ratio) */
  double momentum; /* dgc, onebit: [0, 1) */
  int levels;      /* qsgd: [1, 127] */
  int rank;        /* powersgd: >= 1, or 0: auto (from the matrix's shape, codec_powersgd.c) */
  size_t cols;     /* powersgd: the matrix's columns (0: ceil(sqrt(n))) */
  uint64_t ramp;      /* dgc: the steps of its sparsity warm-up (0: none; codec_dgc.c) */
  uint64_t ramp_from; /* dgc: the step the sparsity warm-up starts at */
} AxCodecParams;

typedef struct AxCodecImpl AxCodecImpl;

struct AxCodec {
  const AxCodecImpl *impl;
  AxCodecParams p;
  char spec[160]; /* canonical */
};

/* The state of one range. Everything in `saved` (and `flags`) goes into checkpoints: the
 * error-feedback residual first (n floats, when ef), then the codec's own floats. Scratch is
 * working memory only. */
struct AxCodecState {
  size_t n;
  float *saved;
  size_t saved_len;
  float *residual; /* saved, or NULL without error feedback */
  float *own;      /* saved + (residual ? n : 0), own_len floats */
  size_t own_len;
  uint64_t flags;  /* codec-defined (PowerSGD: a warm Q exists) */
  void *scratch;
  size_t scratch_bytes;
  uint32_t spec_crc; /* which codec wrote it (checked on load) */
};

struct AxCodecImpl {
  const char *name;
  const char *keys;   /* accepted keys in canonical order, comma separated ("" for none) */
  const char *quiet;  /* keys the canonical spec leaves out while at their default (NULL: none) */
  int rounds;         /* 0: encode/decode; > 0: linear */
  int ef_always;      /* the algorithm is error feedback itself (efsignsgd, graddrop) */
  void (*defaults)(AxCodecParams *p);
  /* Checks across keys (e.g. ratio against k); AX_FAIL naming the codec and key. May be NULL. */
  int (*check)(const AxCodec *c);
  /* Encode/decode codecs: the exact worst case; linear codecs: the factor bytes of every round. */
  size_t (*max_bytes)(const AxCodec *c, size_t n);
  /* Optional: the worst case once the codec's own warm-up is over (DGC's sparsity warm-up),
   * what the cost model prices (ax_codec_ratio); NULL: max_bytes. */
  size_t (*steady_bytes)(const AxCodec *c, size_t n);
  /* The codec's own checkpointed floats and its scratch bytes for a range of n (may be NULL). */
  size_t (*own_floats)(const AxCodec *c, size_t n);
  size_t (*scratch_bytes)(const AxCodec *c, size_t n);
  /* Optional: the rank a low-rank codec uses for a range of n (PowerSGD). */
  int (*rank_for)(const AxCodec *c, size_t n);
  /* Optional: this rank's own values of a range, in place, before any encode that contains
   * them (st never NULL). DGC: its momentum correction; onebit: 1-bit Adam's momentum. A
   * codec with a momentum keeps it in own[0..n) (ax_codec_state_set_momentum writes it). */
  void (*prepare)(const AxCodec *c, AxCodecState *st, float *x, size_t n);
  int prepare_if_momentum; /* prepare only with a momentum above 0 */
  /* Encode x[n] (error feedback already applied by codec.c); st may be NULL. */
  int (*encode)(const AxCodec *c, AxCodecState *st, const AxCodecCtx *ctx, const float *x,
                size_t n, void *out, size_t *bytes);
  /* Optional: the whole error-feedback encode (residual += in, encode it, residual -= its
   * decoding) fused into fewer passes, bitwise what codec.c's generic wrapper computes. */
  int (*encode_ef)(const AxCodec *c, AxCodecState *st, const AxCodecCtx *ctx, const float *in,
                   size_t n, void *out, size_t *bytes);
  /* Decode; codec.c has checked n and the pointers, the codec checks the bytes. */
  int (*decode)(const AxCodec *c, const void *in, size_t bytes, float *out, size_t n, int add);
  /* Linear codecs (st never NULL; codec.c applies nothing for error feedback here: a linear
   * codec with ef keeps st->residual itself). */
  size_t (*factor_len)(const AxCodec *c, size_t n, int round);
  int (*factor)(const AxCodec *c, AxCodecState *st, const AxCodecCtx *ctx, const float *in,
                size_t n, int round, float *factor);
  int (*factor_reduced)(const AxCodec *c, AxCodecState *st, const AxCodecCtx *ctx, size_t n,
                        int round, float *reduced);
  int (*rebuild)(const AxCodec *c, AxCodecState *st, const AxCodecCtx *ctx, size_t n,
                 float *out);
  /* Optional (linear codecs): out[n] rebuilt without state from the reduced factors of every
   * round laid end to end (what a point-to-point message carries, codec_p2p.c). */
  int (*rebuild_from)(const AxCodec *c, const AxCodecCtx *ctx, const float *factors, size_t n,
                      float *out);
};

extern const AxCodecImpl ax_codec_identity, ax_codec_onebit, ax_codec_efsignsgd, ax_codec_tbq,
    ax_codec_terngrad, ax_codec_qsgd, ax_codec_dgc, ax_codec_graddrop, ax_codec_topk,
    ax_codec_randk, ax_codec_powersgd;

/* The generator of a context's stochastic choices for one stream (AX_CRNG_*): a function of
 * (seed, step, range, stream). */
AxCrng ax_codec_rng(const AxCodecCtx *ctx, uint64_t stream);
/* The momentum a codec carries for the optimizer, in Adam's form (its first moment with
 * beta1 = c's momentum m): u = m u + (1 - m) g (each product rounded, then the sum), and g
 * becomes u. DGC's momentum correction and 1-bit Adam's compressed momentum. */
void ax_codec_momentum_step(const AxCodec *c, float *u, float *g, size_t n);

/* Scratch of `bytes`: the state's when it is large enough, else a fresh allocation returned in
 * *owned too (the caller frees *owned). NULL (error recorded) when allocation fails. */
void *ax_codec_scratch(AxCodecState *st, size_t bytes, void **owned);

/* Sizes are rounded up to whole 4-byte words, so encoded ranges laid end to end stay aligned. */
static inline size_t ax_codec_words(size_t bytes) { return (bytes + 3) & ~(size_t)3; }

/* ---- the sparse format (dgc, graddrop, topk): uint32 count, count uint32 indices ascending,
 * count float values. */
static inline size_t ax_sparse_bytes(size_t count) { return 4 + 8 * count; }
/* The kept count for a ratio of n: ceil(ratio * n), at least 1 when n > 0, at most n. */
size_t ax_sparse_keep(double ratio, size_t n);
/* Writes the count and the values x[idx] after the indices already in place at out + 4
 * (out 4-byte aligned); returns the bytes. */
size_t ax_sparse_finish(const float *x, size_t count, void *out);
/* Decodes the sparse format (checks the count, the size and that indices ascend below n). */
int ax_sparse_decode(const char *codec, const void *in, size_t bytes, float *out, size_t n,
                     int add);
/* The indices where |x| reaches a threshold sampled (from r) to keep about `keep` of n, at most
 * `cap` of them (the exact top-cap when more reach it), ascending, into idx; returns the count
 * in *count. Sampled threshold: DGC's and GradDrop's selection. */
int ax_sparse_select_sampled(const float *x, size_t n, size_t keep, size_t cap, AxCrng r,
                             AxCodecState *st, uint32_t *idx, size_t *count);
/* The sample size ax_sparse_select_sampled uses for n values (its scratch, in floats). */
size_t ax_sparse_sample_size(size_t n);

#endif
