/* work.h: the fixed unit of work timed by FWQ and by MPI-Jitter's compute phase: a
 * dependent chain of integer multiply-adds that the compiler can neither remove nor
 * vectorise, so its length is set by iterations alone. */
#ifndef ISM_NOISE_WORK_H
#define ISM_NOISE_WORK_H

#include <stdint.h>

static inline uint64_t ism_noise_work(uint64_t iters)
{
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (uint64_t i = 0; i < iters; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        __asm__ __volatile__("" : "+r"(x));
    }
    return x;
}

#endif
