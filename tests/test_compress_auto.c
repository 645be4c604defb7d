/* test_compress_auto.c — `--compress auto` (src/plan/compress_auto.h) on the tensors of a
 * 12-layer GPT stage: the groups tile the tensors in order; fusion none keeps every tensor
 * alone; a tied wte summed apart stays alone and plain; every decision is one the trainer
 * runs (plain with its all-reduce, the codec under CaSync ring, PS, all-to-all + all-gather or
 * all-gather, flat); the strategy is never worse than compressing nothing under the
 * model; a slow link compresses, a fast one and a single rank do not; the two-level sums only
 * where offered (never the model-only 2l+intra ones); the parts an
 * optimizer's chunks cut take their group's decision and CaSync algorithm; and on a
 * tensor-parallel rank's shards a tensor its grid replicates (wpe) is fused with no other. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/gpt_stage.h"
#include "models/tp_shard.h"
#include "mpi/compress/codec.h"
#include "src/core/error.h"
#include "src/plan/compress_auto.h"
#include "src/train/train_compress.h"
#include "src/train/trainer.h"
#include "testutil.h"

enum { MAX_TENSORS = 256 };

typedef struct {
  AxTensorRange t[MAX_TENSORS];
  int n;
  AxCodec *codec;
} Stage;

/* The stage as rank 0 of a Gx x Gy x Gz tensor-parallel grid holds it (1 x 1 x 1: whole). */
static void gpt_stage_tp(Stage *s, int gx, int gy, int gz) {
  AxGptConfig m = {.max_seq = 1024, .vocab = 50257, .padded_vocab = 50304, .layers = 12,
                   .heads = 12, .channels = 768};
  AxTpComm tp = {.size = {gx, gy, gz}};
  AxStageLayout lay;
  ax_tp_stage_layout(&lay, &m, 0, m.layers, 1, 1, &tp);
  s->n = ax_trainer_tensor_ranges(&lay, s->t, MAX_TENSORS);
  ck_assert_int_le(s->n, MAX_TENSORS);
  ck_assert_int_eq(ax_codec_parse("onebit:ef=1", &s->codec), AX_OK);
}

static void gpt_stage(Stage *s) { gpt_stage_tp(s, 1, 1, 1); }

/* Onebit-like CPU codec costs on a link of `gbps` between nodes, one rank per node. */
static AxAutoCompressInput input(double gbps, int ranks, const char *fusion) {
  AxAutoCompressInput in = {
      .costs = {.send = {5e-6, gbps * 1e9 / 8}, .enc = {2e-6, 2e9}, .dec = {2e-6, 1e9}},
      .intra = {1e-6, 10e9}, .ranks = ranks, .ranks_per_node = 1,
      .plain = AX_ALLREDUCE_RING};
  ck_assert_int_eq(ax_fusion_parse(fusion, &in.fusion), AX_OK);
  return in;
}

static int runnable(int option) {
  const char *name = ax_espresso_option(option)->name;
  return !strcmp(name, "plain/flat/ar-ring") || !strncmp(name + 3, "/flat/", 6);
}

/* The groups tile t[n] in order; every decision runnable; never worse than nothing. */
static void check_plan(const Stage *s, const AxAutoCompress *a) {
  int members = 0;
  size_t at = s->t[0].offset;
  for (int g = 0; g < a->n_groups; g++) {
    ck_assert_uint_eq(a->groups[g].offset, at);
    const AxTensorRange *last = &s->t[members + a->members[g] - 1];
    ck_assert_uint_eq(a->groups[g].offset + a->groups[g].count, last->offset + last->count);
    at = last->offset + last->count;
    members += a->members[g];
    ck_assert_msg(runnable(a->decision[g].option), "group %d: %s", g,
                  ax_espresso_option(a->decision[g].option)->name);
  }
  ck_assert_int_eq(members, s->n);
  ck_assert(a->espresso.iteration_s <= a->espresso.nothing_s * (1 + 1e-12));
}

START_TEST(slow_link_fuses_and_compresses) {
  Stage s;
  gpt_stage(&s);
  AxAutoCompressInput in = input(1, 4, "auto");
  AxAutoCompress a;
  ck_assert_int_eq(ax_compress_auto_plan(s.t, s.n, s.codec, &in, &a), AX_OK);
  check_plan(&s, &a);
  ax_compress_auto_print(&a, "", 5);
  ck_assert_int_lt(a.n_groups, s.n);
  ck_assert_int_gt(a.espresso.compressed, 0);
  ck_assert(a.espresso.iteration_s < a.espresso.nothing_s);
  ck_assert(a.fusion.optimal);
  printf("compress_auto: %d tensors -> %d groups, %d compressed; sync %.2f ms vs nothing "
         "%.2f ms; fusion %.3f s, Espresso %.3f s\n", s.n, a.n_groups, a.espresso.compressed,
         a.espresso.iteration_s * 1e3, a.espresso.nothing_s * 1e3, a.fusion_s, a.decide_s);
  ax_compress_auto_free(&a);
  ax_codec_free(s.codec);
}
END_TEST

/* The backward's timeline (--dp-sync-early): block l's tensors ready when its backward ends
 * (the last block first, `gap` apart), the others at the end. With gaps the link drains between
 * blocks: the sum is Espresso's timeline with bubbles, Remove() rules the tensors before the
 * last one out, and the plan is not the all-at-once plan; the predicted sync counts from the
 * backward's end. */
static void timeline(const Stage *s, double gap, double *ready, double *backward) {
  *backward = 13 * gap;
  for (int i = 0; i < s->n; i++)
    ready[i] = s->t[i].layer >= 0 ? (12 - s->t[i].layer) * gap : *backward;
}

START_TEST(backward_timeline_brings_bubbles) {
  Stage s;
  gpt_stage(&s);
  double ready[MAX_TENSORS];
  AxAutoCompressInput in = input(10, 4, "none");
  AxAutoCompress at_once, spread;
  ck_assert_int_eq(ax_compress_auto_plan(s.t, s.n, s.codec, &in, &at_once), AX_OK);
  timeline(&s, 0.5, ready, &in.backward_s);
  in.ready_s = ready;
  ck_assert_int_eq(ax_compress_auto_plan(s.t, s.n, s.codec, &in, &spread), AX_OK);
  check_plan(&s, &spread);
  ck_assert_int_eq(at_once.espresso.removed, 0);
  ck_assert_int_gt(spread.espresso.removed, 0);
  ck_assert_int_lt(spread.espresso.compressed, at_once.espresso.compressed);
  ck_assert(spread.backward_s == in.backward_s && at_once.backward_s == 0);
  for (int g = 0; g < spread.n_groups; g++) /* every group ready no later than the end */
    ck_assert(spread.ready_s[g] <= in.backward_s);
  ck_assert(spread.sync_s < spread.espresso.iteration_s);
  printf("compress_auto timeline: all at once %d compressed, sync %.2f ms; with the backward's "
         "timeline (%.1f s) %d compressed, %d removed, sync after it %.2f ms\n",
         at_once.espresso.compressed, at_once.sync_s * 1e3, in.backward_s,
         spread.espresso.compressed, spread.espresso.removed, spread.sync_s * 1e3);
  ax_compress_auto_free(&at_once);
  ax_compress_auto_free(&spread);
  ax_codec_free(s.codec);
}
END_TEST

/* A link faster than the codec: 8 Tb/s moves the whole stage (0.5 GB, 1.5x on the ring) in
 * less time than the CPU takes to encode its largest matrix, so even the all-gather, whose codec
 * work overlaps other tensors' plain sends, gains nothing. (At 800 Gb/s it does: the model
 * compresses a few matrices with the all-gather, their encoding hidden behind the rest's
 * 7.5 ms of plain traffic.) */
START_TEST(fast_link_or_one_rank_compresses_nothing) {
  Stage s;
  gpt_stage(&s);
  const int ranks[2] = {4, 1};
  const double gbps[2] = {8000, 1};
  for (int c = 0; c < 2; c++) {
    AxAutoCompressInput in = input(gbps[c], ranks[c], "none");
    AxAutoCompress a;
    ck_assert_int_eq(ax_compress_auto_plan(s.t, s.n, s.codec, &in, &a), AX_OK);
    check_plan(&s, &a);
    ck_assert_int_eq(a.n_groups, s.n); /* --fusion none: every tensor alone */
    ck_assert_int_eq(a.espresso.compressed, 0);
    ax_compress_auto_free(&a);
  }
  ax_codec_free(s.codec);
}
END_TEST

/* The tied wte summed apart: alone and plain, whatever the link; the rest still compressed. */
START_TEST(tied_embedding_stays_alone_and_plain) {
  Stage s;
  gpt_stage(&s);
  AxAutoCompressInput in = input(1, 4, "auto");
  in.plain_first = 1;
  AxAutoCompress a;
  ck_assert_int_eq(ax_compress_auto_plan(s.t, s.n, s.codec, &in, &a), AX_OK);
  check_plan(&s, &a);
  ck_assert_str_eq(a.groups[0].name, "wte");
  ck_assert_int_eq(a.members[0], 1);
  ck_assert_str_eq(ax_espresso_option(a.decision[0].option)->name, "plain/flat/ar-ring");
  ck_assert_int_gt(a.espresso.compressed, 0);
  /* summed before the gradient sum (the embedding sync): the same plan, and the predicted
   * sync is that of the stage without it */
  AxAutoCompress pre, rest;
  in.first_presummed = 1;
  ck_assert_int_eq(ax_compress_auto_plan(s.t, s.n, s.codec, &in, &pre), AX_OK);
  AxAutoCompressInput others = in;
  others.plain_first = others.first_presummed = 0;
  ck_assert_int_eq(ax_compress_auto_plan(s.t + 1, s.n - 1, s.codec, &others, &rest), AX_OK);
  ck_assert_int_eq(pre.n_groups, a.n_groups);
  ck_assert_int_eq(rest.n_groups, a.n_groups - 1);
  for (int g = 1; g < a.n_groups; g++)
    ck_assert_int_eq(rest.decision[g - 1].option, pre.decision[g].option);
  ck_assert(pre.sync_s < a.sync_s);
  ck_assert_double_eq_tol(pre.sync_s, rest.sync_s, 1e-12);
  ax_compress_auto_free(&pre);
  ax_compress_auto_free(&rest);
  ax_compress_auto_free(&a);
  ax_codec_free(s.codec);
}
END_TEST

/* Tensor parallelism 2 x 1 x 1: every rank of the X group holds wpe whole, and it must take the
 * same update on each; fused with wte's or LayerNorm's shards (other values on every rank), a
 * codec's scale would differ. wpe is a group of its own, compressed or not; the matrices
 * around it still fuse. */
START_TEST(replicated_tensor_is_fused_with_no_other) {
  Stage s;
  gpt_stage_tp(&s, 2, 1, 1);
  int q = 0;
  while (q < s.n && strcmp(s.t[q].name, "qkvw")) q++;
  ck_assert_str_eq(s.t[1].name, "wpe");
  ck_assert(s.t[1].replicated && !s.t[0].replicated && !s.t[q].replicated); /* wte, qkvw */
  ck_assert(s.t[2].replicated);            /* ln1w: a vector, kept plain anyway */
  ck_assert_uint_eq(s.t[1].cols, 768);     /* split over Y only: whole rows */
  ck_assert_uint_eq(s.t[q].cols, 768);     /* its heads' rows of q, k and v, whole */
  ck_assert_uint_eq(s.t[q].count, 3 * 768 / 2 * 768);
  AxAutoCompressInput in = input(1, 4, "auto");
  AxAutoCompress a;
  ck_assert_int_eq(ax_compress_auto_plan(s.t, s.n, s.codec, &in, &a), AX_OK);
  check_plan(&s, &a);
  int found = 0;
  for (int g = 0; g < a.n_groups; g++) {
    int has_wpe = a.groups[g].offset <= s.t[1].offset &&
                  s.t[1].offset < a.groups[g].offset + a.groups[g].count;
    if (!has_wpe) continue;
    found = 1;
    ck_assert_int_eq(a.members[g], 1);
    ck_assert(a.groups[g].replicated);
  }
  ck_assert(found);
  ck_assert_int_lt(a.n_groups, s.n); /* the rest still fuse */
  ck_assert_int_gt(a.espresso.compressed, 0);
  ax_compress_auto_free(&a);
  ax_codec_free(s.codec);
}
END_TEST

/* One rank, as the trainer hands it over: nothing profiled (every cost zero), nothing sent:
 * every tensor alone and plain, with no search run on the zero costs. */
START_TEST(one_rank_without_costs_keeps_everything_plain) {
  Stage s;
  gpt_stage(&s);
  AxAutoCompressInput in = {.ranks = 1, .ranks_per_node = 1, .plain = AX_ALLREDUCE_AUTO};
  ck_assert_int_eq(ax_fusion_parse("auto", &in.fusion), AX_OK);
  AxAutoCompress a;
  ck_assert_int_eq(ax_compress_auto_plan(s.t, s.n, s.codec, &in, &a), AX_OK);
  check_plan(&s, &a);
  ck_assert_int_eq(a.n_groups, s.n);
  for (int g = 0; g < a.n_groups; g++) ck_assert(a.alone[g]);
  ck_assert_int_eq(a.espresso.compressed, 0);
  ax_compress_auto_free(&a);
  ax_codec_free(s.codec);
}
END_TEST

/* Two nodes of two ranks, a fast link inside a node and a slow one between: with the
 * two-level sums on offer (two_level), the plain two-level all-reduce (less over the slow link)
 * is taken, and no decision is a 2l+intra one (model only); without them, nothing is
 * two-level. The identity codec (ratio 1) keeps the choice among the plain options. */
START_TEST(two_level_options_only_where_offered) {
  Stage s;
  gpt_stage(&s);
  ax_codec_free(s.codec);
  ck_assert_int_eq(ax_codec_parse("identity", &s.codec), AX_OK);
  for (int offered = 0; offered < 2; offered++) {
    AxAutoCompressInput in = input(1, 4, "none");
    in.ranks_per_node = 2;
    in.two_level = offered;
    AxAutoCompress a;
    ck_assert_int_eq(ax_compress_auto_plan(s.t, s.n, s.codec, &in, &a), AX_OK);
    int two_level = 0, plain_2l = 0;
    for (int g = 0; g < a.n_groups; g++) {
      const AxEspressoOption *o = ax_espresso_option(a.decision[g].option);
      ck_assert_int_ne(o->levels, AX_ESP_TWO_LEVEL_INTRA);
      two_level += o->levels == AX_ESP_TWO_LEVEL;
      plain_2l += !strcmp(o->name, "plain/2l/ar-ring");
    }
    if (offered)
      ck_assert_int_gt(plain_2l, 0);
    else
      ck_assert_int_eq(two_level, 0);
    printf("compress_auto: two nodes of 2, two-level %s: %d of %d group(s) two-level (%d plain)\n",
           offered ? "offered" : "not offered", two_level, a.n_groups, plain_2l);
    ax_compress_auto_free(&a);
  }
  ax_codec_free(s.codec);
}
END_TEST

/* The rhd all-reduce, when it is the trainer's, is the plain option. */
START_TEST(plain_option_follows_the_allreduce) {
  Stage s;
  gpt_stage(&s);
  AxAutoCompressInput in = input(8000, 4, "none");
  in.plain = AX_ALLREDUCE_RHD;
  AxAutoCompress a;
  ck_assert_int_eq(ax_compress_auto_plan(s.t, s.n, s.codec, &in, &a), AX_OK);
  for (int g = 0; g < a.n_groups; g++)
    ck_assert_str_eq(ax_espresso_option(a.decision[g].option)->name, "plain/flat/ar-rhd");
  ax_compress_auto_free(&a);
  ax_codec_free(s.codec);
}
END_TEST

/* Chunks of 1M elements cut the groups into parts: each takes its group's decision. */
START_TEST(parts_take_their_groups_decision) {
  Stage s;
  gpt_stage(&s);
  AxAutoCompressInput in = input(1, 4, "4M");
  AxAutoCompress a;
  ck_assert_int_eq(ax_compress_auto_plan(s.t, s.n, s.codec, &in, &a), AX_OK);
  size_t total = s.t[s.n - 1].offset + s.t[s.n - 1].count, chunk = 1 << 20;
  AxOffload o = {.n = total, .chunk = chunk, .n_chunks = (int)((total + chunk - 1) / chunk)};
  int n = ax_grad_parts_cut(&o, a.groups, a.n_groups, NULL, 0);
  AxGradPart *parts = calloc((size_t)n, sizeof *parts);
  ck_assert_ptr_nonnull(parts);
  ax_grad_parts_cut(&o, a.groups, a.n_groups, parts, n);
  ax_compress_auto_apply(&a, 4, parts, n);
  int ps = 0, ring = 0, a2a = 0, ag = 0;
  for (int i = 0, g = 0; i < n; i++) {
    while (a.groups[g].offset + a.groups[g].count <= parts[i].lo) g++;
    const AxEspressoOption *opt = ax_espresso_option(a.decision[g].option);
    ck_assert_int_eq(parts[i].choice.compress, opt->place != AX_ESP_PLAIN);
    ck_assert_int_eq(parts[i].choice.parts, 0); /* no SeCoPa K: CaSync's pieces, or whole
                                                   segments (whole_segments) */
    if (parts[i].choice.compress) {
      AxEspressoScheme sc = opt->scheme;
      int want = sc == AX_ESP_CASYNC_PS || sc == AX_ESP_A2A_AG ? AX_CASYNC_PS
                 : sc == AX_ESP_AG                             ? AX_CASYNC_AG
                                                               : AX_CASYNC_RING;
      ck_assert_int_eq(parts[i].choice.algo, want);
      ck_assert_int_eq(parts[i].choice.whole_segments, sc == AX_ESP_A2A_AG);
      ring += sc == AX_ESP_CASYNC_RING, ps += sc == AX_ESP_CASYNC_PS;
      a2a += sc == AX_ESP_A2A_AG, ag += sc == AX_ESP_AG;
    }
  }
  ck_assert_int_gt(ps + ring + a2a + ag, 0);
  printf("compress_auto: %d part(s) from %d group(s) of at most 4 MB: %d CaSync ring, %d PS, "
         "%d all-to-all + all-gather, %d all-gather\n", n, a.n_groups, ring, ps, a2a, ag);
  free(parts);
  ax_compress_auto_free(&a);
  ax_codec_free(s.codec);
}
END_TEST

int main(void) {
  Suite *s = suite_create("compress_auto");
  TCase *tc = tu_tcase(s, "compress_auto", 120);
  tcase_add_test(tc, slow_link_fuses_and_compresses);
  tcase_add_test(tc, fast_link_or_one_rank_compresses_nothing);
  tcase_add_test(tc, tied_embedding_stays_alone_and_plain);
  tcase_add_test(tc, one_rank_without_costs_keeps_everything_plain);
  tcase_add_test(tc, plain_option_follows_the_allreduce);
  tcase_add_test(tc, two_level_options_only_where_offered);
  tcase_add_test(tc, parts_take_their_groups_decision);
  tcase_add_test(tc, replicated_tensor_is_fused_with_no_other);
  tcase_add_test(tc, backward_timeline_brings_bubbles);
  int rc = tu_run(s);
  tu_cleanup();
  return rc;
}
