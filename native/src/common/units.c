/* units.c: parsing sizes, rates, durations, fractions and counts (grammar in units.h).
 *
 * Numbers are scanned by hand first: strtod and strtoll alone accept leading spaces,
 * signs, "inf", "nan" and hexadecimal, each of which would let a typo through as a
 * value nobody meant.
 */
#include "units.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Length of the number at s: digits, optionally '.' digits, optionally (exp) e[+-]digits;
 * 0 if there is none. */
static size_t number_len(const char *s, int exp)
{
    size_t i = 0;
    while (isdigit((unsigned char)s[i]))
        i++;
    if (i == 0)
        return 0;
    if (s[i] == '.') {
        size_t j = i + 1;
        while (isdigit((unsigned char)s[j]))
            j++;
        if (j == i + 1)
            return 0;
        i = j;
    }
    if (exp && (s[i] == 'e' || s[i] == 'E')) {
        size_t j = i + 1;
        if (s[j] == '+' || s[j] == '-')
            j++;
        size_t k = j;
        while (isdigit((unsigned char)s[k]))
            k++;
        if (k == j)
            return 0;
        i = k;
    }
    return i;
}

/* The power of 1024 of a size prefix letter, or -1. */
static int binary_power(char c)
{
    switch (tolower((unsigned char)c)) {
    case 'k': return 1;
    case 'm': return 2;
    case 'g': return 3;
    case 't': return 4;
    default: return -1;
    }
}

static uint64_t gcd(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

int ism_units_size(const char *s, int64_t *out)
{
    size_t n = number_len(s, 0);
    if (n == 0 || n > 19)
        return -1;
    /* mantissa as digits without the point, and how many were after it */
    uint64_t mant = 0;
    int frac = 0, seen_point = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '.') {
            seen_point = 1;
            continue;
        }
        mant = mant * 10 + (uint64_t)(s[i] - '0');
        frac += seen_point;
    }
    const char *u = s + n;
    int power = 0;
    if (*u && binary_power(*u) >= 0) {
        power = binary_power(*u++);
        if (*u == 'i' || *u == 'I')
            u++;
    }
    if (*u == 'b' || *u == 'B')
        u++;
    if (*u)
        return -1;
    uint64_t mul = 1ull << (10 * power), div = 1;
    for (int i = 0; i < frac; i++)
        div *= 10;
    uint64_t g = gcd(mul, div);
    mul /= g;
    div /= g;
    if (mant % div) /* not a whole number of bytes: 1.3k */
        return -1;
    mant /= div;
    if (mant > (uint64_t)INT64_MAX / mul)
        return -1;
    *out = (int64_t)(mant * mul);
    return 0;
}

/* The multiplier of an SI (k, m, g, t) or binary (ki, mi, gi, ti) prefix at *u, advancing
 * past it; 1 without one. */
static double rate_prefix(const char **u)
{
    static const char letters[] = "kmgt";
    const char *p = strchr(letters, tolower((unsigned char)**u));
    if (!**u || !p)
        return 1;
    int k = (int)(p - letters) + 1;
    (*u)++;
    if (**u == 'i' || **u == 'I') {
        (*u)++;
        return ldexp(1.0, 10 * k);
    }
    return pow(1000.0, k);
}

static int ieq(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
            return 0;
    return *a == *b;
}

int ism_units_rate(const char *s, double *bits_per_s)
{
    size_t n = number_len(s, 1);
    if (n == 0)
        return -1;
    double v = strtod(s, NULL);
    const char *u = s + n;
    if (*u) {
        v *= rate_prefix(&u);
        if (!strcmp(u, "B/s"))
            v *= 8;
        else if (!ieq(u, "bit") && !ieq(u, "bps"))
            return -1;
    }
    if (!isfinite(v))
        return -1;
    *bits_per_s = v;
    return 0;
}

int ism_units_duration(const char *s, double unit_s, double *out)
{
    size_t n = number_len(s, 1);
    if (n == 0)
        return -1;
    double v = strtod(s, NULL);
    const char *u = s + n;
    static const struct { const char *name; double s; } units[] = {
        {"ns", 1e-9}, {"us", 1e-6}, {"ms", 1e-3}, {"s", 1},
    };
    if (*u) {
        size_t i = 0, nu = sizeof units / sizeof units[0];
        while (i < nu && strcmp(u, units[i].name))
            i++;
        if (i == nu)
            return -1;
        v = v * units[i].s / unit_s;
    }
    if (!isfinite(v))
        return -1;
    *out = v;
    return 0;
}

int ism_units_fraction(const char *s, double *out)
{
    size_t n = number_len(s, 1);
    if (n == 0)
        return -1;
    double v = strtod(s, NULL);
    if (!strcmp(s + n, "%"))
        v /= 100;
    else if (s[n])
        return -1;
    if (!isfinite(v))
        return -1;
    *out = v;
    return 0;
}

int ism_units_count(const char *s, int64_t *out)
{
    size_t n = 0;
    uint64_t v = 0;
    for (; isdigit((unsigned char)s[n]); n++) {
        if (v > ((uint64_t)INT64_MAX - 9) / 10)
            return -1;
        v = v * 10 + (uint64_t)(s[n] - '0');
    }
    if (n == 0 || s[n])
        return -1;
    *out = (int64_t)v;
    return 0;
}

void ism_units_size_text(int64_t v, char *buf, unsigned long len)
{
    static const char suffix[] = "kmgt";
    int k = 0;
    while (k < 4 && v != 0 && v % 1024 == 0) {
        v /= 1024;
        k++;
    }
    if (k)
        snprintf(buf, len, "%lld%c", (long long)v, suffix[k - 1]);
    else
        snprintf(buf, len, "%lld", (long long)v);
}
