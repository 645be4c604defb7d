/* offload.c — the host arena, its buckets and chunks, and the copies between it and the
 * device; see offload.h. */
#include "offload.h"

#include <stdlib.h>
#include <string.h>

#include "src/core/bf16.h"
#include "src/core/error.h"
#include "src/core/threadpool.h"

/* The arena's fp32 regions, in order: m, v, the master weights unless they are the device
 * buffer (host_fp32), gradient staging unless the device buffer serves (host_fp32 without a
 * bf16 wire) or no gradient comes down (state_only). Each starts ax_staggered() bytes after the
 * one before (see backend.h). */
static void fp32_regions(int host_fp32, int wire_bf16, int state_only, int use[4]) {
  use[0] = use[1] = 1;
  use[2] = !host_fp32;
  use[3] = !state_only && (!host_fp32 || wire_bf16);
}

size_t ax_offload_arena_bytes(size_t n, int host_fp32, int wire_bf16, int state_only) {
  int use[4];
  fp32_regions(host_fp32, wire_bf16, state_only, use);
  size_t bytes = (size_t)(use[0] + use[1] + use[2] + use[3]) * ax_staggered(n * sizeof(float));
  return wire_bf16 && !state_only ? bytes + n * sizeof(uint16_t) : bytes;
}

static void carve(AxOffload *o, int host_fp32, int wire_bf16, int state_only) {
  char *p = o->arena;
  float **fp32[4] = {&o->m, &o->v, &o->master, &o->grads};
  int use[4];
  fp32_regions(host_fp32, wire_bf16, state_only, use);
  for (int r = 0; r < 4; r++)
    if (use[r]) {
      *fp32[r] = (float *)p;
      p += ax_staggered(o->n * sizeof(float));
    }
  if (wire_bf16 && !state_only) o->wire = (uint16_t *)p;
  o->own_m = o->m;
  o->own_v = o->v;
}

static int copy_segments(AxOffload *o, const AxOffloadConfig *cfg) {
  size_t next = 0;
  for (int s = 0; s < cfg->n_segs; s++) {
    if (cfg->segs[s].offset != next)
      return AX_FAIL("internal: decay segment %d starts at %zu, expected %zu", s,
                     cfg->segs[s].offset, next);
    next += cfg->segs[s].count;
  }
  if (next != o->n)
    return AX_FAIL("internal: decay segments cover %zu of %zu parameters", next, o->n);
  o->segs = ax_malloc((size_t)(cfg->n_segs ? cfg->n_segs : 1) * sizeof *o->segs);
  if (!o->segs) return AX_ERR;
  if (cfg->n_segs) memcpy(o->segs, cfg->segs, (size_t)cfg->n_segs * sizeof *o->segs);
  o->n_segs = cfg->n_segs;
  return AX_OK;
}

int ax_offload_init(AxOffload *o, AxBackend *be, size_t n, void *device_params,
                    void *device_grads, const AxOffloadConfig *cfg, AxPool *pool) {
  memset(o, 0, sizeof *o);
  o->be = be;
  o->pool = pool;
  o->n = n;
  o->bucket = cfg->bucket_size < o->n ? cfg->bucket_size : (o->n ? o->n : 1);
  o->n_buckets = (int)((o->n + o->bucket - 1) / o->bucket);
  o->chunk = o->bucket * (size_t)cfg->coarsening;
  if ((o->chunk > o->n || cfg->single_chunk) && o->n) o->chunk = o->n;
  o->n_chunks = o->n ? (int)((o->n + o->chunk - 1) / o->chunk) : 0;
  AX_TRY(copy_segments(o, cfg));
  /* With a bf16 wire the fp32 gradients are summed in a staging copy, so the device's own
   * gradients are never overwritten by a partial result. */
  int host_fp32 = be->is_host && be->dtype == AX_DTYPE_F32;
  o->params_alias = host_fp32;
  if (cfg->grads_on_device && (cfg->wire_bf16 || cfg->state_only || be->is_host))
    return AX_FAIL("internal: gradients summed in device memory need device memory, fp32 sums "
                   "and something to sum");
  int no_staging = cfg->state_only || cfg->grads_on_device;
  o->grads_alias = host_fp32 && !cfg->wire_bf16 && !no_staging;
  o->grads_on_device = cfg->grads_on_device;
  o->arena_bytes = ax_offload_arena_bytes(o->n, host_fp32, cfg->wire_bf16, no_staging);
  o->arena = be->ops->host_alloc(be, o->arena_bytes);
  if (!o->arena)
    return ax_error_context("allocating the optimizer's host arena (%.1f MB)",
                            o->arena_bytes / 1e6);
  memset(o->arena, 0, o->arena_bytes);
  carve(o, host_fp32, cfg->wire_bf16, no_staging);
  if (o->params_alias) o->master = device_params;
  if (o->grads_alias || o->grads_on_device) o->grads = device_grads;
  o->piece = cfg->piece ? cfg->piece : AX_OFFLOAD_PIECE;
  if (be->dtype == AX_DTYPE_BF16 && !be->is_host && !no_staging && o->n)
    for (int i = 0; i < 2; i++)
      if (!(o->bounce[i] = be->ops->host_alloc(be, o->piece * sizeof(uint16_t))))
        return ax_error_context("allocating the gradients' pinned bf16 pieces");
  return AX_OK;
}

void ax_offload_free(AxOffload *o) {
  if (o->be && o->arena) o->be->ops->host_free(o->be, o->arena);
  for (int i = 0; i < 2; i++)
    if (o->be && o->bounce[i]) o->be->ops->host_free(o->be, o->bounce[i]);
  free(o->segs);
  memset(o, 0, sizeof *o);
}

void ax_offload_chunk_range(const AxOffload *o, int c, size_t *lo, size_t *hi) {
  *lo = (size_t)c * o->chunk;
  *hi = *lo + o->chunk < o->n ? *lo + o->chunk : o->n;
}

/* One round of the bf16 download: thread 0 brings piece `next` down into its bounce buffer
 * while the others (or thread 0 after it, alone) widen piece `next - 1` into o->grads. */
typedef struct {
  AxOffload *o;
  const uint16_t *device;
  int next, n_pieces, rc;
} Pieces;

static void piece_range(const AxOffload *o, int k, size_t *lo, size_t *hi) {
  *lo = (size_t)k * o->piece;
  *hi = *lo + o->piece < o->n ? *lo + o->piece : o->n;
}

static void pieces_round(void *arg, int tid, int nthreads) {
  Pieces *p = arg;
  AxOffload *o = p->o;
  size_t lo, hi, a, b;
  if (tid == 0 && p->next < p->n_pieces) {
    piece_range(o, p->next, &lo, &hi);
    p->rc = o->be->ops->copy(o->be, o->bounce[p->next % 2], p->device + lo,
                             (hi - lo) * sizeof(uint16_t), AX_COPY_D2H, AX_STREAM_COPY);
  }
  if (p->next == 0 || (tid == 0 && nthreads > 1)) return;
  int widen = p->next - 1, workers = nthreads > 1 ? nthreads - 1 : 1;
  piece_range(o, widen, &lo, &hi);
  ax_split(hi - lo, nthreads > 1 ? tid - 1 : 0, workers, &a, &b);
  ax_bf16_to_f32_array(o->grads + lo + a, o->bounce[widen % 2] + a, b - a);
}

static int download_bf16(AxOffload *o, const void *device_grads) {
  Pieces p = {o, device_grads, 0, (int)((o->n + o->piece - 1) / o->piece), AX_OK};
  for (; p.next <= p.n_pieces && p.rc == AX_OK; p.next++) {
    if (o->pool)
      ax_pool_run(o->pool, pieces_round, &p);
    else
      pieces_round(&p, 0, 1);
  }
  return p.rc;
}

int ax_offload_download_grads(AxOffload *o, const void *device_grads) {
  if (o->grads_alias || o->grads_on_device) return AX_OK;
  AxBackend *be = o->be;
  if (o->bounce[0]) return download_bf16(o, device_grads);
  AX_TRY(be->ops->download_f32(be, o->grads, device_grads, o->n, AX_STREAM_COPY));
  return be->ops->sync(be, AX_STREAM_COPY);
}

/* Host fp32 [lo, hi) of `host` -> the same range of a device buffer, on the copy stream. */
static int upload_range(AxOffload *o, void *device, const float *host, size_t lo, size_t hi) {
  AxBackend *be = o->be;
  return be->ops->upload_f32(be, ax_at(be, device, lo), host + lo, hi - lo, AX_STREAM_COPY);
}

int ax_offload_write_back(AxOffload *o, void *device_params, size_t lo, size_t hi) {
  return o->params_alias ? AX_OK : upload_range(o, device_params, o->master, lo, hi);
}

int ax_offload_upload_grads(AxOffload *o, void *device_grads, size_t lo, size_t hi) {
  if (o->grads_alias || o->grads_on_device) return AX_OK;
  return upload_range(o, device_grads, o->grads, lo, hi);
}

void ax_offload_update(AxOffload *o, size_t lo, size_t hi, const AxAdamWHyper *h) {
  ax_adamw_update_to(o->pool, o->to.m ? &o->to : NULL, o->master, o->grads, o->m, o->v, lo, hi,
                     o->segs, o->n_segs, h);
}

int ax_offload_mark_codec(AxOffload *o, const AxParamSpan *spans, int n_spans) {
  int n = ax_param_segments_mark(o->segs, o->n_segs, spans, n_spans, NULL, 0);
  AxParamSegment *segs = ax_malloc((size_t)(n ? n : 1) * sizeof *segs);
  if (!segs) return AX_ERR;
  ax_param_segments_mark(o->segs, o->n_segs, spans, n_spans, segs, n);
  free(o->segs);
  o->segs = segs;
  o->n_segs = n;
  return AX_OK;
}

void ax_offload_move_state(AxOffload *o, int updated) {
  if (o->to.m && updated) {
    o->m = o->to.m;
    o->v = o->to.v;
  }
  o->to = (AxAdamWOut){0};
}

void ax_offload_state_home(AxOffload *o) {
  if (o->m == o->own_m) return;
  memcpy(o->own_m, o->m, o->n * sizeof(float));
  memcpy(o->own_v, o->v, o->n * sizeof(float));
  o->m = o->own_m;
  o->v = o->own_v;
}
