/* device_opt.h — the optimizer kept in device memory (--optimizer device): the fp32 master
 * weights and Adam moments beside the compute copy, AdamW run by the backend, the gradient norm
 * taken on the device. The alternative to the host arena's update (offload.h) where device
 * memory allows it: no gradient download and no weight upload a step, for 4x the model state on
 * the device (AxoNN §V-B's saving, given up). One rank's stage: nothing to sum over ranks.
 *
 * The host arena stays the home of checkpoints, memory copies and model files; its master
 * weights and moments are brought up to date from the device (ax_device_opt_to_host) before
 * anything reads them, and the device state from them after anything writes them. On a backend
 * whose memory is host memory (the CPU backend) the device state is the arena itself: the same
 * arrays, updated by the same host AdamW, bit for bit the host optimizer. */
#ifndef AX_DEVICE_OPT_H
#define AX_DEVICE_OPT_H

#include <stddef.h>

#include "offload.h"

typedef struct {
  AxOffload *home;   /* the host arena: segments, pool, and the state's home */
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

/* The sum of squares of the stage's gradients (synchronous). */
int ax_device_opt_sumsq(AxDeviceOpt *d, const void *device_grads, double *sumsq);
/* AdamW over every parameter, each segment with its decay decision; the new weights go to
 * the device compute copy (enqueued on the compute stream). */
void ax_device_opt_update(AxDeviceOpt *d, void *device_params, const void *device_grads,
                          const AxAdamWHyper *h);

#endif
