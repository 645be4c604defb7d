/* backend_cuda_plugin.c — the one symbol libaxonn-cuda.so exports (backend_plugin.h): the CUDA
 * backend's constructor and device probe, with the ABI they were built against. The rest of
 * the plugin is compiled with -fvisibility=hidden. */
#include "backend_cuda.h"
#include "backend_plugin.h"

static const AxBackendPlugin CUDA_PLUGIN = {
    .abi_version = AX_PLUGIN_ABI,
    .name = "cuda",
    .ops_size = sizeof(AxBackendOps),
    .backend_size = sizeof(AxBackend),
    .config_size = sizeof(AxBackendConfig),
    .create = ax_backend_cuda_create,
    .device_count = ax_cuda_device_count,
};

__attribute__((visibility("default"))) const AxBackendPlugin *ax_backend_plugin_v1(void) {
  return &CUDA_PLUGIN;
}
