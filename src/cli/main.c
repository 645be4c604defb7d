/* main.c — bin/axonn: dispatches to a subcommand. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "src/core/sanitizer.h"

#ifndef AX_VERSION
#define AX_VERSION "0.1.0"
#endif

typedef struct {
  const char *name;
  int (*run)(int argc, char **argv);
  const char *help;
} Command;

static const Command COMMANDS[] = {
    {"train", ax_cmd_train, "train a GPT-2 model (one process or an MPI grid)"},
    {"prep", ax_cmd_prep, "turn a text file into token shards (bytes or GPT-2 BPE)"},
    {"sample", ax_cmd_sample, "generate text from a saved model"},
    {"bench", ax_cmd_bench, "benchmarks: gemm, train, allreduce"},
    {"compare", ax_cmd_compare, "compare two model files tensor by tensor"},
    {"export", ax_cmd_export, "write the llm.c model file of a checkpoint"},
    {"plan", ax_cmd_plan, "memory per rank of a training run, without allocating"},
};
enum { N_COMMANDS = sizeof COMMANDS / sizeof COMMANDS[0] };

static void usage(FILE *out) {
  fprintf(out, "axonn %s — message-driven pipeline + data parallel GPT training\n\n"
               "Usage: axonn COMMAND [options]   (axonn COMMAND --help for its options)\n\n"
               "Commands:\n", AX_VERSION);
  for (int i = 0; i < N_COMMANDS; i++) fprintf(out, "  %-8s %s\n", COMMANDS[i].name,
                                              COMMANDS[i].help);
  fprintf(out, "  %-8s %s\n", "version", "print the version");
}

int main(int argc, char **argv) {
  ax_sanitizer_keep_libraries();
  if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
      !strcmp(argv[1], "help")) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (!strcmp(argv[1], "version") || !strcmp(argv[1], "--version")) {
    printf("axonn %s\n", AX_VERSION);
    return 0;
  }
  for (int i = 0; i < N_COMMANDS; i++)
    if (!strcmp(argv[1], COMMANDS[i].name)) return COMMANDS[i].run(argc - 1, argv + 1);
  fprintf(stderr, "axonn: error: unknown command '%s' (commands: train, prep, sample, bench, "
                  "compare, version; see axonn --help)\n", argv[1]);
  return 2;
}
