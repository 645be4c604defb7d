/* backend_cuda.h — the inside of the CUDA plugin (libaxonn-cuda.so, built only where nvcc was
 * found): its constructor and device probe, which backend_cuda_plugin.c exports to the
 * registry (tests and tools reach them through ax_backend_create/ax_backend_device_count,
 * never directly), and the GPU-aware core binding used by backend_cuda.c (backend_cuda_bind.c).
 *
 * Contract of the CUDA backend (src/backend/backend_cuda.c), beyond backend.h:
 *  - one GPU per rank: device = local_rank % (visible devices);
 *  - compute type from AxBackendConfig.dtype: fp32, bf16 (compute capability 8.0+) or fp16;
 *    GEMMs through cuBLAS with fp32 accumulation, kernels compute in fp32;
 *  - the three AxStreams are three CUDA streams kept in program order: work put on the copy
 *    or comm stream waits for the compute work enqueued before it, and compute work enqueued
 *    later waits for it, so code written against the CPU backend stays correct; only the
 *    host runs ahead. Device-only work (kernels, GEMMs, device copies, zero) is asynchronous;
 *    a copy, upload or download that reads or writes host memory is done with the host
 *    buffer when it returns (it may be reused or read at once, as on the CPU backend);
 *  - an asynchronous failure (launch, cuBLAS, device fault) is recorded with file and line and
 *    every later copy/sync returns AX_ERR. */
#ifndef AX_BACKEND_CUDA_H
#define AX_BACKEND_CUDA_H

#include <stddef.h>

#include "backend.h"

/* The CUDA backend for cfg (the contract above); NULL with the error recorded. */
AxBackend *ax_backend_cuda_create(const AxBackendConfig *cfg);

/* Visible CUDA devices; 0 when there is none or no working driver, with the reason in `why`
 * (may be NULL). Initializes the CUDA runtime: do not fork afterwards. */
int ax_cuda_device_count(char *why, size_t cap);

/* Binding of this rank's threads to the cores nearest its GPU (hwloc's CUDA runtime helper
 * where hwloc/cudart.h exists; otherwise binding.c's per-rank core ranges). */
typedef struct AxCudaBinding AxCudaBinding;

/* NULL with the error recorded only when hwloc cannot read the topology. */
AxCudaBinding *ax_cuda_binding_create(int device, int n_devices, const AxBackendConfig *cfg);
void ax_cuda_binding_destroy(AxCudaBinding *b);
/* CPU threads this rank should use (cfg->threads when given, else its share of the cores). */
int ax_cuda_binding_threads(const AxCudaBinding *b);
/* One line, e.g. "bound to cores 0-7 (near GPU 0)" or "not bound (--bind 0)". */
const char *ax_cuda_binding_describe(const AxCudaBinding *b);

#endif
