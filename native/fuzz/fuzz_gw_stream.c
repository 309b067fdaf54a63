/* fuzz_gw_stream.c: fuzz target for the gateway's stream reassembly (gateway/session.c,
 * gw_stream_read): link headers, frame headers and payloads arriving in pieces of any
 * size, duplicates, frames ahead of their turn, control frames, CRCs.
 *
 * The first byte sets CRC checking (bit 0) and the link's state (bit 1: resuming); the
 * second the largest piece one read returns (1..255, 0 = all that is left); the rest is
 * what the peer sent. A gateway may end the job on a protocol error (gw_die, which this
 * harness turns into a return) or take the link down (a CRC mismatch, the peer closing);
 * anything else is a crash. Properties: frames reach the site in sequence order with no
 * gap and no repeat, each one whole (its buffer holds exactly its header and payload), a
 * frame's buffer is never larger than the pool's, and every buffer taken from the pool
 * comes back.
 */
#define _GNU_SOURCE
#include "fuzz.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/gateway/gateway.h"

gw_state gw;

#define POOL 4
#define CHUNK 2048

static jmp_buf died;
static const uint8_t *wire;
static size_t wire_len, wire_at, piece;
static uint64_t delivered_next;
static size_t input_size;
static int link_went_down;
static size_t n_inputs, n_delivering, n_frames, n_died, n_down;

static void fail(const char *what) { ism_fuzz_fail("fuzz_gw_stream", what, input_size); }

/* ---- what session.c needs from the rest of the gateway ---- */

void gw_die(int code, const char *fmt, ...)
{
    (void)code, (void)fmt;
    longjmp(died, 1);
}

void gw_log(const char *fmt, ...) { (void)fmt; }

static gw_buf *pool;

gw_buf *gw_buf_get(int which)
{
    if (which != GW_POOL_RX)
        fail("a transmit buffer taken while receiving");
    gw_buf *b = pool;
    if (!b)
        return NULL;
    pool = b->next;
    gw.free_rx--;
    b->next = NULL;
    b->len = 0;
    b->seq = 0;
    return b;
}

/* Small buffers still out: a protocol error ends the job (here: a longjmp) while one is
 * in flight, which the real gateway does not free either, since it exits. */
#define SMALL_MAX 4096
static gw_buf *small[SMALL_MAX];
static int nsmall;

gw_buf *gw_buf_small(size_t len)
{
    gw_buf *b = calloc(1, sizeof *b + len);
    if (!b || nsmall == SMALL_MAX)
        abort();
    b->data = (char *)(b + 1);
    b->len = len;
    small[nsmall++] = b;
    return b;
}

void gw_buf_put(gw_buf *b)
{
    if (b->pooled) {
        b->next = pool;
        pool = b;
        gw.free_rx++;
        return;
    }
    for (int i = 0; i < nsmall; i++)
        if (small[i] == b) {
            small[i] = small[--nsmall];
            free(b);
            return;
        }
    fail("a buffer given back twice, or never taken");
}

void gw_link_down(gw_link *l, const char *why)
{
    (void)why;
    link_went_down = 1;
    l->state = GW_LINK_DOWN;
    for (int i = 0; i < l->nstreams; i++)
        l->st[i].fd = -1;
}

void gw_route_from_link(gw_link *l, gw_buf *b)
{
    (void)l;
    ism_frame_hdr h;
    if (ism_frame_decode((const uint8_t *)b->data, b->len, &h) != 0 ||
        b->len != ISM_FRAME_HDR_SIZE + (size_t)h.len)
        fail("a frame reached the site not whole");
    if (b->seq != 0) {
        if (b->seq != delivered_next)
            fail("frames reached the site out of order, with a gap or twice");
        delivered_next++;
    }
    gw_buf_put(b);
}

void gw_stream_close_fd(gw_stream *s) { s->fd = -1; }
void gw_streams_wait(int64_t max_us) { (void)max_us; }

/* ---- the fake transport: the input, in pieces ---- */

static ssize_t fake_read(gw_stream *s, void *buf, size_t n)
{
    (void)s;
    if (wire_at == wire_len)
        return 0; /* the peer closed */
    size_t k = n < piece ? n : piece;
    if (k > wire_len - wire_at)
        k = wire_len - wire_at;
    memcpy(buf, wire + wire_at, k);
    wire_at += k;
    return (ssize_t)k;
}

static ssize_t fake_writev(gw_stream *s, const struct iovec *iov, int n)
{
    (void)s, (void)iov, (void)n;
    errno = EAGAIN; /* control frames the reader queues (ACK, PONG) stay queued */
    return -1;
}

static gw_xport fake = {.name = "fake", .max_streams = 1, .read = fake_read,
                        .writev = fake_writev};

static void free_list(gw_buf *b)
{
    while (b) {
        gw_buf *n = b->next;
        gw_buf_put(b);
        b = n;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
    if (n < 2)
        return 0;
    static gw_buf bufs[POOL];
    static char mem[POOL][ISM_FRAME_HDR_SIZE + CHUNK];
    static char name[] = "fuzz";
    static char *names[2] = {name, name};
    static gw_link link;
    static gw_stream st;
    memset(&gw, 0, sizeof gw);
    gw.xp = &fake;
    gw.crc = d[0] & 1;
    gw.bufsize = ISM_FRAME_HDR_SIZE + CHUNK;
    gw.lay.site_names = names;
    gw.dead_ms = 5000;
    pool = NULL;
    for (int i = 0; i < POOL; i++) {
        bufs[i] = (gw_buf){.pooled = 2, .data = mem[i]};
        bufs[i].next = pool;
        pool = &bufs[i];
    }
    gw.free_rx = gw.pool_total = POOL;
    memset(&link, 0, sizeof link);
    memset(&st, 0, sizeof st);
    link.site = 1;
    link.state = d[0] & 2 ? GW_LINK_RESUMING : GW_LINK_UP;
    link.nstreams = 1;
    link.st = &st;
    link.tx_next = link.rx_next = link.ack_sent = link.peer_ack = 1;
    st.fd = 3;
    gw.links = &link;
    gw.nlinks = 1;
    wire = d + 2;
    wire_len = n - 2;
    wire_at = 0;
    piece = d[1] ? d[1] : (size_t)-1;
    delivered_next = 1;
    input_size = n;
    link_went_down = 0;

    if (setjmp(died) != 0) {
        n_died++;
    } else {
        for (int guard = 0; guard < 100000 && st.fd >= 0; guard++) {
            int rc = gw_stream_read(&link, &st);
            if (rc < 0)
                break;
            if (rc == 0 && wire_at == wire_len)
                break;
            if (rc == 0 && gw.free_rx == 0)
                break; /* every buffer parked ahead of a missing frame: the peer's to fix */
        }
    }
    /* what the gateway would free when the stream or link closes */
    if (st.rxbuf && st.rxbuf->pooled)
        gw_buf_put(st.rxbuf);
    st.rxbuf = NULL;
    free_list(link.ooo);
    link.ooo = NULL;
    st.ctlq = NULL; /* small buffers, freed below with any a protocol error left behind */
    while (nsmall)
        free(small[--nsmall]);
    if (gw.free_rx != POOL)
        fail("a pool buffer was lost");
    n_inputs++;
    n_frames += delivered_next - 1;
    n_delivering += delivered_next > 1;
    n_down += link_went_down || link.crc_errors > 0;
    return 0;
}

void ism_fuzz_report(void)
{
    printf("fuzz_gw_stream: %zu inputs: %zu delivered frames (%zu in all), %zu ended the job, "
           "%zu took the stream or link down\n",
           n_inputs, n_delivering, n_frames, n_died, n_down);
}

/* Seeds: frames 1, 2 (a 100-byte payload) and 3 in order, with and without CRCs; the same
 * with 2 and 3 swapped; a PING and a duplicate. */
static size_t put_frame(uint8_t *p, uint64_t seq, int type, uint32_t len, int crc)
{
    ism_frame_hdr h;
    ism_frame_init(&h, (enum ism_frame_type)type);
    h.src = seq ? 1 : -1;
    h.dst = seq ? 2 : -1;
    h.len = len;
    uint8_t *fh = p + ISM_LINK_HDR_SIZE;
    ism_frame_encode(&h, fh);
    memset(fh + ISM_FRAME_HDR_SIZE, 0x5a, len);
    ism_link_hdr lh = {.flags = crc ? ISM_LINK_FLAG_CRC : 0, .seq = seq, .ack = 1};
    ism_link_hdr_encode(&lh, p);
    if (crc) { /* as session.c's start_frame: the headers' CRC, then the whole frame's */
        lh.hcrc = ism_link_hdr_crc(p, fh, ISM_FRAME_HDR_SIZE);
        ism_link_hdr_encode(&lh, p);
        lh.crc = ism_link_crc(p, fh, ISM_FRAME_HDR_SIZE + len);
        ism_link_hdr_encode(&lh, p);
    }
    return ISM_LINK_HDR_SIZE + ISM_FRAME_HDR_SIZE + len;
}

size_t ism_fuzz_seeds(const ism_fuzz_seed **out)
{
    static uint8_t buf[6][2 + 6 * (ISM_LINK_HDR_SIZE + ISM_FRAME_HDR_SIZE + 100)];
    static ism_fuzz_seed seeds[6];
    static const uint64_t order[3][4] = {{1, 2, 3, 0}, {1, 3, 2, 0}, {1, 1, 2, 0}};
    int k = 0;
    for (int crc = 0; crc < 2; crc++)
        for (int o = 0; o < 3; o++, k++) {
            uint8_t *p = buf[k];
            p[0] = (uint8_t)crc;
            p[1] = (uint8_t)(7 + 30 * o);
            size_t at = 2;
            if (o == 2)
                at += put_frame(p + at, 0, ISM_F_PING, 0, crc);
            for (int i = 0; order[o][i]; i++)
                at += put_frame(p + at, order[o][i], ISM_F_EAGER, order[o][i] == 2 ? 100 : 0,
                                crc);
            seeds[k] = (ism_fuzz_seed){p, at};
        }
    *out = seeds;
    return 6;
}
