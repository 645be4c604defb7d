/* mpitest_casync.c — CaSync (mpi/casync/casync.h) on whatever number of ranks it runs on: identity
 * through the ring, PS and all-gather gives the plain ring's sum bit for bit (and its bytes); every
 * codec this build has leaves bitwise identical replicas; a state of K partitions (SeCoPa's)
 * runs exactly K, with exactly their encodings on the wire, for K below, at and above p;
 * onebit's and DGC's results equal a reference that replays the same prepare / encode / decode
 * / merge order on one rank (two steps, with and without error feedback, so the per-piece
 * state's use is checked too: DGC's momentum corrects each rank's own values once, never a sum
 * re-encoded); the bytes on the wire follow the codec's ratio; state persists across calls and
 * through a checkpoint; an emulated link changes nothing but time; operations in flight
 * together, driven by ax_coll_test; bad arguments. Random non-integer inputs; no timing
 * asserts.
 * Every rank checks its own results and prints what failed with its rank; then all ranks agree
 * on pass/fail (so none is left waiting in a collective when another one fails). */
#include <check.h>
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/casync/casync.h"
#include "mpi/casync/casync_cost.h"
#include "mpi/link/link_emulator.h"
#include "mpi/mpi_util.h"
#include "src/core/error.h"
#include "src/core/rng.h"
#include "mpitestutil.h"
#include "testutil.h"

enum { RUN_TIMEOUT_S = 120 };

static MPI_Comm g_comm;   /* a duplicate of MPI_COMM_WORLD for the operations */
static AxCommConfig g_cc; /* polite waiting where ranks outnumber cores; default chunking */

static const AxCasyncAlgo ALGOS[] = {AX_CASYNC_RING, AX_CASYNC_PS, AX_CASYNC_AG};
enum { N_ALGOS = 3 };

/* Every codec of HiPress and the later papers, with and without error feedback; a spec this
 * build does not know yet is skipped with a line saying so. */
static const char *const CODECS[] = {
    "onebit",   "onebit:ef=1",     "onebit:scale=twomeans", "efsignsgd",       "tbq",
    "tbq:ef=1", "terngrad",        "terngrad:bits=2",       "qsgd",            "qsgd:ef=1",
    "dgc",      "dgc:ratio=0.01",  "graddrop",              "topk",            "topk:ef=1",
    "randk",    "randk:ratio=0.1", "powersgd",              "powersgd:rank=1,ef=1"};
enum { N_CODECS = sizeof CODECS / sizeof CODECS[0] };

/* ------------------------------------------------------------------ helpers */

/* The codec of spec, or NULL (rank 0 saying so) when this build does not have it yet. */
static AxCodec *codec_or_skip(const char *spec) {
  AxCodec *c = NULL;
  if (ax_codec_parse(spec, &c) == AX_OK) return c;
  ck_assert_msg(strstr(ax_error_message(), "unknown codec") != NULL, "%s: %s", spec,
                ax_error_message());
  if (mt_rank == 0) printf("skipped: codec %s not built yet\n", spec);
  ax_error_clear();
  return NULL;
}

static AxCodec *codec(const char *spec) {
  AxCodec *c = NULL;
  ck_assert_msg(ax_codec_parse(spec, &c) == AX_OK, "%s: %s", spec, ax_error_message());
  return c;
}

static AxCommConfig tuned(size_t chunk_bytes, int window) {
  AxCommConfig cc = g_cc;
  cc.chunk_bytes = chunk_bytes;
  cc.window = window;
  return cc;
}

static AxCodecCtx ctx_of(uint64_t step) { return (AxCodecCtx){.seed = 42, .step = step, .range = 7}; }

/* One CaSync all-reduce of buf[n] with state st (NULL: a fresh one, freed after). */
static int run_casync(const AxCommConfig *cc, const AxCodec *c, AxCasyncAlgo algo,
                      AxCasyncState *st, uint64_t step, float *buf, size_t n, AxCommBytes *bytes) {
  AxCasyncState *fresh = NULL;
  if (!st && ax_casync_state_new(c, n, mt_size, cc, &fresh) != AX_OK) return AX_ERR;
  AxCodecCtx ctx = ctx_of(step);
  mt_run_begin("casync %s %s n=%zu chunk=%zu window=%d", ax_codec_spec(c),
               ax_casync_algo_name(algo), n, cc->chunk_bytes, cc->window);
  int rc = ax_casync_allreduce(g_comm, cc, c, algo, st ? st : fresh, &ctx, buf, n, bytes);
  mt_run_end();
  ax_casync_state_free(fresh);
  return rc;
}

static size_t segment(size_t n, int b) {
  return n / (size_t)mt_size + ((size_t)b < n % (size_t)mt_size ? 1 : 0);
}

static size_t segment_offset(size_t n, int b) {
  size_t q = n / (size_t)mt_size, r = n % (size_t)mt_size, ub = (size_t)b;
  return ub * q + (ub < r ? ub : r);
}

/* ------------------------------------------------------------------ identity */

typedef struct {
  size_t chunk_bytes;
  int window;
  const char *name;
} Tuning;
/* the default, then pieces small enough that mid-size segments take many of them, with the
 * tightest window and an odd chunk size */
static const Tuning TUNINGS[] = {{0, 0, "default chunks"},
                                 {1000, 1, "1000-byte chunks, window 1"},
                                 {4098, 3, "4098-byte chunks, window 3"}};

/* What identity through PS moves: this rank pushes every other segment and sends its own to
 * every peer, and receives the converse. */
static unsigned long long ps_identity_bytes(size_t n) {
  size_t own = segment(n, mt_rank);
  return mt_size == 1 ? 0 : (unsigned long long)((n - own) + (size_t)(mt_size - 1) * own) * 4;
}

/* What identity through the all-gather moves: every value to every peer, and the converse. */
static unsigned long long ag_identity_bytes(size_t n) {
  return (unsigned long long)n * (size_t)(mt_size - 1) * 4;
}

static void check_identity(const AxCodec *id, AxCasyncAlgo algo, size_t n, const Tuning *tu) {
  AxCommConfig cc = tuned(tu->chunk_bytes, tu->window);
  float *got = mt_inputs(n, mt_rank, n + 1), *ref = mt_copy(got, n);
  AxCommBytes plain = {0, 0}, bytes = {3, 5}; /* operations add to what is there */
  int rc = ax_allreduce(g_comm, &cc, ref, n, AX_COMM_F32, AX_ALLREDUCE_RING, &plain);
  mt_expect(rc == AX_OK, "plain ring n=%zu: %s", n, ax_error_message());
  rc = run_casync(&cc, id, algo, NULL, 0, got, n, &bytes);
  const char *a = ax_casync_algo_name(algo);
  mt_expect(rc == AX_OK, "identity %s n=%zu (%s): %s", a, n, tu->name, ax_error_message());
  size_t bad = mt_first_difference(got, ref, n);
  mt_expect(bad == n, "identity %s n=%zu (%s): element %zu is %.9g, the plain ring gives %.9g",
            a, n, tu->name, bad, bad < n ? got[bad] : 0.0, bad < n ? ref[bad] : 0.0);
  unsigned long long want_sent = plain.sent, want_received = plain.received;
  if (algo == AX_CASYNC_PS) want_sent = want_received = ps_identity_bytes(n);
  if (algo == AX_CASYNC_AG) want_sent = want_received = ag_identity_bytes(n);
  mt_expect(bytes.sent == want_sent + 3 && bytes.received == want_received + 5,
            "identity %s n=%zu (%s): sent %llu received %llu, expected %llu and %llu", a, n,
            tu->name, bytes.sent - 3, bytes.received - 5, want_sent, want_received);
  free(got);
  free(ref);
}

START_TEST(identity_matches_the_plain_ring) {
  AxCodec *id = codec("identity");
  size_t p = (size_t)mt_size;
  const size_t counts[] = {0, 1, p - 1, p + 1, 1000, 1000 * p + 1, 10007};
  for (size_t u = 0; u < sizeof TUNINGS / sizeof TUNINGS[0]; u++)
    for (int a = 0; a < N_ALGOS; a++)
      for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
        check_identity(id, ALGOS[a], counts[i], &TUNINGS[u]);
  /* several default (2 MiB) pieces per segment on up to 4 ranks */
  for (int a = 0; a < N_ALGOS; a++) check_identity(id, ALGOS[a], 2500003, &TUNINGS[0]);
  ax_codec_free(id);
  mt_assert_all_ok("identity through CaSync against the plain ring");
}
END_TEST

/* ------------------------------------------------------------------ every codec */

static double dot(const float *a, const float *b, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; i++) s += (double)a[i] * b[i];
  return s;
}

static size_t first_non_finite(const float *x, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!isfinite(x[i])) return i;
  return n;
}

static void check_replicas(const AxCodec *c, AxCasyncAlgo algo, size_t n,
                           const AxCommConfig *cc) {
  float *got = mt_inputs(n, mt_rank, n + 2), *sum = mt_copy(got, n);
  MPI_Allreduce(MPI_IN_PLACE, sum, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  const char *s = ax_codec_spec(c), *a = ax_casync_algo_name(algo);
  AxCommBytes bytes = {0, 0};
  int rc = run_casync(cc, c, algo, NULL, 3, got, n, &bytes);
  mt_expect(rc == AX_OK, "%s %s n=%zu: %s", s, a, n, ax_error_message());
  mt_expect(mt_replicas_agree(got, n), "%s %s n=%zu: the ranks' results differ", s, a, n);
  size_t bad = first_non_finite(got, n);
  mt_expect(bad == n, "%s %s n=%zu: element %zu is %g", s, a, n, bad, bad < n ? got[bad] : 0.0);
  /* a compressed sum still points the way of the sum */
  if (n >= 1000)
    mt_expect(dot(got, sum, n) > 0, "%s %s n=%zu: the result is not aligned with the sum", s, a,
              n);
  unsigned long long all[2], mine[2] = {bytes.sent, bytes.received};
  MPI_Allreduce(mine, all, 2, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  mt_expect(all[0] == all[1], "%s %s n=%zu: ranks sent %llu bytes but received %llu", s, a, n,
            all[0], all[1]);
  free(got);
  free(sum);
}

START_TEST(every_codec_leaves_identical_replicas) {
  size_t p = (size_t)mt_size;
  const size_t counts[] = {1, p + 1, 1003, 20011};
  AxCommConfig small = tuned(4096, 2), dflt = tuned(0, 0);
  for (int i = 0; i < N_CODECS; i++) {
    AxCodec *c = codec_or_skip(CODECS[i]);
    if (!c) continue;
    for (int a = 0; a < N_ALGOS; a++) {
      for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++)
        check_replicas(c, ALGOS[a], counts[k], &small);
      check_replicas(c, ALGOS[a], 20011, &dflt);
    }
    ax_codec_free(c);
  }
  mt_assert_all_ok("every codec through CaSync: identical replicas");
}
END_TEST

/* ------------------------------------------------------------------ onebit against a replay */

/* The reference: the ranks' inputs (all[e] is rank e's) summed as CaSync does, replayed here
 * piece by piece with a state per (encoding rank, segment, piece) that lives across steps. */
typedef struct {
  const AxCodec *c;
  size_t n, piece;
  AxCodecState **states; /* [rank][segment][piece slot] */
  size_t slots;          /* piece slots per segment */
  unsigned char *bytes;
  float *scratch;
} Replay;

static AxCodecState **replay_state(Replay *r, int e, int s, size_t k) {
  return &r->states[((size_t)e * (size_t)mt_size + (size_t)s) * r->slots + k];
}

static void replay_init(Replay *r, const AxCodec *c, size_t n, size_t piece) {
  r->c = c;
  r->n = n;
  r->piece = piece;
  r->slots = (segment(n, 0) + piece - 1) / piece;
  size_t total = (size_t)mt_size * (size_t)mt_size * (r->slots ? r->slots : 1);
  r->states = calloc(total, sizeof *r->states);
  ck_assert_ptr_nonnull(r->states);
  for (int e = 0; e < mt_size; e++)
    for (int s = 0; s < mt_size; s++)
      for (size_t k = 0; k * piece < segment(n, s); k++) {
        size_t len = segment(n, s) - k * piece < piece ? segment(n, s) - k * piece : piece;
        ck_assert_int_eq(ax_codec_state_new(c, len, replay_state(r, e, s, k)), AX_OK);
      }
  r->bytes = mt_xmalloc(ax_codec_max_bytes(c, piece));
  r->scratch = mt_xmalloc(piece * sizeof(float));
}

static void replay_free(Replay *r) {
  size_t total = (size_t)mt_size * (size_t)mt_size * (r->slots ? r->slots : 1);
  for (size_t i = 0; i < total; i++) ax_codec_state_free(r->states[i]);
  free(r->states);
  free(r->bytes);
  free(r->scratch);
}

static size_t replay_encode(Replay *r, int e, int s, size_t k, const float *x, size_t len) {
  AxCodecCtx ctx = ctx_of(0);
  size_t bytes = 0;
  ck_assert_int_eq(
      ax_codec_encode(r->c, *replay_state(r, e, s, k), &ctx, x, len, r->bytes, &bytes), AX_OK);
  return bytes;
}

static void replay_decode(Replay *r, size_t bytes, float *out, size_t len, int add) {
  AxCodecCtx ctx = ctx_of(0);
  ck_assert_int_eq(ax_codec_decode(r->c, &ctx, r->bytes, bytes, out, len, add), AX_OK);
}

/* Piece k of segment s: the ring's chain from rank s to its owner s-1, or PS's owner s adding
 * the others' encoded contributions in ring order (out gets decode(encode(aggregate))), or the
 * all-gather's sum of every rank's encoding in ring order from s. */
static void replay_piece(Replay *r, AxCasyncAlgo algo, float *const *all, int s, size_t k,
                         float *out) {
  int p = mt_size;
  size_t off = segment_offset(r->n, s) + k * r->piece;
  size_t len = segment(r->n, s) - k * r->piece < r->piece ? segment(r->n, s) - k * r->piece
                                                           : r->piece;
  float *v = r->scratch;
  size_t bytes;
  if (algo == AX_CASYNC_RING) {
    bytes = replay_encode(r, s, s, k, all[s] + off, len);
    for (int j = 1; j < p; j++) {
      int e = (s + j) % p;
      memcpy(v, all[e] + off, len * sizeof *v);
      replay_decode(r, bytes, v, len, 1);
      bytes = replay_encode(r, e, s, k, v, len);
    }
  } else if (algo == AX_CASYNC_AG) { /* every rank's own encoding, summed in ring order */
    for (int j = 0; j < p; j++) {
      int e = (s + j) % p;
      bytes = replay_encode(r, e, s, k, all[e] + off, len);
      replay_decode(r, bytes, out + off, len, j > 0);
    }
    return;
  } else {
    float *agg = out + off; /* the owner's values, then the sum, then the result */
    memcpy(agg, all[s] + off, len * sizeof *agg);
    for (int j = 1; j < p; j++) {
      int e = (s + j) % p;
      bytes = replay_encode(r, e, s, k, all[e] + off, len);
      replay_decode(r, bytes, agg, len, 1);
    }
    bytes = replay_encode(r, s, s, k, agg, len);
  }
  replay_decode(r, bytes, out + off, len, 0);
}

/* Each rank's own values prepared as CaSync does before anything is encoded (DGC's momentum
 * correction, piece by piece with the piece's state; the other codecs leave them). */
static void replay_prepare(Replay *r, float *const *all) {
  for (int e = 0; e < mt_size; e++)
    for (int s = 0; s < mt_size; s++)
      for (size_t k = 0; k * r->piece < segment(r->n, s); k++) {
        size_t off = segment_offset(r->n, s) + k * r->piece, left = segment(r->n, s) - k * r->piece;
        ck_assert_int_eq(ax_codec_prepare(r->c, *replay_state(r, e, s, k), all[e] + off,
                                          left < r->piece ? left : r->piece),
                         AX_OK);
      }
}

/* all[e] are prepared in place. */
static void replay_step(Replay *r, AxCasyncAlgo algo, float *const *all, float *out) {
  if (mt_size == 1) {
    memcpy(out, all[0], r->n * sizeof *out); /* one rank: left as it was */
    return;
  }
  replay_prepare(r, all);
  for (int s = 0; s < mt_size; s++)
    for (size_t k = 0; k * r->piece < segment(r->n, s); k++) replay_piece(r, algo, all, s, k, out);
}

static void check_replay(const char *spec, AxCasyncAlgo algo, size_t n, size_t chunk_bytes) {
  AxCodec *c = codec(spec);
  AxCommConfig cc = tuned(chunk_bytes, 2);
  AxCasyncState *st = NULL;
  ck_assert_int_eq(ax_casync_state_new(c, n, mt_size, &cc, &st), AX_OK);
  Replay r;
  replay_init(&r, c, n, chunk_bytes / 4);
  float **all = mt_xmalloc((size_t)mt_size * sizeof *all), *ref = mt_xmalloc(n * sizeof *ref);
  for (int step = 0; step < 2; step++) { /* the second step sees the first one's state */
    for (int e = 0; e < mt_size; e++) all[e] = mt_inputs(n, e, 100 + (uint64_t)step);
    float *got = mt_copy(all[mt_rank], n);
    int rc = run_casync(&cc, c, algo, st, (uint64_t)step, got, n, NULL);
    mt_expect(rc == AX_OK, "%s %s step %d: %s", spec, ax_casync_algo_name(algo), step,
              ax_error_message());
    replay_step(&r, algo, all, ref);
    size_t bad = mt_first_difference(got, ref, n);
    mt_expect(bad == n, "%s %s n=%zu step %d: element %zu is %.9g, the replay gives %.9g", spec,
              ax_casync_algo_name(algo), n, step, bad, bad < n ? got[bad] : 0.0,
              bad < n ? ref[bad] : 0.0);
    for (int e = 0; e < mt_size; e++) free(all[e]);
    free(got);
  }
  free(all);
  free(ref);
  replay_free(&r);
  ax_casync_state_free(st);
  ax_codec_free(c);
}

/* onebit draws nothing at random; DGC's threshold is exact on pieces of at most 4096 values
 * (the whole piece is its sample), so neither depends on the context the replay cannot know. DGC
 * checks that every rank's momentum is applied once, to its own values, however often a sum
 * holding them is re-encoded (ring, PS). */
START_TEST(onebit_and_dgc_match_a_replay_of_the_algorithm) {
  const char *specs[] = {"onebit", "onebit:ef=1", "dgc:ratio=0.1"};
  for (int a = 0; a < N_ALGOS; a++)
    for (int i = 0; i < 3; i++) {
      check_replay(specs[i], ALGOS[a], 3001, 1000); /* 250-value pieces, a short last one */
      check_replay(specs[i], ALGOS[a], 7, 4096);    /* one piece, empty segments on 4+ ranks */
    }
  mt_assert_all_ok("onebit and DGC through CaSync against a replay");
}
END_TEST

/* ------------------------------------------------------------------ linear codecs */

/* The reference of a linear codec: its rounds run here by hand on a state of its own (factor,
 * the plain ring's all-reduce of it, factor_reduced; then rebuild), with the context as given. */
static void linear_reference(const AxCodec *c, AxCodecState *st, uint64_t step, const float *x,
                             size_t n, float *out) {
  AxCodecCtx ctx = ctx_of(step);
  for (int round = 0; round < ax_codec_rounds(c); round++) {
    size_t len = ax_codec_factor_len(c, n, round);
    float *f = mt_xmalloc(len * sizeof *f);
    ck_assert_int_eq(ax_codec_factor(c, st, &ctx, x, n, round, f), AX_OK);
    ck_assert_int_eq(ax_allreduce(g_comm, &g_cc, f, len, AX_COMM_F32, AX_ALLREDUCE_RING, NULL),
                     AX_OK);
    ck_assert_int_eq(ax_codec_factor_reduced(c, st, &ctx, n, round, f), AX_OK);
    free(f);
  }
  ck_assert_int_eq(ax_codec_rebuild(c, st, &ctx, n, out), AX_OK);
}

static void check_linear(const char *spec, AxCasyncAlgo algo, size_t n) {
  AxCodec *c = codec_or_skip(spec);
  if (!c) return;
  ck_assert_int_gt(ax_codec_rounds(c), 0);
  AxCasyncState *st = NULL;
  AxCodecState *ref_st = NULL;
  ck_assert_int_eq(ax_casync_state_new(c, n, mt_size, &g_cc, &st), AX_OK);
  ck_assert_int_eq(ax_codec_state_new(c, n, &ref_st), AX_OK);
  for (uint64_t step = 0; step < 2; step++) { /* the second step sees the first one's state */
    float *got = mt_inputs(n, mt_rank, 40 + step), *ref = mt_xmalloc(n * sizeof *ref);
    AxCommBytes bytes = {0, 0};
    int rc = run_casync(&g_cc, c, algo, st, step, got, n, &bytes);
    mt_expect(rc == AX_OK, "%s n=%zu step %d: %s", spec, n, (int)step, ax_error_message());
    if (mt_size > 1) {
      float *x = mt_inputs(n, mt_rank, 40 + step);
      linear_reference(c, ref_st, step, x, n, ref);
      free(x);
      size_t bad = mt_first_difference(got, ref, n);
      mt_expect(bad == n, "%s %s n=%zu step %d: element %zu is %.9g, its rounds by hand give %.9g",
                spec, ax_casync_algo_name(algo), n, (int)step, bad, bad < n ? got[bad] : 0.0,
                bad < n ? ref[bad] : 0.0);
      mt_expect(bytes.sent > 0 && bytes.sent < n * sizeof(float),
                "%s n=%zu: sent %llu bytes", spec, n, bytes.sent);
    }
    mt_expect(mt_replicas_agree(got, n), "%s n=%zu: replicas differ", spec, n);
    free(got);
    free(ref);
  }
  ax_codec_state_free(ref_st);
  ax_casync_state_free(st);
  ax_codec_free(c);
}

START_TEST(linear_codecs_match_their_rounds_by_hand) {
  const char *specs[] = {"randk", "randk:ratio=0.1", "powersgd", "powersgd:rank=1,ef=1"};
  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
    check_linear(specs[i], AX_CASYNC_RING, 20011);
    check_linear(specs[i], AX_CASYNC_PS, 4096); /* the algorithm does not matter */
  }
  mt_assert_all_ok("linear codecs through CaSync");
}
END_TEST

/* ------------------------------------------------------------------ wire bytes */

/* Within 10% of ratio × the plain ring's bytes (the all-gather: × its own identity bytes); a codec whose size varies with the values
 * (`varies`: its ratio is the worst case) at most that. */
static int near_ratio(unsigned long long got, double want, int varies) {
  return varies ? (double)got <= 1.1 * want : fabs((double)got - want) <= 0.1 * want;
}

static void check_wire_bytes(const char *spec, int varies, AxCasyncAlgo algo) {
  const size_t n = (size_t)1 << 20;
  AxCodec *c = codec_or_skip(spec);
  if (!c) return;
  AxCommConfig cc = tuned(0, 0);
  float *x = mt_inputs(n, mt_rank, 5), *y = mt_copy(x, n);
  AxCommBytes plain = {0, 0}, got = {0, 0};
  mt_expect(ax_allreduce(g_comm, &cc, y, n, AX_COMM_F32, AX_ALLREDUCE_RING, &plain) == AX_OK,
            "plain ring: %s", ax_error_message());
  mt_expect(run_casync(&cc, c, algo, NULL, 0, x, n, &got) == AX_OK, "%s %s: %s", spec,
            ax_casync_algo_name(algo), ax_error_message());
  double ratio = ax_codec_ratio(c, n), want_sent = ratio * (double)plain.sent,
         want_received = ratio * (double)plain.received;
  if (algo == AX_CASYNC_AG) /* the whole range to every peer, not the ring's 2(p-1)/p of it */
    want_sent = want_received = ratio * (double)ag_identity_bytes(n);
  mt_expect(near_ratio(got.sent, want_sent, varies) &&
                near_ratio(got.received, want_received, varies),
            "%s %s n=%zu: sent %llu received %llu, the ratio %.4f of the plain ring's %llu "
            "and %llu is %.0f and %.0f (%s)",
            spec, ax_casync_algo_name(algo), n, got.sent, got.received, ratio, plain.sent,
            plain.received, want_sent, want_received, varies ? "at most" : "within 10%");
  free(x);
  free(y);
  ax_codec_free(c);
}

START_TEST(wire_bytes_follow_the_codec_ratio) {
  const struct {
    const char *spec;
    int varies;
  } specs[] = {{"identity", 0}, {"onebit", 0},   {"efsignsgd", 0}, {"tbq", 0},     {"terngrad", 0},
               {"qsgd", 0},     {"topk", 0},     {"dgc", 1},       {"graddrop", 1}};
  for (int a = 0; a < N_ALGOS; a++)
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++)
      check_wire_bytes(specs[i].spec, specs[i].varies, ALGOS[a]);
  mt_assert_all_ok("CaSync's bytes against the codec's ratio");
}
END_TEST

/* ------------------------------------------------------------------ state */

static void check_state_persists(AxCasyncAlgo algo) {
  const size_t n = 5003;
  AxCodec *c = codec("onebit:ef=1");
  AxCommConfig cc = tuned(4096, 2);
  const char *a = ax_casync_algo_name(algo);
  float *x1 = mt_inputs(n, mt_rank, 11), *x2 = mt_inputs(n, mt_rank, 12);
  float *kept1 = mt_copy(x1, n), *kept2 = mt_copy(x2, n); /* one state for both steps */
  float *fresh1 = mt_copy(x1, n), *fresh2 = mt_copy(x2, n); /* a new state each step */
  float *loaded2 = mt_copy(x2, n); /* step 2 on a state loaded from a checkpoint of step 1 */
  AxCasyncState *st = NULL, *restored = NULL;
  ck_assert_int_eq(ax_casync_state_new(c, n, mt_size, &cc, &st), AX_OK);
  ck_assert_int_eq(ax_casync_state_new(c, n, mt_size, &cc, &restored), AX_OK);
  int rc = run_casync(&cc, c, algo, st, 0, kept1, n, NULL);
  size_t blob_bytes = ax_casync_state_bytes(st);
  void *blob = mt_xmalloc(blob_bytes);
  if (rc == AX_OK) rc = ax_casync_state_save(st, blob);
  if (rc == AX_OK) rc = run_casync(&cc, c, algo, st, 1, kept2, n, NULL);
  if (rc == AX_OK) rc = run_casync(&cc, c, algo, NULL, 0, fresh1, n, NULL);
  if (rc == AX_OK) rc = run_casync(&cc, c, algo, NULL, 1, fresh2, n, NULL);
  if (rc == AX_OK) rc = ax_casync_state_load(restored, blob, blob_bytes);
  if (rc == AX_OK) rc = run_casync(&cc, c, algo, restored, 1, loaded2, n, NULL);
  mt_expect(rc == AX_OK, "state %s: %s", a, ax_error_message());
  mt_expect(mt_first_difference(kept1, fresh1, n) == n, "state %s: the first steps differ", a);
  if (mt_size > 1) {
    mt_expect(blob_bytes >= n * sizeof(float), "state %s: %zu bytes for %zu residuals", a,
              blob_bytes, n);
    mt_expect(mt_first_difference(kept2, fresh2, n) < n,
              "state %s: the second step with error feedback equals a stateless one", a);
  }
  mt_expect(mt_first_difference(kept2, loaded2, n) == n,
            "state %s: a state loaded from a checkpoint gives another second step", a);
  mt_expect(mt_replicas_agree(kept2, n), "state %s: replicas differ", a);
  /* a checkpoint of another size is refused */
  if (blob_bytes) {
    mt_expect(ax_casync_state_load(restored, blob, blob_bytes - 1) == AX_ERR,
              "state %s: a short checkpoint was loaded", a);
    ax_error_clear();
  }
  free(blob), free(x1), free(x2), free(kept1), free(kept2), free(fresh1), free(fresh2);
  free(loaded2);
  ax_casync_state_free(st);
  ax_casync_state_free(restored);
  ax_codec_free(c);
}

/* ------------------------------------------------------------------ K partitions */

/* Onebit's exact encoding of n values: two floats and the sign bits in whole words. */
static unsigned long long onebit_bytes(size_t n) {
  return n ? 8 + 4 * (((n + 7) / 8 + 3) / 4) : 0;
}

/* The encoded bytes of every partition of a K-partition layout of n on this job's ranks, as
 * casync.h describes it: K <= p near-equal partitions; K > p: segment s's near-equal share
 * ceil or floor of K / p. */
static unsigned long long k_layout_bytes(size_t n, int k, size_t *partitions) {
  unsigned long long total = 0;
  int used = k < mt_size ? k : mt_size;
  *partitions = 0;
  for (int s = 0; s < used; s++) {
    size_t seg = n / (size_t)used + ((size_t)s < n % (size_t)used ? 1 : 0);
    size_t share = (size_t)(k / used + (s < k % used ? 1 : 0));
    if (share > seg) share = seg;
    for (size_t j = 0; j < share; j++) {
      total += onebit_bytes(seg / share + (j < seg % share ? 1 : 0));
      ++*partitions;
    }
  }
  return total;
}

/* SeCoPa's K is what runs: the state lays out K partitions (the encode tasks of every step),
 * the wire carries exactly their encodings over the algorithm's hops (ring and PS: each
 * partition 2(p-1) times, aggregation and dissemination; all-gather: every rank's to every
 * peer), and the sum is right (integer values: exact in any order), on every rank alike. */
static void check_k(AxCasyncAlgo algo, size_t n, int k) {
  AxCodec *onebit = codec("onebit"), *id = codec("identity");
  const char *a = ax_casync_algo_name(algo);
  size_t want_parts;
  unsigned long long want = k_layout_bytes(n, k, &want_parts);
  want *= algo == AX_CASYNC_AG ? (unsigned long long)mt_size * (mt_size - 1)
                               : 2ULL * (mt_size - 1);
  AxCasyncState *st = NULL;
  int rc = ax_casync_state_new_parts(onebit, n, mt_size, k, &st);
  mt_expect(rc == AX_OK, "onebit K=%d n=%zu: %s", k, n, ax_error_message());
  if (rc == AX_OK && mt_size > 1)
    mt_expect(ax_casync_state_partitions(st) == want_parts,
              "onebit K=%d n=%zu: %zu partitions laid out, expected %zu", k, n,
              ax_casync_state_partitions(st), want_parts);
  float *buf = mt_inputs(n, mt_rank, 17);
  AxCommBytes bytes = {0, 0};
  if (rc == AX_OK) rc = run_casync(&g_cc, onebit, algo, st, 1, buf, n, &bytes);
  mt_expect(rc == AX_OK, "onebit %s K=%d n=%zu: %s", a, k, n, ax_error_message());
  unsigned long long all = 0;
  MPI_Allreduce(&bytes.sent, &all, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  mt_expect(all == want, "onebit %s K=%d n=%zu: %llu bytes sent by all ranks, expected %llu", a,
            k, n, all, want);
  mt_expect(mt_replicas_agree(buf, n), "onebit %s K=%d n=%zu: the ranks' results differ", a, k, n);
  ax_casync_state_free(st);
  st = NULL;
  for (size_t i = 0; i < n; i++) buf[i] = (float)((i * 7 + (size_t)mt_rank * 3) % 11);
  rc = ax_casync_state_new_parts(id, n, mt_size, k, &st);
  if (rc == AX_OK) rc = run_casync(&g_cc, id, algo, st, 1, buf, n, NULL);
  mt_expect(rc == AX_OK, "identity %s K=%d n=%zu: %s", a, k, n, ax_error_message());
  size_t bad = n;
  for (size_t i = 0; i < n && bad == n; i++) {
    double sum = 0;
    for (int r = 0; r < mt_size; r++) sum += (double)((i * 7 + (size_t)r * 3) % 11);
    if (buf[i] != (float)sum) bad = i;
  }
  mt_expect(bad == n, "identity %s K=%d n=%zu: element %zu is not the sum", a, k, n, bad);
  ax_casync_state_free(st);
  free(buf);
  ax_codec_free(onebit);
  ax_codec_free(id);
}

START_TEST(k_partitions_run_as_chosen) {
  const int ks[] = {1, 2, mt_size, 2 * mt_size + 1};
  const size_t counts[] = {1, 1000, 20011};
  for (int a = 0; a < N_ALGOS; a++)
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
      for (size_t j = 0; j < sizeof ks / sizeof ks[0]; j++) check_k(ALGOS[a], counts[i], ks[j]);
  mt_assert_all_ok("CaSync in K partitions");
}
END_TEST

/* A momentum handed to the state (ax_casync_state_set_momentum: the trainer's Adam moment when
 * compression starts) lands on the values it belongs to in every layout: DGC sending every
 * value (ratio 1) of a zero gradient sends its prepared momentum, 0.5 of what was handed over,
 * so the sum is size x 0.5 x m exactly (halves of small integers), element by element. A
 * momentum handed to the wrong piece, or not at all, moves the sum. Chunked (small pieces, K
 * 0) and in K partitions. */
static void check_momentum_handover(AxCasyncAlgo algo, size_t n, int k) {
  AxCodec *dgc = codec("dgc:ratio=1,momentum=0.5");
  AxCommConfig cc = tuned(256, 0);
  AxCasyncState *st = NULL;
  int rc = k ? ax_casync_state_new_parts(dgc, n, mt_size, k, &st)
             : ax_casync_state_new(dgc, n, mt_size, &cc, &st);
  float *m = mt_xmalloc(n * sizeof *m), *buf = mt_xmalloc(n * sizeof *buf);
  for (size_t i = 0; i < n; i++) m[i] = (float)(i % 13) - 6.0f, buf[i] = 0;
  if (rc == AX_OK) {
    ax_casync_state_set_momentum(st, m, 1.0f);
    rc = run_casync(&cc, dgc, algo, st, 1, buf, n, NULL);
  }
  mt_expect(rc == AX_OK, "dgc %s K=%d n=%zu: %s", ax_casync_algo_name(algo), k, n,
            ax_error_message());
  size_t bad = n;
  float want = 0;
  for (size_t i = 0; i < n && bad == n && rc == AX_OK && mt_size > 1; i++) {
    want = (float)mt_size * 0.5f * m[i];
    if (buf[i] != want) bad = i;
  }
  mt_expect(bad == n, "dgc %s K=%d n=%zu: element %zu is %g, not %g (the momentum handed over)",
            ax_casync_algo_name(algo), k, n, bad, bad < n ? buf[bad] : 0, want);
  ax_casync_state_free(st);
  free(m);
  free(buf);
  ax_codec_free(dgc);
}

START_TEST(momentum_handed_over_lands_on_its_values) {
  const int ks[] = {0, 1, mt_size, 2 * mt_size + 1};
  for (int a = 0; a < N_ALGOS; a++)
    for (size_t j = 0; j < sizeof ks / sizeof ks[0]; j++) check_momentum_handover(ALGOS[a], 1001, ks[j]);
  mt_assert_all_ok("the momentum handed over");
}
END_TEST

START_TEST(state_persists_across_calls) {
  for (int a = 0; a < N_ALGOS; a++) check_state_persists(ALGOS[a]);
  mt_assert_all_ok("CaSync state across calls");
}
END_TEST

/* ------------------------------------------------------------------ emulated link */

static void check_emulated(AxLinkEmu *emu, const char *spec, AxCasyncAlgo algo) {
  AxCodec *c = codec_or_skip(spec);
  if (!c) return;
  const size_t n = 30011;
  AxCommConfig plain_cc = tuned(8192, 2), emu_cc = plain_cc;
  AxTraffic traffic;
  memset(&traffic, 0, sizeof traffic);
  emu_cc.links = emu;
  emu_cc.traffic = &traffic;
  emu_cc.traffic_class = AX_TRAFFIC_DATA_PARALLEL;
  float *a = mt_inputs(n, mt_rank, 21), *b = mt_copy(a, n);
  AxCommBytes bytes = {0, 0};
  int rc = run_casync(&plain_cc, c, algo, NULL, 0, a, n, NULL);
  if (rc == AX_OK) rc = run_casync(&emu_cc, c, algo, NULL, 0, b, n, &bytes);
  const char *an = ax_casync_algo_name(algo);
  mt_expect(rc == AX_OK, "%s %s emulated: %s", spec, an, ax_error_message());
  size_t bad = mt_first_difference(a, b, n);
  mt_expect(bad == n, "%s %s: element %zu is %.9g over the emulated link, %.9g without", spec,
            an, bad, bad < n ? b[bad] : 0.0, bad < n ? a[bad] : 0.0);
  unsigned long long counted = ax_traffic_bytes(&traffic, AX_TRAFFIC_DATA_PARALLEL);
  mt_expect(counted == bytes.sent, "%s %s: traffic counted %llu bytes as data_parallel, sent %llu",
            spec, an, counted, bytes.sent);
  if (mt_size > 1)
    mt_expect(ax_traffic_crossed(&traffic, AX_TRAFFIC_DATA_PARALLEL) == counted,
              "%s %s: one rank per node, yet not every byte crossed", spec, an);
  free(a);
  free(b);
  ax_codec_free(c);
}

START_TEST(an_emulated_link_changes_nothing_but_time) {
  AxLinkEmuConfig lc = {.ranks_per_node = 1};
  ck_assert_int_eq(ax_link_spec_parse("10Gbps,20us", &lc.link), AX_OK);
  AxLinkEmu *emu = NULL;
  ck_assert_msg(ax_link_emu_create(&emu, g_comm, &lc) == AX_OK, "%s", ax_error_message());
  const char *specs[] = {"identity", "onebit:ef=1", "terngrad", "powersgd", "randk"};
  for (int a = 0; a < N_ALGOS; a++)
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++)
      check_emulated(emu, specs[i], ALGOS[a]);
  ax_link_emu_destroy(emu);
  mt_assert_all_ok("CaSync over an emulated link");
}
END_TEST

/* ------------------------------------------------------------------ in flight together */

/* Stands in for the optimizer's work between progress calls. */
static double other_work(const float *x, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; i++) s += x[i] * 0.5;
  return s;
}

START_TEST(operations_in_flight_together) {
  const size_t n = 40009;
  AxCodec *ef = codec("onebit:ef=1"), *id = codec("identity");
  AxCommConfig cc = tuned(4096, 2);
  float *x[4], *ref[4];
  for (int i = 0; i < 4; i++) {
    x[i] = mt_inputs(n, mt_rank, 30 + (uint64_t)i);
    ref[i] = mt_copy(x[i], n);
  }
  /* one at a time first, each on a fresh state */
  int rc = run_casync(&cc, ef, AX_CASYNC_RING, NULL, 0, ref[0], n, NULL);
  if (rc == AX_OK) rc = run_casync(&cc, ef, AX_CASYNC_PS, NULL, 0, ref[1], n, NULL);
  if (rc == AX_OK) rc = run_casync(&cc, id, AX_CASYNC_PS, NULL, 0, ref[2], n, NULL);
  if (rc == AX_OK) rc = ax_allreduce(g_comm, &cc, ref[3], n, AX_COMM_F32, AX_ALLREDUCE_RING, NULL);
  mt_expect(rc == AX_OK, "one at a time: %s", ax_error_message());
  /* then all four in flight, progressed round-robin with other work between */
  AxCasyncState *st[3] = {NULL, NULL, NULL};
  ck_assert_int_eq(ax_casync_state_new(ef, n, mt_size, &cc, &st[0]), AX_OK);
  ck_assert_int_eq(ax_casync_state_new(ef, n, mt_size, &cc, &st[1]), AX_OK);
  ck_assert_int_eq(ax_casync_state_new(id, n, mt_size, &cc, &st[2]), AX_OK);
  AxCodecCtx ctx = ctx_of(0);
  AxColl *ops[4] = {NULL};
  mt_run_begin("four operations in flight");
  rc = ax_casync_allreduce_start(&ops[0], g_comm, &cc, ef, AX_CASYNC_RING, st[0], &ctx, x[0], n,
                                 NULL);
  if (rc == AX_OK)
    rc = ax_casync_allreduce_start(&ops[1], g_comm, &cc, ef, AX_CASYNC_PS, st[1], &ctx, x[1], n,
                                   NULL);
  if (rc == AX_OK)
    rc = ax_casync_allreduce_start(&ops[2], g_comm, &cc, id, AX_CASYNC_PS, st[2], &ctx, x[2], n,
                                   NULL);
  if (rc == AX_OK)
    rc = ax_allreduce_start(&ops[3], g_comm, &cc, x[3], n, AX_COMM_F32, AX_ALLREDUCE_RING, NULL);
  float scratch[4096];
  for (int i = 0; i < 4096; i++) scratch[i] = (float)i;
  volatile double sink = 0;
  int pending = 4;
  while (rc == AX_OK && pending > 0) {
    pending = 0;
    for (int i = 0; i < 4 && rc == AX_OK; i++) {
      int done = 0;
      rc = ax_coll_test(ops[i], &done);
      pending += !done;
      sink += other_work(scratch, 4096);
    }
    if (pending) ax_coll_pause(ops[0], 0);
  }
  for (int i = 0; i < 4 && rc == AX_OK; i++) rc = ax_coll_wait(ops[i]); /* already done */
  mt_run_end();
  (void)sink;
  mt_expect(rc == AX_OK, "four in flight: %s", ax_error_message());
  for (int i = 0; i < 4; i++) {
    ax_coll_free(ops[i]);
    size_t bad = mt_first_difference(x[i], ref[i], n);
    mt_expect(bad == n, "operation %d in flight with others: element %zu differs", i, bad);
    free(x[i]);
    free(ref[i]);
  }
  for (int i = 0; i < 3; i++) ax_casync_state_free(st[i]);
  ax_codec_free(ef);
  ax_codec_free(id);
  mt_assert_all_ok("CaSync operations in flight together");
}
END_TEST

/* ------------------------------------------------------------------ arguments */

START_TEST(names_and_bad_arguments) {
  for (int a = AX_CASYNC_RING; a <= AX_CASYNC_AG; a++) {
    AxCasyncAlgo got;
    ck_assert_int_eq(ax_casync_algo_parse(ax_casync_algo_name((AxCasyncAlgo)a), &got), AX_OK);
    ck_assert_int_eq(got, a);
  }
  AxCasyncAlgo got;
  ck_assert_int_eq(ax_casync_algo_parse("tree", &got), AX_ERR);
  ck_assert_ptr_nonnull(strstr(ax_error_message(), "'tree'"));
  ax_error_clear();

  AxCodec *c = codec("onebit");
  AxCommConfig cc = tuned(4096, 2), other = tuned(8192, 2);
  AxCasyncState *st = NULL;
  ck_assert_int_eq(ax_casync_state_new(c, 100, mt_size, &cc, &st), AX_OK);
  float x[100];
  for (int i = 0; i < 100; i++) x[i] = 0.25f * (float)i - 3.0f;
  float before[100];
  memcpy(before, x, sizeof x);
  AxColl *op = (AxColl *)&got;
  /* a state laid out for another count or other pieces */
  ck_assert_int_eq(ax_casync_allreduce_start(&op, g_comm, &cc, c, AX_CASYNC_RING, st, NULL, x, 99,
                                             NULL), AX_ERR);
  ck_assert_ptr_null(op);
  ax_error_clear();
  if (mt_size > 1) {
    ck_assert_int_eq(ax_casync_allreduce(g_comm, &other, c, AX_CASYNC_RING, st, NULL, x, 100,
                                         NULL), AX_ERR);
    ax_error_clear();
  }
  ck_assert_int_eq(ax_casync_allreduce(g_comm, &cc, c, (AxCasyncAlgo)9, st, NULL, x, 100, NULL),
                   AX_ERR);
  ck_assert_int_eq(ax_casync_allreduce(g_comm, &cc, c, AX_CASYNC_RING, NULL, NULL, x, 100, NULL),
                   AX_ERR);
  ck_assert_int_eq(ax_casync_allreduce(g_comm, &cc, c, AX_CASYNC_RING, st, NULL, NULL, 100, NULL),
                   AX_ERR);
  ax_error_clear();
  ck_assert_int_eq(memcmp(x, before, sizeof x), 0); /* nothing ran */
  /* a NULL context is all zeros; one rank leaves the values as they are */
  ck_assert_msg(ax_casync_allreduce(g_comm, &cc, c, AX_CASYNC_PS, st, NULL, x, 100, NULL) ==
                    AX_OK,
                "%s", ax_error_message());
  if (mt_size == 1) ck_assert_int_eq(memcmp(x, before, sizeof x), 0);
  /* a state in use by an unfinished operation is refused, before it takes a tag: rank 0 tries
   * while its operation cannot have finished (the others start theirs after the barrier) */
  if (mt_size > 1) {
    AxCodecCtx ctx = ctx_of(0);
    int rc = AX_OK;
    if (mt_rank == 0) {
      rc = ax_casync_allreduce_start(&op, g_comm, &cc, c, AX_CASYNC_RING, st, &ctx, x, 100,
                                     NULL);
      AxColl *again = NULL;
      int busy = ax_casync_allreduce_start(&again, g_comm, &cc, c, AX_CASYNC_RING, st, &ctx, x,
                                           100, NULL);
      mt_expect(busy == AX_ERR && again == NULL, "a busy state was accepted");
      mt_expect(strstr(ax_error_message(), "in use") != NULL, "busy: %s", ax_error_message());
      ax_error_clear();
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (mt_rank != 0)
      rc = ax_casync_allreduce_start(&op, g_comm, &cc, c, AX_CASYNC_RING, st, &ctx, x, 100,
                                     NULL);
    if (rc == AX_OK) rc = ax_coll_wait(op);
    ax_coll_free(op);
    mt_expect(rc == AX_OK, "after the busy state: %s", ax_error_message());
  }
  mt_assert_all_ok("bad arguments");
  ax_casync_state_free(st);
  ax_casync_state_free(NULL);
  ax_coll_free(NULL);
  ax_codec_free(c);
}
END_TEST

/* ------------------------------------------------------------------ start-up probes */

/* The same double on every rank of the world. */
static int same_everywhere(double v) {
  double lo = v, hi = v;
  MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return lo == hi;
}

/* The probes the trainer runs at start-up under --compress auto: CaSync under ring, PS and
 * all-gather timed side by side with the plain all-reduce (seven sizes each, positive, the
 * same figures on every rank), and the share of its latency a queued operation pays (in [0, 1],
 * the same on every rank; 0 on one rank, which sends nothing); a probe of no algorithm or of
 * more than it holds is refused. */
START_TEST(startup_probes_agree_on_every_rank) {
  AxCodec *c = codec("onebit:ef=1");
  const AxCasyncAlgo algos[AX_PROBE_ALGOS] = {AX_CASYNC_RING, AX_CASYNC_PS, AX_CASYNC_AG};
  AxLinearCost plain;
  AxSizedTimes plain_at, casync[AX_PROBE_ALGOS];
  int rc = ax_casync_measure_paths(g_comm, &g_cc, AX_ALLREDUCE_RING, c, algos, AX_PROBE_ALGOS,
                                   2, &plain, &plain_at, casync);
  mt_expect(rc == AX_OK, "measure_paths: %s", ax_error_message());
  int want = mt_size > 1 ? AX_PROBE_SIZES : 0;
  mt_expect(plain_at.n == want, "plain: %d points, expected %d", plain_at.n, want);
  for (int a = 0; a < AX_PROBE_ALGOS && rc == AX_OK; a++) {
    mt_expect(casync[a].n == want, "%s: %d points, expected %d", ax_casync_algo_name(algos[a]),
              casync[a].n, want);
    for (int i = 0; i < casync[a].n; i++) {
      mt_expect(casync[a].bytes[i] == 1024.0 * pow(4, i), "%s: size %d is %g bytes",
                ax_casync_algo_name(algos[a]), i, casync[a].bytes[i]);
      mt_expect(casync[a].seconds[i] > 0 && same_everywhere(casync[a].seconds[i]),
                "%s at %g bytes: %g s, not positive or not the same on every rank",
                ax_casync_algo_name(algos[a]), casync[a].bytes[i], casync[a].seconds[i]);
    }
  }
  double paid = -1;
  rc = ax_casync_measure_overlap(g_comm, &g_cc, AX_ALLREDUCE_RING, 3, &paid);
  mt_expect(rc == AX_OK, "measure_overlap: %s", ax_error_message());
  mt_expect(paid >= 0 && paid <= 1 && same_everywhere(paid), "a queued operation pays %g", paid);
  if (mt_size == 1) mt_expect(paid == 0, "one rank pays %g", paid);
  for (int n = 0; n <= AX_PROBE_ALGOS + 1; n += AX_PROBE_ALGOS + 1) {
    rc = ax_casync_measure_paths(g_comm, &g_cc, AX_ALLREDUCE_RING, c, algos, n, 2, &plain,
                                 &plain_at, casync);
    mt_expect(rc == AX_ERR && strstr(ax_error_message(), "algorithms, expected 1 to"),
              "%d algorithms: %s", n, ax_error_message());
    ax_error_clear();
  }
  mt_assert_all_ok("start-up probes");
  ax_codec_free(c);
}
END_TEST

static Suite *casync_suite(void) {
  Suite *s = suite_create("casync");
  TCase *tc = tu_tcase(s, "casync", 600);
  tcase_add_test(tc, names_and_bad_arguments);
  tcase_add_test(tc, identity_matches_the_plain_ring);
  tcase_add_test(tc, every_codec_leaves_identical_replicas);
  tcase_add_test(tc, onebit_and_dgc_match_a_replay_of_the_algorithm);
  tcase_add_test(tc, linear_codecs_match_their_rounds_by_hand);
  tcase_add_test(tc, wire_bytes_follow_the_codec_ratio);
  tcase_add_test(tc, k_partitions_run_as_chosen);
  tcase_add_test(tc, state_persists_across_calls);
  tcase_add_test(tc, momentum_handed_over_lands_on_its_values);
  tcase_add_test(tc, an_emulated_link_changes_nothing_but_time);
  tcase_add_test(tc, operations_in_flight_together);
  tcase_add_test(tc, startup_probes_agree_on_every_rank);
  return s;
}

int main(int argc, char **argv) {
  mt_init(&argc, &argv);
  g_cc = mt_comm_config();
  MPI_Comm_dup(MPI_COMM_WORLD, &g_comm);
  int rc = mt_run_watched(casync_suite(), RUN_TIMEOUT_S);
  MPI_Comm_free(&g_comm);
  return mt_finish(rc);
}
