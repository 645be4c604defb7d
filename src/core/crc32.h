/* crc32.h — CRC-32 (IEEE 802.3, the zlib/PNG polynomial 0xEDB88320), incremental. */
#ifndef AX_CRC32_H
#define AX_CRC32_H

#include <stddef.h>
#include <stdint.h>

/* Start with crc = 0; feed buffers in order. */
uint32_t ax_crc32(uint32_t crc, const void *buf, size_t n);

/* The same CRC by tables alone (what ax_crc32 uses where the CPU lacks carry-less multiply),
 * and whether ax_crc32 uses carry-less multiplication on this CPU: for tests and benchmarks. */
uint32_t ax_crc32_portable(uint32_t crc, const void *buf, size_t n);
int ax_crc32_accelerated(void);

#endif
