/* byte_alphabet.c — GPT-2's byte-to-unicode alphabet; see byte_alphabet.h. The 68 shifted
 * bytes are three runs: 0x00..0x20 (U+0100..U+0120), 0x7F..0xA0 (U+0121..U+0142) and 0xAD
 * (U+0143). */
#include "byte_alphabet.h"

#include "unicode_class.h"

static int stands_for_itself(unsigned b) {
  return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

uint32_t ax_byte_to_unicode(uint8_t b) {
  if (stands_for_itself(b)) return b;
  if (b <= 0x20) return 0x100u + b;
  if (b <= 0xA0) return 0x121u + (b - 0x7Fu);
  return 0x143; /* 0xAD, the soft hyphen */
}

int ax_unicode_to_byte(uint32_t cp) {
  if (cp < 0x100) return stands_for_itself(cp) ? (int)cp : -1;
  if (cp <= 0x120) return (int)(cp - 0x100);
  if (cp <= 0x142) return (int)(0x7F + (cp - 0x121));
  return cp == 0x143 ? 0xAD : -1;
}

long ax_alphabet_to_bytes(const uint8_t *text, size_t n, uint8_t *out) {
  long count = 0;
  for (size_t i = 0; i < n;) {
    uint32_t cp;
    i += ax_utf8_decode(text + i, n - i, &cp);
    int b = cp == AX_UTF8_INVALID ? -1 : ax_unicode_to_byte(cp);
    if (b < 0) return -1;
    out[count++] = (uint8_t)b;
  }
  return count;
}
