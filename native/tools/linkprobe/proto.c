/* proto.c: encoding and validation of isthmus-linkprobe's HELLO and REPORT (proto.h). */
#include "proto.h"

#include "../../src/common/le.h"

#define LP_MAGIC 0x504c5349u  /* "ISLP" */
#define LP_RMAGIC 0x524c5349u /* "ISLR" */

void lp_hello_encode(const lp_hello *h, uint8_t out[LP_HELLO_SIZE])
{
    ism_put_le32(out, LP_MAGIC);
    out[4] = LP_VERSION;
    out[5] = h->mode;
    out[6] = h->stream;
    out[7] = h->nstreams;
    ism_put_le32(out + 8, h->size);
    ism_put_le32(out + 12, h->window);
    ism_put_le32(out + 16, h->omit_ms);
    ism_put_le32(out + 20, 0);
    ism_put_le64(out + 24, h->session);
}

int lp_hello_decode(const uint8_t *in, size_t n, lp_hello *h, const char **why)
{
    lp_hello t;
    if (!in || n < LP_HELLO_SIZE)
        return *why = "short hello", -1;
    if (ism_get_le32(in) != LP_MAGIC)
        return *why = "not an isthmus-linkprobe client", -1;
    if (in[4] != LP_VERSION)
        return *why = "unsupported probe protocol version", -1;
    t.mode = in[5];
    t.stream = in[6];
    t.nstreams = in[7];
    t.size = ism_get_le32(in + 8);
    t.window = ism_get_le32(in + 12);
    t.omit_ms = ism_get_le32(in + 16);
    t.session = ism_get_le64(in + 24);
    if (t.mode != LP_RTT && t.mode != LP_TPUT && t.mode != LP_SETUP)
        return *why = "unknown mode", -1;
    if (ism_get_le32(in + 20) != 0)
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

int lp_hello_route(const uint8_t *in, size_t n, int data_only, lp_hello *h, const char **why)
{
    if (lp_hello_decode(in, n, h, why) != 0)
        return -1;
    if (data_only && h->mode != LP_TPUT)
        return *why = "only throughput streams go to a data port", -1;
    if (!data_only && h->mode == LP_TPUT)
        return *why = "throughput streams go to the data port of a setup", -1;
    return h->mode;
}

void lp_port_encode(int port, uint8_t out[LP_PORT_SIZE])
{
    ism_put_le32(out, (uint32_t)port);
}

int lp_port_decode(const uint8_t *in, size_t n)
{
    if (!in || n < LP_PORT_SIZE)
        return -1;
    uint32_t p = ism_get_le32(in);
    return p >= 1 && p <= 65535 ? (int)p : -1;
}

void lp_report_encode(const lp_report *r, uint8_t out[LP_REPORT_SIZE])
{
    ism_put_le32(out, LP_RMAGIC);
    ism_put_le32(out + 4, 0);
    ism_put_le64(out + 8, r->bytes);
    ism_put_le64(out + 16, r->bytes_after_omit);
    ism_put_le64(out + 24, r->ns_after_omit);
}

int lp_report_decode(const uint8_t *in, size_t n, lp_report *r)
{
    if (!in || n < LP_REPORT_SIZE || ism_get_le32(in) != LP_RMAGIC || ism_get_le32(in + 4) != 0)
        return -1;
    r->bytes = ism_get_le64(in + 8);
    r->bytes_after_omit = ism_get_le64(in + 16);
    r->ns_after_omit = ism_get_le64(in + 24);
    return r->bytes_after_omit <= r->bytes ? 0 : -1;
}
