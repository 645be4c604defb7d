/* mpitest_scheduler.c — the message-driven pipeline scheduler (pipeline/scheduler.h) on its own,
 * with P = the number of ranks as stages and a mock stage instead of a model. The mock's
 * forward and backward record what they were called with, sleep a seeded random 0-0.5 ms, and
 * produce messages whose every word encodes (run, sending stage, micro-batch, direction), so
 * the receiving stage verifies it got the right one, intact. For many seeds, micro-batch counts
 * 1..9 and pipeline limits 1..n_micro, training passes (ax_sched_train) interleaved with
 * forward-only passes (ax_sched_forward, as validation does) on one scheduler, it checks:
 *   - every micro-batch's forward (and, in training, backward) runs exactly once on every stage,
 *     forwards in micro-batch order, a backward only after its forward;
 *   - stage 0 never has more than `limit` micro-batches in flight, and has exactly
 *     min(limit, n_micro) at its peak (it injects that many before it receives anything; one
 *     process alone runs them one after another);
 *   - stash slots stay below ax_sched_slots, and no two micro-batches in flight share one;
 *   - the last stage runs a micro-batch's backward right after its forward;
 *   - the messages arrive intact (checked after the pass, through the stage's own copies);
 *   - a stray message (a duplicate, a micro-batch outside the pass) fails the pass with a
 *     message saying so, and is never computed;
 *   - every run terminates: the watchdog (tests/mpitestutil.h) ends the job when one takes
 *     longer than RUN_TIMEOUT_S, saying what each rank was waiting for.
 * The stage's memory is the CPU backend's, or the CPU backend posing as a separate device
 * (tests/posing_device.h: every copy's kind is checked against where its pointers live, and
 * device-to-device copies run late, as on a GPU), with the p2p engine's buffers in host memory
 * or, as with CUDA-aware MPI, in device memory; the stage is told which, and checked. */
#include <check.h>
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/mpi_util.h"
#include "mpitestutil.h"
#include "pipeline/scheduler.h"
#include "posing_device.h"
#include "src/core/error.h"
#include "src/core/rng.h"
#include "testutil.h"

enum {
  MAX_MICRO = 9,
  MAX_CALLS = 2 * MAX_MICRO,
  WORDS_SMALL = 61,     /* 244-byte messages: sent eagerly */
  WORDS_LARGE = 16411,  /* 64 KiB + 44 bytes: MPI's rendezvous protocol */
  SEEDS = 6,            /* training runs: SEEDS x 45 (n_micro, limit) pairs */
  RUN_TIMEOUT_S = 60,
  NAP_MAX_US = 500, /* far above a message's time between ranks (microseconds) */
  CB_COLS = 16, CB_ROWS = 32, CB_RANK = 2, /* compressed backpropagation: rank-2 gradients */
};
enum { FWD = 0, BWD = 1 }; /* a message's direction: activation, gradient */

static MPI_Comm g_pipe;   /* the pipeline: rank = stage */
static AxCommConfig g_cc; /* polite waiting when the ranks oversubscribe the cores */

typedef struct {
  int forward, mb, slot;
} Call;

/* The stage's backend, and where the p2p engine keeps its buffers (mpi/link/p2p.h). */
typedef enum { MEM_HOST_BACKEND = 0, MEM_POSING_STAGED, MEM_POSING_DEVICE, N_MODES } Mode;
static const char *const MODE_NAMES[] = {"CPU backend, host-staged", "posing device, host-staged",
                                         "posing device, device buffers"};

typedef struct {
  AxBackend *be;
  Mode mode;
  int stage, P, limit, n_micro, train, run;
  uint64_t seed;
  size_t words;
  uint32_t *host;            /* host scratch, one message */
  void *out_dev, *din_dev;   /* the stage's outputs (device) */
  void *pattern[MAX_MICRO][2]; /* what the stage outputs, per micro-batch and direction (device) */
  void *stash[MAX_MICRO][2]; /* device copies of what arrived, verified after the pass */
  int stashed[MAX_MICRO][2];
  Call calls[MAX_CALLS];
  int n_calls;
  int fwd[MAX_MICRO], bwd[MAX_MICRO];
  int slot_of[MAX_MICRO], holder[MAX_MICRO]; /* holder[slot]: 1 + micro-batch, 0 when free */
  int in_flight, max_in_flight;
  AxBackprop *bp;            /* compressed backpropagation (rank-2 float gradients), or NULL */
} Mock;

static const char *run_name(const Mock *m) {
  static char buf[200];
  snprintf(buf, sizeof buf, "%s pass, seed %llu, n_micro %d, limit %d, %zu-byte messages, %s%s",
           m->train ? "training" : "forward-only", (unsigned long long)m->seed, m->n_micro,
           m->limit, m->words * 4, MODE_NAMES[m->mode],
           !m->bp ? "" : m->bp->epilogue_only ? ", epilogue gradients compressed"
                                              : ", every gradient compressed");
  return buf;
}

/* Whether the gradient of mb into stage `to` travels compressed (the documented rule). */
static int compressed_into(const Mock *m, int to, int mb) {
  return m->bp && ax_backprop_compressed(to + 1, m->P, mb, m->n_micro, m->bp->epilogue_only);
}

/* Word i of the message `from` sends for (run, micro-batch, direction). */
static uint32_t word(int run, int dir, int from, int mb, size_t i) {
  uint64_t x = ((uint64_t)run << 40) ^ ((uint64_t)dir << 36) ^ ((uint64_t)from << 28) ^
               ((uint64_t)mb << 20) ^ i;
  x = (x ^ (x >> 31)) * 0x7fb5d329728ea185ULL;
  x = (x ^ (x >> 27)) * 0x81dadef4bc2dd44dULL;
  return (uint32_t)(x ^ (x >> 33));
}

/* A seeded nap of 0..NAP_MAX_US: the same (seed, run, stage, micro-batch, direction) always
 * sleeps as long; the order messages meet in changes from seed to seed. */
static void nap(const Mock *m, int mb, int dir) {
  AxRng r;
  ax_rng_seed(&r, m->seed * 1000003u + (uint64_t)m->run * 7919u + (uint64_t)m->stage * 131u +
                      (uint64_t)mb * 2u + (uint64_t)dir);
  mt_sleep_us((long)ax_rng_below(&r, NAP_MAX_US + 1));
}

static int record(Mock *m, int forward, int mb, int slot) {
  if (!mt_expect(m->n_calls < MAX_CALLS, "stage %d: more than %d calls (%s)", m->stage,
                 MAX_CALLS, run_name(m)))
    return AX_FAIL("too many calls");
  m->calls[m->n_calls++] = (Call){forward, mb, slot};
  if (!mt_expect(mb >= 0 && mb < m->n_micro, "stage %d: %s of micro-batch %d of %d (%s)",
                 m->stage, forward ? "forward" : "backward", mb, m->n_micro, run_name(m)))
    return AX_FAIL("micro-batch out of range");
  return AX_OK;
}

/* Keeps a device copy of a received message, to be verified after the pass: as a stage keeps
 * its input, copied on the compute stream (device to device: not done yet on the posing
 * device when the call returns). The message must be where the scheduler says it is. */
static int stash(Mock *m, int mb, int dir, const void *data, AxMemKind mem) {
  const char *what = dir == FWD ? "activation" : "gradient";
  if (!mt_expect(data != NULL, "stage %d: no %s for micro-batch %d (%s)", m->stage, what, mb,
                 run_name(m)))
    return AX_OK;
  AxMemKind want = m->mode == MEM_POSING_DEVICE ? AX_MEM_DEVICE : AX_MEM_HOST;
  if (dir == BWD && compressed_into(m, m->stage, mb)) want = AX_MEM_HOST; /* rebuilt */
  mt_expect(mem == want, "stage %d: the %s of micro-batch %d said to be in %s memory (%s)",
            m->stage, what, mb, mem == AX_MEM_DEVICE ? "device" : "host", run_name(m));
  if (m->mode != MEM_HOST_BACKEND)
    mt_expect(tu_posing_is_device(m->be, data) == (want == AX_MEM_DEVICE),
              "stage %d: the %s of micro-batch %d is in %s memory (%s)", m->stage, what, mb,
              tu_posing_is_device(m->be, data) ? "device" : "host", run_name(m));
  m->stashed[mb][dir] = 1;
  return m->be->ops->copy(m->be, m->stash[mb][dir], data, m->words * 4, ax_copy_to_device(mem),
                          AX_STREAM_COMPUTE);
}

/* The stage's output for (micro-batch, direction), in its device buffer: computed on the
 * device (a device-to-device copy of the pattern, enqueued, as a GPU kernel would be). */
static int produce(Mock *m, int mb, int dir, void *dev, const void **out) {
  AX_TRY(m->be->ops->copy(m->be, dev, m->pattern[mb][dir], m->words * 4, AX_COPY_D2D,
                          AX_STREAM_COMPUTE));
  *out = dev;
  return AX_OK;
}

/* Word i of a gradient under compressed backpropagation: a float of a rank-2 CB_ROWS x CB_COLS
 * matrix, which PowerSGD of rank CB_RANK = 2 carries exactly (to rounding). */
static uint32_t lowrank_word(int run, int from, int mb, size_t i) {
  float x = 0;
  size_t row = i / CB_COLS, col = i % CB_COLS;
  for (int k = 0; k < 2; k++) {
    float u = (float)(word(run, BWD, from, mb, 2 * row + k) % 2001) / 1000.0f - 1.0f;
    float v = (float)(word(run, BWD, from, mb, 4096 + 2 * col + k) % 2001) / 1000.0f - 1.0f;
    x += u * v;
  }
  uint32_t w;
  memcpy(&w, &x, sizeof w);
  return w;
}

static uint32_t message_word(const Mock *m, int dir, int from, int mb, size_t i) {
  return m->bp && dir == BWD ? lowrank_word(m->run, from, mb, i) : word(m->run, dir, from, mb, i);
}

/* Whether a received word differs from the sent one: bit for bit, except that a compressed
 * gradient's rebuilt floats may differ by rounding, amplified where the warm-started power
 * iteration's two columns are close to dependent (up to 1.4e-4 seen on these patterns). */
static int word_differs(const Mock *m, int dir, int from, int mb, size_t i, uint32_t got) {
  uint32_t want = message_word(m, dir, from, mb, i);
  if (got == want) return 0;
  if (dir == FWD || !compressed_into(m, m->stage, mb)) return 1;
  float g, w;
  memcpy(&g, &got, sizeof g);
  memcpy(&w, &want, sizeof w);
  return !(fabsf(g - w) <= 1e-3f);
}

/* The outputs of every micro-batch of a pass, in device memory before it starts. */
static int upload_patterns(Mock *m) {
  for (int mb = 0; mb < m->n_micro; mb++)
    for (int dir = FWD; dir <= BWD; dir++) {
      for (size_t i = 0; i < m->words; i++) m->host[i] = message_word(m, dir, m->stage, mb, i);
      AX_TRY(m->be->ops->copy(m->be, m->pattern[mb][dir], m->host, m->words * 4, AX_COPY_H2D,
                              AX_STREAM_COMPUTE));
    }
  return m->be->ops->sync(m->be, AX_STREAM_COMPUTE);
}

static void take_slot(Mock *m, int mb, int slot) {
  int slots = ax_sched_slots(m->stage, m->P, m->limit);
  if (!mt_expect(slot >= 0 && slot < slots, "stage %d: micro-batch %d in slot %d of %d (%s)",
                 m->stage, mb, slot, slots, run_name(m)))
    return;
  mt_expect(!m->holder[slot], "stage %d: slot %d given to micro-batch %d while %d holds it (%s)",
            m->stage, slot, mb, m->holder[slot] - 1, run_name(m));
  m->slot_of[mb] = slot;
  if (m->train) m->holder[slot] = mb + 1; /* forward-only passes free it at once */
}

static int mock_forward(void *ctx, int mb, int slot, const void *input, AxMemKind input_mem,
                        const void **output) {
  Mock *m = ctx;
  AX_TRY(record(m, 1, mb, slot));
  mt_expect(m->fwd[mb]++ == 0, "stage %d: forward of micro-batch %d ran twice (%s)", m->stage,
            mb, run_name(m));
  int last_fwd = -1;
  for (int c = 0; c + 1 < m->n_calls; c++)
    if (m->calls[c].forward) last_fwd = m->calls[c].mb;
  mt_expect(mb > last_fwd, "stage %d: forward of micro-batch %d after that of %d (%s)", m->stage,
            mb, last_fwd, run_name(m));
  if (m->train && m->stage == m->P - 1 && m->n_calls > 1)
    mt_expect(!m->calls[m->n_calls - 2].forward,
              "last stage: forward of micro-batch %d follows a forward (%s)", mb, run_name(m));
  take_slot(m, mb, slot);
  if (m->train && ++m->in_flight > m->max_in_flight) m->max_in_flight = m->in_flight;
  if (m->stage == 0)
    mt_expect(input == NULL, "stage 0: forward of micro-batch %d got an input (%s)", mb,
              run_name(m));
  else
    AX_TRY(stash(m, mb, FWD, input, input_mem));
  nap(m, mb, FWD);
  return produce(m, mb, FWD, m->out_dev, output);
}

static int mock_backward(void *ctx, int mb, int slot, const void *doutput, AxMemKind doutput_mem,
                         const void **dinput) {
  Mock *m = ctx;
  AX_TRY(record(m, 0, mb, slot));
  mt_expect(m->train, "stage %d: backward of micro-batch %d in a forward-only pass (%s)",
            m->stage, mb, run_name(m));
  mt_expect(m->fwd[mb] == 1, "stage %d: backward of micro-batch %d before its forward (%s)",
            m->stage, mb, run_name(m));
  mt_expect(m->bwd[mb]++ == 0, "stage %d: backward of micro-batch %d ran twice (%s)", m->stage,
            mb, run_name(m));
  mt_expect(slot == m->slot_of[mb], "stage %d: backward of micro-batch %d in slot %d, forward "
            "in %d (%s)", m->stage, mb, slot, m->slot_of[mb], run_name(m));
  if (slot >= 0 && slot < MAX_MICRO && m->holder[slot] == mb + 1) m->holder[slot] = 0;
  m->in_flight--;
  if (m->stage == m->P - 1) {
    const Call *before = m->n_calls >= 2 ? &m->calls[m->n_calls - 2] : NULL;
    mt_expect(before && before->forward && before->mb == mb,
              "last stage: backward of micro-batch %d does not follow its forward at once (%s)",
              mb, run_name(m));
    mt_expect(doutput == NULL, "last stage: backward of micro-batch %d got a gradient (%s)", mb,
              run_name(m));
  } else {
    AX_TRY(stash(m, mb, BWD, doutput, doutput_mem));
  }
  nap(m, mb, BWD);
  return produce(m, mb, BWD, m->din_dev, dinput);
}

static AxStageOps mock_ops(Mock *m) {
  AxStageOps ops = {.ctx = m, .forward = mock_forward, .backward = mock_backward};
  return ops;
}

/* After a pass: what ran, and every message as the stage copied it. */
static int check_pass(Mock *m) {
  for (int mb = 0; mb < m->n_micro; mb++) {
    mt_expect(m->fwd[mb] == 1, "stage %d: forward of micro-batch %d ran %d times (%s)", m->stage,
              mb, m->fwd[mb], run_name(m));
    mt_expect(m->bwd[mb] == m->train, "stage %d: backward of micro-batch %d ran %d times (%s)",
              m->stage, mb, m->bwd[mb], run_name(m));
    for (int dir = FWD; dir <= BWD; dir++) {
      if (!m->stashed[mb][dir]) continue;
      int from = dir == FWD ? m->stage - 1 : m->stage + 1;
      AX_TRY(m->be->ops->copy(m->be, m->host, m->stash[mb][dir], m->words * 4, AX_COPY_D2H,
                              AX_STREAM_COMPUTE));
      size_t bad = 0;
      while (bad < m->words && !word_differs(m, dir, from, mb, bad, m->host[bad])) bad++;
      float g = 0, w = 0;
      if (bad < m->words) {
        uint32_t want = message_word(m, dir, from, mb, bad);
        memcpy(&g, &m->host[bad], sizeof g);
        memcpy(&w, &want, sizeof w);
      }
      mt_expect(bad == m->words, "stage %d: the %s of micro-batch %d from stage %d differs at "
                "word %zu of %zu (as floats: %g, sent %g) (%s)", m->stage,
                dir == FWD ? "activation" : "gradient", mb, from, bad, m->words, g, w,
                run_name(m));
    }
  }
  if (m->train && m->stage == 0) {
    int want = m->P == 1 ? 1 : m->limit < m->n_micro ? m->limit : m->n_micro; /* P = 1: serial */
    mt_expect(m->max_in_flight == want, "stage 0: at most %d micro-batches in flight, expected "
              "%d (%s)", m->max_in_flight, want, run_name(m));
  }
  mt_expect(m->in_flight == 0, "stage %d: %d micro-batches still in flight after the pass (%s)",
            m->stage, m->in_flight, run_name(m));
  return AX_OK;
}

static void mock_init(Mock *m, Mode mode, size_t words, int limit, uint64_t seed) {
  memset(m, 0, sizeof *m);
  m->mode = mode;
  m->be = mode == MEM_HOST_BACKEND ? tu_backend(1) : tu_posing_backend();
  m->stage = mt_rank; /* the stage of a pipeline of every rank */
  m->P = mt_size;
  m->limit = limit;
  m->seed = seed;
  m->words = words;
  m->host = tu_alloc(words * 4);
  m->out_dev = m->be->ops->alloc(m->be, words * 4);
  m->din_dev = m->be->ops->alloc(m->be, words * 4);
  ck_assert(m->out_dev && m->din_dev);
  for (int mb = 0; mb < MAX_MICRO; mb++)
    for (int dir = FWD; dir <= BWD; dir++) {
      m->stash[mb][dir] = m->be->ops->alloc(m->be, words * 4);
      m->pattern[mb][dir] = m->be->ops->alloc(m->be, words * 4);
      ck_assert(m->stash[mb][dir] && m->pattern[mb][dir]);
    }
}

static void mock_free(Mock *m) {
  m->be->ops->free(m->be, m->out_dev);
  m->be->ops->free(m->be, m->din_dev);
  for (int mb = 0; mb < MAX_MICRO; mb++)
    for (int dir = FWD; dir <= BWD; dir++) {
      m->be->ops->free(m->be, m->stash[mb][dir]);
      m->be->ops->free(m->be, m->pattern[mb][dir]);
    }
  ax_backend_destroy(m->be);
}

static void begin_pass(Mock *m, int run, int n_micro, int train) {
  m->run = run;
  m->n_micro = n_micro;
  m->train = train;
  m->n_calls = m->in_flight = m->max_in_flight = 0;
  memset(m->fwd, 0, sizeof m->fwd);
  memset(m->bwd, 0, sizeof m->bwd);
  memset(m->stashed, 0, sizeof m->stashed);
  memset(m->holder, 0, sizeof m->holder);
  for (int mb = 0; mb < MAX_MICRO; mb++) m->slot_of[mb] = -1;
}

/* A scheduler error leaves the other ranks waiting: report it and end the job. */
static void must(int rc, const Mock *m, const char *what) {
  if (rc == AX_OK) return;
  fprintf(stderr, "[rank %d of %d] FAILED: %s (%s): %s\n", mt_rank, mt_size, what, run_name(m),
          ax_error_message());
  fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

/* Compressed backpropagation, after a pass: the gradients this stage sent and got compressed
 * are the rule's, on both sides, and each compressed one took (rows + cols) x r x 4 bytes. */
static void check_compressed(const Mock *m, const AxScheduler *s, unsigned long long sent) {
  unsigned long long want = 0;
  size_t full = m->words * 4, small = (CB_ROWS + CB_COLS) * CB_RANK * 4;
  for (int mb = 0; mb < m->n_micro; mb++) {
    int out = m->train && compressed_into(m, m->stage - 1, mb);
    int in = m->train && compressed_into(m, m->stage, mb);
    mt_expect(s->compressed[0][mb] == out, "stage %d: the gradient of micro-batch %d went to "
              "stage %d %s; the rule says %s (%s)", m->stage, mb, m->stage - 1,
              s->compressed[0][mb] ? "compressed" : "in full", out ? "compressed" : "in full",
              run_name(m));
    mt_expect(s->compressed[1][mb] == in, "stage %d: the gradient of micro-batch %d came %s; "
              "the rule says %s (%s)", m->stage, mb, s->compressed[1][mb] ? "compressed" : "in full",
              in ? "compressed" : "in full", run_name(m));
    want += m->stage < m->P - 1 ? full : 0;                      /* the activation */
    want += m->train && m->stage > 0 ? (out ? small : full) : 0; /* the gradient */
  }
  mt_expect(sent == want, "stage %d: sent %llu bytes in the pass, expected %llu (%s)", m->stage,
            sent, want, run_name(m));
}

/* One scheduler for a pipeline limit: training passes for n_micro = limit..9, with a
 * forward-only pass after every other one (as validation interleaves with training).
 * cb: -1 plain messages; 0 every gradient compressed, 1 the epilogue's (rank-2 gradients). */
static void run_limit(Mode mode, size_t words, int limit, uint64_t seed, int *run, int cb) {
  Mock m;
  mock_init(&m, mode, words, limit, seed);
  AxBackprop bp;
  if (cb >= 0) {
    AxCodec *codec;
    /* without lazy error propagation: a rank-2 gradient comes back exact (the residual a
     * warm start from a different matrix leaves would carry into the next one; its telescoping
     * is tests/test_codec.c's) */
    must(ax_backprop_codec("powersgd:rank=2", CB_COLS, 0, &codec), &m, "ax_backprop_codec");
    must(ax_backprop_init(&bp, codec, m.be, m.stage, m.P, words, cb, seed), &m,
         "ax_backprop_init");
    m.bp = &bp;
  }
  AxSchedConfig sc = {.pipe = g_pipe, .stage = m.stage, .P = m.P, .limit = limit,
                      .max_micro = MAX_MICRO, .act_bytes = words * 4, .be = m.be,
                      .ops = mock_ops(&m), .cc = g_cc,
                      .device_buffers = mode == MEM_POSING_DEVICE, .backprop = m.bp};
  AxScheduler s;
  must(ax_sched_init(&s, &sc), &m, "ax_sched_init");
  for (int n = limit; n <= MAX_MICRO; n++)
    for (int train = 1; train >= (n % 2 ? 0 : 1); train--) {
      begin_pass(&m, ++*run, n, train);
      must(upload_patterns(&m), &m, "uploading the outputs");
      mt_run_begin("%s", run_name(&m));
      unsigned long long sent = s.p2p.bytes_sent;
      must(train ? ax_sched_train(&s, n) : ax_sched_forward(&s, n), &m,
           train ? "ax_sched_train" : "ax_sched_forward");
      mt_run_end();
      must(check_pass(&m), &m, "reading back the stash");
      if (m.bp) check_compressed(&m, &s, s.p2p.bytes_sent - sent);
    }
  ax_sched_destroy(&s);
  if (m.bp) ax_backprop_free(&bp);
  mock_free(&m);
  /* no rank posts the next scheduler's receives before every rank cancelled this one's */
  MPI_Barrier(g_pipe);
}

START_TEST(every_micro_batch_once_in_order_within_the_limit) {
  int run = 0;
  for (uint64_t seed = 0; seed < SEEDS; seed++) {
    Mode mode = (Mode)(seed % N_MODES);
    size_t words = seed % 4 == 3 ? WORDS_LARGE : WORDS_SMALL;
    for (int limit = 1; limit <= MAX_MICRO; limit++) run_limit(mode, words, limit, seed, &run, -1);
  }
  mt_assert_all_ok("the scheduler's passes");
}
END_TEST

/* Optimus-CC's compressed backpropagation on every micro-batch count and pipeline limit: which
 * gradients travel compressed (every one, or the epilogue's), on both sides of every link, the
 * bytes they take, and what the stage gets (rank-2 gradients come back to rounding; the rest
 * bit for bit), with host-staged and device buffers. */
START_TEST(compressed_gradients_follow_the_epilogue_rule_on_both_sides) {
  if (mt_size < 2) return;
  int run = 5000;
  for (int cb = 1; cb >= 0; cb--)
    for (uint64_t seed = 0; seed < N_MODES; seed++)
      for (int limit = 1; limit <= MAX_MICRO; limit += 2)
        run_limit((Mode)seed, CB_ROWS * CB_COLS, limit, seed, &run, cb);
  mt_assert_all_ok("compressed backpropagation");
}
END_TEST

/* ------------------------------------------------------------------ stray messages */

typedef enum { DUPLICATE, OUT_OF_RANGE, BEYOND_THE_PASS, COMPRESSED, N_STRAYS } Stray;
static const char *const STRAY_NAMES[] = {"a second activation of a finished micro-batch",
                                          "an activation tagged 1000",
                                          "an activation of micro-batch 3 in a pass of 3",
                                          "an activation tagged as compressed"};
static const char *const STRAY_ERRORS[] = {"activation of micro-batch 0 arrived twice",
                                           "tagged with micro-batch 1000",
                                           "tagged with micro-batch 3",
                                           "activation of micro-batch 1 from stage 0 came "
                                           "compressed; the rule says in full"};
enum { STRAY_MICRO = 3 };

enum { DONE_TAG = 30000, END_TAG = 30001 };

/* Receives and drops every message from `from` on comm up to the one tagged `until` (messages
 * from one rank arrive in order, so nothing of this test is left behind). */
static void drain(MPI_Comm comm, int from, int until) {
  uint32_t junk[WORDS_SMALL];
  MPI_Status st;
  do
    MPI_Recv(junk, WORDS_SMALL * 4, MPI_BYTE, from, MPI_ANY_TAG, comm, &st);
  while (st.MPI_TAG != until);
}

/* Rank 0 plays stage 0 of a 2-stage pipeline by hand: micro-batch 0, its gradient back, the
 * stray message, then the rest of the pass (so that a scheduler that takes the stray one in
 * stride still finishes rather than hangs). */
static void stray_sender(MPI_Comm comm, Stray kind, int run) {
  uint32_t msg[WORDS_SMALL];
  int stray = kind == DUPLICATE ? 0 : kind == OUT_OF_RANGE ? 1000 : kind == COMPRESSED ? 1 : STRAY_MICRO;
  int order[] = {0, -1, stray, 1, 2};
  for (size_t k = 0; k < sizeof order / sizeof *order; k++) {
    if (order[k] < 0) {
      MPI_Recv(msg, WORDS_SMALL * 4, MPI_BYTE, 1, 0, comm, MPI_STATUS_IGNORE); /* gradient 0 */
      continue;
    }
    for (size_t i = 0; i < WORDS_SMALL; i++) msg[i] = word(run, FWD, 0, order[k], i);
    int form = kind == COMPRESSED && k == 2; /* tags: 2 x micro-batch + form */
    MPI_Send(msg, WORDS_SMALL * 4, MPI_BYTE, 1, 2 * order[k] + form, comm); /* sent eagerly */
  }
  drain(comm, 1, DONE_TAG); /* the gradients rank 1 sent after the first */
  MPI_Send(NULL, 0, MPI_BYTE, 1, END_TAG, comm);
}

/* Rank 1 runs the last stage: the pass must fail, saying what came, and never compute it. */
static void stray_receiver(MPI_Comm comm, Stray kind, int run) {
  Mock m;
  mock_init(&m, MEM_HOST_BACKEND, WORDS_SMALL, 1, 0);
  m.stage = 1;
  m.P = 2;
  AxSchedConfig sc = {.pipe = comm, .stage = 1, .P = 2, .limit = 1, .max_micro = STRAY_MICRO + 1,
                      .act_bytes = WORDS_SMALL * 4, .be = m.be, .ops = mock_ops(&m), .cc = g_cc};
  AxScheduler s;
  must(ax_sched_init(&s, &sc), &m, "ax_sched_init");
  begin_pass(&m, run, STRAY_MICRO, 1);
  must(upload_patterns(&m), &m, "uploading the outputs");
  mt_run_begin("a pass with %s", STRAY_NAMES[kind]);
  ax_error_clear();
  int rc = ax_sched_train(&s, STRAY_MICRO);
  mt_run_end();
  mt_expect(rc == AX_ERR, "last stage: a pass with %s succeeded", STRAY_NAMES[kind]);
  mt_expect(rc == AX_OK || strstr(ax_error_message(), STRAY_ERRORS[kind]),
            "last stage: a pass with %s: '%s' does not say '%s'", STRAY_NAMES[kind],
            ax_error_message(), STRAY_ERRORS[kind]);
  ax_error_clear();
  ax_sched_destroy(&s);
  mock_free(&m);
  MPI_Send(NULL, 0, MPI_BYTE, 0, DONE_TAG, comm);
  drain(comm, 0, END_TAG); /* what the failed pass left unreceived */
}

START_TEST(stray_messages_are_reported_not_computed) {
  if (mt_size < 2) return;
  for (int kind = 0; kind < N_STRAYS; kind++) {
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    int run = 1000 + kind;
    if (mt_rank == 0) stray_sender(comm, (Stray)kind, run);
    if (mt_rank == 1) stray_receiver(comm, (Stray)kind, run);
    MPI_Barrier(comm);
    MPI_Comm_free(&comm);
  }
  mt_assert_all_ok("stray messages");
}
END_TEST

static Suite *scheduler_suite(void) {
  Suite *s = suite_create("scheduler");
  TCase *tc = tu_tcase(s, "scheduler", 600);
  tcase_add_test(tc, every_micro_batch_once_in_order_within_the_limit);
  tcase_add_test(tc, compressed_gradients_follow_the_epilogue_rule_on_both_sides);
  tcase_add_test(tc, stray_messages_are_reported_not_computed);
  return s;
}

int main(int argc, char **argv) {
  mt_init(&argc, &argv);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN); /* as axonn train */
  MPI_Comm_dup(MPI_COMM_WORLD, &g_pipe);
  g_cc = mt_comm_config();
  int rc = mt_run_watched(scheduler_suite(), RUN_TIMEOUT_S);
  MPI_Comm_free(&g_pipe);
  return mt_finish(rc);
}
