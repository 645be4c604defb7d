/* shm_clean.c — `axonn shm-clean`: removes the in-memory checkpoints a dead job left on this
 * node (DIR/axonn-NAME, docs/memory-checkpoints.md). A run that ends normally removes its own;
 * one killed leaves them, for --resume to recover from. Only trees that are axonn's (marker
 * and layout checked, this user's, no link) and that no live job holds are removed. */
#include <dirent.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "src/core/command.h"
#include "src/core/error.h"
#include "src/core/log.h"
#include "src/core/options.h"
#include "src/memckpt/memckpt_store.h"

typedef struct {
  char *run_name, *memory_dir;
  int all;
} ShmCleanConfig;

static const AxOption SHM_CLEAN_OPTS[] = {
    {"run-name", AX_OPT_STRING, offsetof(ShmCleanConfig, run_name), NULL, "NAME",
     "the run whose memory checkpoints to remove (as train's --run-name, or the name its "
     "header printed)", 0, 0, NULL},
    {"all", AX_OPT_FLAG, offsetof(ShmCleanConfig, all), "0", NULL,
     "remove every memory-checkpoint tree of this user under --memory-dir that no live job "
     "holds (others are listed and kept)", 0, 1, NULL},
    {"memory-dir", AX_OPT_STRING, offsetof(ShmCleanConfig, memory_dir), "/dev/shm", "DIR",
     "where memory checkpoints live", 0, 0, NULL},
};
static const AxOptionTable SHM_CLEAN_TABLE = {
    "shm-clean",
    "Usage: axonn shm-clean --run-name NAME | --all [--memory-dir DIR]: remove the in-memory "
    "checkpoints a dead job left on this node (run it on every node).",
    SHM_CLEAN_OPTS, 3};

/* Removes one tree, claimed first (axonn's, and no live job's: see memckpt.h). */
static int remove_run(const char *root, const char *name) {
  char dir[AX_MEMCKPT_PATH];
  ax_memckpt_run_dir(root, name, dir);
  AxMemTree tree;
  AX_TRY(ax_memckpt_claim_tree(root, name, &tree));
  if (tree.missing) {
    ax_log("no memory checkpoints at %s", dir);
    return AX_OK;
  }
  int rc = ax_memckpt_remove_tree(dir);
  ax_memckpt_release_tree(&tree);
  AX_TRY(rc);
  ax_log("removed %s", dir);
  return AX_OK;
}

/* Every tree of this user that can be removed; the others are named, with the reason. */
static int remove_all(const char *root) {
  DIR *d = opendir(root);
  if (!d) return AX_FAIL("cannot open --memory-dir %s", root);
  struct dirent *e;
  int removed = 0, kept = 0;
  while ((e = readdir(d))) {
    if (strncmp(e->d_name, "axonn-", 6) || ax_memckpt_check_name(e->d_name + 6) != AX_OK) {
      ax_error_clear();
      continue;
    }
    if (remove_run(root, e->d_name + 6) == AX_OK) {
      removed++;
      continue;
    }
    ax_log("kept %s/%s: %s", root, e->d_name, ax_error_message());
    ax_error_clear();
    kept++;
  }
  closedir(d);
  if (removed + kept == 0) ax_log("no memory checkpoints under %s", root);
  return AX_OK;
}

static int run_shm_clean(void *config, const AxOptState *st) {
  const ShmCleanConfig *c = config;
  (void)st;
  if (c->all == !!c->run_name)
    return AX_FAIL("shm-clean needs exactly one of --run-name NAME and --all");
  if (c->all) return remove_all(c->memory_dir);
  AX_TRY(ax_memckpt_check_name(c->run_name));
  return remove_run(c->memory_dir, c->run_name);
}

int ax_cmd_shm_clean(int argc, char **argv) {
  static const AxCommandSpec spec = {&SHM_CLEAN_TABLE, sizeof(ShmCleanConfig), 0, run_shm_clean};
  return ax_command_run(&spec, argc, argv);
}
