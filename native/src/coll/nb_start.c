/* nb_start.c: MPI_Iallreduce, MPI_Ireduce, MPI_Ibcast, MPI_Ibarrier, MPI_Iallgather,
 * MPI_Iscan, MPI_Iexscan and MPI_Ireduce_scatter(_block) across sites as
 * collectives in flight (nb.c): the phases of twolevel.c's blocking calls (inside each
 * site, among one member per site, inside each site again), each one of our schedules,
 * chosen as select.c chooses for that phase (a choice of the vendor's collective or of
 * the pipeline takes our default schedule instead). Data are the caller's buffers
 * themselves for contiguous types; the reductions' other types move packed (and the ops
 * apply to packed bytes), the scans and reduce-scatter take contiguous ones only.
 */
#include <stdlib.h>

#include "nb.h"

/* What the engine takes; the rest the coroutine runs (core/nbc.c). Every member decides
 * alike: the communicator and the op are the same on all (a type only by its signature:
 * MPI_Iallreduce and MPI_Ireduce take any layout, packed; the scans and reduce-scatter
 * only contiguous ones, and pass the rest to the coroutine). */
static int takes(const ism_comm *c, const ism_op *op)
{
    if (c->all_local || c->is_inter || !ism.multisite)
        return 0;
    return !op || !op->user || op->commute || c->site_runs;
}

/* A communicator within one site: nb_site.c's (a reduction's or bcast's count and type). */
static int one_site(const ism_comm *c) { return c->all_local && !c->is_inter; }

static int site(int coll, const void *sbuf, void *rbuf, int count, ism_dt *dt, ism_op *op,
                int root, ism_comm *c, ism_req **out)
{
    ism_coll_site a = {.coll = coll, .n = c->size, .s = sbuf, .r = rbuf, .rcount = count,
                       .root = root, .rdt = dt, .op = op};
    return ism_coll_isite(&a, c, out);
}

/* The bytes of a contiguous type's buffer (MPI_BOTTOM, NULL, with an absolute address
 * as the type's offset included) */
static char *at(const void *buf, const ism_dt *dt)
{
    return (char *)((uintptr_t)buf + (uintptr_t)dt->contig_off);
}

/* The input of a reduction: the send buffer, or in place the receive buffer. */
static char *input(const void *sbuf, const void *rbuf, const ism_dt *dt)
{
    return at(sbuf == ISM_IN_PLACE ? rbuf : sbuf, dt);
}

static int wan(ism_coll_nb *nb, int root, ism_coll_view *wv, int *wroot)
{
    if (!(nb->wan = malloc(sizeof(int) * (size_t)ism.lay.nsites)))
        return ISM_ERR_NO_MEM;
    *wv = ism_coll_wan_view(nb->c, root, 0, nb->wan, wroot);
    return 0;
}

static int launch(ism_coll_nb *nb, int rc, ism_dt *dt, ism_req **out)
{
    if (rc) {
        ism_coll_nb_discard(nb);
        return rc;
    }
    return ism_coll_nb_launch(nb, dt, out);
}

/* The start both reductions share: the collective, or NULL with *why set to
 * ISM_COLL_PASS or the error. */
static ism_coll_nb *reduction(ism_comm *c, int64_t bytes, ism_dt *dt, ism_op *op, int *why)
{
    ism_coll_nb *nb = NULL;
    if (!takes(c, op) || bytes <= 0)
        *why = ISM_COLL_PASS;
    else if (!(nb = ism_coll_nb_new(c)))
        *why = ISM_ERR_NO_MEM;
    else {
        ism_coll_redop_init(&nb->red, op, dt);
        ism_op_hold(op); /* MPI_Op_free meanwhile only marks it (nb_free releases it) */
    }
    return nb;
}

/* A reduction's buffers for a type that is not contiguous (a contiguous one's stay: *in
 * and *o as given): own holds the input packed (from the send buffer, or in place the
 * receive buffer) and, with res, a result of count elements at *o, unpacked into rbuf at
 * the end where *o was given (else the partial a site's member passes on). The op applies
 * to packed bytes (exec.c's redop). */
static int packed_red(ism_coll_nb *nb, const void *sbuf, void *rbuf, int count, ism_dt *dt,
                      int res, char **in, char **o)
{
    int64_t bytes = (int64_t)count * dt->size;
    int unpack = o && *o;
    if (dt->contig) {
        if (res && !unpack && !(*o = nb->own = malloc((size_t)bytes)))
            return ISM_ERR_NO_MEM;
        return 0;
    }
    if (!(nb->own = malloc((size_t)bytes * (res ? 2 : 1))))
        return ISM_ERR_NO_MEM;
    ism_dt_pack(dt, sbuf == ISM_IN_PLACE ? rbuf : sbuf, count, nb->own);
    *in = nb->own;
    if (res)
        *o = nb->own + bytes;
    return res && unpack ? ism_coll_nb_unpack_later(nb, dt, rbuf, count, *o) : 0;
}

int ism_coll_iallreduce(const void *sbuf, void *rbuf, int count, ism_dt *dt, ism_op *op,
                        ism_comm *c, ism_req **out)
{
    if (one_site(c))
        return site(ISM_SITE_ALLREDUCE, sbuf, rbuf, count, dt, op, -1, c, out);
    int64_t bytes = (int64_t)count * dt->size, commute = !op->user || op->commute;
    int why;
    ism_coll_nb *nb = reduction(c, bytes, dt, op, &why);
    if (!nb)
        return why;
    char *in = input(sbuf, rbuf, dt), *o = at(rbuf, dt);
    int rc = packed_red(nb, sbuf, rbuf, count, dt, 1, &in, &o);
    ism_coll_view iv = ism_coll_intra_view(c), wv;
    rc = rc ? rc : wan(nb, -1, &wv, NULL);
    int rep = !rc && wv.me >= 0;
    if (!rc) /* partials to each site's leader, the leaders' allreduce, the result out */
        rc = ism_coll_nb_phase(nb, ISM_COLL_REDUCE, ISM_LVL_INTRA, &iv, 0, bytes, dt->size,
                               (int)commute, in, rep ? o : NULL);
    if (!rc && rep)
        rc = ism_coll_nb_phase(nb, ISM_COLL_ALLREDUCE, ISM_LVL_WAN, &wv, 0, bytes, dt->size,
                               (int)commute, o, o);
    if (!rc)
        rc = ism_coll_nb_phase(nb, ISM_COLL_BCAST, ISM_LVL_INTRA, &iv, 0, bytes, dt->size, 1,
                               rep ? o : NULL, rep ? NULL : o);
    return launch(nb, rc, dt, out);
}

int ism_coll_ireduce(const void *sbuf, void *rbuf, int count, ism_dt *dt, ism_op *op, int root,
                     ism_comm *c, ism_req **out)
{
    if (one_site(c))
        return site(ISM_SITE_REDUCE, sbuf, rbuf, count, dt, op, root, c, out);
    int64_t bytes = (int64_t)count * dt->size, commute = !op->user || op->commute;
    int why;
    ism_coll_nb *nb = reduction(c, bytes, dt, op, &why);
    if (!nb)
        return why;
    int me_root = c->rank == root, wroot = 0;
    int lroot = ism.lay.site == c->site_of[root] ? c->l_of[root] : 0;
    char *in = input(sbuf, rbuf, dt), *o = me_root ? at(rbuf, dt) : NULL, *part = NULL;
    ism_coll_view iv = ism_coll_intra_view(c), wv;
    int rc = wan(nb, root, &wv, &wroot), rep = !rc && wv.me >= 0;
    /* a site's partial on its way to the root, and a type's packed bytes, in own */
    if (!rc)
        rc = packed_red(nb, sbuf, rbuf, count, dt, me_root || rep, &in, me_root ? &o : &part);
    if (me_root)
        part = o;
    if (!rc)
        rc = ism_coll_nb_phase(nb, ISM_COLL_REDUCE, ISM_LVL_INTRA, &iv, lroot, bytes, dt->size,
                               (int)commute, in, c->lrank == lroot ? part : NULL);
    if (!rc && rep)
        rc = ism_coll_nb_phase(nb, ISM_COLL_REDUCE, ISM_LVL_WAN, &wv, wroot, bytes, dt->size,
                               (int)commute, part, o);
    return launch(nb, rc, dt, out);
}


int ism_coll_ibcast(void *buf, int count, ism_dt *dt, int root, ism_comm *c, ism_req **out)
{
    if (one_site(c))
        return site(ISM_SITE_BCAST, NULL, buf, count, dt, NULL, root, c, out);
    int64_t bytes = (int64_t)count * dt->size;
    if (!takes(c, NULL) || bytes <= 0)
        return ISM_COLL_PASS;
    ism_coll_nb *nb = ism_coll_nb_new(c);
    if (!nb)
        return ISM_ERR_NO_MEM;
    int me_root = c->rank == root, wroot = 0;
    int lroot = ism.lay.site == c->site_of[root] ? c->l_of[root] : 0;
    ism_coll_view iv = ism_coll_intra_view(c), wv;
    int rc = wan(nb, root, &wv, &wroot);
    if (!rc && !dt->contig && !(nb->own = malloc((size_t)bytes)))
        rc = ISM_ERR_NO_MEM;
    char *p = rc ? NULL : ism_coll_nb_packed(nb, dt, buf, count, me_root, !me_root, nb->own);
    if (!rc && !p)
        rc = ISM_ERR_NO_MEM;
    /* segments on bytes (esize 1): members may name the bytes with types of other sizes */
    if (!rc && wv.me >= 0) /* the root's site's member and the other sites' leaders */
        rc = ism_coll_nb_phase(nb, ISM_COLL_BCAST, ISM_LVL_WAN, &wv, wroot, bytes, 1, 1,
                               me_root ? p : NULL, me_root ? NULL : p);
    if (!rc)
        rc = ism_coll_nb_phase(nb, ISM_COLL_BCAST, ISM_LVL_INTRA, &iv, lroot, bytes, 1, 1,
                               c->lrank == lroot ? p : NULL, c->lrank == lroot ? NULL : p);
    return launch(nb, rc, dt, out);
}

int ism_coll_ibarrier(ism_comm *c, ism_req **out)
{
    if (one_site(c))
        return site(ISM_SITE_BARRIER, NULL, NULL, 0, NULL, NULL, -1, c, out);
    if (!takes(c, NULL))
        return ISM_COLL_PASS;
    ism_coll_nb *nb = ism_coll_nb_new(c);
    if (!nb)
        return ISM_ERR_NO_MEM;
    ism_coll_view iv = ism_coll_intra_view(c), wv;
    int rc = wan(nb, -1, &wv, NULL); /* in, among the leaders, and out again */
    if (!rc)
        rc = ism_coll_nb_phase(nb, ISM_COLL_BARRIER, ISM_LVL_INTRA, &iv, 0, 0, 1, 1, NULL, NULL);
    if (!rc && wv.me >= 0)
        rc = ism_coll_nb_phase(nb, ISM_COLL_BARRIER, ISM_LVL_WAN, &wv, 0, 0, 1, 1, NULL, NULL);
    if (!rc)
        rc = ism_coll_nb_phase(nb, ISM_COLL_BARRIER, ISM_LVL_INTRA, &iv, 0, 0, 1, 1, NULL, NULL);
    return launch(nb, rc, NULL, out);
}

/* Whose sites' members are consecutive ranks: the blocks each site's leader holds after
 * the phase inside the site are one run of the result, and the sites' runs follow in the
 * order of their leaders, so the leaders' allgather places them whole. */
int ism_coll_iallgather(const void *sbuf, int scount, ism_dt *sdt, void *rbuf, int rcount,
                        ism_dt *rdt, ism_comm *c, ism_req **out)
{
    if (one_site(c)) {
        ism_coll_site a = {.coll = ISM_SITE_ALLGATHER, .n = c->size, .s = sbuf, .r = rbuf,
                           .scount = scount, .rcount = rcount, .root = -1, .sdt = sdt,
                           .rdt = rdt};
        return ism_coll_isite(&a, c, out);
    }
    int64_t b = (int64_t)rcount * rdt->size, total = b * c->size;
    int inplace = sbuf == ISM_IN_PLACE;
    if (!takes(c, NULL) || !c->site_runs || b <= 0)
        return ISM_COLL_PASS;
    ism_coll_nb *nb = ism_coll_nb_new(c);
    if (!nb)
        return ISM_ERR_NO_MEM;
    ism_coll_view iv = ism_coll_intra_view(c), wv;
    int rc = wan(nb, -1, &wv, NULL), rep = wv.me >= 0;
    /* packed copies where a type is not contiguous: the result, then my block */
    int sown = inplace ? !rdt->contig : !sdt->contig;
    int64_t need = (rdt->contig ? 0 : total) + (sown ? b : 0);
    if (!rc && need && !(nb->own = malloc((size_t)need)))
        rc = ISM_ERR_NO_MEM;
    char *o = NULL, *in = NULL;
    if (!rc) {
        char *mine = nb->own + (rdt->contig ? 0 : total);
        if (!(o = ism_coll_nb_packed(nb, rdt, rbuf, (int64_t)rcount * c->size, 0, 1, nb->own)))
            rc = ISM_ERR_NO_MEM;
        if (!inplace) /* my block in the receive type, in place */
            in = ism_coll_nb_packed(nb, sdt, (void *)(uintptr_t)sbuf, scount, 1, 0, mine);
        else if (rdt->contig)
            in = o + (int64_t)c->rank * b;
        else
            in = ism_coll_nb_packed(nb, rdt,
                                    (char *)rbuf + (int64_t)c->rank * rcount * rdt->extent,
                                    rcount, 1, 0, mine);
    }
    char *site = o + (int64_t)c->my_leader * b; /* my site's run of blocks */
    int64_t *blk = NULL;
    if (!rc)
        rc = ism_coll_nb_phase_blocks(nb, ISM_COLL_ALLGATHER, ISM_LVL_INTRA, &iv, b, NULL,
                                      b * c->lsize, 1, 1, in, site);
    if (!rc && rep && !(blk = malloc(sizeof *blk * (size_t)wv.p)))
        rc = ISM_ERR_NO_MEM;
    for (int i = 0; !rc && rep && i < wv.p; i++) { /* each site's run */
        int st = c->site_of[wv.members[i]], k = 0;
        for (int r = 0; r < c->size; r++)
            k += c->site_of[r] == st;
        blk[i] = b * k;
    }
    if (!rc && rep)
        rc = ism_coll_nb_phase_blocks(nb, ISM_COLL_ALLGATHER, ISM_LVL_WAN, &wv, 0, blk, total, 1,
                                      1, site, o);
    free(blk);
    if (!rc)
        rc = ism_coll_nb_phase(nb, ISM_COLL_BCAST, ISM_LVL_INTRA, &iv, 0, total, 1, 1,
                               rep ? o : NULL, rep ? NULL : o);
    return launch(nb, rc, rdt, out);
}

/* Whose sites' members are consecutive ranks (twolevel.c's scan_sites): a scan inside each
 * site; the site totals' exclusive scan among the sites' last members; that prefix
 * broadcast inside the site and put on the left of each member's result. */
int ism_coll_iscan(const void *sbuf, void *rbuf, int count, ism_dt *dt, ism_op *op,
                   int exclusive, ism_comm *c, ism_req **out)
{
    if (one_site(c))
        return site(exclusive ? ISM_SITE_EXSCAN : ISM_SITE_SCAN, sbuf, rbuf, count, dt, op, -1,
                    c, out);
    int64_t bytes = (int64_t)count * dt->size, commute = !op->user || op->commute;
    int why;
    if (!c->site_runs || !dt->contig)
        return ISM_COLL_PASS;
    ism_coll_nb *nb = reduction(c, bytes, dt, op, &why);
    if (!nb)
        return why;
    char *in = input(sbuf, rbuf, dt), *o = at(rbuf, dt), *tot, *pre;
    int last = c->lrank == c->lsize - 1, first_site = 0;
    ism_coll_view iv = ism_coll_intra_view(c), wv;
    int rc = (nb->own = malloc(2 * (size_t)bytes)) ? 0 : ISM_ERR_NO_MEM;
    tot = nb->own;
    pre = tot + bytes;
    if (!rc && !(nb->wan = malloc(sizeof(int) * (size_t)ism.lay.nsites)))
        rc = ISM_ERR_NO_MEM;
    if (!rc) {
        wv = ism_coll_wan_view(c, -1, 1, nb->wan, NULL); /* each site's last member */
        first_site = c->site_of[wv.members[0]] == ism.lay.site;
    }
    if (!rc && last && exclusive) /* my input, before an in-place scan replaces it */
        rc = ism_coll_nb_local(nb, ISM_CA_COPY, in, tot, bytes);
    if (!rc) /* (an exscan alone at its site leaves its result to the prefix below: rank 0's
                is left untouched, as MPICH does) */
        rc = ism_coll_nb_phase(nb, exclusive ? ISM_COLL_EXSCAN : ISM_COLL_SCAN, ISM_LVL_INTRA,
                               &iv, 0, bytes, dt->size, (int)commute, in,
                               exclusive && c->lsize == 1 ? NULL : o);
    if (!rc && last && !exclusive) /* the site's total */
        rc = ism_coll_nb_local(nb, ISM_CA_COPY, o, tot, bytes);
    else if (!rc && last && c->lsize > 1)
        rc = ism_coll_nb_local(nb, ISM_CA_RED, o, tot, bytes);
    if (!rc && last)
        rc = ism_coll_nb_phase(nb, ISM_COLL_EXSCAN, ISM_LVL_WAN, &wv, 0, bytes, dt->size,
                               (int)commute, tot, pre);
    if (!rc && !first_site) {
        int root = c->lsize - 1;
        rc = ism_coll_nb_phase(nb, ISM_COLL_BCAST, ISM_LVL_INTRA, &iv, root, bytes, dt->size, 1,
                               last ? pre : NULL, last ? NULL : pre);
        if (!rc)
            rc = exclusive && c->lrank == 0 ? ism_coll_nb_local(nb, ISM_CA_COPY, pre, o, bytes)
                                            : ism_coll_nb_local(nb, ISM_CA_RED, pre, o, bytes);
    }
    return launch(nb, rc, dt, out);
}

/* Whose sites' members are consecutive ranks (twolevel.c's rs_sites): the whole vector
 * reduced to each site's leader, a reduce-scatter among the leaders with each site's
 * share as its block (only the other sites' shares cross), each site's share scattered
 * inside the site. rcounts: elements per rank (read now only). */
int ism_coll_ireduce_scatter(const void *sbuf, void *rbuf, const int *rcounts, ism_dt *dt,
                             ism_op *op, ism_comm *c, ism_req **out)
{
    if (one_site(c)) {
        int64_t *v = malloc(sizeof *v * (size_t)c->size + 1);
        if (!v)
            return ISM_ERR_NO_MEM;
        for (int r = 0; r < c->size; r++)
            v[r] = rcounts[r];
        ism_coll_site a = {.coll = ISM_SITE_REDUCE_SCATTER, .n = c->size, .s = sbuf, .r = rbuf,
                           .root = -1, .rdt = dt, .op = op, .rcnt = v};
        int rc = ism_coll_isite(&a, c, out);
        free(v);
        return rc;
    }
    int64_t es = dt->size, total = 0, commute = !op->user || op->commute;
    for (int r = 0; r < c->size; r++)
        total += (int64_t)rcounts[r] * es;
    int why;
    if (!c->site_runs || !dt->contig)
        return ISM_COLL_PASS;
    ism_coll_nb *nb = reduction(c, total, dt, op, &why);
    if (!nb)
        return why;
    ism_coll_view iv = ism_coll_intra_view(c), wv;
    int rc = wan(nb, -1, &wv, NULL), lead = wv.me >= 0;
    int64_t *blk = rc ? NULL : malloc(sizeof *blk * (size_t)(wv.p + c->lsize)), *cnt, mine = 0;
    if (!rc && !blk)
        rc = ISM_ERR_NO_MEM;
    cnt = blk ? blk + wv.p : NULL;
    for (int i = 0; !rc && i < wv.p; i++) { /* each site's share */
        int st = c->site_of[wv.members[i]];
        blk[i] = 0;
        for (int r = 0; r < c->size; r++)
            blk[i] += c->site_of[r] == st ? (int64_t)rcounts[r] * es : 0;
        mine = st == ism.lay.site ? blk[i] : mine;
    }
    for (int l = 0; !rc && l < c->lsize; l++)
        cnt[l] = (int64_t)rcounts[c->c_of_l[l]] * es;
    char *in = input(sbuf, rbuf, dt), *o = at(rbuf, dt), *full = NULL, *share = NULL;
    if (!rc && lead && !(nb->own = malloc((size_t)(total + mine) + 1)))
        rc = ISM_ERR_NO_MEM;
    if (!rc && lead) {
        full = nb->own;
        share = full + total;
    }
    if (!rc)
        rc = ism_coll_nb_phase(nb, ISM_COLL_REDUCE, ISM_LVL_INTRA, &iv, 0, total, es,
                               (int)commute, in, full);
    if (!rc && lead)
        rc = ism_coll_nb_phase_blocks(nb, ISM_COLL_REDUCE_SCATTER, ISM_LVL_WAN, &wv, 0, blk,
                                      total, es, (int)commute, full, share);
    if (!rc)
        rc = ism_coll_nb_scatter(nb, &iv, 0, cnt, share, o);
    free(blk);
    return launch(nb, rc, dt, out);
}
