/* test_train.c — whole training runs through the trainer that `axonn train` uses:
 * bit-identical reruns, activation checkpointing that changes memory but not one bit of the
 * math, gradient accumulation over micro-batches, save + --init, option handling, the learning
 * rate schedule, and real text (tiny Shakespeare) whose loss must fall below a stated bound. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/cli/commands.h"
#include "src/core/error.h"
#include "src/core/log.h"
#include "src/train/train_lr.h"
#include "src/train/train_recipe.h"
#include "src/train/train_config.h"
#include "src/train/trainer.h"
#include "testutil.h"

#define SHAKESPEARE "data/tinyshakespeare.txt" /* ships with the repository */
enum { MAX_STEPS = 400 };

typedef struct {
  double loss[MAX_STEPS + 1];
  double val[MAX_STEPS + 1];
} Run;

/* Trains with "train" options given as one string; fills per-step losses. */
static void train(const char *args, int steps, Run *out) {
  char buf[2048];
  snprintf(buf, sizeof buf, "--quiet --steps %d %s", steps, args);
  AxTrainConfig cfg;
  tu_train_config(&cfg, buf);
  ax_log_set_quiet(1);
  AxTrainer *t;
  ck_assert_msg(ax_trainer_create(&t, &cfg) == AX_OK, "%s", ax_error_message());
  for (int s = 1; s <= steps; s++) {
    AxStepRecord rec;
    ck_assert_msg(ax_trainer_step(t, s, &rec) == AX_OK, "%s", ax_error_message());
    ck_assert_msg(ax_trainer_validate_if_due(t, s, &rec) == AX_OK, "%s", ax_error_message());
    out->loss[s] = rec.loss;
    out->val[s] = rec.val_loss;
  }
  if (cfg.output.save) ck_assert_msg(ax_trainer_save(t, cfg.output.save) == AX_OK, "%s", ax_error_message());
  ax_trainer_destroy(t);
  ax_train_config_free(&cfg);
}

#define SMALL "--layers 2 --hidden 32 --heads 2 --seq 16 --batch 8 --val-every 0 --val-steps 2"

START_TEST(rerun_is_bit_identical) {
  Run a, b;
  train(SMALL " --threads 2 --seed 11", 6, &a);
  train(SMALL " --threads 2 --seed 11", 6, &b);
  for (int s = 1; s <= 6; s++) ck_assert_double_eq(a.loss[s], b.loss[s]);
  ck_assert_double_eq(a.val[6], b.val[6]);
  Run c;
  train(SMALL " --threads 2 --seed 12", 6, &c);
  ck_assert_double_ne(a.loss[1], c.loss[1]); /* the seed matters */
  ck_assert_double_lt(a.loss[6], a.loss[1]); /* and it learns */
}
END_TEST

START_TEST(checkpointing_changes_no_bits) {
  Run plain, ac1, ac2;
  train("--layers 3 --hidden 32 --heads 2 --seq 16 --batch 8 --micro-batch 4 --val-steps 0", 4,
        &plain);
  train("--layers 3 --hidden 32 --heads 2 --seq 16 --batch 8 --micro-batch 4 --val-steps 0 "
        "--checkpoint-activations --ac 1", 4, &ac1);
  train("--layers 3 --hidden 32 --heads 2 --seq 16 --batch 8 --micro-batch 4 --val-steps 0 "
        "--checkpoint-activations --ac 2", 4, &ac2); /* uneven segments: 2 + 1 */
  for (int s = 1; s <= 4; s++) {
    ck_assert_double_eq(plain.loss[s], ac1.loss[s]);
    ck_assert_double_eq(plain.loss[s], ac2.loss[s]);
  }
}
END_TEST

START_TEST(micro_batches_accumulate_gradients) {
  Run whole, split;
  train(SMALL " --micro-batch 8 --shuffle 0", 5, &whole);
  train(SMALL " --micro-batch 2 --shuffle 0", 5, &split);
  for (int s = 1; s <= 5; s++)
    ck_assert_msg(fabs(whole.loss[s] - split.loss[s]) <= 1e-5 * whole.loss[s],
                  "step %d: %.9f vs %.9f", s, whole.loss[s], split.loss[s]);
}
END_TEST

START_TEST(save_then_init_restores_the_model) {
  char args[1024];
  const char *path = tu_path("saved.bin");
  Run a, b;
  snprintf(args, sizeof args, SMALL " --save %s", path);
  train(args, 5, &a);
  /* lr 0 leaves the loaded weights untouched: its validation equals a's after step 5 */
  snprintf(args, sizeof args, "--init %s --seq 16 --batch 8 --val-every 0 --val-steps 2 --lr 0",
           path);
  train(args, 1, &b);
  ck_assert_double_eq(a.val[5], b.val[1]);
  /* a model saved before any step reproduces the first step's loss exactly */
  const char *path0 = tu_path("init.bin");
  snprintf(args, sizeof args, SMALL " --save %s", path0);
  train(args, 0, &a);
  Run c, d;
  train(SMALL, 1, &c);
  snprintf(args, sizeof args, "--init %s --seq 16 --batch 8 --val-steps 0", path0);
  train(args, 1, &d);
  ck_assert_double_eq(c.loss[1], d.loss[1]);
}
END_TEST

static void expect_parse_error(const char *args, const char *needle) {
  AxTrainConfig cfg;
  int rc = tu_train_config_try(&cfg, args);
  ck_assert_msg(rc == AX_ERR, "'%s' was accepted", args);
  ck_assert_msg(strstr(ax_error_text(), needle), "'%s': error '%s' lacks '%s'", args,
                ax_error_text(), needle);
  ax_error_clear();
  ax_train_config_free(&cfg);
}

START_TEST(options_are_checked) {
  expect_parse_error("--bogus 3", "unknown option --bogus");
  expect_parse_error("--layers x", "expects an integer");
  expect_parse_error("--lr", "needs a value");
  expect_parse_error("--lr-schedule linear", "must be one of constant|cosine");
  expect_parse_error("--batch 10 --g-data 4", "not divisible by --g-data 4");
  expect_parse_error("--batch 8 --micro-batch 3", "not divisible by --micro-batch 3");
  expect_parse_error("--init x.bin --layers 3", "conflicts with --init");
  expect_parse_error("--ac 2", "needs --checkpoint-activations");
  expect_parse_error("--shuffle 2", "out of range");
  /* config files: values apply, the command line wins, bad lines are located */
  const char *cfgfile = tu_path("run.cfg");
  FILE *f = fopen(cfgfile, "w");
  fprintf(f, "# a comment\nlayers = 6\nlr = 0.5  # trailing comment\n--hidden=64\n"
             "save = run#1.bin\n");
  fclose(f);
  char buf[600];
  snprintf(buf, sizeof buf, "train --config %s --lr 0.25", cfgfile);
  char *argv[8];
  int argc = 0;
  for (char *tok = strtok(buf, " "); tok; tok = strtok(NULL, " ")) argv[argc++] = tok;
  AxTrainConfig cfg;
  AxOptState st;
  ck_assert_int_eq(ax_train_config_parse(&cfg, argc, argv, &st), AX_OK);
  ck_assert_int_eq(cfg.model.layers, 6);
  ck_assert_double_eq(cfg.optim.lr, 0.25);
  ck_assert_str_eq(cfg.output.save, "run#1.bin"); /* a '#' inside a word is not a comment */
  ck_assert(ax_options_was_set(&AX_TRAIN_OPTIONS, &st, "layers"));
  ck_assert(!ax_options_was_set(&AX_TRAIN_OPTIONS, &st, "heads"));
  ax_train_config_free(&cfg);
  f = fopen(cfgfile, "w");
  fprintf(f, "layers = 6\nwhat is this\n");
  fclose(f);
  snprintf(buf, sizeof buf, "--config %s", cfgfile);
  expect_parse_error(buf, ":2: expected `name = value`");
}
END_TEST

/* The recipe item `what` of cfg, or NULL. */
static const AxRecipeItem *recipe_item(const AxTrainConfig *cfg, const char *what) {
  for (int i = 0; i < cfg->compression.recipe.n; i++)
    if (!strcmp(cfg->compression.recipe.item[i].what, what)) return &cfg->compression.recipe.item[i];
  return NULL;
}

/* args' codec in effect, warm-up steps and frozen variance. */
static void expect_compression(const char *args, const char *spec, int warmup, int freeze) {
  AxTrainConfig cfg;
  tu_train_config(&cfg, args);
  ck_assert_msg(!strcmp(cfg.compression.codec_spec, spec), "%s: codec %s, expected %s", args,
                cfg.compression.codec_spec, spec);
  ck_assert_msg(cfg.compression.warmup_steps == warmup, "%s: warm-up %d, expected %d", args,
                cfg.compression.warmup_steps, warmup);
  ck_assert_msg(cfg.compression.freeze_variance == freeze, "%s: freeze %d, expected %d", args,
                cfg.compression.freeze_variance, freeze);
  ax_train_config_free(&cfg);
}

/* The papers' recipes are the defaults (docs/compression.md, "Recipes"): onebit with error
 * feedback on the momentum (--beta1), 15% of the steps plain and the variance frozen (1-bit
 * Adam); PowerSGD with error
 * feedback, rank=auto and 13% plain (Optimus-CC §9.1); DGC 25% plain with the variance frozen,
 * then its sparsity warm-up over 5% of the steps (none where that is under one step), at the
 * ratio that sends each coordinate about 4 times after the plain steps, never below the
 * paper's 0.001 (4 / 450 = 0.00889 in 600 steps);
 * codecs without a recipe keep their own defaults and no warm-up. */
START_TEST(compression_recipes_are_the_defaults) {
  expect_compression("--g-data 2 --batch 8 --steps 600 --compress onebit",
                     "onebit:scale=mean,ef=1,momentum=0.9", 90, 1);
  expect_compression("--g-data 2 --batch 8 --steps 600 --compress powersgd",
                     "powersgd:rank=auto,cols=auto,ef=1", 78, 0);
  expect_compression("--g-data 2 --batch 8 --steps 600 --compress dgc",
                     "dgc:ratio=0.00889,momentum=0.9,ramp=30,ramp_from=151", 150, 1);
  expect_compression("--g-data 2 --batch 8 --steps 600 --compress dgc --compress-warmup 20",
                     "dgc:ratio=0.0069,momentum=0.9,ramp=30,ramp_from=21", 20, 1);
  expect_compression("--g-data 2 --batch 8 --steps 10 --compress dgc", /* floor(0.5): none */
                     "dgc:ratio=0.5,momentum=0.9", 2, 1);
  /* a run long enough for the paper's 99.9%: 15000 steps after the 5000 plain ones */
  expect_compression("--g-data 2 --batch 8 --steps 20000 --compress dgc",
                     "dgc:ratio=0.001,momentum=0.9,ramp=1000,ramp_from=5001", 5000, 1);
  expect_compression("--g-data 2 --batch 8 --steps 600 --compress terngrad",
                     "terngrad:bits=2,ef=0", 0, 0);
  expect_compression("--g-data 2 --batch 8 --steps 6 --compress onebit", /* floor(0.9) */
                     "onebit:scale=mean,ef=1,momentum=0.9", 0, 0);
  expect_compression("--g-data 2 --batch 8 --steps 600 --compress auto", /* its codec's */
                     "onebit:scale=mean,ef=1,momentum=0.9", 90, 1);
  expect_compression("--g-data 2 --batch 8 --steps 600 --compress onebit --beta1 0.8",
                     "onebit:scale=mean,ef=1,momentum=0.8", 90, 1); /* Adam's first moment */
  expect_compression("--g-data 2 --batch 8 --steps 600", "", 0, 0);
  /* --compress-stages F alone: Optimus-CC's PowerSGD, with its recipe */
  expect_compression("--g-inter 2 --g-data 2 --batch 8 --steps 600 --compress-stages 0.5",
                     "powersgd:rank=auto,cols=auto,ef=1", 78, 0);
  /* ... and onebit's with its momentum, as on every stage: the tied embedding's two copies take
   * the job's settings (docs/compression.md) */
  expect_compression("--g-inter 2 --g-data 2 --batch 8 --steps 600 --compress onebit "
                     "--compress-stages 0.5", "onebit:scale=mean,ef=1,momentum=0.9", 90, 1);
  AxTrainConfig cfg;
  tu_train_config(&cfg, "--g-data 2 --batch 8 --steps 600 --compress onebit");
  ck_assert_str_eq(cfg.compression.recipe.codec, "onebit");
  ck_assert_str_eq(recipe_item(&cfg, "compress-warmup")->value, "90 (15% of --steps 600)");
  ck_assert_ptr_nonnull(strstr(recipe_item(&cfg, "compress-warmup")->source, "1-bit Adam"));
  ck_assert_str_eq(recipe_item(&cfg, "compress-vectors")->value, "0");
  ax_train_config_free(&cfg);
}
END_TEST

/* DGC's ratio by hand: max(0.001, 4 / (steps - warmup)), at most 1; no recipe ratio for a
 * codec whose recipe sets none. */
START_TEST(dgc_ratio_follows_the_run_length) {
  const AxCompressRecipe *dgc = ax_compress_recipe("dgc");
  ck_assert_double_eq_tol(ax_compress_recipe_ratio(dgc, 600, 150), 4.0 / 450, 1e-15);
  ck_assert_double_eq_tol(ax_compress_recipe_ratio(dgc, 1200, 300), 4.0 / 900, 1e-15);
  ck_assert_double_eq(ax_compress_recipe_ratio(dgc, 4000, 0), 0.001);  /* 4 / 4000 exactly */
  ck_assert_double_eq(ax_compress_recipe_ratio(dgc, 20000, 5000), 0.001); /* the paper's */
  ck_assert_double_eq(ax_compress_recipe_ratio(dgc, 10, 8), 1);        /* 4 / 2: all of it */
  ck_assert_double_eq(ax_compress_recipe_ratio(dgc, 10, 10), 1);       /* no step after */
  ck_assert_double_eq(ax_compress_recipe_ratio(ax_compress_recipe("onebit"), 600, 90), 0);
  ck_assert_double_eq(ax_compress_recipe_ratio(NULL, 600, 90), 0);
  /* the user's ratio wins */
  expect_compression("--g-data 2 --batch 8 --steps 600 --compress dgc:ratio=0.001",
                     "dgc:ratio=0.001,momentum=0.9,ramp=30,ramp_from=151", 150, 1);
}
END_TEST

/* Every flag and codec key the user gives wins over the recipe's default. */
START_TEST(explicit_flags_override_the_recipe) {
  expect_compression("--g-data 2 --batch 8 --steps 600 --compress powersgd:rank=4,ef=0",
                     "powersgd:rank=4,cols=auto,ef=0", 78, 0);
  expect_compression("--g-data 2 --batch 8 --steps 600 --compress onebit:ef=0,momentum=0 "
                     "--compress-warmup 10 --compress-freeze-variance 0",
                     "onebit:scale=mean,ef=0", 10, 0);
  expect_compression("--g-data 2 --batch 8 --steps 600 --compress powersgd "
                     "--compress-freeze-variance 1", "powersgd:rank=auto,cols=auto,ef=1", 78, 1);
  expect_compression("--g-data 2 --batch 8 --steps 600 --compress dgc:ratio=0.01 "
                     "--compress-warmup 0", "dgc:ratio=0.01,momentum=0.9,ramp=30,ramp_from=1",
                     0, 0);
  expect_compression("--g-data 2 --batch 8 --steps 600 --compress dgc:ramp=0 "
                     "--compress-warmup 0", "dgc:ratio=0.00667,momentum=0.9", 0, 0);
  AxTrainConfig cfg;
  tu_train_config(&cfg, "--g-data 2 --batch 8 --steps 600 --compress onebit:ef=1,momentum=0.5 "
                        "--compress-warmup 5 --compress-vectors 1");
  ck_assert_ptr_null(recipe_item(&cfg, "compress-warmup")); /* given: no recipe default */
  ck_assert_ptr_null(recipe_item(&cfg, "compress-vectors"));
  ck_assert_ptr_nonnull(strstr(recipe_item(&cfg, "codec")->value, "every key given"));
  ck_assert_ptr_nonnull(recipe_item(&cfg, "compress-freeze-variance"));
  ax_train_config_free(&cfg);
  /* bad values: one line each */
  tu_expect_error(tu_train_config_try(&cfg, "--compress onebit --compress-warmup x"),
                  "--compress-warmup 'x' is not auto or an integer");
  ax_train_config_free(&cfg);
  tu_expect_error(tu_train_config_try(&cfg, "--compress onebit --compress-freeze-variance 2"),
                  "--compress-freeze-variance '2' is not auto or an integer from 0 to 1");
  ax_train_config_free(&cfg);
  tu_expect_error(tu_train_config_try(&cfg, "--g-data 2 --batch 8 --compress onebit "
                                            "--compress-warmup 0 --compress-freeze-variance 1"),
                  "needs --compress-warmup of at least 1");
  ax_train_config_free(&cfg);
  tu_expect_error(tu_train_config_try(&cfg, "--g-inter 2 --compress none --compress-stages 0.5"),
                  "--compress-stages 0.5 needs --compress");
  ax_train_config_free(&cfg);
  /* a codec carrying Adam's momentum on some stages only: the tied copies take the job's */
  ck_assert_int_eq(tu_train_config_try(&cfg, "--g-inter 2 --compress dgc --compress-stages 0.5"),
                   AX_OK);
  ck_assert_ptr_nonnull(strstr(cfg.compression.codec_spec, "momentum=0.9"));
  ax_train_config_free(&cfg);
}
END_TEST

START_TEST(lr_schedule_shapes) {
  AxLrSchedule s = {.cosine = 1, .lr = 1.0, .min_frac = 0.1, .warmup = 10, .total = 110};
  ck_assert_double_eq_tol(ax_lr_at(&s, 1), 0.1, 1e-12);
  ck_assert_double_eq_tol(ax_lr_at(&s, 10), 1.0, 1e-12);
  ck_assert_double_eq_tol(ax_lr_at(&s, 60), 0.55, 1e-12); /* halfway down the cosine */
  ck_assert_double_eq_tol(ax_lr_at(&s, 110), 0.1, 1e-12);
  s.cosine = 0;
  ck_assert_double_eq_tol(ax_lr_at(&s, 100), 1.0, 1e-12);
}
END_TEST

/* Real text: byte-level tiny Shakespeare, 4 layers x 128 wide. A model that learned nothing
 * sits near ln 256 = 5.55 nats; the unigram (letter frequency) entropy of this text is about
 * 3.3 nats and a bigram model's about 2.5. After 300 steps of 32 x 64 tokens the validation
 * loss must be below 2.4 nats (it reaches about 2.2): only a model that uses more context than
 * the previous character gets there. */
START_TEST(tiny_shakespeare_learns) {
  ck_assert_msg(access(SHAKESPEARE, R_OK) == 0, "%s is missing (run from the repository's top)",
                SHAKESPEARE);
  char prefix[600], cmd_in[] = SHAKESPEARE;
  snprintf(prefix, sizeof prefix, "%s", tu_path("shakespeare"));
  char *argv[] = {"prep", "--input", cmd_in, "--output", prefix, NULL};
  ax_log_set_quiet(1);
  ck_assert_int_eq(ax_cmd_prep(5, argv), 0);
  char args[2048];
  snprintf(args, sizeof args,
           "--data %s_train.bin --val-data %s_val.bin --layers 4 --hidden 128 --heads 4 --seq 64 "
           "--batch 32 --lr 3e-3 --warmup 20 --val-every 0 --val-steps 8", prefix, prefix);
  Run r;
  train(args, 300, &r);
  printf("tiny_shakespeare_learns: train loss %.4f -> %.4f, validation loss %.4f (bound 2.4)\n",
         r.loss[1], r.loss[300], r.val[300]);
  ck_assert_double_gt(r.loss[1], 5.0);
  ck_assert_double_lt(r.val[300], 2.4);
}
END_TEST

int main(void) {
  Suite *s = suite_create("train");
  TCase *tc = tu_tcase(s, "train", 120);
  tcase_add_test(tc, rerun_is_bit_identical);
  tcase_add_test(tc, checkpointing_changes_no_bits);
  tcase_add_test(tc, micro_batches_accumulate_gradients);
  tcase_add_test(tc, save_then_init_restores_the_model);
  tcase_add_test(tc, options_are_checked);
  tcase_add_test(tc, compression_recipes_are_the_defaults);
  tcase_add_test(tc, explicit_flags_override_the_recipe);
  tcase_add_test(tc, dgc_ratio_follows_the_run_length);
  tcase_add_test(tc, lr_schedule_shapes);
  TCase *real = tu_tcase(s, "real-text", 600);
  tcase_add_test(real, tiny_shakespeare_learns);
  return tu_run(s);
}
