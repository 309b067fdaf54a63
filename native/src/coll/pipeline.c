/* pipeline.c: the segmented, pipelined two-level allreduce for large vectors across
 * sites. The vector is cut into segments; for each segment the site reduces it to its
 * leader (the vendor's MPI_Ireduce), the leaders exchange it with every other site's
 * leader and fold the partials in site order, and the leader broadcasts the result
 * inside the site (MPI_Ibcast). Each stage works on a different segment at the same
 * time, so the WAN transfer of one segment overlaps the site-local reduction of the next
 * and the broadcast of the one before: the time approaches that of the slowest stage
 * (the WAN, for large vectors) instead of the sum of the three.
 *
 * Every member of a site issues the vendor collectives in the same order: reductions
 * of segments 0..D-1, then for each segment j its broadcast and the reduction of
 * segment j+D. The leader issues a broadcast only once the segment is folded, so it is
 * the leader's pace the others follow. WAN messages: one per segment and ordered pair of
 * sites, never more with more ranks.
 */
#include <stdlib.h>
#include <string.h>

#include "coll.h"

#define AHEAD 4         /* segment reductions issued before their broadcasts */
#define DEFAULT_SEG (1 << 20)

typedef struct item {
    int bcast, j;
} item;

static int64_t seg_len(int64_t bytes, int64_t sb, int j)
{
    int64_t o = (int64_t)j * sb;
    return bytes - o < sb ? bytes - o : sb;
}

/* The issue order every member of a site follows. */
static item *order(int n)
{
    item *it = malloc(sizeof *it * (size_t)(2 * n));
    int k = 0;
    for (int j = 0; it && j < n && j < AHEAD; j++)
        it[k++] = (item){0, j};
    for (int j = 0; it && j < n; j++) {
        it[k++] = (item){1, j};
        if (j + AHEAD < n)
            it[k++] = (item){0, j + AHEAD};
    }
    return it;
}

static int vtest(ism_vh *r, int *done)
{
    ism_vstatus st;
    int flag = 0, rc = ism.be->test(r, &flag, &st);
    if (flag || rc)
        *done = 1;
    return rc;
}

/* Waits for the oldest of cnt requests in the ring q of w. The idle count carries over
 * from one wait to the next: a segment takes milliseconds on the WAN, and a follower that
 * started every wait with a fresh round of spinning took the CPU the gateways and the
 * leader need on a busy machine. */
static int wait_oldest(ism_vh *q, int w, int *head, int *cnt, unsigned *spins)
{
    for (;;) {
        int done = 0, rc = vtest(&q[*head], &done);
        if (done || rc) {
            *head = (*head + 1) % w;
            (*cnt)--;
            return rc;
        }
        if (!ism_progress())
            ism_idle(spins);
    }
}

/* A member other than the leader: issue everything in order, keep at most 2*AHEAD+2
 * requests outstanding, wait for the rest. */
static int follower(const char *in, char *out, int64_t bytes, int64_t sb, int n, ism_dt *vdt,
                    ism_op *op, ism_comm *c)
{
    enum { W = 2 * AHEAD + 2 };
    ism_vh q[W];
    int head = 0, cnt = 0, rc = 0;
    unsigned spins = 0;
    item *it = order(n);
    if (!it)
        return ISM_ERR_NO_MEM;
    int64_t o0 = vdt->contig_off;
    for (int k = 0; k < 2 * n && !rc; k++) {
        if (cnt == W) /* the oldest must finish first */
            rc = wait_oldest(q, W, &head, &cnt, &spins);
        if (rc)
            break;
        int j = it[k].j;
        int64_t off = (int64_t)j * sb, len = seg_len(bytes, sb, j);
        ism_vh *r = &q[(head + cnt) % W];
        *r = 0;
        if (it[k].bcast)
            rc = ism.be->ibcast(out + off - o0, (int)(len / vdt->size), vdt->v, 0, c->vcomm, r);
        else
            rc = ism.be->ireduce(in + off - o0, NULL, (int)(len / vdt->size), vdt->v, op->v, 0,
                                 c->vcomm, r);
        cnt++;
    }
    while (cnt) { /* after an error too: nothing may stay outstanding */
        int e = wait_oldest(q, W, &head, &cnt, &spins);
        rc = rc ? rc : e;
    }
    free(it);
    return rc;
}

typedef struct segst {
    ism_vh rq, bq;
    int rstate, bstate; /* 0 not issued, 1 pending, 2 done */
    int wan_left;       /* WAN sends and receives of this segment not complete */
    int sent, folded;
} segst;

int ism_coll_pipe_allreduce(const void *in0, void *out0, int64_t bytes, ism_dt *vdt,
                            int64_t vcount, ism_op *op, ism_coll_redop *red, int64_t seg,
                            const ism_coll_view *wan, ism_comm *c)
{
    const char *in = in0;
    char *out = out0, *own = NULL;
    (void)vcount;
    int64_t sb = seg > 0 ? seg : DEFAULT_SEG;
    sb -= sb % vdt->size;
    if (sb < vdt->size)
        sb = vdt->size;
    if (sb > (int64_t)1 << 30)
        sb = (int64_t)1 << 30;
    int n = (int)((bytes + sb - 1) / sb), lead = c->lrank == 0, rc = 0;
    if (in == out && !lead && c->lsize > 1) {
        /* the broadcasts land where the reductions read: keep the input apart */
        if (!(own = malloc((size_t)bytes)))
            return ISM_ERR_NO_MEM;
        ism_coll_move(own, in, (size_t)bytes);
        in = own;
    }
    if (!lead) {
        rc = follower(in, out, bytes, sb, n, vdt, op, c);
        free(own);
        return rc;
    }
    int S = wan->p, me = wan->me, nw = 2 * (S - 1);
    int64_t o0 = vdt->contig_off;
    char *tmp = malloc((size_t)(bytes * (S - 1)) + 1), *fold = malloc((size_t)sb);
    segst *sg = calloc((size_t)n, sizeof *sg);
    ism_req **wr = calloc((size_t)n * (size_t)(nw ? nw : 1), sizeof *wr);
    item *it = order(n);
    if (!tmp || !fold || !sg || !wr || !it) {
        free(tmp);
        free(fold);
        free(sg);
        free(wr);
        free(it);
        return ISM_ERR_NO_MEM;
    }
    /* the other leaders' partials: receives posted for every segment at once, so each
     * arriving segment finds its receive and the transfer starts without a wait */
    for (int j = 0; j < n && !rc; j++) {
        int64_t off = (int64_t)j * sb, len = seg_len(bytes, sb, j);
        for (int w = 0, k = 0; w < S && !rc; w++) {
            if (w == me)
                continue;
            char *dst = tmp + (int64_t)(w < me ? w : w - 1) * bytes + off;
            rc = ism_irecv(dst, (int)len, ISM_DT_BYTE, wan->members[w], TAG_PIPE, c, c->ctx + 1,
                           &wr[(size_t)j * nw + S - 1 + k++]);
        }
        sg[j].wan_left = nw;
    }
    int next = 0, bdone = 0, nsent = 0;
    unsigned spins = 0;
    while (!rc && bdone < n) {
        int moved = 0;
        for (int j = 0; j < n && !rc; j++) {
            segst *g = &sg[j];
            int64_t off = (int64_t)j * sb, len = seg_len(bytes, sb, j);
            int done = 0;
            if (g->rstate == 1 && !(rc = vtest(&g->rq, &done)) && done) {
                g->rstate = 2;
                moved = 1;
            }
            done = 0;
            if (!rc && g->bstate == 1 && !(rc = vtest(&g->bq, &done)) && done) {
                g->bstate = 2;
                bdone++;
                moved = 1;
            }
            /* segments leave in order: the receives match them in posting order */
            if (g->rstate == 2 && !g->sent && j == nsent) {
                nsent++;
                for (int w = 0, k = 0; w < S && !rc; w++)
                    if (w != me)
                        rc = ism_isend(out + off, (int)len, ISM_DT_BYTE, wan->members[w],
                                       TAG_PIPE, c, c->ctx + 1, ISM_MODE_STD,
                                       &wr[(size_t)j * nw + k++]);
                g->sent = 1;
                moved = 1;
            }
            for (int k = 0; g->sent && k < nw && !rc; k++) {
                ism_req **r = &wr[(size_t)j * nw + k];
                int flag = 0;
                if (!*r)
                    continue;
                rc = ism_req_test(*r, &flag, NULL);
                if (flag || rc) {
                    ism_req_free(*r);
                    *r = NULL;
                    g->wan_left--;
                    moved = 1;
                }
            }
            if (g->sent && !g->wan_left && !g->folded && !rc) {
                /* P_0 op (P_1 op (... op P_{S-1})) in site order, as everywhere */
                const char *last = S - 1 == me ? out + off
                                               : tmp + (int64_t)(S - 2) * bytes + off;
                ism_coll_move(fold, last, (size_t)len);
                for (int w = S - 2; w >= 0 && !rc; w--) {
                    const char *pw = w == me ? out + off
                                             : tmp + (int64_t)(w < me ? w : w - 1) * bytes + off;
                    rc = ism_coll_apply(red, pw, fold, len);
                }
                ism_coll_move(out + off, fold, (size_t)len);
                g->folded = 1;
                moved = 1;
            }
        }
        /* issue in the common order while the next item is ready */
        while (!rc && next < 2 * n) {
            item t = it[next];
            segst *g = &sg[t.j];
            int64_t off = (int64_t)t.j * sb, len = seg_len(bytes, sb, t.j);
            int cnt = (int)(len / vdt->size);
            if (t.bcast) {
                if (!g->folded)
                    break;
                if (c->lsize > 1) {
                    rc = ism.be->ibcast(out + off - o0, cnt, vdt->v, 0, c->vcomm, &g->bq);
                    g->bstate = 1;
                } else {
                    g->bstate = 2;
                    bdone++;
                }
            } else if (c->lsize > 1) {
                const char *sbp = in == out ? NULL : in + off - o0;
                rc = ism.be->ireduce(sbp, out + off - o0, cnt, vdt->v, op->v, 0, c->vcomm,
                                     &g->rq);
                g->rstate = 1;
            } else {
                if (in != out)
                    ism_coll_move(out + off, in + off, (size_t)len);
                g->rstate = 2;
            }
            next++;
            moved = 1;
        }
        if (!moved && !ism_progress())
            ism_idle(&spins);
    }
    /* after an error nothing may still write into freed memory */
    for (size_t k = 0; k < (size_t)n * (size_t)nw; k++)
        if (wr[k])
            ism_wait_free(wr[k]);
    free(tmp);
    free(fold);
    free(sg);
    free(wr);
    free(it);
    free(own);
    return rc;
}
