/* wins.c: the tracer's window table, for the RMA detail records of one-sided calls.
 *
 * A window gets a small id when the call that creates it returns (a WIN record names the
 * communicator it spans), in creation order, as communicators do, so that the exporters
 * and the replay find the same window on every member. The table also keeps the
 * members as global ranks, so that an RMA record names its target in MPI_COMM_WORLD (a
 * lookup in an array) and the reader needs no group arithmetic. Programs hold few
 * windows: a linear table with the last hit cached is enough.
 */
#include <pthread.h>
#include <stdlib.h>

#include "wrap.h"

typedef struct {
    MPI_Win h;
    ism_tr_win_ent e;
} slot;

static slot *tab;
static size_t used, cap;
static uint32_t next_id;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER; /* with MPI_THREAD_MULTIPLE */

MPI_Win ism_tr_win_last_h = MPI_WIN_NULL;
ism_tr_win_ent ism_tr_win_last = {UINT32_MAX, 0, NULL};

/* The cache holds nothing (MPI_WIN_NULL itself then finds the unknown window). */
static void forget_last(void)
{
    ism_tr_win_last_h = MPI_WIN_NULL;
    ism_tr_win_last = (ism_tr_win_ent){UINT32_MAX, 0, NULL};
}

static slot *find(MPI_Win w)
{
    for (size_t i = 0; i < used; i++)
        if (tab[i].h == w)
            return &tab[i];
    return NULL;
}

/* The members of comm as global ranks (NULL when out of memory). */
static int *members(MPI_Comm comm, int *n)
{
    MPI_Group g;
    *n = 0;
    if (PMPI_Comm_group(comm, &g) != MPI_SUCCESS)
        return NULL;
    PMPI_Group_size(g, n);
    int *out = malloc(sizeof(int) * (size_t)(*n + 1));
    int *idx = malloc(sizeof(int) * (size_t)(*n + 1));
    if (out && idx) {
        for (int i = 0; i < *n; i++)
            idx[i] = i;
        PMPI_Group_translate_ranks(g, *n, idx, ism_tr.world_group, out);
    } else {
        free(out);
        out = NULL;
        *n = 0;
    }
    free(idx);
    PMPI_Group_free(&g);
    return out;
}

uint32_t ism_tr_win_created(MPI_Win w, MPI_Comm comm)
{
    if (w == MPI_WIN_NULL)
        return UINT32_MAX;
    int n;
    int *m = members(comm, &n);
    ism_tr_table_lock(&mu);
    uint32_t id = next_id++;
    slot *s = find(w); /* the handle came back without us seeing its free */
    if (!s && used == cap) {
        size_t ncap = cap ? 2 * cap : 8;
        slot *t = realloc(tab, ncap * sizeof *t);
        if (t) {
            tab = t;
            cap = ncap;
        }
    }
    if (!s && used < cap) {
        s = &tab[used++];
        s->e.world = NULL;
    }
    if (s) {
        free((void *)s->e.world);
        s->h = w;
        s->e = (ism_tr_win_ent){id, n, m};
    } else {
        free(m);
    }
    forget_last();
    ism_tr_table_unlock(&mu);
    return id;
}

ism_tr_win_ent ism_tr_win_slow(MPI_Win w)
{
    ism_tr_win_ent out = {UINT32_MAX, 0, NULL};
    ism_tr_table_lock(&mu);
    slot *s = find(w);
    if (s) {
        out = s->e;
        ism_tr_win_last_h = w;
        ism_tr_win_last = out;
    }
    ism_tr_table_unlock(&mu);
    return out;
}

uint32_t ism_tr_win_forget(MPI_Win w)
{
    uint32_t id = UINT32_MAX;
    ism_tr_table_lock(&mu);
    slot *s = find(w);
    if (s) {
        id = s->e.id;
        free((void *)s->e.world);
        *s = tab[--used];
    }
    forget_last();
    ism_tr_table_unlock(&mu);
    return id;
}

void ism_tr_wins_stop(void)
{
    ism_tr_table_lock(&mu);
    for (size_t i = 0; i < used; i++)
        free((void *)tab[i].e.world);
    free(tab);
    tab = NULL;
    used = cap = 0;
    forget_last();
    ism_tr_table_unlock(&mu);
}

int ism_tr_rma_group(uint16_t fn, uint64_t t0, uint64_t t1, int rc, uint16_t op,
                     MPI_Win win, MPI_Group group, int assert_)
{
    if (rc != MPI_SUCCESS)
        return ism_tr_failed(fn, t0, t1, rc);
    ism_tr_win_ent w = ism_tr_win_of(win);
    int n = 0;
    if (group != MPI_GROUP_NULL)
        PMPI_Group_size(group, &n);
    int *g = malloc(sizeof(int) * (size_t)(2 * n + 1));
    if (!g)
        n = 0;
    for (int i = 0; i < n; i++)
        g[n + i] = i;
    if (n)
        PMPI_Group_translate_ranks(group, n, g + n, ism_tr.world_group, g);
    /* an empty group still gets a record (target -1), so the call is known as one-sided */
    size_t k = n ? (size_t)n : 1;
    ism_tr_rma *d = ism_tr_leave(fn, t0, t1, rc, sizeof *d * k);
    /* the targets are global ranks already: translated through an identity window */
    ism_tr_win_ent ident = {w.id, 0, NULL};
    for (size_t i = 0; d && i < k; i++) {
        ism_tr_rma_set(&d[i], op, 0, &ident, 0, assert_, 0, 0, 0);
        d[i].target = n == 0 || g[i] == MPI_UNDEFINED ? -1 : g[i];
    }
    ism_tr_unlock();
    free(g);
    return rc;
}
