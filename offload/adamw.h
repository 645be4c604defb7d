/* adamw.h — AdamW with decoupled weight decay on host fp32 arrays: a scalar reference and a
 * vectorized (AVX2, scalar fallback), multithreaded kernel over parameter ranges. A range may
 * span several tensors; each tensor's slice is decayed or not as the segment table says, and a
 * segment whose gradient came through a codec that carries part of the optimizer (DGC's
 * momentum, 1-bit Adam's frozen variance) takes the hyper-parameters' codec settings.
 *   m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;  (g = grad * grad_scale)
 *   p -= lr * ( (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps) + wd * p ) */
#ifndef AX_ADAMW_H
#define AX_ADAMW_H

#include <stddef.h>

#include "src/backend/backend.h"
#include "src/core/threadpool.h"

typedef struct AxAdamWHyper {
  float lr, beta1, beta2, eps, weight_decay;
  int step;          /* t, counted from 1 */
  float grad_scale;  /* gradients are multiplied by this (clipping, loss-scale removal) */
  /* > 0: the second moment v is frozen as it was after this step (1-bit Adam's recipe for
   * compressed gradients: v is left untouched and bias-corrected as of that step) */
  int v_frozen_at;
  /* the settings of the codec segments (the same but beta1 and v_frozen_at); NULL: these */
  const struct AxAdamWHyper *codec;
} AxAdamWHyper;

/* A run of parameters that share the decay decision and the settings (codec: h->codec's). */
typedef struct {
  size_t offset, count;
  int decay;
  int codec;
} AxParamSegment;

/* [lo, hi) of a flat parameter range. */
typedef struct {
  size_t lo, hi;
} AxParamSpan;

/* The settings segment s takes: h's, or h->codec's on a codec segment. */
const AxAdamWHyper *ax_adamw_settings(const AxAdamWHyper *h, const AxParamSegment *s);
/* segs[n] (in order) cut at the bounds of spans[n_spans] (in order, not overlapping), the
 * pieces inside a span marked codec and the others not: writes at most cap into out (NULL:
 * counts only) and returns how many there are. */
int ax_param_segments_mark(const AxParamSegment *segs, int n, const AxParamSpan *spans,
                           int n_spans, AxParamSegment *out, int cap);

/* The coefficients of one update (backend.h says how they are applied). */
AxAdamWCoef ax_adamw_coef(const AxAdamWHyper *h, int decay);
/* The scalar reference over one range (tests compare the fast kernel against it). */
void ax_adamw_ref(float *p, const float *g, float *m, float *v, size_t n, const AxAdamWHyper *h,
                  int decay);
/* The fast kernel over one range, on the calling thread. */
void ax_adamw_range(float *p, const float *g, float *m, float *v, size_t n,
                    const AxAdamWHyper *h, int decay);
/* The same with the coefficients derived already (what a backend's adamw op over host memory
 * runs: tests/posing_device.c). */
void ax_adamw_range_coef(float *p, const float *g, float *m, float *v, size_t n,
                         const AxAdamWCoef *c);
/* The same update out of place: reads p, m, v and writes po, mo, vo (each disjoint from its
 * input, or that very array: element i is read before it is written), the same values bit for
 * bit, with non-temporal stores where the three outputs share their
 * alignment, and the new weights into keep too (ordinary stores; NULL: not), which may be p
 * itself: what an optimizer writing straight into a memory checkpoint runs, the weights the
 * model computes with kept in place. */
void ax_adamw_range_to(float *po, float *mo, float *vo, float *keep, const float *p,
                       const float *g, const float *m, const float *v, size_t n,
                       const AxAdamWHyper *h, int decay);
/* Updates elements [lo, hi) of flat arrays p, g, m, v, splitting the work over the pool and
 * applying each segment's decay decision. pool may be NULL (calling thread only). */
void ax_adamw_update(AxPool *pool, float *p, const float *g, float *m, float *v, size_t lo,
                     size_t hi, const AxParamSegment *segs, int n_segs, const AxAdamWHyper *h);
/* Where an update out of place writes: flat arrays like p, m and v. */
typedef struct {
  float *p, *m, *v;
} AxAdamWOut;
/* The same out of place into `to` (NULL: in place), the weights p updated in place as well
 * (ax_adamw_range_to with keep = p). */
void ax_adamw_update_to(AxPool *pool, const AxAdamWOut *to, float *p, const float *g, float *m,
                        float *v, size_t lo, size_t hi, const AxParamSegment *segs, int n_segs,
                        const AxAdamWHyper *h);

#endif
