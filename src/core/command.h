/* command.h — the skeleton every subcommand with an option table shares: parse the options
 * (and up to max_positional file names) into a zeroed config, answer --help, run, print the
 * error once, free, and turn the outcome into the exit status (0, or 1). A run that fails
 * without recording an error (it reported the failure itself, e.g. compare's differences)
 * exits 1 without another line. */
#ifndef AX_COMMAND_H
#define AX_COMMAND_H

#include <stddef.h>
#include <stdio.h>

#include "options.h"

typedef struct {
  const AxOptionTable *options;
  size_t config_bytes;   /* the config struct the table fills */
  int max_positional;    /* file names besides the options (st->positional) */
  int (*run)(void *config, const AxOptState *st);
} AxCommandSpec;

int ax_command_run(const AxCommandSpec *spec, int argc, char **argv);

/* A (sub)command of a table: its name, its entry point (argv[0] = the name), one line of
 * what it does. `axonn` and `axonn bench` dispatch and print their usage from such tables. */
typedef struct {
  const char *name;
  int (*run)(int argc, char **argv);
  const char *summary;
} AxCommand;

const AxCommand *ax_command_find(const AxCommand *table, int n, const char *name);
/* "Usage: PROGRAM COMMAND [options] ..." and one line per command. */
void ax_command_usage(FILE *out, const char *program, const AxCommand *table, int n);
/* "a, b, c" */
void ax_command_names(FILE *out, const AxCommand *table, int n);

#endif
