/* cpu_storage16.h — the CPU backend over bf16 or fp16 storage (--device cpu --precision
 * bf16|fp16 in training runs): activations, weights and gradients hold the 16-bit type as on a
 * GPU; every kernel widens its 16-bit operands to fp32, runs the fp32 CPU kernel (fp32
 * arithmetic and accumulation, GEMMs through CBLAS) and rounds each 16-bit result once, to
 * nearest even — the contract of the CUDA backend's kernels (cuBLAS with fp32 compute, the
 * kernels of cuda_kernels.cu and cuda_tp_kernels.cu), not their summation order. Row
 * statistics, losses and token ids stay fp32/int32, as backend.h says.
 *
 * It exists to run and test the mixed-precision paths (tensor parallelism in bf16/fp16, loss
 * scaling) where no GPU is: the conversions cost more than the arithmetic they wrap, so it is
 * no benchmark of 16-bit compute, and `axonn bench` does not take it. Its memory is host memory
 * (is_host), its fp32 scratch is allocated per kernel; a failed allocation skips the kernel
 * and surfaces at the next sync or copy as AX_ERR. */
#ifndef AX_CPU_STORAGE16_H
#define AX_CPU_STORAGE16_H

#include "backend.h"

/* cfg->dtype: AX_DTYPE_BF16 or AX_DTYPE_F16; NULL with the error recorded on failure. */
AxBackend *ax_backend_cpu16_create(const AxBackendConfig *cfg);

#endif
