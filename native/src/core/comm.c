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

ism_errh ism_errh_fatal = {0, NULL}, ism_errh_return = {1, NULL}, ism_errh_abort = {2, NULL};
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

/* Communicators created at run time, for frame dispatch by context id. */
static ism_comm **registry;
static int nreg, capreg;
static uint32_t next_ctx = 0x40u;

ism_comm *ism_comm_by_ctx(uint32_t ctx)
{
    uint32_t base = ctx & ~1u;
    if (base == ISM_CTX_WORLD)
        return &ism_comm_world;
    if (base == ISM_CTX_SELF)
        return &ism_comm_self;
    for (int i = 0; i < nreg; i++)
        if (registry[i]->ctx == base)
            return registry[i];
    return NULL;
}

/* Agree on a context id unused by every member: the maximum of their next free ids. */
static int agree_ctx(ism_comm *parent, uint32_t *out)
{
    int mine = (int)next_ctx, agreed = 0;
    int rc = ism_allreduce(&mine, &agreed, 1, &ism_dt_table[0x09], &ism_op_table[0x03], parent);
    if (rc)
        return rc;
    *out = (uint32_t)agreed;
    next_ctx = (uint32_t)agreed + 2u;
    return 0;
}

static int *copy_ints(const int *v, int n)
{
    int *c = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    if (c && n > 0)
        memcpy(c, v, sizeof(int) * (size_t)n);
    return c;
}

int ism_comm_dup(ism_comm *p, ism_comm **out)
{
    uint32_t ctx;
    int rc = agree_ctx(p, &ctx);
    if (rc)
        return rc;
    ism_comm *c = calloc(1, sizeof *c);
    if (!c)
        return ISM_ERR_NO_MEM;
    *c = *p;
    c->ctx = ctx;
    c->builtin = 0;
    c->name[0] = 0;
    rc = ism.be->comm_dup(p->vcomm, &c->vcomm);
    if (rc) {
        free(c);
        return rc;
    }
    c->g_of = copy_ints(p->g_of, p->size);
    c->l_of = copy_ints(p->l_of, p->size);
    c->c_of_l = copy_ints(p->c_of_l, p->lsize);
    c->c_of_g = copy_ints(p->c_of_g, ism.gsize);
    c->leaders = copy_ints(p->leaders, ism.nsites);
    c->site_of = copy_ints(p->site_of, p->size);
    if (nreg == capreg) {
        capreg = capreg ? capreg * 2 : 16;
        registry = realloc(registry, sizeof *registry * (size_t)capreg);
    }
    registry[nreg++] = c;
    *out = c;
    return 0;
}

int ism_comm_free(ism_comm *c)
{
    if (c->builtin)
        return ISM_ERR_COMM;
    for (int i = 0; i < nreg; i++)
        if (registry[i] == c) {
            registry[i] = registry[--nreg];
            break;
        }
    int rc = ism.be->comm_free(&c->vcomm);
    free(c->g_of);
    free(c->l_of);
    free(c->c_of_l);
    free(c->c_of_g);
    free(c->leaders);
    free(c->site_of);
    free(c);
    return rc;
}
