/* units.h: the one grammar of sizes, rates, durations, fractions and counts that every
 * isthmus setting is written in, in the environment (knobs.c) and in collective choices
 * (coll/select.c). The Python CLI's parsers (python/isthmus/units.py) follow the same
 * grammar, and a test compares the two on a corpus (python/tests/test_units.py).
 *
 *   size      bytes: 65536, 64k, 64KiB, 64kB, 1.5m, 2g, 1t; every prefix is a power of
 *             1024 (as OSU and isthmus-bench count), in any case, optionally followed by
 *             i and/or B; the result must be a whole number of bytes
 *   rate      bits/s: 10e9, 100mbit, 1Gbit, 10mbps (bits), 125MB/s (bytes); k, m, g, t
 *             are powers of 1000 (as tc counts), ki, mi, gi, ti powers of 1024
 *   duration  a number in the setting's own unit, or with one: 250ms, 1.5s, 200us, 10ns
 *   fraction  0.001 or 0.1%
 *   count     a whole number, digits only
 *
 * No sign, no spaces, no hexadecimal; a number is digits with an optional fraction
 * (sizes, rates, durations, fractions) and exponent (rates, durations, fractions).
 */
#ifndef ISM_UNITS_H
#define ISM_UNITS_H

#include <stdint.h>

/* Each returns 0 and sets *out, or -1 if the text is not one (*out untouched). */
int ism_units_size(const char *s, int64_t *out);
int ism_units_rate(const char *s, double *bits_per_s);
/* in units of `unit_s` seconds: ("250ms", 1e-3) -> 250; a bare number is in that unit */
int ism_units_duration(const char *s, double unit_s, double *out);
int ism_units_fraction(const char *s, double *out);
int ism_units_count(const char *s, int64_t *out);

/* The grammar in a few words, for error messages. */
#define ISM_UNITS_SIZE_HELP "a size in bytes (e.g. 65536, 64k, 1m)"
#define ISM_UNITS_RATE_HELP "a rate in bits/s (e.g. 10e9, 100mbit, 1gbit, 125MB/s)"

/* A size as the shortest exact text: 65536 -> "64k", 1000 -> "1000". */
void ism_units_size_text(int64_t v, char *buf, unsigned long len);

#endif
