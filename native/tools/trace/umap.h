/* umap.h: a map from 64-bit keys to 64-bit values (open addressing, deletions leave
 * tombstones), for the exporters' tables: requests in flight, communicators, frames. */
#ifndef ISM_TOOLS_UMAP_H
#define ISM_TOOLS_UMAP_H

#include <stdint.h>
#include <stdlib.h>

typedef struct {
    uint64_t *keys, *vals;
    uint8_t *state; /* 0 empty, 1 used, 2 deleted */
    size_t cap, used, live;
} umap;

static inline size_t umap_slot(uint64_t k, size_t cap)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return (size_t)k & (cap - 1);
}

static inline uint64_t *umap_find(const umap *m, uint64_t k)
{
    if (!m->cap)
        return NULL;
    for (size_t i = umap_slot(k, m->cap), n = 0; n < m->cap; i = (i + 1) & (m->cap - 1), n++) {
        if (m->state[i] == 0)
            return NULL;
        if (m->state[i] == 1 && m->keys[i] == k)
            return &m->vals[i];
    }
    return NULL;
}

static inline int umap_put(umap *m, uint64_t k, uint64_t v);

static inline int umap_grow(umap *m)
{
    umap n = {0};
    n.cap = m->cap ? m->cap * 2 : 256;
    n.keys = malloc(sizeof *n.keys * n.cap);
    n.vals = malloc(sizeof *n.vals * n.cap);
    n.state = calloc(n.cap, 1);
    if (!n.keys || !n.vals || !n.state) {
        free(n.keys);
        free(n.vals);
        free(n.state);
        return -1;
    }
    for (size_t i = 0; i < m->cap; i++)
        if (m->state[i] == 1)
            umap_put(&n, m->keys[i], m->vals[i]);
    free(m->keys);
    free(m->vals);
    free(m->state);
    *m = n;
    return 0;
}

/* Insert or replace. 0, or -1 when out of memory. */
static inline int umap_put(umap *m, uint64_t k, uint64_t v)
{
    uint64_t *p = umap_find(m, k);
    if (p) {
        *p = v;
        return 0;
    }
    if ((m->used + 1) * 2 > m->cap && umap_grow(m))
        return -1;
    size_t i = umap_slot(k, m->cap);
    while (m->state[i] == 1)
        i = (i + 1) & (m->cap - 1);
    if (m->state[i] == 0)
        m->used++;
    m->state[i] = 1;
    m->keys[i] = k;
    m->vals[i] = v;
    m->live++;
    return 0;
}

static inline void umap_del(umap *m, uint64_t k)
{
    uint64_t *p = umap_find(m, k);
    if (p) {
        m->state[p - m->vals] = 2;
        m->live--;
    }
}

static inline void umap_free(umap *m)
{
    free(m->keys);
    free(m->vals);
    free(m->state);
    *m = (umap){0};
}

#endif
