/* prng.h: the link emulator's random numbers: xoshiro256** seeded through splitmix64.
 *
 * Every random decision of a link (loss, duplication, jitter) draws from that link's own
 * generator, seeded from the run's seed and the link's index, so a run is reproducible
 * and the models can be tested against theory with fixed seeds. Not for cryptography. */
#ifndef ISM_LE_PRNG_H
#define ISM_LE_PRNG_H

#include <stdint.h>

typedef struct {
    uint64_t s[4];
} ism_le_prng;

/* Seed from a 64-bit value; distinct seeds give independent-looking streams. */
void ism_le_prng_seed(ism_le_prng *g, uint64_t seed);

/* Next 64 random bits. */
uint64_t ism_le_prng_next(ism_le_prng *g);

/* Uniform double in [0, 1) with 53 random bits. */
double ism_le_prng_unit(ism_le_prng *g);

/* True with probability p (p <= 0: never, p >= 1: always). */
int ism_le_prng_chance(ism_le_prng *g, double p);

#endif
