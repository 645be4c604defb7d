/* link_bell.h — the link emulator's doorbells: one counter per world rank, in memory every rank
 * of the machine shares (MPI_Win_allocate_shared, one cache line a rank). A rank that posts a
 * send rings the receiver's bell (adds one and wakes it); a rank whose wait has gone idle sleeps
 * on its own bell (a futex shared between processes) until it is rung or a timeout, instead of
 * waking every AX_LINK_POLL_NS to look (link_emulator.h, "Waiting without a core"). A ring also
 * says until when the message's copy may need the receiver's calls into MPI (busy_until): the
 * receiver's waits do not go idle before then.
 *
 * Only when every rank of the job is on this machine and the system has futexes (Linux): a
 * message from another machine could ring nothing. Otherwise the bells are off, every call
 * below is a no-op, and waits poll as before. */
#ifndef AX_LINK_BELL_H
#define AX_LINK_BELL_H

#include <mpi.h>

typedef struct {
  MPI_Win win;   /* MPI_WIN_NULL for private bells (ax_link_bells_private) */
  char *base;    /* n cache lines; NULL: off */
  int n, me;     /* world ranks, this rank's */
} AxLinkBells;

/* Collective over world (MPI_COMM_WORLD or a duplicate: its ranks are world ranks): on, or off
 * on every rank alike (see above). On failure nothing is left to destroy. */
int ax_link_bells_create(AxLinkBells *b, MPI_Comm world);
/* Collective over world when on; a no-op when off. */
void ax_link_bells_destroy(AxLinkBells *b);
/* One bell in the caller's memory (`line`: 64 bytes, 64-aligned) that nobody rings: a waiter of
 * `axonn profile` that sleeps as an idle wait sleeps. Nothing to destroy. */
AxLinkBells ax_link_bells_private(void *line);

int ax_link_bells_on(const AxLinkBells *b);
/* Adds one to world rank `to`'s bell, raises its busy_until to at least `busy_until`, and wakes
 * it if it sleeps there. */
void ax_link_bell_ring(const AxLinkBells *b, int to, long long busy_until);
/* This rank's bell: how often it has been rung (wraps), and the latest busy_until rung. */
unsigned ax_link_bell_count(const AxLinkBells *b);
long long ax_link_bell_busy_until(const AxLinkBells *b);
/* Sleeps until this rank's bell differs from `seen` or until t_ns (CLOCK_MONOTONIC), whichever
 * comes first (at once if it differs already); a signal may end it early. */
void ax_link_bell_sleep(const AxLinkBells *b, unsigned seen, long long t_ns);

#endif
