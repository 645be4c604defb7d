/* backend_impl.h — constructors of the backends built into the executable, used only by the
 * registry (backend.c); backends in plugins are reached through backend_plugin.h. */
#ifndef AX_BACKEND_IMPL_H
#define AX_BACKEND_IMPL_H

#include "backend.h"

AxBackend *ax_backend_cpu_create(const AxBackendConfig *cfg);

#endif
