/* p2p.c — pre-posted receives and pooled sends between pipeline stages, in host or device
 * buffers; see p2p.h. */
#include "p2p.h"

#include <stdlib.h>
#include <string.h>

#include "mpi/mpi_util.h"
#include "mpi/world_rank.h"
#include "src/core/error.h"
#include "src/core/watchdog.h"

/* ------------------------------------------------------------------ buffers */

static void *new_buffer(AxP2P *p) {
  size_t bytes = p->bytes ? p->bytes : 1;
  return p->mem == AX_MEM_DEVICE ? p->be->ops->alloc(p->be, bytes)
                                 : p->be->ops->host_alloc(p->be, bytes);
}

static void free_buffer(AxP2P *p, void *buf) {
  if (!buf) return;
  if (p->mem == AX_MEM_DEVICE)
    p->be->ops->free(p->be, buf);
  else
    p->be->ops->host_free(p->be, buf);
}

/* Device buffers: device work enqueued on the compute stream before now (a send's copy into
 * the buffer, a reader's copy out of it) is done before MPI gets the buffer. */
static int settle(AxP2P *p) {
  return p->mem == AX_MEM_DEVICE ? p->be->ops->sync(p->be, AX_STREAM_COMPUTE) : AX_OK;
}

static int post_recv(AxP2P *p, int dir) {
  void *buf = p->rbuf[dir][p->rcur[dir]];
  AX_MPI(MPI_Irecv(buf, (int)p->bytes, MPI_BYTE, p->peer[dir], MPI_ANY_TAG, p->comm,
                   &p->rreq[dir]));
  return AX_OK;
}

static int grow_sends(AxP2P *p, int n) {
  AxSendSlot *grown = realloc(p->sends, (size_t)(p->n_sends + n) * sizeof *grown);
  if (!grown) return AX_FAIL("out of memory growing the send pool");
  p->sends = grown;
  for (int i = 0; i < n; i++) {
    AxSendSlot *s = &p->sends[p->n_sends];
    s->send = AX_LINK_SEND_NULL;
    if (!(s->buf = new_buffer(p))) return AX_ERR;
    p->n_sends++;
  }
  return AX_OK;
}

/* ------------------------------------------------------------------ life */

static int init(AxP2P *p, const AxP2PConfig *cfg) {
  memset(p, 0, sizeof *p);
  p->comm = cfg->comm;
  p->cc = cfg->cc;
  p->peer[AX_FROM_PREV] = cfg->prev;
  p->peer[AX_FROM_NEXT] = cfg->next;
  p->bytes = cfg->bytes;
  p->sized = cfg->sized;
  p->be = cfg->be;
  p->mem = cfg->device_buffers ? AX_MEM_DEVICE : AX_MEM_HOST;
  p->rreq[0] = p->rreq[1] = MPI_REQUEST_NULL;
  if (p->bytes > (size_t)2147483647)
    return AX_FAIL("pipeline message of %zu bytes is too large", p->bytes);
  const int *world;
  int size;
  AX_TRY(ax_mpi_world_ranks(p->comm, &world));
  AX_MPI(MPI_Comm_size(p->comm, &size));
  for (int dir = 0; dir < 2; dir++) p->world[dir] = ax_mpi_world_rank_of(world, size, p->peer[dir]);
  for (int dir = 0; dir < 2; dir++) {
    if (p->peer[dir] == MPI_PROC_NULL) continue;
    for (int b = 0; b < 2; b++)
      if (!(p->rbuf[dir][b] = new_buffer(p))) return AX_ERR;
    AX_TRY(post_recv(p, dir));
  }
  return grow_sends(p, cfg->pool);
}

int ax_p2p_init(AxP2P *p, const AxP2PConfig *cfg) {
  int rc = init(p, cfg);
  if (rc != AX_OK) ax_p2p_destroy(p); /* what was built so far: the caller has nothing to free */
  return rc;
}

void ax_p2p_destroy(AxP2P *p) {
  for (int dir = 0; dir < 2; dir++) {
    if (p->rreq[dir] != MPI_REQUEST_NULL) {
      MPI_Cancel(&p->rreq[dir]);
      MPI_Wait(&p->rreq[dir], MPI_STATUS_IGNORE);
    }
    for (int b = 0; b < 2; b++) free_buffer(p, p->rbuf[dir][b]);
  }
  for (int i = 0; i < p->n_sends; i++) {
    AxLinkSend *s = &p->sends[i].send;
    int pending = ax_error_pending(); /* a failure being cleaned up after keeps its message */
    if ((s->held || s->req != MPI_REQUEST_NULL) && ax_link_wait(&p->cc, s) != AX_OK && !pending)
      ax_error_clear(); /* nothing to report it to: the send is given up */
    ax_link_drop(&p->cc, s);
    free_buffer(p, p->sends[i].buf);
  }
  free(p->sends);
  memset(p, 0, sizeof *p);
}

/* ------------------------------------------------------------------ messages */

int ax_p2p_wait(AxP2P *p, AxP2PDir *dir, int *tag, const void **data) {
  return ax_p2p_wait_from(p, -1, dir, tag, data);
}

int ax_p2p_wait_from(AxP2P *p, int from, AxP2PDir *dir, int *tag, const void **data) {
  int index;
  MPI_Status st;
  if (from < 0) {
    AX_TRY(ax_link_waitany(&p->cc, 2, p->rreq, &index, &st));
  } else {
    AX_TRY(ax_link_waitany(&p->cc, 1, &p->rreq[from], &index, &st));
    if (index != MPI_UNDEFINED) index = from;
  }
  if (index == MPI_UNDEFINED) return AX_FAIL("internal: waiting for a message with no receive posted");
  int got;
  AX_MPI(MPI_Get_count(&st, MPI_BYTE, &got));
  if ((size_t)got != p->bytes && !(p->sized && (size_t)got < p->bytes))
    return AX_FAIL("pipeline message of %d bytes from rank %d, expected %zu", got, st.MPI_SOURCE,
                   p->bytes);
  *dir = (AxP2PDir)index;
  *tag = st.MPI_TAG;
  *data = p->rbuf[index][p->rcur[index]];
  p->got_bytes = (size_t)got;
  p->bytes_received += (size_t)got;
  p->rcur[index] ^= 1; /* re-post into the other buffer before anyone computes */
  AX_TRY(settle(p));   /* whoever read the previous message from it has finished */
  return post_recv(p, index);
}

/* A send slot whose previous send has completed, growing the pool if none has. */
static int free_send_slot(AxP2P *p, int *slot) {
  for (int i = 0; i < p->n_sends; i++) {
    int done = 1;
    AxLinkSend *s = &p->sends[i].send;
    if (s->held || s->req != MPI_REQUEST_NULL) AX_TRY(ax_link_test(&p->cc, s, &done));
    if (done) {
      *slot = i;
      return AX_OK;
    }
  }
  *slot = p->n_sends;
  return grow_sends(p, 1);
}

/* Copies `bytes` from src (copied as `kind`) into a free send buffer and sends it. */
static int send_copy(AxP2P *p, int to_next, int tag, const void *src, size_t bytes,
                     AxCopyKind kind) {
  int peer = p->peer[to_next ? AX_FROM_NEXT : AX_FROM_PREV], slot = -1;
  if (peer == MPI_PROC_NULL) return AX_FAIL("internal: no %s stage to send to", to_next ? "next" : "previous");
  if (bytes > p->bytes || (bytes < p->bytes && !p->sized))
    return AX_FAIL("internal: a pipeline message of %zu bytes on a link of %zu", bytes, p->bytes);
  AX_TRY(free_send_slot(p, &slot));
  AxSendSlot *s = &p->sends[slot];
  AX_TRY(p->be->ops->copy(p->be, s->buf, src, bytes, kind, AX_STREAM_COMPUTE));
  AX_TRY(p->be->ops->sync(p->be, AX_STREAM_COMPUTE));
  AxLinkMsg m = {.buf = s->buf, .count = (int)bytes, .type = MPI_BYTE, .bytes = bytes,
                .dest = peer, .dest_world = p->world[to_next ? AX_FROM_NEXT : AX_FROM_PREV],
                .tag = tag, .comm = p->comm,
                .cls = to_next ? AX_TRAFFIC_PIPELINE_FORWARD : AX_TRAFFIC_PIPELINE_BACKWARD};
  AX_TRY(ax_link_isend(&p->cc, &m, &s->send));
  s->to_next = to_next;
  p->bytes_sent += bytes;
  return AX_OK;
}

int ax_p2p_send(AxP2P *p, int to_next, int tag, const void *src_dev) {
  AxCopyKind kind = p->mem == AX_MEM_DEVICE ? AX_COPY_D2D : AX_COPY_D2H;
  return send_copy(p, to_next, tag, src_dev, p->bytes, kind);
}

int ax_p2p_send_host(AxP2P *p, int to_next, int tag, const void *src_host, size_t bytes) {
  AxCopyKind kind = p->mem == AX_MEM_DEVICE ? AX_COPY_H2D : AX_COPY_H2H;
  return send_copy(p, to_next, tag, src_host, bytes, kind);
}

int ax_p2p_flush(AxP2P *p) {
  for (int i = 0; i < p->n_sends; i++) {
    AxSendSlot *s = &p->sends[i];
    if (s->send.req == MPI_REQUEST_NULL && !s->send.held) continue;
    int peer = p->world[s->to_next ? AX_FROM_NEXT : AX_FROM_PREV];
    ax_wd_detail(s->to_next ? "rank %d has not yet taken its activation"
                            : "rank %d has not yet taken its gradient", peer, peer);
    AX_TRY(ax_link_wait(&p->cc, &s->send));
  }
  return AX_OK;
}
