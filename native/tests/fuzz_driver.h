/* fuzz_driver.h: what the deterministic drivers of the fuzz targets (built with
 * -DISM_FUZZ_STANDALONE and run under CTest) share: a fixed-seed generator, so a failure
 * reproduces on every run and every machine; byte-level mutations of a seed; and a run
 * through an exactly-sized heap copy, so ASan flags any read past the input's end.
 * Header-only: each driver is one program. */
#ifndef ISM_TESTS_FUZZ_DRIVER_H
#define ISM_TESTS_FUZZ_DRIVER_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* xorshift64* */
static uint64_t ism_fuzz_rng_state = 0x9E3779B97F4A7C15ull;

static inline uint64_t ism_fuzz_rng(void)
{
    ism_fuzz_rng_state ^= ism_fuzz_rng_state >> 12;
    ism_fuzz_rng_state ^= ism_fuzz_rng_state << 25;
    ism_fuzz_rng_state ^= ism_fuzz_rng_state >> 27;
    return ism_fuzz_rng_state * 0x2545F4914F6CDD1Dull;
}

/* One mutation of buf[keep..n) (cap bytes of room): a flipped bit, a byte set, a cut, or
 * up to 8 random bytes appended. The new length (never below keep + 1). */
static inline size_t ism_fuzz_mutate(uint8_t *buf, size_t n, size_t cap, size_t keep)
{
    if (n <= keep)
        return n;
    uint64_t x = ism_fuzz_rng();
    size_t at = keep + (size_t)(ism_fuzz_rng() % (n - keep));
    switch (x % 4) {
    case 0: buf[at] ^= (uint8_t)(1u << (x >> 8) % 8); break;
    case 1: buf[at] = (uint8_t)(x >> 16); break;
    case 2: n = keep + 1 + (size_t)(ism_fuzz_rng() % (n - keep)); break;
    default:
        for (size_t i = 0, k = 1 + (x >> 8) % 8; i < k && n < cap; i++)
            buf[n++] = (uint8_t)ism_fuzz_rng();
    }
    return n;
}

static inline void ism_fuzz_run(const uint8_t *data, size_t size)
{
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy) {
        perror("fuzz driver: malloc");
        exit(2);
    }
    if (size)
        memcpy(copy, data, size);
    LLVMFuzzerTestOneInput(copy, size);
    free(copy);
}

#endif
