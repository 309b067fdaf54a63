/* coll.c: two-level collectives (vendor inside each site, leaders across sites).
 *
 * Each collective runs the vendor's own collective among the members at this site, and
 * exchanges one message per pair of site leaders at most across the WAN, so the WAN
 * message count grows with the number of sites, never with ranks. Cross-site messages
 * travel on the communicator's collective context (ctx+1), so they never match user
 * receives. Partial results are combined in site order on every leader, so all sites
 * compute bit-identical floating-point results.
 */
#include <stdlib.h>
#include <string.h>

#include "core.h"


/* Wait for a vendor request of a site-local phase while draining the gateway channel:
 * a rank blocked inside a vendor collective could otherwise leave frames for it piling
 * up in its gateway's pool, stalling the link that other sites' phases depend on.
 * Inside a nonblocking collective (nbc.c) waiting yields to the program.
 *
 * Site-local phases always take the vendor's nonblocking form, even for a blocking
 * collective on one site: a process blocked inside the vendor's blocking form runs the
 * vendor's progress but not isthmus's, so a pending nonblocking collective of this
 * process whose next phase another process waits for would never be issued (rank 0:
 * MPI_Iallreduce on c1, MPI_Allreduce on c2, wait; rank 1: MPI_Iallreduce on c1, wait,
 * MPI_Allreduce on c2 hung on one site; MPI 3.1 §5.12 requires it to complete). The
 * choice cannot depend on whether this process has anything pending, since the vendor's
 * blocking and nonblocking forms do not match each other. The cost, measured on one
 * site (bench/notebook/collectives.md, "Blocking collectives on one site"), is about a microsecond for
 * small messages. */
int ism_vwait(int rc, const ism_vh *reqp)
{
    unsigned spins = 0;
    if (rc)
        return rc;
    ism_vh req = *reqp; /* read only after the call that produced it has returned */
    for (;;) {
        int flag = 0;
        ism_vstatus st;
        rc = ism.be->test(&req, &flag, &st);
        if (rc || flag)
            return rc;
        if (!ism_progress())
            ism_idle(&spins);
    }
}

static int l_barrier(ism_comm *c)
{
    ism_vh r = 0;
    int rc = ism.be->ibarrier(c->vcomm, &r);
    return ism_vwait(rc, &r);
}

static int l_bcast(void *buf, int count, ism_dt *dt, int root, ism_comm *c)
{
    ism_vh r = 0;
    int rc = ism.be->ibcast(buf, count, dt->v, root, c->vcomm, &r);
    return ism_vwait(rc, &r);
}

static int l_reduce(const void *sbuf, void *rbuf, int count, ism_dt *dt, ism_op *op, int root,
                    ism_comm *c)
{
    ism_vh r = 0;
    int rc = ism.be->ireduce(sbuf, rbuf, count, dt->v, op->v, root, c->vcomm, &r);
    return ism_vwait(rc, &r);
}

static int l_allgather(const void *sbuf, void *rbuf, int count, ism_dt *dt, ism_comm *c)
{
    ism_vh r = 0;
    int rc = ism.be->iallgather(sbuf, count, dt->v, rbuf, count, dt->v, c->vcomm, &r);
    return ism_vwait(rc, &r);
}

int ism_wait_free(ism_req *r)
{
    int rc = ism_req_wait(r, NULL);
    ism_req_free(r);
    return rc;
}

int ism_xsend(const void *buf, int64_t count, ism_dt *dt, int dst, int tag, ism_comm *c)
{
    ism_req *r;
    int rc = ism_isend(buf, count, dt, dst, tag, c, c->ctx + 1, ISM_MODE_STD, &r);
    return rc ? rc : ism_wait_free(r);
}

int ism_xrecv(void *buf, int64_t count, ism_dt *dt, int src, int tag, ism_comm *c)
{
    ism_req *r;
    int rc = ism_irecv(buf, count, dt, src, tag, c, c->ctx + 1, &r);
    return rc ? rc : ism_wait_free(r);
}

int ism_barrier(ism_comm *c)
{
    int rc = l_barrier(c);
    if (rc || c->all_local)
        return rc;
    if (c->rank == c->my_leader) {
        int root = -1;
        for (int s = 0; s < ism.lay.nsites && root < 0; s++)
            root = c->leaders[s];
        if (c->rank == root) {
            for (int s = 0; s < ism.lay.nsites && !rc; s++)
                if (c->leaders[s] >= 0 && c->leaders[s] != root)
                    rc = ism_xrecv(NULL, 0, &ism_dt_table[ISM_KIND_BYTE], c->leaders[s], TAG_BARRIER, c);
            for (int s = 0; s < ism.lay.nsites && !rc; s++)
                if (c->leaders[s] >= 0 && c->leaders[s] != root)
                    rc = ism_xsend(NULL, 0, &ism_dt_table[ISM_KIND_BYTE], c->leaders[s], TAG_BARRIER, c);
        } else {
            rc = ism_xsend(NULL, 0, &ism_dt_table[ISM_KIND_BYTE], root, TAG_BARRIER, c);
            if (!rc)
                rc = ism_xrecv(NULL, 0, &ism_dt_table[ISM_KIND_BYTE], root, TAG_BARRIER, c);
        }
    }
    int rc2 = l_barrier(c);
    return rc ? rc : rc2;
}

int ism_bcast(void *buf, int count, ism_dt *dt, int root, ism_comm *c)
{
    int rc = 0;
    if (c->all_local)
        return l_bcast(buf, count, dt, c->l_of[root], c);
    int rs = c->site_of[root];
    if (c->rank == root) {
        ism_req *reqs[64];
        int n = 0;
        for (int s = 0; s < ism.lay.nsites && !rc; s++) {
            if (s == rs || c->leaders[s] < 0)
                continue;
            rc = ism_isend(buf, count, dt, c->leaders[s], TAG_BCAST, c, c->ctx + 1, ISM_MODE_STD,
                           &reqs[n++]);
            if (n == 64) {
                for (int i = 0; i < n; i++)
                    ism_wait_free(reqs[i]);
                n = 0;
            }
        }
        for (int i = 0; i < n; i++) {
            int r2 = ism_wait_free(reqs[i]);
            rc = rc ? rc : r2;
        }
    } else if (ism.lay.site != rs && c->rank == c->my_leader) {
        rc = ism_xrecv(buf, count, dt, root, TAG_BCAST, c);
    }
    if (rc)
        return rc;
    if (c->lsize > 1) {
        int lroot = ism.lay.site == rs ? c->l_of[root] : c->l_of[c->my_leader];
        rc = l_bcast(buf, count, dt, lroot, c);
    }
    return rc;
}

int ism_reduce(const void *sbuf, void *rbuf, int count, ism_dt *dt, ism_op *op, int root,
               ism_comm *c)
{
    int rc;
    size_t bytes = (size_t)count * (size_t)dt->extent;
    if (c->all_local)
        return l_reduce(sbuf, rbuf, count, dt, op, c->l_of[root], c);
    int rs = c->site_of[root];
    int lroot = ism.lay.site == rs ? c->l_of[root] : c->l_of[c->my_leader];
    if (ism.lay.site == rs) {
        rc = l_reduce(sbuf, rbuf, count, dt, op, lroot, c);
        if (rc || c->rank != root)
            return rc;
        void *tmp = malloc(bytes ? bytes : 1);
        if (!tmp)
            return ISM_ERR_NO_MEM;
        for (int s = 0; s < ism.lay.nsites && !rc; s++) {
            if (s == rs || c->leaders[s] < 0)
                continue;
            rc = ism_xrecv(tmp, count, dt, c->leaders[s], TAG_REDUCE, c);
            if (!rc)
                rc = ism.be->reduce_local(tmp, rbuf, count, dt->v, op->v);
        }
        free(tmp);
        return rc;
    }
    void *tmp = c->lrank == lroot ? malloc(bytes ? bytes : 1) : NULL;
    if (c->lrank == lroot && !tmp)
        return ISM_ERR_NO_MEM;
    rc = l_reduce(sbuf, tmp, count, dt, op, lroot, c);
    if (!rc && c->lrank == lroot)
        rc = ism_xsend(tmp, count, dt, root, TAG_REDUCE, c);
    free(tmp);
    return rc;
}

int ism_allreduce(const void *sbuf, void *rbuf, int count, ism_dt *dt, ism_op *op, ism_comm *c)
{
    int rc;
    size_t bytes = (size_t)count * (size_t)dt->extent;
    if (c->all_local) {
        ism_vh r = 0;
        rc = ism.be->iallreduce(sbuf, rbuf, count, dt->v, op->v, c->vcomm, &r);
        return ism_vwait(rc, &r);
    }
    int lroot = c->l_of[c->my_leader];
    int leader = c->rank == c->my_leader;
    /* in place: at the leader the vendor takes IN_PLACE; elsewhere rbuf holds the input */
    rc = l_reduce(leader ? sbuf : (sbuf ? sbuf : rbuf), leader ? rbuf : NULL, count, dt, op,
                  lroot, c);
    if (rc)
        return rc;
    if (leader) {
        char *part = malloc(bytes * (size_t)ism.lay.nsites + 1);
        ism_req **reqs = calloc((size_t)ism.lay.nsites * 2, sizeof *reqs);
        int n = 0;
        if (!part || !reqs)
            return ISM_ERR_NO_MEM;
        memcpy(part + bytes * (size_t)ism.lay.site, rbuf, bytes);
        for (int s = 0; s < ism.lay.nsites && !rc; s++) {
            if (s == ism.lay.site || c->leaders[s] < 0)
                continue;
            rc = ism_irecv(part + bytes * (size_t)s, count, dt, c->leaders[s], TAG_ALLREDUCE, c,
                           c->ctx + 1, &reqs[n++]);
            if (!rc)
                rc = ism_isend(rbuf, count, dt, c->leaders[s], TAG_ALLREDUCE, c, c->ctx + 1,
                               ISM_MODE_STD, &reqs[n++]);
        }
        for (int i = 0; i < n; i++) {
            int r2 = ism_wait_free(reqs[i]);
            rc = rc ? rc : r2;
        }
        /* fold from the last site down: P0 op (P1 op (... op Pn)) on every leader */
        int have = 0;
        for (int s = ism.lay.nsites - 1; s >= 0 && !rc; s--) {
            if (c->leaders[s] < 0)
                continue;
            if (!have) {
                memcpy(rbuf, part + bytes * (size_t)s, bytes);
                have = 1;
            } else {
                rc = ism.be->reduce_local(part + bytes * (size_t)s, rbuf, count, dt->v, op->v);
            }
        }
        free(part);
        free(reqs);
        if (rc)
            return rc;
    }
    if (c->lsize > 1)
        rc = l_bcast(rbuf, count, dt, lroot, c);
    return rc;
}

/* Allgather. When the members at each site are consecutive comm ranks (MPI_COMM_WORLD
 * and its duplicates), in place: a vendor allgather builds this
 * site's block in place, leaders swap site blocks, a vendor bcast spreads the whole. */
int ism_allgather(const void *sbuf, void *rbuf, int count, ism_dt *dt, ism_comm *c)
{
    size_t blk = (size_t)count * (size_t)dt->extent;
    int rc;
    if (c->all_local)
        return l_allgather(sbuf, rbuf, count, dt, c);
    if (!c->site_runs) {
        int *cd = malloc(sizeof(int) * 2 * (size_t)c->size);
        if (!cd)
            return ISM_ERR_NO_MEM;
        for (int r = 0; r < c->size; r++) {
            cd[r] = count;
            cd[c->size + r] = r * count;
        }
        rc = ism_allgatherv(sbuf, count, dt, rbuf, cd, cd + c->size, dt, c);
        free(cd);
        return rc;
    }
    char *base = rbuf;
    char *mine = base + (size_t)c->leaders[ism.lay.site] * blk;
    /* in place (sbuf NULL): the vendor finds our block at our rank's slot of `mine` */
    rc = l_allgather(sbuf, mine, count, dt, c);
    if (rc)
        return rc;
    if (c->rank == c->my_leader) {
        ism_req **reqs = calloc((size_t)ism.lay.nsites * 2, sizeof *reqs);
        int n = 0;
        if (!reqs)
            return ISM_ERR_NO_MEM;
        for (int s = 0; s < ism.lay.nsites && !rc; s++) {
            if (s == ism.lay.site || c->leaders[s] < 0)
                continue;
            int members = 0;
            for (int r = 0; r < c->size; r++)
                members += c->site_of[r] == s;
            rc = ism_irecv(base + (size_t)c->leaders[s] * blk, count * members, dt, c->leaders[s],
                           TAG_ALLGATHER, c, c->ctx + 1, &reqs[n++]);
            if (!rc)
                rc = ism_isend(mine, count * c->lsize, dt, c->leaders[s], TAG_ALLGATHER, c,
                               c->ctx + 1, ISM_MODE_STD, &reqs[n++]);
        }
        for (int i = 0; i < n; i++) {
            int r2 = ism_wait_free(reqs[i]);
            rc = rc ? rc : r2;
        }
        free(reqs);
        if (rc)
            return rc;
    }
    return l_bcast(rbuf, count * c->size, dt, c->l_of[c->my_leader], c);
}
