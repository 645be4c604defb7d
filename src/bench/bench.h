/* bench.h — `axonn bench KIND`: the benchmarks, in one table that the dispatch, the usage text
 * and `axonn --help` all come from. gemm and train run on one process; allreduce, p2p and
 * optimizer initialize MPI themselves and run under mpiexec. Each takes argv with argv[0] =
 * its own name and returns the exit status, printing its own errors. */
#ifndef AX_BENCH_H
#define AX_BENCH_H

#include "src/core/command.h"

extern const AxCommand AX_BENCHES[];
extern const int AX_N_BENCHES;

enum { AX_BENCH_MAX_K = 16 };
/* bench_coarsening.c: --coarsening of bench allreduce and bench optimizer ("1,2,4,8"): up to
 * AX_BENCH_MAX_K factors, each in [1, 2^20], into ks; *n gets how many. */
int ax_bench_coarsening(const char *text, int *ks, int *n);

/* Dispatches `axonn bench KIND ...` (argv[0] = "bench"). */
int ax_cmd_bench(int argc, char **argv);
int ax_cmd_bench_gemm(int argc, char **argv);
int ax_cmd_bench_train(int argc, char **argv);
/* src/bench/bench_allreduce.c */
int ax_cmd_bench_allreduce(int argc, char **argv);
/* src/bench/bench_optimizer.c */
int ax_cmd_bench_optimizer(int argc, char **argv);
/* src/bench/bench_compress.c */
int ax_cmd_bench_compress(int argc, char **argv);
/* src/bench/bench_p2p.c */
int ax_cmd_bench_p2p(int argc, char **argv);
/* bench_sparse.c: Zen vs all-gather vs dense for a row-sparse embedding gradient (mpiexec). */
int ax_cmd_bench_sparse_sync(int argc, char **argv);

/* bench_state_copy.c: one core's cost of an in-memory checkpoint of every step, two designs. */
int ax_cmd_bench_state_copy(int argc, char **argv);

#endif
