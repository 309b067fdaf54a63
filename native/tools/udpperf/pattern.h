/* pattern.h: the deterministic byte stream isthmus-udpperf sends and checks: byte i of
 * a transfer is byte i%8 of splitmix64(i/8 + seed), so the receiver can verify every
 * byte at any offset without a copy of the data, and a duplicated, lost, reordered or
 * corrupted byte shows up as a mismatch at a known offset. */
#ifndef ISM_UDPPERF_PATTERN_H
#define ISM_UDPPERF_PATTERN_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline uint64_t up_mix(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* Fill buf with bytes [off, off + n) of the stream. */
static inline void up_fill(uint8_t *buf, uint64_t off, size_t n, uint64_t seed)
{
    size_t i = 0;
    while (i < n && (off + i) % 8) {
        uint64_t w = up_mix((off + i) / 8 + seed);
        buf[i] = (uint8_t)(w >> (8 * ((off + i) % 8)));
        i++;
    }
    for (; i + 8 <= n; i += 8) {
        uint64_t w = up_mix((off + i) / 8 + seed);
        memcpy(buf + i, &w, 8); /* little-endian hosts; the checker uses the same call */
    }
    for (; i < n; i++) {
        uint64_t w = up_mix((off + i) / 8 + seed);
        buf[i] = (uint8_t)(w >> (8 * ((off + i) % 8)));
    }
}

/* Offset of the first byte in buf that differs from the stream, or -1. scratch holds n. */
static inline int64_t up_check(const uint8_t *buf, uint64_t off, size_t n, uint64_t seed,
                               uint8_t *scratch)
{
    up_fill(scratch, off, n, seed);
    if (memcmp(buf, scratch, n) == 0)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (buf[i] != scratch[i])
            return (int64_t)(off + i);
    return -1;
}

#endif
