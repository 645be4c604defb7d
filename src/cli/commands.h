/* commands.h — the subcommands of bin/axonn. Each takes argv with argv[0] = its own name and
 * returns the process exit status; each prints its own errors. */
#ifndef AX_COMMANDS_H
#define AX_COMMANDS_H

int ax_cmd_train(int argc, char **argv);
int ax_cmd_prep(int argc, char **argv);
int ax_cmd_sample(int argc, char **argv);
int ax_cmd_bench(int argc, char **argv);
int ax_cmd_compare(int argc, char **argv);
/* `axonn export` (src/cli/export.c): the llm.c model file of a checkpoint. */
int ax_cmd_export(int argc, char **argv);
/* `axonn plan` (src/train/plan.c): the memory plan of a training run, nothing allocated. */
int ax_cmd_plan(int argc, char **argv);
/* `axonn bench allreduce` (src/bench/bench_allreduce.c): initializes MPI itself, run under mpiexec. */
int ax_cmd_bench_allreduce(int argc, char **argv);
/* `axonn bench optimizer` (src/bench/bench_optimizer.c): all-reduce and host AdamW, interleaved. */
int ax_cmd_bench_optimizer(int argc, char **argv);
/* `axonn bench p2p` (src/bench/bench_p2p.c): ping-pong between ranks 0 and 1, run under mpiexec. */
int ax_cmd_bench_p2p(int argc, char **argv);

#endif
