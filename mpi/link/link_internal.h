/* link_internal.h — the link emulator's state (mpi/link/link_emulator.c and link_wait.c only). */
#ifndef AX_LINK_INTERNAL_H
#define AX_LINK_INTERNAL_H

#include <pthread.h>

#include "link_bell.h"
#include "link_emulator.h"
#include "link_table.h"
#include "vnodes.h"

struct AxLinkEmu {
  AxVNodes nodes;
  AxLinkSpec spec;
  int emulating;       /* spec.bytes_per_s > 0: the table is there and sends are held */
  AxLinkTable table;   /* the links leaving this node */
  AxLinkBells bells;   /* wake-ups of waits (off unless emulating on one machine) */
  double ns_per_byte;
  long long latency_ns;
  AxLinkQueue queue;   /* this rank's held sends */
  AxLinkSchedule last; /* of the last held send (last.due_ns 0: none yet) */
  unsigned long long held, sleeps, spins; /* ax_link_stats */
  char *own_logs;      /* real links with log_uses: this rank's logs, one per node */
  double model_latency_s, model_bytes_per_s; /* ax_link_set_model (0: none yet) */
  AxLinkIdleWork idle_work; /* ax_link_set_idle_work (NULL: none) */
  void *idle_ctx;
  pthread_t idle_thread;    /* the thread that set it, the only one that runs it */
  int in_idle_work;
};

#endif
