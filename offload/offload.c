/* offload.c — the host arena, its buckets and chunks, and the copies between it and the
 * device; see offload.h. */
#include "offload.h"

#include <string.h>

#include "src/error.h"

/* Regions start on pages, each AX_STAGGER_BYTES further on than a plain packing would put
 * it (see backend.h). */
enum { ARENA_ALIGN = 4096, ARENA_STAGGER = AX_STAGGER_BYTES };

static size_t align_up(size_t x) { return (x + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN; }

/* The fp32 regions of the arena, in order: m, v, then the master weights when they are not
 * the device buffer, then gradient staging when it is needed. */
static int fp32_regions(int host_fp32, int wire_bf16) {
  return 2 + !host_fp32 + (!host_fp32 || wire_bf16);
}

size_t ax_offload_arena_bytes(size_t n, int host_fp32, int wire_bf16) {
  size_t region = align_up(n * sizeof(float)) + ARENA_STAGGER;
  size_t bytes = (size_t)fp32_regions(host_fp32, wire_bf16) * region;
  if (wire_bf16) bytes += align_up(n * sizeof(uint16_t));
  return bytes;
}

static void carve(AxOffload *o, int wire_bf16) {
  char *p = o->arena;
  size_t region = align_up(o->n * sizeof(float)) + ARENA_STAGGER;
  float **fp32[4] = {&o->m, &o->v, &o->master, &o->grads};
  int use[4] = {1, 1, !o->params_alias, !o->grads_alias};
  for (int r = 0; r < 4; r++)
    if (use[r]) {
      *fp32[r] = (float *)p;
      p += region;
    }
  if (wire_bf16) o->wire = (uint16_t *)p;
}

static void make_segments(AxOffload *o, const AxStageLayout *layout, int decay_all) {
  for (int id = 0; id < AX_N_PARAMS; id++) {
    if (!layout->has[id]) continue;
    o->segs[o->n_segs++] = (AxParamSegment){layout->offset[id], layout->count[id],
                                            decay_all || ax_param_decays(id)};
  }
}

int ax_offload_init(AxOffload *o, AxBackend *be, const AxStageLayout *layout,
                    void *device_params, void *device_grads, const AxOffloadConfig *cfg,
                    AxPool *pool) {
  memset(o, 0, sizeof *o);
  o->be = be;
  o->pool = pool;
  o->n = layout->total;
  o->bucket = cfg->bucket_size < o->n ? cfg->bucket_size : (o->n ? o->n : 1);
  o->n_buckets = (int)((o->n + o->bucket - 1) / o->bucket);
  o->chunk = o->bucket * (size_t)cfg->coarsening;
  if ((o->chunk > o->n || cfg->single_chunk) && o->n) o->chunk = o->n;
  o->n_chunks = o->n ? (int)((o->n + o->chunk - 1) / o->chunk) : 0;
  make_segments(o, layout, cfg->decay_all);
  /* With a bf16 wire the fp32 gradients are summed in a staging copy, so the device's own
   * gradients are never overwritten by a partial result. */
  int host_fp32 = be->is_host && be->dtype == AX_DTYPE_F32;
  o->params_alias = host_fp32;
  o->grads_alias = host_fp32 && !cfg->wire_bf16;
  o->arena_bytes = ax_offload_arena_bytes(o->n, host_fp32, cfg->wire_bf16);
  o->arena = be->ops->host_alloc(be, o->arena_bytes);
  if (!o->arena)
    return ax_error_context("allocating the optimizer's host arena (%.1f MB)",
                            o->arena_bytes / 1e6);
  memset(o->arena, 0, o->arena_bytes);
  carve(o, cfg->wire_bf16);
  if (o->params_alias) o->master = device_params;
  if (o->grads_alias) o->grads = device_grads;
  return AX_OK;
}

void ax_offload_free(AxOffload *o) {
  if (o->be && o->arena) o->be->ops->host_free(o->be, o->arena);
  memset(o, 0, sizeof *o);
}

void ax_offload_chunk_range(const AxOffload *o, int c, size_t *lo, size_t *hi) {
  *lo = (size_t)c * o->chunk;
  *hi = *lo + o->chunk < o->n ? *lo + o->chunk : o->n;
}

int ax_offload_download_grads(AxOffload *o, const void *device_grads) {
  if (o->grads_alias) return AX_OK;
  AxBackend *be = o->be;
  AX_TRY(be->ops->download_f32(be, o->grads, device_grads, o->n, AX_STREAM_COPY));
  return be->ops->sync(be, AX_STREAM_COPY);
}

int ax_offload_write_back(AxOffload *o, void *device_params, size_t lo, size_t hi) {
  if (o->params_alias) return AX_OK;
  AxBackend *be = o->be;
  return be->ops->upload_f32(be, ax_at(be, device_params, lo), o->master + lo, hi - lo,
                             AX_STREAM_COPY);
}

void ax_offload_update(AxOffload *o, size_t lo, size_t hi, const AxAdamWHyper *h) {
  ax_adamw_update(o->pool, o->master, o->grads, o->m, o->v, lo, hi, o->segs, o->n_segs, h);
}
