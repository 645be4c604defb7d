/* posing_device.h — the CPU backend posing as a device whose memory is not the host's, for
 * testing the device paths without a GPU (test_offload sets is_host = 0 for the same reason;
 * this goes further). Memory from alloc is "device" memory, memory from host_alloc "host"
 * memory (anything else, such as malloc'd or stack memory, is host memory too). Every copy
 * checks its kind against where its pointers came from and fails, as a GPU would, when they do
 * not match (a D2D copy from host memory, an H2D copy into host memory...). Device-to-device
 * copies are asynchronous, as cudaMemcpyAsync's are: they run at the next sync or the next copy
 * that touches host memory on any stream, so code that hands a buffer to someone else (MPI)
 * before synchronizing is caught reading or overwriting it too early. It is meant for the copy
 * paths (p2p engine, scheduler): its kernels are the CPU backend's and run at once, ahead of
 * any pending device-to-device copy; it has the device AdamW (backend.h's adamw) too, the host
 * kernel's, for the device optimizer (offload/device_opt.h), after the pending copies. */
#ifndef AX_POSING_DEVICE_H
#define AX_POSING_DEVICE_H

#include "src/backend/backend.h"

/* A posing CPU backend (one thread); aborts the test on failure. Destroy with
 * ax_backend_destroy. */
AxBackend *tu_posing_backend(void);
/* The same over the CPU backend of compute type t: fp32, or bf16/fp16 storage
 * (src/backend/cpu_storage16.h; its kernels, and upload_f32/download_f32 converting). */
AxBackend *tu_posing_backend_of(AxDType t);
/* 1 when p lies in memory this posing backend allocated as device memory. */
int tu_posing_is_device(AxBackend *be, const void *p);
/* eager 1: device-to-device copies run at once, as the kernels do (for whole training runs,
 * where a kernel reads what a copy before it on the stream wrote; every copy's kind is still
 * checked). 0, the default: they wait for the next sync, as above. */
void tu_posing_set_eager(AxBackend *be, int eager);
/* A backend maker for ax_trainer_create_on (src/train/trainer.h): a posing backend of the run's
 * compute type (bc->dtype) with eager
 * device-to-device copies (a training run's kernels read what the copies before them wrote,
 * such as a received pipeline message), also stored in *(AxBackend **)ctx for its counters. */
AxBackend *tu_posing_make_eager(const AxBackendConfig *bc, void *ctx);
/* Device-to-device copies enqueued and not yet run. */
int tu_posing_pending(AxBackend *be);
/* Bytes copied so far by copies of `kind` (AX_COPY_H2D...: what a path moved between host and
 * device). */
unsigned long long tu_posing_copied(AxBackend *be, AxCopyKind kind);

#endif
