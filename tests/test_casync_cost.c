/* test_casync_cost.c — HiPress §3.3's cost model against hand-computed values (Table 3's
 * coefficients, equations 1 and 2, the grouping of K beyond N), the decisions it must make at
 * the extremes, the trainer's threshold policy, the per-rank checkpoint state file (round
 * trip, another label, damage), and that profiling a codec gives usable positive costs. No
 * timing is judged: profiled figures are only checked to be finite and positive. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "mpi/casync/casync_cost.h"
#include "src/core/error.h"
#include "src/io/ckpt_blob.h"
#include "src/train/train_compress.h"
#include "testutil.h"

static AxCasyncCosts costs(double send_lat, double send_bw, double codec_bw, double ratio) {
  return (AxCasyncCosts){.send = {send_lat, send_bw}, .enc = {0, codec_bw},
                         .dec = {0, codec_bw}, .ratio = ratio};
}

START_TEST(coefficients_are_table_3) {
  double a, b, g;
  ax_casync_coefficients(AX_CASYNC_RING, 4, 4, &a, &b, &g);
  ck_assert(a == 6 && b == 4 && g == 4);
  ax_casync_coefficients(AX_CASYNC_PS, 4, 3, &a, &b, &g);
  ck_assert(a == 8 && b == 4 && g == 5);
}
END_TEST

START_TEST(equations_1_and_2_by_hand) {
  AxCasyncCosts c = costs(1e-5, 1e9, 4e9, 0.25);
  double m = 8e6; /* 8 MB on 4 ranks, K = 4: partitions of 2 MB */
  /* (1): 2(N-1) sends of 2 MB */
  ck_assert_double_eq_tol(ax_casync_t_orig(&c, AX_CASYNC_RING, 4, m, 4), 6 * (1e-5 + 2e6 / 1e9),
                          1e-15);
  /* (2): 6 sends of 0.5 MB, 4 encodes of 2 MB, 4 decodes of 0.5 MB */
  double want = 6 * (1e-5 + 0.5e6 / 1e9) + 4 * (2e6 / 4e9) + 4 * (0.5e6 / 4e9);
  ck_assert_double_eq_tol(ax_casync_t_cpr(&c, AX_CASYNC_RING, 4, m, 4), want, 1e-15);
  /* K = 8 on 4 ranks: two rounds of partitions of 1 MB */
  ck_assert_double_eq_tol(ax_casync_t_orig(&c, AX_CASYNC_RING, 4, m, 8),
                          2 * 6 * (1e-5 + 1e6 / 1e9), 1e-15);
}
END_TEST

START_TEST(slow_link_compresses_fast_link_does_not) {
  AxCasyncCosts slow = costs(5e-6, 1.25e8, 4e9, 1.0 / 32); /* 1 Gb/s, onebit-like codec */
  AxCasyncChoice ch = ax_casync_choose(&slow, AX_CASYNC_RING, 2, 64e6, 0);
  ck_assert_int_eq(ch.compress, 1);
  ck_assert(ch.t_cpr < ch.t_orig);
  AxCasyncCosts fast = costs(0, 1e15, 4e9, 1.0 / 32); /* a link far faster than the codec */
  ch = ax_casync_choose(&fast, AX_CASYNC_RING, 2, 64e6, 0);
  ck_assert_int_eq(ch.compress, 0);
  ck_assert(ch.t_orig <= ch.t_cpr);
  ch = ax_casync_choose(&slow, AX_CASYNC_PS, 1, 64e6, 0); /* one rank: nothing to send */
  ck_assert_int_eq(ch.compress, 0);
}
END_TEST

START_TEST(the_choice_is_the_minimum_over_k) {
  AxCasyncCosts c = costs(2e-5, 1.25e9, 2e9, 0.1);
  for (int algo = 0; algo < 2; algo++) {
    AxCasyncChoice ch = ax_casync_choose(&c, (AxCasyncAlgo)algo, 4, 1e6, 12);
    for (int k = 1; k <= 12; k++) {
      ck_assert(ch.t_orig <= ax_casync_t_orig(&c, (AxCasyncAlgo)algo, 4, 1e6, k));
      ck_assert(ch.t_cpr <= ax_casync_t_cpr(&c, (AxCasyncAlgo)algo, 4, 1e6, k));
    }
    ck_assert_int_eq(ch.compress, ch.t_cpr < ch.t_orig);
  }
}
END_TEST

START_TEST(threshold_policy_and_linear_codecs) {
  AxCodec *onebit, *power;
  ck_assert_int_eq(ax_codec_parse("onebit", &onebit), AX_OK);
  ck_assert_int_eq(ax_codec_parse("powersgd:rank=2", &power), AX_OK);
  AxTrainConfig cfg = {.compression = {.compress = "onebit", .compress_min_bytes = "4K"}};
  int is_auto;
  long long min;
  ck_assert_int_eq(ax_train_compress_min_bytes(&cfg, &is_auto, &min), AX_OK);
  ck_assert(!is_auto && min == 4096);
  AxCasyncCosts c = {0};
  ck_assert_int_eq(ax_compress_decide(onebit, &c, AX_CASYNC_RING, 2, 0, min, 1024).compress, 1);
  ck_assert_int_eq(ax_compress_decide(onebit, &c, AX_CASYNC_RING, 2, 0, min, 1023).compress, 0);
  ck_assert_int_eq(ax_compress_decide(onebit, &c, AX_CASYNC_RING, 1, 0, min, 4096).compress, 0);
  cfg.compression.compress_min_bytes = "auto";
  ck_assert_int_eq(ax_train_compress_min_bytes(&cfg, &is_auto, &min), AX_OK);
  ck_assert(is_auto);
  cfg.compression.compress_min_bytes = "4Q";
  ck_assert_int_eq(ax_train_compress_min_bytes(&cfg, &is_auto, &min), AX_ERR);
  ax_error_clear();
  ax_codec_free(onebit);
  ax_codec_free(power);
}
END_TEST

START_TEST(linear_codecs_pay_their_factors_once) {
  /* T_cpr = T_enc(m) + the plain ring over r m */
  AxCasyncCosts c = {.send = {1e-5, 1e9}, .enc = {1e-4, 5e8}, .dec = {0, INFINITY},
                     .ratio = 0.01, .linear = 1};
  double m = 64e6, want = 1e-4 + m / 5e8 + 2 * (1e-5 + 0.01 * m / 2 / 1e9);
  ck_assert_double_eq_tol(ax_casync_t_cpr(&c, AX_CASYNC_RING, 2, m, 2), want, 1e-12);
}
END_TEST

START_TEST(profiled_costs_are_usable) {
  AxCodec *onebit;
  ck_assert_int_eq(ax_codec_parse("onebit", &onebit), AX_OK);
  AxCasyncCosts c;
  ck_assert_int_eq(ax_casync_profile_codec(onebit, 3, &c), AX_OK);
  ck_assert(isfinite(c.enc.bytes_per_s) && c.enc.bytes_per_s > 0 && c.enc.latency_s >= 0);
  ck_assert(isfinite(c.dec.bytes_per_s) && c.dec.bytes_per_s > 0 && c.dec.latency_s >= 0);
  ck_assert(c.ratio > 0 && c.ratio < 0.05); /* sign bits and a scale: about 1/32 */
  ck_assert(!c.linear);
  AxCodec *power;
  ck_assert_int_eq(ax_codec_parse("powersgd:rank=2", &power), AX_OK);
  ck_assert_int_eq(ax_casync_profile_codec(power, 3, &c), AX_OK);
  ck_assert(c.linear && isfinite(c.enc.bytes_per_s) && c.enc.bytes_per_s > 0);
  ck_assert(c.ratio > 0 && c.ratio < 0.01); /* (1024 + 1024) x 2 floats of 1M */
  ax_codec_free(power);
  ax_codec_free(onebit);
}
END_TEST

START_TEST(state_file_round_trip_label_and_damage) {
  const char *dir = tu_path("");
  float state[100], back[100];
  for (int i = 0; i < 100; i++) state[i] = (float)i * 0.25f;
  AxCkptFile info;
  ck_assert_int_eq(ax_ckpt_blob_write(dir, "codec-0.bin", "codec onebit rank 0", state,
                                      sizeof state, &info), AX_OK);
  /* what the manifest lists of it: checked as a stage file is */
  ck_assert_str_eq(info.name, "codec-0.bin");
  ck_assert_int_eq(ax_ckpt_check_file(dir, &info), AX_OK);
  char label[AX_BLOB_LABEL_MAX];
  ck_assert_int_eq(ax_ckpt_blob_label(dir, "codec-0.bin", label, sizeof label), AX_OK);
  ck_assert_str_eq(label, "codec onebit rank 0");
  int found, same;
  ck_assert_int_eq(ax_ckpt_blob_read(dir, "codec-0.bin", "codec onebit rank 0", back,
                                     sizeof back, &found, &same), AX_OK);
  ck_assert(found && same && memcmp(state, back, sizeof back) == 0);
  ck_assert_int_eq(ax_ckpt_blob_read(dir, "codec-0.bin", "codec topk rank 0", back, sizeof back,
                                     &found, &same), AX_OK);
  ck_assert(found && !same);
  ck_assert_int_eq(ax_ckpt_blob_read(dir, "codec-9.bin", "x", back, sizeof back, &found, &same),
                   AX_OK);
  ck_assert(!found);
  char path[1200];
  snprintf(path, sizeof path, "%s/codec-0.bin", dir);
  FILE *f = fopen(path, "r+b");
  ck_assert_ptr_nonnull(f);
  fseek(f, 40, SEEK_SET);
  fputc('Z', f);
  fclose(f);
  ck_assert_int_eq(ax_ckpt_blob_read(dir, "codec-0.bin", "codec onebit rank 0", back,
                                     sizeof back, &found, &same), AX_ERR);
  ck_assert_ptr_nonnull(strstr(ax_error_message(), "CRC"));
  ax_error_clear();
  ck_assert_int_eq(ax_ckpt_check_file(dir, &info), AX_ERR);
  ck_assert_ptr_nonnull(strstr(ax_error_message(), "CRC mismatch"));
  ax_error_clear();
}
END_TEST

int main(void) {
  Suite *s = suite_create("casync_cost");
  TCase *tc = tu_tcase(s, "cost model", 60);
  tcase_add_test(tc, coefficients_are_table_3);
  tcase_add_test(tc, equations_1_and_2_by_hand);
  tcase_add_test(tc, slow_link_compresses_fast_link_does_not);
  tcase_add_test(tc, the_choice_is_the_minimum_over_k);
  tcase_add_test(tc, threshold_policy_and_linear_codecs);
  tcase_add_test(tc, linear_codecs_pay_their_factors_once);
  tcase_add_test(tc, profiled_costs_are_usable);
  tcase_add_test(tc, state_file_round_trip_label_and_damage);
  return tu_run(s);
}
