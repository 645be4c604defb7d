/* train_recipe.c — the recipes of train_recipe.h: one row per codec, each default with the
 * paper and section it comes from. */
#include "train_recipe.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* DGC's sends per coordinate in a run too short for 99.9% (docs/compression.md, "Recipes") */
#define DGC_SENDS 4
#define TEXT_OF(x) #x
#define TEXT(x) TEXT_OF(x)

static const AxCompressRecipe RECIPES[] = {
    {"onebit", "ef=1", 1,
     "1-bit Adam (Tang et al., ICML 2021), Algorithm 1: error-compensated 1-bit compression of "
     "the momentum (momentum = --beta1; Adam's own first moment off while compressing)",
     0.15,
     "1-bit Adam Algorithm 1: plain Adam first; its authors' DeepSpeed tutorial: 15-25% of the "
     "total steps (the lower end)",
     1, "1-bit Adam Algorithm 1: Adam's variance frozen as the warm-up leaves it", 0, NULL, 0, NULL,
     0, 0, NULL},
    {"powersgd", "ef=1,rank=auto", 0,
     "PowerSGD (Vogels et al., NeurIPS 2019) Algorithm 1: error feedback; rank as Optimus-CC "
     "§9.1: 128, about 10x compression of its GPT layers (rank=auto: at most the rank that "
     "sends a tenth of each matrix)",
     30.0 / 230.0,
     "Optimus-CC §9.1: 30K of its 230K iterations plain, following PowerSGD's practice",
     0, "none: PowerSGD and Optimus-CC keep Adam's variance updating", 0, NULL, 0, NULL, 0, 0,
     NULL},
    {"dgc", "", 1,
     "DGC (Lin et al., ICLR 2018) §4.1: 99.9% sparsity (ratio 0.001; a short run's below) and "
     "§3.2: momentum correction (momentum = --beta1, 0.9 as in DGC; in Adam's form: "
     "docs/codecs.md)",
     0.25,
     "DGC §3.4: a warm-up (§4.1: 1 of 40 to 4 of 90 epochs, with rising sparsity); here plain, "
     "and long enough for 1-bit Adam's frozen variance: the upper end of its 15-25%, as DGC "
     "leaves most coordinates stale for hundreds of steps (§3.3)",
     1,
     "1-bit Adam Algorithm 1: under Adam, the variance frozen after the warm-up makes the update "
     "linear in what arrives, the momentum SGD DGC was designed for",
     0.05,
     "DGC §3.4 and §4.1: the sparsity warmed up exponentially, 75%, 93.75%, 98.4375%, 99.6%, "
     "then 99.9%, over the first 4 of 90 epochs (4.4%; here 5% of the run)",
     1,
     "DGC §3.3 (local gradient clipping): each node clips its gradient before adding it to "
     "its accumulation, at the global threshold scaled by N^-1/2, its share if the N nodes' "
     "gradients were alike, in place of clipping the aggregate",
     DGC_SENDS, 0.001,
     "DGC §4.1: 99.9% sparsity, where §3.3 has most coordinates sent once in 600-1000 of its "
     "tens of thousands of iterations; a shorter run keeps the ratio at which each coordinate is "
     "still sent about " TEXT(DGC_SENDS) " times after the plain warm-up (the count chosen on a "
     "model the docs' bars do not use: docs/compression.md, \"Recipes\")"},
};

const char AX_VECTORS_SOURCE[] =
    "1-D tensors (biases, LayerNorm weights) summed plain: PowerSGD's reference implementation "
    "sends rank-1 tensors uncompressed, and one sign per LayerNorm gain cost onebit 0.8% of "
    "validation loss here (docs/compression.md)";

const AxCompressRecipe *ax_compress_recipe(const char *codec) {
  for (size_t i = 0; i < sizeof RECIPES / sizeof RECIPES[0]; i++)
    if (!strcmp(RECIPES[i].codec, codec)) return &RECIPES[i];
  return NULL;
}

int ax_compress_recipe_warmup(const AxCompressRecipe *r, int steps) {
  return r ? (int)floor(r->warmup_fraction * steps + 1e-9) : 0;
}

double ax_compress_recipe_ratio(const AxCompressRecipe *r, int steps, int warmup) {
  if (!r || !(r->sends > 0)) return 0;
  int after = steps - warmup;
  double ratio = after > 0 ? r->sends / after : 1;
  ratio = ratio > r->paper_ratio ? ratio : r->paper_ratio;
  return ratio < 1 ? ratio : 1;
}

void ax_compress_recipe_keys(const AxCompressRecipe *r, double beta1, int warmup, int steps,
                             int ramp, int ratio, char *out, size_t cap) {
  int len = 0;
  if (!r) {
    snprintf(out, cap, "%s", "");
    return;
  }
  len = snprintf(out, cap, "%s", r->keys);
  double rate = ratio ? ax_compress_recipe_ratio(r, steps, warmup) : 0;
  if (rate > 0 && len >= 0 && (size_t)len < cap)
    len += snprintf(out + len, cap - (size_t)len, "%sratio=%.3g", len ? "," : "", rate);
  if (r->momentum && len >= 0 && (size_t)len < cap)
    len += snprintf(out + len, cap - (size_t)len, "%smomentum=%.9g", len ? "," : "", beta1);
  int ramp_steps = ramp ? (int)floor(r->ramp_fraction * steps + 1e-9) : 0;
  if (ramp_steps > 0 && len >= 0 && (size_t)len < cap)
    snprintf(out + len, cap - (size_t)len, "%sramp=%d,ramp_from=%d", len ? "," : "", ramp_steps,
             warmup + 1);
}
