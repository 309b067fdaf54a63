/* nb_inter.c: an intercommunicator's collectives in flight (nb.c): MPI_Ibarrier,
 * MPI_Ibcast, MPI_Iallreduce, MPI_Ireduce, MPI_Ireduce_scatter(_block) and the data
 * movers (gather(v), scatter(v), allgather(v), alltoall(v,w)), never a coroutine.
 *
 * They run on the intercommunicator's hidden merged intracommunicator (both groups, the
 * low group first: core/intercomm.c), whose sequence numbers and tags they take: MPI
 * makes every member of both groups start an intercommunicator's collectives in one
 * order. The reductions and the broadcast are core/intercomm.c's shape as phases: the
 * group's own phases (inside each site of the group, among its sites, as nb_start.c's),
 * one message each way between the groups' rank 0 (or from and to the root), and the
 * group's broadcast. The data movers are one round of direct messages between the groups
 * (nb_move.c's exchange): any type, every block once over the WAN to its destination.
 *
 * Whether a collective runs here depends on its kind alone: every member takes the same
 * sequence number for it whatever its arguments (a rank of the root's group other than
 * the root passes no buffer that counts, and still takes one). A type that is not
 * contiguous moves packed, and a reduction applies its op to packed bytes (coll/exec.c's
 * redop), unpacked into the program's buffer at the end.
 */
#include <stdlib.h>

#include "nb.h"

/* Where each group's ranks sit in the merged communicator: the low group first. */
static int lbase(const ism_comm *ic) { return ic->low_first ? 0 : ic->size; }
static int rbase(const ism_comm *ic) { return ic->low_first ? ic->local_size : 0; }

/* The local group's views, members as merged ranks (kept in nb->ext): inside my site's
 * part of the group (iv), among the group's sites (wv, each site's leader, rank 0 at its
 * own), and the whole group in rank order (all: a non-commutative op over a group whose
 * sites' members are not consecutive ranks). */
typedef struct {
    ism_coll_view iv, wv, all;
    int lroot, wroot; /* rank 0's index in iv (at its site; else 0) and in wv */
} gviews;

static int group_views(ism_coll_nb *nb, ism_comm *ic, gviews *g)
{
    ism_comm *L = ic->local;
    int base = lbase(ic), n = L->lsize + ism.lay.nsites + L->size;
    int *m = malloc(sizeof(int) * (size_t)n);
    if (!m)
        return ISM_ERR_NO_MEM;
    nb->ext = m;
    nb->ext_free = free;
    int *w = m + L->lsize, *a = w + ism.lay.nsites;
    for (int i = 0; i < L->lsize; i++)
        m[i] = base + L->c_of_l[i];
    g->iv = (ism_coll_view){L->lsize, L->lrank, m};
    g->wroot = 0;
    g->wv = ism_coll_wan_view(L, 0, 0, w, &g->wroot);
    for (int i = 0; i < g->wv.p; i++)
        w[i] += base;
    for (int r = 0; r < L->size; r++)
        a[r] = base + r;
    g->all = (ism_coll_view){L->size, L->rank, a};
    g->lroot = ism.lay.site == L->site_of[0] ? L->l_of[0] : 0;
    return 0;
}

/* The group's reduction of in to its rank 0 (into part there; part is a site's partial
 * at the other members of wv, and unused elsewhere). */
static int group_reduce(ism_coll_nb *nb, ism_comm *ic, const gviews *g, int64_t bytes,
                        int64_t esize, int commute, char *in, char *part)
{
    if (!commute && !ic->local->site_runs) /* rank order over the whole group */
        return ism_coll_nb_phase(nb, ISM_COLL_REDUCE, ISM_LVL_WAN, &g->all, 0, bytes, esize, 0,
                                 in, ic->rank == 0 ? part : NULL);
    int rc = ism_coll_nb_phase(nb, ISM_COLL_REDUCE, ISM_LVL_INTRA, &g->iv, g->lroot, bytes, esize,
                               commute, in, g->iv.me == g->lroot ? part : NULL);
    if (!rc && g->wv.me >= 0)
        rc = ism_coll_nb_phase(nb, ISM_COLL_REDUCE, ISM_LVL_WAN, &g->wv, g->wroot, bytes, esize,
                               commute, part, ic->rank == 0 ? part : NULL);
    return rc;
}

/* The group's broadcast of buf from its rank 0: among its sites, then inside each. */
static int group_bcast(ism_coll_nb *nb, ism_comm *ic, const gviews *g, int64_t bytes, char *buf)
{
    int rc = 0, w0 = g->wv.me == g->wroot, l0 = g->iv.me == g->lroot;
    if (g->wv.me >= 0)
        rc = ism_coll_nb_phase(nb, ISM_COLL_BCAST, ISM_LVL_WAN, &g->wv, g->wroot, bytes, 1, 1,
                               w0 ? buf : NULL, w0 ? NULL : buf);
    if (!rc)
        rc = ism_coll_nb_phase(nb, ISM_COLL_BCAST, ISM_LVL_INTRA, &g->iv, g->lroot, bytes, 1, 1,
                               l0 ? buf : NULL, l0 ? NULL : buf);
    (void)ic;
    return rc;
}

/* One message to or from merged rank peer. */
static int one(ism_coll_nb *nb, int kind, int peer, char *buf, int64_t len)
{
    nb_xfer x = {kind, peer, buf, NULL, len};
    return ism_coll_nb_direct(nb, &x, 1);
}

static int launch(ism_coll_nb *nb, int rc, ism_dt *dt, ism_comm *ic, ism_req **out)
{
    if (rc) {
        ism_coll_nb_discard(nb);
        return rc;
    }
    if ((rc = ism_coll_nb_launch(nb, dt, out)))
        return rc;
    (*out)->comm = ic; /* its errors are the intercommunicator's */
    return 0;
}

int ism_coll_inter_ibarrier(ism_comm *ic, ism_req **out)
{
    int rc = ism_coll_ibarrier(ic->merged, out); /* in flight, or the vendor's on one site */
    if (rc == ISM_COLL_PASS)
        return ISM_ERR_INTERN; /* a merged communicator is neither: not a coroutine's */
    if (!rc)
        (*out)->comm = ic;
    return rc;
}


int ism_coll_inter_ibcast(void *buf, int64_t count, ism_dt *dt, int root, ism_comm *ic,
                          ism_req **out)
{
    ism_coll_nb *nb = ism_coll_nb_new(ic->merged);
    if (!nb)
        return ISM_ERR_NO_MEM;
    int rc = 0, sender = root == ISM_ROOT;
    int64_t bytes = root == ISM_PROC_NULL ? 0 : (int64_t)count * dt->size;
    if (bytes <= 0) /* (the signatures match: nothing moves anywhere) */
        return launch(nb, 0, NULL, ic, out);
    if (!dt->contig && !(nb->own = malloc((size_t)bytes)))
        rc = ISM_ERR_NO_MEM;
    char *p = rc ? NULL : ism_coll_nb_packed(nb, dt, buf, count, sender, !sender, nb->own);
    if (!rc && !p)
        rc = ISM_ERR_NO_MEM;
    gviews g;
    if (!rc && sender) /* to the other group's rank 0 */
        rc = one(nb, ISM_CA_SEND, rbase(ic), p, bytes);
    else if (!rc && !(rc = group_views(nb, ic, &g))) {
        if (ic->rank == 0)
            rc = one(nb, ISM_CA_RECV, rbase(ic) + root, p, bytes);
        if (!rc)
            rc = group_bcast(nb, ic, &g, bytes, p);
    }
    return launch(nb, rc, dt, ic, out);
}

/* The start both reductions share: nb with its op, or NULL (out of memory, or the tag in
 * use). */
static ism_coll_nb *reduction(ism_comm *ic, ism_dt *dt, ism_op *op)
{
    ism_coll_nb *nb = ism_coll_nb_new(ic->merged);
    if (nb && op && dt) {
        ism_coll_redop_init(&nb->red, op, dt);
        ism_op_hold(op); /* MPI_Op_free meanwhile only marks it (nb_free releases it) */
    }
    return nb;
}

/* The group's contribution reduced to its rank 0: own bytes laid out as [part | input
 * packed | result | extra], res (where the result of an allreduce goes, NULL: none) and
 * *xp (extra bytes of the caller's) set. */
static int reduce_in_group(ism_coll_nb *nb, ism_comm *ic, const void *sbuf, void *rbuf,
                           int64_t count, ism_dt *dt, int commute, int with_res,
                           int64_t extra, char **xp, const gviews *g, char **part, char **res)
{
    int64_t bytes = count * dt->size;
    int rep = g->wv.me >= 0 || (!commute && ic->rank == 0), packs = !dt->contig;
    int64_t need = (rep ? bytes : 0) + (packs ? bytes : 0) + (with_res && packs ? bytes : 0);
    if (need + extra && !(nb->own = malloc((size_t)(need + extra))))
        return ISM_ERR_NO_MEM;
    /* (offsets: own is NULL where nothing is needed) */
    int64_t at_in = rep ? bytes : 0, at_res = at_in + (packs ? bytes : 0);
    if (xp)
        *xp = extra ? nb->own + need : NULL;
    *part = rep ? nb->own : NULL;
    char *in = ism_coll_nb_packed(nb, dt, (void *)(uintptr_t)sbuf, count, 1, 0,
                        packs ? nb->own + at_in : NULL);
    if (with_res &&
        !(*res = ism_coll_nb_packed(nb, dt, rbuf, count, 0, 1, packs ? nb->own + at_res : NULL)))
        return ISM_ERR_NO_MEM;
    return group_reduce(nb, ic, g, bytes, dt->size, commute, in, *part);
}

int ism_coll_inter_iallreduce(const void *sbuf, void *rbuf, int64_t count, ism_dt *dt, ism_op *op,
                              ism_comm *ic, ism_req **out)
{
    int64_t bytes = (int64_t)count * dt->size;
    int commute = !op->user || op->commute;
    ism_coll_nb *nb = reduction(ic, dt, op);
    if (!nb)
        return ISM_ERR_NO_MEM;
    if (bytes <= 0)
        return launch(nb, 0, NULL, ic, out);
    gviews g;
    char *part = NULL, *res = NULL;
    int rc = group_views(nb, ic, &g);
    if (!rc)
        rc = reduce_in_group(nb, ic, sbuf, rbuf, count, dt, commute, 1, 0, NULL, &g, &part,
                             &res);
    if (!rc && ic->rank == 0) { /* the two groups' rank 0 swap their reductions */
        nb_xfer x[2] = {{ISM_CA_RECV, rbase(ic), res, NULL, bytes},
                        {ISM_CA_SEND, rbase(ic), part, NULL, bytes}};
        rc = ism_coll_nb_direct(nb, x, 2);
    }
    if (!rc)
        rc = group_bcast(nb, ic, &g, bytes, res);
    return launch(nb, rc, dt, ic, out);
}

int ism_coll_inter_ireduce(const void *sbuf, void *rbuf, int64_t count, ism_dt *dt, ism_op *op,
                           int root, ism_comm *ic, ism_req **out)
{
    int getter = root == ISM_ROOT, rc = 0;
    ism_coll_nb *nb = reduction(ic, getter || root == ISM_PROC_NULL ? NULL : dt, op);
    if (!nb)
        return ISM_ERR_NO_MEM;
    int64_t bytes = root == ISM_PROC_NULL ? 0 : (int64_t)count * dt->size;
    if (bytes <= 0)
        return launch(nb, 0, NULL, ic, out);
    if (getter) { /* from the other group's rank 0 */
        if (!dt->contig && !(nb->own = malloc((size_t)bytes)))
            rc = ISM_ERR_NO_MEM;
        char *p = rc ? NULL : ism_coll_nb_packed(nb, dt, rbuf, count, 0, 1, nb->own);
        rc = rc ? rc : p ? one(nb, ISM_CA_RECV, rbase(ic), p, bytes) : ISM_ERR_NO_MEM;
        return launch(nb, rc, dt, ic, out);
    }
    gviews g;
    char *part = NULL, *res = NULL;
    int commute = !op->user || op->commute;
    rc = group_views(nb, ic, &g);
    if (!rc)
        rc = reduce_in_group(nb, ic, sbuf, NULL, count, dt, commute, 0, 0, NULL, &g, &part,
                             &res);
    if (!rc && ic->rank == 0)
        rc = one(nb, ISM_CA_SEND, rbase(ic) + root, part, bytes);
    return launch(nb, rc, dt, ic, out);
}

/* Each group reduces its vectors (its receive counts' total, which the standard makes the
 * same in both groups) to its rank 0, the two rank 0 swap the reductions, and each group
 * scatters the one it got by its own receive counts (rcounts: the local group's, read at
 * the call only), as core/intercomm.c did blocking. */
int ism_coll_inter_ireduce_scatter(const void *sbuf, void *rbuf, const int64_t *rcounts,
                                   ism_dt *dt, ism_op *op, ism_comm *ic, ism_req **out)
{
    ism_coll_nb *nb = reduction(ic, dt, op);
    if (!nb)
        return ISM_ERR_NO_MEM;
    int n = ic->local_size, me = ic->rank, commute = !op->user || op->commute;
    int64_t es = dt->size, tot = 0, *cnt = malloc(sizeof *cnt * (size_t)(n + 1));
    if (!cnt) {
        ism_coll_nb_discard(nb);
        return ISM_ERR_NO_MEM;
    }
    for (int r = 0; r < n; r++) {
        cnt[r] = rcounts[r] * es;
        tot += rcounts[r];
    }
    int64_t bytes = tot * es, mine = cnt[me];
    if (bytes <= 0) {
        free(cnt);
        return launch(nb, 0, NULL, ic, out);
    }
    gviews g;
    char *part = NULL, *res = NULL, *x = NULL;
    int64_t extra = (me == 0 ? bytes : 0) + (!dt->contig ? mine : 0);
    int rc = group_views(nb, ic, &g);
    if (!rc)
        rc = reduce_in_group(nb, ic, sbuf, NULL, tot, dt, commute, 0, extra, &x, &g, &part,
                             &res);
    char *got = me == 0 ? x : NULL, *o = NULL;
    if (!rc)
        o = ism_coll_nb_packed(nb, dt, rbuf, rcounts[me], 0, 1,
                     dt->contig ? NULL : x + (me == 0 ? bytes : 0));
    if (!rc && !o && !dt->contig)
        rc = ISM_ERR_NO_MEM;
    if (!rc && me == 0) { /* the two groups' rank 0 swap their reductions */
        nb_xfer xs[2] = {{ISM_CA_RECV, rbase(ic), got, NULL, bytes},
                         {ISM_CA_SEND, rbase(ic), part, NULL, bytes}};
        rc = ism_coll_nb_direct(nb, xs, 2);
    }
    if (!rc) /* over the whole group in rank order: the blocks lie in that order */
        rc = ism_coll_nb_scatter(nb, &g.all, 0, cnt, got, o);
    free(cnt);
    return launch(nb, rc, dt, ic, out);
}

/* The merged ranks of the remote group, in its rank order. */
static int *remote_ranks(const ism_comm *ic)
{
    int *v = malloc(sizeof(int) * (size_t)(ic->size + 1));
    for (int r = 0; v && r < ic->size; r++)
        v[r] = rbase(ic) + r;
    return v;
}

static int exchanged(int rc, ism_comm *ic, ism_req **out)
{
    if (!rc)
        (*out)->comm = ic;
    return rc;
}

int ism_coll_inter_igatherv(const void *one_buf, int64_t ocount, ism_dt *odt, void *many,
                            const int64_t *mcounts, const int64_t *mdispls, ism_dt *mdt,
                            int root, int scatter, ism_comm *ic, ism_req **out)
{
    ism_comm *m = ic->merged;
    if (root == ISM_PROC_NULL) /* nothing to move, a sequence number to take */
        return exchanged(ism_coll_iexchange64(NULL, 0, NULL, NULL, NULL, NULL, NULL, 0, NULL,
                                              NULL, NULL, NULL, 0, m, out),
                         ic, out);
    if (root != ISM_ROOT) { /* one block to or from the root */
        int peer = rbase(ic) + root;
        ptrdiff_t zero = 0;
        void *b = (void *)(uintptr_t)one_buf;
        return exchanged(scatter ? ism_coll_iexchange64(NULL, 0, NULL, NULL, NULL, NULL, b, 1,
                                                        &peer, &ocount, &zero, &odt, 0, m, out)
                                 : ism_coll_iexchange64(b, 1, &peer, &ocount, &zero, &odt, NULL,
                                                        0, NULL, NULL, NULL, NULL, 0, m, out),
                         ic, out);
    }
    int n = ic->size, *peers = remote_ranks(ic), rc;
    ptrdiff_t *d = malloc(sizeof *d * (size_t)(n + 1));
    ism_dt **t = malloc(sizeof *t * (size_t)(n + 1));
    if (!peers || !d || !t)
        rc = ISM_ERR_NO_MEM;
    else {
        for (int r = 0; r < n; r++) {
            d[r] = (ptrdiff_t)(mdispls[r] * (int64_t)mdt->extent);
            t[r] = mdt;
        }
        rc = scatter ? ism_coll_iexchange64(many, n, peers, mcounts, d, t, NULL, 0, NULL, NULL,
                                            NULL, NULL, 0, m, out)
                     : ism_coll_iexchange64(NULL, 0, NULL, NULL, NULL, NULL, many, n, peers,
                                            mcounts, d, t, 0, m, out);
    }
    free(peers);
    free(d);
    free(t);
    return exchanged(rc, ic, out);
}

int ism_coll_inter_ialltoallw(const void *sbuf, const int64_t *scnt, const ptrdiff_t *sdsp,
                              ism_dt *const *st, void *rbuf, const int64_t *rcnt,
                              const ptrdiff_t *rdsp, ism_dt *const *rt, ism_comm *ic,
                              ism_req **out)
{
    int *peers = remote_ranks(ic);
    if (!peers)
        return ISM_ERR_NO_MEM;
    int rc = ism_coll_iexchange64(sbuf, ic->size, peers, scnt, sdsp, st, rbuf, ic->size, peers,
                                  rcnt, rdsp, rt, 0, ic->merged, out);
    free(peers);
    return exchanged(rc, ic, out);
}
