/* device_opt.h — the optimizer kept in device memory (--optimizer device): the fp32 master
 * weights and Adam moments beside the compute copy, AdamW run by the backend, the gradient norm
 * taken on the device. The alternative to the host arena's update (offload.h) where device
 * memory allows it: no weight upload a step, for 4x the model state on the device (AxoNN §V-B's
 * saving, given up).
 *
 * On many ranks the gradients are summed first, as the host optimizer sums them (the tied
 * embedding over its holders, then the data-parallel column through interleave.h's chunked
 * all-reduce, the norm's skipped spans alike), where ax_device_sum_path says: in device memory
 * handed to CUDA-aware MPI, or in host memory (the CPU backend's own, or a pinned staging copy
 * downloaded first and uploaded back a chunk at a time while later chunks are summed). Either
 * way the device gradients hold the sum before AdamW runs on the device.
 *
 * The host arena stays the home of checkpoints, memory copies and model files; its master
 * weights and moments are brought up to date from the device (ax_device_opt_to_host) before
 * anything reads them, and the device state from them after anything writes them. On a backend
 * whose memory is host memory (the CPU backend) the device state is the arena itself: the same
 * arrays, updated by the same host AdamW, bit for bit the host optimizer. */
#ifndef AX_DEVICE_OPT_H
#define AX_DEVICE_OPT_H

#include <stddef.h>

#include "interleave.h"
#include "offload.h"

/* Where --optimizer device sums its gradients over ranks. */
typedef enum {
  AX_DEVICE_SUM_NONE = 0, /* nothing to sum (one rank's stage, or no other holder) */
  AX_DEVICE_SUM_HOST,     /* in host memory: the backend's own, or a pinned staging copy */
  AX_DEVICE_SUM_DEVICE    /* in device memory, handed to CUDA-aware MPI, which sums it */
} AxDeviceSum;

/* The path for a rank that has gradients to sum (sums) on a backend whose memory is host
 * memory or not (is_host), with device buffers for MPI or not (device_buffers: mpi/cuda_aware.h)
 * and fp32 gradients or not; host_only: something of the sum runs host code on the gradients
 * (a bf16 wire, the sparse embedding sync, our own collectives across an emulated link).
 * DEVICE needs a device, device buffers, fp32 (MPI has no bf16 sum) and nothing host-only. */
AxDeviceSum ax_device_sum_path(int sums, int is_host, int device_buffers, int fp32,
                               int host_only);
/* One line for the run's header: where and how the gradients are summed. */
const char *ax_device_sum_describe(AxDeviceSum path);

typedef struct {
  AxOffload *home;   /* the host arena: segments, pool, and the state's home */
  AxDeviceSum sum;   /* from the arena: state only (NONE), grads on the device, or in host memory */
  size_t n;
  void *mem;         /* the device allocation (NULL where the state is the arena's) */
  size_t mem_bytes;
  float *master;     /* fp32 master weights: in mem, the fp32 compute copy, or the arena's */
  float *m, *v;      /* Adam moments */
} AxDeviceOpt;

/* Places the state of the stage whose host arena is `home` (device_params: the compute copy,
 * the master weights themselves when they are fp32). Nothing is copied yet. */
int ax_device_opt_init(AxDeviceOpt *d, AxOffload *home, void *device_params);
void ax_device_opt_free(AxDeviceOpt *d);
/* Device bytes the state adds for n parameters of compute-type size esz (for plans). */
size_t ax_device_opt_bytes(size_t n, size_t esz, int host_memory);

/* The arena's master weights and moments -> the device state, and back (synchronous). */
int ax_device_opt_from_host(AxDeviceOpt *d);
int ax_device_opt_to_host(AxDeviceOpt *d);

/* The gradients as the sum works on them: on AX_DEVICE_SUM_HOST with a staging copy, the
 * device's downloaded into it (synchronous); else nothing. Before anything sums the host copy. */
int ax_device_opt_grads_to_host(AxDeviceOpt *d, const void *device_grads);
/* The all-reduce over r->comm (chunks, window, skipped spans as for the host optimizer), after
 * which device_grads hold the sum (uploaded back from a staging copy chunk by chunk); *sumsq
 * gets the sum's sum of squares outside r's skipped spans (taken on the device where the sum
 * was). The algorithm on AX_DEVICE_SUM_DEVICE is ax_device_opt_algo's. AX_DEVICE_SUM_NONE:
 * the sum of squares only. */
int ax_device_opt_reduce(AxDeviceOpt *d, const AxReduceSpec *r, void *device_grads,
                         double *sumsq);
/* The all-reduce algorithm for the gradients: `wanted`, or AX_ALLREDUCE_MPI where they are in
 * device memory (our collectives add on the host; CUDA-aware MPI adds device buffers). */
AxAllreduceAlgo ax_device_opt_algo(const AxDeviceOpt *d, AxAllreduceAlgo wanted);

/* The sum of squares of the stage's gradients (synchronous). */
int ax_device_opt_sumsq(AxDeviceOpt *d, const void *device_grads, double *sumsq);
/* AdamW over every parameter, each segment with its decay decision; the new weights go to
 * the device compute copy (enqueued on the compute stream). */
void ax_device_opt_update(AxDeviceOpt *d, void *device_params, const void *device_grads,
                          const AxAdamWHyper *h);

#endif
