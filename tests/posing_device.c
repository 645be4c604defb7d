/* posing_device.c — the CPU backend posing as a separate device; see posing_device.h. */
#include "posing_device.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "offload/adamw.h"
#include "src/core/error.h"
#include "testutil.h"

typedef struct {
  const char *p;
  size_t bytes;
  int device;
} Range;

typedef struct {
  void *dst;
  const void *src;
  size_t bytes;
} Pending;

typedef struct {
  AxBackend be; /* first: the AxBackend the library sees */
  AxBackendOps ops;
  AxBackend *cpu;
  Range *ranges;
  int n_ranges, cap_ranges;
  Pending *queue;
  int n_queue, cap_queue;
  unsigned long long copied[AX_COPY_H2H + 1]; /* bytes, by kind */
  int eager; /* device-to-device copies run at once */
} Posing;

static Posing *posing(AxBackend *be) { return (Posing *)be; }

static void grow(void **array, int *cap, int need, size_t elem) {
  if (need <= *cap) return;
  int cap2 = *cap ? 2 * *cap : 64;
  while (cap2 < need) cap2 *= 2;
  void *grown = realloc(*array, (size_t)cap2 * elem);
  ck_assert_ptr_nonnull(grown);
  *array = grown;
  *cap = cap2;
}

static void remember(Posing *ps, const void *p, size_t bytes, int device) {
  grow((void **)&ps->ranges, &ps->cap_ranges, ps->n_ranges + 1, sizeof *ps->ranges);
  ps->ranges[ps->n_ranges++] = (Range){p, bytes ? bytes : 1, device};
}

static void forget(Posing *ps, const void *p) {
  for (int i = 0; i < ps->n_ranges; i++)
    if (ps->ranges[i].p == p) {
      ps->ranges[i] = ps->ranges[--ps->n_ranges];
      return;
    }
}

static const Range *range_of(const Posing *ps, const void *p, size_t bytes) {
  const char *c = p;
  for (int i = 0; i < ps->n_ranges; i++) {
    const Range *r = &ps->ranges[i];
    if (c >= r->p && c < r->p + r->bytes) return c + bytes <= r->p + r->bytes ? r : NULL;
  }
  return NULL;
}

int tu_posing_is_device(AxBackend *be, const void *p) {
  const Range *r = range_of(posing(be), p, 1);
  return r && r->device;
}

void tu_posing_set_eager(AxBackend *be, int eager) { posing(be)->eager = eager; }

AxBackend *tu_posing_make_eager(const AxBackendConfig *bc, void *ctx) {
  AxBackend *be = tu_posing_backend_of(bc->dtype);
  tu_posing_set_eager(be, 1);
  *(AxBackend **)ctx = be;
  return be;
}

int tu_posing_pending(AxBackend *be) { return posing(be)->n_queue; }

unsigned long long tu_posing_copied(AxBackend *be, AxCopyKind kind) {
  return posing(be)->copied[kind];
}

/* Runs the deferred device-to-device copies, in the order they were enqueued. */
static void drain(Posing *ps) {
  for (int i = 0; i < ps->n_queue; i++)
    memmove(ps->queue[i].dst, ps->queue[i].src, ps->queue[i].bytes);
  ps->n_queue = 0;
}

static void *posing_alloc(AxBackend *be, size_t bytes) {
  Posing *ps = posing(be);
  void *p = ps->cpu->ops->alloc(ps->cpu, bytes);
  if (p) remember(ps, p, bytes, 1);
  return p;
}

static void posing_free(AxBackend *be, void *p) {
  Posing *ps = posing(be);
  drain(ps);
  forget(ps, p);
  ps->cpu->ops->free(ps->cpu, p);
}

static void *posing_host_alloc(AxBackend *be, size_t bytes) {
  Posing *ps = posing(be);
  void *p = ps->cpu->ops->host_alloc(ps->cpu, bytes);
  if (p) remember(ps, p, bytes, 0);
  return p;
}

static void posing_host_free(AxBackend *be, void *p) {
  Posing *ps = posing(be);
  drain(ps);
  forget(ps, p);
  ps->cpu->ops->host_free(ps->cpu, p);
}

static const char *const KIND[] = {"H2D", "D2H", "D2D", "H2H"};

/* Where a side of a copy must be: device memory (wholly inside one device allocation) or not. */
static int check_side(const Posing *ps, const void *p, size_t bytes, int want_device,
                      AxCopyKind kind, const char *side) {
  const Range *start = range_of(ps, p, 1);
  int device = start && start->device;
  if (want_device && !device)
    return AX_FAIL("posing device: %s copy of %zu bytes with the %s %p in host memory", KIND[kind],
                   bytes, side, p);
  if (want_device && !range_of(ps, p, bytes))
    return AX_FAIL("posing device: %s copy of %zu bytes with the %s %p running past the end of "
                   "its device allocation", KIND[kind], bytes, side, p);
  if (!want_device && device)
    return AX_FAIL("posing device: %s copy of %zu bytes with the %s %p in device memory",
                   KIND[kind], bytes, side, p);
  return AX_OK;
}

static int posing_copy(AxBackend *be, void *dst, const void *src, size_t bytes, AxCopyKind kind,
                       AxStream s) {
  (void)s;
  Posing *ps = posing(be);
  if ((unsigned)kind > AX_COPY_H2H) return AX_FAIL("posing device: copy kind %d", (int)kind);
  int src_dev = kind == AX_COPY_D2H || kind == AX_COPY_D2D;
  int dst_dev = kind == AX_COPY_H2D || kind == AX_COPY_D2D;
  if (!bytes) return AX_OK;
  AX_TRY(check_side(ps, src, bytes, src_dev, kind, "source"));
  AX_TRY(check_side(ps, dst, bytes, dst_dev, kind, "destination"));
  ps->copied[kind] += bytes;
  if (kind == AX_COPY_D2D && !ps->eager) {
    grow((void **)&ps->queue, &ps->cap_queue, ps->n_queue + 1, sizeof *ps->queue);
    ps->queue[ps->n_queue++] = (Pending){dst, src, bytes};
    return AX_OK;
  }
  drain(ps); /* a copy that touches host memory completes with the stream's earlier work */
  memmove(dst, src, bytes);
  return AX_OK;
}

static int posing_sync(AxBackend *be, AxStream s) {
  (void)s;
  drain(posing(be));
  return AX_OK;
}

/* fp32 host <-> compute type device: a copy of its kind, checked and counted (the device's
 * bytes) as posing_copy's; a 16-bit device converts as the CPU backend under it does. */
static int posing_convert(AxBackend *be, void *dst, const void *src, size_t n, AxCopyKind kind,
                          AxStream s) {
  Posing *ps = posing(be);
  if (be->dtype == AX_DTYPE_F32) return posing_copy(be, dst, src, n * sizeof(float), kind, s);
  int up = kind == AX_COPY_H2D;
  size_t bytes = n * be->esz;
  if (!n) return AX_OK;
  AX_TRY(check_side(ps, up ? src : dst, n * sizeof(float), 0, kind, up ? "source" : "destination"));
  AX_TRY(check_side(ps, up ? dst : src, bytes, 1, kind, up ? "destination" : "source"));
  ps->copied[kind] += bytes;
  drain(ps);
  return up ? ps->cpu->ops->upload_f32(ps->cpu, dst, src, n, s)
            : ps->cpu->ops->download_f32(ps->cpu, dst, src, n, s);
}

static int posing_upload_f32(AxBackend *be, void *dst, const float *src, size_t n, AxStream s) {
  return posing_convert(be, dst, src, n, AX_COPY_H2D, s);
}

static int posing_download_f32(AxBackend *be, float *dst, const void *src, size_t n, AxStream s) {
  return posing_convert(be, dst, src, n, AX_COPY_D2H, s);
}

/* The device AdamW (backend.h), here on host memory with the host's kernel: fp32 only. */
static void posing_adamw(AxBackend *be, float *p, float *m, float *v, const void *g, void *w,
                         size_t n, const AxAdamWCoef *c) {
  drain(posing(be));
  ax_adamw_range_coef(p, g, m, v, n, c);
  if (w != p) memcpy(w, p, n * sizeof *p);
}

static void posing_destroy(AxBackend *be) {
  Posing *ps = posing(be);
  drain(ps);
  ax_backend_destroy(ps->cpu);
  free(ps->ranges);
  free(ps->queue);
  free(ps);
}

AxBackend *tu_posing_backend(void) { return tu_posing_backend_of(AX_DTYPE_F32); }

AxBackend *tu_posing_backend_of(AxDType t) {
  Posing *ps = calloc(1, sizeof *ps);
  ck_assert_ptr_nonnull(ps);
  AxBackendConfig bc = {.device = "cpu", .dtype = t, .threads = 1, .local_size = 1,
                        .cpu_storage16 = 1};
  ps->cpu = t == AX_DTYPE_F32 ? tu_backend(1) : ax_backend_create(&bc);
  ck_assert_msg(ps->cpu != NULL, "backend: %s", ax_error_message());
  ps->be = *ps->cpu;
  ps->ops = *ps->cpu->ops;
  ps->ops.name = "posing-device";
  ps->ops.destroy = posing_destroy;
  ps->ops.alloc = posing_alloc;
  ps->ops.free = posing_free;
  ps->ops.host_alloc = posing_host_alloc;
  ps->ops.host_free = posing_host_free;
  ps->ops.copy = posing_copy;
  ps->ops.sync = posing_sync;
  ps->ops.upload_f32 = posing_upload_f32;
  ps->ops.download_f32 = posing_download_f32;
  ps->ops.adamw = posing_adamw;
  ps->be.ops = &ps->ops;
  ps->be.is_host = 0;
  return &ps->be;
}
