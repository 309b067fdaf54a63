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
#include "../coll/coll.h"

ism_errh ism_errh_fatal = {0, NULL, 0}, ism_errh_return = {1, NULL, 0}, ism_errh_abort = {2, NULL, 0};
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
static int comm_sites(ism_comm *c)
{
    c->site_of = ints(c->size, 0);
    c->leaders = ints(ism.lay.nsites, -1);
    if (!c->site_of || !c->leaders)
        return ISM_ERR_NO_MEM;
    c->nleaders = 0;
    c->site_runs = 1;
    for (int r = 0; r < c->size; r++) {
        int s = ism.site_of_g[c->g_of[r]];
        c->site_of[r] = s;
        if (c->leaders[s] < 0) {
            c->leaders[s] = r;
            c->nleaders++;
        } else if (c->site_of[r - 1] != s) {
            c->site_runs = 0;
        }
    }
    c->my_leader = c->leaders[ism.lay.site];
    c->all_local = c->nleaders <= 1;
    return 0;
}

int ism_comm_build_world(void)
{
    ism_comm *w = &ism_comm_world;
    int n = ism.lay.gsize, off = ism.lay.site_off[ism.lay.site];
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
    if (comm_sites(w))
        return ISM_ERR_NO_MEM;

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
    return comm_sites(s);
}

/* Communicators created at run time, for frame dispatch by context id. */
static ism_comm **registry;
static int nreg, capreg;
/* Context ids. Every creation agrees on an id that no member uses (ids come in pairs: ctx
 * for point-to-point, ctx + 1 for collectives), in one of two disjoint spaces:
 *  - blocking creations (the program's context, one at a time per process) take ids from
 *    [CTX_BLOCK_LO, CTX_NB_LO): every member offers its next free id, the maximum wins.
 *    All ids from next_ctx up are free, so one allreduce suffices.
 *  - creations inside a nonblocking collective (MPI_Comm_idup) take ids from
 *    [CTX_NB_LO, CTX_BOOT_LO). Several may be in flight at once on overlapping
 *    communicators, started in different orders on different processes, so each round
 *    has two allreduces:
 *      offer:   each member holds and offers its lowest free id from the round's floor;
 *               if the offers differ, all offer again from the largest;
 *      confirm: each member checks its hold is intact and locks it; the id is taken only
 *               if every member could lock it.
 *    Agreements are ordered by their parent's context id (the same on every process). An
 *    offer skips locked ids and the holds of agreements that go before it; it may take
 *    the unlocked hold of one that goes after it, which then fails its confirmation and
 *    offers again. So the first agreement in the order always gets through, and two
 *    agreements never keep taking each other's ids (which a plain "skip every hold" rule
 *    does when two processes start them in opposite orders).
 *  - create_group's bootstrap ids (boot_ctx) live above CTX_BOOT_LO. */
#define CTX_BLOCK_LO 0x40u
#define CTX_NB_LO 0x40000000u
#define CTX_BOOT_LO 0x80000000u
#define CTX_NB_ROUNDS 100000

static uint32_t next_ctx = CTX_BLOCK_LO, next_nb = CTX_NB_LO;

typedef struct {
    uint32_t lo, n, prio; /* ids lo .. lo + 2n - 2; prio: the parent's context id */
    int locked, bumped;
} ctx_hold;
static ctx_hold **holds;
static int nholds, capholds;

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

static int overlaps(const ctx_hold *h, uint32_t p, uint32_t n)
{
    return p < h->lo + 2u * h->n && h->lo < p + 2u * n;
}

/* The first id from `from` with n id pairs that no locked hold and no hold of an
 * agreement before `me` covers. */
static uint32_t nb_first_free(uint32_t from, const ctx_hold *me)
{
    uint32_t p = from;
    for (int moved = 1; moved;) {
        moved = 0;
        for (int i = 0; i < nholds; i++) {
            const ctx_hold *h = holds[i];
            if (h != me && (h->locked || h->prio < me->prio) && overlaps(h, p, me->n)) {
                p = h->lo + 2u * h->n;
                moved = 1;
            }
        }
    }
    return p;
}

static int nb_add(ctx_hold *h)
{
    if (nholds == capholds) {
        int cap = capholds ? capholds * 2 : 8;
        ctx_hold **a = realloc(holds, sizeof *a * (size_t)cap);
        if (!a)
            return ISM_ERR_NO_MEM;
        holds = a;
        capholds = cap;
    }
    holds[nholds++] = h;
    return 0;
}

static void nb_remove(const ctx_hold *h)
{
    for (int i = 0; i < nholds; i++)
        if (holds[i] == h) {
            holds[i] = holds[--nholds];
            return;
        }
}

/* Hold [p, p + 2n) for me: unlocked holds of later agreements there lose their ids. */
static void nb_take(ctx_hold *me, uint32_t p)
{
    me->lo = p;
    me->locked = me->bumped = 0;
    for (int i = 0; i < nholds; i++)
        if (holds[i] != me && !holds[i]->locked && overlaps(holds[i], p, me->n))
            holds[i]->bumped = 1;
}

static int agree_nb(ism_comm *parent, int n, uint32_t *out)
{
    ctx_hold me = {0, (uint32_t)n, parent->ctx, 0, 0};
    int rc = nb_add(&me);
    if (rc)
        return rc;
    rc = ISM_ERR_INTERN;
    uint32_t from = next_nb;
    for (int round = 0; round < CTX_NB_ROUNDS; round++) {
        uint32_t p = nb_first_free(from > next_nb ? from : next_nb, &me);
        if (p + 2u * (uint32_t)n > CTX_BOOT_LO)
            break; /* 2^29 nonblocking creations: the space is used up */
        nb_take(&me, p);
        /* offer: max and -min of the offers in one allreduce */
        int mine[2] = {(int)p, -(int)p}, all[2] = {0, 0};
        if ((rc = ism_allreduce(mine, all, 2, ISM_DT_INT, &ism_op_table[ISM_OPI_MAX], parent)))
            break;
        rc = ISM_ERR_INTERN;
        if (all[0] != -all[1]) {
            from = (uint32_t)all[0];
            continue;
        }
        /* confirm: everyone offered p; each locks it unless a preceding agreement took it */
        int ok = !me.bumped, all_ok = 0;
        me.locked = ok;
        if ((rc = ism_allreduce(&ok, &all_ok, 1, ISM_DT_INT, &ism_op_table[ISM_OPI_MIN], parent)))
            break; /* op 0x02: MIN */
        rc = ISM_ERR_INTERN;
        if (all_ok) {
            if (p + 2u * (uint32_t)n > next_nb)
                next_nb = p + 2u * (uint32_t)n;
            *out = p;
            rc = 0;
            break;
        }
        me.locked = 0;
        from = p;
    }
    nb_remove(&me);
    return rc;
}

int ism_ctx_agree_n(ism_comm *parent, int n, uint32_t *out)
{
    /* Under MPI_THREAD_MULTIPLE two threads may agree at once on different parents (the
     * core lock is given up while the allreduce waits): both would offer the same next
     * free id. The nonblocking agreement's holds and confirmation are made for that. */
    if (ism_nbc_cur || ism_mt_on)
        return agree_nb(parent, n, out);
    int mine = (int)next_ctx, agreed = 0;
    int rc = ism_allreduce(&mine, &agreed, 1, ISM_DT_INT, &ism_op_table[ISM_OPI_MAX], parent);
    if (rc)
        return rc;
    if ((uint32_t)agreed + 2u * (uint32_t)n > CTX_NB_LO)
        return ISM_ERR_INTERN; /* 2^29 creations: the space is used up */
    *out = (uint32_t)agreed;
    next_ctx = (uint32_t)agreed + 2u * (uint32_t)n;
    return 0;
}

/* Agree on a context id unused by every member. */
int ism_ctx_agree(ism_comm *parent, uint32_t *out) { return ism_ctx_agree_n(parent, 1, out); }

/* Context ids for a communicator made from every member of parent (dup, idup, split,
 * create): taken from a block of CTX_KIDS id pairs agreed over parent once, so only every
 * CTX_KIDS-th such creation costs an agreement across sites. Every member makes these
 * creations on parent in the same order (they are collective over parent, and a blocking
 * one first completes the nonblocking ones pending on parent), so all take the same id.
 * A member may then be first to send on the new communicator; the frames wait in the
 * unexpected queue of the other site until it exists there (MPICH's comm/ctxalloc does
 * 200,000 dup/free pairs). */
#define CTX_KIDS 32
int ism_ctx_child(ism_comm *parent, int n, uint32_t *out)
{
    if (parent->kid_end - parent->kid_next < 2u * (uint32_t)n) {
        uint32_t lo;
        int k = n > CTX_KIDS ? n : CTX_KIDS;
        int rc = ism_ctx_agree_n(parent, k, &lo);
        if (rc)
            return rc;
        parent->kid_next = lo;
        parent->kid_end = lo + 2u * (uint32_t)k;
    }
    *out = parent->kid_next;
    parent->kid_next += 2u * (uint32_t)n;
    return 0;
}

uint32_t ism_ctx_next(void) { return next_ctx; }

/* After an agreement made elsewhere (intercommunicators, in the blocking space): ids
 * below ctx + 2n are used. */
void ism_ctx_reserve(uint32_t ctx, int n)
{
    if (ctx < CTX_NB_LO && ctx + 2u * (uint32_t)n > next_ctx)
        next_ctx = ctx + 2u * (uint32_t)n;
    else if (ctx >= CTX_NB_LO && ctx < CTX_BOOT_LO && ctx + 2u * (uint32_t)n > next_nb)
        next_nb = ctx + 2u * (uint32_t)n; /* agreed in the nonblocking space (threads) */
}

/* Duplicate a vendor communicator, always with the vendor's MPI_Comm_idup (blocking and
 * nonblocking creations do not match each other, so every member must choose the same
 * form), waiting in isthmus's progress loop, which inside a nonblocking collective yields
 * to the program. Outside one, the loop also drives this process's pending collectives:
 * Open MPI 4.1 holds a blocking communicator creation back while an idup on a
 * communicator with a lower vendor context id is pending, and that idup may need this
 * process's own pending idup coroutine to reach its vendor call (idup(world) on every
 * rank, then MPI_Comm_dup(other): tests/mpi/comm_idup.c part 3). */
int ism_vendor_dup(ism_vh v, ism_vh *out)
{
    _Alignas(16) unsigned char slot[ISM_VSLOT] = {0};
    ism_vh req = 0;
    int rc = ism.be->comm_idup(v, slot, &req);
    ism_nbc_creation_issued();
    rc = ism_vwait(rc, &req);
    return rc ? rc : ism.be->comm_idup_take(slot, out);
}


void ism_comm_release(ism_comm *c)
{
    if (c->coll)
        ism_coll_shm_free(c->coll->shm); /* cache.c frees the rest, without MPI in tests */
    ism_coll_comm_free(c);
    free(c->local_g);
    free(c->g_of);
    free(c->l_of);
    free(c->c_of_l);
    free(c->c_of_g);
    free(c->leaders);
    free(c->site_of);
    free(c);
}

/* A program's communicator that spans sites and has several members at this site gets
 * its second vendor communicator when it is made (the constructors' hand-out in abi/, and
 * world in MPI_Init), where every member of the site makes it at the same point: a
 * nonblocking collective started on it later (coll/nb.c) must not have to make it, which
 * is a vendor collective over the site and would make the start block (the topology
 * constructors, abi/topo.c, did so already for the neighbourhood exchanges). The library's
 * own communicators (a window's, a persistent collective's) do without: one vendor
 * context each fewer. A failure leaves it to the first such collective, which copes. */
void ism_comm_spanning_vcoll(ism_comm *c)
{
    if (ism.multisite && !c->is_inter && !c->all_local && c->lsize > 1 && !c->vcoll)
        (void)ism_comm_add_vcoll(c);
}

void ism_comm_register(ism_comm *c)
{
    if (nreg == capreg) {
        int cap = capreg ? capreg * 2 : 16;
        ism_comm **r = realloc(registry, sizeof *registry * (size_t)cap);
        if (!r)
            ism_die("out of memory registering a communicator");
        registry = r;
        capreg = cap;
    }
    registry[nreg++] = c;
}

void ism_comm_unregister(ism_comm *c)
{
    for (int i = 0; i < nreg; i++)
        if (registry[i] == c) {
            registry[i] = registry[--nreg];
            return;
        }
}

/* A communicator of n members (global ranks g[0..n), in new-rank order) that includes
 * the caller, over vendor communicator vcomm, which holds the members at this site in
 * the same order. Not yet registered. */
ism_comm *ism_comm_new(int n, const int *g, uint32_t ctx, ism_vh vcomm, int *rc)
{
    ism_comm *c = calloc(1, sizeof *c);
    *rc = ISM_ERR_NO_MEM;
    if (!c)
        return NULL;
    c->ctx = ctx;
    c->size = n;
    c->rank = -1;
    c->g_of = ints(n, 0);
    c->l_of = ints(n, -1);
    c->c_of_g = ints(ism.lay.gsize, -1);
    c->c_of_l = ints(n, -1);
    if (!c->g_of || !c->l_of || !c->c_of_g || !c->c_of_l) {
        ism_comm_release(c);
        return NULL;
    }
    int l = 0;
    for (int r = 0; r < n; r++) {
        c->g_of[r] = g[r];
        c->c_of_g[g[r]] = r;
        if (g[r] == ism.grank)
            c->rank = r;
        if (ism.site_of_g[g[r]] == ism.lay.site) {
            c->l_of[r] = l;
            c->c_of_l[l++] = r;
        }
    }
    c->lsize = l;
    c->lrank = c->rank >= 0 ? c->l_of[c->rank] : -1;
    c->vcomm = vcomm;
    c->errh = &ism_errh_fatal;
    if (c->rank < 0 || comm_sites(c)) {
        *rc = c->rank < 0 ? ISM_ERR_INTERN : ISM_ERR_NO_MEM;
        ism_comm_release(c);
        return NULL;
    }
    *rc = 0;
    return c;
}

int ism_comm_dup(ism_comm *p, ism_comm **out)
{
    uint32_t ctx;
    /* MPI_Comm_idup agrees over p even when p's block has ids left: every member has then
     * started the idup before any issues the vendor's idup, as under the vendor alone
     * (see ism_vendor_dup) */
    int rc = ism_nbc_cur ? ism_ctx_agree(p, &ctx) : ism_ctx_child(p, 1, &ctx);
    if (rc)
        return rc;
    ism_vh v;
    rc = ism_vendor_dup(p->vcomm, &v);
    if (rc)
        return rc;
    ism_comm *c = ism_comm_new(p->size, p->g_of, ctx, v, &rc);
    if (!c) {
        ism.be->comm_free(&v);
        return rc;
    }
    c->errh = p->errh;
    ism_comm_register(c);
    *out = c;
    return 0;
}

/* The new-rank order of a split: members with my color sorted by (key, parent rank). */
typedef ism_keyed keyed;
int ism_keyed_cmp(const void *a, const void *b)
{
    const keyed *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->prank < y->prank ? -1 : x->prank > y->prank;
}

int ism_comm_split(ism_comm *p, int color, int key, ism_comm **out)
{
    *out = NULL;
    uint32_t ctx;
    int rc = ism_ctx_child(p, 1, &ctx);
    if (rc)
        return rc;
    int mine[2] = {color, key};
    int *all = malloc(sizeof(int) * 2 * (size_t)p->size);
    keyed *m = malloc(sizeof *m * (size_t)p->size);
    int *g = malloc(sizeof(int) * (size_t)p->size);
    if (!all || !m || !g) {
        free(all);
        free(m);
        free(g);
        return ISM_ERR_NO_MEM;
    }
    rc = ism_allgather(mine, all, 2, ISM_DT_INT, p);
    int n = 0;
    for (int r = 0; !rc && color >= 0 && r < p->size; r++)
        if (all[2 * r] == color) {
            m[n].key = all[2 * r + 1];
            m[n].prank = r;
            n++;
        }
    free(all);
    qsort(m, (size_t)n, sizeof *m, ism_keyed_cmp);
    for (int i = 0; i < n; i++)
        g[i] = p->g_of[m[i].prank];
    /* the vendor orders its part by the same key: the new rank */
    int newrank = 0;
    for (int i = 0; i < n; i++)
        if (g[i] == ism.grank)
            newrank = i;
    free(m);
    ism_vh v = ism.be->comm_null;
    if (!rc) {
        ism_nbc_settle_creations(p->vcomm);
        rc = ism.be->comm_split(p->vcomm, color, newrank, &v);
    }
    if (!rc && color >= 0) {
        ism_comm *c = ism_comm_new(n, g, ctx, v, &rc);
        if (c) {
            ism_comm_register(c);
            *out = c;
        } else {
            ism.be->comm_free(&v);
        }
    }
    free(g);
    return rc;
}

int ism_comm_create(ism_comm *p, const ism_group *grp, ism_comm **out)
{
    /* Disjoint groups may be passed by different ranks (MPI-2.2): each group's smallest
     * global rank names it, so one split builds all of them. */
    int color = -1, key = 0;
    if (grp->rank != ISM_UNDEFINED) {
        color = grp->g[0];
        for (int i = 1; i < grp->size; i++)
            color = grp->g[i] < color ? grp->g[i] : color;
        key = grp->rank;
    }
    return ism_comm_split(p, color, key, out);
}

/* The bootstrap context of a create_group: from the parent's context, the tag, the
 * members, and how often this process already did a create_group with all three the same
 * (every member counts the same calls). Two consecutive calls with different groups on
 * one tag then never share a bootstrap context: a member fast into the next call must
 * not reach one still agreeing on the previous (MPICH's comm/comm_group_rand). */
typedef struct { uint32_t ctx; int tag; uint64_t members; uint32_t calls; } boot_count;
static boot_count *boots;
static int nboot, capboot;

static uint32_t boot_ctx(uint32_t pctx, int tag, const ism_group *grp)
{
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < grp->size; i++)
        h = (h ^ (uint64_t)(uint32_t)grp->g[i]) * 1099511628211ull;
    uint32_t calls = 0;
    int i = 0;
    for (; i < nboot; i++)
        if (boots[i].ctx == pctx && boots[i].tag == tag && boots[i].members == h)
            break;
    if (i == nboot && nboot == capboot) {
        int cap = capboot ? capboot * 2 : 16;
        boot_count *n = realloc(boots, sizeof *n * (size_t)cap);
        if (n) {
            boots = n;
            capboot = cap;
        }
    }
    if (i < nboot) {
        calls = ++boots[i].calls;
    } else if (nboot < capboot) {
        boots[nboot++] = (boot_count){pctx, tag, h, 0};
    }
    uint64_t k = ((uint64_t)pctx * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)(uint32_t)tag << 32) ^
                 h ^ ((uint64_t)calls * 0xc2b2ae3d27d4eb4full);
    k ^= k >> 31;
    k *= 0xbf58476d1ce4e5b9ull;
    k ^= k >> 29;
    return 0x80000000u | ((uint32_t)k & 0x7ffffffeu);
}

/* Only the members of grp call this. They first build the vendor communicator of their
 * site (collective over the local members only), then agree on a context id on a
 * bootstrap communicator whose context derives from the parent's, the tag and the group
 * (boot_ctx). */
int ism_comm_create_group(ism_comm *p, const ism_group *grp, int tag, ism_comm **out)
{
    *out = NULL;
    int nl = 0;
    int *lr = malloc(sizeof(int) * (size_t)(grp->size + 1));
    if (!lr)
        return ISM_ERR_NO_MEM;
    for (int i = 0; i < grp->size; i++) {
        int pr = p->c_of_g[grp->g[i]];
        if (pr < 0) {
            free(lr);
            return ISM_ERR_GROUP;
        }
        if (p->l_of[pr] >= 0)
            lr[nl++] = p->l_of[pr];
    }
    ism_vh v;
    ism_nbc_settle_creations(p->vcomm);
    int rc = ism.be->comm_create_group(p->vcomm, lr, nl, tag, &v);
    free(lr);
    if (rc)
        return rc;
    uint32_t boot = boot_ctx(p->ctx, tag, grp);
    ism_comm *b = ism_comm_new(grp->size, grp->g, boot, v, &rc);
    if (!b) {
        ism.be->comm_free(&v);
        return rc;
    }
    ism_comm_register(b);
    uint32_t ctx = 0;
    rc = ism_ctx_agree(b, &ctx);
    ism_comm_unregister(b);
    if (rc) {
        ism.be->comm_free(&v);
        ism_comm_release(b);
        return rc;
    }
    b->ctx = ctx;
    ism_comm_register(b);
    *out = b;
    return 0;
}

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* ISM_SPLIT_NODE: the ranks of this node at this site (shared memory is never shared
 * between sites); ISM_SPLIT_SITE: the ranks of this site. The color is the lowest
 * parent rank with the same node (site) identity. */
int ism_comm_split_type(ism_comm *p, int type, int key, ism_comm **out)
{
    /* every rank takes part in the same exchange, also with MPI_UNDEFINED (type 0) */
    int undefined = type != ISM_SPLIT_NODE && type != ISM_SPLIT_SITE;
    int id[4];
    uint64_t h = type == ISM_SPLIT_NODE ? fnv1a(ism.procname) : 0;
    id[0] = undefined;
    id[1] = ism.lay.site;
    id[2] = (int)(uint32_t)(h >> 32);
    id[3] = (int)(uint32_t)h;
    int *all = malloc(sizeof(int) * 4 * (size_t)p->size);
    if (!all)
        return ISM_ERR_NO_MEM;
    int rc = ism_allgather(id, all, 4, ISM_DT_INT, p);
    int color = undefined ? -1 : p->rank;
    for (int r = 0; !rc && !undefined && r < p->size; r++)
        if (!all[4 * r] && all[4 * r + 1] == id[1] && all[4 * r + 2] == id[2] &&
            all[4 * r + 3] == id[3]) {
            color = r;
            break;
        }
    free(all);
    return rc ? rc : ism_comm_split(p, color, key, out);
}

int ism_comm_add_vcoll(ism_comm *c)
{
    return c->vcoll ? 0 : ism_vendor_dup(c->vcomm, &c->vcoll);
}

/* A communicator freed while requests are pending (MPI: they complete normally) stays
 * registered, so that their frames still match and their statuses can be translated,
 * until no request is left that could use it: none of the cross-site lists names it and,
 * since a vendor-level request does not say which communicator it belongs to, no request
 * exists at all. It is released by a later ism_comm_free (the program's handle is gone
 * at once); a program that always keeps some request alive keeps its freed
 * communicators until then. */
static ism_comm **zombies;
static int nzombie, capzombie;

static int in_use(const ism_comm *c)
{
    if (ism_req_live() > 0)
        return 1;
    const ism_reqlist *lists[] = {&ism.posted, &ism.rsends, &ism.rrecvs, &ism.bsends};
    for (size_t i = 0; i < sizeof lists / sizeof *lists; i++)
        for (const ism_req *r = lists[i]->head; r; r = r->next)
            if (r->comm == c)
                return 1;
    return 0;
}

static int release(ism_comm *c);

static void reap(void)
{
    for (int i = 0; i < nzombie;)
        if (!in_use(zombies[i])) {
            ism_comm *z = zombies[i];
            zombies[i] = zombies[--nzombie];
            release(z);
        } else {
            i++;
        }
}

int ism_comm_free(ism_comm *c)
{
    if (c->builtin)
        return ISM_ERR_COMM;
    reap();
    if (in_use(c)) {
        if (nzombie == capzombie) {
            int cap = capzombie ? capzombie * 2 : 8;
            ism_comm **z = realloc(zombies, sizeof *z * (size_t)cap);
            if (!z)
                return ISM_ERR_NO_MEM;
            zombies = z;
            capzombie = cap;
        }
        zombies[nzombie++] = c;
        return 0;
    }
    return release(c);
}

static int release(ism_comm *c)
{
    ism_comm_unregister(c);
    if (c->merged)
        ism_comm_free(c->merged);
    if (c->local)
        ism_comm_free(c->local);
    if (c->vcoll)
        ism.be->comm_free(&c->vcoll);
    int rc = ism.be->comm_free(&c->vcomm);
    ism_comm_release(c);
    return rc;
}
