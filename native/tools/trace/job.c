/* job.c: reading a trace folder into a tr_job (see job.h).
 *
 * Communicators are unified across ranks as the tracer promises (native/src/trace/
 * comms.c): by their members and, among those with the same members, by the order in
 * which each member created them. An intercommunicator is seen from both of its groups;
 * its groups are put in a fixed order (the smaller list first) so both sides meet. */
#include "job.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint64_t hash;
    int inter, na, nb;
    int *m;
    int next;       /* the next set with the same hash, or -1 */
} mset;

typedef struct {
    mset *sets;
    int nsets, capsets;
    umap by_hash;   /* hash -> first set */
    umap by_key;    /* set * 2^24 + occurrence -> global communicator */
} unifier;

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ c[i]) * 1099511628211ull;
    return h;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* ranks by rank, then gateways by site and index: OTF2's definitions in id order */
static int cmp_proc(const void *a, const void *b)
{
    const tr_proc *x = a, *y = b;
    if (x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

static int add_comm(tr_job *j, int inter, int na, int nb, const int *m, int world, int self)
{
    tr_comm *n = realloc(j->comms, sizeof *n * (size_t)(j->ncomms + 1));
    if (!n)
        return -1;
    j->comms = n;
    tr_comm *c = &j->comms[j->ncomms];
    c->inter = inter;
    c->na = na;
    c->nb = nb;
    c->world = world;
    c->self = self;
    c->m = malloc(sizeof(int) * (size_t)(na + nb + 1));
    if (!c->m)
        return -1;
    if (m)
        memcpy(c->m, m, sizeof(int) * (size_t)(na + nb));
    else
        for (int i = 0; i < na; i++)
            c->m[i] = world ? i : 0;
    return j->ncomms++;
}

/* smaller list first: by length, then element by element */
static int list_less(const int *x, int nx, const int *y, int ny)
{
    if (nx != ny)
        return nx < ny;
    for (int i = 0; i < nx; i++)
        if (x[i] != y[i])
            return x[i] < y[i];
    return 0;
}

static int set_index(unifier *u, int inter, int na, int nb, const int *m)
{
    uint64_t h = fnv(1469598103934665603ull, &inter, sizeof inter);
    h = fnv(h, &na, sizeof na);
    h = fnv(h, &nb, sizeof nb);
    h = fnv(h, m, sizeof(int) * (size_t)(na + nb));
    uint64_t *first = umap_find(&u->by_hash, h);
    for (int i = first ? (int)*first : -1; i >= 0; i = u->sets[i].next) {
        mset *s = &u->sets[i];
        if (s->inter == inter && s->na == na && s->nb == nb &&
            !memcmp(s->m, m, sizeof(int) * (size_t)(na + nb)))
            return i;
    }
    if (u->nsets == u->capsets) {
        int cap = u->capsets ? u->capsets * 2 : 64;
        mset *n = realloc(u->sets, sizeof *n * (size_t)cap);
        if (!n)
            return -1;
        u->sets = n;
        u->capsets = cap;
    }
    mset *s = &u->sets[u->nsets];
    s->hash = h;
    s->inter = inter;
    s->na = na;
    s->nb = nb;
    s->m = malloc(sizeof(int) * (size_t)(na + nb + 1));
    if (!s->m)
        return -1;
    memcpy(s->m, m, sizeof(int) * (size_t)(na + nb));
    s->next = first ? (int)*first : -1;
    umap_put(&u->by_hash, h, (uint64_t)u->nsets);
    return u->nsets++;
}

static void set_local(tr_proc *p, uint32_t id, uint32_t g, int first)
{
    if (id >= p->ncomm) {
        uint32_t n = id + 16;
        uint32_t *c = realloc(p->comm_g, sizeof *c * n);
        uint8_t *f = realloc(p->comm_first, n);
        if (!c || !f) {
            free(c ? c : p->comm_g);
            p->comm_g = NULL;
            p->comm_first = f;
            p->ncomm = 0;
            return;
        }
        for (uint32_t i = p->ncomm; i < n; i++) {
            c[i] = UINT32_MAX;
            f[i] = 1;
        }
        p->comm_g = c;
        p->comm_first = f;
        p->ncomm = n;
    }
    p->comm_g[id] = g;
    p->comm_first[id] = (uint8_t)first;
}

static void on_comm(tr_job *j, unifier *u, umap *occ, tr_proc *p, const ism_tr_hdr *h)
{
    const ism_tr_comm *c = (const ism_tr_comm *)(const void *)h;
    if (h->flags & ISM_TR_COMM_WORLD) {
        set_local(p, c->comm, 0, 1);
        return;
    }
    int nl = (int)c->size, nr = (int)c->rsize, inter = (h->flags & ISM_TR_COMM_INTER) != 0;
    if (sizeof *c + sizeof(int) * (size_t)(nl + nr) > h->len)
        return; /* a damaged record: its communicator stays unknown */
    const int *m = (const int *)(const void *)(c + 1);
    if (c->comm == 1 && !inter && nl == 1) { /* MPI_COMM_SELF */
        set_local(p, 1, 1, 1);
        return;
    }
    int *canon = malloc(sizeof(int) * (size_t)(nl + nr + 1));
    if (!canon)
        return;
    int first = 1, na = nl, nb = nr;
    if (inter && list_less(m + nl, nr, m, nl)) {
        first = 0;
        na = nr;
        nb = nl;
        memcpy(canon, m + nl, sizeof(int) * (size_t)nr);
        memcpy(canon + nr, m, sizeof(int) * (size_t)nl);
    } else {
        memcpy(canon, m, sizeof(int) * (size_t)(nl + nr));
    }
    int s = set_index(u, inter, na, nb, canon);
    if (s >= 0) {
        uint64_t *k = umap_find(occ, (uint64_t)s);
        uint64_t n = k ? *k : 0;
        umap_put(occ, (uint64_t)s, n + 1);
        uint64_t key = ((uint64_t)s << 24) | n;
        uint64_t *g = umap_find(&u->by_key, key);
        int gi = g ? (int)*g : add_comm(j, inter, na, nb, canon, 0, 0);
        if (!g && gi >= 0)
            umap_put(&u->by_key, key, (uint64_t)gi);
        if (gi >= 0)
            set_local(p, c->comm, (uint32_t)gi, first);
    }
    free(canon);
}

static void read_clocks(tr_job *j)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/clocks.json", j->dir);
    FILE *f = fopen(path, "rb");
    if (!f)
        return;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc(n > 0 ? (size_t)n : 1);
    ism_json doc;
    char err[256];
    if (text && fread(text, 1, (size_t)n, f) == (size_t)n &&
        !ism_json_parse(text, (size_t)n, &doc, err, sizeof err)) {
        const ism_json *ps = ism_json_get(&doc, "processes");
        for (int i = 0; ps && ps->type == ISM_JSON_ARR && i < ps->n; i++) {
            const ism_json *e = &ps->items[i];
            const ism_json *kind = ism_json_get(e, "kind"), *id = ism_json_get(e, "id");
            const ism_json *a = ism_json_get(e, "a"), *b = ism_json_get(e, "b");
            const ism_json *er = ism_json_get(e, "error_ns"), *ok = ism_json_get(e, "aligned");
            if (!kind || !id || !a || !b || kind->type != ISM_JSON_STR)
                continue;
            int pk = !strcmp(kind->str, "rank") ? ISM_TR_PROC_RANK : ISM_TR_PROC_GATEWAY;
            for (int k = 0; k < j->nprocs; k++) {
                tr_proc *p = &j->procs[k];
                if (p->kind == pk && p->id == (int)id->num && ok && ok->num != 0 &&
                    b->num > 0) {
                    p->clk = (tr_clock){a->num, b->num, er ? er->num : 0, 1};
                }
            }
        }
        j->clocks_found = 1;
        ism_json_free(&doc);
    }
    free(text);
    fclose(f);
}

static void read_info(tr_job *j, tr_proc *p, const ism_tf *f)
{
    p->site = (int)ism_tf_num(f, "site", 0);
    snprintf(p->host, sizeof p->host, "%s", ism_tf_str(f, "host", "?"));
    if (p->kind == ISM_TR_PROC_RANK) {
        int size = (int)ism_tf_num(f, "size", 0);
        if (size > j->size)
            j->size = size;
    }
    const ism_json *sites = f->info.type == ISM_JSON_OBJ ? ism_json_get(&f->info, "sites") : NULL;
    if (sites && sites->type == ISM_JSON_ARR && sites->n > j->nsites) {
        for (int i = 0; i < j->nsites; i++)
            free(j->site_names[i]);
        free(j->site_names);
        j->site_names = calloc((size_t)sites->n, sizeof *j->site_names);
        j->nsites = j->site_names ? sites->n : 0;
        for (int i = 0; i < j->nsites; i++)
            j->site_names[i] = strdup(sites->items[i].type == ISM_JSON_STR ? sites->items[i].str
                                                                           : "?");
    }
    const ism_json *links = f->info.type == ISM_JSON_OBJ ? ism_json_get(&f->info, "links") : NULL;
    if (links && links->type == ISM_JSON_ARR && links->n > 0) {
        p->links = calloc((size_t)links->n, sizeof *p->links);
        p->nlinks = p->links ? links->n : 0;
        for (int i = 0; i < p->nlinks; i++) {
            const ism_json *s = ism_json_get(&links->items[i], "site");
            const ism_json *g = ism_json_get(&links->items[i], "gateway");
            p->links[i].peer_site = s ? (int)s->num : -1;
            p->links[i].peer_gw = g ? (int)g->num : -1;
        }
    }
}

/* The first and last times of a record that has one. */
static int record_times(const ism_tr_hdr *h, uint64_t *a, uint64_t *b)
{
    switch (h->kind) {
    case ISM_TR_CALL: {
        const ism_tr_call *c = (const void *)h;
        *a = c->t0;
        *b = c->t1;
        return 1;
    }
    case ISM_TR_MARK:
    case ISM_TR_LOSS:
    case ISM_TR_EVENT:
    case ISM_TR_GW_FRAME:
    case ISM_TR_GW_ACK:
    case ISM_TR_GW_SAMPLE:
    case ISM_TR_GW_LINK:
    case ISM_TR_GW_APP:
        *a = *b = ((const uint64_t *)(const void *)(h + 1))[0];
        return 1;
    default:
        return 0;
    }
}

static int scan_file(tr_job *j, tr_proc *p, unifier *u, double *lo, double *hi, char *err,
                     size_t errlen)
{
    ism_tf f;
    if (ism_tf_open(&f, p->path, err, errlen))
        return -1;
    p->kind = (int)f.hdr.kind;
    p->id = f.hdr.id;
    read_info(j, p, &f);
    umap occ = {0};
    size_t off = ism_tf_first();
    const ism_tr_hdr *h;
    while ((h = ism_tf_next(&f, &off))) {
        uint64_t a, b;
        if (h->kind == ISM_TR_COMM)
            on_comm(j, u, &occ, p, h);
        else if (h->kind == ISM_TR_GW_SAMPLE)
            p->has_samples = 1;
        else if (h->kind == ISM_TR_LOSS && h->len >= sizeof(ism_tr_loss))
            p->lost_records += ((const ism_tr_loss *)(const void *)h)->records;
        else if (h->kind == ISM_TR_END)
            p->ended = 1;
        if (h->kind == ISM_TR_CALL) {
            int th = ((const ism_tr_call *)(const void *)h)->thread;
            if (th + 1 > p->nthreads)
                p->nthreads = th + 1;
        }
        if (record_times(h, &a, &b)) {
            double ga = ((double)a - p->clk.a) / p->clk.b, gb = ((double)b - p->clk.a) / p->clk.b;
            if (ga < *lo)
                *lo = ga;
            if (gb > *hi)
                *hi = gb;
        }
    }
    j->truncated += f.truncated;
    if (p->nthreads < 1)
        p->nthreads = 1;
    umap_free(&occ);
    ism_tf_close(&f);
    return 0;
}

int tr_job_load(tr_job *j, const char *dir, int skip_gateways, char *err, size_t errlen)
{
    memset(j, 0, sizeof *j);
    j->dir = strdup(dir);
    j->with_gateways = !skip_gateways;
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(err, errlen, "%s: cannot open the trace folder", dir);
        return -1;
    }
    char **names = NULL;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        int rank = !strncmp(e->d_name, "rank-", 5), gw = !strncmp(e->d_name, "gw-", 3);
        if (l < 6 || strcmp(e->d_name + l - 5, ".ismt") || !(rank || (gw && !skip_gateways)))
            continue;
        char **nn = realloc(names, sizeof *nn * (size_t)(n + 1));
        if (!nn)
            break;
        names = nn;
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    j->procs = calloc((size_t)(n ? n : 1), sizeof *j->procs);
    for (int i = 0; i < n; i++) {
        tr_proc *p = &j->procs[j->nprocs++];
        size_t l = strlen(dir) + strlen(names[i]) + 2;
        p->path = malloc(l);
        snprintf(p->path, l, "%s/%s", dir, names[i]);
        p->clk = (tr_clock){0, 1, 0, 0};
        free(names[i]);
    }
    free(names);
    if (!j->nprocs) {
        snprintf(err, errlen, "%s: no trace files (rank-*.ismt); was the job run with "
                              "`isthmus run --trace %s`?", dir, dir);
        return -1;
    }
    /* the kinds and ids first, for clocks.json */
    for (int i = 0; i < j->nprocs; i++) {
        ism_tf f;
        if (ism_tf_open(&f, j->procs[i].path, err, errlen))
            return -1;
        j->procs[i].kind = (int)f.hdr.kind;
        j->procs[i].id = f.hdr.id;
        ism_tf_close(&f);
    }
    qsort(j->procs, (size_t)j->nprocs, sizeof *j->procs, cmp_proc);
    read_clocks(j);
    unifier u = {0};
    add_comm(j, 0, 0, 0, NULL, 1, 0); /* 0: MPI_COMM_WORLD, its size known after the scan */
    add_comm(j, 0, 1, 0, NULL, 0, 1); /* 1: MPI_COMM_SELF */
    double lo = 1e300, hi = -1e300;
    for (int i = 0; i < j->nprocs; i++) {
        if (scan_file(j, &j->procs[i], &u, &lo, &hi, err, errlen))
            return -1;
        if (j->procs[i].kind == ISM_TR_PROC_RANK)
            j->nranks_files++;
        else
            j->ngw++;
    }
    for (int i = 0; i < u.nsets; i++)
        free(u.sets[i].m);
    free(u.sets);
    umap_free(&u.by_hash);
    umap_free(&u.by_key);
    free(j->comms[0].m);
    j->comms[0].na = j->size;
    j->comms[0].m = malloc(sizeof(int) * (size_t)(j->size + 1));
    for (int i = 0; j->comms[0].m && i < j->size; i++)
        j->comms[0].m[i] = i;
    if (lo > hi)
        lo = hi = 0;
    j->t_min = lo > 0 ? (uint64_t)lo : 0;
    j->t_max = hi > 0 ? (uint64_t)hi : 0;
    return 0;
}

void tr_job_free(tr_job *j)
{
    for (int i = 0; i < j->nprocs; i++) {
        free(j->procs[i].path);
        free(j->procs[i].comm_g);
        free(j->procs[i].comm_first);
        free(j->procs[i].links);
        free(j->procs[i].nevents);
    }
    for (int i = 0; i < j->ncomms; i++)
        free(j->comms[i].m);
    for (int i = 0; i < j->nsites; i++)
        free(j->site_names[i]);
    free(j->site_names);
    free(j->comms);
    free(j->procs);
    free(j->dir);
    memset(j, 0, sizeof *j);
}
