/* coll_general.c: two-level gather, scatter, allgather and all-to-all for any
 * communicator layout and any datatype, with 64-bit counts and displacements.
 *
 * Data crosses sites as packed bytes (the type map's data in order, native layout, no
 * holes: ism_dt_pack), so per-rank types may
 * differ as long as signatures match, as MPI allows. Each collective gathers its site's
 * part at one rank with a vendor gatherv of bytes, moves one message per pair of sites
 * between those ranks, and spreads the result with a vendor scatterv or bcast. Every
 * rank unpacks into its own buffer with its own type.
 *
 * Counts are 64-bit throughout, for the int and the large-count (_c) entry points alike,
 * so no rank needs to know which form its peers called. The vendor takes int counts: a
 * site phase whose bytes pass INT_MAX goes by the core's point-to-point instead (64-bit,
 * TAG_SITE), a broadcast in pieces. Every member of the site decides alike, from sizes
 * all of them know (given by MPI or exchanged first). ISTHMUS_VENDOR_MAX lowers the
 * limit, so tests take these roads with small data. The int entry points
 * (ism_gatherv, ...) pass a communicator held entirely at this site to the vendor
 * unchanged (its local order is its rank order); the _c ones run the general algorithm
 * there when a count does not fit (abi/coll_large.c).
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

typedef int64_t i64;

#define DT_I64 (&ism_dt_table[ISM_KIND_INT64])
#define PIECE ((i64)1 << 30) /* a broadcast too large for an int goes in pieces of this */

/* what one vendor call takes: INT_MAX, or less by ISTHMUS_VENDOR_MAX (to test the roads
 * beyond it with small data) */
static i64 vmax(void) { return ism.vendor_max > 0 ? ism.vendor_max : INT_MAX; }
static i64 piece(void) { return vmax() < PIECE ? vmax() : PIECE; }

static ism_vh vh(const ism_dt *d) { return d ? d->v : ism.be->datatype_null; }

/* Pack count elements of d at buf into out (n bytes): a contiguous type is one memcpy,
 * any other goes through the type map (datatype.c). */
static int pack(const void *buf, i64 count, ism_dt *d, char *out, i64 n)
{
    if (n)
        ism_dt_pack(d, buf, count, out);
    return 0;
}

static int unpack(const char *in, i64 n, void *buf, i64 count, ism_dt *d)
{
    if (!n)
        return 0;
    if (n != count * (i64)d->size)
        return ISM_ERR_TRUNCATE;
    ism_dt_unpack(d, in, buf, count);
    return 0;
}

static int bytes_of(i64 count, const ism_dt *d, i64 *out)
{
    i64 size = d ? d->size : 0;
    if (count < 0)
        count = 0;
    if (size && count > INT64_MAX / 4 / size)
        return ISM_ERR_COUNT;
    *out = count * size;
    return 0;
}

static void *at(const void *buf, i64 displ, const ism_dt *d)
{
    return (char *)buf + displ * (i64)d->extent;
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

/* Displacements of the blocks of sizes n[0..k) laid end to end; returns the total. */
static i64 prefix(const i64 *n, int k, i64 *displ)
{
    i64 t = 0;
    for (int i = 0; i < k; i++) {
        displ[i] = t;
        t += n[i];
    }
    return t;
}

static i64 sum(const i64 *n, int k)
{
    i64 t = 0;
    for (int i = 0; i < k; i++)
        t += n[i];
    return t;
}

/* One 64-bit value of every member of this site, at every member, in local order. */
static int site_allgather(i64 v, i64 *all, ism_comm *c)
{
    ism_vh q = 0;
    int rc = ism.be->iallgather(&v, 1, DT_I64->v, all, 1, DT_I64->v, c->vcomm, &q);
    return ism_vwait(rc, &q);
}

/* The vendor's int arrays for a byte phase of sizes n laid end to end, or NULL (with
 * *rc set when memory failed) when their total passes INT_MAX. */
static int *vendor_sizes(const i64 *n, int k, int *rc)
{
    if (sum(n, k) > vmax())
        return NULL;
    int *v = malloc(sizeof(int) * 2 * (size_t)k + 1);
    if (!v) {
        *rc = ISM_ERR_NO_MEM;
        return NULL;
    }
    int t = 0;
    for (int i = 0; i < k; i++) {
        v[i] = (int)n[i];
        v[k + i] = t;
        t += (int)n[i];
    }
    return v;
}

static int wait_all(ism_req **reqs, int n, int rc)
{
    for (int i = 0; i < n; i++) {
        int r2 = ism_wait_free(reqs[i]);
        rc = rc ? rc : r2;
    }
    return rc;
}

/* A site phase of packed bytes between local rank lroot's all (blocks of n[k] bytes laid
 * end to end in local order) and each member k's mine: gathered to lroot (gather), or
 * scattered from it. Every member knows all of n, so all take the same route: the
 * vendor's gatherv/scatterv of bytes while the total fits an int, else one core message
 * per member. */
static int site_move(char *all, const i64 *n, char *mine, int lroot, ism_comm *c, int gather)
{
    int L = c->lsize, me = c->lrank, rc = 0;
    int *v = vendor_sizes(n, L, &rc);
    if (rc)
        return rc;
    if (v) {
        ism_vh q = 0;
        rc = gather ? ism.be->igatherv(mine, v[me], ISM_DT_BYTE->v, all, v, v + L,
                                       ISM_DT_BYTE->v, lroot, c->vcomm, &q)
                    : ism.be->iscatterv(all, v, v + L, ISM_DT_BYTE->v, mine, v[me],
                                        ISM_DT_BYTE->v, lroot, c->vcomm, &q);
        rc = ism_vwait(rc, &q);
        free(v);
        return rc;
    }
    if (me != lroot)
        return gather ? ism_xsend(mine, n[me], ISM_DT_BYTE, c->c_of_l[lroot], TAG_SITE, c)
                      : ism_xrecv(mine, n[me], ISM_DT_BYTE, c->c_of_l[lroot], TAG_SITE, c);
    ism_req **reqs = calloc((size_t)L, sizeof *reqs);
    if (!reqs)
        return ISM_ERR_NO_MEM;
    int nreq = 0;
    i64 off = 0;
    for (int k = 0; k < L && !rc; off += n[k], k++) {
        if (k == me && gather)
            memcpy(all + off, mine, (size_t)n[k]);
        else if (k == me)
            memcpy(mine, all + off, (size_t)n[k]);
        else if (gather)
            rc = ism_irecv(all + off, n[k], ISM_DT_BYTE, c->c_of_l[k], TAG_SITE, c, c->ctx + 1,
                           &reqs[nreq++]);
        else
            rc = ism_isend(all + off, n[k], ISM_DT_BYTE, c->c_of_l[k], TAG_SITE, c, c->ctx + 1,
                           ISM_MODE_STD, &reqs[nreq++]);
    }
    if (rc)
        nreq--;
    rc = wait_all(reqs, nreq, rc);
    free(reqs);
    return rc;
}

static int site_gather(const char *mine, const i64 *n, char *all, int lroot, ism_comm *c)
{
    return site_move(all, n, (char *)mine, lroot, c, 1);
}

static int site_scatter(const char *all, const i64 *n, char *mine, int lroot, ism_comm *c)
{
    return site_move((char *)all, n, mine, lroot, c, 0);
}

/* total bytes at local rank lroot to every member, in pieces an int can count */
static int site_bcast(char *buf, i64 total, int lroot, ism_comm *c)
{
    int rc = 0;
    i64 off = 0;
    do {
        int k = total - off > piece() ? (int)piece() : (int)(total - off);
        ism_vh q = 0;
        rc = ism.be->ibcast(buf + off, k, ISM_DT_BYTE->v, lroot, c->vcomm, &q);
        rc = ism_vwait(rc, &q);
        off += k;
    } while (!rc && off < total);
    return rc;
}

/* Free per-site buffers and their array (either may be NULL). */
static void free_sites(char **v)
{
    for (int s = 0; v && s < ism.lay.nsites; s++)
        free(v[s]);
    free(v);
}

/* A 64-bit copy of k ints (NULL stays NULL); *bad is set when memory failed. */
static i64 *widen(const int *v, int k, int *bad)
{
    if (!v)
        return NULL;
    i64 *w = malloc(sizeof(i64) * (size_t)k + 1);
    if (!w) {
        *bad = 1;
        return NULL;
    }
    for (int i = 0; i < k; i++)
        w[i] = v[i];
    return w;
}

/* ------------------------------------------------------------------ gather */

int ism_gatherv64(const void *sbuf, i64 scount, ism_dt *sdt, void *rbuf, const i64 *rcounts,
                  const i64 *displs, ism_dt *rdt, int root, ism_comm *c)
{
    int rs = c->site_of[root], me_root = c->rank == root, L = c->lsize;
    int lroot = ism.lay.site == rs ? c->l_of[root] : c->l_of[c->my_leader];
    int am_lroot = c->lrank == lroot;
    i64 mb = 0, *lsz = NULL;
    int rc = sbuf ? bytes_of(scount, sdt, &mb) : 0;
    char *mine = NULL, *site = NULL;
    int *mem = NULL;
    char **from = NULL;
    ism_req **reqs = NULL;
    if (rc)
        return rc;
    if (!(mine = malloc((size_t)mb + 1)) || !(lsz = malloc(sizeof(i64) * (size_t)L))) {
        rc = ISM_ERR_NO_MEM;
        goto out;
    }
    if ((rc = pack(sbuf, scount, sdt, mine, mb)) || (rc = site_allgather(mb, lsz, c)))
        goto out;
    i64 total = sum(lsz, L);
    if (L == 1) { /* alone at this site: what I packed is the site's part */
        site = mine;
        mine = NULL;
    } else if (am_lroot && !(site = malloc((size_t)total + 1))) {
        rc = ISM_ERR_NO_MEM;
        goto out;
    }
    if (L > 1 && (rc = site_gather(mine, lsz, site, lroot, c)))
        goto out;
    if (am_lroot && !me_root) {
        rc = ism_xsend(site, total, ISM_DT_BYTE, root, TAG_GATHER, c);
        goto out;
    }
    if (!me_root)
        goto out;
    /* the root: its own site's blocks, then one message from every other site */
    i64 off = 0;
    for (int k = 0; k < L && !rc; off += lsz[k], k++) {
        int r = c->c_of_l[k];
        if (r == root && !sbuf)
            continue; /* in place */
        if (lsz[k] != rcounts[r] * (i64)rdt->size)
            rc = ISM_ERR_TRUNCATE;
        else
            rc = unpack(site + off, lsz[k], at(rbuf, displs[r], rdt), rcounts[r], rdt);
    }
    mem = malloc(sizeof(int) * (size_t)c->size);
    from = calloc((size_t)ism.lay.nsites, sizeof *from);
    reqs = calloc((size_t)ism.lay.nsites, sizeof *reqs);
    if (!mem || !from || !reqs) {
        rc = rc ? rc : ISM_ERR_NO_MEM;
        goto out;
    }
    int nreq = 0;
    for (int s = 0; s < ism.lay.nsites && !rc; s++) {
        if (s == rs || c->leaders[s] < 0)
            continue;
        int m = site_members(c, s, mem);
        i64 t = 0, b;
        for (int i = 0; i < m && !rc; i++) {
            rc = bytes_of(rcounts[mem[i]], rdt, &b);
            t += b;
        }
        if (rc)
            break;
        if (!(from[s] = malloc((size_t)t + 1))) {
            rc = ISM_ERR_NO_MEM;
            break;
        }
        rc = ism_irecv(from[s], t, ISM_DT_BYTE, c->leaders[s], TAG_GATHER, c, c->ctx + 1,
                       &reqs[nreq++]);
        if (rc)
            nreq--;
    }
    rc = wait_all(reqs, nreq, rc);
    for (int s = 0; s < ism.lay.nsites && !rc; s++) {
        if (!from[s])
            continue;
        int m = site_members(c, s, mem);
        i64 o = 0;
        for (int i = 0; i < m && !rc; i++) {
            int r = mem[i];
            i64 b = rcounts[r] * (i64)rdt->size;
            rc = unpack(from[s] + o, b, at(rbuf, displs[r], rdt), rcounts[r], rdt);
            o += b;
        }
    }
out:
    free_sites(from);
    free(reqs);
    free(mem);
    free(mine);
    free(site);
    free(lsz);
    return rc;
}

int ism_gatherv(const void *sbuf, int scount, ism_dt *sdt, void *rbuf, const int *rcounts,
                const int *displs, ism_dt *rdt, int root, ism_comm *c)
{
    if (c->all_local) {
        ism_vh q = 0;
        int rc = ism.be->igatherv(sbuf, scount, vh(sdt), rbuf, rcounts, displs, vh(rdt), root,
                                  c->vcomm, &q);
        return ism_vwait(rc, &q);
    }
    int bad = 0, n = c->rank == root ? c->size : 0;
    i64 *rc64 = widen(rcounts, n, &bad), *di64 = widen(displs, n, &bad);
    int rc = bad ? ISM_ERR_NO_MEM
                 : ism_gatherv64(sbuf, scount, sdt, rbuf, rc64, di64, rdt, root, c);
    free(rc64);
    free(di64);
    return rc;
}

/* ------------------------------------------------------------------ scatter */

int ism_scatterv64(const void *sbuf, const i64 *scounts, const i64 *displs, ism_dt *sdt,
                   void *rbuf, i64 rcount, ism_dt *rdt, int root, ism_comm *c)
{
    int rs = c->site_of[root], me_root = c->rank == root, L = c->lsize;
    int lroot = ism.lay.site == rs ? c->l_of[root] : c->l_of[c->my_leader];
    int am_lroot = c->lrank == lroot, nreq = 0;
    i64 mb = 0, *lsz = NULL;
    int rc = rbuf ? bytes_of(rcount, rdt, &mb) : 0;
    char *mine = NULL, *site = NULL;
    int *mem = NULL;
    char **to = NULL;
    ism_req **reqs = NULL;
    if (rc)
        return rc;
    if (!(lsz = malloc(sizeof(i64) * (size_t)L))) {
        rc = ISM_ERR_NO_MEM;
        goto out;
    }
    if ((rc = site_allgather(mb, lsz, c)))
        goto out;
    i64 total = sum(lsz, L);
    if ((am_lroot && !(site = malloc((size_t)total + 1))) || !(mine = malloc((size_t)mb + 1))) {
        rc = ISM_ERR_NO_MEM;
        goto out;
    }
    if (me_root) {
        mem = malloc(sizeof(int) * (size_t)c->size);
        to = calloc((size_t)ism.lay.nsites, sizeof *to);
        reqs = calloc((size_t)ism.lay.nsites, sizeof *reqs);
        if (!mem || !to || !reqs) {
            rc = ISM_ERR_NO_MEM;
            goto out;
        }
        for (int s = 0; s < ism.lay.nsites && !rc; s++) {
            if (s == rs || c->leaders[s] < 0)
                continue;
            int m = site_members(c, s, mem);
            i64 t = 0, b;
            for (int i = 0; i < m && !rc; i++) {
                rc = bytes_of(scounts[mem[i]], sdt, &b);
                t += b;
            }
            if (rc || !(to[s] = malloc((size_t)t + 1))) {
                rc = rc ? rc : ISM_ERR_NO_MEM;
                break;
            }
            i64 off = 0;
            for (int i = 0; i < m && !rc; i++) {
                int r = mem[i];
                b = scounts[r] * (i64)sdt->size;
                rc = pack(at(sbuf, displs[r], sdt), scounts[r], sdt, to[s] + off, b);
                off += b;
            }
            if (!rc && !(rc = ism_isend(to[s], t, ISM_DT_BYTE, c->leaders[s], TAG_SCATTER, c,
                                        c->ctx + 1, ISM_MODE_STD, &reqs[nreq])))
                nreq++;
        }
        /* this site's blocks, in local order; an in-place root sends itself nothing */
        i64 off = 0;
        for (int k = 0; k < L && !rc; off += lsz[k], k++) {
            int r = c->c_of_l[k];
            if (r == root && !rbuf)
                continue;
            if (lsz[k] != scounts[r] * (i64)sdt->size)
                rc = ISM_ERR_TRUNCATE;
            else
                rc = pack(at(sbuf, displs[r], sdt), scounts[r], sdt, site + off, lsz[k]);
        }
    } else if (am_lroot) {
        rc = ism_xrecv(site, total, ISM_DT_BYTE, root, TAG_SCATTER, c);
    }
    if (!rc)
        rc = site_scatter(site, lsz, mine, lroot, c);
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
    return rc;
}

int ism_scatterv(const void *sbuf, const int *scounts, const int *displs, ism_dt *sdt, void *rbuf,
                 int rcount, ism_dt *rdt, int root, ism_comm *c)
{
    if (c->all_local) {
        ism_vh q = 0;
        int rc = ism.be->iscatterv(sbuf, scounts, displs, vh(sdt), rbuf, rcount, vh(rdt), root,
                                   c->vcomm, &q);
        return ism_vwait(rc, &q);
    }
    int bad = 0, n = c->rank == root ? c->size : 0;
    i64 *sc64 = widen(scounts, n, &bad), *di64 = widen(displs, n, &bad);
    int rc = bad ? ISM_ERR_NO_MEM
                 : ism_scatterv64(sbuf, sc64, di64, sdt, rbuf, rcount, rdt, root, c);
    free(sc64);
    free(di64);
    return rc;
}

/* ------------------------------------------------------------------ allgather */

int ism_allgatherv64(const void *sbuf, i64 scount, ism_dt *sdt, void *rbuf, const i64 *rcounts,
                     const i64 *displs, ism_dt *rdt, ism_comm *c)
{
    int n = c->size, L = c->lsize, rc = 0, nreq = 0;
    i64 *sz = malloc(sizeof(i64) * (size_t)n), *off = malloc(sizeof(i64) * (size_t)n);
    i64 *lsz = malloc(sizeof(i64) * (size_t)L);
    ism_req **reqs = calloc((size_t)ism.lay.nsites * 2, sizeof *reqs);
    char *all = NULL, *site = NULL, *mine = NULL;
    int *mem = NULL;
    char **from = NULL;
    if (!sz || !off || !lsz || !reqs) {
        rc = ISM_ERR_NO_MEM;
        goto out;
    }
    for (int r = 0; r < n && !rc; r++)
        rc = bytes_of(rcounts[r], rdt, &sz[r]);
    i64 total = rc ? 0 : prefix(sz, n, off);
    if (rc || !(all = malloc((size_t)total + 1))) {
        rc = rc ? rc : ISM_ERR_NO_MEM;
        goto out;
    }
    /* my block goes straight to its place in the packed whole */
    if (sbuf) {
        i64 mb;
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
    int lroot = c->l_of[c->my_leader];
    for (int k = 0; k < L; k++)
        lsz[k] = sz[c->c_of_l[k]];
    i64 st = sum(lsz, L);
    if (!(site = malloc((size_t)st + 1)) || !(mine = malloc((size_t)sz[c->rank] + 1))) {
        rc = ISM_ERR_NO_MEM;
        goto out;
    }
    memcpy(mine, all + off[c->rank], (size_t)sz[c->rank]);
    if ((rc = site_gather(mine, lsz, site, lroot, c)))
        goto out;
    if (c->rank == c->my_leader) {
        mem = malloc(sizeof(int) * (size_t)n);
        from = calloc((size_t)ism.lay.nsites, sizeof *from);
        if (!mem || !from) {
            rc = ISM_ERR_NO_MEM;
            goto out;
        }
        i64 o = 0;
        for (int k = 0; k < L; o += lsz[k], k++)
            memcpy(all + off[c->c_of_l[k]], site + o, (size_t)lsz[k]);
        for (int s = 0; s < ism.lay.nsites && !rc; s++) {
            if (s == ism.lay.site || c->leaders[s] < 0)
                continue;
            int m = site_members(c, s, mem);
            i64 t = 0;
            for (int i = 0; i < m; i++)
                t += sz[mem[i]];
            if (!(from[s] = malloc((size_t)t + 1))) {
                rc = ISM_ERR_NO_MEM;
                break;
            }
            rc = ism_irecv(from[s], t, ISM_DT_BYTE, c->leaders[s], TAG_ALLGATHER, c, c->ctx + 1,
                           &reqs[nreq]);
            if (!rc)
                nreq++;
            if (!rc && !(rc = ism_isend(site, st, ISM_DT_BYTE, c->leaders[s], TAG_ALLGATHER, c,
                                        c->ctx + 1, ISM_MODE_STD, &reqs[nreq])))
                nreq++;
        }
        rc = wait_all(reqs, nreq, rc);
        nreq = 0;
        for (int s = 0; s < ism.lay.nsites && !rc; s++) {
            if (!from[s])
                continue;
            int m = site_members(c, s, mem);
            i64 o2 = 0;
            for (int i = 0; i < m; i++) {
                memcpy(all + off[mem[i]], from[s] + o2, (size_t)sz[mem[i]]);
                o2 += sz[mem[i]];
            }
        }
        if (rc)
            goto out;
    }
    if ((rc = site_bcast(all, total, lroot, c)))
        goto out;
    for (int r = 0; r < n && !rc; r++)
        if (r != c->rank || sbuf)
            rc = unpack(all + off[r], sz[r], at(rbuf, displs[r], rdt), rcounts[r], rdt);
out:
    rc = wait_all(reqs, nreq, rc);
    free_sites(from);
    free(mem);
    free(sz);
    free(off);
    free(lsz);
    free(reqs);
    free(all);
    free(site);
    free(mine);
    return rc;
}

int ism_allgatherv(const void *sbuf, int scount, ism_dt *sdt, void *rbuf, const int *rcounts,
                   const int *displs, ism_dt *rdt, ism_comm *c)
{
    if (c->all_local) {
        ism_vh q = 0;
        int rc = ism.be->iallgatherv(sbuf, scount, vh(sdt), rbuf, rcounts, displs, vh(rdt),
                                     c->vcomm, &q);
        return ism_vwait(rc, &q);
    }
    int bad = 0;
    i64 *rc64 = widen(rcounts, c->size, &bad), *di64 = widen(displs, c->size, &bad);
    int rc = bad ? ISM_ERR_NO_MEM : ism_allgatherv64(sbuf, scount, sdt, rbuf, rc64, di64, rdt, c);
    free(rc64);
    free(di64);
    return rc;
}

/* ------------------------------------------------------------------ all-to-all */

/* The vendor's form of one peer's (count, byte displacement, type) in an alltoallw: as
 * given while both fit an int, else one element of a type that holds the count at the
 * displacement (the peer builds its side alike or not: signatures match either way). */
typedef struct {
    int n, d;
    ism_vh t;
    ism_vh own; /* the type built here, freed after the call; 0 when none */
} vpeer;

static int vpeer_make(i64 count, i64 displ, ism_dt *dt, vpeer *p)
{
    *p = (vpeer){(int)count, (int)displ, vh(dt), 0};
    if (!dt || (count <= vmax() && displ >= -vmax() && displ <= vmax()))
        return 0;
    ism_vcount v;
    int rc = ism_vcount_make(count, dt, &v);
    if (rc)
        return rc;
    int in[2] = {1, v.n};
    ptrdiff_t where = (ptrdiff_t)displ;
    rc = ism.be->type_create(ISM_COMBINER_STRUCT, in, &where, &v.t, &p->own);
    ism_vcount_done(&v);
    if (!rc && (rc = ism.be->type_commit(&p->own)))
        ism.be->type_free(&p->own);
    if (rc) {
        p->own = 0;
        return rc;
    }
    *p = (vpeer){1, 0, p->own, p->own};
    return 0;
}

/* The exchange among this site's members by the vendor's alltoallw, any count. */
static int local_alltoallw(const void *sbuf, const i64 *scn, const i64 *sdi, ism_dt *const *sty,
                           void *rbuf, const i64 *rcounts, const i64 *rdispls,
                           ism_dt *const *rdts, int ip, ism_comm *c)
{
    int L = c->lsize, rc = 0;
    vpeer *p = calloc(2 * (size_t)L + 1, sizeof *p);
    int *lc = malloc(sizeof(int) * 4 * (size_t)L + 1);
    ism_vh *lt = malloc(sizeof(ism_vh) * 2 * (size_t)L + 1);
    if (!p || !lc || !lt) {
        rc = ISM_ERR_NO_MEM;
        goto out;
    }
    for (int l = 0; l < L && !rc; l++) {
        int r = c->c_of_l[l];
        if (!ip)
            rc = vpeer_make(scn[r], sdi[r], sty[r], &p[l]);
        if (!rc)
            rc = vpeer_make(rcounts[r], rdispls[r], rdts[r], &p[L + l]);
        lc[l] = p[l].n;
        lc[L + l] = p[l].d;
        lc[2 * L + l] = p[L + l].n;
        lc[3 * L + l] = p[L + l].d;
        lt[l] = !ip ? p[l].t : ism.be->datatype_null;
        lt[L + l] = p[L + l].t;
    }
    if (!rc) {
        ism_vh q = 0;
        void *hold = NULL;
        rc = ism.be->ialltoallw(ip ? ISM_IN_PLACE : sbuf, lc, lc + L, lt, rbuf, lc + 2 * L,
                                lc + 3 * L, lt + L, c->vcomm, &q, &hold);
        rc = ism_vwait(rc, &q);
        free(hold);
    }
out:
    for (int i = 0; p && i < 2 * L; i++)
        if (p[i].own)
            ism.be->type_free(&p[i].own);
    free(p);
    free(lc);
    free(lt);
    return rc;
}

/* The seed's scheme: exchange among this site's members with the vendor; gather every
 * member's blocks for other sites at the leader; one message per pair of sites between
 * leaders; the leader reorders what arrived by destination and scatters it. In place is
 * sbuf == ISM_IN_PLACE: a NULL sbuf is MPI_BOTTOM (types with absolute addresses). */
int ism_alltoallw64(const void *sbuf, const i64 *scounts, const i64 *sdispls, ism_dt *const *sdts,
                    void *rbuf, const i64 *rcounts, const i64 *rdispls, ism_dt *const *rdts,
                    ism_comm *c)
{
    int n = c->size, L = c->lsize, R = n - L, rc = 0, nreq = 0, ip = sbuf == ISM_IN_PLACE;
    const void *src = ip ? rbuf : sbuf;
    const i64 *scn = ip ? rcounts : scounts, *sdi = ip ? rdispls : sdispls;
    ism_dt *const *sty = ip ? rdts : sdts;
    if (R == 0) {
        if (L > 1 || ip)
            return local_alltoallw(sbuf, scn, sdi, sty, rbuf, rcounts, rdispls, rdts, ip, c);
    }
    int leader = c->rank == c->my_leader, lroot = c->l_of[c->my_leader];
    /* remote ranks in (site, comm rank) order; rsite_off[s] = first index of site s */
    int *rem = malloc(sizeof(int) * (size_t)(R + 1)), *rsite_off = calloc((size_t)ism.lay.nsites + 1, sizeof(int));
    i64 *osz = malloc(sizeof(i64) * (size_t)(R + 1)), *isz = malloc(sizeof(i64) * (size_t)(R + 1));
    i64 *otot = malloc(sizeof(i64) * (size_t)L), *itot = malloc(sizeof(i64) * (size_t)L);
    i64 *omat = NULL, *imat = NULL;
    int *cnt = NULL, *dis = NULL;
    char *out = NULL, *gat = NULL, *scat = NULL, *in = NULL;
    char **msg = NULL, **got = NULL;
    ism_req **reqs = NULL;
    if (!rem || !rsite_off || !osz || !isz || !otot || !itot) {
        rc = ISM_ERR_NO_MEM;
        goto out;
    }
    int k = 0;
    for (int s = 0; s < ism.lay.nsites; s++) {
        rsite_off[s] = k;
        if (s != ism.lay.site)
            k += site_members(c, s, rem + k);
    }
    rsite_off[ism.lay.nsites] = k;
    /* 1. pack what goes to other sites (before an in-place exchange overwrites it) */
    i64 ot = 0, it = 0;
    for (int i = 0; i < R && !rc; i++) {
        int j = rem[i];
        rc = bytes_of(scn[j], sty[j], &osz[i]);
        if (!rc)
            rc = bytes_of(rcounts[j], rdts[j], &isz[i]);
        ot += osz[i];
        it += isz[i];
    }
    if (rc || !(out = malloc((size_t)ot + 1)) || !(in = malloc((size_t)it + 1))) {
        rc = rc ? rc : ISM_ERR_NO_MEM;
        goto out;
    }
    for (i64 o = 0, i = 0; i < R && !rc; o += osz[i], i++) {
        int j = rem[i];
        rc = pack((char *)src + sdi[j], scn[j], sty[j], out + o, osz[i]);
    }
    if (rc)
        goto out;
    /* 2. the exchange among this site's members, by the vendor */
    if (L > 1 || ip) {
        rc = local_alltoallw(sbuf, scn, sdi, sty, rbuf, rcounts, rdispls, rdts, ip, c);
    } else {
        /* alone at this site: copy to myself (Open MPI 4.1's single-process alltoallw
         * ignores the displacements) */
        int me = c->rank;
        i64 nb = 0;
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
    if (rc || R == 0)
        goto out;
    /* 3. every member learns every member's outgoing and incoming totals (they decide how
     *    the site phases go), the leader every block's size; the leader gathers the
     *    outgoing blocks */
    {
        i64 mine[2] = {ot, it}, *both = malloc(sizeof(i64) * 2 * (size_t)L);
        ism_vh q = 0;
        if (!both) {
            rc = ISM_ERR_NO_MEM;
            goto out;
        }
        rc = ism.be->iallgather(mine, 2, DT_I64->v, both, 2, DT_I64->v, c->vcomm, &q);
        rc = ism_vwait(rc, &q);
        for (int l = 0; l < L; l++) {
            otot[l] = both[2 * l];
            itot[l] = both[2 * l + 1];
        }
        free(both);
        if (rc)
            goto out;
    }
    if (leader) {
        omat = malloc(sizeof(i64) * (size_t)L * (size_t)R + 1);
        imat = malloc(sizeof(i64) * (size_t)L * (size_t)R + 1);
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
    rc = ism.be->igatherv(osz, R, DT_I64->v, omat, cnt, dis, DT_I64->v, lroot, c->vcomm, &q);
    if ((rc = ism_vwait(rc, &q)))
        goto out;
    rc = ism.be->igatherv(isz, R, DT_I64->v, imat, cnt, dis, DT_I64->v, lroot, c->vcomm, &q);
    if ((rc = ism_vwait(rc, &q)))
        goto out;
    i64 gt = sum(otot, L);
    if (leader && !(gat = malloc((size_t)gt + 1))) {
        rc = ISM_ERR_NO_MEM;
        goto out;
    }
    if ((rc = site_gather(out, otot, gat, lroot, c)))
        goto out;
    /* 4. leaders: one message to and from every other site */
    if (leader) {
        msg = calloc((size_t)ism.lay.nsites, sizeof *msg);
        got = calloc((size_t)ism.lay.nsites, sizeof *got);
        reqs = calloc((size_t)ism.lay.nsites * 2, sizeof *reqs);
        if (!msg || !got || !reqs) {
            rc = ISM_ERR_NO_MEM;
            goto out;
        }
        for (int s = 0; s < ism.lay.nsites && !rc; s++) {
            if (s == ism.lay.site || c->leaders[s] < 0)
                continue;
            int a = rsite_off[s], b = rsite_off[s + 1];
            i64 ms = 0, gs = 0;
            for (int l = 0; l < L; l++)
                for (int i = a; i < b; i++) {
                    ms += omat[l * R + i];
                    gs += imat[l * R + i];
                }
            if (!(msg[s] = malloc((size_t)ms + 1)) || !(got[s] = malloc((size_t)gs + 1))) {
                rc = ISM_ERR_NO_MEM;
                break;
            }
            /* for each member l (local order): its blocks for site s, contiguous in its part */
            i64 o = 0, base = 0;
            for (int l = 0; l < L; base += otot[l], l++) {
                i64 from = base;
                for (int i = 0; i < a; i++)
                    from += omat[l * R + i];
                i64 len = 0;
                for (int i = a; i < b; i++)
                    len += omat[l * R + i];
                memcpy(msg[s] + o, gat + from, (size_t)len);
                o += len;
            }
            rc = ism_irecv(got[s], gs, ISM_DT_BYTE, c->leaders[s], TAG_ALLTOALL, c, c->ctx + 1,
                           &reqs[nreq]);
            if (!rc)
                nreq++;
            if (!rc && !(rc = ism_isend(msg[s], ms, ISM_DT_BYTE, c->leaders[s], TAG_ALLTOALL, c,
                                        c->ctx + 1, ISM_MODE_STD, &reqs[nreq])))
                nreq++;
        }
        rc = wait_all(reqs, nreq, rc);
        nreq = 0;
        if (rc)
            goto out;
        /* 5. reorder by destination: member l gets, for each remote i in order, block(i->l).
         *    The message from site s holds, for each i of s, block(i->l) for each local l. */
        i64 st = sum(itot, L);
        i64 *fill = calloc((size_t)L, sizeof(i64)), *ldis = malloc(sizeof(i64) * (size_t)L);
        if (!(scat = malloc((size_t)st + 1)) || !fill || !ldis) {
            free(fill);
            free(ldis);
            rc = ISM_ERR_NO_MEM;
            goto out;
        }
        prefix(itot, L, ldis);
        for (int s = 0; s < ism.lay.nsites; s++) {
            if (!got[s])
                continue;
            int a = rsite_off[s], b = rsite_off[s + 1];
            i64 o = 0;
            for (int i = a; i < b; i++)
                for (int l = 0; l < L; l++) {
                    i64 len = imat[l * R + i];
                    memcpy(scat + ldis[l] + fill[l], got[s] + o, (size_t)len);
                    fill[l] += len;
                    o += len;
                }
        }
        free(fill);
        free(ldis);
    }
    /* 6. scatter to the members, who unpack each remote source's block in place */
    if ((rc = site_scatter(scat, itot, in, lroot, c)))
        goto out;
    for (i64 o = 0, i = 0; i < R && !rc; o += isz[i], i++) {
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
    free(otot);
    free(itot);
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

int ism_alltoallw(const void *sbuf, const int *scounts, const int *sdispls, ism_dt *const *sdts,
                  void *rbuf, const int *rcounts, const int *rdispls, ism_dt *const *rdts,
                  ism_comm *c)
{
    int n = c->size, ip = sbuf == ISM_IN_PLACE;
    if (c->all_local || n == c->lsize) {
        ism_vh *vt = malloc(sizeof(ism_vh) * 2 * (size_t)n);
        if (!vt)
            return ISM_ERR_NO_MEM;
        for (int r = 0; r < n; r++) {
            vt[r] = !ip ? vh(sdts[r]) : ism.be->datatype_null;
            vt[n + r] = vh(rdts[r]);
        }
        ism_vh q = 0;
        void *hold = NULL;
        int rc = ism.be->ialltoallw(sbuf, scounts, sdispls, vt, rbuf, rcounts, rdispls, vt + n,
                                    c->vcomm, &q, &hold);
        rc = ism_vwait(rc, &q);
        free(hold);
        free(vt);
        return rc;
    }
    i64 *w = malloc(sizeof(i64) * 4 * (size_t)n + 1);
    if (!w)
        return ISM_ERR_NO_MEM;
    for (int r = 0; r < n; r++) {
        w[r] = ip ? 0 : scounts[r];
        w[n + r] = ip ? 0 : sdispls[r];
        w[2 * n + r] = rcounts[r];
        w[3 * n + r] = rdispls[r];
    }
    int rc = ism_alltoallw64(sbuf, w, w + n, sdts, rbuf, w + 2 * n, w + 3 * n, rdts, c);
    free(w);
    return rc;
}
