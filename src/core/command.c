/* command.c — the subcommand skeleton; see command.h. */
#include "command.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "log.h"

int ax_command_run(const AxCommandSpec *spec, int argc, char **argv) {
  void *config = ax_calloc(1, spec->config_bytes);
  AxOptState st;
  int rc = config ? ax_options_parse_with_args(spec->options, config, argc, argv,
                                               spec->max_positional, &st)
                  : AX_ERR;
  if (rc == AX_OK && st.help)
    ax_options_print_help(spec->options, stdout);
  else if (rc == AX_OK)
    rc = spec->run(config, &st);
  if (rc != AX_OK && ax_error_pending()) ax_print_error();
  if (config) ax_options_free(spec->options, config);
  free(config);
  return rc == AX_OK ? 0 : 1;
}

const AxCommand *ax_command_find(const AxCommand *table, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (!strcmp(table[i].name, name)) return &table[i];
  return NULL;
}

void ax_command_usage(FILE *out, const char *program, const AxCommand *table, int n) {
  fprintf(out, "Usage: %s COMMAND [options]   (%s COMMAND --help for its options)\n\n", program,
          program);
  for (int i = 0; i < n; i++) fprintf(out, "  %-10s %s\n", table[i].name, table[i].summary);
}

void ax_command_names(FILE *out, const AxCommand *table, int n) {
  for (int i = 0; i < n; i++) fprintf(out, "%s%s", i ? ", " : "", table[i].name);
}
