/* backend.c — picks the backend named by --device and describes data types. */
#include "backend.h"

#include <string.h>

#include "backend_impl.h"
#include "src/core/error.h"

const char *ax_backends_available(void) {
#ifdef AX_HAVE_CUDA
  return "cpu, cuda";
#else
  return "cpu";
#endif
}

AxBackend *ax_backend_create(const AxBackendConfig *cfg) {
  if (!strcmp(cfg->device, "cpu")) return ax_backend_cpu_create(cfg);
  if (!strcmp(cfg->device, "cuda")) {
#ifdef AX_HAVE_CUDA
    return ax_backend_cuda_create(cfg);
#else
    AX_FAIL("--device cuda: this axonn was built without CUDA (no nvcc at build time); "
            "rebuild where nvcc is found, or use --device cpu");
    return NULL;
#endif
  }
  AX_FAIL("unknown --device '%s' (available: %s)", cfg->device, ax_backends_available());
  return NULL;
}

void ax_backend_destroy(AxBackend *be) {
  if (be) be->ops->destroy(be);
}
