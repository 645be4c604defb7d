/* casync_state.c — AxCasyncState: the codec states of one range on this rank, laid out as the
 * operations cut it (segments of the comm, pieces of the chunk size; or K partitions: min(K, N)
 * segments, each holding its near-equal share of the K), their checkpointing, and the
 * layout's arithmetic the algorithms use. No MPI. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "casync_internal.h"

/* A piece's encoding goes out as one message of at most INT_MAX bytes. */
enum { MAX_PIECE_FLOATS = 1 << 28 };

size_t ax_casync_piece_floats(const AxCommConfig *cc) {
  AxCommConfig r = ax_comm_config_resolve(cc);
  size_t n = r.chunk_bytes / sizeof(float);
  if (n == 0) n = 1;
  return n > MAX_PIECE_FLOATS ? MAX_PIECE_FLOATS : n;
}

/* Segments holding values: min(K, comm size) with K partitions, every one without. */
static int used_segments(const AxCasyncState *st) {
  return st->parts > 0 && st->parts < st->size ? st->parts : st->size;
}

static size_t seg_count(const AxCasyncState *st, int seg) {
  int used = used_segments(st);
  return seg < used ? ax_block_count(st->count, used, seg) : 0;
}

static size_t seg_offset(const AxCasyncState *st, int seg) {
  int used = used_segments(st);
  return seg < used ? ax_block_offset(st->count, used, seg) : st->count;
}

size_t ax_casync_seg_pieces(const AxCasyncState *st, int seg) {
  size_t n = seg_count(st, seg);
  if (st->parts == 0) return (n + st->piece - 1) / st->piece;
  /* the segment's share of the K partitions, more where one would not fit a message, and no
   * empty one */
  size_t k = ax_block_count((size_t)st->parts, used_segments(st), seg);
  size_t fit = (n + MAX_PIECE_FLOATS - 1) / MAX_PIECE_FLOATS;
  if (k < fit) k = fit;
  return k < n ? k : n;
}

size_t ax_casync_piece_offset(const AxCasyncState *st, int seg, size_t k) {
  if (st->parts == 0) return seg_offset(st, seg) + k * st->piece;
  return seg_offset(st, seg) +
         ax_block_offset(seg_count(st, seg), (int)ax_casync_seg_pieces(st, seg), (int)k);
}

size_t ax_casync_piece_len(const AxCasyncState *st, int seg, size_t k) {
  size_t n = seg_count(st, seg);
  if (st->parts == 0) {
    size_t off = k * st->piece;
    return n - off < st->piece ? n - off : st->piece;
  }
  return ax_block_count(n, (int)ax_casync_seg_pieces(st, seg), (int)k);
}

AxCodecState *ax_casync_piece_state(const AxCasyncState *st, int seg, size_t k) {
  return st->states[st->seg_first[seg] + k];
}

size_t ax_casync_state_partitions(const AxCasyncState *s) { return s ? s->n_states : 0; }

void ax_casync_state_set_momentum(AxCasyncState *s, const float *m, float scale) {
  if (!s || !s->states || s->linear) return;
  for (int seg = 0; seg < s->size; seg++)
    for (size_t k = 0; k < ax_casync_seg_pieces(s, seg); k++)
      ax_codec_state_set_momentum(s->codec, ax_casync_piece_state(s, seg, k),
                                  m + ax_casync_piece_offset(s, seg, k), scale);
}

void ax_casync_state_rescale(AxCasyncState *s, float factor) {
  for (size_t i = 0; s && s->states && i < s->n_states; i++)
    ax_codec_state_rescale(s->states[i], factor);
}

/* Encode/decode codecs: a state per piece of every segment. */
static int new_piece_states(AxCasyncState *s) {
  s->seg_first = ax_calloc((size_t)s->size + 1, sizeof *s->seg_first);
  if (!s->seg_first) return AX_ERR;
  for (int seg = 0; seg < s->size; seg++)
    s->seg_first[seg + 1] = s->seg_first[seg] + ax_casync_seg_pieces(s, seg);
  s->n_states = s->seg_first[s->size];
  s->states = ax_calloc(s->n_states ? s->n_states : 1, sizeof *s->states);
  if (!s->states) return AX_ERR;
  for (int seg = 0; seg < s->size; seg++)
    for (size_t k = 0; k < ax_casync_seg_pieces(s, seg); k++)
      AX_TRY(ax_codec_state_new(s->codec, ax_casync_piece_len(s, seg, k),
                                &s->states[s->seg_first[seg] + k]));
  return AX_OK;
}

/* Every piece's encoding must fit one message. */
static int check_piece_size(const AxCasyncState *s) {
  if (s->linear) return AX_OK;
  size_t largest = 0;
  for (int seg = 0; seg < s->size; seg++)
    for (size_t k = 0; k < ax_casync_seg_pieces(s, seg); k++)
      if (ax_casync_piece_len(s, seg, k) > largest) largest = ax_casync_piece_len(s, seg, k);
  if (ax_codec_max_bytes(s->codec, largest) <= INT_MAX) return AX_OK;
  return AX_FAIL("casync: %zu floats encoded with %s may take %zu bytes, more than one message "
                 "holds (use smaller chunks or more partitions)",
                 largest, ax_codec_spec(s->codec), ax_codec_max_bytes(s->codec, largest));
}

static int state_new(const AxCodec *c, size_t count, int comm_size, int parts,
                     const AxCommConfig *cc, AxCasyncState **out) {
  *out = NULL;
  if (!c) return AX_FAIL("casync state: no codec");
  if (comm_size < 1) return AX_FAIL("casync state: comm size %d", comm_size);
  if (parts < 0) return AX_FAIL("casync state: %d partitions", parts);
  AxCasyncState *s = ax_calloc(1, sizeof *s);
  if (!s) return AX_ERR;
  s->codec = c;
  s->count = count;
  s->size = comm_size;
  s->parts = parts;
  s->piece = ax_casync_piece_floats(cc);
  s->linear = ax_codec_rounds(c) > 0;
  int rc = AX_OK;
  if (comm_size > 1 && s->linear && count > 0) {
    s->states = ax_calloc(1, sizeof *s->states);
    rc = s->states ? ax_codec_state_new(c, count, &s->states[0]) : AX_ERR;
    s->n_states = s->states ? 1 : 0;
  } else if (comm_size > 1 && !s->linear) {
    rc = check_piece_size(s);
    if (rc == AX_OK) rc = new_piece_states(s);
  }
  if (rc != AX_OK) {
    ax_casync_state_free(s);
    return AX_ERR;
  }
  *out = s;
  return AX_OK;
}

int ax_casync_state_new(const AxCodec *c, size_t count, int comm_size, const AxCommConfig *cc,
                        AxCasyncState **out) {
  return state_new(c, count, comm_size, 0, cc, out);
}

int ax_casync_state_new_parts(const AxCodec *c, size_t count, int comm_size, int parts,
                              AxCasyncState **out) {
  if (parts < 1) return AX_FAIL("casync state: %d partitions (at least 1)", parts);
  return state_new(c, count, comm_size, parts, NULL, out);
}

void ax_casync_state_free(AxCasyncState *s) {
  if (!s) return;
  for (size_t i = 0; s->states && i < s->n_states; i++) ax_codec_state_free(s->states[i]);
  free(s->states);
  free(s->seg_first);
  free(s);
}

static size_t one_state_bytes(const AxCodecState *s) {
  return s ? ax_codec_state_bytes(s) : 0;
}

size_t ax_casync_state_bytes(const AxCasyncState *s) {
  size_t total = 0;
  for (size_t i = 0; s && i < s->n_states; i++) total += one_state_bytes(s->states[i]);
  return total;
}

int ax_casync_state_save(const AxCasyncState *s, void *buf) {
  if (!s) return AX_FAIL("casync state save: no state");
  char *at = buf;
  for (size_t i = 0; i < s->n_states; i++) {
    size_t n = one_state_bytes(s->states[i]);
    if (n) AX_TRY(ax_codec_state_save(s->states[i], at));
    at += n;
  }
  return AX_OK;
}

int ax_casync_state_load(AxCasyncState *s, const void *buf, size_t bytes) {
  if (!s) return AX_FAIL("casync state load: no state");
  if (bytes != ax_casync_state_bytes(s))
    return AX_FAIL("casync state load: %zu bytes for a state of %zu (%s, %zu values on %d ranks, "
                   "%zu partition(s))",
                   bytes, ax_casync_state_bytes(s), ax_codec_spec(s->codec), s->count, s->size,
                   s->n_states);
  const char *at = buf;
  for (size_t i = 0; i < s->n_states; i++) {
    size_t n = one_state_bytes(s->states[i]);
    if (n) AX_TRY(ax_codec_state_load(s->states[i], at, n));
    at += n;
  }
  return AX_OK;
}
