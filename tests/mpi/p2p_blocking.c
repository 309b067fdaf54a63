/*
 * p2p_blocking: every blocking point-to-point send mode, near and far.
 * Modes: MPI_Send, MPI_Ssend, MPI_Rsend (only after a handshake that
 * guarantees the matching receive is posted), MPI_Bsend with
 * Buffer_attach/detach (size from MPI_Pack_size + MPI_BSEND_OVERHEAD, one
 * and several messages outstanding), MPI_Sendrecv and MPI_Sendrecv_replace.
 * Sizes 0, 1, 1000 and 100000 bytes (MPI_BYTE) and 4 MiB of MPI_INT.
 * Patterns: near (r <-> r^1) and far (r -> (r+size/2)%size).  The receive
 * buffer is larger than the message: contents, untouched tail,
 * status.MPI_SOURCE/MPI_TAG and MPI_Get_count are verified.
 * Send/Ssend are ordered along the cycles of the pattern (cycle leader
 * sends first, the others receive first), so no test relies on MPI_Send
 * buffering.  Works for any size >= 1 (self-messages when a rank is its
 * own peer).
 */
#include "check.h"
#include <stdint.h>
#include <string.h>

enum { PAT_NEAR, PAT_FAR, NPAT };
enum { M_SEND, M_SSEND, M_RSEND, M_BSEND, M_SENDRECV, M_SENDRECV_REPLACE, NMODE };
static const char *pat_name[NPAT] = {"near", "far"};
static const char *mode_name[NMODE] = {"Send", "Ssend", "Rsend", "Bsend", "Sendrecv",
                                       "Sendrecv_replace"};

struct scase {
    int count;
    MPI_Datatype type;
    size_t elsize;
    const char *name;
};

#define SLACK 16 /* extra receive elements that must stay untouched */
#define TOKEN_TAG 9999

static int rank, size;

static int pat_to(int pat, int r) { return pat == PAT_NEAR ? peer_near(r, size) : peer_far_to(r, size); }
static int pat_from(int pat, int r) { return pat == PAT_NEAR ? peer_near(r, size) : peer_far_from(r, size); }

/* the smallest rank on my cycle of the permutation sends first */
static int is_cycle_leader(int pat)
{
    int x = pat_to(pat, rank);
    while (x != rank) {
        if (x < rank)
            return 0;
        x = pat_to(pat, x);
    }
    return 1;
}

static void fill(void *buf, const struct scase *c, int sender, int tag)
{
    if (c->type == MPI_INT) {
        int *p = buf;
        for (int i = 0; i < c->count; i++)
            p[i] = (int)(((unsigned)sender * 2654435761u) ^ ((unsigned)tag << 20) ^ (unsigned)i);
    } else {
        unsigned char *p = buf;
        for (int i = 0; i < c->count; i++)
            p[i] = (unsigned char)(sender * 31 + tag * 7 + i + (i >> 8));
    }
}

static void verify(const void *buf, const struct scase *c, int sender, int tag,
                   const MPI_Status *st, const char *what)
{
    int bad = -1;
    if (c->type == MPI_INT) {
        const int *p = buf;
        for (int i = 0; i < c->count && bad < 0; i++)
            if (p[i] != (int)(((unsigned)sender * 2654435761u) ^ ((unsigned)tag << 20) ^ (unsigned)i))
                bad = i;
        for (int i = c->count; i < c->count + SLACK && bad < 0; i++)
            if (p[i] != -12345)
                bad = i;
    } else {
        const unsigned char *p = buf;
        for (int i = 0; i < c->count && bad < 0; i++)
            if (p[i] != (unsigned char)(sender * 31 + tag * 7 + i + (i >> 8)))
                bad = i;
        for (int i = c->count; i < c->count + SLACK && bad < 0; i++)
            if (p[i] != 0xA5)
                bad = i;
    }
    CHECK(bad < 0, "%s: data mismatch at element %d of %d (from %d)", what, bad, c->count, sender);
    if (st) {
        CHECK(st->MPI_SOURCE == sender, "%s: status source %d, expected %d", what,
              st->MPI_SOURCE, sender);
        CHECK(st->MPI_TAG == tag, "%s: status tag %d, expected %d", what, st->MPI_TAG, tag);
        int cnt = -1;
        MPI_Get_count(st, c->type, &cnt);
        CHECK(cnt == c->count, "%s: Get_count %d, expected %d", what, cnt, c->count);
    }
}

static void poison(void *buf, const struct scase *c)
{
    if (c->type == MPI_INT) {
        int *p = buf;
        for (int i = 0; i < c->count + SLACK; i++)
            p[i] = -12345;
    } else {
        memset(buf, 0xA5, (size_t)(c->count + SLACK));
    }
}

static void run_case(int pat, int mode, const struct scase *c, int tag)
{
    int to = pat_to(pat, rank), from = pat_from(pat, rank);
    size_t bytes = (size_t)(c->count + SLACK) * c->elsize;
    void *sbuf = malloc(bytes), *rbuf = malloc(bytes);
    char what[128];
    snprintf(what, sizeof what, "%s %s %s tag %d", pat_name[pat], mode_name[mode], c->name, tag);
    fill(sbuf, c, rank, tag);
    poison(rbuf, c);
    MPI_Status st;
    int rcount = c->count + SLACK;
    MPI_Request rreq, treq;
    int token = 0;

    switch (mode) {
    case M_SEND:
    case M_SSEND: {
        int (*sendfn)(const void *, int, MPI_Datatype, int, int, MPI_Comm) =
            mode == M_SEND ? MPI_Send : MPI_Ssend;
        if (to == rank) { /* self: the receive must be posted first */
            MPI_Irecv(rbuf, rcount, c->type, from, tag, MPI_COMM_WORLD, &rreq);
            sendfn(sbuf, c->count, c->type, to, tag, MPI_COMM_WORLD);
            MPI_Wait(&rreq, &st);
        } else if (is_cycle_leader(pat)) {
            sendfn(sbuf, c->count, c->type, to, tag, MPI_COMM_WORLD);
            MPI_Recv(rbuf, rcount, c->type, from, tag, MPI_COMM_WORLD, &st);
        } else {
            MPI_Recv(rbuf, rcount, c->type, from, tag, MPI_COMM_WORLD, &st);
            sendfn(sbuf, c->count, c->type, to, tag, MPI_COMM_WORLD);
        }
        break;
    }
    case M_RSEND:
        /* post the receive, tell the sender, wait for the receiver's word */
        MPI_Irecv(rbuf, rcount, c->type, from, tag, MPI_COMM_WORLD, &rreq);
        MPI_Isend(&token, 0, MPI_INT, from, TOKEN_TAG, MPI_COMM_WORLD, &treq);
        MPI_Recv(&token, 0, MPI_INT, to, TOKEN_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Rsend(sbuf, c->count, c->type, to, tag, MPI_COMM_WORLD);
        MPI_Wait(&treq, MPI_STATUS_IGNORE);
        MPI_Wait(&rreq, &st);
        break;
    case M_BSEND: {
        int psize = 0;
        MPI_Pack_size(c->count, c->type, MPI_COMM_WORLD, &psize);
        int bsize = psize + MPI_BSEND_OVERHEAD;
        void *bbuf = malloc((size_t)bsize);
        MPI_Buffer_attach(bbuf, bsize);
        /* Bsend is local, so every rank may send before receiving */
        CHECK_RC(MPI_Bsend(sbuf, c->count, c->type, to, tag, MPI_COMM_WORLD), what);
        MPI_Recv(rbuf, rcount, c->type, from, tag, MPI_COMM_WORLD, &st);
        void *dbuf = NULL;
        int dsize = -1;
        MPI_Buffer_detach(&dbuf, &dsize);
        CHECK(dbuf == bbuf && dsize == bsize, "%s: detach returned %p/%d, attached %p/%d",
              what, dbuf, dsize, bbuf, bsize);
        free(bbuf);
        break;
    }
    case M_SENDRECV:
        MPI_Sendrecv(sbuf, c->count, c->type, to, tag, rbuf, rcount, c->type, from, tag,
                     MPI_COMM_WORLD, &st);
        break;
    case M_SENDRECV_REPLACE:
        /* the buffer holds my data, then the peer's; the tail is poisoned */
        poison(rbuf, c);
        memcpy(rbuf, sbuf, (size_t)c->count * c->elsize);
        MPI_Sendrecv_replace(rbuf, c->count, c->type, to, tag, from, tag, MPI_COMM_WORLD, &st);
        break;
    }
    verify(rbuf, c, from, tag, &st, what);
    free(sbuf);
    free(rbuf);
}

/* several Bsends outstanding at once, buffer sized for all of them */
static void bsend_many(int pat, int tag0)
{
    enum { NMSG = 20, COUNT = 1000 };
    int to = pat_to(pat, rank), from = pat_from(pat, rank);
    int psize = 0;
    MPI_Pack_size(COUNT, MPI_INT, MPI_COMM_WORLD, &psize);
    int bsize = NMSG * (psize + MPI_BSEND_OVERHEAD);
    void *bbuf = malloc((size_t)bsize);
    MPI_Buffer_attach(bbuf, bsize);
    int *s = malloc(sizeof(int) * COUNT), *r = malloc(sizeof(int) * COUNT);
    for (int m = 0; m < NMSG; m++) {
        for (int i = 0; i < COUNT; i++)
            s[i] = rank * 100000 + m * 1000 + i;
        CHECK_RC(MPI_Bsend(s, COUNT, MPI_INT, to, tag0 + m, MPI_COMM_WORLD), "Bsend many");
    }
    /* the user may reuse the send buffer at once */
    memset(s, 0, sizeof(int) * COUNT);
    /* receive in reverse tag order (legal: matched by tag) */
    for (int m = NMSG - 1; m >= 0; m--) {
        MPI_Status st;
        MPI_Recv(r, COUNT, MPI_INT, from, tag0 + m, MPI_COMM_WORLD, &st);
        int bad = -1;
        for (int i = 0; i < COUNT && bad < 0; i++)
            if (r[i] != from * 100000 + m * 1000 + i)
                bad = i;
        CHECK(bad < 0, "%s Bsend many: msg %d mismatch at %d", pat_name[pat], m, bad);
        CHECK(st.MPI_SOURCE == from && st.MPI_TAG == tag0 + m, "%s Bsend many: status %d/%d",
              pat_name[pat], st.MPI_SOURCE, st.MPI_TAG);
    }
    void *dbuf;
    int dsize;
    MPI_Buffer_detach(&dbuf, &dsize);
    CHECK(dbuf == bbuf && dsize == bsize, "Bsend many: detach %p/%d", dbuf, dsize);
    free(bbuf);
    free(s);
    free(r);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    const struct scase cases[] = {
        {0, MPI_BYTE, 1, "0 B"},
        {1, MPI_BYTE, 1, "1 B"},
        {1000, MPI_BYTE, 1, "1000 B"},
        {100000, MPI_BYTE, 1, "100000 B"},
        {1 << 20, MPI_INT, sizeof(int), "4 MiB ints"},
    };
    const int ncases = (int)(sizeof cases / sizeof cases[0]);

    for (int pat = 0; pat < NPAT; pat++)
        for (int mode = 0; mode < NMODE; mode++)
            for (int ci = 0; ci < ncases; ci++)
                run_case(pat, mode, &cases[ci], 1 + pat * 100 + mode * 10 + ci);

    for (int pat = 0; pat < NPAT; pat++)
        bsend_many(pat, 1000 + pat * 100);

    /* MPI_STATUS_IGNORE on a blocking receive */
    {
        int to = peer_far_to(rank, size), from = peer_far_from(rank, size);
        int out = rank + 77, in = -1;
        MPI_Sendrecv(&out, 1, MPI_INT, to, 5, &in, 1, MPI_INT, from, 5, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        CHECK(in == from + 77, "Sendrecv with STATUS_IGNORE got %d", in);
    }

    int rc = check_finish("p2p_blocking");
    MPI_Finalize();
    return rc;
}
