/* pretok.c — GPT-2's pre-tokenizer, the regular expression written out by hand; see pretok.h.
 * The alternatives are tried in the expression's order at each piece's start. */
#include "pretok.h"

#include "unicode_class.h"

/* The class of the character at text[i] and its length in bytes. */
static AxUniClass class_at(const uint8_t *text, size_t n, size_t i, size_t *len) {
  uint32_t cp;
  *len = ax_utf8_decode(text + i, n - i, &cp);
  return ax_unicode_class(cp);
}

/* 's|'t|'re|'ve|'m|'ll|'d: the length of the contraction at text[pos], or 0. */
static size_t contraction(const uint8_t *text, size_t n, size_t pos) {
  if (text[pos] != '\'' || pos + 1 >= n) return 0;
  uint8_t a = text[pos + 1], b = pos + 2 < n ? text[pos + 2] : 0;
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  return 0;
}

/* The end of the run of characters of class `cls` that starts at text[i]. */
static size_t run_end(const uint8_t *text, size_t n, size_t i, AxUniClass cls) {
  size_t len;
  while (i < n && class_at(text, n, i, &len) == cls) i += len;
  return i;
}

/* \s+(?!\S)|\s+ at text[pos] (a whitespace character): the whole run when it ends the text
 * or is one character long, otherwise the run less its last character (which then starts the
 * next piece, e.g. as the space of " word"). */
static size_t whitespace_end(const uint8_t *text, size_t n, size_t pos) {
  size_t i = pos, last = pos, len;
  while (i < n && class_at(text, n, i, &len) == AX_UNI_SPACE) {
    last = i;
    i += len;
  }
  if (i == n || last == pos) return i;
  return last;
}

size_t ax_pretok_next(const uint8_t *text, size_t n, size_t pos) {
  size_t len, end = contraction(text, n, pos);
  if (end) return pos + end;
  AxUniClass cls = class_at(text, n, pos, &len);
  if (text[pos] == ' ' && pos + 1 < n) { /* " ?" before letters, numbers or other */
    size_t next_len;
    AxUniClass next = class_at(text, n, pos + 1, &next_len);
    if (next != AX_UNI_SPACE) return run_end(text, n, pos + 1 + next_len, next);
  }
  if (cls != AX_UNI_SPACE) return run_end(text, n, pos + len, cls);
  return whitespace_end(text, n, pos);
}
