/* backend_impl.h — constructors of the concrete backends, used only by backend.c. */
#ifndef AX_BACKEND_IMPL_H
#define AX_BACKEND_IMPL_H

#include "backend.h"

AxBackend *ax_backend_cpu_create(const AxBackendConfig *cfg);
#ifdef AX_HAVE_CUDA
AxBackend *ax_backend_cuda_create(const AxBackendConfig *cfg);
#endif

#endif
