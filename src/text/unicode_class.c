/* unicode_class.c — strict UTF-8 decoding and code point classes; see unicode_class.h. */
#include "unicode_class.h"

static int continuation(uint8_t b) {
  return (b & 0xC0) == 0x80;
}

/* Length of the sequence that the lead byte announces (0: not a lead byte), and the smallest
 * code point that length may encode (shorter forms are overlong). */
static size_t sequence_length(uint8_t lead, uint32_t *min_cp, uint32_t *bits) {
  if (lead < 0x80) { *min_cp = 0; *bits = lead; return 1; }
  if ((lead & 0xE0) == 0xC0) { *min_cp = 0x80; *bits = lead & 0x1Fu; return 2; }
  if ((lead & 0xF0) == 0xE0) { *min_cp = 0x800; *bits = lead & 0x0Fu; return 3; }
  if ((lead & 0xF8) == 0xF0) { *min_cp = 0x10000; *bits = lead & 0x07u; return 4; }
  return 0;
}

size_t ax_utf8_decode(const uint8_t *s, size_t n, uint32_t *cp) {
  uint32_t min_cp, value;
  size_t len = sequence_length(s[0], &min_cp, &value);
  *cp = AX_UTF8_INVALID;
  if (len == 0 || len > n) return 1;
  for (size_t i = 1; i < len; i++) {
    if (!continuation(s[i])) return 1;
    value = value << 6 | (s[i] & 0x3Fu);
  }
  if (value < min_cp || value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF)) return 1;
  *cp = value;
  return len;
}

static int in_ranges(const AxCodeRange *r, size_t count, uint32_t cp) {
  size_t lo = 0, hi = count;
  while (lo < hi) { /* first range whose last >= cp */
    size_t mid = lo + (hi - lo) / 2;
    if (r[mid].last < cp)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < count && r[lo].first <= cp;
}

static AxUniClass ascii_class(uint32_t c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return AX_UNI_LETTER;
  if (c >= '0' && c <= '9') return AX_UNI_NUMBER;
  if (c == ' ' || (c >= 0x09 && c <= 0x0D)) return AX_UNI_SPACE;
  return AX_UNI_OTHER;
}

AxUniClass ax_unicode_class(uint32_t cp) {
  if (cp < 0x80) return ascii_class(cp);
  if (cp == AX_UTF8_INVALID) return AX_UNI_OTHER;
  if (in_ranges(AX_UNICODE_LETTERS, AX_UNICODE_LETTERS_COUNT, cp)) return AX_UNI_LETTER;
  if (in_ranges(AX_UNICODE_NUMBERS, AX_UNICODE_NUMBERS_COUNT, cp)) return AX_UNI_NUMBER;
  if (in_ranges(AX_UNICODE_SPACES, AX_UNICODE_SPACES_COUNT, cp)) return AX_UNI_SPACE;
  return AX_UNI_OTHER;
}
