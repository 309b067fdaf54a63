/* comm.c: communicators as the core sees them.
 *
 * A communicator maps its ranks to global ranks, to sites, and to ranks of a vendor
 * communicator holding its members at this site; it knows each site's leader (the
 * lowest comm rank there) for two-level collectives, and carries the context id that
 * tags its cross-site frames (ctx for point-to-point, ctx+1 for collectives).
 */
#include <stdlib.h>
#include <string.h>

#include "core.h"

ism_errh ism_errh_fatal = {0}, ism_errh_return = {1}, ism_errh_abort = {2};
ism_comm ism_comm_world, ism_comm_self;

#define ISM_CTX_WORLD 0x10u
#define ISM_CTX_SELF 0x20u

static int *ints(int n, int fill)
{
    int *v = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    for (int i = 0; i < n; i++)
        v[i] = fill;
    return v;
}

/* Fill site structure from g_of (comm rank -> global rank). */
static void comm_sites(ism_comm *c)
{
    c->site_of = ints(c->size, 0);
    c->leaders = ints(ism.nsites, -1);
    c->nleaders = 0;
    for (int r = 0; r < c->size; r++) {
        int s = ism.site_of_g[c->g_of[r]];
        c->site_of[r] = s;
        if (c->leaders[s] < 0) {
            c->leaders[s] = r;
            c->nleaders++;
        }
    }
    c->my_leader = c->leaders[ism.site];
    c->all_local = c->nleaders <= 1;
}

int ism_comm_build_world(void)
{
    ism_comm *w = &ism_comm_world;
    int n = ism.gsize, off = ism.site_off[ism.site];
    w->ctx = ISM_CTX_WORLD;
    w->rank = ism.grank;
    w->size = n;
    w->g_of = ints(n, 0);
    w->c_of_g = ints(n, 0);
    w->l_of = ints(n, -1);
    w->c_of_l = ints(ism.lsize, 0);
    for (int r = 0; r < n; r++) {
        w->g_of[r] = r;
        w->c_of_g[r] = r;
    }
    for (int l = 0; l < ism.lsize; l++) {
        w->l_of[off + l] = l;
        w->c_of_l[l] = off + l;
    }
    w->vcomm = ism.vapp;
    w->lsize = ism.lsize;
    w->lrank = ism.lrank;
    w->errh = &ism_errh_fatal;
    w->builtin = 1;
    strcpy(w->name, "MPI_COMM_WORLD");
    comm_sites(w);

    ism_comm *s = &ism_comm_self;
    s->ctx = ISM_CTX_SELF;
    s->rank = 0;
    s->size = 1;
    s->g_of = ints(1, ism.grank);
    s->c_of_g = ints(n, -1);
    s->c_of_g[ism.grank] = 0;
    s->l_of = ints(1, 0);
    s->c_of_l = ints(1, 0);
    s->vcomm = ism.be->comm_self;
    s->lsize = 1;
    s->lrank = 0;
    s->errh = &ism_errh_fatal;
    s->builtin = 1;
    strcpy(s->name, "MPI_COMM_SELF");
    comm_sites(s);
    return 0;
}

ism_comm *ism_comm_by_ctx(uint32_t ctx)
{
    uint32_t base = ctx & ~1u;
    if (base == ISM_CTX_WORLD)
        return &ism_comm_world;
    if (base == ISM_CTX_SELF)
        return &ism_comm_self;
    return NULL;
}
