/* crc32.h — CRC-32 (IEEE 802.3, the zlib/PNG polynomial 0xEDB88320), incremental. */
#ifndef AX_CRC32_H
#define AX_CRC32_H

#include <stddef.h>
#include <stdint.h>

/* Start with crc = 0; feed buffers in order. */
uint32_t ax_crc32(uint32_t crc, const void *buf, size_t n);

/* The CRC of A followed by B, from A's CRC, B's CRC and B's length: parts CRC'd apart (by
 * different threads or processes) put together. */
uint32_t ax_crc32_combine(uint32_t crc_a, uint32_t crc_b, unsigned long long len_b);

/* The ways to compute it, slowest first; ax_crc32 takes the fastest the CPU has. */
typedef enum {
  AX_CRC32_TABLES, /* slicing-by-8, everywhere */
  AX_CRC32_CLMUL,  /* x86-64 PCLMULQDQ folding */
  AX_CRC32_VCLMUL  /* x86-64 AVX-512 VPCLMULQDQ folding */
} AxCrc32Path;

/* The same CRC by the given path, or by the fastest this CPU has if it lacks that one (for
 * tests and benchmarks), and that fastest path. */
uint32_t ax_crc32_by(AxCrc32Path path, uint32_t crc, const void *buf, size_t n);
AxCrc32Path ax_crc32_best_path(void);

#endif
