/* sparse_sync.c — Zen's balanced sparse synchronization (thesis §3.3: push to h_0's owners,
 * owners sum, pull back as a hash bitmap plus values) and the all-gather baseline, over the
 * link layer; the wire format, summation order and byte formulas are in sparse_sync.h. */
#include "sparse_sync.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/coll/coll_internal.h"
#include "mpi/compress/zen_balance.h"
#include "mpi/coll/reduce_local.h"
#include "mpi/link/link_emulator.h"
#include "mpi/mpi_util.h"
#include "mpi/world_rank.h"

struct AxSparseSync {
  MPI_Comm comm;
  int size, rank;
  uint32_t rows;
  size_t cols;
  AxZenHash hash;
  AxZenLayout layout;
  AxZenOwners owners;
};

/* ------------------------------------------------------------------ life */

/* Every rank has the same rows and cols (one all-reduce of them and their negations). */
static int agree_shape(MPI_Comm comm, uint32_t rows, size_t cols) {
  long long v[4] = {rows, (long long)cols, -(long long)rows, -(long long)cols}, m[4];
  AX_MPI(MPI_Allreduce(v, m, 4, MPI_LONG_LONG, MPI_MAX, comm));
  if (m[0] != -m[2] || m[1] != -m[3])
    return AX_FAIL("sparse sync: the ranks' tables differ (%lld to %lld rows, %lld to %lld "
                   "columns)", -m[2], m[0], -m[3], m[1]);
  if (cols == 0 || cols > (size_t)INT_MAX / 4)
    return AX_FAIL("sparse sync: %zu columns (1 to %d)", cols, INT_MAX / 4);
  return AX_OK;
}

int ax_sparse_sync_create(AxSparseSync **out, MPI_Comm comm, uint32_t rows, size_t cols,
                          uint64_t seed) {
  *out = NULL;
  AX_TRY(agree_shape(comm, rows, cols));
  AX_MPI(MPI_Bcast(&seed, 1, MPI_UINT64_T, 0, comm)); /* one hash family on every rank */
  AxSparseSync *s = ax_calloc(1, sizeof *s);
  if (!s) return AX_ERR;
  s->comm = comm;
  s->rows = rows;
  s->cols = cols;
  MPI_Comm_size(comm, &s->size);
  MPI_Comm_rank(comm, &s->rank);
  ax_zen_hash_init(&s->hash, seed);
  if (ax_zen_layout_init(&s->layout, &s->hash, s->size, rows) != AX_OK) {
    free(s);
    return AX_ERR;
  }
  *out = s;
  return AX_OK;
}

void ax_sparse_sync_free(AxSparseSync *s) {
  if (!s) return;
  ax_zen_layout_free(&s->layout);
  free(s);
}

void ax_sparse_sync_set_owners(AxSparseSync *s, AxZenOwners owners) { s->owners = owners; }

const char *ax_zen_owners_name(AxZenOwners o) {
  return o == AX_ZEN_OWNERS_BALANCED ? "balanced" : o == AX_ZEN_OWNERS_HASH ? "hash" : "?";
}

const AxZenHash *ax_sparse_sync_hash(const AxSparseSync *s) { return &s->hash; }
const AxZenLayout *ax_sparse_sync_layout(const AxSparseSync *s) { return &s->layout; }

/* ------------------------------------------------------------------ one call's messages */

enum { TAG_COUNT, TAG_PUSH, TAG_BITS, TAG_VALUES, N_TAGS };

typedef struct {
  AxSparseSync *s;
  AxCommConfig cc;
  const int *world;
  int tag[N_TAGS];
  AxSparseSyncStats *st;
  AxLinkSend *sends; /* [4 N]: every send of the call, completed at its end */
  int n_sends;
  MPI_Request *reqs; /* [2 N]: receives (Zen: pushes then values [0, N), bitmaps [N, 2N)) */
} Ex;

static int ex_open(Ex *e, AxSparseSync *s, const AxCommConfig *cc, AxSparseSyncStats *st) {
  int n = s->size;
  memset(e, 0, sizeof *e);
  memset(st, 0, sizeof *st);
  e->s = s;
  e->cc = ax_comm_config_resolve(cc);
  e->st = st;
  AX_TRY(ax_mpi_world_ranks(s->comm, &e->world));
  for (int t = 0; t < N_TAGS; t++) AX_TRY(ax_coll_next_tag(s->comm, &e->tag[t]));
  e->sends = ax_malloc(4 * (size_t)n * sizeof *e->sends);
  e->reqs = ax_malloc(2 * (size_t)n * sizeof *e->reqs);
  if (!e->sends || !e->reqs) return AX_ERR;
  for (int i = 0; i < 2 * n; i++) e->reqs[i] = MPI_REQUEST_NULL;
  return AX_OK;
}

/* After a failure: receives cancelled, sends released to complete on their own (held ones
 * never posted), as ax_coll_free does. */
static void ex_close(Ex *e, int failed) {
  for (int i = 0; failed && e->reqs && i < 2 * e->s->size; i++) {
    if (e->reqs[i] == MPI_REQUEST_NULL) continue;
    MPI_Cancel(&e->reqs[i]);
    MPI_Wait(&e->reqs[i], MPI_STATUS_IGNORE);
  }
  for (int i = 0; failed && i < e->n_sends; i++) ax_link_drop(&e->cc, &e->sends[i]);
  free(e->sends);
  free(e->reqs);
  e->sends = NULL;
  e->reqs = NULL;
}

/* count elements of esz bytes to dest (nothing when count is 0), added to *kind. */
static int ex_send(Ex *e, const void *buf, size_t count, MPI_Datatype type, size_t esz,
                   int dest, int tag, unsigned long long *kind) {
  if (count == 0) return AX_OK;
  if (count > (size_t)INT_MAX)
    return AX_FAIL("sparse sync: a message of %zu elements to rank %d is too large", count, dest);
  AxLinkMsg m = {.buf = buf, .count = (int)count, .type = type, .bytes = count * esz,
                 .dest = dest, .dest_world = e->world[dest], .tag = tag, .comm = e->s->comm,
                 .cls = e->cc.traffic_class};
  e->sends[e->n_sends] = AX_LINK_SEND_NULL;
  AX_TRY(ax_link_isend(&e->cc, &m, &e->sends[e->n_sends++]));
  *kind += m.bytes;
  e->st->sent += m.bytes;
  return AX_OK;
}

static int ex_recv(Ex *e, void *buf, size_t count, MPI_Datatype type, size_t esz, int src,
                   int tag, MPI_Request *req) {
  if (count == 0) return AX_OK;
  if (count > (size_t)INT_MAX)
    return AX_FAIL("sparse sync: a message of %zu elements from rank %d is too large", count,
                   src);
  AX_MPI(MPI_Irecv(buf, (int)count, type, src, tag, e->s->comm, req));
  e->st->received += count * esz;
  return AX_OK;
}

/* Until every receive in reqs[0..n) is done (this rank's held sends going out meanwhile). */
static int ex_wait_recvs(Ex *e, MPI_Request *reqs, int n) {
  for (;;) {
    int index;
    AX_TRY(ax_link_waitany(&e->cc, n, reqs, &index, MPI_STATUS_IGNORE));
    if (index == MPI_UNDEFINED) return AX_OK;
  }
}

static int ex_wait_sends(Ex *e) {
  for (int i = 0; i < e->n_sends; i++) AX_TRY(ax_link_wait(&e->cc, &e->sends[i]));
  return AX_OK;
}

/* Each rank j gets out[j]; in[j] gets rank j's (in[me] = out[me]). */
static int ex_counts(Ex *e, const uint32_t *out, uint32_t *in) {
  int n = e->s->size, me = e->s->rank;
  for (int j = 0; j < n; j++)
    if (j != me) AX_TRY(ex_recv(e, &in[j], 1, MPI_UINT32_T, 4, j, e->tag[TAG_COUNT], &e->reqs[j]));
  for (int j = 0; j < n; j++)
    if (j != me)
      AX_TRY(ex_send(e, &out[j], 1, MPI_UINT32_T, 4, j, e->tag[TAG_COUNT], &e->st->count_bytes));
  in[me] = out[me];
  return ex_wait_recvs(e, e->reqs, n);
}

/* ------------------------------------------------------------------ rows (COO) */

/* Bytes of c rows in the push format: c uint32 indices, then c x cols floats. */
static size_t coo_bytes(const AxSparseSync *s, size_t c) { return c * (4 + 4 * s->cols); }

/* Ascending, unique, < rows, and (owner >= 0) owned by rank `owner` in l. */
static int check_rows(const AxSparseSync *s, const AxZenLayout *l, const uint32_t *idx,
                      size_t n, int owner, const char *what) {
  for (size_t j = 0; j < n; j++)
    if (idx[j] >= s->rows || (j && idx[j] <= idx[j - 1]) ||
        (owner >= 0 && (int)l->owner[idx[j]] != owner))
      return AX_FAIL("sparse sync: %s: row %u (entry %zu) is out of range (%u rows), out of "
                     "order, repeated%s", what, idx[j], j, s->rows,
                     owner >= 0 ? " or not the owner's" : "");
  return AX_OK;
}

/* Where row idx's values are: the given values (idx is in in->idx), or the table. */
static const float *row_of(const AxSparseSync *s, const AxSparseRows *in, const float *table,
                           uint32_t idx) {
  if (!in->values) return table + (size_t)idx * s->cols;
  size_t lo = 0, hi = in->n; /* in->idx is ascending */
  while (hi - lo > 1) {
    size_t mid = lo + (hi - lo) / 2;
    if (in->idx[mid] <= idx) lo = mid; else hi = mid;
  }
  return in->values + lo * s->cols;
}

/* c rows (indices idx) in the push format at dst. */
static void pack_rows(const AxSparseSync *s, const AxSparseRows *in, const float *table,
                      const uint32_t *idx, size_t c, char *dst) {
  size_t row_bytes = 4 * s->cols;
  memcpy(dst, idx, 4 * c);
  char *vals = dst + 4 * c;
  for (size_t j = 0; j < c; j++)
    memcpy(vals + j * row_bytes, row_of(s, in, table, idx[j]), row_bytes);
}

/* The c rows of a push message. */
static const uint32_t *coo_idx(const void *msg) { return msg; }
static const float *coo_vals(const void *msg, size_t c) {
  return (const float *)((const char *)msg + 4 * c);
}

/* ------------------------------------------------------------------ Zen */

typedef struct {
  Ex e;
  const AxZenLayout *l; /* the owners: s->layout (h_0), or this step's balanced ones */
  AxZenLayout step;   /* balanced owners: this step's */
  uint8_t *held;      /* balanced owners: [N][ceil(rows / 8)], every rank's rows as bits */
  AxZenParts parts;   /* this rank's rows by owner (Algorithm 3.2, or cut by balanced owners) */
  uint32_t *cnt_out, *cnt_in; /* [N]: rows to / from each rank */
  char *push_out;     /* this rank's pushes, owner by owner */
  char **push_in;     /* [N]: the pushes received (push_in[me] points into push_out) */
  uint32_t *slot;     /* [|II_me|]: a row's place in U_me, UINT32_MAX when absent */
  uint32_t *uni;      /* U_me ascending */
  size_t u;
  float *sum;         /* u x cols */
  uint8_t *bits;      /* U_me's hash bitmap */
  uint8_t **bits_in;  /* [N]: the owners' bitmaps */
  uint32_t **rows_in; /* [N]: owner j's rows, decoded from its bitmap */
  size_t *n_in;       /* [N]: how many */
  float **vals_in;    /* [N]: owner j's sums, received contiguous, then copied to the rows */
  const AxZenBetween *between; /* NULL, or what runs between the sums and the pull */
  uint32_t *written;  /* NULL, or [rows]: every row the call wrote, ascending (ax_sparse_zen_run) */
  size_t *n_written;
} Zen;

static int zen_alloc(Zen *z) {
  const AxSparseSync *s = z->e.s;
  size_t n = (size_t)s->size;
  z->cnt_out = ax_calloc(n, sizeof *z->cnt_out);
  z->cnt_in = ax_calloc(n, sizeof *z->cnt_in);
  z->push_in = ax_calloc(n, sizeof *z->push_in);
  z->bits_in = ax_calloc(n, sizeof *z->bits_in);
  z->rows_in = ax_calloc(n, sizeof *z->rows_in);
  z->n_in = ax_calloc(n, sizeof *z->n_in);
  z->vals_in = ax_calloc(n, sizeof *z->vals_in);
  if (!z->cnt_out || !z->cnt_in || !z->push_in || !z->bits_in || !z->rows_in || !z->n_in ||
      !z->vals_in)
    return AX_ERR;
  for (int j = 0; j < s->size; j++)
    if (!(z->bits_in[j] = ax_malloc(ax_zen_bitmap_bytes(z->l, j) + 1))) return AX_ERR;
  return AX_OK;
}

static void zen_free(Zen *z) {
  int n = z->e.s->size;
  for (int j = 0; z->push_in && j < n; j++)
    if (j != z->e.s->rank) free(z->push_in[j]);
  for (int j = 0; z->bits_in && j < n; j++) free(z->bits_in[j]);
  for (int j = 0; z->rows_in && j < n; j++) free(z->rows_in[j]), free(z->vals_in[j]);
  free(z->push_in);
  free(z->bits_in);
  free(z->rows_in);
  free(z->n_in);
  free(z->vals_in);
  free(z->cnt_out);
  free(z->cnt_in);
  free(z->push_out);
  free(z->slot);
  free(z->uni);
  free(z->sum);
  free(z->bits);
  free(z->held);
  ax_zen_layout_free(&z->step);
  ax_zen_parts_free(&z->parts);
}

/* The push loads of z->parts. */
static void zen_loads(Zen *z) {
  const AxSparseSync *s = z->e.s;
  for (int j = 0; j < s->size; j++) {
    size_t c = z->parts.off[j + 1] - z->parts.off[j];
    z->cnt_out[j] = (uint32_t)c;
    if (c > z->e.st->push_max) z->e.st->push_max = c;
  }
}

/* Algorithm 3.2 on this rank's rows; the push loads. */
static int zen_partition(Zen *z, const AxSparseRows *in) {
  const AxSparseSync *s = z->e.s;
  AX_TRY(ax_zen_partition(&s->hash, s->size, in->idx, in->n, NULL, &z->parts));
  zen_loads(z);
  z->e.st->serial = z->parts.serial;
  z->e.st->rehashed = z->parts.rehashed;
  return AX_OK;
}

/* Packs every push (this rank's own included), posts the push and bitmap receives, sends. */
static int zen_push(Zen *z, const AxSparseRows *in, const float *table) {
  Ex *e = &z->e;
  const AxSparseSync *s = e->s;
  int n = s->size, me = s->rank;
  z->push_out = ax_malloc(coo_bytes(s, in->n) + 1);
  if (!z->push_out) return AX_ERR;
  size_t at = 0;
  for (int j = 0; j < n; j++) {
    size_t c = z->cnt_out[j];
    pack_rows(s, in, table, z->parts.idx + z->parts.off[j], c, z->push_out + at);
    if (j == me) z->push_in[me] = z->push_out + at;
    else AX_TRY(ex_send(e, z->push_out + at, coo_bytes(s, c), MPI_BYTE, 1, j, e->tag[TAG_PUSH],
                        &e->st->push_bytes));
    at += coo_bytes(s, c);
  }
  for (int j = 0; j < n; j++) {
    if (j == me) continue;
    if (z->cnt_in[j] && !(z->push_in[j] = ax_malloc(coo_bytes(s, z->cnt_in[j])))) return AX_ERR;
    AX_TRY(ex_recv(e, z->push_in[j], coo_bytes(s, z->cnt_in[j]), MPI_BYTE, 1, j,
                   e->tag[TAG_PUSH], &e->reqs[j]));
    AX_TRY(ex_recv(e, z->bits_in[j], ax_zen_bitmap_bytes(z->l, j), MPI_BYTE, 1, j,
                   e->tag[TAG_BITS], &e->reqs[n + j]));
  }
  return AX_OK;
}

/* U_me: every pushed row (checked to be this rank's), ascending; slot[] places each. */
static int zen_union(Zen *z) {
  const AxSparseSync *s = z->e.s;
  const AxZenLayout *l = z->l;
  int me = s->rank;
  size_t own = ax_zen_owned(l, me);
  z->slot = ax_malloc((own ? own : 1) * sizeof *z->slot);
  z->uni = ax_malloc((own ? own : 1) * sizeof *z->uni);
  if (!z->slot || !z->uni) return AX_ERR;
  memset(z->slot, 0xff, own * sizeof *z->slot);
  for (int j = 0; j < s->size; j++) {
    if (!z->cnt_in[j]) continue; /* nothing came (push_in[j] is NULL) */
    const uint32_t *idx = coo_idx(z->push_in[j]);
    AX_TRY(check_rows(s, l, idx, z->cnt_in[j], me, "a push"));
    for (size_t q = 0; q < z->cnt_in[j]; q++) z->slot[l->pos[idx[q]]] = 0;
  }
  z->u = 0;
  for (size_t p = 0; p < own; p++)
    if (z->slot[p] != UINT32_MAX) {
      z->slot[p] = (uint32_t)z->u;
      z->uni[z->u++] = l->members[l->off[me] + p];
    }
  z->e.st->owned = z->u;
  return AX_OK;
}

/* The owner's sum: each row of U_me from +0, adding the ranks' rows in rank order 0..N-1;
 * then U_me's hash bitmap (Algorithm 3.3). */
static int zen_sum(Zen *z) {
  const AxSparseSync *s = z->e.s;
  const AxZenLayout *l = z->l;
  size_t cols = s->cols;
  AX_TRY(zen_union(z));
  /* the step between (zen_between) may pull out any row this rank owns */
  size_t room = z->between ? ax_zen_owned(l, s->rank) : z->u;
  z->sum = ax_calloc(room ? room * cols : 1, sizeof *z->sum);
  z->bits = ax_malloc(ax_zen_bitmap_bytes(l, s->rank) + 1);
  if (!z->sum || !z->bits) return AX_ERR;
  for (int j = 0; j < s->size; j++) {
    if (!z->cnt_in[j]) continue;
    const uint32_t *idx = coo_idx(z->push_in[j]);
    const float *vals = coo_vals(z->push_in[j], z->cnt_in[j]);
    for (size_t q = 0; q < z->cnt_in[j]; q++)
      ax_reduce_add_f32(z->sum + (size_t)z->slot[l->pos[idx[q]]] * cols, vals + q * cols, cols);
  }
  return AX_OK;
}

/* The step between the sums and the pull (ax_sparse_zen_run), which may change what this rank
 * pulls out within its owner set; then that set's hash bitmap (Algorithm 3.3). */
static int zen_between(Zen *z) {
  const AxSparseSync *s = z->e.s;
  if (z->between) {
    AxZenOwnedRows o = {.rows = z->uni, .n = z->u, .sums = z->sum, .layout = z->l,
                        .rank = s->rank};
    AX_TRY(z->between->run(z->between->ctx, &o));
    if (o.n > ax_zen_owned(z->l, s->rank))
      return AX_FAIL("sparse sync: the step between the sums and the pull gave %zu rows, more "
                     "than this rank's %zu", o.n, ax_zen_owned(z->l, s->rank));
    z->u = o.n;
  }
  return ax_zen_bitmap_encode(z->l, s->rank, z->uni, z->u, z->bits);
}

/* The bitmap and the sums to every other rank; this rank's own rows into its table. */
static int zen_pull_send(Zen *z, float *table) {
  Ex *e = &z->e;
  const AxSparseSync *s = e->s;
  size_t cols = s->cols, bits = ax_zen_bitmap_bytes(z->l, s->rank);
  for (int j = 0; j < s->size; j++) {
    if (j == s->rank) continue;
    AX_TRY(ex_send(e, z->bits, bits, MPI_BYTE, 1, j, e->tag[TAG_BITS], &e->st->pull_bytes));
    AX_TRY(ex_send(e, z->sum, z->u * cols, MPI_FLOAT, 4, j, e->tag[TAG_VALUES],
                   &e->st->pull_bytes));
  }
  for (size_t q = 0; q < z->u; q++)
    memcpy(table + (size_t)z->uni[q] * cols, z->sum + q * cols, cols * sizeof *table);
  return AX_OK;
}

/* Owner j's bitmap has come: its rows decoded, its values received into one contiguous
 * buffer (a receive into the table's scattered rows through an indexed datatype measured
 * several times slower in MPICH). */
static int zen_post_values(Zen *z, int j) {
  Ex *e = &z->e;
  const AxSparseSync *s = e->s;
  size_t owned = ax_zen_owned(z->l, j);
  if (!(z->rows_in[j] = ax_malloc((owned ? owned : 1) * sizeof *z->rows_in[j]))) return AX_ERR;
  size_t c = z->n_in[j] = ax_zen_bitmap_decode(z->l, j, z->bits_in[j], z->rows_in[j]);
  if (c == 0) return AX_OK;
  if (!(z->vals_in[j] = ax_malloc(c * s->cols * sizeof *z->vals_in[j]))) return AX_ERR;
  return ex_recv(e, z->vals_in[j], c * s->cols, MPI_FLOAT, 4, j, e->tag[TAG_VALUES],
                 &e->reqs[j]);
}

/* Owner j's values have come: into the table's rows. */
static void zen_place_values(Zen *z, int j, float *table) {
  size_t cols = z->e.s->cols;
  for (size_t q = 0; q < z->n_in[j]; q++)
    memcpy(table + (size_t)z->rows_in[j][q] * cols, z->vals_in[j] + q * cols,
           cols * sizeof *table);
}

/* Bitmaps ([N, 2N)) and then values ([0, N)) from every owner, as they come. */
static int zen_pull_recv(Zen *z, float *table) {
  Ex *e = &z->e;
  int n = e->s->size;
  for (;;) {
    int index;
    AX_TRY(ax_link_waitany(&e->cc, 2 * n, e->reqs, &index, MPI_STATUS_IGNORE));
    if (index == MPI_UNDEFINED) return AX_OK;
    if (index >= n) AX_TRY(zen_post_values(z, index - n));
    else zen_place_values(z, index, table);
  }
}

/* ------------------------------------------------------------------ balanced owners */

static size_t held_stride(const AxSparseSync *s) { return ((size_t)s->rows + 7) / 8; }

static int is_held(const Zen *z, int i, uint32_t v) {
  return (z->held[(size_t)i * held_stride(z->e.s) + v / 8] >> (v & 7)) & 1;
}

/* Every rank's rows as a bitmap to every other (the counts' place: TAG_COUNT, count_bytes). */
static int balance_exchange(Zen *z, const AxSparseRows *in) {
  Ex *e = &z->e;
  const AxSparseSync *s = e->s;
  int n = s->size, me = s->rank;
  size_t stride = held_stride(s);
  if (!(z->held = ax_calloc((size_t)n * stride + 1, 1))) return AX_ERR;
  uint8_t *mine = z->held + (size_t)me * stride;
  for (size_t q = 0; q < in->n; q++) mine[in->idx[q] / 8] |= (uint8_t)(1u << (in->idx[q] & 7));
  for (int j = 0; j < n; j++)
    if (j != me)
      AX_TRY(ex_recv(e, z->held + (size_t)j * stride, stride, MPI_BYTE, 1, j, e->tag[TAG_COUNT],
                     &e->reqs[j]));
  for (int j = 0; j < n; j++)
    if (j != me)
      AX_TRY(ex_send(e, mine, stride, MPI_BYTE, 1, j, e->tag[TAG_COUNT], &e->st->count_bytes));
  return ex_wait_recvs(e, e->reqs, n);
}

/* This step's owners (zen_balance.h; a row no rank holds keeps h_0's) as z->step. */
static int balance_layout(Zen *z) {
  const AxSparseSync *s = z->e.s;
  uint32_t *owner = ax_malloc((s->rows ? s->rows : 1) * sizeof *owner);
  if (!owner) return AX_ERR;
  int rc = ax_zen_balance(s->size, s->rows, z->held, owner);
  for (uint32_t v = 0; rc == AX_OK && v < s->rows; v++)
    if (owner[v] == AX_ZEN_UNOWNED) owner[v] = s->layout.owner[v];
  if (rc == AX_OK) rc = ax_zen_layout_init_owners(&z->step, s->size, s->rows, owner);
  free(owner);
  z->l = &z->step;
  return rc;
}

/* This rank's rows cut by the step's owners (each list ascending: in->idx is), and what each
 * rank pushes to this one, read from the bitmaps. */
static int balance_cut(Zen *z, const AxSparseRows *in) {
  const AxSparseSync *s = z->e.s;
  int n = s->size, me = s->rank;
  AxZenParts *p = &z->parts;
  p->n = n;
  p->idx = ax_malloc((in->n ? in->n : 1) * sizeof *p->idx);
  p->off = ax_calloc((size_t)n + 1, sizeof *p->off);
  size_t *fill = ax_calloc((size_t)n, sizeof *fill);
  int rc = p->idx && p->off && fill ? AX_OK : AX_ERR;
  for (size_t q = 0; rc == AX_OK && q < in->n; q++) p->off[z->l->owner[in->idx[q]] + 1]++;
  for (int j = 0; rc == AX_OK && j < n; j++) p->off[j + 1] += p->off[j];
  for (size_t q = 0; rc == AX_OK && q < in->n; q++) {
    uint32_t o = z->l->owner[in->idx[q]];
    p->idx[p->off[o] + fill[o]++] = in->idx[q];
  }
  free(fill);
  if (rc != AX_OK) return rc;
  zen_loads(z);
  const uint32_t *set = z->l->members + z->l->off[me];
  for (int j = 0; j < n; j++) {
    uint32_t c = 0;
    for (size_t q = 0; q < ax_zen_owned(z->l, me); q++) c += (uint32_t)is_held(z, j, set[q]);
    z->cnt_in[j] = c;
  }
  return AX_OK;
}

/* The owners and the loads before the push: h_0 with Algorithm 3.2 and the counts, or the
 * balanced owners from everyone's bitmaps (which give the counts). */
static int zen_owners(Zen *z, const AxSparseRows *in) {
  if (z->e.s->owners != AX_ZEN_OWNERS_BALANCED) {
    z->l = &z->e.s->layout;
    AX_TRY(zen_alloc(z));
    AX_TRY(zen_partition(z, in));
    return ex_counts(&z->e, z->cnt_out, z->cnt_in);
  }
  AX_TRY(balance_exchange(z, in));
  AX_TRY(balance_layout(z));
  AX_TRY(zen_alloc(z));
  return balance_cut(z, in);
}

/* Every row the call wrote (this rank's sums and every owner's pulled rows), ascending. */
static int zen_written(Zen *z) {
  const AxSparseSync *s = z->e.s;
  uint8_t *mark = ax_calloc(s->rows ? s->rows : 1, 1);
  if (!mark) return AX_ERR;
  for (size_t q = 0; q < z->u; q++) mark[z->uni[q]] = 1;
  for (int j = 0; j < s->size; j++)
    for (size_t q = 0; j != s->rank && q < z->n_in[j]; q++) mark[z->rows_in[j][q]] = 1;
  size_t n = 0;
  for (uint32_t v = 0; v < s->rows; v++)
    if (mark[v]) z->written[n++] = v;
  *z->n_written = n;
  free(mark);
  return AX_OK;
}

static int zen_run(Zen *z, const AxSparseRows *in, float *table) {
  const AxSparseSync *s = z->e.s;
  AX_TRY(zen_owners(z, in));
  AX_TRY(zen_push(z, in, table));
  memset(table, 0, (size_t)s->rows * s->cols * sizeof *table); /* every row read is packed */
  AX_TRY(ex_wait_recvs(&z->e, z->e.reqs, s->size));
  AX_TRY(zen_sum(z));
  AX_TRY(zen_between(z));
  AX_TRY(zen_pull_send(z, table));
  AX_TRY(zen_pull_recv(z, table));
  AX_TRY(ex_wait_sends(&z->e));
  return z->written ? zen_written(z) : AX_OK;
}

int ax_sparse_zen_run(AxSparseSync *s, const AxCommConfig *cc, const AxSparseRows *in,
                      float *table, AxSparseSyncStats *st, const AxZenBetween *between,
                      uint32_t *written, size_t *n_written) {
  AxSparseSyncStats mine;
  Zen z;
  memset(&z, 0, sizeof z);
  z.between = between;
  z.written = written;
  z.n_written = n_written;
  AX_TRY(check_rows(s, NULL, in->idx, in->n, -1, "this rank's rows"));
  int rc = ex_open(&z.e, s, cc, st ? st : &mine);
  if (rc == AX_OK) rc = zen_run(&z, in, table);
  ex_close(&z.e, rc != AX_OK);
  zen_free(&z);
  return rc;
}

int ax_sparse_sync_zen(AxSparseSync *s, const AxCommConfig *cc, const AxSparseRows *in,
                       float *table, AxSparseSyncStats *st) {
  return ax_sparse_zen_run(s, cc, in, table, st, NULL, NULL, NULL);
}

int ax_sparse_sync_imbalance(MPI_Comm comm, const AxSparseSyncStats *st, size_t n, double *push,
                             double *pull) {
  int size;
  AX_MPI(MPI_Comm_size(comm, &size));
  double mine[2] = {n ? (double)size * (double)st->push_max / (double)n : 1.0,
                    (double)st->owned}, most[2];
  unsigned long long owned = st->owned, u;
  AX_MPI(MPI_Allreduce(mine, most, 2, MPI_DOUBLE, MPI_MAX, comm));
  AX_MPI(MPI_Allreduce(&owned, &u, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, comm));
  *push = most[0];
  *pull = u ? (double)size * most[1] / (double)u : 1.0;
  return AX_OK;
}

/* ------------------------------------------------------------------ all-gather */

typedef struct {
  Ex e;
  uint32_t *cnt_out, *cnt_in; /* [N] */
  char **rows_in;             /* [N]: every rank's rows (rows_in[me]: this rank's, packed) */
} Gather;

static void gather_free(Gather *g) {
  for (int j = 0; g->rows_in && j < g->e.s->size; j++) free(g->rows_in[j]);
  free(g->rows_in);
  free(g->cnt_out);
  free(g->cnt_in);
}

/* This rank's rows packed, sent to everyone; everyone's received. */
static int gather_exchange(Gather *g, const AxSparseRows *in, const float *table) {
  Ex *e = &g->e;
  const AxSparseSync *s = e->s;
  int n = s->size, me = s->rank;
  if (!(g->rows_in[me] = ax_malloc(coo_bytes(s, in->n) + 1))) return AX_ERR;
  pack_rows(s, in, table, in->idx, in->n, g->rows_in[me]);
  for (int j = 0; j < n; j++) {
    if (j == me) continue;
    if (g->cnt_in[j] && !(g->rows_in[j] = ax_malloc(coo_bytes(s, g->cnt_in[j])))) return AX_ERR;
    AX_TRY(ex_recv(e, g->rows_in[j], coo_bytes(s, g->cnt_in[j]), MPI_BYTE, 1, j,
                   e->tag[TAG_PUSH], &e->reqs[j]));
  }
  for (int j = 0; j < n; j++)
    if (j != me)
      AX_TRY(ex_send(e, g->rows_in[me], coo_bytes(s, in->n), MPI_BYTE, 1, j, e->tag[TAG_PUSH],
                     &e->st->push_bytes));
  return AX_OK;
}

/* The table from zero, each rank's rows added in rank order (as Zen's owners add them). */
static int gather_sum(Gather *g, float *table) {
  const AxSparseSync *s = g->e.s;
  memset(table, 0, (size_t)s->rows * s->cols * sizeof *table);
  for (int j = 0; j < s->size; j++) {
    size_t c = g->cnt_in[j];
    if (!c) continue; /* nothing came (rows_in[j] is NULL) */
    const uint32_t *idx = coo_idx(g->rows_in[j]);
    const float *vals = coo_vals(g->rows_in[j], c);
    AX_TRY(check_rows(s, NULL, idx, c, -1, "an all-gathered rank's rows"));
    for (size_t q = 0; q < c; q++)
      ax_reduce_add_f32(table + (size_t)idx[q] * s->cols, vals + q * s->cols, s->cols);
  }
  return AX_OK;
}

static int gather_run(Gather *g, const AxSparseRows *in, float *table) {
  Ex *e = &g->e;
  size_t n = (size_t)e->s->size;
  g->cnt_out = ax_malloc(n * sizeof *g->cnt_out);
  g->cnt_in = ax_calloc(n, sizeof *g->cnt_in);
  g->rows_in = ax_calloc(n, sizeof *g->rows_in);
  if (!g->cnt_out || !g->cnt_in || !g->rows_in) return AX_ERR;
  for (size_t j = 0; j < n; j++) g->cnt_out[j] = (uint32_t)in->n;
  AX_TRY(ex_counts(e, g->cnt_out, g->cnt_in));
  AX_TRY(gather_exchange(g, in, table));
  AX_TRY(ex_wait_recvs(e, e->reqs, e->s->size));
  AX_TRY(gather_sum(g, table));
  return ex_wait_sends(e);
}

int ax_sparse_sync_allgather(AxSparseSync *s, const AxCommConfig *cc, const AxSparseRows *in,
                             float *table, AxSparseSyncStats *st) {
  AxSparseSyncStats mine;
  Gather g;
  memset(&g, 0, sizeof g);
  AX_TRY(check_rows(s, NULL, in->idx, in->n, -1, "this rank's rows"));
  int rc = ex_open(&g.e, s, cc, st ? st : &mine);
  if (rc == AX_OK) rc = gather_run(&g, in, table);
  ex_close(&g.e, rc != AX_OK);
  gather_free(&g);
  return rc;
}

/* ------------------------------------------------------------------ choice */

static const char *const ALGO_NAMES[] = {"zen", "allgather", "dense"};

const char *ax_sparse_sync_algo_name(AxSparseSyncAlgo a) {
  return (unsigned)a <= AX_SPARSE_SYNC_DENSE ? ALGO_NAMES[a] : "?";
}

int ax_sparse_sync_algo_parse(const char *name, AxSparseSyncAlgo *out) {
  for (int a = AX_SPARSE_SYNC_ZEN; name && a <= AX_SPARSE_SYNC_DENSE; a++)
    if (!strcmp(name, ALGO_NAMES[a])) {
      *out = (AxSparseSyncAlgo)a;
      return AX_OK;
    }
  return AX_FAIL("unknown sparse synchronization '%s' (zen, allgather, dense)", name ? name : "");
}

int ax_sparse_sync(AxSparseSync *s, AxSparseSyncAlgo algo, AxAllreduceAlgo dense_algo,
                   const AxCommConfig *cc, const AxSparseRows *in, float *table,
                   AxSparseSyncStats *st) {
  if (algo == AX_SPARSE_SYNC_ZEN) return ax_sparse_sync_zen(s, cc, in, table, st);
  if (algo == AX_SPARSE_SYNC_ALLGATHER) return ax_sparse_sync_allgather(s, cc, in, table, st);
  if (in && in->values) return AX_FAIL("sparse sync: dense takes its input from the table");
  AxCommBytes b = {0, 0};
  AX_TRY(ax_allreduce(s->comm, cc, table, (size_t)s->rows * s->cols, AX_COMM_F32, dense_algo,
                      &b));
  if (st) {
    memset(st, 0, sizeof *st);
    st->sent = b.sent;
    st->received = b.received;
  }
  return AX_OK;
}
