/* start_cpus.h — the CPU set this process started with: its launcher's binding (srun
 * --cpu-bind, mpirun --bind-to, jsrun -b, taskset) or the whole machine. Read once, at the
 * first call, which comes before any binding of ours (the grid's node ranks, then the
 * backend's binding), and kept for the life of the process. Every later question of which
 * cores a rank may use, and of which ranks share its cores, must see that set and not our own
 * binding: a second trainer in one process (a benchmark's, a test's) would otherwise find each
 * rank alone on the core it was bound to, and bind every rank to the first core. */
#ifndef AX_START_CPUS_H
#define AX_START_CPUS_H

#include <sched.h>

/* The set into *out; 0 when it could not be read (then *out is empty: "unknown, all alike"). */
int ax_start_cpus(cpu_set_t *out);

#endif
