/* prng.c: xoshiro256** (Blackman and Vigna, public domain algorithm) seeded by splitmix64;
 * see prng.h for why each link has its own generator. */
#include "prng.h"

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

void ism_le_prng_seed(ism_le_prng *g, uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < 4; i++)
        g->s[i] = splitmix64(&x);
}

uint64_t ism_le_prng_next(ism_le_prng *g)
{
    uint64_t *s = g->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double ism_le_prng_unit(ism_le_prng *g)
{
    return (double)(ism_le_prng_next(g) >> 11) * 0x1.0p-53;
}

int ism_le_prng_chance(ism_le_prng *g, double p)
{
    if (p <= 0.0)
        return 0;
    if (p >= 1.0)
        return 1;
    return ism_le_prng_unit(g) < p;
}
