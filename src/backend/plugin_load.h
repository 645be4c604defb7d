/* plugin_load.h — finding, loading and checking a backend plugin (backend_plugin.h) for the
 * registry (backend.c). */
#ifndef AX_PLUGIN_LOAD_H
#define AX_PLUGIN_LOAD_H

#include "backend_plugin.h"

/* A backend that lives in a plugin, and the words its errors use. */
typedef struct {
  const char *name;     /* --device name; the file is libaxonn-NAME.so */
  const char *toolkit;  /* what the build needs, e.g. "CUDA" */
  const char *compiler; /* what finds it at build time, e.g. "nvcc" */
  const char *module;   /* its environment module, e.g. "cuda" (`module load cuda`) */
} AxPluginSpec;

/* The plugin of spec->name, loaded on the first call and kept for the life of the process
 * (thread-safe). Looked for in $AXONN_PLUGIN_DIR when that is set (only there), else next to
 * the running executable (/proc/self/exe), then in ../lib/axonn/ from there. NULL with one
 * error recorded that says what to do: not found, not loadable (missing libraries, not a
 * shared object, symbols this executable lacks), not a plugin, or of another ABI version. */
const AxBackendPlugin *ax_plugin_load(const AxPluginSpec *spec);

#endif
