/*
 * t_p2p.c - point-to-point tests of the conformance suite.
 *
 * Every test moves `count` elements of the datatype around a ring: rank r
 * sends to r+1 and receives from r-1 (on an intercommunicator rank r of each
 * group exchanges with rank r of the other group, when it exists).  Receives
 * are posted before blocking sends, so no test relies on MPI_Send buffering
 * or deadlocks on MPI_COMM_SELF; ready sends are preceded by a barrier after
 * the receive is posted.  Every receive checks the whole buffer (data,
 * holes, slack) and the status (source, tag, MPI_Get_count).
 */
#include "conf.h"

#include <stdlib.h>
#include <string.h>

#define TAG_BASE 1000

struct p2p {
    int dest, src, tag, on;
    struct buf sb, rb, eb;
};

/* peers and buffers; on == 0 when this rank has no partner */
static void setup(struct ctx *cx, struct p2p *p, int salt)
{
    p->tag = TAG_BASE + cx->tid;
    if (cx->inter) {
        p->on = cx->rank < cx->rsize;
        p->dest = p->src = cx->rank;
    } else {
        p->on = 1;
        p->dest = (cx->rank + 1) % cx->size;
        p->src = (cx->rank - 1 + cx->size) % cx->size;
    }
    int sside = cx->inter ? 1 - cx->side : 0;
    buf_init(cx, &p->sb, cx->count, SENT_SEND);
    buf_init(cx, &p->rb, cx->count, SENT_RECV);
    buf_init(cx, &p->eb, cx->count, SENT_RECV);
    if (p->on) {
        buf_fill(cx, &p->sb, 0, cx->count, seed_of(cx, salt, cx->side, cx->rank, p->dest));
        buf_fill(cx, &p->eb, 0, cx->count, seed_of(cx, salt, sside, p->src, cx->rank));
    }
}

static void done(struct p2p *p)
{
    buf_free(&p->sb);
    buf_free(&p->rb);
    buf_free(&p->eb);
}

static void check_status(struct ctx *cx, const MPI_Status *st, int src, int tag, int count,
                         const char *what)
{
    if (st->MPI_SOURCE != src || st->MPI_TAG != tag)
        cx_fail(cx, "%s: status source %d tag %d, expected %d %d", what, st->MPI_SOURCE,
                st->MPI_TAG, src, tag);
    int c = -1;
    MPI_Get_count(st, cx->ty->dt, &c);
    if (c != count)
        cx_fail(cx, "%s: MPI_Get_count %d, expected %d", what, c, count);
}

static void check_recv(struct ctx *cx, struct p2p *p, const MPI_Status *st, const char *what)
{
    check_status(cx, st, p->src, p->tag, cx->count, what);
    buf_same(cx, &p->rb, &p->eb, what);
}

/* ---- blocking, nonblocking and persistent sends of each mode ------------- */
enum { M_STD, M_SYNC, M_READY, M_BUF };

static void *battach(struct ctx *cx, int nmsg)
{
    int sz = 0;
    MPI_Pack_size(cx->count, cx->ty->dt, cx->comm, &sz);
    int len = nmsg * (sz + MPI_BSEND_OVERHEAD) + 64;
    void *b = malloc((size_t)len);
    MPI_Buffer_attach(b, len);
    return b;
}

static void bdetach(void *b)
{
    void *p;
    int len;
    MPI_Buffer_detach(&p, &len);
    free(b);
}

static void send_mode(struct ctx *cx, int mode)
{
    struct p2p p;
    setup(cx, &p, 0);
    void *bb = mode == M_BUF ? battach(cx, 1) : NULL;
    MPI_Request r = MPI_REQUEST_NULL;
    MPI_Status st;
    if (p.on)
        MPI_Irecv(p.rb.ptr, cx->count, cx->ty->dt, p.src, p.tag, cx->comm, &r);
    if (mode == M_READY)
        MPI_Barrier(cx->comm);
    if (p.on) {
        int rc = MPI_SUCCESS;
        switch (mode) {
        case M_STD: rc = MPI_Send(p.sb.ptr, cx->count, cx->ty->dt, p.dest, p.tag, cx->comm); break;
        case M_SYNC: rc = MPI_Ssend(p.sb.ptr, cx->count, cx->ty->dt, p.dest, p.tag, cx->comm); break;
        case M_READY: rc = MPI_Rsend(p.sb.ptr, cx->count, cx->ty->dt, p.dest, p.tag, cx->comm); break;
        case M_BUF: rc = MPI_Bsend(p.sb.ptr, cx->count, cx->ty->dt, p.dest, p.tag, cx->comm); break;
        }
        CX_RC(cx, rc, "send");
        MPI_Wait(&r, &st);
        check_recv(cx, &p, &st, "Irecv+blocking send");
    }
    if (bb)
        bdetach(bb);
    done(&p);
}

static void isend_mode(struct ctx *cx, int mode)
{
    struct p2p p;
    setup(cx, &p, 0);
    void *bb = mode == M_BUF ? battach(cx, 1) : NULL;
    MPI_Request r[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    MPI_Status st[2];
    if (p.on)
        MPI_Irecv(p.rb.ptr, cx->count, cx->ty->dt, p.src, p.tag, cx->comm, &r[0]);
    if (mode == M_READY)
        MPI_Barrier(cx->comm);
    if (p.on) {
        switch (mode) {
        case M_STD: MPI_Isend(p.sb.ptr, cx->count, cx->ty->dt, p.dest, p.tag, cx->comm, &r[1]); break;
        case M_SYNC: MPI_Issend(p.sb.ptr, cx->count, cx->ty->dt, p.dest, p.tag, cx->comm, &r[1]); break;
        case M_READY: MPI_Irsend(p.sb.ptr, cx->count, cx->ty->dt, p.dest, p.tag, cx->comm, &r[1]); break;
        case M_BUF: MPI_Ibsend(p.sb.ptr, cx->count, cx->ty->dt, p.dest, p.tag, cx->comm, &r[1]); break;
        }
        CX_RC(cx, MPI_Waitall(2, r, st), "MPI_Waitall");
        check_recv(cx, &p, &st[0], "Irecv+nonblocking send");
    }
    if (bb)
        bdetach(bb);
    done(&p);
}

/* persistent requests, started twice; new data is written into the same
 * buffers between the two starts */
static void persistent_mode(struct ctx *cx, int mode)
{
    struct p2p p;
    setup(cx, &p, 0);
    void *bb = mode == M_BUF ? battach(cx, 2) /* both starts may be buffered at once */ : NULL;
    MPI_Request r[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    MPI_Status st[2];
    int rc = MPI_SUCCESS;
    if (p.on) {
        MPI_Recv_init(p.rb.ptr, cx->count, cx->ty->dt, p.src, p.tag, cx->comm, &r[0]);
        switch (mode) {
        case M_STD: rc = MPI_Send_init(p.sb.ptr, cx->count, cx->ty->dt, p.dest, p.tag, cx->comm, &r[1]); break;
        case M_SYNC: rc = MPI_Ssend_init(p.sb.ptr, cx->count, cx->ty->dt, p.dest, p.tag, cx->comm, &r[1]); break;
        case M_READY: rc = MPI_Rsend_init(p.sb.ptr, cx->count, cx->ty->dt, p.dest, p.tag, cx->comm, &r[1]); break;
        case M_BUF: rc = MPI_Bsend_init(p.sb.ptr, cx->count, cx->ty->dt, p.dest, p.tag, cx->comm, &r[1]); break;
        }
        CX_RC(cx, rc, "persistent send init");
    }
    for (int round = 0; round < 2; round++) {
        if (round == 1 && p.on) {
            int sside = cx->inter ? 1 - cx->side : 0;
            struct buf s2, e2;
            buf_init(cx, &s2, cx->count, SENT_SEND);
            buf_init(cx, &e2, cx->count, SENT_RECV);
            buf_fill(cx, &s2, 0, cx->count, seed_of(cx, 1, cx->side, cx->rank, p.dest));
            buf_fill(cx, &e2, 0, cx->count, seed_of(cx, 1, sside, p.src, cx->rank));
            memcpy(p.sb.mem, s2.mem, s2.len);
            memcpy(p.eb.mem, e2.mem, e2.len);
            memset(p.rb.mem, SENT_RECV, p.rb.len);
            buf_free(&s2);
            buf_free(&e2);
        }
        if (p.on)
            MPI_Start(&r[0]);
        if (mode == M_READY)
            MPI_Barrier(cx->comm);
        if (p.on) {
            MPI_Start(&r[1]);
            CX_RC(cx, MPI_Waitall(2, r, st), "MPI_Waitall");
            check_recv(cx, &p, &st[0], round ? "persistent, 2nd start" : "persistent, 1st start");
        }
        if (mode == M_READY)
            MPI_Barrier(cx->comm); /* nobody ready-sends before the restart */
    }
    if (p.on) {
        MPI_Request_free(&r[0]);
        MPI_Request_free(&r[1]);
    }
    if (bb)
        bdetach(bb);
    done(&p);
}

TEST_FN(t_send, send_mode(cx, M_STD))
TEST_FN(t_ssend, send_mode(cx, M_SYNC))
TEST_FN(t_rsend, send_mode(cx, M_READY))
TEST_FN(t_bsend, send_mode(cx, M_BUF))
TEST_FN(t_isend, isend_mode(cx, M_STD))
TEST_FN(t_issend, isend_mode(cx, M_SYNC))
TEST_FN(t_irsend, isend_mode(cx, M_READY))
TEST_FN(t_ibsend, isend_mode(cx, M_BUF))
TEST_FN(t_send_init, persistent_mode(cx, M_STD))
TEST_FN(t_ssend_init, persistent_mode(cx, M_SYNC))
TEST_FN(t_rsend_init, persistent_mode(cx, M_READY))
TEST_FN(t_bsend_init, persistent_mode(cx, M_BUF))

/* blocking MPI_Recv of an MPI_Isend */
static void t_recv(struct ctx *cx)
{
    struct p2p p;
    setup(cx, &p, 0);
    if (p.on) {
        MPI_Request r;
        MPI_Status st;
        MPI_Isend(p.sb.ptr, cx->count, cx->ty->dt, p.dest, p.tag, cx->comm, &r);
        CX_RC(cx, MPI_Recv(p.rb.ptr, cx->count, cx->ty->dt, p.src, p.tag, cx->comm, &st),
              "MPI_Recv");
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        check_recv(cx, &p, &st, "Isend+Recv");
    }
    done(&p);
}

static void t_sendrecv(struct ctx *cx)
{
    struct p2p p;
    setup(cx, &p, 0);
    if (p.on) {
        MPI_Status st;
        CX_RC(cx, MPI_Sendrecv(p.sb.ptr, cx->count, cx->ty->dt, p.dest, p.tag, p.rb.ptr,
                               cx->count, cx->ty->dt, p.src, p.tag, cx->comm, &st),
              "MPI_Sendrecv");
        check_recv(cx, &p, &st, "Sendrecv");
    }
    done(&p);
}

/* the buffer starts with my outgoing data and receiver-side sentinel holes */
static void t_sendrecv_replace(struct ctx *cx)
{
    struct p2p p;
    setup(cx, &p, 0);
    if (p.on) {
        MPI_Status st;
        buf_fill(cx, &p.rb, 0, cx->count, seed_of(cx, 0, cx->side, cx->rank, p.dest));
        CX_RC(cx, MPI_Sendrecv_replace(p.rb.ptr, cx->count, cx->ty->dt, p.dest, p.tag, p.src,
                                       p.tag, cx->comm, &st),
              "MPI_Sendrecv_replace");
        check_recv(cx, &p, &st, "Sendrecv_replace");
    }
    done(&p);
}

enum { PR_PROBE, PR_IPROBE, PR_MPROBE, PR_IMPROBE };

static void probe_kind(struct ctx *cx, int kind)
{
    struct p2p p;
    setup(cx, &p, 0);
    if (p.on) {
        MPI_Request r, rr;
        MPI_Status st, st2;
        MPI_Message msg = MPI_MESSAGE_NULL;
        int flag = 0;
        MPI_Isend(p.sb.ptr, cx->count, cx->ty->dt, p.dest, p.tag, cx->comm, &r);
        switch (kind) {
        case PR_PROBE:
            CX_RC(cx, MPI_Probe(p.src, p.tag, cx->comm, &st), "MPI_Probe");
            break;
        case PR_IPROBE:
            while (!flag)
                CX_RC(cx, MPI_Iprobe(p.src, p.tag, cx->comm, &flag, &st), "MPI_Iprobe");
            break;
        case PR_MPROBE:
            CX_RC(cx, MPI_Mprobe(p.src, p.tag, cx->comm, &msg, &st), "MPI_Mprobe");
            break;
        case PR_IMPROBE:
            while (!flag)
                CX_RC(cx, MPI_Improbe(p.src, p.tag, cx->comm, &flag, &msg, &st), "MPI_Improbe");
            break;
        }
        check_status(cx, &st, p.src, p.tag, cx->count, "probe status");
        switch (kind) {
        case PR_PROBE:
        case PR_IPROBE:
            MPI_Recv(p.rb.ptr, cx->count, cx->ty->dt, p.src, p.tag, cx->comm, &st2);
            break;
        case PR_MPROBE:
            CX_RC(cx, MPI_Mrecv(p.rb.ptr, cx->count, cx->ty->dt, &msg, &st2), "MPI_Mrecv");
            break;
        case PR_IMPROBE:
            CX_RC(cx, MPI_Imrecv(p.rb.ptr, cx->count, cx->ty->dt, &msg, &rr), "MPI_Imrecv");
            MPI_Wait(&rr, &st2);
            break;
        }
        if (kind >= PR_MPROBE && msg != MPI_MESSAGE_NULL)
            cx_fail(cx, "message handle not set to MPI_MESSAGE_NULL by the receive");
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        check_recv(cx, &p, &st2, "receive after probe");
    }
    done(&p);
}

TEST_FN(t_probe, probe_kind(cx, PR_PROBE))
TEST_FN(t_iprobe, probe_kind(cx, PR_IPROBE))
TEST_FN(t_mprobe, probe_kind(cx, PR_MPROBE))
TEST_FN(t_improbe, probe_kind(cx, PR_IMPROBE))

/* a receive nobody matches is cancelled: the buffer stays untouched; then
 * the real message still arrives in a second receive */
static void t_cancel_recv(struct ctx *cx)
{
    struct p2p p;
    setup(cx, &p, 0);
    if (p.on) {
        MPI_Request r, s;
        MPI_Status st;
        struct buf junk;
        buf_init(cx, &junk, cx->count, SENT_RECV);
        MPI_Irecv(junk.ptr, cx->count, cx->ty->dt, p.src, p.tag + 500, cx->comm, &r);
        MPI_Isend(p.sb.ptr, cx->count, cx->ty->dt, p.dest, p.tag, cx->comm, &s);
        CX_RC(cx, MPI_Cancel(&r), "MPI_Cancel");
        MPI_Wait(&r, &st);
        int flag = 0;
        MPI_Test_cancelled(&st, &flag);
        if (!flag)
            cx_fail(cx, "unmatched receive was not cancelled");
        struct buf fresh;
        buf_init(cx, &fresh, cx->count, SENT_RECV);
        buf_same(cx, &junk, &fresh, "buffer of the cancelled receive");
        buf_free(&fresh);
        buf_free(&junk);
        MPI_Recv(p.rb.ptr, cx->count, cx->ty->dt, p.src, p.tag, cx->comm, &st);
        MPI_Wait(&s, MPI_STATUS_IGNORE);
        check_recv(cx, &p, &st, "receive after the cancel");
    }
    done(&p);
}

static void t_any_source(struct ctx *cx)
{
    struct p2p p;
    setup(cx, &p, 0);
    if (p.on) {
        MPI_Request r[2];
        MPI_Status st[2];
        MPI_Irecv(p.rb.ptr, cx->count, cx->ty->dt, MPI_ANY_SOURCE, p.tag, cx->comm, &r[0]);
        MPI_Isend(p.sb.ptr, cx->count, cx->ty->dt, p.dest, p.tag, cx->comm, &r[1]);
        MPI_Waitall(2, r, st);
        check_recv(cx, &p, &st[0], "MPI_ANY_SOURCE receive");
    }
    done(&p);
}

static void t_any_tag(struct ctx *cx)
{
    struct p2p p;
    setup(cx, &p, 0);
    if (p.on) {
        MPI_Request r;
        MPI_Status st;
        MPI_Isend(p.sb.ptr, cx->count, cx->ty->dt, p.dest, p.tag, cx->comm, &r);
        MPI_Recv(p.rb.ptr, cx->count, cx->ty->dt, p.src, MPI_ANY_TAG, cx->comm, &st);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        check_recv(cx, &p, &st, "MPI_ANY_TAG receive");
    }
    done(&p);
}

/* MPI_PROC_NULL: the send does nothing, the receive leaves the buffer alone
 * and returns source MPI_PROC_NULL, tag MPI_ANY_TAG, count 0 */
static void t_proc_null(struct ctx *cx)
{
    struct p2p p;
    setup(cx, &p, 0);
    MPI_Status st;
    CX_RC(cx, MPI_Send(p.sb.ptr, cx->count, cx->ty->dt, MPI_PROC_NULL, p.tag, cx->comm),
          "MPI_Send to MPI_PROC_NULL");
    CX_RC(cx, MPI_Recv(p.rb.ptr, cx->count, cx->ty->dt, MPI_PROC_NULL, p.tag, cx->comm, &st),
          "MPI_Recv from MPI_PROC_NULL");
    check_status(cx, &st, MPI_PROC_NULL, MPI_ANY_TAG, 0, "MPI_Recv from MPI_PROC_NULL");
    struct buf fresh;
    buf_init(cx, &fresh, cx->count, SENT_RECV);
    buf_same(cx, &p.rb, &fresh, "buffer of a receive from MPI_PROC_NULL");
    buf_free(&fresh);
    MPI_Status st2;
    CX_RC(cx, MPI_Sendrecv(p.sb.ptr, cx->count, cx->ty->dt, MPI_PROC_NULL, p.tag, p.rb.ptr,
                           cx->count, cx->ty->dt, MPI_PROC_NULL, p.tag, cx->comm, &st2),
          "MPI_Sendrecv with MPI_PROC_NULL");
    check_status(cx, &st2, MPI_PROC_NULL, MPI_ANY_TAG, 0, "MPI_Sendrecv with MPI_PROC_NULL");
    done(&p);
}

/* completion by MPI_Testall polling */
static void t_testall(struct ctx *cx)
{
    struct p2p p;
    setup(cx, &p, 0);
    if (p.on) {
        MPI_Request r[2];
        MPI_Status st[2];
        int flag = 0;
        MPI_Irecv(p.rb.ptr, cx->count, cx->ty->dt, p.src, p.tag, cx->comm, &r[0]);
        MPI_Isend(p.sb.ptr, cx->count, cx->ty->dt, p.dest, p.tag, cx->comm, &r[1]);
        while (!flag)
            CX_RC(cx, MPI_Testall(2, r, &flag, st), "MPI_Testall");
        check_recv(cx, &p, &st[0], "Testall");
    }
    done(&p);
}

/* MPI_Waitany over a receive and a send: both indices come back once */
static void t_waitany(struct ctx *cx)
{
    struct p2p p;
    setup(cx, &p, 0);
    if (p.on) {
        MPI_Request r[2];
        MPI_Status st, rst;
        int seen[2] = {0, 0};
        MPI_Irecv(p.rb.ptr, cx->count, cx->ty->dt, p.src, p.tag, cx->comm, &r[0]);
        MPI_Isend(p.sb.ptr, cx->count, cx->ty->dt, p.dest, p.tag, cx->comm, &r[1]);
        for (int k = 0; k < 2; k++) {
            int idx = -1;
            MPI_Waitany(2, r, &idx, &st);
            if (idx < 0 || idx > 1) {
                cx_fail(cx, "MPI_Waitany index %d", idx);
                break;
            }
            seen[idx]++;
            if (idx == 0)
                rst = st;
        }
        if (seen[0] != 1 || seen[1] != 1)
            cx_fail(cx, "MPI_Waitany returned the receive %d and the send %d times", seen[0],
                    seen[1]);
        else
            check_recv(cx, &p, &rst, "Waitany");
    }
    done(&p);
}

#define T(n, f) {n, "p2p", TF_INTER, f}
const struct test_def p2p_tests[] = {
    T("send", t_send),           T("recv", t_recv),
    T("ssend", t_ssend),         T("rsend", t_rsend),
    T("bsend", t_bsend),         T("isend", t_isend),
    T("issend", t_issend),       T("irsend", t_irsend),
    T("ibsend", t_ibsend),       T("send_init", t_send_init),
    T("ssend_init", t_ssend_init), T("rsend_init", t_rsend_init),
    T("bsend_init", t_bsend_init), T("sendrecv", t_sendrecv),
    T("sendrecv_replace", t_sendrecv_replace), T("probe", t_probe),
    T("iprobe", t_iprobe),       T("mprobe", t_mprobe),
    T("improbe", t_improbe),     T("cancel_recv", t_cancel_recv),
    T("any_source", t_any_source), T("any_tag", t_any_tag),
    T("proc_null", t_proc_null), T("testall", t_testall),
    T("waitany", t_waitany),
};
const int n_p2p_tests = (int)(sizeof p2p_tests / sizeof p2p_tests[0]);
