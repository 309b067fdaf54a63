/* nb_hub.c: the alltoallw in flight through one rank per site, its hub: one WAN message
 * per ordered pair of sites (per 64 KiB), whatever the number of ranks, for the blocks
 * smaller than ISTHMUS_COLL_HUB_MAX (the seed's aggregation of a site's small messages
 * per destination site, as the blocking exchange of core/coll_general.c does, but as
 * phases of a collective in flight, nb.c). A larger block goes straight to its rank in
 * phase 1 (nb_move.c): relaying it would only add copies and a wait at the hub; both ends
 * know its size, so both decide alike.
 *
 * Phases, each one round of direct transfers:
 *   1. every member: its blocks for members of its own site, straight; a member not the
 *      hub sends the hub its sizes (bytes to and from each remote rank: only it knows
 *      them) and its bundle (its blocks for remote ranks, packed by site then rank), and
 *      posts the receive of its incoming bundle from the hub;
 *   2. the hub: the members' bundles, now that it knows their sizes;
 *   3. the hub: one message to and from each other site's hub, the blocks ordered by
 *      destination rank, then source rank, so that each destination's part is one run;
 *   4. the hub: each member's incoming bundle, by source site then rank;
 *   5. every member: each incoming block to its place (a non-contiguous one unpacked at
 *      the end).
 * Phases 2-4 are set when they begin (nb.c's prep), from what phases 1-3 received. A
 * message's length is known at both ends: each side computes it from the sizes its own
 * site's members give, and MPI's matching signatures make them agree.
 *
 * The hub is the site's leader, or the root at the root's site (a gather or scatter: its
 * blocks never wait at another rank of its site). A hub alone at its site sends and
 * receives the WAN messages straight from and into its bundles: no phases 2 and 4.
 */
#include <stdlib.h>
#include <string.h>

#include "nb.h"

typedef struct hub {
    int R;          /* remote ranks */
    int *rem;       /* the remote ranks, by site then rank */
    int *roff;      /* site s's first index in rem (nsites + 1) */
    int k, mi;      /* my site's members, and my index among them */
    int *mem;       /* my site's members, by rank */
    int *hub_of;    /* each site's hub (-1: no member) */
    int64_t *hdr;   /* row m: member m's bytes to (R) and from (R) each remote rank */
    char *ob, *ib;  /* my bundles: outgoing and incoming */
    char **bund;    /* the hub: each member's outgoing bundle */
    char **wout, **win; /* the hub: the message to and from each site */
    char **ibm;     /* the hub: each member's incoming bundle */
} hub;

static void hub_free(void *p)
{
    hub *h = p;
    if (!h)
        return;
    int ns = ism.lay.nsites;
    for (int m = 0; h->bund && m < h->k; m++)
        if (m != h->mi)
            free(h->bund[m]);
    for (int m = 0; h->ibm && m < h->k; m++)
        if (m != h->mi)
            free(h->ibm[m]);
    for (int s = 0; h->wout && s < ns; s++) {
        free(h->wout[s]);
        free(h->win[s]);
    }
    free(h->bund);
    free(h->ibm);
    free(h->wout);
    free(h->win);
    free(h->rem);
    free(h->roff);
    free(h->mem);
    free(h->hub_of);
    free(h->hdr);
    free(h->ob);
    free(h->ib);
    free(h);
}

static int64_t *osz(const hub *h, int m) { return h->hdr + (size_t)m * 2 * (size_t)h->R; }
static int64_t *isz(const hub *h, int m) { return osz(h, m) + h->R; }

static int64_t sum(const int64_t *v, int a, int b)
{
    int64_t t = 0;
    for (int i = a; i < b; i++)
        t += v[i];
    return t;
}

/* A transfer list of up to cap entries. */
typedef struct {
    nb_xfer *x;
    int n;
} xlist;

static void add(xlist *l, int kind, int peer, char *a, char *b, int64_t len)
{
    if (len > 0)
        l->x[l->n++] = (nb_xfer){kind, peer, a, b, len};
}

/* A message between hubs travels in segments of HUB_SEG bytes, each an eager message at
 * the default ISTHMUS_EAGER: a rendezvous message's credit window cannot fill a long fat
 * link on its own, where the members' blocks sent straight are many eager messages at
 * once. Both ends cut alike (a constant: ISTHMUS_EAGER may differ between sites). So a
 * site pair exchanges one message per 64 KiB, and one for anything smaller. */
#define HUB_SEG ((int64_t)64 << 10)

static int64_t segments(int64_t len) { return (len + HUB_SEG - 1) / HUB_SEG; }

static void add_cut(xlist *l, int kind, int peer, char *a, int64_t len)
{
    for (int64_t o = 0; o < len; o += HUB_SEG)
        add(l, kind, peer, a + o, NULL, len - o < HUB_SEG ? len - o : HUB_SEG);
}

/* 2. the hub receives each member's bundle */
static int hub_bundles(ism_coll_nb *nb, nb_phase *ph)
{
    hub *h = nb->ext;
    xlist l = {malloc(sizeof(nb_xfer) * (size_t)h->k + 1), 0};
    if (!l.x)
        return ISM_ERR_NO_MEM;
    int rc = 0;
    for (int m = 0; m < h->k && !rc; m++) {
        int64_t ot = sum(osz(h, m), 0, h->R);
        if (m == h->mi || !ot)
            continue;
        if (!(h->bund[m] = malloc((size_t)ot)))
            rc = ISM_ERR_NO_MEM;
        else
            add(&l, ISM_CA_RECV, h->mem[m], h->bund[m], NULL, ot);
    }
    if (!rc)
        rc = ism_coll_nb_set_direct(ph, l.x, l.n);
    free(l.x);
    return rc;
}

/* 3. one message to and from each other site's hub */
static int hub_wan(ism_coll_nb *nb, nb_phase *ph)
{
    hub *h = nb->ext;
    int ns = ism.lay.nsites, rc = 0;
    int64_t nx = 0; /* the segments to and from each site */
    for (int s = 0; s < ns; s++)
        for (int m = 0; m < h->k; m++) {
            nx += segments(sum(osz(h, m), h->roff[s], h->roff[s + 1])) +
                  segments(sum(isz(h, m), h->roff[s], h->roff[s + 1]));
        }
    xlist l = {malloc(sizeof(nb_xfer) * (size_t)(nx + 2 * ns) + 1), 0};
    int64_t *at = calloc((size_t)h->k + 1, sizeof *at); /* each bundle's read position */
    if (!l.x || !at)
        rc = ISM_ERR_NO_MEM;
    for (int s = 0; s < ns && !rc; s++) {
        int a = h->roff[s], b = h->roff[s + 1];
        if (a == b)
            continue;
        int64_t out = 0, in = 0;
        for (int m = 0; m < h->k; m++) {
            out += sum(osz(h, m), a, b);
            in += sum(isz(h, m), a, b);
        }
        if (h->k == 1) { /* alone at my site: the runs of my bundles are the messages */
            add_cut(&l, ISM_CA_RECV, h->hub_of[s], h->ib + sum(isz(h, 0), 0, a), in);
            add_cut(&l, ISM_CA_SEND, h->hub_of[s], h->ob + sum(osz(h, 0), 0, a), out);
            continue;
        }
        if ((out && !(h->wout[s] = malloc((size_t)out))) ||
            (in && !(h->win[s] = malloc((size_t)in)))) {
            rc = ISM_ERR_NO_MEM;
            break;
        }
        /* by destination, then source; the bundles are by site then rank, so each
         * member's blocks for site s follow each other in its bundle */
        int64_t o = 0;
        for (int i = a; i < b; i++)
            for (int m = 0; m < h->k; m++) {
                int64_t len = osz(h, m)[i];
                if (len)
                    memcpy(h->wout[s] + o, h->bund[m] + at[m], (size_t)len);
                o += len;
                at[m] += len;
            }
        add_cut(&l, ISM_CA_RECV, h->hub_of[s], h->win[s], in);
        add_cut(&l, ISM_CA_SEND, h->hub_of[s], h->wout[s], out);
    }
    for (int m = 0; h->bund && m < h->k; m++) /* copied into the messages */
        if (m != h->mi) {
            free(h->bund[m]);
            h->bund[m] = NULL;
        }
    if (!rc)
        rc = ism_coll_nb_set_direct(ph, l.x, l.n);
    free(l.x);
    free(at);
    return rc;
}

/* 4. each member's incoming bundle, by source site then rank */
static int hub_spread(ism_coll_nb *nb, nb_phase *ph)
{
    hub *h = nb->ext;
    int ns = ism.lay.nsites, rc = 0;
    xlist l = {malloc(sizeof(nb_xfer) * (size_t)h->k + 1), 0};
    int64_t *at = calloc((size_t)ns + 1, sizeof *at); /* each site's message read position */
    if (!l.x || !at)
        rc = ISM_ERR_NO_MEM;
    for (int m = 0; m < h->k && !rc; m++) { /* members in rank order: the messages' order */
        int64_t it = sum(isz(h, m), 0, h->R);
        char *dst = m == h->mi ? h->ib : it ? malloc((size_t)it) : NULL;
        if (it && !dst) {
            rc = ISM_ERR_NO_MEM;
            break;
        }
        if (m != h->mi)
            h->ibm[m] = dst;
        int64_t o = 0;
        for (int s = 0; s < ns; s++) {
            int64_t len = sum(isz(h, m), h->roff[s], h->roff[s + 1]);
            if (len)
                memcpy(dst + o, h->win[s] + at[s], (size_t)len);
            o += len;
            at[s] += len;
        }
        if (m != h->mi)
            add(&l, ISM_CA_SEND, h->mem[m], dst, NULL, it);
    }
    if (!rc)
        rc = ism_coll_nb_set_direct(ph, l.x, l.n);
    free(l.x);
    free(at);
    return rc;
}

static int64_t bytes_of(int64_t count, const ism_dt *dt)
{
    return count && dt ? count * dt->size : 0;
}

/* The layout and my sizes; 0 or an error. */
static int hub_setup(hub *h, ism_comm *c, int root, int64_t hub_max, const int64_t *scnt,
                     ism_dt *const *st, const int64_t *rcnt, ism_dt *const *rt)
{
    int n = c->size, ns = ism.lay.nsites, my = c->site_of[c->rank];
    h->rem = malloc(sizeof(int) * (size_t)n);
    h->mem = malloc(sizeof(int) * (size_t)n);
    h->roff = calloc((size_t)ns + 1, sizeof(int));
    h->hub_of = malloc(sizeof(int) * (size_t)ns + 1);
    if (!h->rem || !h->mem || !h->roff || !h->hub_of)
        return ISM_ERR_NO_MEM;
    for (int s = 0; s < ns; s++) {
        h->roff[s] = h->R;
        h->hub_of[s] = root >= 0 && c->site_of[root] == s ? root : c->leaders[s];
        for (int r = 0; r < n && s != my; r++)
            if (c->site_of[r] == s)
                h->rem[h->R++] = r;
    }
    h->roff[ns] = h->R;
    for (int r = 0; r < n; r++)
        if (c->site_of[r] == my) {
            if (r == c->rank)
                h->mi = h->k;
            h->mem[h->k++] = r;
        }
    int hubme = h->hub_of[my] == c->rank;
    h->hdr = calloc((size_t)(hubme ? h->k : 1) * 2 * (size_t)h->R + 1, sizeof(int64_t));
    if (!h->hdr)
        return ISM_ERR_NO_MEM;
    if (!hubme)
        h->mi = 0; /* my row is the only one */
    int64_t *o = osz(h, h->mi), *i = isz(h, h->mi);
    for (int x = 0; x < h->R; x++) {
        int j = h->rem[x];
        o[x] = bytes_of(scnt[j], st[j]);
        i[x] = bytes_of(rcnt[j], rt[j]);
        o[x] = o[x] < hub_max ? o[x] : 0; /* (a larger block goes straight) */
        i[x] = i[x] < hub_max ? i[x] : 0;
    }
    if (hubme) {
        h->bund = calloc((size_t)h->k, sizeof *h->bund);
        h->ibm = calloc((size_t)h->k, sizeof *h->ibm);
        h->wout = calloc((size_t)ns, sizeof *h->wout);
        h->win = calloc((size_t)ns, sizeof *h->win);
        if (!h->bund || !h->ibm || !h->wout || !h->win)
            return ISM_ERR_NO_MEM;
    }
    return 0;
}

int ism_coll_nb_hub_alltoallw(ism_coll_nb *nb, const void *src, const int64_t *scnt,
                              const int64_t *sdsp, ism_dt *const *st, void *rbuf,
                              const int64_t *rcnt, const int64_t *rdsp, ism_dt *const *rt,
                              int root, int64_t hub_max, const nb_xfer *local, int nlocal)
{
    ism_comm *c = nb->c;
    hub *h = calloc(1, sizeof *h);
    if (!h)
        return ISM_ERR_NO_MEM;
    nb->ext = h;
    nb->ext_free = hub_free;
    int rc = hub_setup(h, c, root, hub_max, scnt, st, rcnt, rt);
    if (rc)
        return rc;
    int my = c->site_of[c->rank], hubme = h->hub_of[my] == c->rank, R = h->R;
    int64_t ot = sum(osz(h, h->mi), 0, R), it = sum(isz(h, h->mi), 0, R);
    if ((ot && !(h->ob = malloc((size_t)ot))) || (it && !(h->ib = malloc((size_t)it))))
        return ISM_ERR_NO_MEM;
    if (hubme)
        h->bund[h->mi] = h->ob;
    /* my blocks for remote ranks, packed now (in place: before anything arrives) */
    for (int64_t x = 0, o = 0; x < R; o += osz(h, h->mi)[x], x++) {
        int j = h->rem[x];
        if (osz(h, h->mi)[x])
            ism_dt_pack(st[j], (const char *)src + sdsp[j], scnt[j], h->ob + o);
    }
    xlist l = {malloc(sizeof(nb_xfer) * ((size_t)nlocal + (size_t)h->k + 4)), 0};
    if (!l.x)
        return ISM_ERR_NO_MEM;
    memcpy(l.x, local, sizeof *local * (size_t)nlocal); /* the site's own blocks first */
    l.n = nlocal;
    int hub_rank = h->hub_of[my];
    if (!hubme) {
        add(&l, ISM_CA_SEND, hub_rank, (char *)osz(h, 0), NULL, 2 * (int64_t)R * 8);
        add(&l, ISM_CA_SEND, hub_rank, h->ob, NULL, ot);
        add(&l, ISM_CA_RECV, hub_rank, h->ib, NULL, it);
    } else {
        for (int m = 0; m < h->k; m++)
            if (m != h->mi)
                add(&l, ISM_CA_RECV, h->mem[m], (char *)osz(h, m), NULL, 2 * (int64_t)R * 8);
    }
    rc = ism_coll_nb_direct(nb, l.x, l.n);
    /* (alone at my site: no bundles to gather or spread) */
    if (!rc && hubme && h->k > 1)
        rc = ism_coll_nb_direct_later(nb, hub_bundles);
    if (!rc && hubme)
        rc = ism_coll_nb_direct_later(nb, hub_wan);
    if (!rc && hubme && h->k > 1)
        rc = ism_coll_nb_direct_later(nb, hub_spread);
    /* 5. each incoming block to its place */
    l.n = 0;
    free(l.x);
    l.x = rc ? NULL : malloc(sizeof(nb_xfer) * (size_t)R + 1);
    if (!rc && !l.x)
        rc = ISM_ERR_NO_MEM;
    int64_t o = 0;
    for (int x = 0; x < R && !rc; x++) {
        int j = h->rem[x];
        int64_t len = isz(h, h->mi)[x];
        if (!len)
            continue;
        if (rt[j]->contig)
            add(&l, ISM_CA_COPY, j, h->ib + o,
                (char *)((uintptr_t)rbuf + (uintptr_t)rdsp[j] + (uintptr_t)rt[j]->contig_off),
                len);
        else
            rc = ism_coll_nb_unpack_later(nb, rt[j], (char *)rbuf + rdsp[j], rcnt[j], h->ib + o);
        o += len;
    }
    if (!rc && l.n)
        rc = ism_coll_nb_direct(nb, l.x, l.n);
    free(l.x);
    return rc;
}
