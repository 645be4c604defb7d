/* binding.h — pins a rank's compute threads to cores with hwloc.
 * The cores this process may use are the whole cores of the CPU set it started with: the
 * launcher's binding (srun --cpu-bind, mpirun --bind-to, jsrun -b, taskset) or, unbound, the
 * whole node. Rank `share_rank` of the `share_size` ranks of this node that started with the
 * same set gets cores [share_rank*threads, (share_rank+1)*threads) of it; the whole process
 * (BLAS threads included) is confined to those cores and thread t is pinned to its core t.
 * When the ranks would oversubscribe the set, nothing is pinned and the description says so. */
#ifndef AX_BINDING_H
#define AX_BINDING_H

typedef struct AxBinding AxBinding;

/* Returns NULL with the error recorded only when hwloc cannot read the topology. */
AxBinding *ax_binding_create(int nthreads, int share_rank, int share_size, int enable);
void ax_binding_destroy(AxBinding *b);
/* Pins the calling thread to the core of compute thread `tid` (no-op when not binding). */
void ax_binding_pin_thread(AxBinding *b, int tid);
/* Whole cores of the set this process started with, shared by `share_size` ranks (e.g. to
 * choose a default thread count). */
int ax_binding_available_cores(const AxBinding *b);
/* One line: "cores 0-1 (thread 0 -> PU 0, thread 1 -> PU 1)" or "not bound: ...". */
const char *ax_binding_describe(const AxBinding *b);

#endif
