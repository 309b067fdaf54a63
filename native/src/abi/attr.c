/* attr.c (abi): keyvals and attributes cached on communicators, with the predefined
 * attributes of MPI_COMM_WORLD (MPI_TAG_UB, MPI_HOST, MPI_IO, MPI_WTIME_IS_GLOBAL,
 * MPI_UNIVERSE_SIZE, MPI_APPNUM, MPI_LASTUSEDCODE), and the deprecated MPI-1 forms.
 *
 * A keyval is a small integer indexing a table; it lives until it is freed and no
 * attribute uses it any more. Attributes form a short list per communicator; MPI_Comm_dup
 * runs each keyval's copy callback and MPI_Comm_free each delete callback, as MPI says.
 */
#include <stdlib.h>
#include <string.h>

#include "abi.h"

#define KV_BASE 1000

typedef struct keyval {
    MPI_Comm_copy_attr_function *copy;
    MPI_Comm_delete_attr_function *del;
    void *extra;
    int refs; /* 1 for the handle, +1 per attribute that uses it */
    int live;
} keyval;

typedef struct attr {
    int kv;
    void *val;
    struct attr *next;
} attr;

static keyval *kvs;
static int nkv, capkv;

static keyval *kv_get(int id)
{
    int i = id - KV_BASE;
    return i >= 0 && i < nkv && kvs[i].refs > 0 ? &kvs[i] : NULL;
}

static void kv_unref(int id)
{
    keyval *k = kv_get(id);
    if (k)
        k->refs--;
}

static int predefined_kv(int kv)
{
    return kv >= MPI_TAG_UB && kv <= MPI_UNIVERSE_SIZE;
}

int PMPI_Comm_create_keyval(MPI_Comm_copy_attr_function *comm_copy_attr_fn,
                            MPI_Comm_delete_attr_function *comm_delete_attr_fn, int *comm_keyval,
                            void *extra_state)
{
    ISM_CHECK_INIT("MPI_Comm_create_keyval");
    if (nkv == capkv) {
        int cap = capkv ? capkv * 2 : 32;
        keyval *n = realloc(kvs, sizeof *n * (size_t)cap);
        if (!n)
            return ism_abi_error(NULL, MPI_ERR_NO_MEM, "MPI_Comm_create_keyval", "out of memory");
        kvs = n;
        capkv = cap;
    }
    keyval *k = &kvs[nkv];
    k->copy = comm_copy_attr_fn;
    k->del = comm_delete_attr_fn;
    k->extra = extra_state;
    k->refs = 1;
    k->live = 1;
    *comm_keyval = KV_BASE + nkv++;
    return MPI_SUCCESS;
}
ISM_PMPI(Comm_create_keyval)

int PMPI_Comm_free_keyval(int *comm_keyval)
{
    ISM_CHECK_INIT("MPI_Comm_free_keyval");
    keyval *k = comm_keyval ? kv_get(*comm_keyval) : NULL;
    if (!k || !k->live)
        return ism_abi_error(NULL, MPI_ERR_KEYVAL, "MPI_Comm_free_keyval",
                             predefined_kv(comm_keyval ? *comm_keyval : 0)
                                 ? "predefined keyvals cannot be freed"
                                 : "invalid keyval");
    k->live = 0;
    k->refs--;
    *comm_keyval = MPI_KEYVAL_INVALID;
    return MPI_SUCCESS;
}
ISM_PMPI(Comm_free_keyval)

static attr *find(ism_comm *c, int kv, attr ***link)
{
    attr **p = (attr **)&c->attrs;
    for (; *p; p = &(*p)->next)
        if ((*p)->kv == kv) {
            if (link)
                *link = p;
            return *p;
        }
    return NULL;
}

/* Run the delete callback and drop the attribute; the callback's error aborts it. */
static int drop(ism_comm *c, attr **link)
{
    attr *a = *link;
    keyval *k = kv_get(a->kv);
    if (k && k->del) {
        int rc = k->del(ism_abi_comm_handle(c), a->kv, a->val, k->extra);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    *link = a->next;
    kv_unref(a->kv);
    free(a);
    return MPI_SUCCESS;
}

int PMPI_Comm_set_attr(MPI_Comm comm, int comm_keyval, void *attribute_val)
{
    ISM_CHECK_INIT("MPI_Comm_set_attr");
    ism_comm *c = ism_abi_comm(comm);
    if (!c)
        return ism_abi_error(NULL, MPI_ERR_COMM, "MPI_Comm_set_attr", "invalid communicator");
    keyval *k = kv_get(comm_keyval);
    if (!k || !k->live)
        return ism_abi_error(c, MPI_ERR_KEYVAL, "MPI_Comm_set_attr", "%s keyval %d",
                             predefined_kv(comm_keyval) ? "predefined (read-only)" : "invalid",
                             comm_keyval);
    attr **link, *a = find(c, comm_keyval, &link);
    if (a) {
        int rc = drop(c, link);
        if (rc)
            return ism_abi_error(c, rc, "MPI_Comm_set_attr",
                                 "the delete callback of the old value failed");
    }
    a = malloc(sizeof *a);
    if (!a)
        return ism_abi_error(c, MPI_ERR_NO_MEM, "MPI_Comm_set_attr", "out of memory");
    a->kv = comm_keyval;
    a->val = attribute_val;
    a->next = c->attrs;
    c->attrs = a;
    kv_get(comm_keyval)->refs++;
    return MPI_SUCCESS;
}
ISM_PMPI(Comm_set_attr)

int PMPI_Comm_get_attr(MPI_Comm comm, int comm_keyval, void *attribute_val, int *flag)
{
    static int tag_ub, host, io, wtime_global, universe, appnum, lastused;
    ISM_CHECK_INIT("MPI_Comm_get_attr");
    ism_comm *c = ism_abi_comm(comm);
    if (!c)
        return ism_abi_error(NULL, MPI_ERR_COMM, "MPI_Comm_get_attr", "invalid communicator");
    int *p = NULL;
    tag_ub = ism_abi_tag_ub();
    host = MPI_PROC_NULL;
    io = MPI_ANY_SOURCE;
    wtime_global = 0; /* each site's clock is its own */
    universe = ism.gsize;
    appnum = 0;
    lastused = ism_abi_last_used_code();
    switch (comm_keyval) {
    case MPI_TAG_UB: p = &tag_ub; break;
    case MPI_HOST: p = &host; break;
    case MPI_IO: p = &io; break;
    case MPI_WTIME_IS_GLOBAL: p = &wtime_global; break;
    case MPI_UNIVERSE_SIZE: p = &universe; break;
    case MPI_APPNUM: p = &appnum; break;
    case MPI_LASTUSEDCODE: p = &lastused; break;
    default: break;
    }
    if (p) {
        *flag = 1;
        *(int **)attribute_val = p;
        return MPI_SUCCESS;
    }
    if (!kv_get(comm_keyval))
        return ism_abi_error(c, MPI_ERR_KEYVAL, "MPI_Comm_get_attr", "invalid keyval %d",
                             comm_keyval);
    attr *a = find(c, comm_keyval, NULL);
    *flag = a != NULL;
    if (a)
        *(void **)attribute_val = a->val;
    return MPI_SUCCESS;
}
ISM_PMPI(Comm_get_attr)

int PMPI_Comm_delete_attr(MPI_Comm comm, int comm_keyval)
{
    ISM_CHECK_INIT("MPI_Comm_delete_attr");
    ism_comm *c = ism_abi_comm(comm);
    if (!c)
        return ism_abi_error(NULL, MPI_ERR_COMM, "MPI_Comm_delete_attr", "invalid communicator");
    attr **link, *a = kv_get(comm_keyval) ? find(c, comm_keyval, &link) : NULL;
    if (!a)
        return ism_abi_error(c, MPI_ERR_KEYVAL, "MPI_Comm_delete_attr",
                             "keyval %d has no attribute on this communicator", comm_keyval);
    int rc = drop(c, link);
    return rc ? ism_abi_error(c, rc, "MPI_Comm_delete_attr", "the delete callback failed") : 0;
}
ISM_PMPI(Comm_delete_attr)

int ism_abi_attr_copy(ism_comm *from, ism_comm *to)
{
    attr *list = NULL, **tail = &list;
    for (attr *a = from->attrs; a; a = a->next) {
        keyval *k = kv_get(a->kv);
        void *out = NULL;
        int flag = 0;
        if (!k || k->copy == MPI_COMM_NULL_COPY_FN)
            continue;
        if (k->copy == MPI_COMM_DUP_FN) {
            out = a->val;
            flag = 1;
        } else {
            int rc = k->copy(ism_abi_comm_handle(from), a->kv, k->extra, a->val, &out, &flag);
            if (rc != MPI_SUCCESS) {
                to->attrs = list;
                ism_abi_attr_delete_all(to);
                return rc;
            }
        }
        if (!flag)
            continue;
        attr *n = malloc(sizeof *n);
        if (!n) {
            to->attrs = list;
            ism_abi_attr_delete_all(to);
            return MPI_ERR_NO_MEM;
        }
        n->kv = a->kv;
        n->val = out;
        n->next = NULL;
        *tail = n;
        tail = &n->next;
        k->refs++;
    }
    to->attrs = list;
    return MPI_SUCCESS;
}

int ism_abi_attr_delete_all(ism_comm *c)
{
    attr **link = (attr **)&c->attrs;
    while (*link) {
        int rc = drop(c, link);
        if (rc)
            return rc;
    }
    return MPI_SUCCESS;
}

/* ---- the deprecated MPI-1 forms ---- */

int PMPI_Keyval_create(MPI_Copy_function *copy_fn, MPI_Delete_function *delete_fn, int *keyval,
                       void *extra_state)
{
    return PMPI_Comm_create_keyval((MPI_Comm_copy_attr_function *)copy_fn,
                                   (MPI_Comm_delete_attr_function *)delete_fn, keyval,
                                   extra_state);
}
ISM_PMPI(Keyval_create)

int PMPI_Keyval_free(int *keyval) { return PMPI_Comm_free_keyval(keyval); }
ISM_PMPI(Keyval_free)

int PMPI_Attr_put(MPI_Comm comm, int keyval, void *attribute_val)
{
    return PMPI_Comm_set_attr(comm, keyval, attribute_val);
}
ISM_PMPI(Attr_put)

int PMPI_Attr_get(MPI_Comm comm, int keyval, void *attribute_val, int *flag)
{
    return PMPI_Comm_get_attr(comm, keyval, attribute_val, flag);
}
ISM_PMPI(Attr_get)

int PMPI_Attr_delete(MPI_Comm comm, int keyval) { return PMPI_Comm_delete_attr(comm, keyval); }
ISM_PMPI(Attr_delete)
