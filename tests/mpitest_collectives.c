/* mpitest_collectives.c — the collectives of mpi/coll/collectives.h against MPI's own
 * (MPI_Allreduce, MPI_Reduce_scatter_block, MPI_Allgather) on whatever number of ranks it runs
 * on, with integer-valued data (fp32, bf16, and fp16 with the default chunks) so that every
 * algorithm must agree exactly; byte counters against the ring's formula; several operations
 * in flight at once; the local reductions and bf16 rounding against scalar references.
 * Every rank checks its own results and prints what failed with its rank; then all ranks agree
 * on pass/fail (so none is left waiting in a collective when another one fails). */
#include <check.h>
#include <mpi.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/coll/collectives.h"
#include "mpi/mpi_util.h"
#include "mpi/coll/reduce_local.h"
#include "src/core/error.h"
#include "src/core/rng.h"
#include "src/core/spare_buffers.h"
#include "mpitestutil.h"
#include "testutil.h"


static MPI_Comm g_comm; /* a duplicate of MPI_COMM_WORLD for our collectives */
static AxCommConfig g_cc; /* what every operation is started with: chunking, polite waiting */

/* The chunking of the operations started from now on (0, 0: the defaults). */
static void set_tuning(size_t chunk_bytes, int window) {
  g_cc.chunk_bytes = chunk_bytes;
  g_cc.window = window;
}
static const AxAllreduceAlgo ALGOS[] = {AX_ALLREDUCE_MPI, AX_ALLREDUCE_RING, AX_ALLREDUCE_RHD,
                                        AX_ALLREDUCE_AUTO};
enum { N_ALGOS = sizeof ALGOS / sizeof ALGOS[0] };

static size_t esz(AxCommType t) { return t == AX_COMM_F32 ? sizeof(float) : sizeof(uint16_t); }
static const char *type_name(AxCommType t) {
  return t == AX_COMM_F32 ? "f32" : t == AX_COMM_BF16 ? "bf16" : "fp16";
}

/* Small integers that depend on the element, the rank and a salt: sums over 4 ranks stay
 * exact in bf16 and fp16 (|sum| <= 36 < 256). */
static float value(size_t i, int rank, int salt) {
  return (float)((int)((i * 7 + (size_t)rank * 13 + (size_t)salt * 5) % 19) - 9);
}

static void fill(AxCommType t, void *buf, size_t n, int rank, int salt) {
  for (size_t i = 0; i < n; i++) {
    if (t == AX_COMM_F32)
      ((float *)buf)[i] = value(i, rank, salt);
    else if (t == AX_COMM_BF16)
      ((uint16_t *)buf)[i] = ax_f32_to_bf16(value(i, rank, salt));
    else
      ((uint16_t *)buf)[i] = ax_f32_to_f16(value(i, rank, salt));
  }
}

static float get(AxCommType t, const void *buf, size_t i) {
  if (t == AX_COMM_F32) return ((const float *)buf)[i];
  const uint16_t h = ((const uint16_t *)buf)[i];
  return t == AX_COMM_BF16 ? ax_bf16_to_f32(h) : ax_f16_to_f32(h);
}

/* Index of the first element where got differs from the fp32 reference, n if none. */
static size_t first_mismatch(AxCommType t, const void *got, const float *ref, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (get(t, got, i) != ref[i]) return i;
  return n;
}

/* n floats uniform in [-scale, scale] from seed (malloc'd; the caller frees). */
static float *random_floats(size_t n, float scale, uint64_t seed) {
  float *x = mt_xmalloc(n * sizeof *x);
  AxRng r;
  ax_rng_seed(&r, seed);
  for (size_t i = 0; i < n; i++) x[i] = scale * (2.0f * ax_rng_float(&r) - 1.0f);
  return x;
}

/* ------------------------------------------------------------------ all-reduce */

static void check_allreduce(AxAllreduceAlgo algo, AxCommType t, size_t n, int salt,
                            const char *tuning) {
  void *buf = mt_xmalloc(n * esz(t));
  float *ref = mt_xmalloc(n * sizeof *ref);
  fill(t, buf, n, mt_rank, salt);
  for (size_t i = 0; i < n; i++) ref[i] = value(i, mt_rank, salt);
  MPI_Allreduce(MPI_IN_PLACE, ref, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  AxCommBytes bytes = {0, 0};
  int rc = ax_allreduce(g_comm, &g_cc, buf, n, t, algo, &bytes);
  mt_expect(rc == AX_OK, "allreduce %s %s n=%zu (%s): %s", ax_allreduce_algo_name(algo),
         type_name(t), n, tuning, ax_error_message());
  size_t bad = first_mismatch(t, buf, ref, n);
  mt_expect(bad == n, "allreduce %s %s n=%zu (%s): element %zu is %g, MPI_Allreduce gives %g",
         ax_allreduce_algo_name(algo), type_name(t), n, tuning, bad,
         bad < n ? get(t, buf, bad) : 0.0, bad < n ? ref[bad] : 0.0);
  /* whatever the algorithm, the ranks together receive what they send */
  unsigned long long mine[2] = {bytes.sent, bytes.received}, all[2];
  MPI_Allreduce(mine, all, 2, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  mt_expect(all[0] == all[1], "allreduce %s %s n=%zu: ranks sent %llu bytes but received %llu",
         ax_allreduce_algo_name(algo), type_name(t), n, all[0], all[1]);
  free(buf);
  free(ref);
}

static size_t g_counts[16];
static int n_counts(void) {
  const size_t fixed[] = {0, 1, 2, 3, 7, 1000, 65537};
  int k = 0;
  for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) g_counts[k++] = fixed[i];
  g_counts[k++] = (size_t)mt_size - 1;
  g_counts[k++] = (size_t)mt_size + 1;
  return k;
}

typedef struct {
  size_t chunk_bytes;
  int window;
  const char *name;
} Tuning;
/* the default, then chunks small enough that mid-size messages take many of them, with the
 * tightest window (one chunk in flight) and an odd chunk size */
static const Tuning TUNINGS[] = {{0, 0, "default chunks"},
                                 {1000, 1, "1000-byte chunks, window 1"},
                                 {4098, 3, "4098-byte chunks, window 3"}};

START_TEST(allreduce_matches_mpi) {
  int nc = n_counts();
  for (size_t u = 0; u < sizeof TUNINGS / sizeof TUNINGS[0]; u++) {
    set_tuning(TUNINGS[u].chunk_bytes, TUNINGS[u].window);
    for (int a = 0; a < N_ALGOS; a++)
      for (int c = 0; c < nc; c++) {
        check_allreduce(ALGOS[a], AX_COMM_F32, g_counts[c], c, TUNINGS[u].name);
        check_allreduce(ALGOS[a], AX_COMM_BF16, g_counts[c], c + 1, TUNINGS[u].name);
        if (u == 0) /* fp16 (tensor parallelism's payloads) shares the 16-bit paths */
          check_allreduce(ALGOS[a], AX_COMM_F16, g_counts[c], c + 2, TUNINGS[u].name);
      }
  }
  set_tuning(0, 0);
  mt_assert_all_ok("all-reduce against MPI_Allreduce");
}
END_TEST

START_TEST(allreduce_large_matches_mpi) {
  const size_t n = ((size_t)3 << 20) + 3; /* ~3M elements, not divisible by 2, 3 or 4 */
  for (int a = 0; a < N_ALGOS; a++) check_allreduce(ALGOS[a], AX_COMM_F32, n, 3, "default");
  check_allreduce(AX_ALLREDUCE_RING, AX_COMM_BF16, n, 4, "default");
  mt_assert_all_ok("large all-reduce against MPI_Allreduce");
}
END_TEST

/* ------------------------------------------------------------------ receive slots kept */

/* The ring's receive slots go back to the keep (src/core/spare_buffers.h) when an operation is
 * freed and the next operation of that size takes them again: after two all-reduces one
 * after the other, the keep holds exactly one buffer (none when the slots were freed, two
 * when the second did not reuse the first's). One rank has no slots. */
START_TEST(ring_slots_are_kept_and_reused) {
  const size_t n = (size_t)1 << 20;
  float *buf = mt_xmalloc(n * sizeof *buf);
  fill(AX_COMM_F32, buf, n, mt_rank, 0);
  ax_spare_release_all(); /* what earlier tests left */
  for (int i = 0; i < 2; i++)
    mt_expect(ax_allreduce(g_comm, &g_cc, buf, n, AX_COMM_F32, AX_ALLREDUCE_RING, NULL) == AX_OK,
              "ring all-reduce %d: %s", i, ax_error_message());
  int kept = ax_spare_release_all(), want = mt_size > 1;
  mt_expect(kept == want, "after two ring all-reduces the keep held %d buffer(s), expected %d",
            kept, want);
  free(buf);
  mt_assert_all_ok("the ring's receive slots kept and reused");
}
END_TEST

/* ------------------------------------------------------------------ byte counters */

static size_t segment(size_t n, int b) {
  b = ((b % mt_size) + mt_size) % mt_size;
  return n / (size_t)mt_size + ((size_t)b < n % (size_t)mt_size ? 1 : 0);
}

static void check_ring_bytes(AxCommType t, size_t n) {
  void *buf = mt_xmalloc(n * esz(t));
  fill(t, buf, n, mt_rank, 0);
  AxCommBytes bytes = {5, 7}; /* operations add to what is there */
  mt_expect(ax_allreduce(g_comm, &g_cc, buf, n, t, AX_ALLREDUCE_RING, &bytes) == AX_OK,
         "ring bytes n=%zu: %s", n, ax_error_message());
  unsigned long long sent = 0, received = 0, e = esz(t), p = (unsigned long long)mt_size;
  if (mt_size > 1 && n % (size_t)mt_size == 0) {
    sent = received = 2 * (p - 1) * (n / p) * e; /* 2(p-1)/p · n · elem_size */
  } else if (mt_size > 1) {
    /* reduce-scatter sends all segments but r+1 and receives all but r; all-gather sends
     * all but r+2 and receives all but r+1 */
    sent = (2 * n - segment(n, mt_rank + 1) - segment(n, mt_rank + 2)) * e;
    received = (2 * n - segment(n, mt_rank) - segment(n, mt_rank + 1)) * e;
  }
  mt_expect(bytes.sent == sent + 5 && bytes.received == received + 7,
         "ring %s n=%zu: counted sent %llu received %llu, expected %llu and %llu", type_name(t),
         n, bytes.sent - 5, bytes.received - 7, sent, received);
  free(buf);
}

static void check_rs_ag_bytes(AxCommType t, size_t m) {
  size_t p = (size_t)mt_size, e = esz(t);
  void *in = mt_xmalloc(p * m * e), *out = mt_xmalloc(p * m * e);
  fill(t, in, p * m, mt_rank, 0);
  AxCommBytes rs = {0, 0}, ag = {0, 0};
  AxColl *op = NULL;
  mt_expect(ax_reduce_scatter_start(&op, g_comm, &g_cc, in, out, m, t, &rs) == AX_OK &&
             ax_coll_wait(op) == AX_OK, "reduce-scatter bytes: %s", ax_error_message());
  ax_coll_free(op);
  mt_expect(ax_allgather_start(&op, g_comm, &g_cc, in, out, m, t, &ag) == AX_OK &&
             ax_coll_wait(op) == AX_OK, "all-gather bytes: %s", ax_error_message());
  ax_coll_free(op);
  unsigned long long want = (unsigned long long)((p - 1) * m * e);
  mt_expect(rs.sent == want && rs.received == want,
         "reduce-scatter %s m=%zu: sent %llu received %llu, expected (p-1)·m·e = %llu",
         type_name(t), m, rs.sent, rs.received, want);
  mt_expect(ag.sent == want && ag.received == want,
         "all-gather %s m=%zu: sent %llu received %llu, expected (p-1)·m·e = %llu", type_name(t),
         m, ag.sent, ag.received, want);
  free(in);
  free(out);
}

START_TEST(byte_counters_follow_the_ring_formula) {
  size_t p = (size_t)mt_size;
  const size_t counts[] = {1000 * p, 1000 * p + 1, 7, 1, 3 * p + 2};
  for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
    check_ring_bytes(AX_COMM_F32, counts[i]);
    check_ring_bytes(AX_COMM_BF16, counts[i]);
  }
  check_rs_ag_bytes(AX_COMM_F32, 1001);
  check_rs_ag_bytes(AX_COMM_BF16, 3);
  /* recursive halving/doubling on 2^k ranks is bandwidth-optimal too */
  if ((mt_size & (mt_size - 1)) == 0) {
    size_t n = 1024 * p;
    float *buf = mt_xmalloc(n * sizeof *buf);
    fill(AX_COMM_F32, buf, n, mt_rank, 0);
    AxCommBytes b = {0, 0};
    mt_expect(ax_allreduce(g_comm, &g_cc, buf, n, AX_COMM_F32, AX_ALLREDUCE_RHD, &b) == AX_OK, "rhd: %s",
           ax_error_message());
    unsigned long long want = 2 * (p - 1) * (n / p) * sizeof(float);
    mt_expect(b.sent == want && b.received == want, "rhd n=%zu: sent %llu received %llu, want %llu",
           n, b.sent, b.received, want);
    free(buf);
  }
  mt_assert_all_ok("byte counters");
}
END_TEST

/* ------------------------------------------------------------------ reduce-scatter, all-gather */

static void check_reduce_scatter(AxCommType t, size_t m, const char *tuning) {
  size_t p = (size_t)mt_size, e = esz(t);
  void *in = mt_xmalloc(p * m * e), *out = mt_xmalloc(m * e);
  float *in_ref = mt_xmalloc(p * m * sizeof(float)), *ref = mt_xmalloc(m * sizeof(float));
  fill(t, in, p * m, mt_rank, (int)m);
  for (size_t i = 0; i < p * m; i++) in_ref[i] = value(i, mt_rank, (int)m);
  MPI_Reduce_scatter_block(in_ref, ref, (int)m, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  AxColl *op = NULL;
  int rc = ax_reduce_scatter_start(&op, g_comm, &g_cc, in, out, m, t, NULL);
  if (rc == AX_OK) rc = ax_coll_wait(op);
  ax_coll_free(op);
  mt_expect(rc == AX_OK, "reduce-scatter %s m=%zu (%s): %s", type_name(t), m, tuning,
         ax_error_message());
  size_t bad = first_mismatch(t, out, ref, m);
  mt_expect(bad == m,
         "reduce-scatter %s m=%zu (%s): element %zu is %g, MPI_Reduce_scatter_block gives %g",
         type_name(t), m, tuning, bad, bad < m ? get(t, out, bad) : 0.0, bad < m ? ref[bad] : 0.0);
  free(in), free(out), free(in_ref), free(ref);
}

static void check_allgather(AxCommType t, size_t m, int in_place, const char *tuning) {
  size_t p = (size_t)mt_size, e = esz(t);
  char *out = mt_xmalloc(p * m * e), *in = in_place ? out + (size_t)mt_rank * m * e : mt_xmalloc(m * e);
  float *in_ref = mt_xmalloc(m * sizeof(float)), *ref = mt_xmalloc(p * m * sizeof(float));
  fill(t, in, m, mt_rank, (int)m);
  for (size_t i = 0; i < m; i++) in_ref[i] = value(i, mt_rank, (int)m);
  MPI_Allgather(in_ref, (int)m, MPI_FLOAT, ref, (int)m, MPI_FLOAT, MPI_COMM_WORLD);
  AxColl *op = NULL;
  int rc = ax_allgather_start(&op, g_comm, &g_cc, in, out, m, t, NULL);
  if (rc == AX_OK) rc = ax_coll_wait(op);
  ax_coll_free(op);
  mt_expect(rc == AX_OK, "all-gather %s m=%zu%s (%s): %s", type_name(t), m,
         in_place ? " in place" : "", tuning, ax_error_message());
  size_t bad = first_mismatch(t, out, ref, p * m);
  mt_expect(bad == p * m, "all-gather %s m=%zu%s (%s): element %zu is %g, MPI_Allgather gives %g",
         type_name(t), m, in_place ? " in place" : "", tuning, bad,
         bad < p * m ? get(t, out, bad) : 0.0, bad < p * m ? ref[bad] : 0.0);
  if (!in_place) free(in);
  free(out), free(in_ref), free(ref);
}

START_TEST(reduce_scatter_and_allgather_match_mpi) {
  const size_t counts[] = {0, 1, 2, 3, 7, 1000, 65537};
  for (size_t u = 0; u < sizeof TUNINGS / sizeof TUNINGS[0]; u++) {
    set_tuning(TUNINGS[u].chunk_bytes, TUNINGS[u].window);
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++)
      for (int t = AX_COMM_F32; t <= AX_COMM_BF16; t++) {
        check_reduce_scatter((AxCommType)t, counts[c], TUNINGS[u].name);
        check_allgather((AxCommType)t, counts[c], 0, TUNINGS[u].name);
        check_allgather((AxCommType)t, counts[c], 1, TUNINGS[u].name);
      }
  }
  set_tuning(0, 0);
  check_reduce_scatter(AX_COMM_F32, 800 * 1000 + 1, "default"); /* several MB in all */
  check_allgather(AX_COMM_F32, 800 * 1000 + 1, 0, "default");
  mt_assert_all_ok("reduce-scatter / all-gather against MPI");
}
END_TEST

/* ------------------------------------------------------------------ several in flight */

/* Stands in for the optimizer's work between progress calls. */
static double other_work(float *x, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; i++) s += x[i] * 0.5;
  return s;
}

START_TEST(several_operations_in_flight) {
  const size_t n_ring = 200003, n_rhd = 1001, n_mpi = 5000, m = 30001;
  size_t p = (size_t)mt_size;
  float *a = mt_xmalloc(n_ring * 4), *b = mt_xmalloc(n_rhd * 4), *c = mt_xmalloc(n_mpi * 4);
  float *rs_in = mt_xmalloc(p * m * 4), *rs_out = mt_xmalloc(m * 4), *ag_out = mt_xmalloc(p * m * 4);
  uint16_t *h = mt_xmalloc(n_ring * 2);
  float *scratch = mt_xmalloc(4096 * 4);
  fill(AX_COMM_F32, a, n_ring, mt_rank, 1);
  fill(AX_COMM_F32, b, n_rhd, mt_rank, 2);
  fill(AX_COMM_F32, c, n_mpi, mt_rank, 3);
  fill(AX_COMM_F32, rs_in, p * m, mt_rank, 4);
  fill(AX_COMM_BF16, h, n_ring, mt_rank, 5);
  fill(AX_COMM_F32, scratch, 4096, mt_rank, 6);
  set_tuning(16 * 1024, 2); /* many chunks each, so they really interleave */
  AxColl *ops[6] = {NULL};
  AxCommBytes bytes = {0, 0};
  int rc = ax_allreduce_start(&ops[0], g_comm, &g_cc, a, n_ring, AX_COMM_F32, AX_ALLREDUCE_RING, &bytes);
  if (rc == AX_OK)
    rc = ax_allreduce_start(&ops[1], g_comm, &g_cc, b, n_rhd, AX_COMM_F32, AX_ALLREDUCE_RHD, &bytes);
  if (rc == AX_OK)
    rc = ax_allreduce_start(&ops[2], g_comm, &g_cc, c, n_mpi, AX_COMM_F32, AX_ALLREDUCE_MPI, &bytes);
  if (rc == AX_OK)
    rc = ax_reduce_scatter_start(&ops[3], g_comm, &g_cc, rs_in, rs_out, m, AX_COMM_F32, &bytes);
  if (rc == AX_OK)
    rc = ax_allgather_start(&ops[4], g_comm, &g_cc, rs_in, ag_out, m, AX_COMM_F32, &bytes);
  if (rc == AX_OK)
    rc = ax_allreduce_start(&ops[5], g_comm, &g_cc, h, n_ring, AX_COMM_BF16, AX_ALLREDUCE_RING, &bytes);
  set_tuning(0, 0);
  mt_expect(rc == AX_OK, "starting 6 operations: %s", ax_error_message());
  /* progress them round-robin with other work in between, then wait for the stragglers */
  int pending = 6, rounds = 0;
  volatile double sink = 0;
  while (rc == AX_OK && pending > 0 && rounds < 100000) {
    pending = 0;
    for (int i = 0; i < 6 && rc == AX_OK; i++) {
      int done = 0;
      rc = ax_coll_test(ops[i], &done);
      pending += !done;
      sink += other_work(scratch, 4096);
    }
    rounds++;
  }
  for (int i = 0; i < 6 && rc == AX_OK; i++) rc = ax_coll_wait(ops[i]);
  mt_expect(rc == AX_OK, "progressing 6 operations: %s", ax_error_message());
  for (int i = 0; i < 6; i++) ax_coll_free(ops[i]);
  (void)sink;

  float *ref = mt_xmalloc(p * m * 4);
  const struct {
    const char *what;
    AxCommType t;
    const void *got;
    size_t n;
    int salt;
  } ar[] = {{"ring", AX_COMM_F32, a, n_ring, 1}, {"rhd", AX_COMM_F32, b, n_rhd, 2},
            {"mpi", AX_COMM_F32, c, n_mpi, 3}, {"ring bf16", AX_COMM_BF16, h, n_ring, 5}};
  float *big = mt_xmalloc(n_ring * 4);
  for (size_t k = 0; k < sizeof ar / sizeof ar[0]; k++) {
    for (size_t i = 0; i < ar[k].n; i++) big[i] = value(i, mt_rank, ar[k].salt);
    MPI_Allreduce(MPI_IN_PLACE, big, (int)ar[k].n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    size_t bad = first_mismatch(ar[k].t, ar[k].got, big, ar[k].n);
    mt_expect(bad == ar[k].n, "in flight together: all-reduce %s differs at element %zu",
           ar[k].what, bad);
  }
  MPI_Reduce_scatter_block(rs_in, ref, (int)m, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  mt_expect(first_mismatch(AX_COMM_F32, rs_out, ref, m) == m, "in flight together: reduce-scatter");
  MPI_Allgather(rs_in, (int)m, MPI_FLOAT, ref, (int)m, MPI_FLOAT, MPI_COMM_WORLD);
  mt_expect(first_mismatch(AX_COMM_F32, ag_out, ref, p * m) == p * m,
         "in flight together: all-gather");
  free(a), free(b), free(c), free(rs_in), free(rs_out), free(ag_out), free(h), free(scratch);
  free(ref), free(big);
  mt_assert_all_ok("several operations in flight");
}
END_TEST

/* ------------------------------------------------------------------ names and choice */

START_TEST(algorithm_names_parse_and_choice) {
  for (int a = AX_ALLREDUCE_AUTO; a <= AX_ALLREDUCE_RHD; a++) {
    AxAllreduceAlgo got;
    ck_assert_int_eq(ax_allreduce_algo_parse(ax_allreduce_algo_name((AxAllreduceAlgo)a), &got),
                     AX_OK);
    ck_assert_int_eq(got, a);
  }
  AxAllreduceAlgo got;
  ax_error_clear();
  ck_assert_int_eq(ax_allreduce_algo_parse("tree", &got), AX_ERR);
  ck_assert_ptr_nonnull(strstr(ax_error_text(), "'tree'"));
  ax_error_clear();
  const size_t sizes[] = {0, 4, 4096, 65536, 1 << 20, (size_t)64 << 20};
  for (int p = 1; p <= 64; p++)
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
      AxAllreduceAlgo c = ax_allreduce_choose(sizes[i], p);
      ck_assert(c == AX_ALLREDUCE_MPI || c == AX_ALLREDUCE_RING || c == AX_ALLREDUCE_RHD);
    }
  /* bad arguments are errors, with nothing started */
  AxColl *op = (AxColl *)&got;
  float x = 1;
  ck_assert_int_eq(ax_allreduce_start(&op, g_comm, &g_cc, &x, 1, (AxCommType)7, AX_ALLREDUCE_RING,
                                      NULL), AX_ERR);
  ck_assert_ptr_null(op);
  ax_error_clear();
  ck_assert_int_eq(ax_allreduce_start(&op, g_comm, &g_cc, NULL, 5, AX_COMM_F32, AX_ALLREDUCE_RING,
                                      NULL), AX_ERR);
  ax_error_clear();
  ax_coll_free(NULL);
}
END_TEST

/* ------------------------------------------------------------------ local reductions, bf16 */

/* Round to nearest even, written differently from the library: truncate, then look at the
 * dropped half-word. */
static uint16_t bf16_reference(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu)) return (uint16_t)(u >> 16 | 0x40);
  uint32_t kept = u >> 16, dropped = u & 0xffffu;
  if (dropped > 0x8000u || (dropped == 0x8000u && (kept & 1u))) kept++;
  return (uint16_t)kept;
}

static float from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

START_TEST(bf16_rounds_to_nearest_even) {
  const struct {
    uint32_t in;
    uint16_t out;
  } cases[] = {
      {0x3f800000u, 0x3f80}, /* 1.0 */
      {0x3f808000u, 0x3f80}, /* halfway, even below: stays */
      {0x3f818000u, 0x3f82}, /* halfway, odd below: up to even */
      {0x3f808001u, 0x3f81}, /* just above halfway */
      {0x3f807fffu, 0x3f80}, /* just below halfway */
      {0xbf818000u, 0xbf82}, /* negative halfway */
      {0x7f7fffffu, 0x7f80}, /* FLT_MAX rounds to infinity */
      {0x7f800000u, 0x7f80}, /* +inf */
      {0xff800000u, 0xff80}, /* -inf */
      {0x7fc00000u, 0x7fc0}, /* quiet NaN */
      {0x7f800001u, 0x7fc0}, /* signalling NaN whose payload is all dropped: still NaN */
      {0xffc00001u, 0xffc0}, /* negative NaN */
      {0x00000000u, 0x0000}, {0x80000000u, 0x8000}, /* signed zeros */
      {0x00008000u, 0x0000}, /* subnormal halfway to 0x0001: to even (0) */
      {0x00018000u, 0x0002}, /* subnormal halfway to 0x0002 */
  };
  const size_t n = sizeof cases / sizeof cases[0];
  float in[64];
  uint16_t out[64];
  for (size_t i = 0; i < n; i++) {
    float f = from_bits(cases[i].in);
    ck_assert_msg(ax_f32_to_bf16(f) == cases[i].out, "0x%08x -> 0x%04x, expected 0x%04x",
                  cases[i].in, ax_f32_to_bf16(f), cases[i].out);
    in[i] = f;
  }
  /* the array version (vector paths and tail) agrees, on these and on random values */
  float *r = random_floats(64 - n, 1000.0f, 11);
  memcpy(in + n, r, (64 - n) * sizeof(float));
  free(r);
  ax_f32_to_bf16_array(out, in, 64);
  for (size_t i = 0; i < 64; i++) {
    ck_assert_msg(out[i] == bf16_reference(in[i]), "array element %zu: 0x%04x vs 0x%04x", i,
                  out[i], bf16_reference(in[i]));
    ck_assert_msg(out[i] == ax_f32_to_bf16(in[i]), "array element %zu differs from scalar", i);
  }
  /* bf16 -> fp32 is exact, and round-trips */
  float back[64];
  ax_bf16_to_f32_array(back, out, 64);
  for (size_t i = 0; i < 64; i++) {
    uint32_t bits;
    memcpy(&bits, &back[i], 4);
    ck_assert_uint_eq(bits, (uint32_t)out[i] << 16);
    ck_assert_uint_eq(ax_f32_to_bf16(back[i]), out[i]);
    ck_assert_uint_eq(bits, (uint32_t)out[i] << 16);
  }
  ck_assert(ax_bf16_to_f32(0x3f80) == 1.0f && ax_bf16_to_f32(0xc000) == -2.0f);
}
END_TEST

START_TEST(local_reductions_match_scalar_loops) {
  const size_t big = 1000;
  float *a = random_floats(big + 1, 100.0f, 1), *b = random_floats(big + 1, 100.0f, 2);
  float *d = mt_xmalloc((big + 1) * 4);
  uint16_t *ha = mt_xmalloc((big + 1) * 2), *hb = mt_xmalloc((big + 1) * 2), *hd = mt_xmalloc((big + 1) * 2);
  ax_f32_to_bf16_array(ha, a, big + 1);
  ax_f32_to_bf16_array(hb, b, big + 1);
  for (size_t n = 0; n <= big; n = n < 80 ? n + 1 : n * 2 + 3) {
    for (size_t off = 0; off < 2; off++) { /* aligned and misaligned by one element */
      memcpy(d, a + off, n * 4);
      ax_reduce_add_f32(d, b + off, n);
      for (size_t i = 0; i < n; i++) {
        float want = a[off + i] + b[off + i];
        ck_assert_msg(memcmp(&d[i], &want, 4) == 0, "f32 add n=%zu element %zu", n, i);
      }
      ax_reduce_sum_f32(d, a + off, b + off, n);
      for (size_t i = 0; i < n; i++) ck_assert(d[i] == a[off + i] + b[off + i]);
      memcpy(hd, ha + off, n * 2);
      ax_reduce_add_bf16(hd, hb + off, n);
      for (size_t i = 0; i < n; i++) {
        uint16_t want = bf16_reference(ax_bf16_to_f32(ha[off + i]) + ax_bf16_to_f32(hb[off + i]));
        ck_assert_msg(hd[i] == want, "bf16 add n=%zu element %zu: 0x%04x vs 0x%04x", n, i,
                      hd[i], want);
      }
      ax_reduce_sum_bf16(hd, ha + off, hb + off, n);
      for (size_t i = 0; i < n; i++)
        ck_assert(hd[i] == bf16_reference(ax_bf16_to_f32(ha[off + i]) +
                                          ax_bf16_to_f32(hb[off + i])));
    }
  }
  free(a), free(b), free(d), free(ha), free(hb), free(hd);
}
END_TEST

/* One agreement: the ranks in `failing` (a bit per rank) fail with a message naming them. */
static int agree_once(const AxCommConfig *cc, unsigned failing) {
  ax_error_clear();
  int status = AX_OK;
  if (failing >> mt_rank & 1) status = AX_FAIL("boom on rank %d", mt_rank);
  return ax_mpi_agree_as(cc, g_comm, status);
}

/* ax_mpi_agree_as, busy and polite: all well is AX_OK everywhere; else every rank fails and
 * rank 0 holds the lowest failing rank's own message. */
START_TEST(agreement_forwards_the_lowest_failure) {
  AxCommConfig polite = {.polite = 1};
  const AxCommConfig *ways[2] = {NULL, &polite};
  for (int w = 0; w < 2; w++) {
    mt_expect(agree_once(ways[w], 0) == AX_OK, "way %d: nobody failed, yet not AX_OK", w);
    unsigned cases[2] = {1u, mt_size > 1 ? 6u : 1u}; /* rank 0 itself; ranks 1 and 2 */
    for (int c = 0; c < 2; c++) {
      int lowest = __builtin_ctz(cases[c]);
      int rc = agree_once(ways[w], cases[c]);
      mt_expect(rc == AX_ERR, "way %d case %d: a failure agreed as AX_OK", w, c);
      char want[64];
      snprintf(want, sizeof want, "boom on rank %d", lowest);
      if (mt_rank == 0)
        mt_expect(strstr(ax_error_message(), want) != NULL, "way %d case %d: rank 0 says '%s'",
                  w, c, ax_error_message());
      ax_error_clear();
    }
  }
  mt_assert_all_ok("agreement");
}
END_TEST

/* The ranks that share this rank's cores are those that started with its CPU set, whatever
 * binding came since: each rank here binds its thread to one CPU of its set (rank r to the
 * (r mod n)-th of n), and ax_mpi_node_ranks still finds the share it found before. Judged by
 * the binding instead, rank 1 of 2 on 2 CPUs found itself alone, and the next trainer of its
 * process bound it to the first core beside rank 0 (mpitest_tp_device on 2 ranks ran at half
 * speed). On one CPU every rank binds to it and nothing can differ. */
START_TEST(node_ranks_ignore_our_own_binding) {
  AxNodeRanks before, after;
  mt_expect(ax_mpi_node_ranks(MPI_COMM_WORLD, &before) == AX_OK, "%s", ax_error_message());
  /* (failures are noted, not asserted, until every rank is past the collective below) */
  cpu_set_t was, one;
  int got = sched_getaffinity(0, sizeof was, &was) == 0 && CPU_COUNT(&was) > 0;
  mt_expect(got, "sched_getaffinity failed or gave no CPU");
  int n = got ? CPU_COUNT(&was) : 1, want = before.local_rank % n, cpu = -1;
  for (int c = 0, seen = 0; got && c < CPU_SETSIZE && cpu < 0; c++)
    if (CPU_ISSET(c, &was) && seen++ == want) cpu = c;
  CPU_ZERO(&one);
  if (cpu >= 0) CPU_SET(cpu, &one);
  int bound = cpu >= 0 && sched_setaffinity(0, sizeof one, &one) == 0;
  mt_expect(bound, "could not bind to CPU %d", cpu);
  int rc = ax_mpi_node_ranks(MPI_COMM_WORLD, &after);
  if (bound) mt_expect(sched_setaffinity(0, sizeof was, &was) == 0, "affinity not restored");
  mt_expect(rc == AX_OK, "%s", ax_error_message());
  mt_expect(after.share_rank == before.share_rank && after.share_size == before.share_size,
            "bound to CPU %d of %d: share rank %d of %d, %d of %d before binding", cpu, n,
            after.share_rank, after.share_size, before.share_rank, before.share_size);
  mt_assert_all_ok("the ranks sharing the cores");
}
END_TEST

static Suite *collectives_suite(void) {
  Suite *s = suite_create("collectives");
  TCase *local = tu_tcase(s, "local", 60);
  tcase_add_test(local, bf16_rounds_to_nearest_even);
  tcase_add_test(local, local_reductions_match_scalar_loops);
  tcase_add_test(local, algorithm_names_parse_and_choice);
  TCase *coll = tu_tcase(s, "collectives", 120);
  tcase_add_test(coll, allreduce_matches_mpi);
  tcase_add_test(coll, allreduce_large_matches_mpi);
  tcase_add_test(coll, byte_counters_follow_the_ring_formula);
  tcase_add_test(coll, reduce_scatter_and_allgather_match_mpi);
  tcase_add_test(coll, several_operations_in_flight);
  tcase_add_test(coll, agreement_forwards_the_lowest_failure);
  tcase_add_test(coll, ring_slots_are_kept_and_reused);
  tcase_add_test(coll, node_ranks_ignore_our_own_binding);
  return s;
}

int main(int argc, char **argv) {
  mt_init(&argc, &argv);
  g_cc.polite = ax_mpi_auto_polite(MPI_COMM_WORLD);
  MPI_Comm_dup(MPI_COMM_WORLD, &g_comm);
  int rc = tu_run_nofork(collectives_suite());
  MPI_Comm_free(&g_comm);
  return mt_finish(rc);
}
