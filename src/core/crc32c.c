/* crc32c.c — CRC-32C over one 256-entry table built once; see crc32c.h. */
#include "crc32c.h"

#include <pthread.h>

static uint32_t table[256];
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void init(void) {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = c & 1 ? 0x82F63B78u ^ (c >> 1) : c >> 1;
    table[i] = c;
  }
}

uint32_t ax_crc32c(uint32_t crc, const void *buf, size_t n) {
  pthread_once(&init_once, init);
  const unsigned char *p = buf;
  crc = ~crc;
  for (; n > 0; n--) crc = table[(crc ^ *p++) & 0xFF] ^ (crc >> 8);
  return ~crc;
}
