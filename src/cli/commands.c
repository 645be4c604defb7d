/* commands.c — the command table of bin/axonn and its usage text; see commands.h. */
#include "commands.h"

#include "src/bench/bench.h"
#include "src/core/provenance.h"

const AxCommand AX_COMMANDS[] = {
    {"train", ax_cmd_train, "train a GPT-2 model (one process or an MPI grid)"},
    {"prep", ax_cmd_prep, "turn text files (or standard input) into token shards (bytes or GPT-2 BPE)"},
    {"sample", ax_cmd_sample, "generate text from a saved model"},
    {"compare", ax_cmd_compare, "compare two model files tensor by tensor"},
    {"export", ax_cmd_export,
     "write the llm.c model file (or a Hugging Face GPT-2 directory) of a checkpoint"},
    {"plan", ax_cmd_plan, "memory per rank of a training run, without allocating"},
    {"simulate", ax_cmd_simulate, "predict a run: simulate its schedule on a machine"},
    {"profile", ax_cmd_profile, "measure this machine's costs for simulate --profile"},
    {"shm-clean", ax_cmd_shm_clean, "remove the in-memory checkpoints a dead job left"},
    {"bench", ax_cmd_bench, "benchmarks (below)"},
    {"version", ax_cmd_version, "print the version"},
};
const int AX_N_COMMANDS = (int)(sizeof AX_COMMANDS / sizeof AX_COMMANDS[0]);

int ax_cmd_version(int argc, char **argv) {
  (void)argc;
  (void)argv;
  printf("axonn %s (%s)\n", ax_build_version(), ax_build_commit());
  return 0;
}

void ax_commands_usage(FILE *out) {
  fprintf(out, "axonn %s — message-driven pipeline + data parallel GPT training\n\n",
          ax_build_version());
  ax_command_usage(out, "axonn", AX_COMMANDS, AX_N_COMMANDS);
  fprintf(out, "\nBenchmarks (axonn bench KIND [options]; axonn bench KIND --help):\n");
  for (int i = 0; i < AX_N_BENCHES; i++)
    fprintf(out, "  %-10s %s\n", AX_BENCHES[i].name, AX_BENCHES[i].summary);
}
