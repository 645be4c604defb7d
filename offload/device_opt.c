/* device_opt.c — the optimizer state in device memory and its AdamW; see device_opt.h. */
#include "device_opt.h"

#include <string.h>

#include "host_sumsq.h"
#include "src/core/error.h"

/* The state is the arena's own where device memory is host memory. */
static int state_is_home(const AxBackend *be) { return be->is_host; }

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
  if (state_is_home(be)) {
    if (be->dtype != AX_DTYPE_F32 || !home->params_alias)
      return AX_FAIL("internal: a host-memory backend keeps fp32 weights as the master");
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

int ax_device_opt_sumsq(AxDeviceOpt *d, const void *device_grads, double *sumsq) {
  AxOffload *o = d->home;
  AxBackend *be = o->be;
  if (state_is_home(be)) { /* the host optimizer's own sum, bit for bit */
    *sumsq = ax_host_sumsq_pool(o->pool, device_grads, d->n);
    return AX_OK;
  }
  *sumsq = be->ops->sumsq(be, device_grads, d->n);
  return ax_sync(be); /* a failed reduction surfaces here */
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
    AxAdamWCoef c = ax_adamw_coef(h, seg->decay);
    be->ops->adamw(be, d->master + seg->offset, d->m + seg->offset, d->v + seg->offset,
                   ax_at(be, (void *)device_grads, seg->offset),
                   ax_at(be, device_params, seg->offset), seg->count, &c);
  }
}
