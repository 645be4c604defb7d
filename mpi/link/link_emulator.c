/* link_emulator.c — the link emulator's life (virtual nodes, the node-shared link table) and
 * ax_link_isend, which counts a message and holds it back until the link has carried it; see
 * link_emulator.h. Progress and waiting are link_wait.c's. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "link_internal.h"
#include "mpi/mpi_util.h"
#include "src/core/error.h"

long long ax_link_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The log of the link to node dst (NULL: none kept). */
static void *log_of(const AxLinkEmu *e, int dst) {
  if (e->emulating) return ax_link_table_log(&e->table, dst);
  return e->own_logs ? e->own_logs + (size_t)dst * ax_link_log_bytes() : NULL;
}

static int start_link(AxLinkEmu *e, MPI_Comm world, const AxLinkEmuConfig *cfg) {
  int shared;
  AX_TRY(ax_vnodes_node_shares_memory(&e->nodes, &shared));
  if (!shared)
    return AX_FAIL("--ranks-per-node %d puts ranks of different machines on one virtual node; "
                   "the link emulator needs every virtual node within one machine",
                   cfg->ranks_per_node);
  AX_TRY(ax_link_table_create(&e->table, e->nodes.node, e->nodes.n_nodes, cfg->log_uses));
  AX_TRY(ax_link_bells_create(&e->bells, world));
  e->emulating = 1;
  e->ns_per_byte = 1e9 / cfg->link.bytes_per_s;
  e->latency_ns = llround(cfg->link.latency_s * 1e9);
  return AX_OK;
}

/* Real links: this rank's own logs of its crossing sends. */
static int own_logs(AxLinkEmu *e) {
  e->own_logs = ax_malloc((size_t)e->nodes.n_nodes * ax_link_log_bytes());
  if (!e->own_logs) return AX_ERR;
  for (int d = 0; d < e->nodes.n_nodes; d++) ax_link_log_init(log_of(e, d));
  return AX_OK;
}

int ax_link_emu_create(AxLinkEmu **out, MPI_Comm world, const AxLinkEmuConfig *cfg) {
  *out = NULL;
  AxLinkEmu *e = ax_calloc(1, sizeof *e);
  if (!e) return AX_ERR;
  e->table.win = MPI_WIN_NULL;
  e->bells.win = MPI_WIN_NULL;
  e->queue.next_due = LLONG_MAX;
  e->spec = cfg->link;
  int rc = ax_vnodes_create(&e->nodes, world, cfg->ranks_per_node);
  if (rc != AX_OK) {
    free(e);
    return rc;
  }
  if (cfg->link.bytes_per_s > 0) rc = start_link(e, world, cfg);
  else if (cfg->log_uses) rc = own_logs(e);
  if (rc != AX_OK) {
    ax_link_emu_destroy(e);
    return rc;
  }
  *out = e;
  return AX_OK;
}

void ax_link_emu_destroy(AxLinkEmu *e) {
  if (!e) return;
  ax_link_queue_free(&e->queue);
  free(e->own_logs);
  ax_link_bells_destroy(&e->bells);
  if (e->table.win != MPI_WIN_NULL) ax_link_table_destroy(&e->table);
  ax_vnodes_destroy(&e->nodes);
  free(e);
}

int ax_link_emulating(const AxLinkEmu *e) { return e && e->emulating; }

int ax_link_node_of(const AxLinkEmu *e, int world_rank) {
  return e && world_rank >= 0 && world_rank < e->nodes.size ? e->nodes.node_of[world_rank] : 0;
}

int ax_link_nodes(const AxLinkEmu *e) { return e ? e->nodes.n_nodes : 1; }

AxLinkSpec ax_link_spec_of(const AxLinkEmu *e) {
  return e && e->emulating ? e->spec : (AxLinkSpec){0, 0};
}

int ax_link_crosses(const AxLinkEmu *e, int world_rank) {
  return e && world_rank >= 0 && world_rank < e->nodes.size &&
         e->nodes.node_of[world_rank] != e->nodes.my_node;
}

void ax_link_describe(const AxLinkEmu *e, char *buf, size_t cap) {
  char link[96], nodes[128];
  if (!e) {
    snprintf(buf, cap, "real links (not emulated); one node: no MPI");
    return;
  }
  ax_link_spec_format(&e->spec, link, sizeof link);
  if (e->nodes.ranks_per_node > 0)
    snprintf(nodes, sizeof nodes, "%d virtual node(s) of %d rank(s) (--ranks-per-node %d)",
             e->nodes.n_nodes, e->nodes.ranks_per_node, e->nodes.ranks_per_node);
  else
    snprintf(nodes, sizeof nodes, "%d node(s): the real ones", e->nodes.n_nodes);
  if (e->emulating)
    snprintf(buf, cap, "EMULATED link %s, one per direction between %s", link, nodes);
  else
    snprintf(buf, cap, "real links (not emulated); %s", nodes);
}

long long ax_link_busy_ns(const AxLinkEmu *e, size_t bytes) {
  if (!e || !e->emulating) return 0;
  double busy = ceil((double)bytes * e->ns_per_byte);
  return busy < 1e18 ? (long long)busy : (long long)1e18;
}

long long ax_link_latency_ns(const AxLinkEmu *e) {
  return e && e->emulating ? e->latency_ns : 0;
}

int ax_link_last_schedule(const AxLinkEmu *e, AxLinkSchedule *out) {
  memset(out, 0, sizeof *out);
  if (!e || e->last.due_ns == 0) return AX_FAIL("the link emulator has held no send");
  *out = e->last;
  return AX_OK;
}

AxLinkStats ax_link_stats(const AxLinkEmu *e) {
  AxLinkStats st = {0};
  if (!e) return st;
  st.held = e->held;
  st.posted = e->queue.posted;
  st.late_ns_sum = e->queue.late_ns_sum;
  st.late_ns_max = e->queue.late_ns_max;
  st.sleeps = e->sleeps;
  st.spins = e->spins;
  st.bell_rings = ax_link_bell_count(&e->bells);
  return st;
}

/* Reserves the link to the message's node and queues the send until it has crossed. */
static int hold(AxLinkEmu *e, const AxLinkMsg *m, AxLinkSend *s) {
  AxLinkSchedule *at = &e->last;
  at->handover_ns = ax_link_now_ns();
  at->busy_ns = ax_link_busy_ns(e, m->bytes);
  at->link = e->nodes.node_of[m->dest_world];
  at->bytes = m->bytes;
  at->start_ns = ax_link_table_reserve(&e->table, at->link, at->handover_ns, at->busy_ns);
  at->due_ns = at->start_ns + at->busy_ns + e->latency_ns;
  void *log = log_of(e, at->link);
  if (log) ax_link_log_append(log, at->start_ns, at->start_ns + at->busy_ns, m->cls);
  AX_TRY(ax_link_queue_push(&e->queue, m, at->due_ns, &s->held));
  e->held++;
  return ax_link_queue_post_due(&e->queue, at->handover_ns, &e->bells);
}

void ax_link_set_model(AxLinkEmu *e, double latency_s, double bytes_per_s) {
  if (!e) return;
  e->model_latency_s = latency_s;
  e->model_bytes_per_s = bytes_per_s;
}

int ax_link_uses(const AxLinkEmu *e, int dst, long long from_ns, long long to_ns,
                 AxLinkUse *out, int cap) {
  const void *log = e && dst >= 0 && dst < e->nodes.n_nodes ? log_of(e, dst) : NULL;
  return log ? ax_link_log_read(log, from_ns, to_ns, out, cap) : 0;
}

/* A crossing send on a real link, logged for as long as the model says it takes. */
static void log_real(AxLinkEmu *e, const AxLinkMsg *m) {
  void *log = log_of(e, e->nodes.node_of[m->dest_world]);
  if (!log || e->model_bytes_per_s <= 0) return;
  long long now = ax_link_now_ns();
  double s = e->model_latency_s + (double)m->bytes / e->model_bytes_per_s;
  ax_link_log_append(log, now, now + llround(s * 1e9), m->cls);
}

int ax_link_isend(const AxCommConfig *cc, const AxLinkMsg *m, AxLinkSend *s) {
  *s = AX_LINK_SEND_NULL;
  AxLinkEmu *e = cc ? cc->links : NULL;
  int crossed = m->dest != MPI_PROC_NULL && ax_link_crosses(e, m->dest_world);
  if (m->dest != MPI_PROC_NULL) ax_traffic_add(cc ? cc->traffic : NULL, m->cls, crossed, m->bytes);
  if (crossed && e->emulating) return hold(e, m, s);
  if (crossed) log_real(e, m);
  AX_MPI(MPI_Isend(m->buf, m->count, m->type, m->dest, m->tag, m->comm, &s->req));
  if (!e || !e->emulating) return AX_OK;
  long long now = ax_link_now_ns();
  if (m->dest != MPI_PROC_NULL)
    ax_link_queue_posted(&e->queue, &e->bells, m->dest_world, m->bytes, now);
  return ax_link_queue_post_due(&e->queue, now, &e->bells);
}
