/* link_queue.c — held sends in hand-over order, posted when due; see link_queue.h. */
#include "link_queue.h"

#include <stdlib.h>
#include <string.h>

#include "mpi/mpi_util.h"
#include "src/core/error.h"

static void update_next_due(AxLinkQueue *q) {
  q->next_due = LLONG_MAX;
  for (int i = 0; i < q->n; i++)
    if (!q->items[i].posted && q->items[i].due_ns < q->next_due) q->next_due = q->items[i].due_ns;
}

int ax_link_queue_push(AxLinkQueue *q, const AxLinkMsg *m, long long due_ns,
                       unsigned long long *ticket) {
  if (q->n == q->cap) {
    int cap = q->cap ? 2 * q->cap : 16;
    AxHeldSend *grown = realloc(q->items, (size_t)cap * sizeof *grown);
    if (!grown) return AX_FAIL("out of memory holding %d emulated sends", cap);
    q->items = grown;
    q->cap = cap;
  }
  if (q->n == 0) q->next_due = LLONG_MAX;
  *ticket = ++q->last_ticket;
  q->items[q->n++] = (AxHeldSend){*ticket, due_ns, *m, MPI_REQUEST_NULL, 0};
  if (due_ns < q->next_due) q->next_due = due_ns;
  return AX_OK;
}

void ax_link_queue_posted(AxLinkQueue *q, const AxLinkBells *bells, int to, size_t bytes,
                          long long now_ns) {
  long long from = q->copied_by > now_ns ? q->copied_by : now_ns;
  q->copied_by = from + (long long)(bytes / AX_LINK_COPY_BYTES_PER_US) * 1000;
  ax_link_bell_ring(bells, to, ax_link_queue_busy_until(q));
}

long long ax_link_queue_busy_until(const AxLinkQueue *q) {
  return q->copied_by ? q->copied_by + AX_LINK_BUSY_NS : 0;
}

int ax_link_queue_post_due(AxLinkQueue *q, long long now_ns, const AxLinkBells *bells) {
  if (q->n == 0 || now_ns < q->next_due) return AX_OK;
  for (int i = 0; i < q->n; i++) {
    AxHeldSend *h = &q->items[i];
    if (h->posted || h->due_ns > now_ns) continue;
    AX_MPI(MPI_Isend(h->msg.buf, h->msg.count, h->msg.type, h->msg.dest, h->msg.tag, h->msg.comm,
                     &h->req));
    h->posted = 1;
    ax_link_queue_posted(q, bells, h->msg.dest_world, h->msg.bytes, now_ns);
    long long late = now_ns - h->due_ns;
    q->posted++;
    q->late_ns_sum += late;
    if (late > q->late_ns_max) q->late_ns_max = late;
  }
  update_next_due(q);
  return AX_OK;
}

static int find(const AxLinkQueue *q, unsigned long long ticket) {
  for (int i = 0; i < q->n; i++)
    if (q->items[i].ticket == ticket) return i;
  return -1;
}

static void remove_at(AxLinkQueue *q, int i) {
  memmove(&q->items[i], &q->items[i + 1], (size_t)(q->n - i - 1) * sizeof *q->items);
  q->n--;
  update_next_due(q);
}

int ax_link_queue_claim(AxLinkQueue *q, unsigned long long ticket, MPI_Request *req,
                        int *posted) {
  int i = find(q, ticket);
  if (i < 0) return AX_FAIL("internal: the link emulator holds no send %llu", ticket);
  *posted = q->items[i].posted;
  if (!*posted) return AX_OK;
  *req = q->items[i].req;
  remove_at(q, i);
  return AX_OK;
}

void ax_link_queue_drop(AxLinkQueue *q, unsigned long long ticket) {
  int i = find(q, ticket);
  if (i < 0) return;
  if (q->items[i].posted && q->items[i].req != MPI_REQUEST_NULL)
    MPI_Request_free(&q->items[i].req);
  remove_at(q, i);
}

void ax_link_queue_free(AxLinkQueue *q) {
  while (q->n) ax_link_queue_drop(q, q->items[q->n - 1].ticket);
  free(q->items);
  memset(q, 0, sizeof *q);
  q->next_due = LLONG_MAX;
}
