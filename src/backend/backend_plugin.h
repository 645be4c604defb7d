/* backend_plugin.h — the binary interface between axonn and a backend plugin: a shared object
 * libaxonn-NAME.so (the CUDA backend is libaxonn-cuda.so) that the registry (backend.c) loads
 * with dlopen the first time `--device NAME` is used; plugin_load.c finds and checks it.
 *
 * A plugin exports one symbol, ax_backend_plugin_v1 (AX_PLUGIN_ENTRY), returning a description
 * of its backend. Everything else it calls in axonn (errors, allocation, core binding, the
 * data-type helpers of backend.h) comes from the executable that loads it, which is linked
 * with -rdynamic and the whole of libaxonn.a, so those symbols resolve at dlopen time.
 *
 * The entry's name fixes how it is called and that the struct starts with abi_version;
 * AX_PLUGIN_ABI covers the rest: this struct, AxBackendOps, AxBackend, AxBackendConfig and the
 * core functions a plugin calls. Change any of them and bump it. The loader refuses a plugin
 * of another version, and also compares the three structs' sizes (a forgotten bump). */
#ifndef AX_BACKEND_PLUGIN_H
#define AX_BACKEND_PLUGIN_H

#include <stddef.h>

#include "backend.h"

#define AX_PLUGIN_ABI 1
#define AX_PLUGIN_ENTRY "ax_backend_plugin_v1"

typedef struct {
  int abi_version;  /* AX_PLUGIN_ABI the plugin was built with: always the first member */
  const char *name; /* the --device name, e.g. "cuda" */
  size_t ops_size, backend_size, config_size; /* sizeof AxBackendOps, AxBackend, AxBackendConfig */
  /* The backend for cfg; NULL with the error recorded. */
  AxBackend *(*create)(const AxBackendConfig *cfg);
  /* Devices this backend can use; 0 with the reason in why (may be NULL) when there is none. */
  int (*device_count)(char *why, size_t cap);
} AxBackendPlugin;

typedef const AxBackendPlugin *(*AxPluginEntry)(void);

/* Defined by each plugin (its only exported symbol); never by the executable. */
const AxBackendPlugin *ax_backend_plugin_v1(void);

#endif
