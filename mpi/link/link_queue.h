/* link_queue.h — the sends the link emulator holds back on this rank (link_emulator.h): each
 * waits for its due time, then is posted with MPI_Isend, in the order it was handed over (so
 * two messages to the same rank keep MPI's matching order: they share a link, whose due times
 * only grow). The engine that sent a message keeps only its ticket; it claims the MPI request
 * once the send is posted (the queue never points into an engine's memory, which may move). */
#ifndef AX_LINK_QUEUE_H
#define AX_LINK_QUEUE_H

#include <limits.h>
#include <mpi.h>
#include <stddef.h>

#include "link_bell.h"
#include "mpi/traffic.h"

/* One message as our engines send it (link_emulator.h: ax_link_isend). */
typedef struct {
  const void *buf;
  int count;
  MPI_Datatype type;
  size_t bytes;       /* count times the type's size: what is counted and delayed */
  int dest;           /* rank in comm; MPI_PROC_NULL: nothing is sent, counted or delayed */
  int dest_world;     /* dest's MPI_COMM_WORLD rank (world_rank.h), which names its node */
  int tag;
  MPI_Comm comm;
  AxTrafficClass cls; /* what the bytes count as (traffic.h) */
} AxLinkMsg;

typedef struct {
  unsigned long long ticket;
  long long due_ns; /* CLOCK_MONOTONIC */
  AxLinkMsg msg;
  MPI_Request req;  /* once posted */
  int posted;
} AxHeldSend;

typedef struct {
  AxHeldSend *items; /* in the order handed over */
  int n, cap;
  unsigned long long last_ticket;
  long long next_due; /* the earliest due time of an item not yet posted; LLONG_MAX: none */
  /* what posting cost: items posted, and how long after their due time, summed and at most */
  unsigned long long posted;
  long long late_ns_sum, late_ns_max;
  long long copied_by; /* when this rank's posted sends are copied, at the rate below */
} AxLinkQueue;

/* How long a posted send may need its sender's and receiver's calls into MPI (MPI's own copy,
 * after the emulated link): its bytes at AX_LINK_COPY_BYTES_PER_US, after the copies posted
 * before it, and AX_LINK_BUSY_NS more. Waits stay busy (link_emulator.h) until then. */
enum {
  AX_LINK_BUSY_NS = 200 * 1000,
  AX_LINK_COPY_BYTES_PER_US = 1000, /* 1 GB/s: slower than this machine's shared memory */
};

/* Adds a message due at due_ns; *ticket names it (never 0). */
int ax_link_queue_push(AxLinkQueue *q, const AxLinkMsg *m, long long due_ns,
                       unsigned long long *ticket);
/* Posts, in order, every item due at or before now_ns, each as ax_link_queue_posted. */
int ax_link_queue_post_due(AxLinkQueue *q, long long now_ns, const AxLinkBells *bells);
/* A send of `bytes` to world rank `to` was posted at now_ns (held or not): extends copied_by
 * and rings the receiver's bell with the time both stay busy. */
void ax_link_queue_posted(AxLinkQueue *q, const AxLinkBells *bells, int to, size_t bytes,
                          long long now_ns);
/* Until when this rank's posted sends keep its waits busy. */
long long ax_link_queue_busy_until(const AxLinkQueue *q);
/* *posted = 1 when the ticket's send is posted: *req gets its request and the item leaves the
 * queue; 0 while it is held. AX_ERR for a ticket the queue does not hold. */
int ax_link_queue_claim(AxLinkQueue *q, unsigned long long ticket, MPI_Request *req,
                        int *posted);
/* Forgets the ticket's send: never posted if still held, its request freed if posted (the
 * message then completes on its own). */
void ax_link_queue_drop(AxLinkQueue *q, unsigned long long ticket);
/* Drops everything and frees the queue. */
void ax_link_queue_free(AxLinkQueue *q);

#endif
