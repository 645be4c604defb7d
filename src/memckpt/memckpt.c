/* memckpt.c — in-memory checkpoints (Gemini, thesis ch. 6; docs/memory-checkpoints.md; the
 * interface in memckpt.h):
 * after every --memory-checkpoint-every steps each node keeps the job's state in its shared
 * memory (src/memckpt/memckpt_store.h: three slots, the oldest overwritten), and the m - 1 other nodes of its
 * replica group get copies of the stage files it wrote; --resume recovers from the newest step
 * whose every file some node still holds, moving what a node lacks over MPI.
 *
 * Who writes: in every data-parallel row the stage's tensor-parallel rank 0 holds the stage
 * whole (as for file checkpoints), and the lowest such rank of a stage on a node writes that
 * stage's file into the node's slot; so every node holds the stages its own ranks train. A
 * replica goes from node K to a holder H of K's files (failure_odds.h's group placement, over
 * nodes ordered so that those writing the same stages share a group) only where H does not
 * hold that stage already. The copy of a step runs on a thread while the
 * next step computes; the state it reads changes only in the optimizer, before which the next
 * step joins it; it writes into the slot file through a mapping the rank keeps from copy to
 * copy (ax_memckpt_slot_map), as the replicas' receivers do. The replicas travel as
 * memckpt_replicas.c schedules them (into the link's idle spans, or all at the end of that
 * step), and each node's manifest is written last, once every replica has landed. Each step's
 * state goes to a slot holding neither the newest complete copy nor the copy in flight (before_optim).
 * Zero-copy: where a writer's stage file holds its arrays whole, its optimizer writes the state
 * into that slot's file itself, and the copy thread only CRCs it. Where several nodes write
 * identical copies of a stage, each CRCs a part of it and the settle puts the parts together
 * (split_crcs). */
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/plan/failure_odds.h"
#include "mpi/mpi_util.h"
#include "src/core/error.h"
#include "src/core/fileio.h"
#include "src/core/lockfile.h"
#include "src/core/log.h"
#include "src/core/timer.h"
#include "src/core/watchdog.h"
#include "memckpt_store.h"
#include "memckpt_impl.h"

enum { CHUNK_BYTES = 64 << 20, MANIFEST = AX_MEMCKPT_MANIFEST };

typedef AxMemTransfer Transfer; /* one file from one rank's slot to another rank's */

static int world_size(const AxMemCkpt *mc) { return (mc->v.grid != NULL) ? mc->v.grid->size : 1; }
static int agree(AxMemCkpt *mc, int rc) { return (mc->v.grid != NULL) ? ax_grid_agree(mc->v.grid, rc) : rc; }

/* The lowest rank of a node: it scans, empties and completes the node's slots. */
static int leader_of(const AxMemCkpt *mc, int size, int node) {
  for (int r = 0; r < size; r++)
    if (mc->node_of[r] == node) return r;
  return -1;
}

static int is_leader(const AxMemCkpt *mc) {
  return ax_memckpt_rank(mc) == leader_of(mc, world_size(mc), mc->node);
}

static const char *slot_dir(const AxMemCkpt *mc, int slot, char *buf) {
  return ax_memckpt_slot_dir(mc->v.opt.memory_dir, mc->name, mc->node, slot, buf);
}

/* ------------------------------------------------------------------ setup */

static int plan_replicas(const AxMemCkpt *mc, int P, Transfer **out, int *n);
static int split_crcs(AxMemCkpt *mc, const Transfer *x, int n);

/* Every rank's node and stage, and which ranks write (see the header). */
static int learn_ranks(AxMemCkpt *mc) {
  int size = world_size(mc);
  mc->node_of = ax_calloc((size_t)size, sizeof(int));
  mc->stage_of = ax_calloc((size_t)size, sizeof(int));
  mc->writes = ax_calloc((size_t)size, sizeof(int));
  mc->notes = ax_calloc((size_t)size, sizeof *mc->notes);
  if (!mc->node_of || !mc->stage_of || !mc->writes || !mc->notes) return AX_ERR;
  int mine[3] = {mc->node, (mc->v.grid != NULL) ? mc->v.grid->stage : 0,
                 (mc->v.grid != NULL) ? ax_grid_tp_index(mc->v.grid) : 0};
  int *all = ax_calloc((size_t)size * 3, sizeof(int));
  if (!all) return AX_ERR;
  if ((mc->v.grid != NULL))
    AX_MPI(MPI_Allgather(mine, 3, MPI_INT, all, 3, MPI_INT, mc->v.grid->world));
  else
    memcpy(all, mine, sizeof mine);
  for (int r = 0; r < size; r++) {
    mc->node_of[r] = all[3 * r];
    mc->stage_of[r] = all[3 * r + 1];
    int first = all[3 * r + 2] == 0;
    for (int q = 0; q < r && first; q++)
      if (mc->writes[q] && mc->node_of[q] == mc->node_of[r] && mc->stage_of[q] == mc->stage_of[r])
        first = 0;
    mc->writes[r] = all[3 * r + 2] == 0 && first;
  }
  free(all);
  return AX_OK;
}

/* Zero-copy: a writer's optimizer updates the state straight into the slot's stage file when
 * the file's sections are its arrays whole (not on a last stage whose large tied wte copy the
 * file leaves out, nor with tensor parallelism, where the file is gathered from shards). The
 * sections are worked out once, here. */
static int decide_zero_copy(AxMemCkpt *mc) {
  mc->zero_copy = 0;
  if (!mc->writes[ax_memckpt_rank(mc)] || mc->v.tensor_parallel || mc->v.optimizer_device) return AX_OK;
  AxStageLayout lay;
  const AxStageSpec *sp = mc->v.spec;
  ax_stage_layout(&lay, mc->v.model, sp->l0, sp->l1, sp->first, sp->last);
  AX_TRY(ax_ckpt_stage_sections(mc->v.model, &lay, mc->stage_of[ax_memckpt_rank(mc)], mc->n_files,
                                &mc->sections));
  mc->zero_copy = mc->sections.skip == 0 && mc->sections.count == mc->v.off->n;
  return AX_OK;
}

/* The master weights, m and v in a mapping of this rank's stage file. */
static void sections_in(const AxMemCkpt *mc, const AxFileMap *view, float *sec[3]) {
  for (int a = 0; a < 3; a++)
    sec[a] = (float *)((unsigned char *)view->data + mc->sections.data +
                       (size_t)a * mc->sections.stride);
}

/* Who CRCs which part of a stage file. Data-parallel copies of a stage are bitwise identical
 * (every grid's loss tests rest on it), so where D nodes each write the same stage, each
 * writer CRCs one D-th of the file and the settle puts the parts' CRCs together: the CRC's
 * CPU a node spends falls by D. A stage sent as a replica is CRC'd whole: its bytes leave
 * before the settle, and they must carry their trailer. */
static int split_crcs(AxMemCkpt *mc, const Transfer *x, int n) {
  int size = world_size(mc);
  mc->crc_part = ax_calloc((size_t)size, sizeof(int));
  mc->crc_parts = ax_calloc((size_t)size, sizeof(int));
  mc->crc_scratch = ax_calloc((size_t)mc->n_files * mc->n_nodes, sizeof(uint32_t));
  if (!mc->crc_part || !mc->crc_parts || !mc->crc_scratch) return AX_ERR;
  for (int r = 0; r < size; r++) {
    if (!mc->writes[r]) continue;
    int sent = 0, parts = 0;
    for (int i = 0; i < n; i++) sent |= x[i].file == mc->stage_of[r];
    for (int q = 0; q < size; q++)
      if (mc->writes[q] && mc->stage_of[q] == mc->stage_of[r]) {
        if (q < r) mc->crc_part[r]++;
        parts++;
      }
    mc->crc_parts[r] = sent ? 1 : parts;
    if (sent) mc->crc_part[r] = 0;
  }
  return AX_OK;
}

static int setup(AxMemCkpt *mc) {
  mc->on = 1;
  snprintf(mc->name, sizeof mc->name, "%s", mc->v.name);
  mc->n_nodes = ax_link_nodes(mc->v.links);
  mc->node = ax_link_node_of(mc->v.links, ax_memckpt_rank(mc));
  mc->replicas = mc->v.opt.replicas ? mc->v.opt.replicas : (mc->n_nodes < 2 ? 1 : 2);
  if (mc->replicas > mc->n_nodes)
    return AX_FAIL("--replicas %d exceeds the job's %d node(s)%s", mc->replicas, mc->n_nodes,
                   mc->v.ranks_per_node ? " (--ranks-per-node)" : "");
  mc->last_slot = mc->state_slot = mc->master_slot = -1;
  mc->interval = mc->v.opt.memory_checkpoint_every; /* widened where the link cannot keep up */
  AX_TRY(ax_memckpt_slot_maps_new(mc));
  AX_TRY(learn_ranks(mc));
  AX_TRY(decide_zero_copy(mc));
  if ((mc->v.grid != NULL)) {
    AX_MPI(MPI_Comm_dup(mc->v.grid->world, &mc->comm));
    mc->have_comm = 1;
  }
  if (is_leader(mc))
    AX_TRY(ax_memckpt_open_node(mc->v.opt.memory_dir, mc->name, mc->node, &mc->lock_fd));
  Transfer *x = NULL;
  int n = 0;
  int rc = plan_replicas(mc, mc->n_files, &x, &n);
  if (rc == AX_OK) rc = split_crcs(mc, x, n);
  if (rc == AX_OK) rc = ax_replicas_setup(mc, x, n);
  free(x);
  return rc;
}

int ax_memckpt_create(AxMemCkpt **out, const AxMemCkptView *view, const AxMemCkptOps *ops) {
  *out = NULL;
  if (!view->opt.memory_checkpoint_every) return AX_OK;
  AxMemCkpt *mc = ax_calloc(1, sizeof *mc);
  if (!mc) return AX_ERR;
  mc->v = *view;
  mc->ops = *ops;
  mc->lock_fd = -1;
  *out = mc; /* freed by ax_memckpt_free, whatever setup did */
  return setup(mc);
}

int ax_memckpt_step_begin(AxMemCkpt *mc, int step) {
  if (!mc) return AX_OK;
  mc->step_now = step;
  return ax_replicas_step_begin(mc);
}

int ax_memckpt_tick(AxMemCkpt *mc) { return mc ? ax_replicas_tick(mc) : AX_OK; }

void ax_memckpt_print(const AxMemCkpt *mc) {
  if (!mc || !mc->on) return;
  char dir[AX_MEMCKPT_PATH];
  char how[256];
  if (mc->idle)
    snprintf(how, sizeof how, "replicas go in chunks of at most %d MB into %.0f%% of each idle "
             "span of the link (alpha %.1f us, %.3g GB/s%s), profiled over %d steps; what does not fit "
             "waits for the next steps' spans, and goes at the settle before the next checkpoint",
             (int)(mc->link.max_chunk >> 20), 100 * mc->link.mu, mc->link.f.latency_s * 1e6,
             mc->link.f.bytes_per_s / 1e9, ax_link_emulating(mc->v.links) ? ", emulated" : ", fitted",
             AX_REPLICA_WINDOW);
  else
    snprintf(how, sizeof how, "replicas are sent at its end");
  ax_log("memory checkpoints: every %d step(s) into %s/node-K (%d node(s)); %d cop%s of each "
         "node's files (groups of %d nodes, those writing the same stages together); the copy "
         "overlaps the next step, %s",
         mc->v.opt.memory_checkpoint_every, ax_memckpt_run_dir(mc->v.opt.memory_dir, mc->name, dir),
         mc->n_nodes, mc->replicas, mc->replicas == 1 ? "y" : "ies", mc->replicas, how);
}

void ax_memckpt_stats(const AxMemCkpt *mc, AxMemCkptStats *out) {
  if (!mc || !mc->on) {
    *out = (AxMemCkptStats){0};
    return;
  }
  *out = (AxMemCkptStats){mc->v.opt.memory_checkpoint_every, mc->replicas, mc->n_nodes, mc->idle,
                          mc->copies, mc->landed_copies, mc->skipped, mc->files_written,
                          mc->files_in_place, mc->copy_cpu_s, mc->steady_files,
                          mc->steady_cpu_s, mc->copy_s, mc->interval, mc->late,
                          mc->idle_bytes, mc->end_bytes};
}

/* ------------------------------------------------------------------ moving files */

static const char *file_name(const AxCkptManifest *man, int file) {
  return file == MANIFEST ? "manifest" : man->files[file].name;
}

/* Sends a file's bytes to `to`: its size, then chunks (all held by the link emulator as any
 * other message, counted as checkpoint_replica traffic). */
static int send_file(AxMemCkpt *mc, const char *dir, const char *name, int to, int tag,
                     unsigned char **data, unsigned long long *size, AxLinkSend **sends,
                     int *n_sends) {
  char path[AX_MEMCKPT_PATH + 64];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  size_t n;
  AX_TRY(ax_file_read_all(path, data, &n));
  *size = n;
  int chunks = (int)((n + CHUNK_BYTES - 1) / CHUNK_BYTES);
  *sends = ax_calloc((size_t)chunks + 1, sizeof **sends);
  if (!*sends) return AX_ERR;
  AxCommConfig cc = ax_comm_config_as(&mc->v.grid->comm_cfg, AX_TRAFFIC_CHECKPOINT_REPLICA);
  AxLinkMsg m = {size, 1, MPI_UNSIGNED_LONG_LONG, sizeof *size, to, to, tag, mc->comm,
                 AX_TRAFFIC_CHECKPOINT_REPLICA};
  (*sends)[0] = AX_LINK_SEND_NULL;
  AX_TRY(ax_link_isend(&cc, &m, &(*sends)[0]));
  for (int c = 0; c < chunks; c++) {
    size_t off = (size_t)c * CHUNK_BYTES, len = n - off < CHUNK_BYTES ? n - off : CHUNK_BYTES;
    AxLinkMsg d = {*data + off, (int)len, MPI_BYTE, len, to, to, tag, mc->comm,
                   AX_TRAFFIC_CHECKPOINT_REPLICA};
    (*sends)[c + 1] = AX_LINK_SEND_NULL;
    AX_TRY(ax_link_isend(&cc, &d, &(*sends)[c + 1]));
  }
  *n_sends = chunks + 1;
  return AX_OK;
}

static int recv_into(AxMemCkpt *mc, void *buf, int count, MPI_Datatype type, int from, int tag) {
  AxCommConfig cc = ax_comm_config_as(&mc->v.grid->comm_cfg, AX_TRAFFIC_CHECKPOINT_REPLICA);
  MPI_Request req;
  AX_MPI(MPI_Irecv(buf, count, type, from, tag, mc->comm, &req));
  return ax_link_wait_recv(&cc, &req, MPI_STATUS_IGNORE);
}

/* Receives a file from `from` and writes it into dir under its name (a temporary name first). */
static int recv_file(AxMemCkpt *mc, const char *dir, const char *name, int from, int tag) {
  unsigned long long size = 0;
  AX_TRY(recv_into(mc, &size, 1, MPI_UNSIGNED_LONG_LONG, from, tag));
  unsigned char *data = ax_malloc(size + 1);
  if (!data) return AX_ERR;
  int rc = AX_OK;
  for (unsigned long long off = 0; rc == AX_OK && off < size; off += CHUNK_BYTES) {
    unsigned long long len = size - off < CHUNK_BYTES ? size - off : CHUNK_BYTES;
    rc = recv_into(mc, data + off, (int)len, MPI_BYTE, from, tag);
  }
  if (rc == AX_OK) rc = ax_memckpt_put_file(dir, name, data, size);
  free(data);
  return rc;
}

/* This rank's part of a list of transfers (the same list on every rank): it posts all its
 * sends first, then receives in list order, then completes its sends. src and dst: the
 * slot directories of this rank's node that files are read from and written to. */
static int run_transfers(AxMemCkpt *mc, const Transfer *x, int n, const AxCkptManifest *man,
                         const char *src, const char *dst) {
  int me = ax_memckpt_rank(mc), rc = AX_OK;
  unsigned char **data = ax_calloc((size_t)n + 1, sizeof *data);
  AxLinkSend **sends = ax_calloc((size_t)n + 1, sizeof *sends);
  int *n_sends = ax_calloc((size_t)n + 1, sizeof *n_sends);
  if (!data || !sends || !n_sends) rc = AX_ERR;
  for (int i = 0; i < n && rc == AX_OK; i++) {
    unsigned long long size;
    if (x[i].from == me)
      rc = send_file(mc, src, file_name(man, x[i].file), x[i].to, ax_memckpt_tag(x[i].file), &data[i],
                     &size, &sends[i], &n_sends[i]);
  }
  for (int i = 0; i < n && rc == AX_OK; i++)
    if (x[i].to == me) rc = recv_file(mc, dst, file_name(man, x[i].file), x[i].from,
                                      ax_memckpt_tag(x[i].file));
  AxCommConfig cc = ax_comm_config_as(&mc->v.grid->comm_cfg, AX_TRAFFIC_CHECKPOINT_REPLICA);
  for (int i = 0; i < n && sends && data && n_sends; i++) {
    for (int c = 0; c < n_sends[i]; c++) {
      if (rc == AX_OK) rc = ax_link_wait(&cc, &sends[i][c]);
      else ax_link_drop(&cc, &sends[i][c]);
    }
    free(sends[i]);
    free(data[i]);
  }
  free(data);
  free(sends);
  free(n_sends);
  return rc;
}

/* ------------------------------------------------------------------ the copy of a step */

/* --debug-hang-mode copy-*: this rank dies at that point of the step's memory checkpoint. */
static void debug_kill(const AxMemCkpt *mc, int step, int mode) {
  if (ax_memckpt_debug_at(mc, step, mode)) raise(SIGKILL);
}

/* The copy thread: this rank's stage file written into its slot's map (which the replicas
 * are then sent from), less what the optimizer wrote there already (zero-copy), which it only
 * CRCs. */
static void *copy_main(void *arg) {
  AxMemCkpt *mc = arg;
  double cpu0 = ax_thread_cpu_now();
  int me = ax_memckpt_rank(mc);
  int rc = ax_ckpt_fill_stage(mc->send.data, mc->send.size, mc->stage_of[me], mc->v.model,
                              mc->whole, mc->n_files, mc->fill[0], mc->fill[1],
                              mc->fill[2], mc->crc_part[me], mc->crc_parts[me], &mc->mine);
  if (rc != AX_OK) snprintf(mc->thread_err, sizeof mc->thread_err, "%s", ax_error_message());
  double cpu = ax_thread_cpu_now() - cpu0; /* read by the main thread after the join */
  mc->copy_cpu_s += cpu;
  mc->files_written++;
  if (!mc->send_fresh) {
    mc->steady_cpu_s += cpu;
    mc->steady_files++;
  }
  mc->thread_rc = rc;
  atomic_store(&mc->file_ready, rc == AX_OK);
  return NULL;
}

/* This rank's part of starting the copy of `step` into mc->slot, none of it collective (a
 * failure is reported at the settle's exchange) but the tensor-parallel gather. */
static int begin_copy(AxMemCkpt *mc, int step) {
  char dir[AX_MEMCKPT_PATH];
  /* every rank removes its node's manifest of the slot (again, harmless) before it or its
   * node's writers and receivers touch the slot: a slot that looks complete is never written */
  AX_TRY(ax_memckpt_invalidate(slot_dir(mc, mc->slot, dir)));
  debug_kill(mc, step, AX_DEBUG_HANG_COPY_BEGIN);
  AxCkptFile *files = ax_calloc((size_t)mc->n_files, sizeof *files);
  int rc = files ? mc->ops.build_manifest(mc->ops.ctx, step, files, &mc->man) : AX_ERR;
  mc->man.files = files; /* freed with the manifest, whatever happened */
  AX_TRY(rc);
  Transfer *x = NULL;
  int n = 0;
  rc = plan_replicas(mc, mc->man.n_files, &x, &n);
  if (rc == AX_OK) rc = ax_replicas_begin(mc, x, n); /* from here on settle, or free, ends it */
  free(x);
  AX_TRY(rc);
  mc->gathering = 1;
  return mc->ops.gather_open(mc->ops.ctx);
}

/* The whole stage the copy read, given back to the trainer. */
static void close_gather(AxMemCkpt *mc) {
  if (mc->gathering) mc->ops.gather_close(mc->ops.ctx);
  mc->gathering = 0;
  mc->whole = NULL;
  mc->whole_buf = NULL;
}

/* The copy thread, writing this rank's stage file (a writer) from the whole stage into the
 * slot's map. */
static int launch_copy(AxMemCkpt *mc) {
  AX_TRY(mc->ops.gather(mc->ops.ctx, &mc->whole, &mc->whole_buf));
  int me = ax_memckpt_rank(mc);
  if (!mc->writes[me]) return AX_OK;
  size_t bytes;
  AX_TRY(ax_ckpt_stage_bytes(mc->v.model, mc->whole, mc->stage_of[me], mc->n_files, &bytes));
  AX_TRY(ax_memckpt_slot_map(mc, mc->slot, mc->stage_of[me], bytes, &mc->send, &mc->send_fresh));
  for (int a = 0; a < 3; a++) mc->fill[a] = mc->whole_buf[a];
  if (mc->zero_copy) { /* what the optimizer left in the file is not copied again */
    float *sec[3];
    sections_in(mc, &mc->send, sec);
    if (mc->master_slot == mc->slot) mc->fill[0] = NULL;
    for (int a = 1; a < 3; a++)
      if (mc->fill[a] == sec[a]) mc->fill[a] = NULL;
    mc->files_in_place += !mc->fill[0] && !mc->fill[1] && !mc->fill[2];
  }
  if (pthread_create(&mc->thread, NULL, copy_main, mc) != 0)
    return AX_FAIL("cannot start the memory checkpoint's copy thread");
  mc->thread_running = 1;
  return AX_OK;
}

int ax_memckpt_step_end(AxMemCkpt *mc, int step) {
  if (!mc || !mc->on || step % mc->v.opt.memory_checkpoint_every) return AX_OK;
  if (!ax_replicas_due(mc, step)) { /* the interval was widened (agreed; said when it was) */
    mc->skipped++;
    return AX_OK;
  }
  if (mc->replicating) { /* never: a due step's settle completes the copy (agreed) */
    mc->skipped++;
    if (ax_memckpt_rank(mc) == 0)
      ax_log("memory checkpoints: the checkpoint of step %d is skipped: the replicas of step "
             "%d are still in flight", step, mc->step);
    return AX_OK;
  }
  AX_WD_NOTE(-1, "starting the memory checkpoint of step %d", step);
  mc->step = step;
  mc->slot = mc->state_slot; /* where this step's optimizer put the state (aim) */
  mc->pending = 1; /* on every rank: from here on the settle, or ax_memckpt_free, ends it */
  mc->joined = 0;
  mc->thread_rc = AX_OK;
  mc->mine = (AxCkptFile){{0}, 0, 0};
  int rc = begin_copy(mc, step);
  /* the gather is collective over the tensor-parallel cell: only then is a failure agreed now */
  if (mc->v.tensor_parallel) AX_TRY(agree(mc, rc));
  if (rc == AX_OK) rc = launch_copy(mc);
  if (rc != AX_OK) { /* kept for the settle, which every rank reaches */
    snprintf(mc->thread_err, sizeof mc->thread_err, "%s", ax_error_message());
    ax_error_clear();
    mc->thread_rc = rc;
  }
  return AX_OK;
}

/* The copy thread's outcome (joined), or the start's failure. */
static int copy_outcome(const AxMemCkpt *mc) {
  if (mc->thread_rc != AX_OK) return AX_FAIL("memory checkpoint: %s", mc->thread_err);
  return AX_OK;
}

/* The rank of `node` that writes stage s's file (-1: none there). */
static int writer_of(const AxMemCkpt *mc, int size, int node, int s) {
  for (int r = 0; r < size; r++)
    if (mc->writes[r] && mc->node_of[r] == node && mc->stage_of[r] == s) return r;
  return -1;
}

static int node_writes(const AxMemCkpt *mc, int size, int node, int s) {
  return writer_of(mc, size, node, s) >= 0;
}

/* The order the replica groups are drawn from (order[position] = node): nodes that write the
 * same stages side by side, at the place of the first of them, the others as numbered. Where
 * data parallelism already keeps a stage on several nodes (2x2 with one rank a node: nodes 0
 * and 2 write stage 0, 1 and 3 stage 1), a group of such nodes holds its files M times with no
 * replica sent; where every node writes other stages the groups are §6.4's, unchanged. */
static void group_order(const unsigned char *held, int N, int P, int *order) {
  int n = 0;
  for (int k = 0; k < N; k++) {
    int first = 0;
    while (memcmp(held + (size_t)first * P, held + (size_t)k * P, (size_t)P)) first++;
    if (first != k) continue; /* placed with the first of its kind */
    for (int j = k; j < N; j++)
      if (!memcmp(held + (size_t)j * P, held + (size_t)k * P, (size_t)P)) order[n++] = j;
  }
}

/* The replica transfers of a step: node K's files to the other holders of K's files (its
 * group in group_order) that do not hold that stage already. */
static int plan_replicas(const AxMemCkpt *mc, int P, Transfer **out, int *n) {
  int size = world_size(mc), N = mc->n_nodes, m = mc->replicas;
  unsigned char *held = ax_calloc((size_t)N * P, 1);
  int *holders = ax_calloc((size_t)m, sizeof *holders);
  int *order = ax_calloc((size_t)N, sizeof *order);
  *out = ax_calloc((size_t)N * P * m + 1, sizeof **out);
  *n = 0;
  if (!held || !holders || !order || !*out) {
    free(held);
    free(holders);
    free(order);
    return AX_ERR;
  }
  for (int k = 0; k < N; k++)
    for (int s = 0; s < P; s++) held[k * P + s] = (unsigned char)node_writes(mc, size, k, s);
  group_order(held, N, P, order);
  int rc = AX_OK;
  for (int at = 0; at < N && rc == AX_OK; at++) {
    int k = order[at];
    rc = ax_replica_holders(N, m, AX_PLACE_GROUP, at, holders);
    for (int s = 0; s < P && rc == AX_OK; s++) {
      if (!node_writes(mc, size, k, s)) continue;
      for (int j = 1; j < m; j++) {
        int h = order[holders[j]];
        if (held[h * P + s]) continue;
        held[h * P + s] = 1;
        (*out)[(*n)++] = (Transfer){s, writer_of(mc, size, k, s), leader_of(mc, size, h)};
      }
    }
  }
  free(held);
  free(holders);
  free(order);
  return rc;
}

/* The copy thread joined: the state may change after this. */
static void join(AxMemCkpt *mc) {
  if (!mc->pending || mc->joined) return;
  double t0 = ax_now();
  AX_WD_NOTE(-1, "joining the copy of the memory checkpoint of step %d", mc->step);
  if (mc->thread_running) pthread_join(mc->thread, NULL);
  mc->thread_running = 0;
  mc->joined = 1;
  mc->copies++;
  debug_kill(mc, mc->step, AX_DEBUG_HANG_COPY_FILES);
  close_gather(mc);
  mc->copy_s += ax_now() - t0;
}

/* Whether the state may go into slot s: it holds neither the newest complete copy nor one a
 * copy in flight still settles or replicates. */
static int slot_free(const AxMemCkpt *mc, int s) {
  return s >= 0 && s != mc->last_slot && !((mc->pending || mc->replicating) && s == mc->slot);
}

int ax_memckpt_before_optim(AxMemCkpt *mc) {
  if (!mc || !mc->on) return AX_OK;
  join(mc); /* the last copy has read the state the optimizer changes */
  /* where the state is, while it may stay there; else the first free slot: three slots always
   * leave one (every rank of a node chooses alike, from what the settles agreed) */
  if (!slot_free(mc, mc->state_slot))
    for (int s = AX_MEMCKPT_SLOTS - 1; s >= 0; s--)
      if (slot_free(mc, s)) mc->state_slot = s;
  if (!mc->zero_copy) return AX_OK;
  char dir[AX_MEMCKPT_PATH];
  AX_TRY(ax_memckpt_invalidate(slot_dir(mc, mc->state_slot, dir))); /* before it is written */
  float *sec[3];
  AxFileMap view;
  AX_TRY(ax_memckpt_slot_map(mc, mc->state_slot, mc->stage_of[ax_memckpt_rank(mc)], mc->sections.bytes,
                             &view, NULL));
  sections_in(mc, &view, sec);
  mc->v.off->to = (AxAdamWOut){sec[0], sec[1], sec[2]};
  return AX_OK;
}

void ax_memckpt_after_optim(AxMemCkpt *mc, int updated) {
  if (!mc || !mc->on || !mc->zero_copy) return;
  ax_offload_move_state(mc->v.off, updated);
  /* the slot whose master weights section holds the weights now (-1: none) */
  if (updated) mc->master_slot = mc->state_slot;
  else if (mc->master_slot != mc->state_slot) mc->master_slot = -1;
}

/* The settle's one collective: whether every rank is well (else every rank returns the first
 * failure's message, ax_grid_agree), whether every rank has handed its replicas over and, for
 * a copy just joined, every stage file's size and CRC from the rank that wrote it and the data
 * position (only the ranks that load data know it; the same on all of them). */
static int exchange(AxMemCkpt *mc, int rc, int *handed) {
  int size = world_size(mc);
  AxSettleNote mine = {.rc = rc, .handed = *handed, .data_position = mc->man.data_position,
                       .file = mc->mine}, *all = mc->notes;
  ax_replicas_interval(mc, &mine);
  if ((mc->v.grid != NULL)) { /* waiting politely: on an oversubscribed node a spinning rank keeps
                       * the others it waits for off the cores */
    MPI_Request req;
    AX_MPI(MPI_Iallgather(&mine, sizeof mine, MPI_BYTE, all, sizeof mine, MPI_BYTE,
                          mc->v.grid->world, &req));
    AX_TRY(ax_mpi_wait(&mc->v.grid->comm_cfg, &req, NULL));
  } else {
    all[0] = mine;
  }
  int failed = 0;
  for (int r = 0; r < size; r++) failed |= all[r].rc != AX_OK;
  if (failed) return agree(mc, rc);
  for (int r = 0; r < size; r++) *handed &= all[r].handed;
  ax_replicas_agree_interval(mc, all, size);
  for (int r = 0; r < size && mc->pending; r++) {
    if (mc->writes[r]) {
      AxCkptFile *f = &mc->man.files[mc->stage_of[r]];
      *f = all[r].file;
      if (mc->crc_parts[r] > 1) { /* a stage's parts come in rank order, the last makes the
                                    * whole; the stages' parts interleave, each has its row */
        uint32_t *parts = mc->crc_scratch + (size_t)mc->stage_of[r] * mc->n_nodes;
        parts[mc->crc_part[r]] = f->crc;
        if (mc->crc_part[r] == mc->crc_parts[r] - 1)
          f->crc = ax_ckpt_crc_of_parts(parts, mc->crc_parts[r], f->bytes);
      }
    }
    if (all[r].data_position > mc->man.data_position)
      mc->man.data_position = all[r].data_position;
  }
  return AX_OK;
}

/* The leader, before its node's manifest: the whole file's CRC into the trailer of each stage
 * file its node's writer CRC'd in part (the trailer held the part's). */
static int seal_files(AxMemCkpt *mc) {
  int size = world_size(mc);
  for (int s = 0; s < mc->man.n_files; s++) {
    int w = writer_of(mc, size, mc->node, s);
    if (w < 0 || mc->crc_parts[w] == 1) continue;
    const AxCkptFile *f = &mc->man.files[s];
    AxFileMap view;
    AX_TRY(ax_memckpt_slot_map(mc, mc->slot, s, (size_t)f->bytes + sizeof f->crc, &view, NULL));
    memcpy((unsigned char *)view.data + f->bytes, &f->crc, sizeof f->crc);
  }
  return AX_OK;
}

/* Every replica of this rank has landed: its node's leader writes the manifest, and the copy
 * is complete (agreed). */
static int complete_copy(AxMemCkpt *mc) {
  char dir[AX_MEMCKPT_PATH];
  AX_WD_NOTE(-1, "completing the replicas of the memory checkpoint of step %d", mc->step);
  int rc = ax_replicas_complete(mc);
  if (rc == AX_OK && is_leader(mc)) rc = seal_files(mc);
  if (rc == AX_OK && is_leader(mc))
    rc = ax_ckpt_write_manifest(slot_dir(mc, mc->slot, dir), &mc->man);
  free(mc->man.files);
  free(mc->man.records);
  memset(&mc->man, 0, sizeof mc->man);
  ax_replicas_free(mc);
  mc->landed_copies++;
  mc->last_slot = mc->slot;
  return agree(mc, rc);
}

/* Two collectives when the copy completes, one while its replicas are still on their way. */
static int settle(AxMemCkpt *mc, int flush) {
  if (!mc->pending && !mc->replicating) return AX_OK;
  join(mc); /* done already, but at the end of the run */
  double t0 = ax_now();
  int rc = mc->pending ? copy_outcome(mc) : AX_OK, handed = 1;
  if (rc == AX_OK) rc = ax_replicas_hand_over(mc, flush, &handed);
  if (ax_replicas_may_land(mc, flush, handed)) /* the replicas handed over, nothing complete */
    debug_kill(mc, mc->step, AX_DEBUG_HANG_COPY_REPLICAS);
  AX_WD_NOTE(-1, "settling the memory checkpoint of step %d with every rank", mc->step);
  rc = exchange(mc, rc, &handed);
  mc->pending = 0;
  if (rc == AX_OK && ax_replicas_land_now(mc, flush, handed)) rc = complete_copy(mc);
  mc->copy_s += ax_now() - t0;
  return rc;
}

int ax_memckpt_after_loss(AxMemCkpt *mc) { return mc ? settle(mc, 0) : AX_OK; }

/* ------------------------------------------------------------------ recovery */

/* What every node's slots hold: nodes x AX_MEMCKPT_SLOTS, scanned by each node's leader. */
static int scan_all(AxMemCkpt *mc, AxMemSlot **out) {
  int size = world_size(mc);
  AxMemSlot mine[AX_MEMCKPT_SLOTS];
  char dir[AX_MEMCKPT_PATH];
  for (int s = 0; s < AX_MEMCKPT_SLOTS; s++) {
    memset(&mine[s], 0, sizeof mine[s]);
    mine[s].step = -1;
    if (is_leader(mc)) ax_memckpt_scan(slot_dir(mc, s, dir), &mine[s]);
  }
  AxMemSlot *all = ax_calloc((size_t)size * AX_MEMCKPT_SLOTS, sizeof *all);
  *out = ax_calloc((size_t)mc->n_nodes * AX_MEMCKPT_SLOTS, sizeof **out);
  if (!all || !*out) {
    free(all);
    return AX_ERR;
  }
  if ((mc->v.grid != NULL))
    AX_MPI(MPI_Allgather(mine, sizeof mine, MPI_BYTE, all, sizeof mine, MPI_BYTE, mc->v.grid->world));
  else
    memcpy(all, mine, sizeof mine);
  for (int k = 0; k < mc->n_nodes; k++)
    memcpy(&(*out)[k * AX_MEMCKPT_SLOTS], &all[leader_of(mc, size, k) * AX_MEMCKPT_SLOTS],
           sizeof mine);
  free(all);
  return AX_OK;
}

/* The slot of node k holding step (-1: none). */
static int slot_with(const AxMemSlot *slots, int k, int step) {
  for (int s = 0; s < AX_MEMCKPT_SLOTS; s++)
    if (slots[k * AX_MEMCKPT_SLOTS + s].step == step) return s;
  return -1;
}

/* The lowest node whose slot of `step` has file f (its manifest for f == n_files), or -1. */
static int node_with(const AxMemCkpt *mc, const AxMemSlot *slots, int step, int f) {
  for (int k = 0; k < mc->n_nodes; k++) {
    int s = slot_with(slots, k, step);
    if (s >= 0 && slots[k * AX_MEMCKPT_SLOTS + s].have[f]) return k;
  }
  return -1;
}

/* The newest step whose manifest and every file some node holds (-1: none). */
static int newest_whole_step(const AxMemCkpt *mc, const AxMemSlot *slots) {
  int best = -1;
  for (int i = 0; i < mc->n_nodes * AX_MEMCKPT_SLOTS; i++) {
    const AxMemSlot *c = &slots[i];
    if (c->step <= best) continue;
    int whole = 1;
    for (int f = 0; f <= c->n_files && whole; f++) whole = node_with(mc, slots, c->step, f) >= 0;
    if (whole) best = c->step;
  }
  return best;
}

/* Where this node keeps the recovered step: the slot that holds it, else one emptied for it. */
static int prepare_slot(AxMemCkpt *mc, const AxMemSlot *slots, int step, int *slot) {
  *slot = slot_with(slots, mc->node, step);
  int rc = AX_OK;
  if (*slot < 0) {
    *slot = step / mc->v.opt.memory_checkpoint_every % AX_MEMCKPT_SLOTS;
    char dir[AX_MEMCKPT_PATH];
    if (is_leader(mc)) rc = ax_memckpt_empty(slot_dir(mc, *slot, dir)); /* the tree: checked */
  }
  return agree(mc, rc);
}

/* Transfers giving every node what it needs of step (need: nodes x (n_files + 1), the
 * manifest last) and does not hold, each from the lowest node holding it. */
static int plan_recovery(const AxMemCkpt *mc, const AxMemSlot *slots, int step, int n_files,
                         const unsigned char *need, Transfer **out, int *n) {
  int size = world_size(mc), per = n_files + 1;
  *out = ax_calloc((size_t)mc->n_nodes * per + 1, sizeof **out);
  *n = 0;
  if (!*out) return AX_ERR;
  for (int k = 0; k < mc->n_nodes; k++) {
    int s = slot_with(slots, k, step);
    for (int f = 0; f < per; f++) {
      if (!need[k * per + f] || (s >= 0 && slots[k * AX_MEMCKPT_SLOTS + s].have[f])) continue;
      int from = node_with(mc, slots, step, f);
      (*out)[(*n)++] = (Transfer){f == n_files ? MANIFEST : f, leader_of(mc, size, from),
                                  leader_of(mc, size, k)};
    }
  }
  return AX_OK;
}

/* Nodes x (n_files + 1): 1 where some rank of the node reads the file (round 0: the manifest,
 * everywhere; round 1: the stage files its ranks' layouts read). */
static int needs_of(AxMemCkpt *mc, const char *dir, int n_files, int round, unsigned char **out) {
  int size = world_size(mc), per = n_files + 1;
  unsigned char *mine = ax_calloc((size_t)per, 1), *all = ax_calloc((size_t)size * per, 1);
  *out = ax_calloc((size_t)mc->n_nodes * per, 1);
  int rc = mine && all && *out ? AX_OK : AX_ERR;
  if (rc == AX_OK && round == 0) mine[n_files] = 1;
  if (rc == AX_OK && round == 1) {
    AxCkptManifest man;
    AxStageLayout lay;
    const AxStageSpec *sp = mc->v.spec;
    ax_stage_layout(&lay, mc->v.model, sp->l0, sp->l1, sp->first, sp->last);
    rc = ax_ckpt_load_manifest(dir, 0, &man);
    if (rc == AX_OK) {
      ax_ckpt_stage_files(&man, &lay, mine);
      ax_ckpt_manifest_free(&man);
    }
  }
  rc = agree(mc, rc);
  if (rc == AX_OK && (mc->v.grid != NULL))
    AX_MPI(MPI_Allgather(mine, per, MPI_BYTE, all, per, MPI_BYTE, mc->v.grid->world));
  else if (rc == AX_OK)
    memcpy(all, mine, (size_t)per);
  for (int r = 0; r < size && rc == AX_OK; r++)
    for (int f = 0; f < per; f++) (*out)[mc->node_of[r] * per + f] |= all[r * per + f];
  free(mine);
  free(all);
  return rc;
}

/* Rank 0: where each file of the recovered step came from. */
static void report(const AxMemCkpt *mc, const AxMemSlot *slots, int step, int n_files,
                   const Transfer *x, int n, double seconds) {
  if (ax_memckpt_rank(mc) != 0) return;
  int moved = 0;
  for (int f = 0; f < n_files; f++) {
    char line[1024];
    int len = snprintf(line, sizeof line, "resume: stage-%d.bin of step %d:", f, step);
    for (int k = 0; k < mc->n_nodes && len < (int)sizeof line - 80; k++) {
      int s = slot_with(slots, k, step);
      if (s >= 0 && slots[k * AX_MEMCKPT_SLOTS + s].have[f])
        len += snprintf(line + len, sizeof line - (size_t)len, " node %d's memory;", k);
    }
    for (int i = 0; i < n && len < (int)sizeof line - 80; i++)
      if (x[i].file == f) {
        len += snprintf(line + len, sizeof line - (size_t)len, " sent from node %d to node %d;",
                        mc->node_of[x[i].from], mc->node_of[x[i].to]);
        moved++;
      }
    ax_log("%s", line);
  }
  ax_log("resume: step %d recovered from memory (%s) in %.3f s: %d stage file(s) sent to nodes "
         "that lacked them", step, moved ? "own nodes and peer replicas" : "every node its own",
         seconds, moved);
}

int ax_memckpt_recover(AxMemCkpt *mc, int file_step, int *recovered, int *step) {
  *recovered = 0;
  if (!mc || !mc->on) return AX_OK;
  double t0 = ax_now();
  AX_WD_NOTE(-1, "finding the newest memory checkpoint");
  AxMemSlot *slots = NULL;
  int rc = agree(mc, scan_all(mc, &slots));
  int best = rc == AX_OK ? newest_whole_step(mc, slots) : -1;
  if (rc != AX_OK || best < 0 || best <= file_step) {
    if (rc == AX_OK && ax_memckpt_rank(mc) == 0)
      ax_log("resume: %s", best < 0 ? "no memory checkpoint that the nodes hold whole"
                                     : "the file checkpoint is as new as the memory one");
    free(slots);
    return rc;
  }
  int n_files = slots[0].n_files, slot;
  for (int i = 0; i < mc->n_nodes * AX_MEMCKPT_SLOTS; i++)
    if (slots[i].step == best) n_files = slots[i].n_files;
  char dir[AX_MEMCKPT_PATH];
  Transfer *x[2] = {NULL, NULL};
  int n[2] = {0, 0};
  unsigned char *need = NULL;
  rc = prepare_slot(mc, slots, best, &slot);
  mc->last_slot = slot; /* the next copy goes to the other one */
  slot_dir(mc, slot, dir);
  AxCkptManifest names = {.n_files = 0};
  for (int round = 0; round < 2 && rc == AX_OK; round++) {
    rc = needs_of(mc, dir, n_files, round, &need);
    if (rc == AX_OK) rc = plan_recovery(mc, slots, best, n_files, need, &x[round], &n[round]);
    if (rc == AX_OK && round == 1) rc = ax_ckpt_load_manifest(dir, 0, &names);
    if (rc == AX_OK) rc = agree(mc, run_transfers(mc, x[round], n[round], &names, dir, dir));
    free(need);
    need = NULL;
  }
  if (rc == AX_OK) rc = agree(mc, mc->ops.load_checkpoint(mc->ops.ctx, dir, step));
  if (rc == AX_OK) report(mc, slots, best, n_files, x[1], n[1], ax_now() - t0);
  ax_ckpt_manifest_free(&names);
  free(x[0]);
  free(x[1]);
  free(slots);
  *recovered = rc == AX_OK;
  return rc;
}

/* ------------------------------------------------------------------ the end */

/* A node leader: its node's files removed (the lock held until they are gone). */
static int remove_node(AxMemCkpt *mc) {
  char dir[AX_MEMCKPT_PATH];
  int rc = ax_memckpt_remove_tree(ax_memckpt_node_dir(mc->v.opt.memory_dir, mc->name, mc->node, dir));
  ax_lock_release(mc->lock_fd);
  mc->lock_fd = -1;
  return rc;
}

int ax_memckpt_close(AxMemCkpt *mc) {
  if (!mc || !mc->on) return AX_OK;
  AX_TRY(settle(mc, 1));
  ax_replicas_report(mc);
  AX_TRY(agree(mc, AX_OK)); /* nobody reads a node's files any more */
  AX_TRY(agree(mc, is_leader(mc) ? remove_node(mc) : AX_OK));
  return agree(mc, is_leader(mc) ? ax_memckpt_remove_run_dir(mc->v.opt.memory_dir, mc->name) : AX_OK);
}

/* Whether a slot of this node holds a finished copy (its manifest parses): files of a copy
 * without one are never read, so a node without any holds nothing a resume could use. */
static int node_holds_checkpoint(const AxMemCkpt *mc) {
  char dir[AX_MEMCKPT_PATH];
  for (int s = 0; s < AX_MEMCKPT_SLOTS; s++) {
    AxMemSlot slot;
    ax_memckpt_scan(slot_dir(mc, s, dir), &slot);
    if (slot.step >= 0) return 1;
  }
  return 0;
}

void ax_memckpt_abandon(AxMemCkpt *mc) {
  if (!mc || !mc->on || mc->lock_fd < 0) return;
  if (mc->thread_running) pthread_join(mc->thread, NULL);
  mc->thread_running = 0;
  char failure[1024]; /* the run's own error, which the clean-up must not replace */
  int pending = ax_error_pending();
  if (pending) snprintf(failure, sizeof failure, "%s", ax_error_message());
  if (!node_holds_checkpoint(mc) && remove_node(mc) == AX_OK)
    ax_memckpt_remove_run_dir(mc->v.opt.memory_dir, mc->name);
  ax_error_clear();
  if (pending) ax_fail_forwarded(failure);
}

void ax_memckpt_free(AxMemCkpt *mc) {
  if (!mc) return;
  ax_memckpt_abandon(mc);
  if (mc->thread_running) pthread_join(mc->thread, NULL);
  mc->thread_running = 0;
  if (mc->on) ax_lock_release(mc->lock_fd);
  if (mc->pending) close_gather(mc);
  ax_replicas_free(mc);
  for (int k = 0; mc->profile && k < mc->n_nodes; k++) ax_span_profile_free(&mc->profile[k]);
  free(mc->profile);
  free(mc->spans);
  free(mc->n_spans);
  free(mc->span_used);
  free(mc->busy_until);
  free(mc->share);
  free(mc->uses);
  free(mc->man.files);
  free(mc->man.records);
  free(mc->node_of);
  free(mc->stage_of);
  free(mc->writes);
  free(mc->notes);
  free(mc->crc_part);
  free(mc->crc_parts);
  free(mc->crc_scratch);
  ax_offload_state_home(mc->v.off); /* the moments may live in a slot file's mapping */
  ax_memckpt_slot_maps_free(mc);
  if (mc->have_comm) MPI_Comm_free(&mc->comm);
  free(mc);
}
