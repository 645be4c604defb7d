/* p2p.h — the pipeline's point-to-point message engine. Every message is one micro-batch's
 * activation (to the next stage) or activation gradient (to the previous stage), all of one
 * size, tagged with the micro-batch id.
 *
 * Receives: one MPI_Irecv per direction (activations from the previous stage, gradients from
 * the next) is always posted, into one of two buffers; when a message arrives the other buffer
 * is re-posted at once, before the message is computed on, so the next message can land
 * meanwhile. Sends: the device data is copied into a send buffer from a pool and sent with
 * MPI_Isend; the buffer returns to the pool only when that send has completed. The pool grows
 * instead of waiting, so a send never blocks the rank.
 *
 * Sends go through the link layer (link_emulator.h: AxP2PConfig.cc.links): between virtual
 * nodes with an emulated link they are held back until the link has carried them, and every
 * wait here posts the held sends that are due and sleeps instead of spinning. The bytes count
 * (cc.traffic) as pipeline_forward (to the next stage) or pipeline_backward (to the previous).
 *
 * Where the buffers live (AxP2PConfig.device_buffers): host-staged (0), the receive and send
 * buffers are pinned host memory, sends copy device to host, and a received message is in host
 * memory; with device buffers (1: CUDA-aware MPI), they are device memory that MPI reads and
 * writes directly, sends copy device to device, and a received message is in device memory
 * (AxP2P.mem says which). Device-buffer mode synchronizes the compute stream before MPI gets a
 * buffer: after a send's copy, and before a receive buffer is posted again, so device work the
 * reader enqueued on the compute stream (copying the message out) has finished with it. */
#ifndef AX_P2P_H
#define AX_P2P_H

#include <mpi.h>
#include <stddef.h>

#include "link_emulator.h"
#include "mpi/comm_config.h"
#include "src/backend/backend.h"

typedef enum { AX_FROM_PREV = 0, AX_FROM_NEXT = 1 } AxP2PDir;

typedef struct {
  void *buf;
  AxLinkSend send;  /* the send from this slot (link_emulator.h: it may be held back) */
  int to_next;      /* the direction of the last send from this slot (for the watchdog) */
} AxSendSlot;

typedef struct {
  MPI_Comm comm;
  int prev, next;  /* ranks in comm, or MPI_PROC_NULL at the ends of the pipeline */
  size_t bytes;    /* every message */
  int pool;        /* send buffers to start with (the pool grows as needed) */
  AxBackend *be;
  AxCommConfig cc; /* how waits wait (polite or not), the link emulator and traffic counters */
  int device_buffers; /* 1: MPI sends from and receives into device memory (CUDA-aware MPI) */
  int sized;       /* 1: a message may be shorter than `bytes` (AxP2P.got_bytes says how long) */
} AxP2PConfig;

typedef struct {
  MPI_Comm comm;
  AxCommConfig cc;
  int peer[2];      /* [AX_FROM_PREV] = previous stage, [AX_FROM_NEXT] = next; MPI_PROC_NULL */
  int world[2];     /* the same peers' MPI_COMM_WORLD ranks; -1 at the ends of the pipeline */
  size_t bytes;     /* the longest message */
  int sized;
  size_t got_bytes; /* the size of the message ax_p2p_wait returned last */
  AxBackend *be;
  AxMemKind mem;    /* where the buffers are, and so every received message */
  void *rbuf[2][2]; /* per direction, two alternating buffers */
  int rcur[2];      /* which buffer the posted receive targets */
  MPI_Request rreq[2];
  AxSendSlot *sends;
  int n_sends;
  unsigned long long bytes_sent, bytes_received;
} AxP2P;

/* Posts the receives. On failure nothing is left to destroy. */
int ax_p2p_init(AxP2P *p, const AxP2PConfig *cfg);
/* Cancels the posted receives (a message that already landed in one is dropped: destroy only
 * when no more messages are coming) and completes the sends. */
void ax_p2p_destroy(AxP2P *p);
/* Waits for the next message from either neighbour; re-posts that direction's receive before
 * returning. *data (in p->mem memory) is valid until the second-next message from that
 * direction arrives, which can land once the next one has been returned. */
int ax_p2p_wait(AxP2P *p, AxP2PDir *dir, int *tag, const void **data);
/* The same from one direction only (from = AX_FROM_PREV or AX_FROM_NEXT; -1: either). */
int ax_p2p_wait_from(AxP2P *p, int from, AxP2PDir *dir, int *tag, const void **data);
/* Sends `bytes` of device memory: to_next = 1 sends an activation to the next stage, 0 a
 * gradient to the previous one. Returns once the data is copied into a send buffer (src_dev
 * may be reused at once); the send completes later. */
int ax_p2p_send(AxP2P *p, int to_next, int tag, const void *src_dev);
/* Sends `bytes` (at most the configured size; fewer only when sized) of host memory, the same
 * way (e.g. a compressed message). */
int ax_p2p_send_host(AxP2P *p, int to_next, int tag, const void *src_host, size_t bytes);
/* Completes every outstanding send (telling the watchdog which peer it waits for). */
int ax_p2p_flush(AxP2P *p);

#endif
