/* crc32.h — CRC-32 (IEEE 802.3, the zlib/PNG polynomial 0xEDB88320), incremental. */
#ifndef AX_CRC32_H
#define AX_CRC32_H

#include <stddef.h>
#include <stdint.h>

/* Start with crc = 0; feed buffers in order. */
uint32_t ax_crc32(uint32_t crc, const void *buf, size_t n);

#endif
