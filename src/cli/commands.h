/* commands.h — the subcommands of bin/axonn, in one table (commands.c) that main's dispatch,
 * `axonn --help` and the README's command list (checked by tests/cli_basic.sh) come from. Each
 * takes argv with argv[0] = its own name and returns the process exit status; each prints its
 * own errors. */
#ifndef AX_COMMANDS_H
#define AX_COMMANDS_H

#include <stdio.h>

#include "src/core/command.h"

extern const AxCommand AX_COMMANDS[];
extern const int AX_N_COMMANDS;

/* `axonn --help`: the commands, then the benchmarks of `axonn bench`. */
void ax_commands_usage(FILE *out);

int ax_cmd_train(int argc, char **argv);  /* src/cli/train.c */
int ax_cmd_prep(int argc, char **argv);   /* src/cli/prep.c */
int ax_cmd_sample(int argc, char **argv); /* src/cli/sample.c */
int ax_cmd_compare(int argc, char **argv); /* src/cli/compare.c */
int ax_cmd_export(int argc, char **argv); /* src/cli/export.c: a checkpoint to an llm.c file */
int ax_cmd_plan(int argc, char **argv);   /* src/cli/plan.c: memory per rank, nothing allocated */
/* src/cli/plan_grids.c: `plan --rank-grids`, grids ranked by predicted communication time */
int ax_cmd_plan_grids(int argc, char **argv);
/* src/cli/plan_odds.c: `plan --failure-odds`, recovery odds of in-memory checkpoints */
int ax_cmd_plan_odds(int argc, char **argv);
int ax_cmd_simulate(int argc, char **argv); /* src/cli/simulate.c: a run, simulated */
int ax_cmd_profile(int argc, char **argv);  /* src/cli/profile.c: costs for simulate */
int ax_cmd_shm_clean(int argc, char **argv); /* src/cli/shm_clean.c */
int ax_cmd_version(int argc, char **argv);

/* src/cli/train.c: MPI started for a command that runs on several ranks (threads serialized,
 * MPI errors returned to the caller, this rank known to the error reports). */
int ax_cli_start_mpi(int *argc, char ***argv);

#endif
