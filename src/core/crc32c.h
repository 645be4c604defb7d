/* crc32c.h — CRC-32C (Castagnoli, reflected polynomial 0x82F63B78, iSCSI/ext4), the checksum
 * of TensorBoard's record framing (src/report/tfevents.h); byte at a time over one table, as
 * its inputs are a few hundred bytes. Not the CRC of axonn's own files (crc32.h). */
#ifndef AX_CRC32C_H
#define AX_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Start with crc = 0; feed buffers in order ("123456789" gives 0xE3069283). */
uint32_t ax_crc32c(uint32_t crc, const void *buf, size_t n);

#endif
