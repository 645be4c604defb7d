/* interleave.c — chunked all-reduce of the host gradients and the AdamW that follows each
 * chunk, progressed by calls between update sub-blocks or by a communication thread; see
 * interleave.h. The main thread tells the watchdog (src/core/watchdog.h) which chunk it sums or
 * updates; the communication thread does not note. */
#include "interleave.h"

#include <pthread.h>
#include <stdlib.h>

#include "src/core/bf16.h"
#include "src/core/error.h"
#include "src/core/watchdog.h"

enum { SUB_BLOCK = 1 << 18 }; /* elements updated between two progress calls */

/* An early sum's unit (AxEarlySum): a range of one chunk with an operation of its own. */
typedef struct {
  size_t lo, hi;
  int part; /* a part that takes an operation of its own (start_own), or -1: plain */
} Piece;

typedef struct {
  AxOffload *o;
  const AxReduceSpec *r;
  AxColl **ops; /* per slot (a chunk's group: slot0 / n_slots), NULL when not in flight */
  int active;   /* 1 when there is a group to sum over */
  /* an early sum: chunk c is pieces [pfirst[c], pfirst[c + 1]), each started on its own */
  Piece *pieces;
  int *pfirst, n_pieces, n_started;
  unsigned char *started;
} Reducer;

struct AxEarlySum {
  Reducer rd;
};

/* A chunk's operations live in its slots, taken in start order: two per chunk without
 * compression (the chunk less the summed range is at most two pieces), one per part and one
 * more with it (a CaSync per compressed part, a plain all-reduce per piece of a run of plain
 * parts: cutting the one summed range out of the runs adds at most one piece); in an early
 * sum two per piece. */
static int slot0(const Reducer *rd, int c) {
  const AxGradCompress *gc = rd->r->compress;
  if (rd->pieces) return 2 * rd->pfirst[c];
  return gc ? gc->first[c] + c : 2 * c;
}

static int n_slots(const Reducer *rd, int c) {
  const AxGradCompress *gc = rd->r->compress;
  if (rd->pieces) return 2 * (rd->pfirst[c + 1] - rd->pfirst[c]);
  return gc ? gc->first[c + 1] - gc->first[c] + 1 : 2;
}

/* [lo, hi) less the range the caller summed: up to two pieces [piece[i][0], piece[i][1]);
 * returns how many. */
static int unsummed_pieces(const AxReduceSpec *r, size_t lo, size_t hi, size_t piece[2][2]) {
  size_t a = r->summed_lo > lo ? r->summed_lo : lo;
  size_t b = r->summed_hi < hi ? r->summed_hi : hi;
  if (a >= b) a = b = hi; /* no overlap: one piece, the whole range */
  int n = 0;
  if (a > lo) piece[n][0] = lo, piece[n++][1] = a;
  if (hi > b) piece[n][0] = b, piece[n++][1] = hi;
  return n;
}

double ax_reduce_spec_sumsq(const AxReduceSpec *r, size_t lo, size_t hi,
                            double (*span)(void *ctx, size_t lo, size_t hi), void *ctx) {
  double sum = 0;
  size_t at = lo;
  for (int k = 0; k < r->n_norm_skip && at < hi; k++) {
    size_t a = r->norm_skip[k].lo > at ? r->norm_skip[k].lo : at;
    size_t b = r->norm_skip[k].hi < hi ? r->norm_skip[k].hi : hi;
    if (a >= b) continue;
    if (a > at) sum += span(ctx, at, a);
    at = b;
  }
  return at < hi ? sum + span(ctx, at, hi) : sum;
}

static double host_span(void *ctx, size_t lo, size_t hi) {
  const AxOffload *o = ctx;
  return ax_host_sumsq_pool(o->pool, o->grads + lo, hi - lo);
}

/* Sum of squares of the host gradients [lo, hi) without the skipped spans. */
static double chunk_sumsq(AxOffload *o, const AxReduceSpec *r, size_t lo, size_t hi) {
  return ax_reduce_spec_sumsq(r, lo, hi, host_span, o);
}

static int reducer_init(Reducer *rd, AxOffload *o, const AxReduceSpec *r) {
  int size = 1;
  if (r->comm != MPI_COMM_NULL) MPI_Comm_size(r->comm, &size);
  *rd = (Reducer){.o = o, .r = r, .active = size > 1};
  if (!rd->active) return AX_OK;
  int total = r->compress ? r->compress->n_parts + o->n_chunks : 2 * o->n_chunks;
  rd->ops = ax_calloc((size_t)total + 1, sizeof *rd->ops);
  return rd->ops ? AX_OK : AX_ERR;
}

static void reducer_free(Reducer *rd) {
  if (rd->ops)
    for (int c = 0; c < rd->o->n_chunks; c++)
      for (int k = 0; k < n_slots(rd, c); k++) ax_coll_free(rd->ops[slot0(rd, c) + k]);
  free(rd->ops);
  free(rd->pieces);
  free(rd->pfirst);
  free(rd->started);
}

/* [lo, hi) less the summed range: a plain all-reduce per piece, in the chunk's next slots
 * (*k), bf16 on the wire when `wire`. */
static int start_plain(Reducer *rd, int *k, size_t lo, size_t hi, int wire) {
  AxOffload *o = rd->o;
  const AxReduceSpec *r = rd->r;
  size_t piece[2][2];
  int n = unsummed_pieces(r, lo, hi, piece);
  for (int i = 0; i < n; i++) {
    size_t a = piece[i][0], count = piece[i][1] - a;
    AxColl **op = &rd->ops[(*k)++];
    if (wire) {
      ax_f32_to_bf16_array(o->wire + a, o->grads + a, count);
      AX_TRY(ax_allreduce_start(op, r->comm, r->cc, o->wire + a, count, AX_COMM_BF16, r->algo,
                                r->bytes));
    } else {
      AX_TRY(ax_allreduce_start(op, r->comm, r->cc, o->grads + a, count, AX_COMM_F32, r->algo,
                                r->bytes));
    }
  }
  return AX_OK;
}

/* Part p through CaSync (in the partitions its state was laid out in), or in two levels (plain
 * or CaSync between the nodes), in the chunk's next slot (*k). Nothing for a part inside the
 * summed range; one it cuts is an error. */
static int start_own(Reducer *rd, int p, int *k) {
  const AxGradCompress *gc = rd->r->compress;
  const AxGradPart *part = &gc->parts[p];
  size_t piece[2][2];
  int n = unsummed_pieces(rd->r, part->lo, part->hi, piece);
  if (n == 0) return AX_OK;
  if (n > 1 || piece[0][0] != part->lo || piece[0][1] != part->hi)
    return AX_FAIL("the summed range [%zu, %zu) cuts the compressed part [%zu, %zu)",
                   rd->r->summed_lo, rd->r->summed_hi, part->lo, part->hi);
  AxCommConfig cc = ax_comm_config_resolve(rd->r->cc);
  AxCodecCtx ctx = {.seed = gc->seed, .step = gc->step, .range = part->lo,
                    .adam_v = rd->o->v && !part->choice.two_level ? rd->o->v + part->lo : NULL,
                    .grad_scale = gc->grad_scale};
  float *buf = rd->o->grads + part->lo;
  size_t count = part->hi - part->lo;
  if (part->choice.two_level) {
    AxTwoLevelInner inner = {.algo = rd->r->algo, .ctx = ctx};
    if (part->choice.compress)
      inner.codec = part->codec, inner.casync_algo = part->choice.algo, inner.state = part->state;
    return ax_two_level_allreduce_start(&rd->ops[(*k)++], gc->two_level, &cc, &inner, buf, count,
                                        rd->r->bytes);
  }
  return ax_casync_allreduce_start(&rd->ops[(*k)++], rd->r->comm, &cc, part->codec,
                                   part->choice.algo, part->state, &ctx, buf, count,
                                   rd->r->bytes);
}

/* Chunk c's group, in part order: an operation of its own per compressed or two-level part
 * (start_own), plain fp32 all-reduces per maximal run of adjacent flat plain parts (one, or
 * two around the summed range). */
static int start_group(Reducer *rd, int c) {
  const AxGradCompress *gc = rd->r->compress;
  int p = gc->first[c], end = gc->first[c + 1], k = slot0(rd, c);
  while (p < end) {
    if (ax_grad_compress_part_uses(gc, p)) {
      AX_TRY(start_own(rd, p++, &k));
      continue;
    }
    int q = p;
    while (q < end && !ax_grad_compress_part_uses(gc, q)) q++;
    AX_TRY(start_plain(rd, &k, gc->parts[p].lo, gc->parts[q - 1].hi, 0));
    p = q;
  }
  return AX_OK;
}

/* Piece k of an early sum, in its two slots. */
static int start_piece(Reducer *rd, int k) {
  const Piece *pc = &rd->pieces[k];
  int slot = 2 * k;
  rd->started[k] = 1;
  rd->n_started++;
  if (pc->part >= 0) return start_own(rd, pc->part, &slot);
  return start_plain(rd, &slot, pc->lo, pc->hi, 0);
}

static int start_chunk(Reducer *rd, int c) {
  if (!rd->active || c >= rd->o->n_chunks) return AX_OK;
  if (rd->pieces) {
    for (int k = rd->pfirst[c]; k < rd->pfirst[c + 1]; k++)
      if (!rd->started[k]) AX_TRY(start_piece(rd, k));
    return AX_OK;
  }
  if (ax_grad_compress_uses(rd->r->compress, c)) return start_group(rd, c);
  size_t lo, hi;
  ax_offload_chunk_range(rd->o, c, &lo, &hi);
  int k = slot0(rd, c);
  return start_plain(rd, &k, lo, hi, rd->o->wire != NULL);
}

/* start_chunk on the main thread, traced as part of the chunk's all-reduce: a compressed
 * group's first encodes run in its start. */
static int start_chunk_traced(Reducer *rd, int c) {
  double t0 = ax_trace_begin(rd->r->trace);
  AX_TRY(start_chunk(rd, c));
  if (rd->active && c < rd->o->n_chunks) ax_trace_end(rd->r->trace, AX_EV_ALLREDUCE, c, t0);
  return AX_OK;
}

/* One progress call on every operation of chunk c's group; *first gets the first slot still
 * unfinished, or -1 when the whole group is done. */
static int test_group(Reducer *rd, int c, int *first) {
  *first = -1;
  for (int k = slot0(rd, c); k < slot0(rd, c) + n_slots(rd, c); k++) {
    int done = 1;
    if (rd->ops[k]) AX_TRY(ax_coll_test(rd->ops[k], &done));
    if (!done && *first < 0) *first = k;
  }
  return AX_OK;
}

/* Waits for chunk c's group (yielding the core between polls when `yield`), frees it, and
 * brings a bf16 sum back to fp32. */
static int wait_chunk(Reducer *rd, int c, int yield) {
  AxOffload *o = rd->o;
  int rc = AX_OK, first = 0, s0 = slot0(rd, c), n = n_slots(rd, c);
  for (int k = s0; !yield && k < s0 + n && rc == AX_OK; k++)
    if (rd->ops[k]) rc = ax_coll_wait(rd->ops[k]);
  while (yield && rc == AX_OK && (rc = test_group(rd, c, &first)) == AX_OK && first >= 0)
    ax_coll_pause(rd->ops[first], 1); /* a yield, or a sleep with an emulated link */
  for (int k = s0; k < s0 + n; k++) {
    ax_coll_free(rd->ops[k]);
    rd->ops[k] = NULL;
  }
  AX_TRY(rc);
  if (o->wire && !ax_grad_compress_uses(rd->r->compress, c)) {
    size_t lo, hi, piece[2][2];
    ax_offload_chunk_range(o, c, &lo, &hi);
    int pieces = unsummed_pieces(rd->r, lo, hi, piece);
    for (int i = 0; i < pieces; i++)
      ax_bf16_to_f32_array(o->grads + piece[i][0], o->wire + piece[i][0],
                           piece[i][1] - piece[i][0]);
  }
  return AX_OK;
}

static int finish_chunk(Reducer *rd, int c) {
  if (!rd->active) return AX_OK;
  AX_WD_NOTE(-1, "in the data-parallel gradient all-reduce of chunk %d (of %d)", c,
             rd->o->n_chunks);
  double t0 = ax_trace_begin(rd->r->trace);
  AX_TRY(wait_chunk(rd, c, 0));
  ax_trace_end(rd->r->trace, AX_EV_ALLREDUCE, c, t0);
  return AX_OK;
}

/* One progress call on every chunk in flight after c. */
static int progress_after(Reducer *rd, int c) {
  if (!rd->active) return AX_OK;
  int last = c + rd->r->window < rd->o->n_chunks ? c + rd->r->window : rd->o->n_chunks - 1;
  for (int k = c + 1; k <= last; k++) {
    int first;
    AX_TRY(test_group(rd, k, &first));
  }
  return AX_OK;
}

/* AdamW on chunk c in sub-blocks, progressing the chunks in flight between them. */
static int update_chunk(AxOffload *o, Reducer *rd, int c, void *device_params,
                        const AxAdamWHyper *h, AxTrace *trace) {
  size_t lo, hi;
  ax_offload_chunk_range(o, c, &lo, &hi);
  AX_WD_NOTE(-1, "computing the AdamW update of chunk %d (of %d)", c, o->n_chunks);
  double t0 = ax_trace_begin(trace);
  for (size_t s = lo; s < hi; s += SUB_BLOCK) {
    size_t e = s + SUB_BLOCK < hi ? s + SUB_BLOCK : hi;
    ax_offload_update(o, s, e, h);
    if (rd && rd->r->progress == AX_PROGRESS_CALLS) AX_TRY(progress_after(rd, c));
  }
  AX_TRY(ax_offload_write_back(o, device_params, lo, hi));
  ax_trace_end(trace, AX_EV_OPTIMIZER, c, t0);
  return AX_OK;
}

/* The communication thread of AX_PROGRESS_THREAD: it alone calls MPI while it runs. It starts
 * the chunks a window at a time, waits for each in order and tells the main thread, which
 * updates chunk c while the thread keeps c+1.. moving. */
typedef struct {
  Reducer *rd;
  pthread_mutex_t mu;
  pthread_cond_t summed_cv;
  int summed;      /* chunks [0, summed) are summed */
  int failed;      /* the thread stopped on an error: message below */
  char message[512];
} CommThread;

static int comm_chunks(Reducer *rd, CommThread *ct) {
  int window = rd->r->window > 0 ? rd->r->window : 1;
  for (int c = 0; c < window; c++) AX_TRY(start_chunk(rd, c));
  for (int c = 0; c < rd->o->n_chunks; c++) {
    AX_TRY(wait_chunk(rd, c, 1));
    AX_TRY(start_chunk(rd, c + window));
    pthread_mutex_lock(&ct->mu);
    ct->summed = c + 1;
    pthread_cond_signal(&ct->summed_cv);
    pthread_mutex_unlock(&ct->mu);
  }
  return AX_OK;
}

static void *comm_thread_main(void *arg) {
  CommThread *ct = arg;
  ax_wd_mute_thread();
  int rc = comm_chunks(ct->rd, ct);
  pthread_mutex_lock(&ct->mu);
  if (rc != AX_OK) {
    ct->failed = 1;
    snprintf(ct->message, sizeof ct->message, "%s", ax_error_message());
  }
  pthread_cond_signal(&ct->summed_cv);
  pthread_mutex_unlock(&ct->mu);
  return NULL;
}

/* Blocks until chunk c is summed; AX_ERR with the thread's message if it failed first. The
 * wait shows in the trace as the chunk's all-reduce. */
static int await_chunk(CommThread *ct, int c, AxTrace *trace) {
  AX_WD_NOTE(-1, "waiting for the communication thread's data-parallel gradient all-reduce of "
             "chunk %d (of %d)", c, ct->rd->o->n_chunks);
  double t0 = ax_trace_begin(trace);
  pthread_mutex_lock(&ct->mu);
  while (ct->summed <= c && !ct->failed) pthread_cond_wait(&ct->summed_cv, &ct->mu);
  int ok = ct->summed > c;
  pthread_mutex_unlock(&ct->mu);
  if (!ok) return ax_fail_forwarded(ct->message);
  ax_trace_end(trace, AX_EV_ALLREDUCE, c, t0);
  return AX_OK;
}

static int mpi_allows_thread(void) {
  int level = MPI_THREAD_SINGLE;
  MPI_Query_thread(&level);
  if (level >= MPI_THREAD_SERIALIZED) return AX_OK;
  return AX_FAIL("--progress thread needs MPI initialized with MPI_THREAD_SERIALIZED or more "
                 "(this MPI provides %d)", level);
}

static int run_chunks_threaded(AxOffload *o, const AxReduceSpec *r, double *sumsq,
                               void *device_params, const AxAdamWHyper *h) {
  Reducer rd;
  if (r->early) return AX_FAIL("internal: an early sum progressed by a communication thread");
  AX_TRY(mpi_allows_thread());
  AX_TRY(reducer_init(&rd, o, r));
  CommThread ct = {.rd = &rd};
  pthread_mutex_init(&ct.mu, NULL);
  pthread_cond_init(&ct.summed_cv, NULL);
  pthread_t thread;
  int rc = pthread_create(&thread, NULL, comm_thread_main, &ct)
               ? AX_FAIL("cannot start the communication thread")
               : AX_OK;
  int started = rc == AX_OK;
  *sumsq = 0;
  for (int c = 0; c < o->n_chunks && rc == AX_OK; c++) {
    rc = await_chunk(&ct, c, r->trace);
    size_t lo, hi;
    ax_offload_chunk_range(o, c, &lo, &hi);
    if (rc == AX_OK) *sumsq += chunk_sumsq(o, r, lo, hi);
    if (rc == AX_OK) rc = update_chunk(o, NULL, c, device_params, h, r->trace);
  }
  if (started) pthread_join(thread, NULL); /* it finishes its chunks: the peers need them */
  if (rc == AX_OK && ct.failed) rc = ax_fail_forwarded(ct.message);
  pthread_cond_destroy(&ct.summed_cv);
  pthread_mutex_destroy(&ct.mu);
  reducer_free(&rd);
  return rc;
}

/* Drives every chunk through start / finish; after each finish calls `then` (may be NULL). */
static int run_chunks(AxOffload *o, const AxReduceSpec *r, double *sumsq,
                      int (*then)(AxOffload *, Reducer *, int, void *, const AxAdamWHyper *,
                                  AxTrace *),
                      void *device_params, const AxAdamWHyper *h) {
  Reducer local, *rd = r->early ? &r->early->rd : &local;
  if (!r->early) AX_TRY(reducer_init(&local, o, r));
  int rc = AX_OK, window = r->window > 0 ? r->window : 1;
  *sumsq = 0;
  for (int c = 0; c < window && rc == AX_OK; c++) rc = start_chunk_traced(rd, c);
  int interleaved = then == update_chunk;
  for (int c = 0; c < o->n_chunks && rc == AX_OK; c++) {
    rc = finish_chunk(rd, c);
    if (rc == AX_OK) rc = start_chunk_traced(rd, c + window);
    if (rc != AX_OK) break;
    if (!then) continue;
    size_t lo, hi;
    ax_offload_chunk_range(o, c, &lo, &hi);
    if (interleaved) *sumsq += chunk_sumsq(o, r, lo, hi);
    rc = then(o, rd, c, device_params, h, r->trace);
  }
  if (!r->early) reducer_free(&local); /* an early sum's owner closes it */
  /* otherwise: one pass over the whole range, so the norm (and the clipping it decides) does
   * not depend on the chunking; none where the host may not read the gradients */
  if (rc == AX_OK && !interleaved) *sumsq = o->grads_on_device ? 0 : chunk_sumsq(o, r, 0, o->n);
  return rc;
}

int ax_offload_reduce(AxOffload *o, const AxReduceSpec *r, double *sumsq) {
  return run_chunks(o, r, sumsq, NULL, NULL, NULL);
}

/* The summed chunk c of the host gradients back into the device's (a run_chunks `then`). */
static int upload_chunk(AxOffload *o, Reducer *rd, int c, void *device_grads,
                        const AxAdamWHyper *h, AxTrace *trace) {
  (void)rd, (void)h, (void)trace;
  size_t lo, hi;
  ax_offload_chunk_range(o, c, &lo, &hi);
  return ax_offload_upload_grads(o, device_grads, lo, hi);
}

int ax_offload_reduce_upload(AxOffload *o, const AxReduceSpec *r, void *device_grads,
                             double *sumsq) {
  AX_TRY(run_chunks(o, r, sumsq, upload_chunk, device_grads, NULL));
  return o->be->ops->sync(o->be, AX_STREAM_COPY);
}

int ax_offload_reduce_update(AxOffload *o, const AxReduceSpec *r, void *device_params,
                             const AxAdamWHyper *h, double *sumsq) {
  int threaded = r->progress == AX_PROGRESS_THREAD && r->comm != MPI_COMM_NULL;
  if (threaded) {
    int size = 1;
    MPI_Comm_size(r->comm, &size);
    threaded = size > 1;
  }
  if (threaded)
    AX_TRY(run_chunks_threaded(o, r, sumsq, device_params, h));
  else
    AX_TRY(run_chunks(o, r, sumsq, update_chunk, device_params, h));
  return o->be->ops->sync(o->be, AX_STREAM_COPY);
}

int ax_offload_update_all(AxOffload *o, void *device_params, const AxAdamWHyper *h,
                          AxTrace *trace) {
  for (int c = 0; c < o->n_chunks; c++) AX_TRY(update_chunk(o, NULL, c, device_params, h, trace));
  return o->be->ops->sync(o->be, AX_STREAM_COPY);
}

/* ------------------------------------------------------------------ the early sum */

/* Chunk c's pieces into rd->pieces (NULL: counts them): its compressed or two-level parts
 * whole, its other ranges cut at cuts[n_cuts] (ascending). Returns how many. */
static int cut_chunk(const Reducer *rd, int c, const size_t *cuts, int n_cuts, Piece *out) {
  const AxGradCompress *gc = rd->r->compress;
  size_t lo, hi;
  ax_offload_chunk_range(rd->o, c, &lo, &hi);
  int n = 0, p = gc ? gc->first[c] : 0, end = gc ? gc->first[c + 1] : 0;
  size_t at = lo;
  while (at < hi) {
    if (p < end && ax_grad_compress_part_uses(gc, p)) {
      if (out) out[n] = (Piece){gc->parts[p].lo, gc->parts[p].hi, p};
      n++, at = gc->parts[p++].hi;
      continue;
    }
    size_t stop = hi; /* the plain run: up to the next part with an operation of its own */
    while (p < end && !ax_grad_compress_part_uses(gc, p)) p++;
    if (p < end) stop = gc->parts[p].lo;
    while (at < stop) {
      size_t next = stop;
      for (int j = 0; j < n_cuts; j++)
        if (cuts[j] > at && cuts[j] < next) next = cuts[j];
      if (out) out[n] = (Piece){at, next, -1};
      n++, at = next;
    }
  }
  return n;
}

static int early_pieces(Reducer *rd, const size_t *cuts, int n_cuts) {
  int chunks = rd->o->n_chunks;
  rd->pfirst = ax_calloc((size_t)chunks + 1, sizeof *rd->pfirst);
  if (!rd->pfirst) return AX_ERR;
  for (int c = 0; c < chunks; c++)
    rd->pfirst[c + 1] = rd->pfirst[c] + cut_chunk(rd, c, cuts, n_cuts, NULL);
  rd->n_pieces = rd->pfirst[chunks];
  rd->pieces = ax_calloc((size_t)rd->n_pieces + 1, sizeof *rd->pieces);
  rd->started = ax_calloc((size_t)rd->n_pieces + 1, 1);
  rd->ops = ax_calloc(2 * (size_t)rd->n_pieces + 1, sizeof *rd->ops);
  if (!rd->pieces || !rd->started || !rd->ops) return AX_ERR;
  for (int c = 0; c < chunks; c++) cut_chunk(rd, c, cuts, n_cuts, rd->pieces + rd->pfirst[c]);
  return AX_OK;
}

int ax_early_sum_open(AxEarlySum **out, AxOffload *o, const AxReduceSpec *r, const size_t *cuts,
                      int n_cuts) {
  *out = NULL;
  if (r->progress == AX_PROGRESS_THREAD || o->wire || !o->grads_alias)
    return AX_FAIL("internal: an early sum needs progress calls and the fp32 gradients summed "
                   "where the backward writes them");
  AxEarlySum *e = ax_calloc(1, sizeof *e);
  if (!e) return AX_ERR;
  int size = 1;
  if (r->comm != MPI_COMM_NULL) MPI_Comm_size(r->comm, &size);
  e->rd = (Reducer){.o = o, .r = r, .active = size > 1};
  int rc = e->rd.active ? early_pieces(&e->rd, cuts, n_cuts) : AX_OK;
  if (rc != AX_OK) {
    ax_early_sum_close(e);
    return rc;
  }
  *out = e;
  return AX_OK;
}

int ax_early_sum_start(AxEarlySum *e, int (*ready)(void *ctx, size_t lo, size_t hi), void *ctx) {
  Reducer *rd = &e->rd;
  if (!rd->active) return AX_OK;
  for (int k = 0; k < rd->n_pieces; k++)
    if (!rd->started[k] && ready(ctx, rd->pieces[k].lo, rd->pieces[k].hi))
      AX_TRY(start_piece(rd, k));
  for (int k = 0; k < 2 * rd->n_pieces; k++) { /* one progress call on everything in flight */
    int done;
    if (rd->ops[k]) AX_TRY(ax_coll_test(rd->ops[k], &done));
  }
  return AX_OK;
}

void ax_early_sum_counts(const AxEarlySum *e, int *started, int *pieces) {
  *started = e ? e->rd.n_started : 0;
  *pieces = e ? e->rd.n_pieces : 0;
}

void ax_early_sum_close(AxEarlySum *e) {
  if (!e) return;
  reducer_free(&e->rd);
  free(e);
}
