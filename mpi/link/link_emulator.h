/* link_emulator.h — virtual nodes joined by an emulated network link, and the one way our
 * engines send: ax_link_isend (docs/emulator.md says what it models and what it does not, and
 * how to use it).
 *
 * Virtual nodes (vnodes.h): --ranks-per-node N puts world rank r on node r / N (0: the real
 * nodes). A message between two nodes crosses the link from the sender's node to the
 * receiver's: one link per ordered pair of nodes, so one per direction.
 *
 * The link (--emulate-link BW[,LATENCY], link_spec.h) carries one message at a time. A message
 * of S bytes handed to it at time t starts when the link is free, start = max(t, free), holds
 * it for S/BW (free = start + S/BW: later messages queue behind it) and is delivered no sooner
 * than start + S/BW + LATENCY (latency is propagation: it does not hold the link). The link's
 * free time is shared by the ranks of the sending node (link_table.h), so ranks of one node that
 * send to the same node queue on one link. Messages within a node are untouched.
 *
 * Where the delay is applied: at the sender. ax_link_isend reserves the link, computes the
 * delivery time and holds the MPI_Isend back until then (the bytes have "crossed"); it returns
 * at once, the send waiting in this rank's queue (link_queue.h). Every call below (a send, a
 * test, a wait, a pause) first posts the held sends whose time has come, in hand-over order,
 * so MPI's matching order is kept. Receives are posted as before (the engines pre-post them);
 * one completes when MPI delivers the message, after its delivery time. Why the sender: it
 * alone knows when a message entered the link, and no byte reaches the receiver before its
 * time whatever the receiver does, so an engine needs no change on its receive side. What it
 * costs: MPI's own transfer (the machine's copy) comes after the emulated time (overlapped
 * with the next message when several are in flight, as chunked collectives have), and a rank
 * busy computing posts its due sends at its next call, as an MPI without a progress thread
 * would move them.
 *
 * Waiting without a core: with an emulated link every wait of our engines polls, and between
 * polls ax_link_pause sleeps (with a 1 us timer slack) after spinning for the first
 * AX_LINK_SPIN_NS of the wait (a message within the node is caught at once). While the wait is
 * busy, that is while a send this rank posted, or one posted to it, may still need its calls
 * into MPI (link_queue.h: AX_LINK_BUSY_NS), it sleeps AX_LINK_POLL_NS at a time, so such a
 * message is seen up to about 60 us after it lands. Then it is idle: it sleeps on its rank's
 * doorbell (link_bell.h), which every send posted to this rank rings, until rung or for
 * AX_LINK_IDLE_NS; a ring restarts its spin. Every sleep ends just before this rank's earliest
 * held send is due. A rank whose wait is long thus wakes about once a millisecond, not every
 * 40 us: each wake costs tens of us of CPU on a shared host, and with more ranks than cores
 * waking every 40 us made where the kernel ran the computing ranks, and so the step time, vary
 * by a third from run to run (docs/emulator.md). A wait for this rank's own posted send never
 * goes idle (its completion rings nothing). Without the bells (ranks on several machines) every
 * sleep is a poll. Without an emulated link waits are as before (mpi_util.h: busy or polite),
 * but while idle work is set (ax_link_set_idle_work), when they poll as well.
 *
 * Counting: ax_link_isend counts every message (traffic.h) into cc->traffic as class m->cls,
 * crossed or not, whether or not the link is emulated.
 *
 * Building an engine on it (the p2p engine and the collectives do; so should CaSync):
 *   - send with ax_link_isend into an AxLinkSend, never MPI_Isend; complete it with
 *     ax_link_test or ax_link_wait; give it up with ax_link_drop (a held send is then never
 *     posted);
 *   - receive with MPI_Irecv as usual, but wait through ax_link_waitany / ax_link_wait_recv, or
 *     a loop of MPI_Test and ax_link_pause after ax_link_progress, so that this rank's held
 *     sends go out while it waits (a peer may be waiting for them);
 *   - take everything from the AxCommConfig the operation was started with (comm_config.h):
 *     cc->links (NULL: no emulation, and sends are posted at once), cc->traffic and the class.
 * Drive it from one thread at a time, as MPI_THREAD_SERIALIZED. */
#ifndef AX_LINK_EMULATOR_H
#define AX_LINK_EMULATOR_H

#include <mpi.h>
#include <stddef.h>

#include "link_log.h"
#include "link_queue.h"
#include "link_spec.h"
#include "mpi/comm_config.h"

enum {
  AX_LINK_SPIN_NS = 50 * 1000,  /* a wait spins this long before it sleeps */
  AX_LINK_POLL_NS = 40 * 1000,  /* then, while busy, sleeps this long between polls */
  AX_LINK_IDLE_NS = 1000 * 1000, /* then sleeps on its bell until rung, or this long */
  AX_LINK_SLACK_NS = 1000,      /* the timer slack of those sleeps (PR_SET_TIMERSLACK) */
  AX_LINK_EARLY_NS = 25 * 1000, /* a sleep ends about this late even so: it wakes this much
                                   before a held send is due, and spins the rest */
};

typedef struct {
  int ranks_per_node; /* 0: the real nodes */
  AxLinkSpec link;    /* link.bytes_per_s == 0: nothing emulated (nodes known, for counting) */
  int log_uses;       /* 1: keep each link's log of uses (ax_link_uses) */
} AxLinkEmuConfig;

/* A send of ax_link_isend: the MPI request once posted; `held` names it while the emulator
 * still holds it back. Initialize with AX_LINK_SEND_NULL. */
typedef struct {
  MPI_Request req;
  unsigned long long held;
} AxLinkSend;
#define AX_LINK_SEND_NULL ((AxLinkSend){MPI_REQUEST_NULL, 0})

/* Between polls of one wait: zero it when the wait begins (it spins first), or start it at
 * AX_LINK_NO_SPIN (it sleeps at once). */
typedef struct {
  long long since; /* when the wait began or its rank's bell last rang (ax_link_now_ns) */
  unsigned seen;   /* the bell's count when last looked at */
  int looked;      /* seen is set */
  int own_send;    /* 1: it waits for a send of this rank's (never idle: nothing rings it) */
} AxLinkWaiter;
#define AX_LINK_NO_SPIN ((AxLinkWaiter){.since = 1})

/* Collective over world (MPI_COMM_WORLD or a duplicate). Fails on every rank of a node alike:
 * a bad --ranks-per-node, or (emulated) a virtual node spread over machines. */
int ax_link_emu_create(AxLinkEmu **out, MPI_Comm world, const AxLinkEmuConfig *cfg);
/* Collective over world (the doorbells') and the node; NULL is a no-op. Held sends are
 * dropped (there should be none). */
void ax_link_emu_destroy(AxLinkEmu *e);

int ax_link_emulating(const AxLinkEmu *e); /* 0 for NULL */
int ax_link_node_of(const AxLinkEmu *e, int world_rank); /* 0 for NULL */
int ax_link_nodes(const AxLinkEmu *e);                   /* 1 for NULL */
AxLinkSpec ax_link_spec_of(const AxLinkEmu *e);          /* {0, 0} for NULL */
/* 1 when a message to world_rank leaves this rank's virtual node (0 for NULL). */
int ax_link_crosses(const AxLinkEmu *e, int world_rank);
/* "EMULATED link 10 Gb/s, latency 5 us; 2 virtual nodes of 2 ranks (--ranks-per-node 2)". */
void ax_link_describe(const AxLinkEmu *e, char *buf, size_t cap);
/* CLOCK_MONOTONIC in nanoseconds (the emulator's clock). */
long long ax_link_now_ns(void);

/* Sends m as described above; returns at once. */
int ax_link_isend(const AxCommConfig *cc, const AxLinkMsg *m, AxLinkSend *s);
/* Posts this rank's held sends that are due. */
int ax_link_progress(const AxCommConfig *cc);
/* Never blocks: *done = 1 once the send has completed (s is then AX_LINK_SEND_NULL). */
int ax_link_test(const AxCommConfig *cc, AxLinkSend *s, int *done);
/* Until the send has completed. */
int ax_link_wait(const AxCommConfig *cc, AxLinkSend *s);
/* Forgets the send (see above); a no-op for AX_LINK_SEND_NULL. */
void ax_link_drop(const AxCommConfig *cc, AxLinkSend *s);
/* MPI_Waitany / MPI_Wait for receives, posting held sends meanwhile. */
int ax_link_waitany(const AxCommConfig *cc, int n, MPI_Request *reqs, int *index,
                    MPI_Status *status);
int ax_link_wait_recv(const AxCommConfig *cc, MPI_Request *req, MPI_Status *status);
/* Until `req`, a nonblocking MPI collective over comm this rank has just started, completes.
 * With an emulated link it waits as the waits above do (MPI's blocking wait spins, taking a
 * core from ranks still computing, where the emulator's ranks sleep), and with the doorbells
 * it first rings every other rank of comm, as a message to each would: one asleep in the same
 * wait wakes and polls while the collective moves. Without, ax_mpi_wait: MPI_Wait, as the
 * blocking collective it stands for, or polls that yield the core where cc->polite. */
int ax_link_wait_collective(const AxCommConfig *cc, MPI_Comm comm, MPI_Request *req);
/* A barrier and the slowest rank's figure over comm for timing harnesses. Where cc->polite
 * (ranks outnumber cores) they wait as ax_link_wait_collective does: MPI's blocking
 * MPI_Barrier and MPI_Allreduce spin, and a rank spinning in them before or after its timed
 * operation took the core of a rank still in it, whose time then grew by a scheduler's time
 * slice (4 ranks on 2 cores, `bench allreduce` of a 64 KB ring over an EMULATED 10 Gb/s link:
 * medians 3.9-4.0 ms, against 0.38-0.54 ms waiting so; docs/benchmarks.md).
 * Elsewhere MPI's own calls: spinning ranks leave the barrier closest together. */
int ax_link_barrier(const AxCommConfig *cc, MPI_Comm comm);
int ax_link_max(const AxCommConfig *cc, MPI_Comm comm, double mine, double *max);
/* One pause between two polls of a wait (as above; without emulation ax_mpi_relax), after
 * the idle work, if any. */
void ax_link_pause(const AxCommConfig *cc, AxLinkWaiter *w);
/* Work that moves while this rank waits: from now on every pause of a wait on this thread
 * (emulated or real links) first calls work(ctx), never inside itself, and the waits of real
 * links poll instead of blocking in MPI (one work at a time; NULL ends it). The memory
 * checkpoints' replicas use it (memckpt_replicas.c): their receivers post each next receive
 * from their own calls, and MPICH moves a large message over shared memory only inside both
 * ranks' MPI calls, so with their calls at the step's ticks alone they hardly moved. The work
 * reports its own failures later: it returns nothing here. */
typedef void (*AxLinkIdleWork)(void *ctx);
void ax_link_set_idle_work(AxLinkEmu *e, AxLinkIdleWork work, void *ctx);
/* The emulator's pause with this rank's earliest held send due at next_due (LLONG_MAX: none),
 * its bells (off: every sleep a poll) and its sends' busy_until (ax_link_pause_plan; 0: none),
 * whether cc emulates or not (`axonn profile` waits so beside the ranks it times): 1 when it
 * slept, 0 when it spun (ax_mpi_relax). */
int ax_link_pause_until(const AxCommConfig *cc, AxLinkWaiter *w, long long next_due,
                        const AxLinkBells *bells, long long busy_until);

/* ---- the record of each link's use (cfg.log_uses; link_log.h) ----
 * Emulated: every held send's reservation [start, start + busy), logged in the node's shared
 * table, so the log of a link holds what all the node's ranks sent over it. Real links: the
 * crossing sends of this rank only, each as [hand-over, hand-over + latency + bytes / bandwidth)
 * of the model set with ax_link_set_model (nothing is logged before one is set). */
void ax_link_set_model(AxLinkEmu *e, double latency_s, double bytes_per_s);
/* The uses of the link from this rank's node to node `dst` that overlap [from_ns, to_ns),
 * at most cap of them, into out; returns how many (0 without logs). */
int ax_link_uses(const AxLinkEmu *e, int dst, long long from_ns, long long to_ns,
                 AxLinkUse *out, int cap);

/* ---- what the emulator decided and did: for tests and benchmarks ---- */

/* The schedule of one held send, in CLOCK_MONOTONIC nanoseconds:
 *   start = max(handover, the link's free time before it), due = start + busy + latency,
 * with busy = ceil(bytes * 1e9 / BW) (ax_link_busy_ns). */
typedef struct {
  long long handover_ns; /* when ax_link_isend took it (the `now` of its reservation) */
  long long start_ns;    /* when the link began carrying it */
  long long busy_ns;     /* how long it held the link */
  long long due_ns;      /* when it is posted with MPI_Isend, not before */
  int link;              /* the node it went to (the link from this rank's node) */
  size_t bytes;
} AxLinkSchedule;
/* The schedule of the last send this rank held back (*out zeroed and AX_ERR when none was). */
int ax_link_last_schedule(const AxLinkEmu *e, AxLinkSchedule *out);
/* busy for `bytes` on this link, and its latency (0 for NULL or no emulated link). */
long long ax_link_busy_ns(const AxLinkEmu *e, size_t bytes);
long long ax_link_latency_ns(const AxLinkEmu *e);

typedef struct {
  unsigned long long held;   /* sends held back */
  unsigned long long posted; /* of them, posted so far */
  long long late_ns_sum, late_ns_max; /* how long after its due time each was posted */
  unsigned long long sleeps, spins;   /* pauses that slept, pauses that spun (ax_mpi_relax) */
  unsigned long long bell_rings;      /* this rank's bell's count (0 with the bells off) */
} AxLinkStats;
AxLinkStats ax_link_stats(const AxLinkEmu *e); /* zeros for NULL */

/* The decision of one ax_link_pause at `now` in a wait that began (or was rung) at `since`,
 * busy until `busy_until` (the latest of this rank's posted sends' and of those rung to it;
 * LLONG_MAX for a wait for its own posted send), with this rank's earliest held send due at
 * `next_due` (LLONG_MAX: none) and its bells on or off: 0 to spin (the wait's first
 * AX_LINK_SPIN_NS, or a held send due within AX_LINK_EARLY_NS), else the time to sleep until:
 * now + AX_LINK_POLL_NS while busy (now < busy_until) or without bells, else
 * now + AX_LINK_IDLE_NS; at the latest next_due - AX_LINK_EARLY_NS. */
long long ax_link_pause_plan(long long now, long long since, long long busy_until,
                             long long next_due, int bells);

#endif
