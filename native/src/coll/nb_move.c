/* nb_move.c: the collectives that only move data, across sites as collectives in flight
 * (nb.c): MPI_Igather(v), MPI_Iscatter(v) and MPI_Ialltoall(v,w) as one round of direct
 * messages, each pair of members that exchange bytes exchanging them straight (LibNBC's
 * linear schedules: every block crosses the WAN once, to its destination), and
 * MPI_Iallgatherv as MPI_Iallgather's phases with a block of each member's size, and the
 * neighbourhood collectives as one round of messages to and from the neighbours.
 *
 * Any type, any layout: a block of a non-contiguous type is packed when the collective
 * starts, or received packed and unpacked into the program's buffer when it completes.
 * What path a collective takes therefore depends on the communicator alone, never on a
 * member's types: MPI lets members name one signature with different layouts.
 */
#include <stdlib.h>

#include "nb.h"

static int takes(const ism_comm *c) { return !c->all_local && !c->is_inter && ism.multisite; }

static int64_t bytes_of(int64_t count, const ism_dt *dt)
{
    return count && dt ? count * dt->size : 0;
}

/* Where the bytes of a block of a contiguous type lie: disp bytes from buf (MPI_BOTTOM:
 * NULL, the disp an absolute address), the type's own offset included. */
static char *block_at(const void *buf, int64_t disp, const ism_dt *dt)
{
    return (char *)((uintptr_t)buf + (uintptr_t)disp + (uintptr_t)dt->contig_off);
}

/* A block to send: where it lies, or packed at *o (which moves on). */
static char *outgoing(const void *buf, int64_t disp, int64_t count, ism_dt *dt, int copy, char **o)
{
    if (dt->contig && !copy)
        return block_at(buf, disp, dt);
    char *p = *o;
    ism_dt_pack(dt, (const char *)buf + disp, count, p);
    *o += count * dt->size;
    return p;
}

/* A block to receive: where it goes, or at *o, unpacked at the end (NULL: out of memory). */
static char *incoming(ism_coll_nb *nb, void *buf, int64_t disp, int64_t count, ism_dt *dt,
                      char **o)
{
    if (dt->contig)
        return block_at(buf, disp, dt);
    char *p = *o;
    *o += count * dt->size;
    return ism_coll_nb_unpack_later(nb, dt, (char *)buf + disp, count, p) ? NULL : p;
}

static int launch(ism_coll_nb *nb, int rc, ism_req **out)
{
    if (rc) {
        ism_coll_nb_discard(nb);
        return rc;
    }
    return ism_coll_nb_launch(nb, NULL, out);
}

int ism_coll_ialltoallw64(const void *sbuf, const int64_t *scnt, const int64_t *sdsp,
                          ism_dt *const *st, void *rbuf, const int64_t *rcnt, const int64_t *rdsp,
                          ism_dt *const *rt, ism_comm *c, int root, ism_req **out)
{
    if (!takes(c))
        return ISM_COLL_PASS;
    int n = c->size, me = c->rank, ip = sbuf == ISM_IN_PLACE, rc = 0;
    /* a block for another site smaller than hub_max goes through the sites' hubs
     * (nb_hub.c), any other straight to its rank: both ends know its size */
    int64_t hub_max = ism_core_knob(ISM_K_COLL_HUB_MAX, 512);
    int my = c->site_of[me];
#define VIA_HUB(j, len) (c->site_of[j] != my && (len) < hub_max)
    const void *src = ip ? rbuf : sbuf;
    if (ip) { /* what goes out is read from the receive buffer, before anything arrives */
        scnt = rcnt;
        sdsp = rdsp;
        st = rt;
    }
    ism_coll_nb *nb = ism_coll_nb_new(c);
    if (!nb)
        return ISM_ERR_NO_MEM;
    int64_t need = 0;
    for (int j = 0; j < n && !rc; j++) {
        int64_t sb = bytes_of(scnt[j], st[j]), rb = bytes_of(rcnt[j], rt[j]);
        if (j == me && ip)
            continue; /* my own block stays where it is */
        if (j == me && sb != rb)
            rc = ISM_ERR_TRUNCATE;
        /* (the hubs' blocks are packed in nb_hub.c) */
        need += !VIA_HUB(j, sb) && sb && (ip || !st[j]->contig) ? sb : 0;
        need += !VIA_HUB(j, rb) && rb && !rt[j]->contig ? rb : 0;
        if (!rc && sb)
            rc = ism_coll_nb_hold(nb, st[j]);
        if (!rc && rb)
            rc = ism_coll_nb_hold(nb, rt[j]);
    }
    nb_xfer *x = rc ? NULL : malloc(sizeof *x * 2 * (size_t)n);
    if (!rc && (!x || (need && !(nb->own = malloc((size_t)need)))))
        rc = ISM_ERR_NO_MEM;
    char *o = nb->own;
    int nx = 0;
    for (int j = 0; j < n && !rc; j++) {
        int64_t sb = bytes_of(scnt[j], st[j]), rb = bytes_of(rcnt[j], rt[j]);
        if (j == me && (ip || !sb))
            continue;
        sb = VIA_HUB(j, sb) ? 0 : sb;
        rb = VIA_HUB(j, rb) ? 0 : rb;
        char *to = rb ? incoming(nb, rbuf, rdsp[j], rcnt[j], rt[j], &o) : NULL;
        char *from = sb ? outgoing(src, sdsp[j], scnt[j], st[j], ip, &o) : NULL;
        if (rb && !to)
            rc = ISM_ERR_NO_MEM;
        else if (j == me)
            x[nx++] = (nb_xfer){ISM_CA_COPY, j, from, to, sb};
        else {
            if (rb)
                x[nx++] = (nb_xfer){ISM_CA_RECV, j, to, NULL, rb};
            if (sb)
                x[nx++] = (nb_xfer){ISM_CA_SEND, j, from, NULL, sb};
        }
    }
    if (!rc)
        rc = hub_max > 0 ? ism_coll_nb_hub_alltoallw(nb, src, scnt, sdsp, st, rbuf, rcnt, rdsp,
                                                     rt, root, hub_max, x, nx)
                         : ism_coll_nb_direct(nb, x, nx);
#undef VIA_HUB
    free(x);
    return launch(nb, rc, out);
}

/* Whose sites' members are consecutive ranks, as MPI_Iallgather (nb_start.c): the blocks
 * gathered whole in rank order (in the receive buffer itself when its blocks lie so),
 * each site's run inside the site, the runs among the sites' leaders, the whole inside
 * each site from its leader; then each block to its place. Otherwise every member sends
 * its block to every other, as an alltoallw. */
int ism_coll_iallgatherv64(const void *sbuf, int64_t scount, ism_dt *sdt, void *rbuf,
                           const int64_t *rcnt, const int64_t *rdsp, ism_dt *rdt, ism_comm *c,
                           ism_req **out)
{
    if (!takes(c))
        return ISM_COLL_PASS;
    int n = c->size, me = c->rank, ip = sbuf == ISM_IN_PLACE, rc = 0;
    if (!c->site_runs) {
        int64_t *v = malloc(sizeof *v * 2 * (size_t)n);
        ism_dt **t = malloc(sizeof *t * 2 * (size_t)n);
        if (!v || !t)
            rc = ISM_ERR_NO_MEM;
        for (int j = 0; j < n && !rc; j++) { /* my block to everyone, in place from its place */
            v[j] = ip ? rcnt[me] : scount;
            v[n + j] = ip ? rdsp[me] : 0;
            t[j] = ip ? rdt : sdt;
            t[n + j] = rdt;
        }
        if (!rc)
            rc = ism_coll_ialltoallw64(ip ? rbuf : sbuf, v, v + n, t, rbuf, rcnt, rdsp, t + n, c,
                                       -1, out);
        free(v);
        free(t);
        return rc;
    }
    int64_t *off = malloc(sizeof *off * (size_t)(n + 1)), total = 0;
    if (!off)
        return ISM_ERR_NO_MEM;
    int dense = rdt->contig;
    for (int r = 0; r < n; r++) {
        off[r] = total;
        total += bytes_of(rcnt[r], rdt);
        dense &= !rcnt[r] || rdsp[r] == off[r];
    }
    ism_coll_nb *nb = ism_coll_nb_new(c);
    if (!nb) {
        free(off);
        return ISM_ERR_NO_MEM;
    }
    int64_t mine = bytes_of(rcnt[me], rdt);
    if (!ip && bytes_of(scount, sdt) != mine)
        rc = ISM_ERR_TRUNCATE;
    int own_in = !ip && !sdt->contig;
    int64_t need = (dense ? 0 : total) + (own_in ? mine : 0);
    if (!rc && need && !(nb->own = malloc((size_t)need)))
        rc = ISM_ERR_NO_MEM;
    char *all = dense ? block_at(rbuf, 0, rdt) : nb->own, *in = NULL, *o = nb->own + (dense ? 0 : total);
    for (int r = 0; r < n && !rc && !dense; r++) /* each block to its place at the end */
        if (rcnt[r] && ism_coll_nb_unpack_later(nb, rdt, (char *)rbuf + rdsp[r], rcnt[r],
                                                all + off[r]))
            rc = ISM_ERR_NO_MEM;
    if (!rc && ip) { /* my block, from its place, among the others */
        in = all + off[me];
        if (!dense && mine)
            ism_dt_pack(rdt, (char *)rbuf + rdsp[me], rcnt[me], in);
    } else if (!rc) {
        in = mine ? outgoing(sbuf, 0, scount, sdt, 0, &o) : all + off[me];
    }
    ism_coll_view iv = ism_coll_intra_view(c), wv;
    int64_t *blk = NULL, *lblk = NULL;
    if (!rc && !(nb->wan = malloc(sizeof(int) * (size_t)ism.lay.nsites)))
        rc = ISM_ERR_NO_MEM;
    if (!rc) {
        wv = ism_coll_wan_view(c, -1, 0, nb->wan, NULL);
        if (!(blk = malloc(sizeof *blk * (size_t)(wv.p + c->lsize))))
            rc = ISM_ERR_NO_MEM;
    }
    int rep = !rc && wv.me >= 0;
    char *site = rc ? NULL : all + off[c->my_leader]; /* my site's run of blocks */
    if (!rc) {
        lblk = blk + wv.p;
        for (int l = 0; l < c->lsize; l++)
            lblk[l] = bytes_of(rcnt[c->c_of_l[l]], rdt);
        for (int i = 0; i < wv.p; i++) { /* each site's run */
            int s = c->site_of[wv.members[i]];
            blk[i] = 0;
            for (int r = 0; r < n; r++)
                blk[i] += c->site_of[r] == s ? bytes_of(rcnt[r], rdt) : 0;
        }
    }
    int64_t srun = 0;
    for (int l = 0; !rc && l < c->lsize; l++)
        srun += lblk[l];
    if (!rc && total) {
        rc = ism_coll_nb_phase_blocks(nb, ISM_COLL_ALLGATHER, ISM_LVL_INTRA, &iv, mine, lblk,
                                      srun, 1, 1, in, site); /* (alone: mine is the run) */
        if (!rc && rep)
            rc = ism_coll_nb_phase_blocks(nb, ISM_COLL_ALLGATHER, ISM_LVL_WAN, &wv, 0, blk,
                                          total, 1, 1, site, all);
        if (!rc)
            rc = ism_coll_nb_phase(nb, ISM_COLL_BCAST, ISM_LVL_INTRA, &iv, 0, total, 1, 1,
                                   rep ? all : NULL, rep ? NULL : all);
    }
    free(blk);
    free(off);
    if (!rc)
        rc = ism_coll_nb_hold(nb, rdt);
    if (!rc && !ip)
        rc = ism_coll_nb_hold(nb, sdt);
    return launch(nb, rc, out);
}

/* A neighbour listed twice exchanges twice, paired in the order each side posts: in list
 * order for graphs; on a Cartesian grid what a rank sends towards -1 arrives in its
 * neighbour's +1 slot, so receive slot i is posted in the place of slot i ^ 1 (a
 * neighbour can repeat only within one dimension, of size 1 or 2). */
int ism_coll_ineighbor64(const void *sbuf, int nout, const int *outs, const int64_t *scnt,
                         const ptrdiff_t *sdsp, ism_dt *const *st, void *rbuf, int nin,
                         const int *ins, const int64_t *rcnt, const ptrdiff_t *rdsp,
                         ism_dt *const *rt, int cart, ism_comm *c, ism_req **out)
{
    if (!takes(c))
        return ISM_COLL_PASS;
    return ism_coll_iexchange64(sbuf, nout, outs, scnt, sdsp, st, rbuf, nin, ins, rcnt, rdsp, rt,
                                cart, c, out);
}

int ism_coll_iexchange64(const void *sbuf, int nout, const int *outs, const int64_t *scnt,
                         const ptrdiff_t *sdsp, ism_dt *const *st, void *rbuf, int nin,
                         const int *ins, const int64_t *rcnt, const ptrdiff_t *rdsp,
                         ism_dt *const *rt, int cart, ism_comm *c, ism_req **out)
{
    ism_coll_nb *nb = ism_coll_nb_new(c);
    if (!nb)
        return ISM_ERR_NO_MEM;
    int64_t need = 0;
    int rc = 0;
    for (int i = 0; i < nout && !rc; i++) {
        int64_t b = outs[i] == ISM_PROC_NULL ? 0 : bytes_of(scnt[i], st[i]);
        need += b && !st[i]->contig ? b : 0;
        rc = b ? ism_coll_nb_hold(nb, st[i]) : 0;
    }
    for (int i = 0; i < nin && !rc; i++) {
        int64_t b = ins[i] == ISM_PROC_NULL ? 0 : bytes_of(rcnt[i], rt[i]);
        need += b && !rt[i]->contig ? b : 0;
        rc = b ? ism_coll_nb_hold(nb, rt[i]) : 0;
    }
    nb_xfer *x = rc ? NULL : malloc(sizeof *x * (size_t)(nin + nout + 1));
    if (!rc && (!x || (need && !(nb->own = malloc((size_t)need)))))
        rc = ISM_ERR_NO_MEM;
    char *o = nb->own;
    int nx = 0;
    for (int k = 0; k < nin && !rc; k++) {
        int i = cart && (k ^ 1) < nin ? k ^ 1 : k;
        int64_t b = ins[i] == ISM_PROC_NULL ? 0 : bytes_of(rcnt[i], rt[i]);
        char *to = b ? incoming(nb, rbuf, rdsp[i], rcnt[i], rt[i], &o) : NULL;
        if (b && !to)
            rc = ISM_ERR_NO_MEM;
        else if (b)
            x[nx++] = (nb_xfer){ISM_CA_RECV, ins[i], to, NULL, b};
    }
    for (int i = 0; i < nout && !rc; i++) {
        int64_t b = outs[i] == ISM_PROC_NULL ? 0 : bytes_of(scnt[i], st[i]);
        if (b)
            x[nx++] = (nb_xfer){ISM_CA_SEND, outs[i],
                                outgoing(sbuf, sdsp[i], scnt[i], st[i], 0, &o), NULL, b};
    }
    if (!rc)
        rc = ism_coll_nb_direct(nb, x, nx);
    free(x);
    return launch(nb, rc, out);
}

int ism_coll_ialltoallw64_wait(const void *sbuf, const int64_t *scnt, const int64_t *sdsp,
                               ism_dt *const *st, void *rbuf, const int64_t *rcnt,
                               const int64_t *rdsp, ism_dt *const *rt, ism_comm *c)
{
    ism_req *r = NULL;
    int rc = ism_coll_ialltoallw64(sbuf, scnt, sdsp, st, rbuf, rcnt, rdsp, rt, c, -1, &r);
    return rc ? rc : ism_coll_nb_wait(r);
}
