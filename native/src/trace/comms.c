/* comms.c: the tracer's communicator table.
 *
 * Records name a communicator by a small id (0 is MPI_COMM_WORLD, 1 MPI_COMM_SELF); a
 * COMM record gives an id its members as global ranks. Ids are per process: the
 * exporters find the same communicator on every member by its members and by the order
 * in which each member created communicators with those members, which MPI's rule that
 * collective calls on a communicator come in the same order on all members makes equal.
 * That is why a communicator is defined when the call that creates it returns, not on
 * first use. Handles are looked up in an open-addressing table; the last hit is cached.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "wrap.h"

ism_tr_comm_ent ism_tr_world_ent;

static ism_tr_comm_ent *tab;      /* open addressing; h == 0: empty, h == 1: deleted */
static size_t cap, used;
static uint32_t next_id;
static ism_tr_comm_ent *last;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER; /* with MPI_THREAD_MULTIPLE */

#define EMPTY ((MPI_Comm)0)
#define GONE ((MPI_Comm)1)

static size_t slot_of(MPI_Comm c)
{
    uintptr_t v = (uintptr_t)c;
    v ^= v >> 17;
    v *= 0x9e3779b97f4a7c15ull;
    return (size_t)(v >> 20) & (cap - 1);
}

static ism_tr_comm_ent *find(MPI_Comm c)
{
    if (!cap)
        return NULL;
    for (size_t i = slot_of(c), k = 0; k < cap; i = (i + 1) & (cap - 1), k++) {
        if (tab[i].h == c)
            return &tab[i];
        if (tab[i].h == EMPTY)
            return NULL;
    }
    return NULL;
}

static int grow(void)
{
    size_t ncap = cap ? cap * 2 : 64;
    ism_tr_comm_ent *n = calloc(ncap, sizeof *n);
    if (!n)
        return -1;
    ism_tr_comm_ent *old = tab;
    size_t ocap = cap;
    tab = n;
    cap = ncap;
    used = 0;
    for (size_t i = 0; i < ocap; i++)
        if (old[i].h != EMPTY && old[i].h != GONE) {
            ism_tr_comm_ent *e = &tab[slot_of(old[i].h)];
            while (e->h != EMPTY)
                e = e == &tab[cap - 1] ? tab : e + 1;
            *e = old[i];
            used++;
        }
    free(old);
    last = NULL;
    return 0;
}

static ism_tr_comm_ent *insert(MPI_Comm c)
{
    if ((used + 1) * 2 > cap && grow())
        return NULL;
    size_t i = slot_of(c);
    while (tab[i].h != EMPTY && tab[i].h != GONE)
        i = (i + 1) & (cap - 1);
    tab[i].h = c;
    used++;
    return &tab[i];
}

/* The members of c (local group, then remote group) as global ranks, from the group of
 * `ask` (c itself, or a communicator with the same members). */
static int *members(MPI_Comm ask, int inter, int *n_local, int *n_remote)
{
    MPI_Group g[2] = {MPI_GROUP_NULL, MPI_GROUP_NULL};
    int n[2] = {0, 0};
    if (PMPI_Comm_group(ask, &g[0]) != MPI_SUCCESS)
        return NULL;
    if (inter && PMPI_Comm_remote_group(ask, &g[1]) != MPI_SUCCESS)
        g[1] = MPI_GROUP_NULL;
    for (int k = 0; k < 2; k++)
        if (g[k] != MPI_GROUP_NULL)
            PMPI_Group_size(g[k], &n[k]);
    int *out = malloc(sizeof(int) * (size_t)(n[0] + n[1] + 1));
    int *idx = malloc(sizeof(int) * (size_t)(n[0] > n[1] ? n[0] + 1 : n[1] + 1));
    if (out && idx) {
        for (int k = 0; k < 2; k++) {
            for (int i = 0; i < n[k]; i++)
                idx[i] = i;
            if (n[k])
                PMPI_Group_translate_ranks(g[k], n[k], idx, ism_tr.world_group,
                                           out + (k ? n[0] : 0));
        }
    }
    free(idx);
    for (int k = 0; k < 2; k++)
        if (g[k] != MPI_GROUP_NULL)
            PMPI_Group_free(&g[k]);
    *n_local = n[0];
    *n_remote = n[1];
    return out;
}

static void define(ism_tr_comm_ent *e, MPI_Comm ask)
{
    int nl = 0, nr = 0;
    int *m = members(ask, e->inter, &nl, &nr);
    ism_tr_comm head = {{0, 0, 0, 0}, e->id, (uint32_t)nl, (uint32_t)nr, e->rank};
    ism_tr_lock();
    ism_tr_put(&ism_tr.buf, ISM_TR_COMM, e->inter ? ISM_TR_COMM_INTER : 0, 0, &head,
               sizeof head, m, m ? sizeof(int) * (size_t)(nl + nr) : 0);
    ism_tr_unlock();
    free(m);
}

static ism_tr_comm_ent *add(MPI_Comm c, MPI_Comm like)
{
    ism_tr_comm_ent *e = find(c);
    if (e) /* the handle was reused without us seeing the free: a new communicator */
        e->h = GONE;
    e = insert(c);
    if (!e)
        return NULL;
    MPI_Comm ask = like != MPI_COMM_NULL ? like : c;
    e->id = next_id++;
    PMPI_Comm_test_inter(ask, &e->inter);
    PMPI_Comm_rank(ask, &e->rank);
    PMPI_Comm_size(ask, &e->size);
    e->rsize = 0;
    if (e->inter)
        PMPI_Comm_remote_size(ask, &e->rsize);
    define(e, ask);
    return e;
}

void ism_tr_comms_start(void)
{
    ism_tr_world_ent = (ism_tr_comm_ent){MPI_COMM_WORLD, 0, ism_tr.size, ism_tr.rank, 0, 0};
    ism_tr_comm head = {{0, 0, 0, 0}, 0, (uint32_t)ism_tr.size, 0, ism_tr.rank};
    /* MPI_COMM_WORLD's members are 0..size-1: not listed */
    ism_tr_put(&ism_tr.buf, ISM_TR_COMM, ISM_TR_COMM_WORLD, 0, &head, sizeof head, NULL, 0);
    next_id = 1;
    add(MPI_COMM_SELF, MPI_COMM_NULL);
}

void ism_tr_comms_stop(void)
{
    free(tab);
    tab = NULL;
    cap = used = 0;
    last = NULL;
}

ism_tr_comm_ent ism_tr_comm_slow(MPI_Comm c)
{
    ism_tr_comm_ent out = {MPI_COMM_NULL, UINT32_MAX, 0, 0, 0, 0};
    ism_tr_table_lock(&mu);
    ism_tr_comm_ent *e = last && last->h == c ? last : find(c);
    if (!e)
        e = add(c, MPI_COMM_NULL); /* created by a call we do not know creates one */
    if (e) {
        last = e;
        out = *e;
    }
    ism_tr_table_unlock(&mu);
    return out;
}

void ism_tr_comm_created(MPI_Comm c, MPI_Comm like)
{
    if (c == MPI_COMM_NULL || !ism_tr.on)
        return;
    ism_tr_table_lock(&mu);
    last = add(c, like);
    ism_tr_table_unlock(&mu);
}

void ism_tr_comm_freed(MPI_Comm c)
{
    if (c == MPI_COMM_WORLD || c == MPI_COMM_SELF)
        return;
    ism_tr_table_lock(&mu);
    ism_tr_comm_ent *e = find(c);
    if (e) {
        ism_tr_commfree r = {{0, 0, 0, 0}, e->id, 0};
        ism_tr_lock();
        ism_tr_put(&ism_tr.buf, ISM_TR_COMMFREE, 0, 0, &r, sizeof r, NULL, 0);
        ism_tr_unlock();
        e->h = GONE;
        if (last == e)
            last = NULL;
    }
    ism_tr_table_unlock(&mu);
}
