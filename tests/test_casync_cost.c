/* test_casync_cost.c — HiPress's cost model against hand-computed values (the coefficients of
 * §6: ring 2(N-1), N, N; co-located PS 2(N-1), K, N; T_orig the plain ring's whatever CaSync
 * algorithm compresses; equations 1 and 2, the grouping of K beyond N), the decisions it must
 * make at the extremes (and the PS's K below N where a call's latency outweighs its bytes), the
 * fit of a linear cost through synthetic points (it recovers a known latency and bandwidth),
 * measured costs read between their points (the plain all-reduce's T_orig, a codec's encode
 * that jumps between two sizes and the decision it moves),
 * that the K a part chose is the number of partitions its CaSync state lays out, the
 * trainer's threshold policy, the per-rank checkpoint state file (round trip, another label,
 * damage), and that profiling a codec gives usable positive costs. No timing is judged:
 * profiled figures are only checked to be finite and positive. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "mpi/casync/casync_cost.h"
#include "offload/grad_compress.h"
#include "src/core/error.h"
#include "src/io/ckpt_blob.h"
#include "src/train/train_compress.h"
#include "testutil.h"

static AxCasyncCosts costs(double send_lat, double send_bw, double codec_bw, double ratio) {
  return (AxCasyncCosts){.send = {send_lat, send_bw}, .enc = {0, codec_bw},
                         .dec = {0, codec_bw}, .ratio = ratio};
}

START_TEST(coefficients_are_hipress_section_6) {
  double a, b, g;
  ax_casync_coefficients(AX_CASYNC_RING, 4, 4, &a, &b, &g);
  ck_assert(a == 6 && b == 4 && g == 4);
  ax_casync_coefficients(AX_CASYNC_RING, 4, 2, &a, &b, &g); /* K does not change the ring's */
  ck_assert(a == 6 && b == 4 && g == 4);
  ax_casync_coefficients(AX_CASYNC_PS, 4, 3, &a, &b, &g); /* co-located: 2(N-1), K, N */
  ck_assert(a == 6 && b == 3 && g == 4);
  ax_casync_coefficients(AX_CASYNC_PS, 2, 1, &a, &b, &g);
  ck_assert(a == 2 && b == 1 && g == 2);
  ax_casync_coefficients(AX_CASYNC_AG, 4, 3, &a, &b, &g); /* K(N-1) sends, K encodes, KN decodes */
  ck_assert(a == 9 && b == 3 && g == 12);
}
END_TEST

START_TEST(equations_1_and_2_by_hand) {
  AxCasyncCosts c = costs(1e-5, 1e9, 4e9, 0.25);
  double m = 8e6; /* 8 MB on 4 ranks, K = 4: partitions of 2 MB */
  /* (1): 2(N-1) sends of 2 MB */
  ck_assert_double_eq_tol(ax_casync_t_orig(&c, 4, m, 4), 6 * (1e-5 + 2e6 / 1e9), 1e-15);
  /* (2): 6 sends of 0.5 MB, 4 encodes of 2 MB, 4 decodes of 0.5 MB */
  double want = 6 * (1e-5 + 0.5e6 / 1e9) + 4 * (2e6 / 4e9) + 4 * (0.5e6 / 4e9);
  ck_assert_double_eq_tol(ax_casync_t_cpr(&c, AX_CASYNC_RING, 4, m, 4), want, 1e-15);
  /* K = 8 on 4 ranks: two rounds of partitions of 1 MB */
  ck_assert_double_eq_tol(ax_casync_t_orig(&c, 4, m, 8), 2 * 6 * (1e-5 + 1e6 / 1e9), 1e-15);
}
END_TEST

/* N = 2, where the old PS coefficients (2N, K + 1, N + 1) doubled the sends: T_orig is the
 * plain ring's 2 sends of m/2, the PS's T_cpr 2 sends of r m/K, K encodes of m/K and 2
 * decodes of r m/K, each with its call's latency. */
START_TEST(ps_on_two_ranks_by_hand) {
  AxCasyncCosts c = {.send = {5e-6, 1.25e9}, .enc = {2e-6, 5e9}, .dec = {1e-6, 2e9},
                     .ratio = 1.0 / 32};
  double m = 1 << 20, r = 1.0 / 32;
  double t_orig = 2 * (5e-6 + m / 2 / 1.25e9);
  double k1 = 2 * (5e-6 + r * m / 1.25e9) + 1 * (2e-6 + m / 5e9) + 2 * (1e-6 + r * m / 2e9);
  double k2 = 2 * (5e-6 + r * m / 2 / 1.25e9) + 2 * (2e-6 + m / 2 / 5e9) +
              2 * (1e-6 + r * m / 2 / 2e9);
  ck_assert_double_eq_tol(ax_casync_t_orig(&c, 2, m, 2), t_orig, 1e-15);
  ck_assert_double_eq_tol(ax_casync_t_cpr(&c, AX_CASYNC_PS, 2, m, 1), k1, 1e-15);
  ck_assert_double_eq_tol(ax_casync_t_cpr(&c, AX_CASYNC_PS, 2, m, 2), k2, 1e-15);
  AxCasyncChoice ch = ax_casync_choose(&c, AX_CASYNC_PS, 2, m, 0);
  ck_assert_double_eq_tol(ch.t_orig, t_orig, 1e-15); /* the ring's, under the PS too */
  ck_assert_double_eq_tol(ch.t_cpr, fmin(k1, k2), 1e-15);
  ck_assert_int_eq(ch.cpr_parts, k1 <= k2 ? 1 : 2);
  ck_assert_int_eq(ch.compress, 1);
  ck_assert_int_eq(ch.parts, ch.cpr_parts);
}
END_TEST

/* A tiny part under the PS: one encode's latency is worth more than the bytes a second
 * partition saves, so K = 1 < N; a large one takes K = N. */
START_TEST(ps_takes_fewer_partitions_for_small_parts) {
  AxCasyncCosts c = {.send = {5e-6, 1.25e8}, .enc = {20e-6, 4e9}, .dec = {1e-6, 4e9},
                     .ratio = 1.0 / 32};
  AxCasyncChoice small = ax_casync_choose(&c, AX_CASYNC_PS, 4, 16e3, 0);
  AxCasyncChoice large = ax_casync_choose(&c, AX_CASYNC_PS, 4, 256e6, 0);
  ck_assert_int_eq(small.cpr_parts, 1);
  ck_assert_int_eq(large.cpr_parts, 4);
  ck_assert_int_eq(large.compress, 1);
  ck_assert_int_eq(large.parts, 4);
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

/* A per-call cost keeps a tiny part plain where the same costs without it compress it: 512
 * bytes over a 1 Gb/s link save 2 x 240 ns of bytes, and 2 encodes and 2 decodes of 1 us
 * each cost more. */
START_TEST(per_call_costs_keep_tiny_parts_plain) {
  AxCasyncCosts free_calls = costs(5e-6, 1.25e8, 4e9, 1.0 / 16);
  AxCasyncCosts paid = free_calls;
  paid.enc.latency_s = paid.dec.latency_s = 1e-6;
  ck_assert_int_eq(ax_casync_choose(&free_calls, AX_CASYNC_RING, 2, 512, 0).compress, 1);
  ck_assert_int_eq(ax_casync_choose(&paid, AX_CASYNC_RING, 2, 512, 0).compress, 0);
  ck_assert_int_eq(ax_casync_choose(&paid, AX_CASYNC_RING, 2, 1 << 20, 0).compress, 1);
}
END_TEST

START_TEST(the_choice_is_the_minimum_over_k) {
  AxCasyncCosts c = costs(2e-5, 1.25e9, 2e9, 0.1);
  c.enc.latency_s = 3e-6;
  for (int algo = 0; algo < 3; algo++) {
    AxCasyncChoice ch = ax_casync_choose(&c, (AxCasyncAlgo)algo, 4, 1e6, 12);
    ck_assert_double_eq_tol(ch.t_orig, ax_casync_t_orig(&c, 4, 1e6, 4), 1e-15);
    for (int k = 1; k <= 12; k++) {
      ck_assert(ch.t_orig <= ax_casync_t_orig(&c, 4, 1e6, k));
      ck_assert(ch.t_cpr <= ax_casync_t_cpr(&c, (AxCasyncAlgo)algo, 4, 1e6, k));
    }
    ck_assert_int_eq(ch.compress, ch.t_cpr < ch.t_orig);
    /* the rounds beyond N never pay with linear costs */
    ck_assert_int_le(ch.cpr_parts, 4);
  }
}
END_TEST

/* The fit recovers a line from points on it: sizes 256 B to 16 MB, as the profile takes them. */
START_TEST(fit_recovers_latency_and_bandwidth) {
  const double lat[] = {3e-7, 2e-6, 5e-5}, bw[] = {8e9, 1.5e9, 1.25e8};
  double x[5], y[5];
  for (int c = 0; c < 3; c++) {
    for (int i = 0; i < 5; i++) {
      x[i] = 256.0 * pow(16, i);
      y[i] = lat[c] + x[i] / bw[c];
    }
    AxLinearCost f = ax_linear_fit(x, y, 5);
    ck_assert_double_eq_tol(f.latency_s, lat[c], lat[c] * 1e-9);
    ck_assert_double_eq_tol(f.bytes_per_s, bw[c], bw[c] * 1e-9);
  }
}
END_TEST

/* The plain all-reduce timed at the probe's sizes (1 KB x 16 up to 4 MB) on a ring of N ranks
 * whose messages cost L + bytes / B: the fit gives back 2(N-1)L and B N / (2(N-1)), and the
 * message cost it implies is L and B again, on 2, 3 and 4 ranks. */
START_TEST(plain_fit_recovers_the_message_cost) {
  const double L = 37e-6, B = 1.1e9;
  for (int n = 2; n <= 4; n++) {
    double x[4], y[4], steps = 2.0 * (n - 1);
    for (int i = 0; i < 4; i++) {
      x[i] = 1024.0 * pow(16, i);
      y[i] = steps * (L + x[i] / n / B);
    }
    AxLinearCost plain = ax_linear_fit(x, y, 4), send = ax_casync_send_from_plain(&plain, n);
    ck_assert_double_eq_tol(plain.latency_s, steps * L, steps * L * 1e-9);
    ck_assert_double_eq_tol(send.latency_s, L, L * 1e-9);
    ck_assert_double_eq_tol(send.bytes_per_s, B, B * 1e-9);
    AxCasyncCosts c = {.send = send, .plain = plain};
    ck_assert_double_eq_tol(ax_casync_t_orig(&c, n, 3e6, n), ax_linear_cost_at(&plain, 3e6),
                            1e-15);
  }
}
END_TEST

/* The hand-computed costs of the two tests below: T_orig measured on 2 ranks as 100 us + m / 1
 * GB/s, a codec of ratio 1/32 with encode 20 us + m / 4 GB/s and decode 5 us + m / 4 GB/s. */
static AxCasyncCosts hand_costs(void) {
  double x[4], y[4];
  for (int i = 0; i < 4; i++) x[i] = 1024.0 * pow(16, i), y[i] = 100e-6 + x[i] / 1e9;
  AxCasyncCosts c = {.plain = ax_linear_fit(x, y, 4), .enc = {20e-6, 4e9}, .dec = {5e-6, 4e9},
                     .ratio = 1.0 / 32};
  c.send = ax_casync_send_from_plain(&c.plain, 2);
  return c;
}

/* With T_orig the measured plain all-reduce a + m / b on 2 ranks (a message: a/2 + m / b) and
 * a codec of ratio r, encode Le + m / Be, decode Ld + m / Bd, the ring's best K is 2 and
 *   T_cpr(m) = a + 2 (Le + Ld) + m (r / b + 1 / Be + r / Bd),
 * so the decision flips at m* = 2 (Le + Ld) / (1/b - r/b - 1/Be - r/Bd): by hand, a = 100 us,
 * b = 1 GB/s, Le = 20 us, Ld = 5 us, Be = Bd = 4 GB/s, r = 1/32: m* = 50e-6 / 0.7109375e-9 =
 * 70329.67 bytes. */
START_TEST(decision_flips_where_t_cpr_crosses_measured_t_orig) {
  AxCasyncCosts c = hand_costs();
  const double crossing = 70329.67;
  AxCasyncChoice below = ax_casync_choose(&c, AX_CASYNC_RING, 2, 0.99 * crossing, 0);
  AxCasyncChoice above = ax_casync_choose(&c, AX_CASYNC_RING, 2, 1.01 * crossing, 0);
  ck_assert_int_eq(below.compress, 0);
  ck_assert_int_eq(above.compress, 1);
  ck_assert_int_eq(above.parts, 2);
  ck_assert_double_eq_tol(below.t_orig, 100e-6 + 0.99 * crossing / 1e9, 1e-12);
  double t_cpr = 150e-6 + 1.01 * crossing * (1.0 / 32 / 1e9 + 1 / 4e9 + 1.0 / 32 / 4e9);
  ck_assert_double_eq_tol(above.t_cpr, t_cpr, 1e-12);
}
END_TEST

/* CaSync's engine term: compressed all-reduces timed at the probe's sizes (1 KB x 16 up to 4
 * MB) that take the model's T_cpr(m, N) plus a known E0 + m / Eb give E back at those sizes,
 * for the ring and the PS on 2 and 4 ranks and a linear codec, and (a line between them)
 * between and beyond them; timings the model already over-predicts give no engine term. */
START_TEST(engine_fit_recovers_known_terms) {
  AxCasyncCosts c = {.send = {7e-6, 1.1e9}, .enc = {0.3e-6, 4e9}, .dec = {0.1e-6, 2e9},
                     .ratio = 1.0 / 32};
  const double E0 = 850e-6, Eb = 0.6e9;
  for (int linear = 0; linear <= 1; linear++)
    for (int n = 2; n <= 4; n += 2)
      for (int algo = AX_CASYNC_RING; algo <= AX_CASYNC_PS; algo++) {
        c.linear = linear;
        c.engine.n = 0;
        AxSizedTimes y = {.n = 4};
        for (int i = 0; i < 4; i++) {
          y.bytes[i] = 1024.0 * pow(16, i);
          y.seconds[i] = ax_casync_t_cpr(&c, (AxCasyncAlgo)algo, n, y.bytes[i], n) + E0 +
                         y.bytes[i] / Eb;
        }
        c.engine = ax_casync_engine_from(&c, (AxCasyncAlgo)algo, n, &y);
        for (double m = 1024; m <= 64e6; m *= 3) /* at, between and beyond the sizes */
          ck_assert_double_eq_tol(ax_casync_engine_at(&c, m), E0 + m / Eb, 1e-9);
        for (int i = 0; i < 4; i++) /* and T_cpr then meets the measurement */
          ck_assert_double_eq_tol(ax_casync_t_cpr(&c, (AxCasyncAlgo)algo, n, y.bytes[i], n),
                                  y.seconds[i], y.seconds[i] * 1e-9);
        c.engine.n = 0;
        for (int i = 0; i < 4; i++) /* faster than the model */
          y.seconds[i] = 0.5 * ax_casync_t_cpr(&c, (AxCasyncAlgo)algo, n, y.bytes[i], n);
        c.engine = ax_casync_engine_from(&c, (AxCasyncAlgo)algo, n, &y);
        for (double m = 512; m <= 64e6; m *= 3) ck_assert(ax_casync_engine_at(&c, m) == 0);
      }
}
END_TEST

/* The engine per size band, by hand: an excess of 0 at 1 KB, 300 us at 16 KB, 0 at 256 KB and
 * 4 MB (a per-call cost that only mid-sized parts show) prices a 64 KB part at 300 us x
 * (256 - 64) / (256 - 16) = 240 us, a 512-byte one at 0 and a 16 MB one at 0 (the last two
 * sizes' line extended). One line through the four points, the old fit, would have spread
 * the 300 us over every size. */
START_TEST(engine_interpolates_between_sizes) {
  AxCasyncCosts c = {.engine = {.n = 4, .bytes = {1024, 16384, 262144, 4194304},
                                .seconds = {0, 300e-6, 0, 0}}};
  ck_assert_double_eq_tol(ax_casync_engine_at(&c, 65536), 240e-6, 1e-15);
  ck_assert_double_eq_tol(ax_casync_engine_at(&c, 16384), 300e-6, 1e-15);
  ck_assert(ax_casync_engine_at(&c, 512) == 0);
  ck_assert(ax_casync_engine_at(&c, 16 << 20) == 0);
  c.engine.seconds[3] = 100e-6; /* rising at the end: the line goes on rising */
  ck_assert_double_eq_tol(ax_casync_engine_at(&c, 8388608.0 - 262144),
                          200e-6, 1e-12);
}
END_TEST

/* The engine term moves the decision by hand: with the costs of the test above (T_orig =
 * 100 us + m / 1 GB/s measured on 2 ranks; T_cpr = 150 us + m (r / b + 1 / Be + r / Bd)),
 * the crossing is m* = 50 us / 0.7109375e-9 = 70329.67 bytes; an engine of 50 us a call moves
 * it to m* = 100 us / 0.7109375e-9 = 140659.34 bytes, and one with a per-byte cost of 1 /
 * (2 GB/s) as well to 100 us / 0.2109375e-9 = 474074.07 bytes: parts between stay plain. */
START_TEST(engine_term_moves_the_decision_by_hand) {
  AxCasyncCosts c = hand_costs();
  ck_assert_int_eq(ax_casync_choose(&c, AX_CASYNC_RING, 2, 1.01 * 70329.67, 0).compress, 1);
  c.engine = (AxSizedTimes){.n = 4, .bytes = {1024, 16384, 262144, 4194304},
                            .seconds = {50e-6, 50e-6, 50e-6, 50e-6}};
  const double m1 = 140659.34;
  ck_assert_int_eq(ax_casync_choose(&c, AX_CASYNC_RING, 2, 1.01 * 70329.67, 0).compress, 0);
  ck_assert_int_eq(ax_casync_choose(&c, AX_CASYNC_RING, 2, 0.99 * m1, 0).compress, 0);
  AxCasyncChoice above = ax_casync_choose(&c, AX_CASYNC_RING, 2, 1.01 * m1, 0);
  ck_assert_int_eq(above.compress, 1);
  ck_assert_double_eq_tol(above.t_cpr,
                          200e-6 + 1.01 * m1 * (1.0 / 32 / 1e9 + 1 / 4e9 + 1.0 / 32 / 4e9),
                          1e-12);
  for (int i = 0; i < 4; i++) c.engine.seconds[i] = 50e-6 + c.engine.bytes[i] / 2e9;
  const double m2 = 474074.07;
  ck_assert_int_eq(ax_casync_choose(&c, AX_CASYNC_RING, 2, 0.99 * m2, 0).compress, 0);
  ck_assert_int_eq(ax_casync_choose(&c, AX_CASYNC_RING, 2, 1.01 * m2, 0).compress, 1);
}
END_TEST

/* Points a positive intercept cannot fit (the tiny size measured slow, the line through the
 * large ones below zero at 0): the latency is floored so that the line meets the smallest
 * size's time; a slope that comes out non-positive falls back to the largest size's rate. */
START_TEST(fit_keeps_a_positive_latency) {
  double x[] = {256, 4096, 65536, 1048576}, y[] = {1e-6, 0.5e-6, 8e-6, 131e-6};
  AxLinearCost f = ax_linear_fit(x, y, 4);
  ck_assert(f.latency_s > 0 && f.bytes_per_s > 0 && isfinite(f.bytes_per_s));
  ck_assert(ax_linear_cost_at(&f, 256) >= 1e-6 * (1 - 1e-12)); /* never below the tiny one */
  double flat_x[] = {256, 1048576}, flat_y[] = {2e-6, 1e-6};
  f = ax_linear_fit(flat_x, flat_y, 2);
  ck_assert_double_eq_tol(f.bytes_per_s, 1048576 / 1e-6, 1);
  ck_assert(f.latency_s > 0);
  ck_assert_double_eq_tol(ax_linear_cost_at(&f, 256), 2e-6, 1e-18);
}
END_TEST

/* A measured cost by hand: points of a per-call cost that jumps between 16 KB and 64 KB (a
 * sparse codec's threshold sample) on a line of 1 us + m / 1 GB/s. At the points the cost is
 * the point, between two it is the line through them, above the largest that point plus the
 * rate from the largest point at most a quarter its size (64 KB: 180 us over 192 KB, not the
 * line's 1 GB/s), below the smallest that point less the line's rate (floored at the smaller
 * of the line's latency and that point); no points: the line. */
START_TEST(cost_reads_between_measured_sizes) {
  AxLinearCost line = {1e-6, 1e9};
  AxSizedTimes at = {.n = 3, .bytes = {16384, 65536, 262144},
                     .seconds = {20e-6, 120e-6, 300e-6}};
  for (int i = 0; i < at.n; i++)
    ck_assert_double_eq_tol(ax_cost_at(&line, &at, at.bytes[i]), at.seconds[i], 1e-15);
  ck_assert_double_eq_tol(ax_cost_at(&line, &at, 32768), 20e-6 + 100e-6 / 3, 1e-15);
  ck_assert_double_eq_tol(ax_cost_at(&line, &at, 1 << 20),
                          300e-6 + (1048576.0 - 262144) * 180e-6 / (262144 - 65536), 1e-15);
  ck_assert_double_eq_tol(ax_cost_at(&line, &at, 8192), 20e-6 - 8192 / 1e9, 1e-15);
  ck_assert_double_eq_tol(ax_cost_at(&line, &at, 0), 20e-6 - 16384 / 1e9, 1e-15);
  AxLinearCost slow = {1e-6, 1e8}; /* the line's rate would go below its latency: floored */
  ck_assert_double_eq_tol(ax_cost_at(&slow, &at, 0), 1e-6, 1e-18);
  AxSizedTimes none = {0};
  ck_assert_double_eq_tol(ax_cost_at(&line, &none, 65536), 1e-6 + 65536 / 1e9, 1e-18);
}
END_TEST

/* Beyond the largest point, the top of the measured range's rate only where it is measured and
 * sane: one point, or none a quarter the largest's size or less: the line's rate; a top point
 * no slower than the one four times smaller (noise): the line's; a rise that would read bytes
 * beyond it cheaper than half the largest point's average: that half. */
START_TEST(cost_beyond_the_largest_point_falls_back_to_the_line) {
  AxLinearCost line = {1e-6, 1e9};
  AxSizedTimes one = {.n = 1, .bytes = {65536}, .seconds = {100e-6}};
  ck_assert_double_eq_tol(ax_cost_at(&line, &one, 131072), 100e-6 + 65536 / 1e9, 1e-15);
  AxSizedTimes close = {.n = 2, .bytes = {65536, 131072}, .seconds = {100e-6, 150e-6}};
  ck_assert_double_eq_tol(ax_cost_at(&line, &close, 262144), 150e-6 + 131072 / 1e9, 1e-15);
  AxSizedTimes flat = {.n = 2, .bytes = {65536, 262144}, .seconds = {200e-6, 150e-6}};
  ck_assert_double_eq_tol(ax_cost_at(&line, &flat, 524288), 150e-6 + 262144 / 1e9, 1e-15);
  AxSizedTimes shallow = {.n = 2, .bytes = {65536, 262144}, .seconds = {190e-6, 200e-6}};
  ck_assert_double_eq_tol(ax_cost_at(&line, &shallow, 524288),
                          200e-6 + 262144 * (200e-6 / 262144) / 2, 1e-15);
  ck_assert_double_eq_tol(ax_cost_at(&line, NULL, 65536), 1e-6 + 65536 / 1e9, 1e-18);
}
END_TEST

/* Points from measurements: sizes that do not grow (a sparse codec's encoded length, the same
 * at two raw sizes) merge into one point with the larger time; at most AX_SIZED_MAX kept. */
START_TEST(sized_times_merge_sizes_that_do_not_grow) {
  double b[] = {12, 12, 28, 92, 92, 332}, t[] = {1e-6, 3e-6, 4e-6, 6e-6, 5e-6, 9e-6};
  AxSizedTimes at = ax_sized_times(b, t, 6);
  ck_assert_int_eq(at.n, 4);
  double want_b[] = {12, 28, 92, 332}, want_t[] = {3e-6, 4e-6, 6e-6, 9e-6};
  for (int i = 0; i < 4; i++) {
    ck_assert(at.bytes[i] == want_b[i]);
    ck_assert(at.seconds[i] == want_t[i]);
  }
  double many_b[AX_SIZED_MAX + 3], many_t[AX_SIZED_MAX + 3];
  for (int i = 0; i < AX_SIZED_MAX + 3; i++) many_b[i] = 1024.0 * (i + 1), many_t[i] = 1e-6;
  ck_assert_int_eq(ax_sized_times(many_b, many_t, AX_SIZED_MAX + 3).n, AX_SIZED_MAX);
}
END_TEST

/* The plain all-reduce measured at the probe's sizes, off its fitted line (a 64 KB ring that
 * waited for woken ranks, a 1 MB one that took twice the line): T_orig(m, N) is the measurement
 * at those sizes and the line through each two between them, on 2 and 4 ranks; without points
 * it is the line (the message cost the line implies, 2(N-1) times). */
START_TEST(t_orig_is_the_measured_plain_all_reduce) {
  double b[AX_PROBE_SIZES], t[AX_PROBE_SIZES];
  AxLinearCost line = {30e-6, 3.5e9};
  for (int i = 0; i < AX_PROBE_SIZES; i++) {
    b[i] = 1024.0 * pow(4, i);
    t[i] = ax_linear_cost_at(&line, b[i]) * (i == 3 ? 4.0 : i == 5 ? 2.0 : 1.0);
  }
  for (int n = 2; n <= 4; n += 2) {
    AxCasyncCosts c = {.plain = line, .send = ax_casync_send_from_plain(&line, n),
                       .enc = {1e-6, 1e9}, .dec = {1e-6, 1e9}, .ratio = 0.1};
    ck_assert_double_eq_tol(ax_casync_t_orig(&c, n, 65536, n),
                            ax_linear_cost_at(&line, 65536), 1e-12);
    c.plain_at = ax_sized_times(b, t, AX_PROBE_SIZES);
    for (int i = 0; i < AX_PROBE_SIZES; i++)
      ck_assert_double_eq_tol(ax_casync_t_orig(&c, n, b[i], n), t[i], 1e-12);
    double mid = 0.5 * (b[3] + b[4]);
    ck_assert_double_eq_tol(ax_casync_t_orig(&c, n, mid, n), 0.5 * (t[3] + t[4]), 1e-12);
  }
}
END_TEST

/* A measured encode moves a decision the line would get wrong, by hand: on 2 ranks over a link
 * of 5 us + m / 1.25 GB/s a message (the plain ring T_orig(64 KB) = 2 (5 us + 32768 / 1.25e9)
 * = 62.43 us), a codec of ratio 1/100 whose line says encode 1 us + m / 5 GB/s and decode
 * 0.1 us + m / 5 GB/s: T_cpr(64 KB, K = 2) = 2 sends of 327.68 B, 2 encodes of 32 KB, 2 decodes
 * = 25.96 us: compressed. Measured, the encode of 32 KB takes 40 us (a threshold sample), not
 * the line's 7.55: T_cpr 90.86 us > T_orig: plain. */
START_TEST(measured_encode_moves_the_decision_by_hand) {
  AxCasyncCosts c = {.send = {5e-6, 1.25e9}, .enc = {1e-6, 5e9}, .dec = {0.1e-6, 5e9},
                     .ratio = 0.01};
  double m = 65536, part = m / 2, enc_line = 1e-6 + part / 5e9;
  double rest = 2 * (5e-6 + 0.01 * part / 1.25e9) + 2 * (0.1e-6 + 0.01 * part / 5e9);
  AxCasyncChoice line = ax_casync_choose(&c, AX_CASYNC_RING, 2, m, 0);
  ck_assert_double_eq_tol(line.t_orig, 2 * (5e-6 + part / 1.25e9), 1e-15);
  ck_assert_double_eq_tol(ax_casync_t_cpr(&c, AX_CASYNC_RING, 2, m, 2), rest + 2 * enc_line,
                          1e-15);
  ck_assert_int_eq(line.compress, 1);
  c.enc_at = (AxSizedTimes){.n = 3, .bytes = {16384, 32768, 65536},
                            .seconds = {4.3e-6, 40e-6, 60e-6}};
  ck_assert_double_eq_tol(ax_casync_t_cpr(&c, AX_CASYNC_RING, 2, m, 2), rest + 2 * 40e-6, 1e-15);
  AxCasyncChoice measured = ax_casync_choose(&c, AX_CASYNC_RING, 2, m, 0);
  ck_assert_int_eq(measured.compress, 0); /* K = 1 (one encode of 64 KB, 60 us) loses too */
  ck_assert(measured.t_cpr > measured.t_orig);
}
END_TEST

/* The K a part chose is what its CaSync state lays out: K partitions on N ranks (fewer than N
 * fill K segments, more cut each segment into its share), and a part without a K (the
 * threshold policy) takes the comm's pieces. */
START_TEST(parts_run_their_k) {
  AxCodec *onebit;
  ck_assert_int_eq(ax_codec_parse("onebit", &onebit), AX_OK);
  AxOffload o = {.n = 3000, .chunk = 3000, .n_chunks = 1};
  AxTensorRange t[] = {{0, 1000, 1000, "a", -1, 0}, {1000, 1000, 1000, "b", -1, 0},
                       {2000, 1000, 1000, "c", -1, 0}};
  AxGradPart parts[3];
  ck_assert_int_eq(ax_grad_parts_cut(&o, t, 3, parts, 3), 3);
  const int k[] = {1, 3, 7};
  for (int i = 0; i < 3; i++) {
    parts[i].codec = onebit;
    parts[i].choice = (AxCasyncChoice){.compress = 1, .parts = k[i], .cpr_parts = k[i]};
  }
  AxGradCompress gc;
  AxCommConfig cc = ax_comm_config_default();
  ck_assert_int_eq(ax_grad_compress_init(&gc, &o, parts, 3, AX_CASYNC_RING, 4, 1, &cc, NULL),
                   AX_OK);
  for (int i = 0; i < 3; i++)
    ck_assert_int_eq((int)ax_casync_state_partitions(gc.parts[i].state), k[i]);
  ax_grad_compress_free(&gc);
  /* no K (parts 0): the pieces of a 64-byte chunk, 16 floats each: 250 values a segment */
  for (int i = 0; i < 3; i++) parts[i].choice.parts = 0;
  cc.chunk_bytes = 64;
  ck_assert_int_eq(ax_grad_compress_init(&gc, &o, parts, 3, AX_CASYNC_RING, 4, 1, &cc, NULL),
                   AX_OK);
  for (int i = 0; i < 3; i++)
    ck_assert_int_eq((int)ax_casync_state_partitions(gc.parts[i].state), 4 * 16);
  ax_grad_compress_free(&gc);
  ax_codec_free(onebit);
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
  AxCasyncChoice ch = ax_compress_decide(onebit, &c, AX_CASYNC_RING, 2, 0, min, 1024);
  ck_assert_int_eq(ch.compress, 1);
  ck_assert_int_eq(ch.parts, 0); /* no K of the cost model: CaSync's own pieces */
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
  /* every call costs something: the latencies are positive, never clipped to 0 */
  ck_assert(isfinite(c.enc.bytes_per_s) && c.enc.bytes_per_s > 0 && c.enc.latency_s > 0);
  ck_assert(isfinite(c.dec.bytes_per_s) && c.dec.bytes_per_s > 0 && c.dec.latency_s > 0);
  ck_assert(c.ratio > 0 && c.ratio < 0.05); /* sign bits and a scale: about 1/32 */
  ck_assert(!c.linear);
  /* the points behind the lines: 64 values x 2 up to 4M (256 B to 16 MB raw), each positive;
   * the decode's at the encoded lengths, ascending */
  ck_assert_int_eq(c.enc_at.n, 17);
  for (int i = 0; i < c.enc_at.n; i++) {
    ck_assert(c.enc_at.bytes[i] == 256.0 * pow(2, i));
    ck_assert(c.enc_at.seconds[i] > 0 && isfinite(c.enc_at.seconds[i]));
  }
  ck_assert(c.dec_at.n >= 2 && c.dec_at.n <= 17);
  for (int i = 1; i < c.dec_at.n; i++) ck_assert(c.dec_at.bytes[i] > c.dec_at.bytes[i - 1]);
  AxCodec *power;
  ck_assert_int_eq(ax_codec_parse("powersgd:rank=2", &power), AX_OK);
  ck_assert_int_eq(ax_casync_profile_codec(power, 3, &c), AX_OK);
  ck_assert(c.linear && isfinite(c.enc.bytes_per_s) && c.enc.bytes_per_s > 0);
  ck_assert(c.enc.latency_s > 0);
  ck_assert(c.enc_at.n >= 2 && c.dec_at.n == 0); /* a linear codec decodes nothing */
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
  tcase_add_test(tc, coefficients_are_hipress_section_6);
  tcase_add_test(tc, equations_1_and_2_by_hand);
  tcase_add_test(tc, ps_on_two_ranks_by_hand);
  tcase_add_test(tc, ps_takes_fewer_partitions_for_small_parts);
  tcase_add_test(tc, slow_link_compresses_fast_link_does_not);
  tcase_add_test(tc, per_call_costs_keep_tiny_parts_plain);
  tcase_add_test(tc, the_choice_is_the_minimum_over_k);
  tcase_add_test(tc, fit_recovers_latency_and_bandwidth);
  tcase_add_test(tc, fit_keeps_a_positive_latency);
  tcase_add_test(tc, plain_fit_recovers_the_message_cost);
  tcase_add_test(tc, decision_flips_where_t_cpr_crosses_measured_t_orig);
  tcase_add_test(tc, engine_fit_recovers_known_terms);
  tcase_add_test(tc, engine_interpolates_between_sizes);
  tcase_add_test(tc, engine_term_moves_the_decision_by_hand);
  tcase_add_test(tc, cost_reads_between_measured_sizes);
  tcase_add_test(tc, cost_beyond_the_largest_point_falls_back_to_the_line);
  tcase_add_test(tc, sized_times_merge_sizes_that_do_not_grow);
  tcase_add_test(tc, t_orig_is_the_measured_plain_all_reduce);
  tcase_add_test(tc, measured_encode_moves_the_decision_by_hand);
  tcase_add_test(tc, parts_run_their_k);
  tcase_add_test(tc, threshold_policy_and_linear_codecs);
  tcase_add_test(tc, linear_codecs_pay_their_factors_once);
  tcase_add_test(tc, profiled_costs_are_usable);
  tcase_add_test(tc, state_file_round_trip_label_and_damage);
  return tu_run(s);
}
