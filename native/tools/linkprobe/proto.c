/* proto.c: encoding and validation of isthmus-linkprobe's HELLO and REPORT (proto.h). */
#include "proto.h"

#define LP_MAGIC 0x504c5349u  /* "ISLP" */
#define LP_RMAGIC 0x524c5349u /* "ISLR" */

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
    put32(p, (uint32_t)v);
    put32(p + 4, (uint32_t)(v >> 32));
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p) { return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32; }

void lp_hello_encode(const lp_hello *h, uint8_t out[LP_HELLO_SIZE])
{
    put32(out, LP_MAGIC);
    out[4] = LP_VERSION;
    out[5] = h->mode;
    out[6] = h->stream;
    out[7] = h->nstreams;
    put32(out + 8, h->size);
    put32(out + 12, h->window);
    put32(out + 16, h->omit_ms);
    put32(out + 20, 0);
    put64(out + 24, h->session);
}

int lp_hello_decode(const uint8_t *in, size_t n, lp_hello *h, const char **why)
{
    lp_hello t;
    if (!in || n < LP_HELLO_SIZE)
        return *why = "short hello", -1;
    if (get32(in) != LP_MAGIC)
        return *why = "not an isthmus-linkprobe client", -1;
    if (in[4] != LP_VERSION)
        return *why = "unsupported probe protocol version", -1;
    t.mode = in[5];
    t.stream = in[6];
    t.nstreams = in[7];
    t.size = get32(in + 8);
    t.window = get32(in + 12);
    t.omit_ms = get32(in + 16);
    t.session = get64(in + 24);
    if (t.mode != LP_RTT && t.mode != LP_TPUT && t.mode != LP_SETUP)
        return *why = "unknown mode", -1;
    if (get32(in + 20) != 0)
        return *why = "reserved field set", -1;
    if (t.nstreams < 1 || t.nstreams > LP_MAX_STREAMS || t.stream >= t.nstreams)
        return *why = "bad stream index or count", -1;
    if (t.mode == LP_RTT && (t.size < 1 || t.size > LP_MAX_SIZE))
        return *why = "rtt message size out of range", -1;
    if (t.window > LP_MAX_WINDOW)
        return *why = "window above 1 GiB", -1;
    if (t.omit_ms > 3600u * 1000u)
        return *why = "omit above one hour", -1;
    *h = t;
    return 0;
}

void lp_report_encode(const lp_report *r, uint8_t out[LP_REPORT_SIZE])
{
    put32(out, LP_RMAGIC);
    put32(out + 4, 0);
    put64(out + 8, r->bytes);
    put64(out + 16, r->bytes_after_omit);
    put64(out + 24, r->ns_after_omit);
}

int lp_report_decode(const uint8_t *in, size_t n, lp_report *r)
{
    if (!in || n < LP_REPORT_SIZE || get32(in) != LP_RMAGIC || get32(in + 4) != 0)
        return -1;
    r->bytes = get64(in + 8);
    r->bytes_after_omit = get64(in + 16);
    r->ns_after_omit = get64(in + 24);
    return r->bytes_after_omit <= r->bytes ? 0 : -1;
}
