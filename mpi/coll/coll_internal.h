/* coll_internal.h — inside the collectives (mpi/ only). A started operation is a schedule of
 * exchange steps run by one engine (coll_progress.c): each step sends one range to one peer and
 * receives one range from another, both cut into chunks, at most `window` chunks in flight per
 * direction; a received chunk is copied in place, added into the result, or summed with a
 * local addend. A step either waits for the one before it to finish, or is chained to it chunk
 * by chunk (ring: chunk k is forwarded as soon as it has arrived and been reduced, while later
 * chunks are still on the wire); chained steps run as a wavefront, each a fixed number of
 * chunks behind the one before (coll_op.c fixes that order, the same on every rank).
 * ring.c and rhd.c build schedules; coll_mpi.c wraps MPI_Iallreduce instead; an operation may
 * also be run by an engine of its own (AxCollEngine: CaSync, casync.h), with the same tag,
 * configuration and byte counters and the same test / wait / free; coll_tag.c hands out the
 * per-communicator tags; coll_blocks.c cuts buffers into blocks. Every send goes
 * through the link layer (link_emulator.h), which counts it as the configuration's traffic
 * class and, between virtual nodes with an emulated link, holds it until the link has
 * carried it. */
#ifndef AX_COLL_INTERNAL_H
#define AX_COLL_INTERNAL_H

#include "collectives.h"
#include "mpi/link/link_emulator.h"
#include "src/core/error.h"

typedef enum {
  AX_RECV_COPY, /* received straight into recv_buf */
  AX_RECV_ADD,  /* received into a slot, then recv_buf += slot */
  AX_RECV_SUM,  /* received into a slot, then recv_buf = slot + addend */
} AxRecvMode;

typedef struct {
  int send_peer, recv_peer; /* MPI_PROC_NULL: no send / no receive in this step */
  const char *send_buf;
  size_t send_count;
  char *recv_buf;
  size_t recv_count;
  const char *addend; /* AX_RECV_SUM only */
  AxRecvMode mode;
  /* recv_buf is also this step's send_buf: chunk k of the result is written only after
   * chunk k has been sent (same chunking on both sides). */
  int write_after_send;
  /* 1: this step's send range is the previous step's receive range, and chunk k goes out as
   * soon as the previous step has received (and reduced) chunk k. 0: the step starts when the
   * previous one has finished. */
  int chained;
  /* >= 0: receiving chunk k writes where that earlier step sent its chunk k from, so the
   * receive is posted only once that send has completed. */
  int reuses_step;
} AxCollStep;

/* One chunk of one step, and where it falls in the order chunks are posted in. */
typedef struct {
  int phase; /* a step that is not chained starts a new phase */
  int step;
  size_t key; /* within a phase: k + (steps since the phase began) * lag */
  size_t k;
} AxChunk;

/* An operation run by an engine of its own instead of a schedule (its steps stay empty):
 * ax_coll_test calls test (which sets op->finished), ax_coll_wait calls note_pending while it
 * waits (the watchdog's detail; may be NULL), ax_coll_free calls free first (it releases
 * op->engine_state, cancelling what is unfinished). */
typedef struct {
  int (*test)(AxColl *op);
  void (*note_pending)(AxColl *op);
  void (*free)(AxColl *op);
} AxCollEngine;

struct AxColl {
  MPI_Comm comm;
  AxCommConfig cc; /* as started, zeros resolved: chunking and how ax_coll_wait waits */
  int rank, size, tag;
  const int *world; /* world rank of each rank of comm (world_rank.h), for the watchdog */
  size_t noted;     /* 1 + the position (receives, then sends) last noted for it; 0: none */
  AxCommType type;
  size_t esz;
  MPI_Datatype dtype;
  AxCommBytes *bytes;
  /* the schedule */
  AxCollStep *steps;
  int n_steps, cap_steps;
  size_t chunk; /* elements */
  int window;
  size_t lag; /* chunks a chained step trails the step before it by */
  /* every chunk sent / received, in the order they are posted (the same order on every rank,
   * so a peer's i-th send to this rank is this rank's i-th receive from it) */
  AxChunk *send_order, *recv_order;
  size_t n_send, n_recv;
  size_t send_posted, send_done, recv_posted, recv_done; /* positions in those orders */
  /* per step: its chunk counts, and how many of them have completed */
  size_t *send_chunks, *recv_chunks, *sent_in_step, *received_in_step;
  AxLinkSend *send_req;  /* [window]; chunk number i uses entry i % window (link_emulator.h) */
  MPI_Request *recv_req; /* [window], likewise */
  char *slots;                      /* window * slot_elems elements */
  size_t slot_elems, slots_capacity; /* slots_capacity: bytes (src/core/spare_buffers.h) */
  /* AX_ALLREDUCE_MPI */
  MPI_Request mpi_req;
  int uses_mpi;
  AxCommBytes mpi_bytes; /* added to *bytes when mpi_req completes */
  /* an engine of its own (NULL: the schedule or MPI above) */
  const AxCollEngine *engine;
  void *engine_state;
  int finished, failed;
};

/* A new operation on comm with an empty schedule; takes the next tag of comm. */
int ax_coll_create(AxColl **op, MPI_Comm comm, const AxCommConfig *cc, AxCommType type,
                   AxCommBytes *bytes);
/* The same on a tag the caller took earlier (ax_coll_next_tag), for an operation started later
 * than its place in the sequence, while other operations may have been started meanwhile (the
 * factor rounds of a CaSync operation run on its tag, one after the other). */
int ax_coll_create_on_tag(AxColl **op, MPI_Comm comm, const AxCommConfig *cc, AxCommType type,
                          AxCommBytes *bytes, int tag);
int ax_coll_add_step(AxColl *op, const AxCollStep *step);
/* Counts the schedule's chunks, allocates the windows and slots it needs and starts it. */
int ax_coll_launch(AxColl *op);
/* A step that only sends / only receives / does both (not chained, no reuse). */
AxCollStep ax_coll_step(int send_peer, const void *send_buf, size_t send_count, int recv_peer,
                        void *recv_buf, size_t recv_count, AxRecvMode mode);

/* The tag for the next operation on comm (per-communicator sequence, 1024..32767). */
int ax_coll_next_tag(MPI_Comm comm, int *tag);
/* Starters on a tag taken earlier (ax_coll_next_tag), for sub-operations started later than
 * their place in the sequence (two_level.c): ax_allreduce_start's, and the in-place ring
 * reduce-scatter / all-gather of buf's segments (ax_ring_*_segments). */
int ax_allreduce_start_on_tag(AxColl **op, MPI_Comm comm, int tag, const AxCommConfig *cc,
                              void *buf, size_t count, AxCommType type, AxAllreduceAlgo algo,
                              AxCommBytes *bytes);
int ax_reduce_scatter_segments_start_on_tag(AxColl **op, MPI_Comm comm, int tag,
                                            const AxCommConfig *cc, void *buf, size_t count,
                                            AxCommType type, AxCommBytes *bytes);
int ax_allgather_segments_start_on_tag(AxColl **op, MPI_Comm comm, int tag,
                                       const AxCommConfig *cc, void *buf, size_t count,
                                       AxCommType type, AxCommBytes *bytes);
/* What ax_coll_wait tells the watchdog while op is unfinished (an engine forwards it to the
 * sub-operation it waits on). */
void ax_coll_note_pending(AxColl *op);

/* Offset and length of block b when n elements are cut into `parts` near-equal blocks (the
 * first n % parts blocks are one longer). */
size_t ax_block_offset(size_t n, int parts, int b);
size_t ax_block_count(size_t n, int parts, int b);
/* a mod p in [0, p) for any a (a ring neighbour's position). */
int ax_ring_mod(int a, int p);

/* Schedules. */
int ax_ring_allreduce(AxColl *op, void *buf, size_t count);
int ax_ring_reduce_scatter(AxColl *op, const void *send, void *recv, size_t recv_count);
int ax_ring_allgather(AxColl *op, const void *send, void *recv, size_t send_count);
/* In place on buf's p near-equal segments (ax_block_offset): the reduce-scatter leaves segment
 * `rank` summed over the ring (the others hold partial sums), the all-gather sends every rank's
 * segment `rank` to all. */
int ax_ring_reduce_scatter_segments(AxColl *op, void *buf, size_t count);
int ax_ring_allgather_segments(AxColl *op, void *buf, size_t count);
int ax_rhd_allreduce(AxColl *op, void *buf, size_t count);
/* AX_ALLREDUCE_MPI: MPI_Iallreduce (bf16 through a user-defined sum). */
int ax_mpi_allreduce_start(AxColl *op, void *buf, size_t count);
int ax_mpi_allreduce_test(AxColl *op, int *done);

#endif
