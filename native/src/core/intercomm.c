/* intercomm.c: intercommunicators: two disjoint groups whose point-to-point goes across.
 *
 * An intercommunicator keeps the remote group in the tables point-to-point uses (g_of,
 * l_of, c_of_g, c_of_l), so sends and receives work unchanged: a peer rank names a
 * remote process, at this site through the vendor or at another site through frames.
 * Its vendor communicator holds the members of both groups at this site. A hidden
 * intracommunicator of both groups (`merged`: the group whose first member has the lower
 * global rank first) carries the collectives, in flight (coll/nb_inter.c: the local
 * group's own phases, the message between the groups, on merged's ranks); one of the local
 * group alone (`local`) gives them the group's sites and ranks.
 * Context ids: each group agrees on a candidate, the leaders swap candidates, and the
 * larger one, with the next two for the hidden communicators, is reserved by every
 * member of both groups.
 */
#include <stdlib.h>
#include <string.h>

#include "core.h"

enum { TAG_IC_HDR = 40, TAG_IC_LIST };

static int *copy(const int *v, int n)
{
    int *c = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    if (c && n > 0)
        memcpy(c, v, sizeof(int) * (size_t)n);
    return c;
}

/* Vendor communicator of the members of list[0..n) at this site, in list order;
 * collective over those members only. */
static int site_vcomm(const int *list, int n, int tag, ism_vh *out)
{
    int *vr = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1)), k = 0;
    if (!vr)
        return ISM_ERR_NO_MEM;
    for (int i = 0; i < n; i++)
        if (ism.site_of_g[list[i]] == ism.lay.site)
            vr[k++] = list[i] - ism.lay.site_off[ism.lay.site];
    ism_nbc_settle_creations(ism.vapp);
    int rc = ism.be->comm_create_group(ism.vapp, vr, k, tag, out);
    free(vr);
    return rc;
}

/* Build the intercommunicator with context ctx (ctx+2 for the hidden one) from the
 * local group lg (my rank me) and the remote group rg. A duplicate (from: the original)
 * duplicates the original's vendor communicators instead of creating them from groups,
 * which yields inside MPI_Comm_idup. */
static int build(uint32_t ctx, const int *lg, int ln, int me, const int *rg, int rn,
                 int low_first, const ism_comm *from, ism_comm **out)
{
    int n = ln + rn, rc;
    int *u = malloc(sizeof(int) * (size_t)n);
    if (!u)
        return ISM_ERR_NO_MEM;
    memcpy(u, low_first ? lg : rg, sizeof(int) * (size_t)(low_first ? ln : rn));
    memcpy(u + (low_first ? ln : rn), low_first ? rg : lg,
           sizeof(int) * (size_t)(low_first ? rn : ln));
    ism_vh v, vm;
    rc = from ? ism_vendor_dup(from->vcomm, &v) : site_vcomm(u, n, (int)((ctx >> 1) & 0x7fff), &v);
    if (rc) {
        free(u);
        return rc;
    }
    if ((rc = ism_vendor_dup(v, &vm))) {
        ism.be->comm_free(&v);
        free(u);
        return rc;
    }
    ism_comm *m = ism_comm_new(n, u, ctx + 2, vm, &rc);
    free(u);
    ism_comm *c = calloc(1, sizeof *c);
    if (!m || !c) {
        if (m)
            ism_comm_free(m);
        else
            ism.be->comm_free(&vm);
        ism.be->comm_free(&v);
        free(c);
        return rc ? rc : ISM_ERR_NO_MEM;
    }
    ism_comm_register(m);
    /* the merged communicator's second vendor communicator, made here where every member at
     * this site makes it at the same point: its collectives in flight (coll/nb_inter.c) send
     * to peers at the site on it, and must not make it in a nonblocking start */
    if (m->lsize > 1 && (rc = ism_comm_add_vcoll(m))) {
        ism_comm_free(m);
        ism.be->comm_free(&v);
        free(c);
        return rc;
    }
    /* the local group alone, for the site-local halves of intercommunicator collectives */
    ism_vh vl;
    ism_comm *lc = NULL;
    rc = from ? ism_vendor_dup(from->local->vcomm, &vl)
              : site_vcomm(lg, ln, (int)(((ctx + 4) >> 1) & 0x7fff), &vl);
    if (!rc && !(lc = ism_comm_new(ln, lg, ctx + 4, vl, &rc)))
        ism.be->comm_free(&vl);
    if (!lc) {
        ism_comm_free(m);
        ism.be->comm_free(&v);
        free(c);
        return rc ? rc : ISM_ERR_NO_MEM;
    }
    ism_comm_register(lc);
    /* point-to-point tables: the remote group; vendor ranks index the union at this site */
    c->ctx = ctx;
    c->is_inter = 1;
    c->rank = me;
    c->size = rn;
    c->local_size = ln;
    c->local_g = copy(lg, ln);
    c->g_of = copy(rg, rn);
    c->l_of = malloc(sizeof(int) * (size_t)(rn > 0 ? rn : 1));
    c->c_of_g = malloc(sizeof(int) * (size_t)ism.lay.gsize);
    c->c_of_l = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    c->site_of = malloc(sizeof(int) * (size_t)(rn > 0 ? rn : 1));
    c->leaders = malloc(sizeof(int) * (size_t)ism.lay.nsites);
    if (!c->local_g || !c->g_of || !c->l_of || !c->c_of_g || !c->c_of_l || !c->site_of ||
        !c->leaders) {
        ism_comm_free(lc);
        ism_comm_free(m);
        ism.be->comm_free(&v);
        ism_comm_release(c);
        return ISM_ERR_NO_MEM;
    }
    for (int i = 0; i < ism.lay.gsize; i++)
        c->c_of_g[i] = -1;
    for (int s = 0; s < ism.lay.nsites; s++)
        c->leaders[s] = -1;
    for (int r = 0; r < rn; r++)
        c->c_of_g[rg[r]] = r;
    /* the union at this site, in the merged order: its vendor ranks */
    int k = 0;
    c->lrank = -1;
    for (int i = 0; i < m->size; i++) {
        int g = m->g_of[i];
        if (ism.site_of_g[g] != ism.lay.site)
            continue;
        int r = c->c_of_g[g];
        c->c_of_l[k] = r; /* -1 for members of my own group */
        if (r >= 0)
            c->l_of[r] = k;
        if (g == ism.grank)
            c->lrank = k;
        k++;
    }
    c->lsize = k;
    c->nleaders = 0;
    for (int r = 0; r < rn; r++) {
        c->site_of[r] = ism.site_of_g[rg[r]];
        if (c->site_of[r] != ism.lay.site)
            c->l_of[r] = -1;
        if (c->leaders[c->site_of[r]] < 0) {
            c->leaders[c->site_of[r]] = r;
            c->nleaders++;
        }
    }
    c->my_leader = -1;
    c->all_local = 0; /* never take intracommunicator shortcuts */
    c->vcomm = v;
    c->merged = m;
    c->local = lc;
    c->low_first = low_first;
    c->errh = &ism_errh_fatal;
    ism_comm_register(c);
    *out = c;
    return 0;
}

int ism_intercomm_create(ism_comm *L, int lleader, ism_comm *P, int rleader, int tag,
                         ism_comm **out)
{
    uint32_t cand = 0;
    int rc = ism_ctx_agree(L, &cand);
    if (rc)
        return rc;
    /* the leaders swap (candidate, group size, members) through the peer communicator */
    int hdr[2] = {(int)cand, L->size}, rhdr[2] = {0, 0};
    int *rg = NULL;
    if (L->rank == lleader) {
        ism_req *a, *b;
        rc = ism_irecv(rhdr, 2, ISM_DT_INT, rleader, tag, P, P->ctx, &a);
        if (!rc)
            rc = ism_isend(hdr, 2, ISM_DT_INT, rleader, tag, P, P->ctx, ISM_MODE_STD, &b);
        if (!rc) {
            rc = ism_wait_free(a);
            int r2 = ism_wait_free(b);
            rc = rc ? rc : r2;
        }
    }
    int bad = rc != 0;
    int rc2 = ism_bcast(&bad, 1, ISM_DT_INT, lleader, L);
    if (rc || rc2 || bad)
        return rc ? rc : rc2 ? rc2 : ISM_ERR_OTHER;
    if ((rc = ism_bcast(rhdr, 2, ISM_DT_INT, lleader, L)))
        return rc;
    if (rhdr[1] <= 0 || !(rg = malloc(sizeof(int) * (size_t)rhdr[1])))
        return rhdr[1] <= 0 ? ISM_ERR_INTERN : ISM_ERR_NO_MEM;
    if (L->rank == lleader) {
        ism_req *a, *b;
        rc = ism_irecv(rg, rhdr[1], ISM_DT_INT, rleader, tag, P, P->ctx, &a);
        if (!rc)
            rc = ism_isend(L->g_of, L->size, ISM_DT_INT, rleader, tag, P, P->ctx, ISM_MODE_STD,
                           &b);
        if (!rc) {
            rc = ism_wait_free(a);
            int r2 = ism_wait_free(b);
            rc = rc ? rc : r2;
        }
    }
    if (!rc)
        rc = ism_bcast(rg, rhdr[1], ISM_DT_INT, lleader, L);
    uint32_t ctx = cand > (uint32_t)rhdr[0] ? cand : (uint32_t)rhdr[0];
    ism_ctx_reserve(ctx, 3);
    for (int r = 0; !rc && r < rhdr[1]; r++)
        if (rg[r] < 0 || rg[r] >= ism.lay.gsize || L->c_of_g[rg[r]] >= 0)
            rc = ISM_ERR_GROUP; /* the groups must be disjoint */
    /* which group comes first in the hidden communicators: decided from the two member
     * lists, which every member of both groups now has (the peer communicator and the
     * remote leader mean something at the leaders only) */
    int low_first = L->g_of[0] < rg[0];
    if (!rc)
        rc = build(ctx, L->g_of, L->size, L->rank, rg, rhdr[1], low_first, NULL, out);
    if (!rc)
        (*out)->errh = L->errh;
    free(rg);
    return rc;
}

int ism_intercomm_dup(ism_comm *ic, ism_comm **out)
{
    uint32_t ctx;
    int rc = ism_ctx_agree_n(ic->merged, 3, &ctx);
    if (rc)
        return rc;
    rc = build(ctx, ic->local_g, ic->local_size, ic->rank, ic->g_of, ic->size, ic->low_first, ic,
               out);
    if (!rc)
        (*out)->errh = ic->errh;
    return rc;
}

/* Split (MPI 3.1 §6.4.2): the members of each group with one color form the local group
 * of a new intercommunicator, the members of the other group with that color its remote
 * group; a color present in one group only gives no communicator. Every member of both
 * groups learns every (color, key) over the hidden communicator of both groups, where
 * each group's members stand in their rank order. MPI_Comm_create on an
 * intercommunicator is this split with color "in the group" and key = rank in it. */
int ism_intercomm_split(ism_comm *ic, int color, int key, ism_comm **out)
{
    *out = NULL;
    ism_comm *m = ic->merged;
    uint32_t ctx;
    int rc = ism_ctx_agree_n(m, 3, &ctx);
    if (rc)
        return rc;
    int mine[2] = {color, key};
    int *all = malloc(sizeof(int) * 2 * (size_t)m->size);
    /* prank: the index in m, whose groups each stand in rank order */
    ism_keyed *lm = malloc(sizeof *lm * (size_t)m->size), *rm = lm ? lm + ic->local_size : NULL;
    int *lg = malloc(sizeof(int) * (size_t)m->size), *rg = lg ? lg + ic->local_size : NULL;
    if (!all || !lm || !lg) {
        free(all);
        free(lm);
        free(lg);
        return ISM_ERR_NO_MEM;
    }
    rc = ism_allgather(mine, all, 2, ISM_DT_INT, m);
    /* m holds the group whose first member has the lower global rank first */
    int first_n = ic->low_first ? ic->local_size : ic->size;
    int ln = 0, rn = 0, me = -1;
    for (int i = 0; !rc && color >= 0 && i < m->size; i++) {
        if (all[2 * i] != color)
            continue;
        int in_first = i < first_n, local = in_first == (ic->low_first != 0);
        ism_keyed x = {all[2 * i + 1], i};
        if (local)
            lm[ln++] = x;
        else
            rm[rn++] = x;
    }
    free(all);
    qsort(lm, (size_t)ln, sizeof *lm, ism_keyed_cmp);
    qsort(rm, (size_t)rn, sizeof *rm, ism_keyed_cmp);
    for (int i = 0; i < ln; i++) {
        lg[i] = m->g_of[lm[i].prank];
        if (lg[i] == ism.grank)
            me = i;
    }
    for (int i = 0; i < rn; i++)
        rg[i] = m->g_of[rm[i].prank];
    free(lm);
    if (!rc && ln > 0 && rn > 0 && me >= 0) {
        rc = build(ctx, lg, ln, me, rg, rn, lg[0] < rg[0], NULL, out);
        if (!rc)
            (*out)->errh = ic->errh;
    }
    free(lg);
    return rc;
}

/* The group with high = false comes first; equal: the order of the hidden communicator. */
int ism_intercomm_merge(ism_comm *ic, int high, ism_comm **out)
{
    ism_comm *m = ic->merged;
    int *hs = malloc(sizeof(int) * (size_t)m->size);
    int *list = malloc(sizeof(int) * (size_t)m->size);
    if (!hs || !list) {
        free(hs);
        free(list);
        return ISM_ERR_NO_MEM;
    }
    high = high != 0;
    int rc = ism_allgather(&high, hs, 1, ISM_DT_INT, m);
    uint32_t ctx = 0;
    if (!rc)
        rc = ism_ctx_agree(m, &ctx);
    if (rc) {
        free(hs);
        free(list);
        return rc;
    }
    /* the first group in m has size (low_first ? local : remote) */
    int first_n = ic->low_first ? ic->local_size : ic->size;
    int h_first = hs[0], h_second = hs[m->size - 1];
    int swap = h_first && !h_second;
    int k = 0;
    for (int i = 0; i < m->size; i++)
        if ((i < first_n) != swap)
            list[k++] = m->g_of[i];
    for (int i = 0; i < m->size; i++)
        if ((i < first_n) == swap)
            list[k++] = m->g_of[i];
    free(hs);
    ism_vh v;
    rc = site_vcomm(list, m->size, (int)((ctx >> 1) & 0x7fff), &v);
    if (rc) {
        free(list);
        return rc;
    }
    ism_comm *c = ism_comm_new(m->size, list, ctx, v, &rc);
    free(list);
    if (!c) {
        ism.be->comm_free(&v);
        return rc;
    }
    c->errh = ic->errh;
    ism_comm_register(c);
    *out = c;
    return 0;
}
