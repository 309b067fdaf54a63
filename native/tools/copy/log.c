/* log.c: escaped lines on stderr (log.h). */
#include "log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *out_file;
static int out_set;

/* Bytes of the well-formed UTF-8 sequence at p that is not a C1 control, else 0. */
static size_t utf8_ok(const uint8_t *p)
{
    uint8_t c = p[0];
    if (c == 0xC2 && p[1] >= 0x80 && p[1] <= 0x9F)
        return 0; /* U+0080..U+009F: C1 controls (0x9B is a terminal's CSI) */
    if (c >= 0xC2 && c <= 0xDF)
        return (p[1] & 0xC0) == 0x80 ? 2 : 0;
    /* the second byte's range for each lead byte rules out overlong forms, surrogates
     * and code points above U+10FFFF */
    uint8_t lo = 0x80, hi = 0xBF;
    size_t n;
    if (c == 0xE0)
        lo = 0xA0, n = 3;
    else if (c == 0xED)
        hi = 0x9F, n = 3;
    else if (c >= 0xE1 && c <= 0xEF)
        n = 3;
    else if (c == 0xF0)
        lo = 0x90, n = 4;
    else if (c == 0xF4)
        hi = 0x8F, n = 4;
    else if (c >= 0xF1 && c <= 0xF3)
        n = 4;
    else
        return 0;
    if (p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if ((p[i] & 0xC0) != 0x80)
            return 0;
    return n;
}

size_t icp_escape(const char *in, char *out, size_t outlen)
{
    static const char hex[] = "0123456789abcdef";
    const uint8_t *p = (const uint8_t *)in;
    size_t at = 0;
    if (!outlen)
        return 0;
    while (*p) {
        char e[5];
        size_t k = 0, take = 1;
        if (*p == '\n' || *p == '\t' || *p == '\r' || *p == '\\') {
            e[0] = '\\';
            e[1] = *p == '\n' ? 'n' : *p == '\t' ? 't' : *p == '\r' ? 'r' : '\\';
            k = 2;
        } else if (*p >= 0x20 && *p < 0x7F) {
            e[0] = (char)*p;
            k = 1;
        } else if (*p >= 0x80 && (take = utf8_ok(p)) > 0) {
            if (at + take >= outlen)
                break;
            for (size_t i = 0; i < take; i++)
                out[at++] = (char)p[i];
            p += take;
            continue;
        } else {
            take = 1;
            e[0] = '\\', e[1] = 'x', e[2] = hex[*p >> 4], e[3] = hex[*p & 15];
            k = 4;
        }
        if (at + k >= outlen)
            break;
        for (size_t i = 0; i < k; i++)
            out[at++] = e[i];
        p += take;
    }
    out[at] = 0;
    return at;
}

void icp_log_to(FILE *f)
{
    pthread_mutex_lock(&lock);
    out_file = f;
    out_set = 1;
    pthread_mutex_unlock(&lock);
}

void icp_log(const char *prefix, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    icp_vlog(prefix, fmt, ap);
    va_end(ap);
}

void icp_vlog(const char *prefix, const char *fmt, va_list ap)
{
    char raw[4096], esc[4 * sizeof raw];
    vsnprintf(raw, sizeof raw, fmt, ap);
    icp_escape(raw, esc, sizeof esc);
    pthread_mutex_lock(&lock);
    FILE *f = out_set ? out_file : stderr;
    if (f) {
        fprintf(f, "%s%s\n", prefix, esc);
        fflush(f);
    }
    pthread_mutex_unlock(&lock);
}
