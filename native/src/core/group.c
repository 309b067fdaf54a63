/* group.c: MPI groups as ordered lists of global ranks.
 *
 * A group never refers to a communicator: its members are global ranks (MPI_COMM_WORLD
 * ranks), so set operations, rank translation and comparison are plain list work, and a
 * group built from one communicator can create another. Groups are reference-counted:
 * a communicator's group stays valid after the communicator is freed, and the other way
 * round. The empty group is a static object that is never freed.
 */
#include <stdlib.h>
#include <string.h>

#include "core.h"

ism_group ism_group_empty = {.refs = 1, .size = 0, .rank = ISM_UNDEFINED, .g = NULL, .builtin = 1};

ism_group *ism_group_new(int n, const int *g)
{
    if (n == 0) {
        ism_group_empty.refs++;
        return &ism_group_empty;
    }
    ism_group *grp = malloc(sizeof *grp);
    int *v = malloc(sizeof(int) * (size_t)n);
    if (!grp || !v) {
        free(grp);
        free(v);
        return NULL;
    }
    memcpy(v, g, sizeof(int) * (size_t)n);
    grp->refs = 1;
    grp->size = n;
    grp->g = v;
    grp->builtin = 0;
    grp->session_bbuf = NULL;
    grp->rank = ISM_UNDEFINED;
    for (int i = 0; i < n; i++)
        if (v[i] == ism.grank) {
            grp->rank = i;
            break;
        }
    return grp;
}

void ism_group_release(ism_group *grp)
{
    if (!grp || grp->builtin)
        return;
    if (--grp->refs == 0) {
        free(grp->g);
        free(grp);
    }
}

int ism_group_index(const ism_group *grp, int g)
{
    for (int i = 0; i < grp->size; i++)
        if (grp->g[i] == g)
            return i;
    return ISM_UNDEFINED;
}

/* Members of a that satisfy want(in b): the kernel of union/intersection/difference. */
static int *filter(const ism_group *a, const ism_group *b, int keep_if_in_b, int *n)
{
    int *v = malloc(sizeof(int) * (size_t)(a->size + 1));
    *n = 0;
    if (!v)
        return NULL;
    for (int i = 0; i < a->size; i++)
        if ((ism_group_index(b, a->g[i]) != ISM_UNDEFINED) == keep_if_in_b)
            v[(*n)++] = a->g[i];
    return v;
}

ism_group *ism_group_setop(const ism_group *a, const ism_group *b, int op)
{
    int n = 0, m = 0;
    int *v, *w;
    ism_group *r;
    switch (op) {
    case ISM_GROUP_UNION: /* a, then members of b not in a, each in its group's order */
        w = filter(b, a, 0, &m);
        v = malloc(sizeof(int) * (size_t)(a->size + m + 1));
        if (!w || !v) {
            free(w);
            free(v);
            return NULL;
        }
        if (a->size)
            memcpy(v, a->g, sizeof(int) * (size_t)a->size);
        if (m)
            memcpy(v + a->size, w, sizeof(int) * (size_t)m);
        free(w);
        r = ism_group_new(a->size + m, v);
        free(v);
        return r;
    case ISM_GROUP_INTERSECTION: /* members of a that are in b, in a's order */
        v = filter(a, b, 1, &n);
        break;
    default: /* difference: members of a not in b, in a's order */
        v = filter(a, b, 0, &n);
        break;
    }
    if (!v)
        return NULL;
    r = ism_group_new(n, v);
    free(v);
    return r;
}

int ism_group_compare(const ism_group *a, const ism_group *b)
{
    if (a->size != b->size)
        return ISM_UNEQUAL;
    int same = 1;
    for (int i = 0; i < a->size && same; i++)
        same = a->g[i] == b->g[i];
    if (same)
        return ISM_IDENT;
    for (int i = 0; i < a->size; i++)
        if (ism_group_index(b, a->g[i]) == ISM_UNDEFINED)
            return ISM_UNEQUAL;
    return ISM_SIMILAR;
}
