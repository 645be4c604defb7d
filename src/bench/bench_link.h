/* bench_link.h — the network options the MPI benchmarks share, --ranks-per-node and
 * --emulate-link (mpi/link/link_emulator.h), and what a benchmark does with them: check the text,
 * build the emulator over the job, say in its header that the link is EMULATED, and read the
 * bytes an operation put on the wire from the traffic counters (mpi/traffic.h). */
#ifndef AX_BENCH_LINK_H
#define AX_BENCH_LINK_H

#include <mpi.h>
#include <stddef.h>

#include "mpi/link/link_emulator.h"
#include "src/core/options.h"

typedef struct {
  int ranks_per_node;
  char *emulate_link;
} AxBenchLinkOpts;

/* The two option entries, for a table over STRUCT whose member FIELD is an AxBenchLinkOpts. */
#define AX_BENCH_LINK_OPTIONS(STRUCT, FIELD)                                                     \
  {"ranks-per-node", AX_OPT_INT, offsetof(STRUCT, FIELD.ranks_per_node), "0", "N",              \
   "virtual nodes of N consecutive ranks for --emulate-link (0: the real nodes)", 0, 1 << 20,    \
   NULL},                                                                                        \
  {"emulate-link", AX_OPT_STRING, offsetof(STRUCT, FIELD.emulate_link), NULL, "BW[,LAT]",       \
   "EMULATE a link between virtual nodes (e.g. 10Gbps,5us, 100Gbps, 1.5GB/s,2ms): messages "     \
   "of our engines between nodes take at least LAT + bytes/BW, one at a time per direction; "   \
   "figures are then emulated (default: off)", 1, 0, NULL}

/* The link the options ask for (bytes_per_s 0: none); fails alike on every rank. */
int ax_bench_link_check(const AxBenchLinkOpts *o, AxLinkSpec *spec);
/* Collective over world: the emulator (also when nothing is emulated: it knows the nodes). */
int ax_bench_link_start(const AxBenchLinkOpts *o, MPI_Comm world, AxLinkEmu **out);
/* Logs "# network: EMULATED link ..." (nothing when neither option was given). */
void ax_bench_link_header(const AxLinkEmu *e, const AxBenchLinkOpts *o);
/* Bytes sent (all classes) and the part that crossed virtual nodes, between two snapshots. */
void ax_bench_link_delta(const AxTraffic *after, const AxTraffic *before,
                         unsigned long long *bytes, unsigned long long *crossed);

#endif
