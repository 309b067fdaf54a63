/* test_gw_sendq.c: the order in which a gateway link writes its numbered frames
 * (src/gateway/session.c, gw_link_send and gw_link_pump), without sockets or MPI.
 *
 * A flow-control frame (CTS or CREDIT: b->flow) goes ahead of the data frames still
 * queued, behind the frames already on the wire, the frames being sent again after a
 * reconnect, and earlier flow-control frames; every other frame keeps its place. What
 * the peer sees must stay a gap-free run of sequence numbers in the order written, with
 * every frame whole. The transport is a fake whose writev copies into a buffer and
 * takes at most `room` bytes, so a socket that is full, or takes half a frame, is
 * played exactly. The wire is then parsed back (link header, frame header, payload).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/gateway/gateway.h"
#include "check.h"

gw_state gw;

/* ---- what session.c needs from the rest of the gateway ---- */

void gw_die(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "gw_die(%d): ", code);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

void gw_log(const char *fmt, ...) { (void)fmt; }

gw_buf *gw_buf_get(int pool)
{
    (void)pool;
    return NULL;
}

gw_buf *gw_buf_small(size_t len)
{
    gw_buf *b = calloc(1, sizeof *b + len);
    b->data = (char *)(b + 1);
    b->len = len;
    return b;
}

void gw_buf_put(gw_buf *b) { free(b); }

void gw_link_down(gw_link *l, const char *why)
{
    (void)l;
    CHECK(0, "link down: %s", why);
}

void gw_route_from_link(gw_link *l, gw_buf *b)
{
    (void)l;
    free(b);
}

void gw_stream_close_fd(gw_stream *s) { (void)s; }
void gw_streams_wait(int64_t max_us) { (void)max_us; }

/* ---- the fake transport ---- */

static unsigned char wire[1 << 16];
static size_t wire_len, room;

static ssize_t fake_writev(gw_stream *s, const struct iovec *iov, int n)
{
    (void)s;
    size_t put = 0;
    for (int i = 0; i < n && room > 0; i++) {
        size_t k = iov[i].iov_len < room ? iov[i].iov_len : room;
        memcpy(wire + wire_len, iov[i].iov_base, k);
        wire_len += k;
        room -= k;
        put += k;
        if (k < iov[i].iov_len)
            break;
    }
    if (!put) {
        errno = EAGAIN;
        return -1;
    }
    return (ssize_t)put;
}

static gw_xport fake = {.name = "fake", .max_streams = 1, .writev = fake_writev};

/* ---- frames ---- */

#define PAYLOAD 300

/* A numbered frame from a local rank: type, an id in its tag, PAYLOAD bytes for DATA. */
static gw_buf *frame(int type, int id)
{
    size_t len = type == ISM_F_DATA ? PAYLOAD : 0;
    gw_buf *b = gw_buf_small(ISM_FRAME_HDR_SIZE + len);
    ism_frame_hdr h;
    ism_frame_init(&h, (enum ism_frame_type)type);
    h.src = 1;
    h.dst = 5;
    h.tag = id;
    h.len = (uint32_t)len;
    ism_frame_encode(&h, (uint8_t *)b->data);
    memset(b->data + ISM_FRAME_HDR_SIZE, id, len);
    b->flow = type == ISM_F_CTS || type == ISM_F_CREDIT;
    return b;
}

/* The frames written so far, parsed: their ids (tags) and link sequence numbers. */
static int parse(int *ids, uint64_t *seqs, int max)
{
    size_t at = 0;
    int n = 0;
    while (at + ISM_LINK_HDR_SIZE + ISM_FRAME_HDR_SIZE <= wire_len && n < max) {
        ism_link_hdr lh;
        ism_frame_hdr fh;
        CHECK(ism_link_hdr_decode(wire + at, ISM_LINK_HDR_SIZE, &lh) == 0, "link header %d", n);
        CHECK(ism_frame_decode(wire + at + ISM_LINK_HDR_SIZE, ISM_FRAME_HDR_SIZE + 4096, &fh) == 0,
              "frame header %d", n);
        size_t end = at + ISM_LINK_HDR_SIZE + ISM_FRAME_HDR_SIZE + fh.len;
        if (end > wire_len)
            break; /* the rest is not written yet */
        for (uint32_t i = 0; i < fh.len; i++)
            if (wire[at + ISM_LINK_HDR_SIZE + ISM_FRAME_HDR_SIZE + i] != (unsigned char)fh.tag) {
                CHECK(0, "frame %d (id %d): payload byte %u damaged", n, fh.tag, i);
                break;
            }
        ids[n] = fh.tag;
        seqs[n] = lh.seq;
        n++;
        at = end;
    }
    return n;
}

static void expect(const char *what, const int *want, int nwant)
{
    int ids[64];
    uint64_t seqs[64];
    int n = parse(ids, seqs, 64);
    CHECK(n == nwant, "%s: %d frames on the wire, expected %d", what, n, nwant);
    for (int i = 0; i < n && i < nwant; i++) {
        CHECK(ids[i] == want[i], "%s: frame %d is id %d, expected %d", what, i, ids[i], want[i]);
        CHECK(seqs[i] == (uint64_t)i + 1, "%s: frame %d has seq %llu, expected %d", what, i,
              (unsigned long long)seqs[i], i + 1);
    }
}

static gw_link *new_link(void)
{
    gw_link *l = calloc(1, sizeof *l);
    l->st = calloc(1, sizeof *l->st);
    l->nstreams = 1;
    l->st[0].fd = 0;
    l->state = GW_LINK_UP;
    l->tx_next = l->rx_next = l->ack_sent = l->peer_ack = 1;
    wire_len = 0;
    return l;
}

static void free_link(gw_link *l)
{
    for (gw_buf **q = &l->sendq; *q;) {
        gw_buf *b = *q;
        *q = b->next;
        free(b);
    }
    for (gw_buf **q = &l->unacked; *q;) {
        gw_buf *b = *q;
        *q = b->next;
        free(b);
    }
    free(l->st);
    free(l);
}

/* Three data frames queued, then a CREDIT, a fourth data frame and a CTS. With `taken`,
 * the stream took frame 1 before the socket filled (none of its bytes went out): it is on
 * the wire, so the credits go after it. */
static void credits_behind_three(int taken, const int *want, int nwant, const char *what)
{
    gw_link *l = new_link();
    room = 0;
    for (int id = 1; id <= 3; id++)
        gw_link_send(l, frame(ISM_F_DATA, id));
    if (taken)
        gw_link_pump(l);
    gw_link_send(l, frame(ISM_F_CREDIT, 10));
    gw_link_send(l, frame(ISM_F_DATA, 4));
    gw_link_send(l, frame(ISM_F_CTS, 11));
    CHECK(l->flow_passed == 2, "%s: flow_passed %llu, expected 2", what,
          (unsigned long long)l->flow_passed);
    CHECK(l->tx_next == 7, "%s: tx_next %llu, expected 7", what, (unsigned long long)l->tx_next);
    room = sizeof wire;
    gw_link_pump(l);
    expect(what, want, nwant);
    free_link(l);
}

/* A full socket: credits pass all queued data, in the order they came. */
static void passes_queued_data(void)
{
    credits_behind_three(0, (int[]){10, 11, 1, 2, 3, 4}, 6, "full socket");
    credits_behind_three(1, (int[]){1, 10, 11, 2, 3, 4}, 6, "frame taken, socket full");
}

/* A frame half on the wire is finished first; the credit goes right after it. */
static void waits_for_the_frame_on_the_wire(void)
{
    gw_link *l = new_link();
    for (int id = 1; id <= 3; id++)
        gw_link_send(l, frame(ISM_F_DATA, id));
    room = ISM_LINK_HDR_SIZE + ISM_FRAME_HDR_SIZE + PAYLOAD + 100; /* 1 and part of 2 */
    gw_link_pump(l);
    gw_link_send(l, frame(ISM_F_CREDIT, 10));
    room = sizeof wire;
    gw_link_pump(l);
    int want[] = {1, 2, 10, 3};
    expect("half-written frame", want, 4);
    free_link(l);
}

/* Message frames never pass each other, and with no data queued a credit just joins. */
static void others_keep_their_place(void)
{
    gw_link *l = new_link();
    room = 0;
    gw_link_send(l, frame(ISM_F_CREDIT, 10)); /* nothing to pass */
    gw_link_send(l, frame(ISM_F_RTS, 1));
    gw_link_send(l, frame(ISM_F_EAGER, 2));
    gw_link_send(l, frame(ISM_F_DATA, 3));
    gw_link_send(l, frame(ISM_F_FIN, 4));
    CHECK(l->flow_passed == 0, "flow_passed %llu", (unsigned long long)l->flow_passed);
    room = sizeof wire;
    gw_link_pump(l);
    int want[] = {10, 1, 2, 3, 4};
    expect("message frames", want, 5);
    free_link(l);
}

/* The link breaks: what close_streams and gw_link_down do to the send side. */
static void break_link(gw_link *l)
{
    l->st[0].cur = NULL;
    l->st[0].tx_off = 0;
    gw_link_reset_tx(l);
}

/* After a reconnect the frames sent before go again first, with their numbers; a credit
 * queued then passes only the frames never sent. (Frame 3 was taken by the stream when
 * the socket filled, so it counts as sent.) */
static void resends_stay_first(void)
{
    gw_link *l = new_link();
    for (int id = 1; id <= 4; id++)
        gw_link_send(l, frame(ISM_F_DATA, id));
    room = 2 * (ISM_LINK_HDR_SIZE + ISM_FRAME_HDR_SIZE + PAYLOAD); /* 1 and 2 written */
    gw_link_pump(l);
    break_link(l);
    CHECK(l->resend_upto == 3, "resend_upto %llu, expected 3", (unsigned long long)l->resend_upto);
    gw_link_send(l, frame(ISM_F_CREDIT, 10));
    wire_len = 0;
    room = sizeof wire;
    gw_link_pump(l);
    int want[] = {1, 2, 3, 10, 4};
    expect("after a reconnect", want, 5);
    free_link(l);
}

/* Two breaks in a row (in a 3-site job every gateway breaks its links once, so a link
 * breaks twice): after the first, the stream sent frame 1 again and took frame 2 when the
 * socket filled; then the second break. Frames 3 and 4 were on the wire before the first
 * break and are still queued: a credit queued now must not pass them (it would take
 * number 3, and the peer, which may hold the old 3 and 4, would drop one frame and
 * deliver another twice: the CI run of stop 37 saw a DATA frame delivered twice). */
static void resends_survive_a_second_break(void)
{
    gw_link *l = new_link();
    const size_t one = ISM_LINK_HDR_SIZE + ISM_FRAME_HDR_SIZE + PAYLOAD;
    for (int id = 1; id <= 6; id++)
        gw_link_send(l, frame(ISM_F_DATA, id));
    room = 4 * one; /* 1..4 written, 5 taken */
    gw_link_pump(l);
    break_link(l);
    CHECK(l->resend_upto == 5, "first break: resend_upto %llu, expected 5",
          (unsigned long long)l->resend_upto);
    wire_len = 0;
    room = one; /* after the resume: 1 written again, 2 taken */
    gw_link_pump(l);
    break_link(l);
    CHECK(l->resend_upto == 5, "second break: resend_upto %llu, expected still 5",
          (unsigned long long)l->resend_upto);
    gw_link_send(l, frame(ISM_F_CREDIT, 10));
    wire_len = 0;
    room = sizeof wire;
    gw_link_pump(l);
    int want[] = {1, 2, 3, 4, 5, 10, 6};
    expect("after a second break", want, 7);
    free_link(l);
}

int main(void)
{
    gw.xp = &fake;
    gw.lay.site_names = (char *[]){"A", "B"};
    passes_queued_data();
    waits_for_the_frame_on_the_wire();
    others_keep_their_place();
    resends_stay_first();
    resends_survive_a_second_break();
    if (failures) {
        fprintf(stderr, "test_gw_sendq: %d failures\n", failures);
        return 1;
    }
    printf("test_gw_sendq: OK\n");
    return 0;
}
