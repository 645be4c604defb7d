/* binding_rule.h — the trainer's core-binding rule as a pure function (no hwloc, no system
 * call): which cores of a set of `ncores` whole cores rank `share_rank` of the `share_size`
 * ranks that share the set gets, with `nthreads` compute threads each. binding.c applies it;
 * `axonn profile` places its concurrent copies by it (src/sim/sim_measure.c) and the
 * simulator's cost model decides by it which ranks share a core (src/sim/sim_costs.c), so
 * the three cannot drift. */
#ifndef AX_BINDING_RULE_H
#define AX_BINDING_RULE_H

/* The index among the set's cores of the rank's first core: it gets [first, first + nthreads).
 * -1 when nothing is pinned: binding off (enable 0), no whole core, or the ranks' threads
 * together exceed the cores (share_size x nthreads > ncores). nthreads and share_size below 1
 * count as 1. */
int ax_binding_first_core(int ncores, int nthreads, int share_rank, int share_size, int enable);

#endif
