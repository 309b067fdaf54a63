/* attr.c (abi): keyvals and attributes cached on communicators, datatypes and windows, with
 * the predefined attributes of MPI_COMM_WORLD (MPI_TAG_UB, MPI_HOST, MPI_IO,
 * MPI_WTIME_IS_GLOBAL, MPI_UNIVERSE_SIZE, MPI_APPNUM, MPI_LASTUSEDCODE), and the
 * deprecated MPI-1 forms.
 *
 * A keyval is a small integer indexing a table, made for one kind of object; it lives
 * until it is freed and no attribute uses it any more. Attributes form a short list per
 * object: on the communicator itself, and for datatypes (predefined ones too) in a side
 * table keyed by the handle. Dup runs each keyval's copy callback, free each delete
 * callback, as MPI says.
 */
#include <stdlib.h>
#include <string.h>

#include "abi.h"
#include "win_abi.h"

#define KV_BASE 1000

enum { KIND_COMM = 0, KIND_TYPE = 1, KIND_WIN = 2 };

typedef struct keyval {
    int kind;
    void *copy; /* MPI_Comm_copy_attr_function or MPI_Type_copy_attr_function */
    void *del;  /* ... delete ... */
    void *extra;
    int refs; /* 1 for the handle, +1 per attribute that uses it */
    int live;
} keyval;

typedef struct attr {
    int kv;
    void *val;
    struct attr *next;
} attr;

/* an object that carries attributes */
typedef struct obj {
    int kind;
    void *h;      /* MPI_Comm or MPI_Datatype */
    attr **list;
} obj;

static keyval *kvs;
static int nkv, capkv;

static keyval *kv_get(int id, int kind)
{
    int i = id - KV_BASE;
    return i >= 0 && i < nkv && kvs[i].refs > 0 && kvs[i].kind == kind ? &kvs[i] : NULL;
}

static void kv_unref(int id, int kind)
{
    keyval *k = kv_get(id, kind);
    if (k)
        k->refs--;
}

static int predefined_kv(int kv) { return kv >= MPI_TAG_UB && kv <= MPI_UNIVERSE_SIZE; }

static int kv_create(const char *fn, int kind, void *copy, void *del, void *extra, int *out)
{
    ISM_CHECK_INIT(fn);
    if (nkv == capkv) {
        int cap = capkv ? capkv * 2 : 32;
        keyval *n = realloc(kvs, sizeof *n * (size_t)cap);
        if (!n)
            return ism_abi_error(NULL, MPI_ERR_NO_MEM, fn, "out of memory");
        kvs = n;
        capkv = cap;
    }
    kvs[nkv] = (keyval){kind, copy, del, extra, 1, 1};
    *out = KV_BASE + nkv++;
    return MPI_SUCCESS;
}

static int kv_free(const char *fn, int kind, int *id)
{
    ISM_CHECK_INIT(fn);
    keyval *k = id ? kv_get(*id, kind) : NULL;
    if (!k || !k->live)
        return ism_abi_error(NULL, MPI_ERR_KEYVAL, fn,
                             predefined_kv(id ? *id : 0) ? "predefined keyvals cannot be freed"
                                                         : "invalid keyval");
    k->live = 0;
    k->refs--;
    *id = MPI_KEYVAL_INVALID;
    return MPI_SUCCESS;
}

static attr *find(attr **list, int kv, attr ***link)
{
    for (attr **p = list; *p; p = &(*p)->next)
        if ((*p)->kv == kv) {
            if (link)
                *link = p;
            return *p;
        }
    return NULL;
}

static int call_delete(const obj *o, keyval *k, int kv, void *val)
{
    if (!k || !k->del)
        return MPI_SUCCESS;
    if (o->kind == KIND_COMM)
        return ((MPI_Comm_delete_attr_function *)k->del)((MPI_Comm)o->h, kv, val, k->extra);
    if (o->kind == KIND_WIN)
        return ((MPI_Win_delete_attr_function *)k->del)((MPI_Win)o->h, kv, val, k->extra);
    return ((MPI_Type_delete_attr_function *)k->del)((MPI_Datatype)o->h, kv, val, k->extra);
}

/* Run the delete callback and drop the attribute; the callback's error aborts it. */
static int drop(const obj *o, attr **link)
{
    attr *a = *link;
    int rc = call_delete(o, kv_get(a->kv, o->kind), a->kv, a->val);
    if (rc != MPI_SUCCESS)
        return rc;
    *link = a->next;
    kv_unref(a->kv, o->kind);
    free(a);
    return MPI_SUCCESS;
}

static int set_attr(const char *fn, ism_comm *c, const obj *o, int kv, void *val)
{
    keyval *k = kv_get(kv, o->kind);
    if (!k || !k->live)
        return ism_abi_error(c, MPI_ERR_KEYVAL, fn, "%s keyval %d",
                             predefined_kv(kv) ? "predefined (read-only)" : "invalid", kv);
    attr **link, *a = find(o->list, kv, &link);
    if (a) {
        int rc = drop(o, link);
        if (rc)
            return ism_abi_error(c, rc, fn, "the delete callback of the old value failed");
    }
    a = malloc(sizeof *a);
    if (!a)
        return ism_abi_error(c, MPI_ERR_NO_MEM, fn, "out of memory");
    a->kv = kv;
    a->val = val;
    a->next = *o->list;
    *o->list = a;
    k->refs++;
    return MPI_SUCCESS;
}

static int get_attr(const char *fn, ism_comm *c, const obj *o, int kv, void *val, int *flag)
{
    if (!kv_get(kv, o->kind))
        return ism_abi_error(c, MPI_ERR_KEYVAL, fn, "invalid keyval %d", kv);
    attr *a = find(o->list, kv, NULL);
    *flag = a != NULL;
    if (a)
        *(void **)val = a->val;
    return MPI_SUCCESS;
}

static int delete_attr(const char *fn, ism_comm *c, const obj *o, int kv)
{
    attr **link, *a = kv_get(kv, o->kind) ? find(o->list, kv, &link) : NULL;
    if (!a)
        return ism_abi_error(c, MPI_ERR_KEYVAL, fn, "keyval %d has no attribute here", kv);
    int rc = drop(o, link);
    return rc ? ism_abi_error(c, rc, fn, "the delete callback failed") : MPI_SUCCESS;
}

static int delete_all(const obj *o)
{
    while (*o->list) {
        int rc = drop(o, o->list);
        if (rc)
            return rc;
    }
    return MPI_SUCCESS;
}

/* Copy callbacks of `from` build the list of `to` (MPI_*_NULL_COPY_FN: not copied,
 * MPI_*_DUP_FN: the same value). */
static int copy_all(const obj *from, const obj *to)
{
    attr *list = NULL, **tail = &list;
    for (attr *a = *from->list; a; a = a->next) {
        keyval *k = kv_get(a->kv, from->kind);
        void *out = NULL;
        int flag = 0, rc = MPI_SUCCESS;
        if (!k || !k->copy) /* the NULL_COPY_FNs are 0 */
            continue;
        if (k->copy == (void *)MPI_COMM_DUP_FN) { /* = MPI_TYPE_DUP_FN = 0x1 */
            out = a->val;
            flag = 1;
        } else if (from->kind == KIND_COMM) {
            rc = ((MPI_Comm_copy_attr_function *)k->copy)((MPI_Comm)from->h, a->kv, k->extra,
                                                          a->val, &out, &flag);
        } else {
            rc = ((MPI_Type_copy_attr_function *)k->copy)((MPI_Datatype)from->h, a->kv,
                                                          k->extra, a->val, &out, &flag);
        }
        attr *n = rc == MPI_SUCCESS && flag ? malloc(sizeof *n) : NULL;
        if (rc != MPI_SUCCESS || (flag && !n)) {
            *to->list = list;
            delete_all(to);
            return rc != MPI_SUCCESS ? rc : MPI_ERR_NO_MEM;
        }
        if (!flag)
            continue;
        n->kv = a->kv;
        n->val = out;
        n->next = NULL;
        *tail = n;
        tail = &n->next;
        k->refs++;
    }
    *to->list = list;
    return MPI_SUCCESS;
}

/* ---------------------------------------------------------------- communicators */

static int comm_obj(const char *fn, MPI_Comm h, ism_comm **c, obj *o)
{
    ISM_CHECK_INIT(fn);
    *c = ism_abi_comm(h);
    if (!*c)
        return ism_abi_error(NULL, MPI_ERR_COMM, fn, "invalid communicator");
    *o = (obj){KIND_COMM, (void *)h, (attr **)&(*c)->attrs};
    return MPI_SUCCESS;
}

int PMPI_Comm_create_keyval(MPI_Comm_copy_attr_function *comm_copy_attr_fn,
                            MPI_Comm_delete_attr_function *comm_delete_attr_fn, int *comm_keyval,
                            void *extra_state)
{
    return kv_create("MPI_Comm_create_keyval", KIND_COMM, (void *)comm_copy_attr_fn,
                     (void *)comm_delete_attr_fn, extra_state, comm_keyval);
}
ISM_PMPI(Comm_create_keyval)

int PMPI_Comm_free_keyval(int *comm_keyval)
{
    return kv_free("MPI_Comm_free_keyval", KIND_COMM, comm_keyval);
}
ISM_PMPI(Comm_free_keyval)

int PMPI_Comm_set_attr(MPI_Comm comm, int comm_keyval, void *attribute_val)
{
    ism_comm *c;
    obj o;
    int rc = comm_obj("MPI_Comm_set_attr", comm, &c, &o);
    return rc ? rc : set_attr("MPI_Comm_set_attr", c, &o, comm_keyval, attribute_val);
}
ISM_PMPI(Comm_set_attr)

int PMPI_Comm_get_attr(MPI_Comm comm, int comm_keyval, void *attribute_val, int *flag)
{
    static int tag_ub, host, io, wtime_global, universe, appnum, lastused;
    ism_comm *c;
    obj o;
    int rc = comm_obj("MPI_Comm_get_attr", comm, &c, &o);
    if (rc)
        return rc;
    int *p = NULL;
    tag_ub = ism_abi_tag_ub();
    host = MPI_PROC_NULL;
    io = MPI_ANY_SOURCE;
    wtime_global = 0; /* each site's clock is its own */
    universe = ism.lay.gsize;
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
    return get_attr("MPI_Comm_get_attr", c, &o, comm_keyval, attribute_val, flag);
}
ISM_PMPI(Comm_get_attr)

int PMPI_Comm_delete_attr(MPI_Comm comm, int comm_keyval)
{
    ism_comm *c;
    obj o;
    int rc = comm_obj("MPI_Comm_delete_attr", comm, &c, &o);
    return rc ? rc : delete_attr("MPI_Comm_delete_attr", c, &o, comm_keyval);
}
ISM_PMPI(Comm_delete_attr)

int ism_abi_attr_copy(ism_comm *from, ism_comm *to)
{
    obj f = {KIND_COMM, (void *)ism_abi_comm_handle(from), (attr **)&from->attrs};
    obj t = {KIND_COMM, (void *)ism_abi_comm_handle(to), (attr **)&to->attrs};
    return copy_all(&f, &t);
}

int ism_abi_attr_delete_all(ism_comm *c)
{
    obj o = {KIND_COMM, (void *)ism_abi_comm_handle(c), (attr **)&c->attrs};
    return delete_all(&o);
}

/* ---------------------------------------------------------------- datatypes */

/* attribute lists of datatypes, by handle (predefined types carry attributes too) */
typedef struct tattrs {
    MPI_Datatype h;
    attr *list;
} tattrs;
static tattrs *tlist;
static int ntl, captl;

static attr **type_list(MPI_Datatype h, int create)
{
    for (int i = 0; i < ntl; i++)
        if (tlist[i].h == h)
            return &tlist[i].list;
    if (!create)
        return NULL;
    if (ntl == captl) {
        int cap = captl ? captl * 2 : 16;
        tattrs *n = realloc(tlist, sizeof *n * (size_t)cap);
        if (!n)
            return NULL;
        tlist = n;
        captl = cap;
    }
    tlist[ntl] = (tattrs){h, NULL};
    return &tlist[ntl++].list;
}

static void type_list_drop(MPI_Datatype h)
{
    for (int i = 0; i < ntl; i++)
        if (tlist[i].h == h && !tlist[i].list) {
            tlist[i] = tlist[--ntl];
            return;
        }
}

static int type_obj(const char *fn, MPI_Datatype h, int create, obj *o)
{
    ISM_CHECK_INIT(fn);
    if (!ism_abi_dt_any(h))
        return ism_abi_error(NULL, MPI_ERR_TYPE, fn, "invalid datatype");
    static attr *none;
    attr **l = type_list(h, create);
    if (create && !l)
        return ism_abi_error(NULL, MPI_ERR_NO_MEM, fn, "out of memory");
    none = NULL;
    *o = (obj){KIND_TYPE, (void *)h, l ? l : &none};
    return MPI_SUCCESS;
}

int PMPI_Type_create_keyval(MPI_Type_copy_attr_function *type_copy_attr_fn,
                            MPI_Type_delete_attr_function *type_delete_attr_fn, int *type_keyval,
                            void *extra_state)
{
    return kv_create("MPI_Type_create_keyval", KIND_TYPE, (void *)type_copy_attr_fn,
                     (void *)type_delete_attr_fn, extra_state, type_keyval);
}
ISM_PMPI(Type_create_keyval)

int PMPI_Type_free_keyval(int *type_keyval)
{
    return kv_free("MPI_Type_free_keyval", KIND_TYPE, type_keyval);
}
ISM_PMPI(Type_free_keyval)

int PMPI_Type_set_attr(MPI_Datatype datatype, int type_keyval, void *attribute_val)
{
    obj o;
    int rc = type_obj("MPI_Type_set_attr", datatype, 1, &o);
    return rc ? rc : set_attr("MPI_Type_set_attr", NULL, &o, type_keyval, attribute_val);
}
ISM_PMPI(Type_set_attr)

int PMPI_Type_get_attr(MPI_Datatype datatype, int type_keyval, void *attribute_val, int *flag)
{
    obj o;
    int rc = type_obj("MPI_Type_get_attr", datatype, 0, &o);
    return rc ? rc
              : get_attr("MPI_Type_get_attr", NULL, &o, type_keyval, attribute_val, flag);
}
ISM_PMPI(Type_get_attr)

int PMPI_Type_delete_attr(MPI_Datatype datatype, int type_keyval)
{
    obj o;
    int rc = type_obj("MPI_Type_delete_attr", datatype, 0, &o);
    if (!rc)
        rc = delete_attr("MPI_Type_delete_attr", NULL, &o, type_keyval);
    type_list_drop(datatype);
    return rc;
}
ISM_PMPI(Type_delete_attr)

int ism_abi_type_attr_copy(MPI_Datatype from, MPI_Datatype to)
{
    attr **fl = type_list(from, 0);
    if (!fl || !*fl)
        return MPI_SUCCESS;
    attr **tl = type_list(to, 1);
    if (!tl)
        return MPI_ERR_NO_MEM;
    fl = type_list(from, 0); /* the table may have moved */
    obj f = {KIND_TYPE, (void *)from, fl}, t = {KIND_TYPE, (void *)to, tl};
    int rc = copy_all(&f, &t);
    type_list_drop(to);
    return rc;
}

int ism_abi_type_attr_delete_all(MPI_Datatype h)
{
    attr **l = type_list(h, 0);
    if (!l)
        return MPI_SUCCESS;
    obj o = {KIND_TYPE, (void *)h, l};
    int rc = delete_all(&o);
    type_list_drop(h);
    return rc;
}

/* ---------------------------------------------------------------- MPI-1 forms */

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

/* ---------------------------------------------------------------- windows */

static int win_obj(const char *fn, MPI_Win h, ism_win **w, obj *o)
{
    ISM_CHECK_INIT(fn);
    *w = ism_abi_win(h);
    if (!*w)
        return ism_abi_error(NULL, MPI_ERR_WIN, fn, "invalid window");
    *o = (obj){KIND_WIN, (void *)h, (attr **)&(*w)->attrs};
    return MPI_SUCCESS;
}

int PMPI_Win_create_keyval(MPI_Win_copy_attr_function *win_copy_attr_fn,
                           MPI_Win_delete_attr_function *win_delete_attr_fn, int *win_keyval,
                           void *extra_state)
{
    return kv_create("MPI_Win_create_keyval", KIND_WIN, (void *)win_copy_attr_fn,
                     (void *)win_delete_attr_fn, extra_state, win_keyval);
}
ISM_PMPI(Win_create_keyval)

int PMPI_Win_free_keyval(int *win_keyval)
{
    return kv_free("MPI_Win_free_keyval", KIND_WIN, win_keyval);
}
ISM_PMPI(Win_free_keyval)

int PMPI_Win_set_attr(MPI_Win win, int win_keyval, void *attribute_val)
{
    ism_win *w;
    obj o;
    int rc = win_obj("MPI_Win_set_attr", win, &w, &o);
    return rc ? rc : set_attr("MPI_Win_set_attr", NULL, &o, win_keyval, attribute_val);
}
ISM_PMPI(Win_set_attr)

/* The predefined attributes: MPI_WIN_BASE is the base itself, the others point to their
 * value (MPI 4.1 section 12.2.6), kept with the window's own fields. */
int PMPI_Win_get_attr(MPI_Win win, int win_keyval, void *attribute_val, int *flag)
{
    static _Thread_local MPI_Aint size;
    static _Thread_local int unit, flavor, model;
    ism_win *w;
    obj o;
    int rc = win_obj("MPI_Win_get_attr", win, &w, &o);
    if (rc)
        return rc;
    void *p = NULL;
    switch (win_keyval) {
    case MPI_WIN_BASE: p = w->base; break;
    case MPI_WIN_SIZE: size = (MPI_Aint)w->size; p = &size; break;
    case MPI_WIN_DISP_UNIT: unit = w->disp_unit; p = &unit; break;
    case MPI_WIN_CREATE_FLAVOR: flavor = w->flavor; p = &flavor; break;
    case MPI_WIN_MODEL: model = MPI_WIN_UNIFIED; p = &model; break;
    default:
        return get_attr("MPI_Win_get_attr", NULL, &o, win_keyval, attribute_val, flag);
    }
    *flag = 1;
    *(void **)attribute_val = p;
    return MPI_SUCCESS;
}
ISM_PMPI(Win_get_attr)

int PMPI_Win_delete_attr(MPI_Win win, int win_keyval)
{
    ism_win *w;
    obj o;
    int rc = win_obj("MPI_Win_delete_attr", win, &w, &o);
    return rc ? rc : delete_attr("MPI_Win_delete_attr", NULL, &o, win_keyval);
}
ISM_PMPI(Win_delete_attr)

int ism_abi_win_attr_delete_all(ism_win *w)
{
    obj o = {KIND_WIN, (void *)(MPI_Win)w, (attr **)&w->attrs};
    return delete_all(&o);
}
