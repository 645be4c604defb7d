/* gpt_init.c — seeded GPT-2 initialization; see gpt_init.h. */
#include "gpt_init.h"

#include <math.h>
#include <string.h>

#include "src/core/rng.h"

static void fill_normal(float *x, size_t n, float stddev, uint64_t seed) {
  AxRng r;
  ax_rng_seed(&r, seed);
  for (size_t i = 0; i < n; i++) x[i] = (float)(stddev * ax_rng_normal(&r));
}

static void fill_const(float *x, size_t n, float v) {
  for (size_t i = 0; i < n; i++) x[i] = v;
}

static uint64_t stream_seed(uint64_t seed, int id, int layer) {
  return seed * 0x9E3779B97F4A7C15ULL ^ ((uint64_t)(id + 1) << 32) ^ (uint64_t)(layer + 1);
}

/* One slice: a layer's part of a layer tensor, or a whole non-layer tensor. */
static void init_slice(const AxGptConfig *c, int id, int layer, float *x, size_t n,
                       uint64_t seed) {
  float std = 0.02f;
  switch (id) {
  case AX_P_LN1W: case AX_P_LN2W: case AX_P_LNFW: fill_const(x, n, 1.0f); return;
  case AX_P_LN1B: case AX_P_LN2B: case AX_P_LNFB: case AX_P_QKVB: case AX_P_ATTPROJB:
  case AX_P_FCB: case AX_P_FCPROJB: fill_const(x, n, 0.0f); return;
  case AX_P_ATTPROJW: case AX_P_FCPROJW: std = 0.02f / sqrtf(2.0f * (float)c->layers); break;
  default: break;
  }
  if (id == AX_P_WTE) {
    size_t used = (size_t)c->vocab * (size_t)c->channels;
    fill_normal(x, used, std, stream_seed(seed, id, layer));
    memset(x + used, 0, (n - used) * sizeof *x);
    return;
  }
  fill_normal(x, n, std, stream_seed(seed, id, layer));
}

void ax_gpt_init_stage(const AxGptConfig *c, const AxStageLayout *s, uint64_t seed, float *dst) {
  for (int id = 0; id < AX_N_PARAMS; id++) {
    if (!s->has[id]) continue;
    float *x = dst + s->offset[id];
    if (!ax_param_is_layer(id)) {
      init_slice(c, id, 0, x, s->count[id], seed);
      continue;
    }
    size_t per = ax_param_per_layer(c, id);
    for (int l = s->l0; l < s->l1; l++) init_slice(c, id, l, x + (size_t)(l - s->l0) * per, per,
                                                    seed);
  }
}
