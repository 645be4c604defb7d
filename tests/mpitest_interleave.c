/* mpitest_interleave.c — the data-parallel all-reduce of the offload interleaver
 * (offload/interleave.h) with a range the caller summed already (AxReduceSpec's summed_lo/hi,
 * the fused tied embedding): on whatever number of ranks it runs on, every element outside the
 * range is the sum over the ranks and every element inside is this rank's own, for ranges at
 * the start, in the middle (cutting chunks in two), at the end, the whole and none; chunks
 * smaller and larger than the range; fp32 and bf16 on the wire; plain chunks and layer-wise
 * parts through CaSync (identity, with plain parts between); reduce only, interleaved with
 * AdamW by progress calls and by a communication thread. A compressed part the range cuts is an
 * error. Inputs are small integers, so every sum is exact in fp32 and bf16 in any order. */
#include <check.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/compress/codec.h"
#include "mpi/mpi_util.h"
#include "offload/interleave.h"
#include "src/core/error.h"
#include "mpitestutil.h"
#include "testutil.h"

enum { RUN_TIMEOUT_S = 120, N = 10007 };

static MPI_Comm g_comm;   /* a duplicate of MPI_COMM_WORLD for the operations */
static AxCommConfig g_cc; /* polite waiting where ranks outnumber cores */

typedef enum { M_REDUCE, M_CALLS, M_THREAD } Mode;
static const char *const MODE_NAMES[] = {"reduce", "calls", "thread"};

typedef struct {
  size_t bucket;    /* chunk size (coarsening 1) */
  int wire_bf16;
  int compress;     /* identity CaSync on every other part */
  Mode mode;
  size_t lo, hi;    /* the summed range */
} Case;

/* This rank's gradient i: a small integer (exact sums in any order, also in bf16). */
static float grad_of(int rank, size_t i) { return (float)((rank + 1) * (int)(i % 7) - 3); }

static void describe(const Case *c, char *buf, size_t cap) {
  snprintf(buf, cap, "bucket %zu%s%s %s summed [%zu, %zu)", c->bucket,
           c->wire_bf16 ? " bf16" : "", c->compress ? " identity parts" : "",
           MODE_NAMES[c->mode], c->lo, c->hi);
}

/* Parts cut at the tensors [0, lo), [lo, hi), [hi, N) (so the range is a union of parts),
 * every other part through identity CaSync. */
static int make_compress(AxGradCompress *gc, const AxOffload *o, const Case *c,
                         const AxCodec *id) {
  AxTensorRange tr[3];
  int n_t = 0;
  size_t cuts[4] = {0, c->lo, c->hi, N};
  for (int k = 0; k < 3; k++)
    if (cuts[k + 1] > cuts[k])
      tr[n_t++] = (AxTensorRange){cuts[k], cuts[k + 1] - cuts[k], 1, "t", -1, 0};
  int n = ax_grad_parts_cut(o, tr, n_t, NULL, 0);
  AxGradPart *parts = calloc((size_t)n + 1, sizeof *parts);
  ck_assert_ptr_nonnull(parts);
  ax_grad_parts_cut(o, tr, n_t, parts, n);
  for (int p = 0; p < n; p++) {
    parts[p].choice = (AxCasyncChoice){.compress = p % 2 == 0, .parts = mt_size};
    parts[p].codec = parts[p].choice.compress ? id : NULL;
  }
  int rc = ax_grad_compress_init(gc, o, parts, n, AX_CASYNC_RING, mt_size, 1, &g_cc, NULL);
  free(parts);
  return rc;
}

static int reduce(AxOffload *o, const AxReduceSpec *r, Mode mode, float *device_params) {
  double sumsq;
  AxAdamWHyper h = {.lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .step = 1,
                    .grad_scale = 1.0f};
  if (mode == M_REDUCE) return ax_offload_reduce(o, r, &sumsq);
  return ax_offload_reduce_update(o, r, device_params, &h, &sumsq);
}

static void check_case(const Case *c, const AxCodec *id) {
  char what[160];
  describe(c, what, sizeof what);
  AxBackend *be = tu_backend(1);
  float *grads = tu_zeros(N), *params = tu_zeros(N);
  for (size_t i = 0; i < N; i++) grads[i] = grad_of(mt_rank, i);
  AxParamSegment seg = {0, N, 1, 0};
  AxOffloadConfig oc = {.bucket_size = c->bucket, .coarsening = 1, .wire_bf16 = c->wire_bf16,
                        .segs = &seg, .n_segs = 1};
  AxOffload o;
  ck_assert_int_eq(ax_offload_init(&o, be, N, params, grads, &oc, NULL), AX_OK);
  ck_assert_int_eq(ax_offload_download_grads(&o, grads), AX_OK);
  AxGradCompress gc = {0};
  if (c->compress) ck_assert_int_eq(make_compress(&gc, &o, c, id), AX_OK);
  AxReduceSpec r = {.comm = g_comm, .cc = &g_cc, .algo = AX_ALLREDUCE_RING, .window = 2,
                    .progress = c->mode == M_THREAD ? AX_PROGRESS_THREAD : AX_PROGRESS_CALLS,
                    .compress = c->compress ? &gc : NULL, .summed_lo = c->lo,
                    .summed_hi = c->hi};
  int rc = reduce(&o, &r, c->mode, params);
  mt_expect(rc == AX_OK, "%s: %s", what, ax_error_message());
  size_t bad = N;
  for (size_t i = 0; i < N && bad == N && rc == AX_OK; i++) {
    float want = grad_of(mt_rank, i);
    if (i < c->lo || i >= c->hi) {
      want = 0;
      for (int k = 0; k < mt_size; k++) want += grad_of(k, i);
    }
    if (o.grads[i] != want) bad = i;
  }
  mt_expect(bad == N, "%s: element %zu is %g, expected %s", what, bad,
            bad < N ? o.grads[bad] : 0.0, bad >= c->lo && bad < c->hi ? "this rank's own"
                                                                      : "the sum");
  ax_error_clear();
  ax_grad_compress_free(&gc);
  ax_offload_free(&o);
  ax_backend_destroy(be);
}

START_TEST(a_summed_range_is_left_out_of_every_path) {
  AxCodec *id;
  ck_assert_int_eq(ax_codec_parse("identity", &id), AX_OK);
  const size_t ranges[][2] = {{0, 0}, {0, 3000}, {2500, 6100}, {7000, N}, {0, N}};
  const size_t buckets[] = {1000, N};
  for (size_t b = 0; b < 2; b++)
    for (size_t g = 0; g < sizeof ranges / sizeof ranges[0]; g++)
      for (int mode = M_REDUCE; mode <= M_THREAD; mode++)
        for (int kind = 0; kind < 3; kind++) { /* fp32, bf16 wire, identity parts */
          Case c = {.bucket = buckets[b], .wire_bf16 = kind == 1, .compress = kind == 2,
                    .mode = (Mode)mode, .lo = ranges[g][0], .hi = ranges[g][1]};
          check_case(&c, id);
        }
  ax_codec_free(id);
  mt_assert_all_ok("the all-reduce without the summed range");
}
END_TEST

/* A compressed part that the summed range only partly covers cannot be encoded in pieces. */
START_TEST(a_compressed_part_cut_by_the_range_is_an_error) {
  if (mt_size == 1) return; /* one rank sums nothing: nothing is started */
  AxCodec *id;
  ck_assert_int_eq(ax_codec_parse("identity", &id), AX_OK);
  AxBackend *be = tu_backend(1);
  float *grads = tu_zeros(N), *params = tu_zeros(N);
  AxParamSegment seg = {0, N, 1, 0};
  AxOffloadConfig oc = {.bucket_size = N, .coarsening = 1, .segs = &seg, .n_segs = 1};
  AxOffload o;
  ck_assert_int_eq(ax_offload_init(&o, be, N, params, grads, &oc, NULL), AX_OK);
  Case whole = {.lo = 0, .hi = 0}; /* one tensor: a single compressed part */
  AxGradCompress gc;
  ck_assert_int_eq(make_compress(&gc, &o, &whole, id), AX_OK);
  AxReduceSpec r = {.comm = g_comm, .cc = &g_cc, .algo = AX_ALLREDUCE_RING, .window = 2,
                    .compress = &gc, .summed_lo = 100, .summed_hi = 200};
  double sumsq;
  int rc = ax_offload_reduce(&o, &r, &sumsq);
  mt_expect(rc == AX_ERR && strstr(ax_error_message(), "cuts the compressed part"),
            "expected 'cuts the compressed part', got rc %d: %s", rc, ax_error_message());
  ax_error_clear();
  ax_grad_compress_free(&gc);
  ax_offload_free(&o);
  ax_backend_destroy(be);
  ax_codec_free(id);
  mt_assert_all_ok("a compressed part cut by the summed range");
}
END_TEST

static Suite *interleave_suite(void) {
  Suite *s = suite_create("interleave");
  TCase *tc = tu_tcase(s, "interleave", 300);
  tcase_add_test(tc, a_summed_range_is_left_out_of_every_path);
  tcase_add_test(tc, a_compressed_part_cut_by_the_range_is_an_error);
  return s;
}

int main(int argc, char **argv) {
  mt_init(&argc, &argv);
  g_cc = mt_comm_config();
  MPI_Comm_dup(MPI_COMM_WORLD, &g_comm);
  int rc = mt_run_watched(interleave_suite(), RUN_TIMEOUT_S);
  MPI_Comm_free(&g_comm);
  return mt_finish(rc);
}
