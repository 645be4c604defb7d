/* device_opt.c — the optimizer state in device memory and its AdamW; see device_opt.h. */
#include "device_opt.h"

#include <string.h>

#include "host_sumsq.h"
#include "src/core/error.h"

/* The state is the arena's own where device memory is host memory. */
static int state_is_home(const AxBackend *be) { return be->is_host; }

AxDeviceSum ax_device_sum_path(int sums, int is_host, int device_buffers, int fp32,
                               int host_only) {
  if (!sums) return AX_DEVICE_SUM_NONE;
  int device = !is_host && device_buffers && fp32 && !host_only;
  return device ? AX_DEVICE_SUM_DEVICE : AX_DEVICE_SUM_HOST;
}

const char *ax_device_sum_describe(AxDeviceSum path) {
  switch (path) {
  case AX_DEVICE_SUM_DEVICE:
    return "gradients summed in device memory (CUDA-aware MPI's all-reduce, chunk by chunk)";
  case AX_DEVICE_SUM_HOST:
    return "gradients summed in host memory by our chunked all-reduce (staged: downloaded, "
           "each summed chunk uploaded back while later ones are in flight; the CPU backend: "
           "in place)";
  default:
    return "nothing to sum over ranks";
  }
}

size_t ax_device_opt_bytes(size_t n, size_t esz, int host_memory) {
  if (host_memory) return 0;
  int arrays = esz == sizeof(float) ? 2 : 3; /* fp32 compute: the weights are the master */
  return (size_t)arrays * ax_staggered(n * sizeof(float));
}

int ax_device_opt_init(AxDeviceOpt *d, AxOffload *home, void *device_params) {
  AxBackend *be = home->be;
  memset(d, 0, sizeof *d);
  d->home = home;
  d->n = home->n;
  d->sum = home->grads_on_device ? AX_DEVICE_SUM_DEVICE
           : home->grads         ? AX_DEVICE_SUM_HOST
                                 : AX_DEVICE_SUM_NONE;
  if (state_is_home(be)) {
    if (be->dtype != AX_DTYPE_F32 || !home->params_alias)
      return AX_FAIL("--optimizer device on the %s backend needs --precision fp32 (its %s "
                     "storage keeps no fp32 master weights of its own): use --optimizer host",
                     be->ops->name, ax_dtype_name(be->dtype));
    d->master = home->master;
    d->m = home->m;
    d->v = home->v;
    return AX_OK;
  }
  if (!be->ops->adamw)
    return AX_FAIL("the %s backend has no AdamW of its own: use --optimizer host",
                   be->ops->name);
  d->mem_bytes = ax_device_opt_bytes(d->n, be->esz, 0);
  d->mem = ax_alloc(be, d->mem_bytes);
  if (!d->mem)
    return ax_error_context("allocating the optimizer state in device memory (%.1f MB; "
                            "--optimizer host keeps it in host memory)", d->mem_bytes / 1e6);
  float **arrays[3] = {&d->m, &d->v, &d->master};
  char *p = d->mem;
  for (int a = 0; a < (be->esz == sizeof(float) ? 2 : 3); a++) {
    *arrays[a] = (float *)p;
    p += ax_staggered(d->n * sizeof(float));
  }
  if (be->esz == sizeof(float)) d->master = device_params;
  return AX_OK;
}

void ax_device_opt_free(AxDeviceOpt *d) {
  if (d->mem) ax_free(d->home->be, d->mem);
  memset(d, 0, sizeof *d);
}

/* The three arrays between the arena and the device, one way. */
static int copy_state(AxDeviceOpt *d, AxCopyKind kind) {
  AxOffload *o = d->home;
  AxBackend *be = o->be;
  if (state_is_home(be)) return AX_OK;
  float *dev[3] = {d->master, d->m, d->v}, *host[3] = {o->master, o->m, o->v};
  for (int a = 0; a < 3; a++) {
    void *dst = kind == AX_COPY_H2D ? (void *)dev[a] : (void *)host[a];
    const void *src = kind == AX_COPY_H2D ? (const void *)host[a] : (const void *)dev[a];
    AX_TRY(be->ops->copy(be, dst, src, d->n * sizeof(float), kind, AX_STREAM_COPY));
  }
  return be->ops->sync(be, AX_STREAM_COPY);
}

int ax_device_opt_from_host(AxDeviceOpt *d) {
  AX_TRY(ax_sync(d->home->be)); /* nothing in flight still reads the old state */
  return copy_state(d, AX_COPY_H2D);
}

int ax_device_opt_to_host(AxDeviceOpt *d) {
  AX_TRY(ax_sync(d->home->be)); /* the last update is in */
  return copy_state(d, AX_COPY_D2H);
}

int ax_device_opt_grads_to_host(AxDeviceOpt *d, const void *device_grads) {
  return d->sum == AX_DEVICE_SUM_HOST ? ax_offload_download_grads(d->home, device_grads) : AX_OK;
}

AxAllreduceAlgo ax_device_opt_algo(const AxDeviceOpt *d, AxAllreduceAlgo wanted) {
  return d->sum == AX_DEVICE_SUM_DEVICE ? AX_ALLREDUCE_MPI : wanted;
}

/* The sum of squares of gradients [lo, hi) where they are (the host optimizer's own sum, bit
 * for bit, where device memory is host memory). */
static double span_sumsq(const AxDeviceOpt *d, const void *grads, size_t lo, size_t hi) {
  AxBackend *be = d->home->be;
  if (state_is_home(be)) return ax_host_sumsq_pool(d->home->pool, (const float *)grads + lo, hi - lo);
  return be->ops->sumsq(be, ax_at(be, (void *)grads, lo), hi - lo);
}

typedef struct {
  const AxDeviceOpt *d;
  const void *grads;
} Span;

static double device_span(void *ctx, size_t lo, size_t hi) {
  const Span *s = ctx;
  return span_sumsq(s->d, s->grads, lo, hi);
}

/* A failed reduction on the device surfaces at the sync. */
static int reduced(const AxDeviceOpt *d) {
  return state_is_home(d->home->be) ? AX_OK : ax_sync(d->home->be);
}

int ax_device_opt_reduce(AxDeviceOpt *d, const AxReduceSpec *r, void *device_grads,
                         double *sumsq) {
  AxOffload *o = d->home;
  if (d->sum == AX_DEVICE_SUM_HOST) return ax_offload_reduce_upload(o, r, device_grads, sumsq);
  if (d->sum == AX_DEVICE_SUM_DEVICE) {
    AxReduceSpec mpi = *r;
    mpi.algo = ax_device_opt_algo(d, r->algo);
    AX_TRY(ax_sync(o->be)); /* the backward pass has written them before MPI reads them */
    AX_TRY(ax_offload_reduce(o, &mpi, sumsq));
  }
  Span span = {d, device_grads};
  *sumsq = ax_reduce_spec_sumsq(r, 0, d->n, device_span, &span);
  return reduced(d);
}

int ax_device_opt_sumsq(AxDeviceOpt *d, const void *device_grads, double *sumsq) {
  *sumsq = span_sumsq(d, device_grads, 0, d->n);
  return reduced(d);
}

void ax_device_opt_update(AxDeviceOpt *d, void *device_params, const void *device_grads,
                          const AxAdamWHyper *h) {
  AxOffload *o = d->home;
  AxBackend *be = o->be;
  if (state_is_home(be)) {
    ax_adamw_update(o->pool, d->master, device_grads, d->m, d->v, 0, d->n, o->segs, o->n_segs,
                    h);
    return;
  }
  for (int s = 0; s < o->n_segs; s++) {
    const AxParamSegment *seg = &o->segs[s];
    AxAdamWCoef c = ax_adamw_coef(ax_adamw_settings(h, seg), seg->decay);
    be->ops->adamw(be, d->master + seg->offset, d->m + seg->offset, d->v + seg->offset,
                   ax_at(be, (void *)device_grads, seg->offset),
                   ax_at(be, device_params, seg->offset), seg->count, &c);
  }
}
