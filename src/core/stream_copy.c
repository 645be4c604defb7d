/* stream_copy.c — see stream_copy.h. */
#include "stream_copy.h"

#include <stdint.h>
#include <string.h>

#include "simd.h"

void ax_stream_copy(void *dst, const void *src, size_t n) {
  unsigned char *d = dst;
  const unsigned char *s = src;
#ifdef AX_SIMD_AVX2
  size_t head = (32 - ((uintptr_t)d & 31)) & 31; /* streaming stores want aligned lines */
  if (n < head + 64) {
    memcpy(d, s, n);
    return;
  }
  memcpy(d, s, head);
  d += head, s += head, n -= head;
  for (; n >= 32; d += 32, s += 32, n -= 32)
    _mm256_stream_si256((__m256i *)d, _mm256_loadu_si256((const __m256i *)s));
  _mm_sfence();
#endif
  memcpy(d, s, n);
}
