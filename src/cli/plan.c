/* plan.c — `axonn plan`: the memory plan of `axonn train` with the same options, per rank,
 * without allocating anything (src/train/train_plan.h; the same as train --dry-run). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "src/core/error.h"
#include "src/core/log.h"
#include "src/train/train_plan.h"
#include "src/train/train_config.h"

/* --NAME (as --NAME or --NAME=1) selects another mode of plan: --rank-grids the grid search of
 * plan_grids.c, --failure-odds the in-memory checkpoint odds of plan_odds.c. */
static int wants_mode(int argc, char **argv, const char *name) {
  size_t len = strlen(name);
  for (int i = 1; i < argc; i++)
    if (!strncmp(argv[i], name, len) && (!argv[i][len] || !strcmp(argv[i] + len, "=1")))
      return 1;
  return 0;
}

/* argv less --compression (the train options do not know it); returns the new argc. */
static int drop_mode(int argc, char **argv, const char *name) {
  int n = 0;
  size_t len = strlen(name);
  for (int i = 0; i < argc; i++)
    if (i == 0 || strncmp(argv[i], name, len) || (argv[i][len] && strcmp(argv[i] + len, "=1")))
      argv[n++] = argv[i];
  argv[n] = NULL;
  return n;
}

int ax_cmd_plan(int argc, char **argv) {
  if (wants_mode(argc, argv, "--rank-grids")) return ax_cmd_plan_grids(argc, argv);
  if (wants_mode(argc, argv, "--failure-odds")) return ax_cmd_plan_odds(argc, argv);
  int compression = wants_mode(argc, argv, "--compression");
  if (compression) argc = drop_mode(argc, argv, "--compression");
  AxTrainConfig cfg;
  AxOptState st;
  int rc = ax_train_config_parse(&cfg, argc, argv, &st);
  if (rc == AX_OK && compression && !ax_train_compresses(&cfg)) {
    free(cfg.compression.compress); /* --compression alone: what --compress auto would decide */
    cfg.compression.compress = strdup("auto");
    rc = cfg.compression.compress ? ax_train_resolve_compression(&cfg, &st) : AX_FAIL("out of memory");
  }
  if (rc == AX_OK && st.help) {
    printf("axonn plan: the memory plan of `axonn train` with the same options, per rank, "
           "without allocating (same as train --dry-run).\n"
           "axonn plan --rank-grids: grids ranked by predicted communication time "
           "(axonn plan --rank-grids --help).\n"
           "axonn plan --failure-odds: the odds of recovering from in-memory checkpoints "
           "when nodes fail (axonn plan --failure-odds --help).\n"
           "axonn plan --compression: only the compression plan: the fused groups and each "
           "group's strategy (--compress auto unless --compress says otherwise), predicted "
           "times and how long deciding took.\n\n");
    ax_options_print_help(&AX_TRAIN_OPTIONS, stdout);
  } else {
    if (rc == AX_OK) rc = ax_train_config_check(&cfg, &st);
    if (rc == AX_OK) rc = compression ? ax_plan_print_compression(&cfg) : ax_plan_print(&cfg);
    if (rc != AX_OK) ax_print_error();
  }
  ax_train_config_free(&cfg);
  return rc == AX_OK ? 0 : 1;
}
