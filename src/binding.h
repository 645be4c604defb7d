/* binding.h — pins a rank's compute threads to cores with hwloc.
 * Rank `local_rank` of `local_size` ranks on a node gets cores
 * [local_rank*threads, (local_rank+1)*threads) of the cores this process may use; the whole
 * process (BLAS threads included) is confined to that set and thread t is pinned to its core t.
 * When the ranks would oversubscribe the cores, nothing is pinned and the description says so. */
#ifndef AX_BINDING_H
#define AX_BINDING_H

typedef struct AxBinding AxBinding;

/* Returns NULL with the error recorded only when hwloc cannot read the topology. */
AxBinding *ax_binding_create(int nthreads, int local_rank, int local_size, int enable);
void ax_binding_destroy(AxBinding *b);
/* Pins the calling thread to the core of compute thread `tid` (no-op when not binding). */
void ax_binding_pin_thread(AxBinding *b, int tid);
/* Cores usable by this process (before binding), e.g. to choose a default thread count. */
int ax_binding_available_cores(const AxBinding *b);
/* One line: "cores 0-1 (thread 0 -> PU 0, thread 1 -> PU 1)" or "not bound: ...". */
const char *ax_binding_describe(const AxBinding *b);

#endif
