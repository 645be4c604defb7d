/* test_summary.c — the end-of-run summary without MPI: the timing window (full, short, too
 * short), the paper's figures against hand-computed values, the peak table and --peak-tflops,
 * the JSON writer's escaping and the summary line's shape, the GEMM shapes the CPU peak is
 * measured at and the measurement itself. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/gpt_stage.h"
#include "src/backend/peak.h"
#include "src/core/error.h"
#include "src/core/jsonw.h"
#include "src/report/metrics.h"
#include "src/report/summary.h"
#include "src/train/train_config.h"
#include "testutil.h"

/* Feeds steps first..first+count-1, the k-th taking k milliseconds. */
static AxMetrics run_from(int first, int count, int skip, int steps) {
  AxMetrics m;
  ck_assert_int_eq(ax_metrics_open(&m, NULL, 1, first + count - 1, 64, 1e6), AX_OK);
  ax_metrics_timing_window(&m, skip, steps);
  for (int k = 1; k <= count; k++) {
    AxStepRecord r = {.step = first + k - 1, .loss = 1, .ms = k, .val_loss = NAN};
    ck_assert_int_eq(ax_metrics_step(&m, &r), AX_OK);
  }
  ck_assert_int_eq(ax_metrics_close(&m), AX_OK);
  return m;
}

static AxMetrics run_steps(int total, int skip, int steps) { return run_from(1, total, skip, steps); }

START_TEST(timing_window_is_steps_after_the_skip) {
  AxTiming t;
  AxMetrics m = run_steps(11, 1, 10); /* the paper: 11 batches, the last 10 averaged */
  ax_summary_timing(&t, &m, 1, 10);
  ck_assert_int_eq(t.first, 2);
  ck_assert_int_eq(t.last, 11);
  ck_assert_int_eq(t.n, 10);
  ck_assert_double_eq_tol(t.mean_ms, 6.5, 1e-12);
  ck_assert_double_eq(t.min_ms, 2);
  ck_assert_double_eq(t.max_ms, 11);
  m = run_steps(20, 3, 5); /* steps 4..8 of a longer run */
  ax_summary_timing(&t, &m, 3, 5);
  ck_assert_int_eq(t.n, 5);
  ck_assert_double_eq_tol(t.mean_ms, 6, 1e-12);
}
END_TEST

START_TEST(timing_window_of_short_runs) {
  AxTiming t;
  AxMetrics m = run_steps(4, 1, 10); /* what exists: steps 2..4 */
  ax_summary_timing(&t, &m, 1, 10);
  ck_assert_int_eq(t.first, 2);
  ck_assert_int_eq(t.n, 3);
  ck_assert_double_eq_tol(t.mean_ms, 3, 1e-12);
  m = run_steps(1, 1, 10); /* nothing after the warm-up: the one step there is */
  ax_summary_timing(&t, &m, 1, 10);
  ck_assert_int_eq(t.first, 1);
  ck_assert_int_eq(t.n, 1);
  ck_assert_int_eq(t.skip, 0);
  m = run_from(101, 11, 1, 10); /* resumed at step 101: its own warm-up is left out */
  ax_summary_timing(&t, &m, 1, 10);
  ck_assert_int_eq(t.first, 102);
  ck_assert_int_eq(t.last, 111);
  ck_assert_double_eq_tol(t.mean_ms, 6.5, 1e-12);
  m = run_steps(0, 1, 10);
  ax_summary_timing(&t, &m, 1, 10);
  ck_assert_int_eq(t.n, 0);
  ck_assert(isnan(t.mean_ms));
}
END_TEST

START_TEST(figures_follow_the_paper) {
  /* GPT 12B of the paper (l 48, h 4512, s 512, V 51200), batch 16384, 48 V100s at 125 */
  AxGptConfig m = {.max_seq = 512, .vocab = 51200, .padded_vocab = 51200, .layers = 48,
                   .heads = 24, .channels = 4512};
  AxFigures f;
  double t = 200.0; /* seconds per batch */
  ax_summary_figures(&f, &m, 16384, 512, t * 1e3, 48, 125, 0);
  double b = 16384, s = 512, l = 48, h = 4512, V = 51200;
  double paper = 96 * b * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
  double executed = 72 * b * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
  ck_assert_double_eq_tol(f.flops_per_step / executed, 1, 1e-12); /* the headline: executed */
  ck_assert_double_eq_tol(f.flops_per_s, executed / t, executed / t * 1e-12);
  ck_assert_double_eq_tol(f.percent_of_peak, 100 * executed / t / (48 * 125e12), 1e-9);
  ck_assert_double_eq_tol(f.paper_flops_per_step / paper, 1, 1e-12); /* beside it: the paper's */
  ck_assert_double_eq_tol(f.paper_percent_of_peak, 100 * paper / t / (48 * 125e12), 1e-9);
  ck_assert_double_eq_tol(f.tokens_per_s, b * s / t, 1e-6);
  ck_assert_double_eq_tol(f.days, 3e11 * t / (b * s) / 86400, 1e-9);
  ck_assert_int_eq(f.recompute, 0);
  ck_assert_int_eq(f.above_peak, 0);
  ax_summary_figures(&f, &m, 16384, 512, t * 1e3, 48, 125, 1); /* checkpointing ran */
  ck_assert_double_eq_tol(f.flops_per_step / paper, 1, 1e-12);
  ax_summary_figures(&f, &m, 16384, 512, 1.0, 48, 125, 0); /* 1 ms: far above the peak */
  ck_assert_int_eq(f.above_peak, 1);
  ck_assert(f.percent_of_peak > 100); /* reported as measured, never clamped */
  ax_summary_figures(&f, &m, 16384, 512, t * 1e3, 48, NAN, 0); /* peak unknown */
  ck_assert(isnan(f.percent_of_peak));
  ck_assert_int_eq(f.above_peak, 0);
  ck_assert(isfinite(f.tokens_per_s));
}
END_TEST

START_TEST(peak_table_and_option) {
  AxPeakInfo p;
  ck_assert_double_eq(ax_peak_gpu_table("Tesla V100-SXM2-16GB"), 125);
  ck_assert_double_eq(ax_peak_gpu_table("NVIDIA A100-SXM4-40GB"), 312);
  ck_assert_double_eq(ax_peak_gpu_table("NVIDIA H100 80GB HBM3"), 989);
  ck_assert_double_eq(ax_peak_gpu_table("GeForce GTX 1080"), 0);
  ck_assert_int_eq(ax_summary_peak_lookup(&p, 7.5, "cuda", "Tesla V100"), 1);
  ck_assert_double_eq(p.tflops_per_rank, 7.5);
  ck_assert_str_eq(p.source, "--peak-tflops");
  ck_assert_int_eq(ax_summary_peak_lookup(&p, 0, "cuda", "Tesla V100-SXM2-16GB"), 1);
  ck_assert_double_eq(p.tflops_per_rank, 125);
  ck_assert_int_eq(ax_summary_peak_lookup(&p, 0, "cuda", ""), 0);
  ck_assert(isnan(p.tflops_per_rank));
  ck_assert_int_eq(ax_summary_peak_lookup(&p, 0, "cpu", ""), 0); /* to be measured */
}
END_TEST

static char *written(void (*fn)(FILE *, const void *), const void *arg) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  ck_assert_ptr_nonnull(f);
  fn(f, arg);
  fclose(f);
  return text;
}

static void write_quoted(FILE *f, const void *s) { ax_jsonw_quote(f, s); }

static void write_nested(FILE *f, const void *unused) {
  (void)unused;
  AxJsonW j;
  ax_jsonw_init(&j, f);
  ax_jsonw_object(&j, NULL);
  ax_jsonw_int(&j, "a", 1);
  ax_jsonw_array(&j, "b");
  ax_jsonw_num(&j, NULL, 0.5);
  ax_jsonw_num(&j, NULL, NAN);
  ax_jsonw_end(&j);
  ax_jsonw_object(&j, "c");
  ax_jsonw_bool(&j, "d", 1);
  ax_jsonw_str(&j, "e", NULL);
  ax_jsonw_end(&j);
  ax_jsonw_end(&j);
}

START_TEST(json_writer) {
  char *q = written(write_quoted, "a\"b\\c\nd\te\x01");
  ck_assert_str_eq(q, "\"a\\\"b\\\\c\\nd\\te\\u0001\"");
  free(q);
  char *n = written(write_nested, NULL);
  ck_assert_str_eq(n, "{\"a\":1,\"b\":[0.5,null],\"c\":{\"d\":true,\"e\":null}}");
  free(n);
}
END_TEST

static void write_summary(FILE *f, const void *s) { ax_summary_write_json(f, s); }

START_TEST(summary_line_has_every_option) {
  AxTrainConfig cfg;
  memset(&cfg, 0, sizeof cfg);
  ck_assert_int_eq(ax_options_defaults(&AX_TRAIN_OPTIONS, &cfg), AX_OK);
  long long host[2] = {100, 200};
  AxSummary s = {.options = &AX_TRAIN_OPTIONS, .cfg = &cfg, .device = "cpu", .host = "h",
                 .ranks = 2, .g_inter = 2, .g_data = 1, .steps_run = 3, .final_loss = 2.5,
                 .final_val_loss = NAN,
                 .mem = {.host_bytes = host, .device_bytes = host, .device_source = "host"}};
  s.model = ax_train_model_config(&cfg);
  AxMetrics m = run_steps(3, 1, 10);
  ax_summary_timing(&s.timing, &m, 1, 10);
  ax_summary_figures(&s.fig, &s.model, cfg.data.batch, cfg.model.seq, s.timing.mean_ms, 2, NAN, 0);
  snprintf(s.peak.source, sizeof s.peak.source, "unknown");
  s.peak.tflops_per_rank = NAN;
  char *text = written(write_summary, &s);
  ck_assert(strncmp(text, "{\"axonn_summary\":2,", 19) == 0);
  ck_assert_ptr_null(strchr(text, '\n'));
  for (int i = 0; i < AX_TRAIN_OPTIONS.n_opts; i++) {
    char key[96];
    snprintf(key, sizeof key, "\"%s\":", AX_TRAIN_OPTIONS.opts[i].name);
    ck_assert_msg(strstr(text, key), "option %s missing", key);
  }
  ck_assert_ptr_nonnull(strstr(text, "\"host_peak_bytes\":[100,200]"));
  ck_assert_ptr_nonnull(strstr(text, "\"percent_of_peak\":null"));
  ck_assert_ptr_nonnull(strstr(text, "\"paper_flops_formula\":\"96*B*s*l*h^2*(1+s/(6*h)+V/(16*l*h))\""));
  ck_assert_ptr_nonnull(strstr(text, "\"flops_formula\":\"72*B*s*l*h^2*(1+s/(6*h)+V/(12*l*h))\""));
  ck_assert_ptr_nonnull(strstr(text, "\"complete\":false"));
  free(text);
  ax_train_config_free(&cfg);
}
END_TEST

/* The shapes a GPT's peak is measured at: the model's products, prepared for a CPU or a GPU. */
static int gpt_peak_shapes(const AxGptConfig *m, int rows, int gpu, AxGemmShape *out) {
  AxGemmShape model[AX_GPT_GEMMS];
  return ax_peak_shapes(model, ax_gpt_gemm_shapes(m, rows, model), gpu, out);
}

START_TEST(peak_shapes_are_the_runs) {
  AxGptConfig m = {.max_seq = 64, .vocab = 256, .padded_vocab = 256, .layers = 4, .heads = 4,
                   .channels = 128};
  AxGemmShape sh[AX_PEAK_MAX_SHAPES];
  int n = gpt_peak_shapes(&m, 16 * 64, 0, sh);
  ck_assert_int_eq(n, 6);
  const int want[6][3] = {{1024, 384, 128}, {1024, 128, 128}, {1024, 512, 128},
                          {1024, 128, 512}, {1024, 256, 128}, {1024, 1024, 1024}};
  for (int i = 0; i < n; i++) {
    ck_assert_int_eq(sh[i].m, want[i][0]);
    ck_assert_int_eq(sh[i].n, want[i][1]);
    ck_assert_int_eq(sh[i].k, want[i][2]);
  }
  ck_assert_str_eq(sh[4].name, "lm-head");
  AxGptConfig big = {.max_seq = 1024, .vocab = 50257, .padded_vocab = 50304, .layers = 12,
                     .heads = 12, .channels = 768};
  gpt_peak_shapes(&big, 4 * 1024, 0, sh); /* GPT-2 small, B 4, T 1024: capped at 2048 */
  ck_assert_int_eq(sh[4].m, AX_PEAK_DIM_CAP);
  ck_assert_int_eq(sh[4].n, AX_PEAK_DIM_CAP);
  ck_assert_int_eq(sh[4].k, 768);
  gpt_peak_shapes(&big, 4 * 1024, 1, sh); /* a GPU measures them as they are */
  ck_assert_int_eq(sh[4].m, 4096);
  ck_assert_int_eq(sh[4].n, 50257);
  ck_assert_int_eq(sh[5].m, AX_PEAK_SQUARE_GPU);
}
END_TEST

START_TEST(cpu_peak_is_measured) {
  AxGemmShape sh[2] = {{64, 96, 32, "small"}, {128, 128, 128, "square"}};
  AxPeakResult r;
  ck_assert_int_eq(ax_peak_cpu(1, 0, 0, 1, sh, 2, &r), AX_OK);
  /* from 1 MFLOP/s: under qemu-ppc64le on a loaded machine it measured 0.033 GFLOP/s */
  ck_assert_msg(r.gflops > 1e-3 && r.gflops < 1e5, "GEMM peak %g GFLOP/s", r.gflops);
  ck_assert_int_eq(r.n_shapes, 2);
  ck_assert(r.best.m == 64 || r.best.m == 128);
}
END_TEST

int main(void) {
  Suite *s = suite_create("summary");
  TCase *tc = tu_tcase(s, "summary", 30);
  tcase_add_test(tc, timing_window_is_steps_after_the_skip);
  tcase_add_test(tc, timing_window_of_short_runs);
  tcase_add_test(tc, figures_follow_the_paper);
  tcase_add_test(tc, peak_table_and_option);
  tcase_add_test(tc, json_writer);
  tcase_add_test(tc, summary_line_has_every_option);
  tcase_add_test(tc, peak_shapes_are_the_runs);
  tcase_add_test(tc, cpu_peak_is_measured);
  return tu_run(s);
}
