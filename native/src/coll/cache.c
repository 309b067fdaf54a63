/* cache.c: built schedules kept per communicator, keyed by everything a builder reads
 * (collective, level, algorithm, radix, segment, sizes, group size, my index, root, op
 * commutativity), so a collective called again with the same arguments, a persistent
 * collective's every start included, costs no building. At most CACHE_MAX entries per
 * communicator, the least recently used one replaced; all freed with the communicator.
 */
#include <stdlib.h>
#include <string.h>

#include "coll.h"

#define CACHE_MAX 16

struct ism_coll_centry {
    ism_coll_key k;
    int64_t *blk; /* unequal blocks (k.blkhash != 0) */
    ism_coll_sched s;
    uint64_t used;
};

ism_coll_comm *ism_coll_state(ism_comm *c)
{
    if (!c->coll)
        c->coll = calloc(1, sizeof *c->coll);
    return c->coll;
}

static void entry_free(ism_coll_centry *e)
{
    ism_coll_sched_free(&e->s);
    free(e->blk);
    e->blk = NULL;
}

void ism_coll_comm_free(ism_comm *c)
{
    ism_coll_comm *st = c->coll;
    if (!st)
        return;
    for (int i = 0; i < st->ncache; i++)
        entry_free(&st->cache[i]);
    free(st->cache);
    free(st->hints);
    free(st->arena);
    free(st);
    c->coll = NULL;
}

static uint64_t hash_blocks(const int64_t *blk, int p)
{
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; blk && i < p; i++) {
        h ^= (uint64_t)blk[i];
        h *= 1099511628211ull;
    }
    return blk ? (h ? h : 1) : 0;
}

const ism_coll_sched *ism_coll_cached(ism_comm *c, const ism_coll_key *k0, const int64_t *blk)
{
    ism_coll_comm *st = ism_coll_state(c);
    if (!st)
        return NULL;
    ism_coll_key k = *k0;
    k.blkhash = hash_blocks(blk, k.p);
    /* a program usually repeats its last collective: that entry first */
    for (int j = 0; j < st->ncache; j++) {
        int i = j == 0 ? st->last : j == st->last ? 0 : j;
        ism_coll_centry *e = &st->cache[i];
        if (!memcmp(&e->k, &k, sizeof k) &&
            (!blk || !memcmp(e->blk, blk, sizeof *blk * (size_t)k.p))) {
            e->used = ++st->tick;
            st->last = i;
            return &e->s;
        }
    }
    if (!st->cache && !(st->cache = calloc(CACHE_MAX, sizeof *st->cache)))
        return NULL;
    ism_coll_centry *e;
    if (st->ncache < CACHE_MAX) {
        e = &st->cache[st->ncache++];
    } else {
        e = &st->cache[0];
        for (int i = 1; i < CACHE_MAX; i++)
            if (st->cache[i].used < e->used)
                e = &st->cache[i];
        entry_free(e);
    }
    memset(e, 0, sizeof *e);
    ism_coll_args a = {0};
    a.p = k.p;
    a.me = k.me;
    a.root = k.root;
    a.esize = k.esize;
    a.bytes = k.bytes;
    a.radix = k.radix;
    a.seg = k.seg;
    a.commute = k.commute;
    a.exclusive = k.exclusive;
    if (blk) {
        if (!(e->blk = malloc(sizeof *blk * (size_t)k.p)))
            goto fail;
        memcpy(e->blk, blk, sizeof *blk * (size_t)k.p);
        a.blk = e->blk;
    }
    ism_coll_sched_init(&e->s, k.p, k.me);
    if (ism_coll_algs(k.coll)[k.alg].build(&e->s, &a))
        goto fail;
    e->k = k;
    e->used = ++st->tick;
    st->last = (int)(e - st->cache);
    return &e->s;
fail:
    entry_free(e);
    /* drop the failed entry: move the last one into its place */
    *e = st->cache[--st->ncache];
    st->last = 0;
    return NULL;
}
