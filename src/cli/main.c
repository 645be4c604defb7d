/* main.c — bin/axonn: dispatches to a subcommand of the table in commands.c. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "src/core/provenance.h"
#include "src/core/sanitizer.h"

int main(int argc, char **argv) {
  ax_sanitizer_keep_libraries();
  ax_provenance_start(argc, argv);
  if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
      !strcmp(argv[1], "help")) {
    ax_commands_usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (!strcmp(argv[1], "--version")) return ax_cmd_version(argc - 1, argv + 1);
  const AxCommand *c = ax_command_find(AX_COMMANDS, AX_N_COMMANDS, argv[1]);
  if (c) return c->run(argc - 1, argv + 1);
  fprintf(stderr, "axonn: error: unknown command '%s' (commands: ", argv[1]);
  ax_command_names(stderr, AX_COMMANDS, AX_N_COMMANDS);
  fprintf(stderr, "; see axonn --help)\n");
  return 2;
}
