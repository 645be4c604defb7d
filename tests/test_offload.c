/* test_offload.c — the host arena's buckets and chunks, the chunked update against one
 * whole-range AdamW (bucket sizes that do not divide the parameter count, coarsening 1..8,
 * bf16 wire), the master weights aliasing the compute copy on the CPU backend, the write-back
 * to a separate device copy (the CPU backend posing as one), and the loss-scale state
 * machine, and the layer-wise compression parts (chunks cut at every tensor and layer,
 * covering each chunk once in order); the optimizer kept in device memory (--optimizer
 * device) on the posing device, against the host's update. The multi-rank all-reduce side is
 * tested by tests/mpi_offload.sh. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "models/gpt_config.h"
#include "src/core/bf16.h"
#include "offload/device_opt.h"
#include "offload/interleave.h"
#include "offload/loss_scale.h"
#include "offload/offload.h"
#include "src/core/error.h"
#include "posing_device.h"
#include "src/train/trainer.h"
#include "testutil.h"

static AxStageLayout small_layout(void) {
  AxGptConfig c = {.max_seq = 8, .vocab = 50, .padded_vocab = 64, .layers = 2, .heads = 2,
                   .channels = 8};
  AxStageLayout lay;
  ax_stage_layout(&lay, &c, 0, 2, 1, 1);
  return lay;
}

START_TEST(chunks_cover_the_range_once) {
  AxBackend *be = tu_backend(1);
  AxStageLayout lay = small_layout();
  float *grads = tu_zeros(lay.total), *params = tu_zeros(lay.total);
  for (size_t bucket = 1; bucket < 3000; bucket = bucket * 3 + 7)
    for (int k = 1; k <= 8; k++) {
      AxParamSegment segs[AX_N_PARAMS];
      AxOffloadConfig oc = {.bucket_size = bucket, .coarsening = k, .segs = segs,
                            .n_segs = ax_trainer_decay_segments(&lay, 0, segs)};
      AxOffload o;
      ck_assert_int_eq(ax_offload_init(&o, be, lay.total, params, grads, &oc, NULL), AX_OK);
      size_t next = 0;
      for (int c = 0; c < o.n_chunks; c++) {
        size_t lo, hi;
        ax_offload_chunk_range(&o, c, &lo, &hi);
        ck_assert_uint_eq(lo, next);
        ck_assert(hi > lo && hi - lo <= o.chunk);
        next = hi;
      }
      ck_assert_uint_eq(next, lay.total);
      ck_assert(o.grads == grads); /* fp32 on the CPU: gradients summed in place, */
      ck_assert(o.master == params); /* the compute copy is the master copy, */
      ck_assert_uint_eq(o.arena_bytes, ax_offload_arena_bytes(lay.total, 1, 0, 0)); /* m, v */
      ck_assert_uint_ge(o.arena_bytes, 2 * lay.total * sizeof(float));
      /* each region: 256-byte alignment plus the stagger */
      ck_assert_uint_le(o.arena_bytes, 2 * (lay.total * sizeof(float) + 255 + AX_STAGGER_BYTES));
      ax_offload_free(&o);
    }
  ax_backend_destroy(be);
}
END_TEST

/* small_layout()'s stage in o, chunked in buckets of `bucket`, cut into its compression parts
 * (returned, calloc'd; *n of them) at the tensors tr[n_t] (64 at most). */
static AxGradPart *cut_small_stage(AxBackend *be, size_t bucket, AxOffload *o, AxTensorRange *tr,
                                   int *n_t, int *n) {
  AxStageLayout lay = small_layout();
  float *grads = tu_zeros(lay.total), *params = tu_zeros(lay.total);
  *n_t = ax_trainer_tensor_ranges(&lay, tr, 64);
  AxParamSegment segs[AX_N_PARAMS];
  AxOffloadConfig oc = {.bucket_size = bucket, .coarsening = 1, .segs = segs,
                        .n_segs = ax_trainer_decay_segments(&lay, 0, segs)};
  ck_assert_int_eq(ax_offload_init(o, be, lay.total, params, grads, &oc, NULL), AX_OK);
  *n = ax_grad_parts_cut(o, tr, *n_t, NULL, 0);
  AxGradPart *parts = calloc((size_t)*n, sizeof *parts);
  ck_assert_int_eq(ax_grad_parts_cut(o, tr, *n_t, parts, *n), *n);
  return parts;
}

START_TEST(compression_parts_cut_chunks_at_tensors) {
  AxBackend *be = tu_backend(1);
  AxStageLayout lay = small_layout();
  for (size_t bucket = 1; bucket < 3000; bucket = bucket * 3 + 7) {
    AxTensorRange tr[64];
    AxOffload o;
    int n_t, n;
    AxGradPart *parts = cut_small_stage(be, bucket, &o, tr, &n_t, &n);
    /* 2 embeddings, 12 layer kinds x 2 layers, the final LayerNorm's 2 */
    ck_assert_int_eq(n_t, 2 + 12 * 2 + 2);
    ck_assert_uint_eq(tr[0].cols, 8);
    ck_assert_int_ge(n, n_t > o.n_chunks ? n_t : o.n_chunks);
    size_t next = 0;
    for (int p = 0; p < n; p++) {
      size_t lo, hi;
      ax_offload_chunk_range(&o, parts[p].chunk, &lo, &hi);
      ck_assert_uint_eq(parts[p].lo, next);
      ck_assert(parts[p].hi > parts[p].lo && parts[p].lo >= lo && parts[p].hi <= hi);
      ck_assert(parts[p].name != NULL); /* the tensors cover the stage: no gaps */
      next = parts[p].hi;
    }
    ck_assert_uint_eq(next, lay.total);
    free(parts);
    ax_offload_free(&o);
  }
  ax_backend_destroy(be);
}
END_TEST

/* The fingerprint of the parts inside a range (what the two ends of the tied embedding compare
 * before they compress it: train_compress.c keep_tied_alike) follows a decision inside it and
 * ignores one outside it. */
START_TEST(parts_fingerprint_sees_only_its_range) {
  AxBackend *be = tu_backend(1);
  AxStageLayout lay = small_layout();
  AxTensorRange tr[64];
  AxOffload o;
  int n_t, n;
  AxGradPart *parts = cut_small_stage(be, 100, &o, tr, &n_t, &n);
  size_t lo = lay.offset[AX_P_WTE], hi = lo + lay.count[AX_P_WTE];
  ck_assert(parts[0].lo == lo && parts[0].hi <= hi && parts[n - 1].lo >= hi);
  uint32_t wte = ax_grad_parts_fingerprint(parts, n, lo, hi);
  uint32_t all = ax_grad_parts_fingerprint(parts, n, 0, SIZE_MAX);
  parts[n - 1].choice.compress = 1; /* outside wte */
  ck_assert_uint_eq(ax_grad_parts_fingerprint(parts, n, lo, hi), wte);
  ck_assert_uint_ne(ax_grad_parts_fingerprint(parts, n, 0, SIZE_MAX), all);
  parts[0].choice.compress = 1; /* inside */
  ck_assert_uint_ne(ax_grad_parts_fingerprint(parts, n, lo, hi), wte);
  free(parts);
  ax_offload_free(&o);
  ax_backend_destroy(be);
}
END_TEST

/* The chunked, interleaved step on one rank equals AdamW over the whole range. With
 * separate_device the CPU backend poses as one whose memory is not the host's (as CUDA's):
 * the arena then holds the master weights and gradient staging, and the update is written
 * back to the device copy. */
static void check_update(size_t bucket, int k, int wire_bf16, int separate_device) {
  AxBackend *be = tu_backend(2);
  be->is_host = !separate_device;
  AxPool *pool = ax_pool_create(2, NULL, NULL);
  AxStageLayout lay = small_layout();
  size_t n = lay.total;
  float *grads = tu_random(n, 0.1f, 5), *device_params = tu_zeros(n);
  AxParamSegment segs[AX_N_PARAMS];
  AxOffloadConfig oc = {.bucket_size = bucket, .coarsening = k, .wire_bf16 = wire_bf16,
                        .segs = segs, .n_segs = ax_trainer_decay_segments(&lay, 0, segs)};
  AxOffload o;
  ck_assert_int_eq(ax_offload_init(&o, be, lay.total, device_params, grads, &oc, pool), AX_OK);
  /* CPU backend, fp32: the weights are updated in place, the gradients summed in place */
  ck_assert(separate_device ? o.master != device_params : o.master == device_params);
  ck_assert(wire_bf16 || separate_device ? o.grads != grads : o.grads == grads);
  float *init = tu_random(n, 1.0f, 6);
  memcpy(o.master, init, n * 4);
  AxAdamWHyper h = {.lr = 1e-2f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f,
                    .weight_decay = 0.1f, .step = 1, .grad_scale = 0.5f};
  AxReduceSpec r = {.comm = MPI_COMM_NULL, .window = 2, .progress = AX_PROGRESS_CALLS};
  double sumsq;
  ck_assert_int_eq(ax_offload_download_grads(&o, grads), AX_OK);
  ck_assert_int_eq(ax_offload_reduce_update(&o, &r, device_params, &h, &sumsq), AX_OK);
  /* reference: the scalar AdamW per tensor, decay as the layout says */
  float *p = tu_alloc(n * 4), *m = tu_zeros(n), *v = tu_zeros(n);
  memcpy(p, init, n * 4);
  for (int s = 0; s < o.n_segs; s++)
    ax_adamw_ref(p + o.segs[s].offset, grads + o.segs[s].offset, m + o.segs[s].offset,
                 v + o.segs[s].offset, o.segs[s].count, &h, o.segs[s].decay);
  ck_assert_double_le(tu_max_rel(o.master, p, n, 1e-7, 1e-5), 1.0);
  ck_assert_int_eq(memcmp(device_params, o.master, n * 4), 0); /* written back, or the same */
  double ref = 0;
  for (size_t i = 0; i < n; i++) ref += (double)grads[i] * grads[i];
  ck_assert_double_eq_tol(sumsq, ref, 1e-6 * ref);
  ax_offload_free(&o);
  ax_pool_destroy(pool);
  ax_backend_destroy(be);
}

START_TEST(chunked_update_equals_whole_update) {
  for (int k = 1; k <= 8; k *= 2) {
    check_update(1000, k, 0, 0); /* 1000 does not divide the parameter count */
    check_update(333, k, 0, 0);
  }
  check_update(1u << 24, 4, 0, 0); /* the default: one bucket holds everything */
}
END_TEST

START_TEST(separate_device_copy_gets_the_update_written_back) {
  check_update(1000, 2, 0, 1);
  check_update(333, 8, 1, 1);
}
END_TEST

START_TEST(bf16_wire_on_one_rank_leaves_gradients_exact) {
  check_update(1000, 2, 1, 0); /* nothing to sum, so nothing is rounded */
}
END_TEST

START_TEST(loss_scale_halves_on_overflow_and_grows_after_a_window_of_clean_steps) {
  AxLossScale ls;
  ax_loss_scale_init(&ls, 1, 200); /* --loss-scale-window's default */
  ck_assert_float_eq(ls.scale, 65536.0f);
  ck_assert_float_eq(ax_loss_scale_update(&ls, 1), 0.5f);
  ck_assert_float_eq(ls.scale, 32768.0f);
  for (int i = 0; i < 199; i++) ck_assert_float_eq(ax_loss_scale_update(&ls, 0), 1.0f);
  ck_assert_float_eq(ls.scale, 32768.0f);
  ck_assert_float_eq(ax_loss_scale_update(&ls, 0), 2.0f); /* the 200th clean step */
  ck_assert_float_eq(ls.scale, 65536.0f);
  ck_assert_int_eq(ls.skipped, 1);
  ax_loss_scale_init(&ls, 1, 3); /* --loss-scale-window 3 */
  for (int i = 0; i < 2; i++) ck_assert_float_eq(ax_loss_scale_update(&ls, 0), 1.0f);
  ck_assert_float_eq(ax_loss_scale_update(&ls, 0), 2.0f);
  ck_assert_float_eq(ls.scale, 131072.0f);
  ax_loss_scale_init(&ls, 0, 200);
  ck_assert_float_eq(ax_loss_scale_update(&ls, 1), 1.0f); /* off: the scale stays 1 */
  ck_assert_float_eq(ls.scale, 1.0f);
  ck_assert_int_eq(ls.skipped, 1); /* an overflow is still counted (and skipped: the caller) */
}
END_TEST

START_TEST(host_sumsq_matches_double_sum) {
  size_t n = 100003;
  float *x = tu_random(n, 3.0f, 9);
  double ref = 0;
  for (size_t i = 0; i < n; i++) ref += (double)x[i] * x[i];
  ck_assert_double_eq_tol(ax_host_sumsq(x, n), ref, 1e-6 * ref);
  x[77] = INFINITY;
  ck_assert(!isfinite(ax_host_sumsq(x, n)));
}
END_TEST

/* The threaded sum gives the serial sum's bits at any thread count: several rounds of blocks,
 * a partial last block, and pieces that start off a block boundary. */
START_TEST(host_sumsq_on_threads_equals_serial_bit_for_bit) {
  size_t n = (size_t)4096 * 1024 * 2 + 4096 * 3 + 517;
  float *x = tu_random(n, 3.0f, 11);
  size_t sizes[] = {n, n - 4099, 4097, 9000, 4096, 1};
  for (int threads = 1; threads <= 4; threads++) {
    AxPool *pool = ax_pool_create(threads, NULL, NULL);
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
      const float *at = x + (n - sizes[k]);
      double serial = ax_host_sumsq(at, sizes[k]);
      double threaded = ax_host_sumsq_pool(pool, at, sizes[k]);
      ck_assert_msg(memcmp(&serial, &threaded, sizeof serial) == 0,
                    "%d threads, %zu elements: %.17g vs %.17g", threads, sizes[k], threaded,
                    serial);
    }
    ax_pool_destroy(pool);
  }
  ck_assert_double_eq(ax_host_sumsq_pool(NULL, x, 9000), ax_host_sumsq(x, 9000));
}
END_TEST

/* A device computing in bf16 (the posing device as one): the gradients come down as they are,
 * in pieces through two pinned bounce buffers, widened to fp32 on the pool's threads while the
 * next piece comes down; the host copy equals every device bf16 value widened, for pieces that
 * do not divide the count, with no pool and 1-3 threads. An fp32 device has no bounce buffers
 * (its gradients are converted on the device, download_f32). */
START_TEST(bf16_gradients_come_down_in_pieces_exactly) {
  AxBackend *be = tu_posing_backend();
  size_t n = 2 * 1000 + 123;
  AxParamSegment seg = {0, n, 1, 0};
  AxOffloadConfig cfg = {.bucket_size = n, .coarsening = 1, .segs = &seg, .n_segs = 1,
                         .piece = 1000};
  AxOffload o;
  void *params = ax_alloc(be, n * sizeof(float)), *grads = ax_alloc(be, n * sizeof(float));
  ck_assert_int_eq(ax_offload_init(&o, be, n, params, grads, &cfg, NULL), AX_OK);
  ck_assert(o.bounce[0] == NULL && o.bounce[1] == NULL);
  ax_offload_free(&o);
  be->dtype = AX_DTYPE_BF16;
  be->esz = 2;
  uint16_t *dev = grads;
  float *x = tu_random(n, 3.0f, 17);
  for (size_t i = 0; i < n; i++) dev[i] = ax_f32_to_bf16(x[i]);
  for (int threads = 0; threads <= 3; threads++) {
    AxPool *pool = threads ? ax_pool_create(threads, NULL, NULL) : NULL;
    ck_assert_int_eq(ax_offload_init(&o, be, n, params, grads, &cfg, pool), AX_OK);
    ck_assert(o.bounce[0] != NULL && o.bounce[1] != NULL && o.piece == 1000);
    ck_assert_int_eq(ax_offload_download_grads(&o, grads), AX_OK);
    for (size_t i = 0; i < n; i++)
      ck_assert_msg(o.grads[i] == ax_bf16_to_f32(dev[i]), "%d threads, element %zu: %g, not %g",
                    threads, i, o.grads[i], ax_bf16_to_f32(dev[i]));
    ax_offload_free(&o);
    if (pool) ax_pool_destroy(pool);
  }
  ax_free(be, params);
  ax_free(be, grads);
  ax_backend_destroy(be);
}
END_TEST

/* --optimizer device where device memory is not the host's (the posing device, whose every copy
 * is checked against where its pointers live), over an arena that holds the state only: the
 * state goes up from the arena, the norm and
 * AdamW run on the device over segments with and without decay, the compute copy is the new
 * master (fp32), and the state comes back down equal bit for bit to the host's update of the
 * same state; until it does, the arena keeps the old state. */
/* A random optimizer state in o (master, m, v >= 0) and its copy in *p, *m, *v (tu_alloc):
 * the reference an update of o is checked against. */
static void random_state(AxOffload *o, size_t n, float **p, float **m, float **v) {
  float *v0 = tu_random(n, 1e-3f, 8);
  memcpy(o->master, tu_random(n, 1.0f, 6), n * sizeof(float));
  memcpy(o->m, tu_random(n, 0.01f, 7), n * sizeof(float));
  for (size_t i = 0; i < n; i++) o->v[i] = fabsf(v0[i]);
  *p = tu_alloc(n * sizeof **p);
  *m = tu_alloc(n * sizeof **m);
  *v = tu_alloc(n * sizeof **v);
  memcpy(*p, o->master, n * sizeof **p);
  memcpy(*m, o->m, n * sizeof **m);
  memcpy(*v, o->v, n * sizeof **v);
}

/* Codec spans marked in the segment table (ax_offload_mark_codec): the segments are cut at the
 * spans' bounds keeping each one's decay, and an update gives the elements inside a span the
 * codec settings (beta1 0, the variance frozen: DGC's and 1-bit Adam's) and those outside Adam's
 * own, each equal to the scalar reference with those settings; without codec settings every
 * element takes the plain ones. */
START_TEST(codec_spans_take_the_codec_settings) {
  size_t n = 10007;
  AxParamSegment segs[3] = {{0, 4000, 1, 0}, {4000, 3000, 0, 0}, {7000, 3007, 1, 0}};
  AxOffloadConfig cfg = {.bucket_size = 1000, .coarsening = 2, .segs = segs, .n_segs = 3};
  AxBackend *be = tu_backend(1);
  void *params = ax_alloc(be, n * sizeof(float)), *grads = ax_alloc(be, n * sizeof(float));
  AxOffload o;
  ck_assert_int_eq(ax_offload_init(&o, be, n, params, grads, &cfg, NULL), AX_OK);
  AxParamSpan spans[2] = {{1000, 5000}, {6500, 6600}};
  ck_assert_int_eq(ax_offload_mark_codec(&o, spans, 2), AX_OK);
  const AxParamSegment want[6] = {{0, 1000, 1, 0},    {1000, 3000, 1, 1}, {4000, 1000, 0, 1},
                                  {5000, 1500, 0, 0}, {6500, 100, 0, 1},  {6600, 400, 0, 0}};
  ck_assert_int_eq(o.n_segs, 7);
  for (int s = 0; s < 6; s++)
    ck_assert(o.segs[s].offset == want[s].offset && o.segs[s].count == want[s].count &&
              o.segs[s].decay == want[s].decay && o.segs[s].codec == want[s].codec);
  ck_assert(o.segs[6].offset == 7000 && o.segs[6].count == 3007 && !o.segs[6].codec);

  float *g = tu_random(n, 0.1f, 5), *p, *m, *v;
  memcpy(o.grads, g, n * sizeof(float));
  random_state(&o, n, &p, &m, &v);
  const float *v0 = v; /* the variance before the update (the reference's is updated in place) */
  v = tu_alloc(n * sizeof *v);
  memcpy(v, v0, n * sizeof *v);
  AxAdamWHyper h = {.lr = 3e-3f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f,
                    .weight_decay = 0.1f, .step = 9, .grad_scale = 0.5f};
  AxAdamWHyper c = h;
  c.beta1 = 0.0f;
  c.v_frozen_at = 4;
  h.codec = &c;
  ax_offload_update(&o, 0, n, &h);
  for (int s = 0; s < o.n_segs; s++) {
    const AxParamSegment *sg = &o.segs[s];
    size_t a = sg->offset;
    ax_adamw_ref(p + a, g + a, m + a, v + a, sg->count, sg->codec ? &c : &h, sg->decay);
  }
  for (size_t i = 0; i < n; i++) {
    ck_assert_float_eq_tol(o.master[i], p[i], 1e-6f);
    ck_assert_float_eq_tol(o.m[i], m[i], 1e-7f);
  }
  for (size_t i = 1000; i < 5000; i++) ck_assert(o.v[i] == v0[i]); /* frozen */
  ck_assert(o.v[999] != v0[999] && o.v[5000] != v0[5000]);
  h.codec = NULL; /* no codec settings: the codec spans take the plain ones */
  ax_offload_update(&o, 0, n, &h);
  for (size_t i = 1000; i < 5000; i++) ck_assert(o.v[i] != v0[i] || g[i] == 0);
  ax_offload_free(&o);
  ax_free(be, params);
  ax_free(be, grads);
}
END_TEST

START_TEST(device_optimizer_equals_the_host_update) {
  AxBackend *be = tu_posing_backend();
  size_t n = 10007;
  AxParamSegment segs[3] = {{0, 4000, 1, 0}, {4000, 3000, 0, 0}, {7000, 3007, 1, 0}};
  AxOffloadConfig cfg = {.bucket_size = n, .coarsening = 1, .segs = segs, .n_segs = 3,
                         .wire_bf16 = 1, .state_only = 1};
  void *params = ax_alloc(be, n * sizeof(float)), *grads = ax_alloc(be, n * sizeof(float));
  AxOffload o;
  ck_assert_int_eq(ax_offload_init(&o, be, n, params, grads, &cfg, NULL), AX_OK);
  /* the state's home only: master, m, v; no gradient staging, no wire */
  ck_assert(o.grads == NULL && o.wire == NULL);
  ck_assert_uint_eq(o.arena_bytes, 3 * ax_staggered(n * sizeof(float)));
  ck_assert_uint_eq(o.arena_bytes, ax_offload_arena_bytes(n, 0, 1, 1));
  float *g = tu_random(n, 0.1f, 5), *p, *m, *v;
  random_state(&o, n, &p, &m, &v);
  ck_assert_int_eq(be->ops->upload_f32(be, params, o.master, n, AX_STREAM_COMPUTE), AX_OK);
  ck_assert_int_eq(be->ops->upload_f32(be, grads, g, n, AX_STREAM_COMPUTE), AX_OK);
  AxAdamWHyper h = {.lr = 3e-3f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f,
                    .weight_decay = 0.1f, .step = 3, .grad_scale = 0.5f};
  ax_adamw_update(NULL, p, g, m, v, 0, n, segs, 3, &h);

  AxDeviceOpt d;
  ck_assert_int_eq(ax_device_opt_init(&d, &o, params), AX_OK);
  ck_assert(d.master == params && tu_posing_is_device(be, d.m) && tu_posing_is_device(be, d.v));
  ck_assert_int_eq(ax_device_opt_from_host(&d), AX_OK);
  double sumsq, want = 0;
  for (size_t i = 0; i < n; i++) want += (double)g[i] * g[i];
  ck_assert_int_eq(ax_device_opt_sumsq(&d, grads, &sumsq), AX_OK);
  ck_assert_double_eq_tol(sumsq, want, 1e-6 * want);
  ax_device_opt_update(&d, params, grads, &h);
  ck_assert(memcmp(o.m, m, n * sizeof *m) != 0); /* not yet down */
  ck_assert_int_eq(ax_device_opt_to_host(&d), AX_OK);
  ck_assert(memcmp(o.master, p, n * sizeof *p) == 0);
  ck_assert(memcmp(o.m, m, n * sizeof *m) == 0);
  ck_assert(memcmp(o.v, v, n * sizeof *v) == 0);
  ax_device_opt_free(&d);
  ax_offload_free(&o);
  ax_free(be, params);
  ax_free(be, grads);
  ax_backend_destroy(be);
}
END_TEST

int main(void) {
  Suite *s = suite_create("offload");
  TCase *tc = tu_tcase(s, "offload", 60);
  tcase_add_test(tc, chunks_cover_the_range_once);
  tcase_add_test(tc, compression_parts_cut_chunks_at_tensors);
  tcase_add_test(tc, chunked_update_equals_whole_update);
  tcase_add_test(tc, separate_device_copy_gets_the_update_written_back);
  tcase_add_test(tc, bf16_wire_on_one_rank_leaves_gradients_exact);
  tcase_add_test(tc, loss_scale_halves_on_overflow_and_grows_after_a_window_of_clean_steps);
  tcase_add_test(tc, host_sumsq_matches_double_sum);
  tcase_add_test(tc, host_sumsq_on_threads_equals_serial_bit_for_bit);
  tcase_add_test(tc, parts_fingerprint_sees_only_its_range);
  tcase_add_test(tc, codec_spans_take_the_codec_settings);
  tcase_add_test(tc, device_optimizer_equals_the_host_update);
  tcase_add_test(tc, bf16_gradients_come_down_in_pieces_exactly);
  return tu_run(s);
}
