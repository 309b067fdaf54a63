/* coll_general.c: two-level gather, scatter, allgather and all-to-all for any
 * communicator layout and any datatype.
 *
 * Data crosses sites as packed bytes (the type map's data in order, native layout, no
 * holes: ism_dt_pack), so per-rank types may
 * differ as long as signatures match, as MPI allows. Each collective gathers its site's
 * part at one rank with a vendor gatherv of bytes, moves one message per pair of sites
 * between those ranks, and spreads the result with a vendor scatterv or bcast. Every
 * rank unpacks into its own buffer with its own type. A communicator held entirely at
 * this site is passed to the vendor unchanged (its local order is its rank order).
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

static ism_vh vh(const ism_dt *d) { return d ? d->v : ism.be->datatype_null; }

/* Pack count elements of d at buf into out (n bytes): a contiguous type is one memcpy,
 * any other goes through the type map (datatype.c). */
static int pack(const void *buf, int count, ism_dt *d, char *out, int n)
{
    if (!n)
        return 0;
    if (ism_dt_is_contig(d))
        memcpy(out, (const char *)buf + d->contig_off, (size_t)n);
    else
        ism_dt_pack(d, buf, count, out);
    return 0;
}

static int unpack(const char *in, int n, void *buf, int count, ism_dt *d)
{
    if (!n)
        return 0;
    if ((size_t)n != (size_t)count * (size_t)d->size)
        return ISM_ERR_TRUNCATE;
    if (ism_dt_is_contig(d))
        memcpy((char *)buf + d->contig_off, in, (size_t)n);
    else
        ism_dt_unpack(d, in, buf, count);
    return 0;
}

static int bytes_of(int count, const ism_dt *d, int *out)
{
    size_t n = (size_t)(count > 0 ? count : 0) * (size_t)(d ? d->size : 0);
    if (n > INT_MAX)
        return ISM_ERR_COUNT; /* vendor byte counts are int */
    *out = (int)n;
    return 0;
}

static void *at(const void *buf, int displ, const ism_dt *d)
{
    return (char *)buf + (ptrdiff_t)displ * (ptrdiff_t)d->extent;
}

/* Comm ranks of site s's members in comm-rank order (= their order in the vendor
 * communicator of that site). */
static int site_members(const ism_comm *c, int s, int *out)
{
    int n = 0;
    for (int r = 0; r < c->size; r++)
        if (c->site_of[r] == s)
            out[n++] = r;
    return n;
}

/* Displacements of the blocks of sizes n[0..k) laid end to end; returns the total or -1
 * when it does not fit an int. */
static long prefix(const int *n, int k, int *displ)
{
    long t = 0;
    for (int i = 0; i < k; i++) {
        displ[i] = (int)t;
        t += n[i];
        if (t > INT_MAX)
            return -1;
    }
    return t;
}

/* Site-local gather of one int per member to local rank lroot (sizes of what follows). */
static int gather_int(int v, int *all, int lroot, ism_comm *c)
{
    int *ones = NULL, *dis = NULL;
    if (c->lrank == lroot) {
        ones = malloc(sizeof(int) * (size_t)c->lsize);
        dis = malloc(sizeof(int) * (size_t)c->lsize);
        if (!ones || !dis) {
            free(ones);
            free(dis);
            return ISM_ERR_NO_MEM;
        }
        for (int i = 0; i < c->lsize; i++) {
            ones[i] = 1;
            dis[i] = i;
        }
    }
    ism_vh q = 0;
    int rc = ism.be->igatherv(&v, 1, ISM_DT_INT->v, all, ones, dis, ISM_DT_INT->v, lroot, c->vcomm,
                              &q);
    rc = ism_vwait(rc, &q);
    free(ones);
    free(dis);
    return rc;
}

/* Each member's byte count gathered at local rank lroot, with displacements laid end to
 * end; *total is their sum there (0 elsewhere). */
static int site_sizes(int mb, int lroot, ism_comm *c, int **lsz, int **ldis, long *total)
{
    *lsz = *ldis = NULL;
    *total = 0;
    if (c->lrank == lroot) {
        *lsz = malloc(sizeof(int) * (size_t)c->lsize);
        *ldis = malloc(sizeof(int) * (size_t)c->lsize);
        if (!*lsz || !*ldis)
            return ISM_ERR_NO_MEM;
    }
    int rc = gather_int(mb, *lsz, lroot, c);
    if (!rc && c->lrank == lroot && (*total = prefix(*lsz, c->lsize, *ldis)) < 0)
        rc = ISM_ERR_COUNT;
    return rc;
}

static int gather_bytes(const void *mine, int n, char *all, const int *sizes, const int *displs,
                        int lroot, ism_comm *c)
{
    ism_vh q = 0;
    int rc = ism.be->igatherv(mine, n, ISM_DT_BYTE->v, all, sizes, displs, ISM_DT_BYTE->v, lroot,
                              c->vcomm, &q);
    return ism_vwait(rc, &q);
}

/* Free per-site buffers and their array (either may be NULL). */
static void free_sites(char **v)
{
    for (int s = 0; v && s < ism.nsites; s++)
        free(v[s]);
    free(v);
}

static int wait_all(ism_req **reqs, int n, int rc)
{
    for (int i = 0; i < n; i++) {
        int r2 = ism_wait_free(reqs[i]);
        rc = rc ? rc : r2;
    }
    return rc;
}

/* ------------------------------------------------------------------ gather */

int ism_gatherv(const void *sbuf, int scount, ism_dt *sdt, void *rbuf, const int *rcounts,
                const int *displs, ism_dt *rdt, int root, ism_comm *c)
{
    if (c->all_local) {
        ism_vh q = 0;
        int rc = ism.be->igatherv(sbuf, scount, vh(sdt), rbuf, rcounts, displs, vh(rdt), root,
                                  c->vcomm, &q);
        return ism_vwait(rc, &q);
    }
    int rs = c->site_of[root], me_root = c->rank == root;
    int lroot = ism.site == rs ? c->l_of[root] : c->l_of[c->my_leader];
    int am_lroot = c->lrank == lroot;
    int mb = 0, rc = sbuf ? bytes_of(scount, sdt, &mb) : 0;
    char *mine = NULL, *site = NULL;
    int *lsz = NULL, *ldis = NULL, *mem = NULL;
    char **from = NULL;
    ism_req **reqs = NULL;
    if (rc)
        return rc;
    mine = malloc((size_t)mb + 1);
    if (!mine)
        return ISM_ERR_NO_MEM;
    if ((rc = pack(sbuf, scount, sdt, mine, mb)))
        goto out;
    long total;
    if ((rc = site_sizes(mb, lroot, c, &lsz, &ldis, &total)))
        goto out;
    if (am_lroot && !(site = malloc((size_t)total + 1))) {
        rc = ISM_ERR_NO_MEM;
        goto out;
    }
    if ((rc = gather_bytes(mine, mb, site, lsz, ldis, lroot, c)))
        goto out;
    if (am_lroot && !me_root) {
        rc = ism_xsend(site, (int)total, ISM_DT_BYTE, root, TAG_GATHER, c);
        goto out;
    }
    if (!me_root)
        goto out;
    /* the root: its own site's blocks, then one message from every other site */
    for (int k = 0; k < c->lsize && !rc; k++) {
        int r = c->c_of_l[k];
        if (r == root && !sbuf)
            continue; /* in place */
        if (lsz[k] != rcounts[r] * rdt->size)
            rc = ISM_ERR_TRUNCATE;
        else
            rc = unpack(site + ldis[k], lsz[k], at(rbuf, displs[r], rdt), rcounts[r], rdt);
    }
    mem = malloc(sizeof(int) * (size_t)c->size);
    from = calloc((size_t)ism.nsites, sizeof *from);
    reqs = calloc((size_t)ism.nsites, sizeof *reqs);
    if (!mem || !from || !reqs) {
        rc = rc ? rc : ISM_ERR_NO_MEM;
        goto out;
    }
    int nreq = 0;
    for (int s = 0; s < ism.nsites && !rc; s++) {
        if (s == rs || c->leaders[s] < 0)
            continue;
        int m = site_members(c, s, mem), b;
        long t = 0;
        for (int i = 0; i < m && !rc; i++) {
            rc = bytes_of(rcounts[mem[i]], rdt, &b);
            t += b;
        }
        if (rc || t > INT_MAX) {
            rc = rc ? rc : ISM_ERR_COUNT;
            break;
        }
        if (!(from[s] = malloc((size_t)t + 1))) {
            rc = ISM_ERR_NO_MEM;
            break;
        }
        rc = ism_irecv(from[s], (int)t, ISM_DT_BYTE, c->leaders[s], TAG_GATHER, c, c->ctx + 1,
                       &reqs[nreq++]);
    }
    rc = wait_all(reqs, nreq, rc);
    for (int s = 0; s < ism.nsites && !rc; s++) {
        if (!from[s])
            continue;
        int m = site_members(c, s, mem);
        size_t off = 0;
        for (int i = 0; i < m && !rc; i++) {
            int r = mem[i], b = rcounts[r] * rdt->size;
            rc = unpack(from[s] + off, b, at(rbuf, displs[r], rdt), rcounts[r], rdt);
            off += (size_t)b;
        }
    }
out:
    free_sites(from);
    free(reqs);
    free(mem);
    free(mine);
    free(site);
    free(lsz);
    free(ldis);
    return rc;
}

/* ------------------------------------------------------------------ scatter */

int ism_scatterv(const void *sbuf, const int *scounts, const int *displs, ism_dt *sdt, void *rbuf,
                 int rcount, ism_dt *rdt, int root, ism_comm *c)
{
    if (c->all_local) {
        ism_vh q = 0;
        int rc = ism.be->iscatterv(sbuf, scounts, displs, vh(sdt), rbuf, rcount, vh(rdt), root,
                                   c->vcomm, &q);
        return ism_vwait(rc, &q);
    }
    int rs = c->site_of[root], me_root = c->rank == root;
    int lroot = ism.site == rs ? c->l_of[root] : c->l_of[c->my_leader];
    int am_lroot = c->lrank == lroot;
    int mb = 0, rc = rbuf ? bytes_of(rcount, rdt, &mb) : 0, nreq = 0;
    char *mine = NULL, *site = NULL;
    int *lsz = NULL, *ldis = NULL, *mem = NULL;
    char **to = NULL;
    ism_req **reqs = NULL;
    if (rc)
        return rc;
    long total;
    if ((rc = site_sizes(mb, lroot, c, &lsz, &ldis, &total)))
        goto out;
    if ((am_lroot && !(site = malloc((size_t)total + 1))) || !(mine = malloc((size_t)mb + 1))) {
        rc = ISM_ERR_NO_MEM;
        goto out;
    }
    if (me_root) {
        mem = malloc(sizeof(int) * (size_t)c->size);
        to = calloc((size_t)ism.nsites, sizeof *to);
        reqs = calloc((size_t)ism.nsites, sizeof *reqs);
        if (!mem || !to || !reqs) {
            rc = ISM_ERR_NO_MEM;
            goto out;
        }
        for (int s = 0; s < ism.nsites && !rc; s++) {
            if (s == rs || c->leaders[s] < 0)
                continue;
            int m = site_members(c, s, mem), b;
            long t = 0;
            for (int i = 0; i < m && !rc; i++) {
                rc = bytes_of(scounts[mem[i]], sdt, &b);
                t += b;
            }
            if (rc || t > INT_MAX || !(to[s] = malloc((size_t)t + 1))) {
                rc = rc ? rc : t > INT_MAX ? ISM_ERR_COUNT : ISM_ERR_NO_MEM;
                break;
            }
            size_t off = 0;
            for (int i = 0; i < m && !rc; i++) {
                int r = mem[i];
                b = scounts[r] * sdt->size;
                rc = pack(at(sbuf, displs[r], sdt), scounts[r], sdt, to[s] + off, b);
                off += (size_t)b;
            }
            if (!rc)
                rc = ism_isend(to[s], (int)t, ISM_DT_BYTE, c->leaders[s], TAG_SCATTER, c,
                               c->ctx + 1, ISM_MODE_STD, &reqs[nreq++]);
        }
        /* this site's blocks, in local order; an in-place root sends itself nothing */
        for (int k = 0; k < c->lsize && !rc; k++) {
            int r = c->c_of_l[k];
            if (r == root && !rbuf)
                continue;
            if (lsz[k] != scounts[r] * sdt->size)
                rc = ISM_ERR_TRUNCATE;
            else
                rc = pack(at(sbuf, displs[r], sdt), scounts[r], sdt, site + ldis[k], lsz[k]);
        }
    } else if (am_lroot) {
        rc = ism_xrecv(site, (int)total, ISM_DT_BYTE, root, TAG_SCATTER, c);
    }
    if (!rc) {
        ism_vh q = 0;
        rc = ism.be->iscatterv(site, lsz, ldis, ISM_DT_BYTE->v, mine, mb, ISM_DT_BYTE->v, lroot,
                               c->vcomm, &q);
        rc = ism_vwait(rc, &q);
    }
    if (!rc && rbuf)
        rc = unpack(mine, mb, rbuf, rcount, rdt);
out:
    rc = wait_all(reqs, nreq, rc);
    free_sites(to);
    free(reqs);
    free(mem);
    free(mine);
    free(site);
    free(lsz);
    free(ldis);
    return rc;
}

/* ------------------------------------------------------------------ allgather */

int ism_allgatherv(const void *sbuf, int scount, ism_dt *sdt, void *rbuf, const int *rcounts,
                   const int *displs, ism_dt *rdt, ism_comm *c)
{
    int n = c->size, rc = 0, nreq = 0;
    if (c->all_local) {
        ism_vh q = 0;
        rc = ism.be->iallgatherv(sbuf, scount, vh(sdt), rbuf, rcounts, displs, vh(rdt), c->vcomm,
                                 &q);
        return ism_vwait(rc, &q);
    }
    int *sz = malloc(sizeof(int) * (size_t)n), *off = malloc(sizeof(int) * (size_t)n);
    int *lsz = malloc(sizeof(int) * (size_t)c->lsize), *ldis = malloc(sizeof(int) * (size_t)c->lsize);
    ism_req **reqs = calloc((size_t)ism.nsites * 2, sizeof *reqs);
    char *all = NULL, *site = NULL, *mine = NULL;
    if (!sz || !off || !lsz || !ldis || !reqs) {
        rc = ISM_ERR_NO_MEM;
        goto out;
    }
    for (int r = 0; r < n && !rc; r++)
        rc = bytes_of(rcounts[r], rdt, &sz[r]);
    long total = rc ? 0 : prefix(sz, n, off);
    if (rc || total < 0 || !(all = malloc((size_t)total + 1))) {
        rc = rc ? rc : total < 0 ? ISM_ERR_COUNT : ISM_ERR_NO_MEM;
        goto out;
    }
    /* my block goes straight to its place in the packed whole */
    if (sbuf) {
        int mb;
        if ((rc = bytes_of(scount, sdt, &mb)))
            goto out;
        if (mb != sz[c->rank]) {
            rc = ISM_ERR_TRUNCATE;
            goto out;
        }
        rc = pack(sbuf, scount, sdt, all + off[c->rank], mb);
    } else {
        rc = pack(at(rbuf, displs[c->rank], rdt), rcounts[c->rank], rdt, all + off[c->rank],
                  sz[c->rank]);
    }
    if (rc)
        goto out;
    {
        int lroot = c->l_of[c->my_leader];
        for (int k = 0; k < c->lsize; k++)
            lsz[k] = sz[c->c_of_l[k]];
        long st = prefix(lsz, c->lsize, ldis);
        if (st < 0 || !(site = malloc((size_t)st + 1)) ||
            !(mine = malloc((size_t)sz[c->rank] + 1))) {
            rc = st < 0 ? ISM_ERR_COUNT : ISM_ERR_NO_MEM;
            goto out;
        }
        memcpy(mine, all + off[c->rank], (size_t)sz[c->rank]);
        if ((rc = gather_bytes(mine, sz[c->rank], site, lsz, ldis, lroot, c)))
            goto out;
        if (c->rank == c->my_leader) {
            int *mem = malloc(sizeof(int) * (size_t)n);
            char **from = calloc((size_t)ism.nsites, sizeof *from);
            if (!mem || !from) {
                free(mem);
                free(from);
                rc = ISM_ERR_NO_MEM;
                goto out;
            }
            for (int k = 0; k < c->lsize; k++)
                memcpy(all + off[c->c_of_l[k]], site + ldis[k], (size_t)lsz[k]);
            for (int s = 0; s < ism.nsites && !rc; s++) {
                if (s == ism.site || c->leaders[s] < 0)
                    continue;
                int m = site_members(c, s, mem);
                long t = 0;
                for (int i = 0; i < m; i++)
                    t += sz[mem[i]];
                if (!(from[s] = malloc((size_t)t + 1))) {
                    rc = ISM_ERR_NO_MEM;
                    break;
                }
                rc = ism_irecv(from[s], (int)t, ISM_DT_BYTE, c->leaders[s], TAG_ALLGATHER, c,
                               c->ctx + 1, &reqs[nreq++]);
                if (!rc)
                    rc = ism_isend(site, (int)st, ISM_DT_BYTE, c->leaders[s], TAG_ALLGATHER, c,
                                   c->ctx + 1, ISM_MODE_STD, &reqs[nreq++]);
            }
            rc = wait_all(reqs, nreq, rc);
            nreq = 0;
            for (int s = 0; s < ism.nsites && !rc; s++) {
                if (!from[s])
                    continue;
                int m = site_members(c, s, mem);
                size_t o = 0;
                for (int i = 0; i < m; i++) {
                    memcpy(all + off[mem[i]], from[s] + o, (size_t)sz[mem[i]]);
                    o += (size_t)sz[mem[i]];
                }
            }
            free_sites(from);
            free(mem);
            if (rc)
                goto out;
        }
        ism_vh q = 0;
        rc = ism.be->ibcast(all, (int)total, ISM_DT_BYTE->v, lroot, c->vcomm, &q);
        if ((rc = ism_vwait(rc, &q)))
            goto out;
    }
    for (int r = 0; r < n && !rc; r++)
        if (r != c->rank || sbuf)
            rc = unpack(all + off[r], sz[r], at(rbuf, displs[r], rdt), rcounts[r], rdt);
out:
    rc = wait_all(reqs, nreq, rc);
    free(sz);
    free(off);
    free(lsz);
    free(ldis);
    free(reqs);
    free(all);
    free(site);
    free(mine);
    return rc;
}

/* ------------------------------------------------------------------ all-to-all */

/* The seed's scheme: exchange among this site's members with the vendor; gather every
 * member's blocks for other sites at the leader; one message per pair of sites between
 * leaders; the leader reorders what arrived by destination and scatters it. In place is
 * sbuf == ISM_IN_PLACE: a NULL sbuf is MPI_BOTTOM (types with absolute addresses). */
int ism_alltoallw(const void *sbuf, const int *scounts, const int *sdispls, ism_dt *const *sdts,
                  void *rbuf, const int *rcounts, const int *rdispls, ism_dt *const *rdts,
                  ism_comm *c)
{
    int n = c->size, L = c->lsize, R = n - L, rc = 0, nreq = 0, ip = sbuf == ISM_IN_PLACE;
    if (c->all_local || R == 0) {
        ism_vh *vt = malloc(sizeof(ism_vh) * 2 * (size_t)n);
        if (!vt)
            return ISM_ERR_NO_MEM;
        for (int r = 0; r < n; r++) {
            vt[r] = !ip ? vh(sdts[r]) : ism.be->datatype_null;
            vt[n + r] = vh(rdts[r]);
        }
        ism_vh q = 0;
        void *hold = NULL;
        rc = ism.be->ialltoallw(sbuf, scounts, sdispls, vt, rbuf, rcounts, rdispls, vt + n,
                                c->vcomm, &q, &hold);
        rc = ism_vwait(rc, &q);
        free(hold);
        free(vt);
        return rc;
    }
    const void *src = ip ? rbuf : sbuf;
    const int *scn = ip ? rcounts : scounts, *sdi = ip ? rdispls : sdispls;
    ism_dt *const *sty = ip ? rdts : sdts;
    int leader = c->rank == c->my_leader, lroot = c->l_of[c->my_leader];
    /* remote ranks in (site, comm rank) order; rsite_off[s] = first index of site s */
    int *rem = malloc(sizeof(int) * (size_t)(R + 1)), *rsite_off = calloc((size_t)ism.nsites + 1, sizeof(int));
    int *osz = malloc(sizeof(int) * (size_t)(R + 1)), *isz = malloc(sizeof(int) * (size_t)(R + 1));
    int *lc = malloc(sizeof(int) * 4 * (size_t)L);
    ism_vh *lt = malloc(sizeof(ism_vh) * 2 * (size_t)L);
    int *omat = NULL, *imat = NULL, *cnt = NULL, *dis = NULL;
    char *out = NULL, *gat = NULL, *scat = NULL, *in = NULL;
    char **msg = NULL, **got = NULL;
    ism_req **reqs = NULL;
    if (!rem || !rsite_off || !osz || !isz || !lc || !lt) {
        rc = ISM_ERR_NO_MEM;
        goto out;
    }
    int k = 0;
    for (int s = 0; s < ism.nsites; s++) {
        rsite_off[s] = k;
        if (s != ism.site)
            k += site_members(c, s, rem + k);
    }
    rsite_off[ism.nsites] = k;
    /* 1. pack what goes to other sites (before an in-place exchange overwrites it) */
    long ot = 0, it = 0;
    for (int i = 0; i < R && !rc; i++) {
        int j = rem[i];
        rc = bytes_of(scn[j], sty[j], &osz[i]);
        if (!rc)
            rc = bytes_of(rcounts[j], rdts[j], &isz[i]);
        ot += osz[i];
        it += isz[i];
    }
    if (rc || ot > INT_MAX || it > INT_MAX || !(out = malloc((size_t)ot + 1)) ||
        !(in = malloc((size_t)it + 1))) {
        rc = rc ? rc : (ot > INT_MAX || it > INT_MAX) ? ISM_ERR_COUNT : ISM_ERR_NO_MEM;
        goto out;
    }
    for (long o = 0, i = 0; i < R && !rc; o += osz[i], i++) {
        int j = rem[i];
        rc = pack((char *)src + sdi[j], scn[j], sty[j], out + o, osz[i]);
    }
    if (rc)
        goto out;
    /* 2. the exchange among this site's members, by the vendor */
    for (int l = 0; l < L; l++) {
        int r = c->c_of_l[l];
        lc[l] = scn[r];
        lc[L + l] = sdi[r];
        lc[2 * L + l] = rcounts[r];
        lc[3 * L + l] = rdispls[r];
        lt[l] = !ip ? vh(sdts[r]) : ism.be->datatype_null;
        lt[L + l] = vh(rdts[r]);
    }
    if (L > 1) {
        ism_vh q = 0;
        void *hold = NULL;
        rc = ism.be->ialltoallw(sbuf, lc, lc + L, lt, rbuf, lc + 2 * L, lc + 3 * L, lt + L,
                                c->vcomm, &q, &hold);
        rc = ism_vwait(rc, &q);
        free(hold);
    } else if (!ip) {
        /* alone at this site: copy to myself (Open MPI 4.1's single-process alltoallw
         * ignores the displacements) */
        int me = c->rank, nb = 0;
        char *tmp = NULL;
        rc = bytes_of(scounts[me], sdts[me], &nb);
        if (!rc && !(tmp = malloc((size_t)nb + 1)))
            rc = ISM_ERR_NO_MEM;
        if (!rc)
            rc = pack((const char *)sbuf + sdispls[me], scounts[me], sdts[me], tmp, nb);
        if (!rc)
            rc = unpack(tmp, nb, (char *)rbuf + rdispls[me], rcounts[me], rdts[me]);
        free(tmp);
    }
    if (rc)
        goto out;
    /* 3. the leader learns every member's outgoing and incoming block sizes and gathers
     *    the outgoing blocks */
    if (leader) {
        omat = malloc(sizeof(int) * (size_t)L * (size_t)R + 1);
        imat = malloc(sizeof(int) * (size_t)L * (size_t)R + 1);
        cnt = malloc(sizeof(int) * (size_t)L);
        dis = malloc(sizeof(int) * (size_t)L);
        if (!omat || !imat || !cnt || !dis) {
            rc = ISM_ERR_NO_MEM;
            goto out;
        }
        for (int l = 0; l < L; l++) {
            cnt[l] = R;
            dis[l] = l * R;
        }
    }
    ism_vh q = 0;
    rc = ism.be->igatherv(osz, R, ISM_DT_INT->v, omat, cnt, dis, ISM_DT_INT->v, lroot, c->vcomm,
                          &q);
    if ((rc = ism_vwait(rc, &q)))
        goto out;
    rc = ism.be->igatherv(isz, R, ISM_DT_INT->v, imat, cnt, dis, ISM_DT_INT->v, lroot, c->vcomm, &q);
    if ((rc = ism_vwait(rc, &q)))
        goto out;
    long gt = 0;
    if (leader) {
        for (int l = 0; l < L; l++) {
            long t = 0;
            for (int i = 0; i < R; i++)
                t += omat[l * R + i];
            cnt[l] = (int)t;
            dis[l] = (int)gt;
            gt += t;
            if (gt > INT_MAX) {
                rc = ISM_ERR_COUNT;
                goto out;
            }
        }
        if (!(gat = malloc((size_t)gt + 1))) {
            rc = ISM_ERR_NO_MEM;
            goto out;
        }
    }
    if ((rc = gather_bytes(out, (int)ot, gat, cnt, dis, lroot, c)))
        goto out;
    /* 4. leaders: one message to and from every other site */
    if (leader) {
        msg = calloc((size_t)ism.nsites, sizeof *msg);
        got = calloc((size_t)ism.nsites, sizeof *got);
        reqs = calloc((size_t)ism.nsites * 2, sizeof *reqs);
        if (!msg || !got || !reqs) {
            rc = ISM_ERR_NO_MEM;
            goto out;
        }
        for (int s = 0; s < ism.nsites && !rc; s++) {
            if (s == ism.site || c->leaders[s] < 0)
                continue;
            int a = rsite_off[s], b = rsite_off[s + 1];
            long ms = 0, gs = 0;
            for (int l = 0; l < L; l++)
                for (int i = a; i < b; i++) {
                    ms += omat[l * R + i];
                    gs += imat[l * R + i];
                }
            if (ms > INT_MAX || gs > INT_MAX || !(msg[s] = malloc((size_t)ms + 1)) ||
                !(got[s] = malloc((size_t)gs + 1))) {
                rc = (ms > INT_MAX || gs > INT_MAX) ? ISM_ERR_COUNT : ISM_ERR_NO_MEM;
                break;
            }
            /* for each member l (local order): its blocks for site s, contiguous in its part */
            long o = 0;
            for (int l = 0; l < L; l++) {
                long from = dis[l];
                for (int i = 0; i < a; i++)
                    from += omat[l * R + i];
                long len = 0;
                for (int i = a; i < b; i++)
                    len += omat[l * R + i];
                memcpy(msg[s] + o, gat + from, (size_t)len);
                o += len;
            }
            rc = ism_irecv(got[s], (int)gs, ISM_DT_BYTE, c->leaders[s], TAG_ALLTOALL, c,
                           c->ctx + 1, &reqs[nreq++]);
            if (!rc)
                rc = ism_isend(msg[s], (int)ms, ISM_DT_BYTE, c->leaders[s], TAG_ALLTOALL, c,
                               c->ctx + 1, ISM_MODE_STD, &reqs[nreq++]);
        }
        rc = wait_all(reqs, nreq, rc);
        nreq = 0;
        if (rc)
            goto out;
        /* 5. reorder by destination: member l gets, for each remote i in order, block(i->l).
         *    The message from site s holds, for each i of s, block(i->l) for each local l. */
        long st = 0;
        for (int l = 0; l < L; l++) {
            long t = 0;
            for (int i = 0; i < R; i++)
                t += imat[l * R + i];
            cnt[l] = (int)t;
            dis[l] = (int)st;
            st += t;
        }
        if (st > INT_MAX || !(scat = malloc((size_t)st + 1))) {
            rc = st > INT_MAX ? ISM_ERR_COUNT : ISM_ERR_NO_MEM;
            goto out;
        }
        long *fill = calloc((size_t)L, sizeof(long));
        if (!fill) {
            rc = ISM_ERR_NO_MEM;
            goto out;
        }
        for (int s = 0; s < ism.nsites; s++) {
            if (!got[s])
                continue;
            int a = rsite_off[s], b = rsite_off[s + 1];
            long o = 0;
            for (int i = a; i < b; i++)
                for (int l = 0; l < L; l++) {
                    int len = imat[l * R + i];
                    memcpy(scat + dis[l] + fill[l], got[s] + o, (size_t)len);
                    fill[l] += len;
                    o += len;
                }
        }
        free(fill);
    }
    /* 6. scatter to the members, who unpack each remote source's block in place */
    rc = ism.be->iscatterv(scat, cnt, dis, ISM_DT_BYTE->v, in, (int)it, ISM_DT_BYTE->v, lroot,
                           c->vcomm, &q);
    if ((rc = ism_vwait(rc, &q)))
        goto out;
    for (long o = 0, i = 0; i < R && !rc; o += isz[i], i++) {
        int j = rem[i];
        rc = unpack(in + o, isz[i], (char *)rbuf + rdispls[j], rcounts[j], rdts[j]);
    }
out:
    rc = wait_all(reqs, nreq, rc);
    free_sites(msg);
    free_sites(got);
    free(reqs);
    free(rem);
    free(rsite_off);
    free(osz);
    free(isz);
    free(lc);
    free(lt);
    free(omat);
    free(imat);
    free(cnt);
    free(dis);
    free(out);
    free(gat);
    free(scat);
    free(in);
    return rc;
}
