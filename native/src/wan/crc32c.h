/* crc32c.h: CRC32C (Castagnoli), the checksum of the bytes that cross a link (link
 * headers, UDP datagrams, frames sent with a CRC). */
#ifndef ISM_WAN_CRC32C_H
#define ISM_WAN_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* CRC32C of a buffer, continuing from `crc` (start with 0), as zlib's crc32() chains. */
uint32_t ism_crc32c(uint32_t crc, const void *buf, size_t n);

#endif
