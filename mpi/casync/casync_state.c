/* casync_state.c — AxCasyncState: the codec states of one range on this rank, laid out as the
 * operations cut it (segments of the comm, pieces of the chunk size), their checkpointing, and
 * the layout's arithmetic the algorithms use. No MPI. */
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

size_t ax_casync_seg_pieces(const AxCasyncState *st, int seg) {
  size_t n = ax_block_count(st->count, st->size, seg);
  return (n + st->piece - 1) / st->piece;
}

size_t ax_casync_piece_offset(const AxCasyncState *st, int seg, size_t k) {
  return ax_block_offset(st->count, st->size, seg) + k * st->piece;
}

size_t ax_casync_piece_len(const AxCasyncState *st, int seg, size_t k) {
  size_t n = ax_block_count(st->count, st->size, seg), off = k * st->piece;
  return n - off < st->piece ? n - off : st->piece;
}

AxCodecState *ax_casync_piece_state(const AxCasyncState *st, int seg, size_t k) {
  return st->states[st->seg_first[seg] + k];
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

static int check_piece_size(const AxCodec *c, size_t piece) {
  if (ax_codec_rounds(c) > 0 || ax_codec_max_bytes(c, piece) <= INT_MAX) return AX_OK;
  return AX_FAIL("casync: %zu floats encoded with %s may take %zu bytes, more than one message "
                 "holds (use smaller chunks)",
                 piece, ax_codec_spec(c), ax_codec_max_bytes(c, piece));
}

int ax_casync_state_new(const AxCodec *c, size_t count, int comm_size, const AxCommConfig *cc,
                        AxCasyncState **out) {
  *out = NULL;
  if (!c) return AX_FAIL("casync state: no codec");
  if (comm_size < 1) return AX_FAIL("casync state: comm size %d", comm_size);
  AxCasyncState *s = ax_calloc(1, sizeof *s);
  if (!s) return AX_ERR;
  s->codec = c;
  s->count = count;
  s->size = comm_size;
  s->piece = ax_casync_piece_floats(cc);
  s->linear = ax_codec_rounds(c) > 0;
  int rc = check_piece_size(c, s->piece);
  if (rc == AX_OK && comm_size > 1 && s->linear && count > 0) {
    s->states = ax_calloc(1, sizeof *s->states);
    rc = s->states ? ax_codec_state_new(c, count, &s->states[0]) : AX_ERR;
    s->n_states = s->states ? 1 : 0;
  } else if (rc == AX_OK && comm_size > 1 && !s->linear) {
    rc = new_piece_states(s);
  }
  if (rc != AX_OK) {
    ax_casync_state_free(s);
    return AX_ERR;
  }
  *out = s;
  return AX_OK;
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
                   "pieces of %zu)",
                   bytes, ax_casync_state_bytes(s), ax_codec_spec(s->codec), s->count, s->size,
                   s->piece);
  const char *at = buf;
  for (size_t i = 0; i < s->n_states; i++) {
    size_t n = one_state_bytes(s->states[i]);
    if (n) AX_TRY(ax_codec_state_load(s->states[i], at, n));
    at += n;
  }
  return AX_OK;
}
