/*
 * bigbuf.h - byte buffers of more than 2^31 elements for the large-count test programs
 * (coll_bigcount, p2p_bigmodes, p2p_largecount): a pattern every byte can be checked
 * against, and allocation that stops the job, saying so, when memory runs out.
 *
 *   big_pattern(i, salt)                  the byte expected at index i
 *   big_fill(b, n, from, salt)            b[k] = big_pattern(from + k, salt), k < n
 *   big_first_wrong(b, n, from, salt)     the first k with b[k] != big_pattern(from + k,
 *                                         salt), or -1
 *   big_room(n)                           n bytes, or a CHECK failure and MPI_Abort
 *
 * The pattern is not periodic in any power of two up to 2^34 (the multiplier and the salt
 * factor are odd primes, and the shift mixes neighbouring indices), so a misplaced piece
 * or a repeated chunk shows as a wrong byte. Header-only, like check.h.
 */
#ifndef ISTHMUS_TESTS_MPI_BIGBUF_H
#define ISTHMUS_TESTS_MPI_BIGBUF_H

#include "check.h"

static inline unsigned char big_pattern(MPI_Count i, int salt)
{
    return (unsigned char)((i * 131 + (MPI_Count)salt * 7919) >> 3);
}

static inline void big_fill(unsigned char *b, MPI_Count n, MPI_Count from, int salt)
{
    for (MPI_Count i = 0; i < n; i++)
        b[i] = big_pattern(from + i, salt);
}

static inline MPI_Count big_first_wrong(const unsigned char *b, MPI_Count n, MPI_Count from,
                                        int salt)
{
    for (MPI_Count i = 0; i < n; i++)
        if (b[i] != big_pattern(from + i, salt))
            return i;
    return -1;
}

static inline unsigned char *big_room(MPI_Count n)
{
    unsigned char *b = malloc((size_t)n);
    CHECK(b != NULL, "no memory for %lld bytes", (long long)n);
    if (!b)
        MPI_Abort(MPI_COMM_WORLD, 2);
    return b;
}

#endif
