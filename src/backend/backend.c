/* backend.c — the registry of backends (ggml's backend-registry idea): the name given to
 * --device picks one; cpu is built in, cuda is a plugin (libaxonn-cuda.so, backend_plugin.h)
 * loaded on first use, so the executable itself links no CUDA library. */
#include "backend.h"

#include <string.h>

#include "backend_impl.h"
#include "cpu_storage16.h"
#include "plugin_load.h"
#include "src/core/error.h"

static const AxPluginSpec CUDA = {"cuda", "CUDA", "nvcc", "cuda"};

const char *ax_backends_available(void) { return "cpu, cuda"; }

/* The plugin behind `name`; NULL with the error recorded (unknown name, or it cannot load). */
static const AxBackendPlugin *plugin_for(const char *name) {
  if (!strcmp(name, CUDA.name)) return ax_plugin_load(&CUDA);
  AX_FAIL("unknown --device '%s' (available: %s)", name, ax_backends_available());
  return NULL;
}

AxBackend *ax_backend_create(const AxBackendConfig *cfg) {
  AxBackend *be = NULL;
  if (!strcmp(cfg->device, "cpu")) {
    int storage16 = cfg->cpu_storage16 && cfg->dtype != AX_DTYPE_F32;
    be = storage16 ? ax_backend_cpu16_create(cfg) : ax_backend_cpu_create(cfg);
  } else {
    const AxBackendPlugin *p = plugin_for(cfg->device);
    be = p ? p->create(cfg) : NULL;
  }
  if (be) be->fused_attention = cfg->fused_attention;
  return be;
}

int ax_backend_device_count(const char *name, char *why, size_t cap) {
  if (why && cap) why[0] = 0;
  if (!strcmp(name, "cpu")) return 1;
  const AxBackendPlugin *p = plugin_for(name);
  return p ? p->device_count(why, cap) : AX_ERR;
}

void ax_backend_destroy(AxBackend *be) {
  if (be) be->ops->destroy(be);
}
