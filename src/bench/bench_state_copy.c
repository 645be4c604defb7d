/* bench_state_copy.c — `axonn bench state-copy`: what an in-memory checkpoint of every step
 * costs one core, for one stage holding a whole model (docs/memory-checkpoints.md). It times,
 * on one thread, the pieces of two designs:
 *   today: AdamW in place, then the copy thread's work, the stage file CRC'd and written with
 *          streaming stores (ax_ckpt_fill_stage, the very call the copy thread makes), with
 *          the whole CRC or one part of it (D holders of identical copies each CRC a part);
 *   zero-copy: AdamW out of place, straight into the next slot (ax_adamw_range_to), then a
 *          CRC-32 of its output, whole or split among the D nodes holding identical copies;
 *          as built, the update also keeps the master weights in place (the model computes
 *          with them), adamw_zero_copy, which the zero-copy figures use.
 * It also times the CRC over as many bytes of one cached block, to show what a CRC folded
 * into the optimizer, over data still in cache, could save.
 * Each design's extra CPU per step over AdamW in place is derived from the medians, so it is
 * only as good as their noise. Destinations are pre-faulted memory, as the kept slot
 * mappings are after their first copy. One process, no MPI. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "offload/adamw.h"
#include "src/backend/peak.h"
#include "src/core/command.h"
#include "src/core/crc32.h"
#include "src/core/error.h"
#include "src/core/fileio.h"
#include "src/core/log.h"
#include "src/core/options.h"
#include "src/core/rng.h"
#include "src/core/timer.h"
#include "src/io/checkpoint.h"

typedef struct {
  int layers, hidden, heads, vocab, seq, repeat, holders;
  char *json;
} StateCopyConfig;

#define SOFF(f) offsetof(StateCopyConfig, f)
static const AxOption STATE_OPTS[] = {
    {"layers", AX_OPT_INT, SOFF(layers), "4", "N", "transformer blocks", 1, 1024, NULL},
    {"hidden", AX_OPT_INT, SOFF(hidden), "512", "N", "channels", 1, 65536, NULL},
    {"heads", AX_OPT_INT, SOFF(heads), "8", "N", "attention heads", 1, 1024, NULL},
    {"vocab", AX_OPT_INT, SOFF(vocab), "256", "N", "vocabulary", 1, 1 << 22, NULL},
    {"seq", AX_OPT_INT, SOFF(seq), "64", "N", "positions (rows of wpe)", 1, 1 << 20, NULL},
    {"repeat", AX_OPT_INT, SOFF(repeat), "9", "N", "runs per measurement (median)", 1, 1000,
     NULL},
    {"holders", AX_OPT_INT, SOFF(holders), "2", "D",
     "nodes holding identical copies of the stage, for the split CRC", 1, 1024, NULL},
    {"json", AX_OPT_STRING, SOFF(json), NULL, "FILE", "append one JSON line", 1, 0, NULL},
};
static const AxOptionTable STATE_TABLE = {
    "bench state-copy",
    "One core's cost of an in-memory checkpoint of every step: AdamW in place plus the copy "
    "thread's CRC and streaming copy, against AdamW writing out of place plus a CRC.",
    STATE_OPTS, (int)(sizeof STATE_OPTS / sizeof STATE_OPTS[0])};

enum { M_ADAMW, M_COPY, M_COPY_PART, M_ADAMW_TO, M_ADAMW_ZC, M_CRC, M_CRC_CACHED, N_MODES };
static const char *const MODE_NAMES[N_MODES] = {
    "adamw_in_place",     "checkpoint_copy", "checkpoint_copy_part", "adamw_out_of_place",
    "adamw_zero_copy",    "crc",             "crc_cached"};
enum { CACHED_BLOCK = 256 << 10 }; /* crc_cached: as many bytes, one block that stays cached */

typedef struct {
  AxGptConfig model;
  AxStageLayout lay;
  size_t n, file_bytes;
  float *state[2]; /* master, m, v of n each, twice: the out-of-place update alternates */
  float *grads;
  unsigned char *file;
  AxAdamWHyper h;
} Bench;

/* Uniform in [-scale/2, scale/2), or [0, scale/2) when positive (Adam's v). */
static void fill(float *x, size_t n, float scale, int positive, uint64_t seed) {
  AxRng rng;
  ax_rng_seed(&rng, seed);
  for (size_t i = 0; i < n; i++) {
    float r = scale * (ax_rng_float(&rng) - 0.5f);
    x[i] = positive && r < 0 ? -r : r;
  }
}

static int setup(Bench *b, const StateCopyConfig *c) {
  b->model = (AxGptConfig){.max_seq = c->seq, .vocab = c->vocab,
                           .padded_vocab = ax_gpt_pad_vocab(c->vocab), .layers = c->layers,
                           .heads = c->heads, .channels = c->hidden};
  AX_TRY(ax_gpt_config_check(&b->model));
  ax_stage_layout(&b->lay, &b->model, 0, c->layers, 1, 1);
  b->n = b->lay.total;
  AX_TRY(ax_ckpt_stage_bytes(&b->model, &b->lay, 0, 1, &b->file_bytes));
  for (int k = 0; k < 2; k++) {
    b->state[k] = ax_malloc(3 * b->n * sizeof(float));
    if (!b->state[k]) return AX_ERR;
    fill(b->state[k], 2 * b->n, 0.1f, 0, 7 + (uint64_t)k);
    fill(b->state[k] + 2 * b->n, b->n, 1e-4f, 1, 9 + (uint64_t)k);
  }
  b->grads = ax_malloc(b->n * sizeof(float));
  b->file = ax_malloc(b->file_bytes);
  if (!b->grads || !b->file) return AX_ERR;
  fill(b->grads, b->n, 1e-2f, 0, 11);
  memset(b->file, 0, b->file_bytes); /* pre-faulted, as a kept slot mapping */
  b->h = (AxAdamWHyper){.lr = 1e-4f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f,
                        .weight_decay = 0.1f, .step = 3, .grad_scale = 1.0f};
  return AX_OK;
}

static void teardown(Bench *b) {
  free(b->state[0]);
  free(b->state[1]);
  free(b->grads);
  free(b->file);
}

/* One run of a mode; rep alternates the out-of-place update's direction. */
static int run_mode(Bench *b, int mode, int rep, int holders, uint32_t *sink) {
  float *a = b->state[rep % 2], *z = b->state[1 - rep % 2];
  size_t n = b->n;
  switch (mode) {
  case M_ADAMW: ax_adamw_range(a, b->grads, a + n, a + 2 * n, n, &b->h, 1); return AX_OK;
  case M_ADAMW_TO:
    ax_adamw_range_to(z, z + n, z + 2 * n, NULL, a, b->grads, a + n, a + 2 * n, n, &b->h, 1);
    return AX_OK;
  case M_ADAMW_ZC: /* the weights kept in place as well */
    ax_adamw_range_to(z, z + n, z + 2 * n, a, a, b->grads, a + n, a + 2 * n, n, &b->h, 1);
    return AX_OK;
  case M_CRC: *sink ^= ax_crc32(0, a, 3 * n * sizeof(float)); return AX_OK;
  case M_CRC_CACHED: {
    uint32_t crc = 0;
    for (size_t left = 3 * n * sizeof(float); left > 0;) {
      size_t len = left < CACHED_BLOCK ? left : CACHED_BLOCK;
      crc = ax_crc32(crc, a, len);
      left -= len;
    }
    *sink ^= crc;
    return AX_OK;
  }
  default: { /* the copy thread's work: part 0 of 1 (the whole CRC) or of the holders */
    AxCkptFile info;
    AX_TRY(ax_ckpt_fill_stage(b->file, b->file_bytes, 0, &b->model, &b->lay, 1, a, a + n,
                              a + 2 * n, 0, mode == M_COPY_PART ? holders : 1, &info));
    *sink ^= info.crc;
    return AX_OK;
  }
  }
}

static int time_mode(Bench *b, int mode, const StateCopyConfig *c, double *ms) {
  int repeat = c->repeat;
  double *t = ax_malloc((size_t)repeat * sizeof *t);
  if (!t) return AX_ERR;
  uint32_t sink = 0;
  int rc = run_mode(b, mode, 0, c->holders, &sink); /* untimed: first touch */
  for (int r = 0; r < repeat && rc == AX_OK; r++) {
    double t0 = ax_now();
    rc = run_mode(b, mode, r + 1, c->holders, &sink);
    t[r] = (ax_now() - t0) * 1e3;
  }
  if (rc == AX_OK) *ms = ax_median(t, repeat);
  free(t);
  return rc;
}

static int write_json(const StateCopyConfig *c, const Bench *b, const double ms[N_MODES],
                      double today, double today_split, double zero_crc, double zero_split) {
  char line[1024];
  int n = snprintf(line, sizeof line,
                   "{\"bench\":\"state_copy\",\"params\":%zu,\"file_bytes\":%zu,\"holders\":%d",
                   b->n, b->file_bytes, c->holders);
  for (int m = 0; m < N_MODES; m++)
    n += snprintf(line + n, sizeof line - (size_t)n, ",\"%s_ms\":%.3f", MODE_NAMES[m], ms[m]);
  n += snprintf(line + n, sizeof line - (size_t)n,
                ",\"extra_today_ms\":%.3f,\"extra_today_split_crc_ms\":%.3f,"
                "\"extra_zero_copy_crc_ms\":%.3f,\"extra_zero_copy_split_crc_ms\":%.3f}\n",
                today, today_split, zero_crc, zero_split);
  return ax_file_append(c->json, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

static int run(void *cfg, const AxOptState *st) {
  (void)st;
  const StateCopyConfig *c = cfg;
  Bench b = {0};
  int rc = setup(&b, c);
  double ms[N_MODES] = {0};
  for (int m = 0; m < N_MODES && rc == AX_OK; m++) rc = time_mode(&b, m, c, &ms[m]);
  if (rc == AX_OK) {
    double extra_oop = ms[M_ADAMW_ZC] - ms[M_ADAMW];
    double today = ms[M_COPY], today_split = ms[M_COPY_PART], zero_crc = extra_oop + ms[M_CRC];
    double zero_split = extra_oop + ms[M_CRC] / c->holders;
    ax_log("state of %zu parameters (%.1f MB of master weights and Adam moments; stage file "
           "%.1f MB), one thread, medians of %d", b.n, 12e-6 * (double)b.n,
           1e-6 * (double)b.file_bytes, c->repeat);
    for (int m = 0; m < N_MODES; m++)
      ax_log_result("%-20s %8.2f ms  %6.1f GB/s of state", MODE_NAMES[m], ms[m],
                    12e-6 * (double)b.n / ms[m]);
    ax_log_result("extra CPU a step over AdamW in place: today (copy thread) %.2f ms, with the "
                  "CRC split over %d holders %.2f ms; zero-copy with a CRC %.2f ms, with the "
                  "CRC split %.2f ms", today, c->holders, today_split, zero_crc, zero_split);
    if (c->json) rc = write_json(c, &b, ms, today, today_split, zero_crc, zero_split);
  }
  teardown(&b);
  return rc;
}

int ax_cmd_bench_state_copy(int argc, char **argv) {
  static const AxCommandSpec spec = {&STATE_TABLE, sizeof(StateCopyConfig), 0, run};
  return ax_command_run(&spec, argc, argv);
}
