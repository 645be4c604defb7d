/* train_recipe.h — the papers' recipes as the defaults of gradient compression: for each codec
 * whose paper trains with more than the codec itself (1-bit Adam, PowerSGD as Optimus-CC runs
 * it, DGC), the codec keys, the plain warm-up as a fraction of the run, and whether Adam's
 * variance freezes after it, each with its source (paper and section). Pure data and text: the
 * configuration applies a recipe where the user gave no value of their own
 * (ax_train_resolve_compression, train_config.h), and the run's header and summary say what
 * it set. docs/compression.md, "Recipes", has the table. */
#ifndef AX_TRAIN_RECIPE_H
#define AX_TRAIN_RECIPE_H

#include <stddef.h>

typedef struct {
  const char *codec;          /* the codec's name */
  const char *keys;           /* codec keys a spec gets unless it gives them ("" none) */
  int momentum;               /* and momentum=--beta1: the codec carries Adam's first moment */
  const char *keys_source;
  double warmup_fraction;     /* --compress-warmup auto: floor(fraction x --steps) */
  const char *warmup_source;
  int freeze_variance;        /* --compress-freeze-variance auto (with a warm-up of 1+ steps) */
  const char *freeze_source;
  double ramp_fraction;       /* DGC's sparsity warm-up after the plain one: floor(fraction x
                                 --steps) steps (the codec's ramp keys; 0: none) */
  const char *ramp_source;
  int local_clip;             /* --compress-local-clip auto: each rank's gradient clipped */
  const char *local_clip_source;
  double sends;               /* DGC: the codec's ratio is sends / (the steps after the plain
                                 warm-up), so a coordinate is sent about that often in the run,
                                 and never below paper_ratio (0: the codec's own ratio) */
  double paper_ratio;
  const char *ratio_source;
} AxCompressRecipe;

/* The recipe of a codec name (NULL: the codec has none; its defaults are its own, docs/codecs.md). */
const AxCompressRecipe *ax_compress_recipe(const char *codec);
/* The codec of --compress-stages F without --compress: Optimus-CC's selective stage
 * compression runs PowerSGD (§7, §9.1), with PowerSGD's recipe. */
#define AX_STAGES_CODEC "powersgd"
/* Why parts of at most one row (1-D tensors) stay plain unless --compress-vectors 1. */
extern const char AX_VECTORS_SOURCE[];
/* --compress-warmup auto under recipe r (NULL: 0) for a run of `steps`. */
int ax_compress_recipe_warmup(const AxCompressRecipe *r, int steps);
/* The codec keys of recipe r (NULL: none) into out[cap], momentum=beta1 included where it has
 * one, a sparsity warm-up where it has one and `ramp` allows it:
 * ramp=floor(fraction x steps) steps from the first step after `warmup` plain ones
 * (ramp_from=warmup+1), and where it sets the ratio and `ratio` allows it, that of
 * ax_compress_recipe_ratio. */
void ax_compress_recipe_keys(const AxCompressRecipe *r, double beta1, int warmup, int steps,
                             int ramp, int ratio, char *out, size_t cap);
/* The ratio recipe r gives a run of `steps` with `warmup` plain ones: max(paper_ratio, sends /
 * (steps - warmup)), at most 1 (0: r sets none). */
double ax_compress_recipe_ratio(const AxCompressRecipe *r, int steps, int warmup);

#endif
