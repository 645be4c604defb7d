/* plugin_load.c — finds a backend plugin (libaxonn-NAME.so) in the search path, opens it with
 * dlopen, checks its entry point and ABI version, and keeps it loaded; every failure becomes
 * one error that names what to install, load or rebuild. See plugin_load.h. */
#include "plugin_load.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/core/error.h"

enum { MAX_PLUGINS = 4, MAX_DIRS = 2, DIR_CAP = 4096, EXE_CAP = DIR_CAP - 64 };

typedef struct {
  char dir[MAX_DIRS][DIR_CAP];
  int n;
  int from_env; /* dir[0] is $AXONN_PLUGIN_DIR */
} SearchPath;

typedef struct {
  const char *name;
  const AxBackendPlugin *plugin;
} Loaded;

static Loaded g_loaded[MAX_PLUGINS]; /* plugins loaded so far, never unloaded */
static int g_n_loaded;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

/* $AXONN_PLUGIN_DIR alone when set; else the executable's directory and ../lib/axonn. */
static void search_path(SearchPath *sp) {
  const char *env = getenv("AXONN_PLUGIN_DIR");
  char exe[EXE_CAP];
  sp->n = 0;
  sp->from_env = env && *env;
  if (sp->from_env) {
    snprintf(sp->dir[sp->n++], DIR_CAP, "%s", env);
    return;
  }
  ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (len <= 0) return;
  exe[len] = 0;
  char *slash = strrchr(exe, '/');
  if (!slash) return;
  *slash = 0;
  snprintf(sp->dir[sp->n++], DIR_CAP, "%s", exe);
  snprintf(sp->dir[sp->n++], DIR_CAP, "%s/../lib/axonn", exe);
}

/* The first directory holding `file`, its path in `path`; -1 when none does. */
static int find(const SearchPath *sp, const char *file, char *path, size_t cap) {
  for (int i = 0; i < sp->n; i++) {
    snprintf(path, cap, "%s/%s", sp->dir[i], file);
    if (access(path, F_OK) == 0) return i;
  }
  return -1;
}

static const AxBackendPlugin *not_found(const AxPluginSpec *s, const SearchPath *sp,
                                        const char *file) {
  char where[2 * DIR_CAP + 32] = "";
  if (sp->from_env)
    snprintf(where, sizeof where, " in AXONN_PLUGIN_DIR=%s", sp->dir[0]);
  else if (sp->n == MAX_DIRS)
    snprintf(where, sizeof where, " in %s or %s", sp->dir[0], sp->dir[1]);
  AX_FAIL("--device %s: no %s%s: this axonn was built without %s (no %s at build time), or %s "
          "is not next to the binary: rebuild where %s is found, or set AXONN_PLUGIN_DIR",
          s->name, file, where, s->toolkit, s->compiler, file, s->compiler);
  return NULL;
}

/* dlopen failed: glibc prefixes the plugin's path when the plugin itself is at fault (not an
 * ELF shared object, a symbol this executable lacks) and names the library otherwise (one the
 * plugin needs is missing or does not match). */
static const AxBackendPlugin *not_loadable(const AxPluginSpec *s, const char *path,
                                           const char *err) {
  size_t plen = strlen(path);
  int own = !strncmp(err, path, plen) && !strncmp(err + plen, ": ", 2);
  const char *why = own ? err + plen + 2 : err;
  if (!own)
    AX_FAIL("--device %s: cannot load %s: %s; load the %s libraries, e.g. `module load %s`, or "
            "add them to LD_LIBRARY_PATH", s->name, path, why, s->toolkit, s->module);
  else if (strstr(why, "undefined symbol"))
    AX_FAIL("--device %s: cannot load %s: %s; it was built with another axonn: use the plugin "
            "built with this one (make), or set AXONN_PLUGIN_DIR to its directory", s->name, path,
            why);
  else
    AX_FAIL("--device %s: cannot load %s: %s; it is not a plugin for this machine: rebuild it "
            "(make) or remove it", s->name, path, why);
  return NULL;
}

/* The plugin's description, checked against this axonn; NULL with the error recorded. */
static const AxBackendPlugin *describe(const AxPluginSpec *s, void *handle, const char *path) {
  dlerror();
  void *sym = dlsym(handle, AX_PLUGIN_ENTRY);
  const AxBackendPlugin *p = sym ? ((AxPluginEntry)sym)() : NULL;
  const char *use = "use the plugin built with this axonn (make), or set AXONN_PLUGIN_DIR to its "
                    "directory";
  if (!p)
    AX_FAIL("--device %s: %s is not an axonn backend plugin (no %s): rebuild it (make) or "
            "remove it", s->name, path, AX_PLUGIN_ENTRY);
  else if (p->abi_version != AX_PLUGIN_ABI)
    AX_FAIL("--device %s: %s has plugin ABI version %d, this axonn needs version %d: %s", s->name,
            path, p->abi_version, AX_PLUGIN_ABI, use);
  else if (p->ops_size != sizeof(AxBackendOps) || p->backend_size != sizeof(AxBackend) ||
           p->config_size != sizeof(AxBackendConfig))
    AX_FAIL("--device %s: %s was built from other sources than this axonn (plugin ABI %d, but "
            "the backend structs differ): %s", s->name, path, AX_PLUGIN_ABI, use);
  else if (!p->name || strcmp(p->name, s->name) || !p->create || !p->device_count)
    AX_FAIL("--device %s: %s is not the '%s' backend (it says '%s'): %s", s->name, path, s->name,
            p->name ? p->name : "?", use);
  else
    return p;
  return NULL;
}

static const AxBackendPlugin *load(const AxPluginSpec *s) {
  char file[128], path[DIR_CAP + 160];
  SearchPath sp;
  snprintf(file, sizeof file, "libaxonn-%s.so", s->name);
  search_path(&sp);
  if (find(&sp, file, path, sizeof path) < 0) return not_found(s, &sp, file);
  void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *err = dlerror();
    return not_loadable(s, path, err ? err : "unknown dlopen error");
  }
  const AxBackendPlugin *p = describe(s, handle, path);
  if (!p) dlclose(handle);
  return p;
}

const AxBackendPlugin *ax_plugin_load(const AxPluginSpec *spec) {
  const AxBackendPlugin *p = NULL;
  pthread_mutex_lock(&g_lock);
  for (int i = 0; i < g_n_loaded && !p; i++)
    if (!strcmp(g_loaded[i].name, spec->name)) p = g_loaded[i].plugin;
  if (!p && (p = load(spec)) != NULL && g_n_loaded < MAX_PLUGINS)
    g_loaded[g_n_loaded++] = (Loaded){spec->name, p};
  pthread_mutex_unlock(&g_lock);
  return p;
}
