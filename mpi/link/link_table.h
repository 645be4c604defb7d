/* link_table.h — when each emulated link leaving this virtual node is next free: one time per
 * destination node, in memory shared by the ranks of this node (MPI_Win_allocate_shared on the
 * node's communicator, one cache line per link), updated with lock-free atomics so that every
 * rank of the node that sends to the same node queues on the same link, in the order their
 * reservations land. Beside each link's time, the same memory holds the link's log (link_log.h):
 * what the node's ranks sent over it and when, for anyone who schedules into its idle spans.
 * Times are CLOCK_MONOTONIC nanoseconds (one clock for the whole machine). */
#ifndef AX_LINK_TABLE_H
#define AX_LINK_TABLE_H

#include <mpi.h>

typedef struct {
  MPI_Win win;
  char *base;  /* n_nodes cache lines, each holding one atomic long long, then n_nodes logs */
  int n_nodes;
  int with_logs;
} AxLinkTable;

/* Collective over node (whose ranks must share memory). Every link starts free; with_logs: each
 * has a log too (AX_LINK_LOG_ENTRIES uses, about 128 KB a link). On failure nothing is left to
 * destroy. */
int ax_link_table_create(AxLinkTable *t, MPI_Comm node, int n_nodes, int with_logs);
/* Collective over the same node communicator. */
void ax_link_table_destroy(AxLinkTable *t);
/* Reserves the link to node `dst` for `busy_ns` from max(now_ns, when it is free) and returns
 * that start time. */
long long ax_link_table_reserve(AxLinkTable *t, int dst, long long now_ns, long long busy_ns);
/* The log of the link to node `dst` (link_log.h); NULL without logs. */
void *ax_link_table_log(const AxLinkTable *t, int dst);

#endif
