/* mpit_vendor.c (abi): the vendor MPI's own MPI_T variables and categories, after
 * isthmus's, through the backend (backend/backend_mpit.c). Their names get the vendor's
 * name as a prefix ("openmpi:mpi_base_verbose", "mpich:MPIR_CVAR_ASYNC_PROGRESS"), so
 * they never clash with isthmus's or with each other's. The vendor's MPI_T is started
 * once MPI is initialized (the backend is loaded then) and its variables then appear,
 * which MPI_T_category_changed reports; variables bound to a communicator or datatype
 * get the vendor's object behind isthmus's (the vendor communicator of this rank's site
 * members); other bindings are refused. The vendor's numbering has holes (Open MPI
 * answers MPI_T_ERR_INVALID_INDEX for variables of components it did not load); isthmus
 * numbers only the vendor's entries that describe themselves, in the vendor's order, and
 * adds new ones at the end when the vendor's count grows, so an index never moves. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpit.h"

static int attached, changes;

/* per kind (0 cvars, 1 pvars, 2 categories): the vendor's indices isthmus numbers, and
 * how far the vendor's numbering has been looked at */
typedef struct {
    int *idx;
    int n, cap, scanned;
} slots;
static slots sl[3];

static const ism_backend_t *vt(void) { return attached ? ism.be->t : NULL; }

static int describes(int kind, int i)
{
    char name[512];
    int len = sizeof name, x, y, z;
    void *e;
    if (kind == 0)
        return vt()->cvar_info(i, name, &len, &x, &y, &e, NULL, NULL, &z, &x) == 0;
    if (kind == 1)
        return vt()->pvar_info(i, name, &len, &x, &x, &y, &e, NULL, NULL, &z, &x, &x, &x) == 0;
    return vt()->cat_info(i, name, &len, NULL, NULL, &x, &y, &z) == 0;
}

static void recount(void)
{
    if (!attached)
        return;
    for (int k = 0; k < 3; k++) {
        int n = 0;
        if ((k == 0 ? vt()->cvar_num(&n) : k == 1 ? vt()->pvar_num(&n) : vt()->cat_num(&n)))
            continue;
        slots *s = &sl[k];
        for (; s->scanned < n; s->scanned++) {
            if (!describes(k, s->scanned))
                continue;
            if (s->n == s->cap) {
                int cap = s->cap ? s->cap * 2 : 256;
                int *m = realloc(s->idx, sizeof *m * (size_t)cap);
                if (!m)
                    return;
                s->idx = m;
                s->cap = cap;
            }
            s->idx[s->n++] = s->scanned;
            changes++;
        }
    }
}

/* isthmus's number of the vendor's entry v of kind k, or -1 */
static int ours(int k, int v)
{
    for (int i = 0; i < sl[k].n; i++)
        if (sl[k].idx[i] == v)
            return i;
    return -1;
}

void ism_mpit_vendor_attach(void)
{
    if (!attached && ism.be && ism.be->t && ism.be->t->init() == 0)
        attached = 1;
    recount();
}

void ism_mpit_vendor_detach(void)
{
    if (!attached)
        return;
    ism.be->t->finalize();
    attached = 0;
    for (int k = 0; k < 3; k++) {
        free(sl[k].idx);
        sl[k] = (slots){0};
    }
    changes++;
}

int ism_mpit_vendor_ncvars(void) { return sl[0].n; }
int ism_mpit_vendor_npvars(void) { return sl[1].n; }
int ism_mpit_vendor_ncats(void) { return sl[2].n; }
int ism_mpit_vendor_changes(void) { return changes; }

/* "vendor:name" into the caller's buffer, the MPI_T way */
static int prefixed(int rc, const char *raw, char *name, int *name_len)
{
    if (rc || !name_len)
        return rc;
    char buf[600];
    snprintf(buf, sizeof buf, "%s:%s", ism.be->vendor, raw);
    ism_mpit_str(buf, name, name_len);
    return MPI_SUCCESS;
}

/* the vendor's enumerations, each wrapped once */
static ism_mpit_enum **enums;
static int nenums;

static MPI_T_enum wrap_enum(void *v)
{
    if (!v)
        return MPI_T_ENUM_NULL;
    for (int i = 0; i < nenums; i++)
        if (enums[i]->vendor == v)
            return (MPI_T_enum)enums[i];
    ism_mpit_enum *e = calloc(1, sizeof *e);
    ism_mpit_enum **n = realloc(enums, sizeof *n * (size_t)(nenums + 1));
    if (!e || !n) {
        free(e);
        if (n)
            enums = n;
        return MPI_T_ENUM_NULL;
    }
    enums = n;
    *e = (ism_mpit_enum){ISM_MPIT_ENUM_MAGIC, "", 0, NULL, NULL, v};
    enums[nenums++] = e;
    return (MPI_T_enum)e;
}

static void put_common(int dt, void *et, MPI_Datatype *datatype, MPI_T_enum *enumtype)
{
    if (datatype)
        *datatype = dt ? (MPI_Datatype)(uintptr_t)dt : MPI_DATATYPE_NULL;
    if (enumtype)
        *enumtype = wrap_enum(et);
}

int ism_mpit_vendor_cvar_info(int i, char *name, int *name_len, int *verbosity,
                              MPI_Datatype *dt, MPI_T_enum *et, char *desc, int *desc_len,
                              int *bind, int *scope)
{
    if (!vt() || i < 0 || i >= sl[0].n)
        return MPI_T_ERR_INVALID_INDEX;
    char raw[512];
    int len = sizeof raw, v = 0, d = 0, b = 0, s = 0;
    void *e = NULL;
    int rc = vt()->cvar_info(sl[0].idx[i], raw, &len, &v, &d, &e, desc, desc_len, &b, &s);
    if (rc)
        return rc;
    if (verbosity)
        *verbosity = v;
    if (bind)
        *bind = b;
    if (scope)
        *scope = s;
    put_common(d, e, dt, et);
    return prefixed(rc, raw, name, name_len);
}

int ism_mpit_vendor_pvar_info(int i, char *name, int *name_len, int *verbosity, int *var_class,
                              MPI_Datatype *dt, MPI_T_enum *et, char *desc, int *desc_len,
                              int *bind, int *readonly, int *continuous, int *atomic)
{
    if (!vt() || i < 0 || i >= sl[1].n)
        return MPI_T_ERR_INVALID_INDEX;
    char raw[512];
    int len = sizeof raw, v = 0, c = 0, d = 0, b = 0, ro = 0, co = 0, at = 0;
    void *e = NULL;
    int rc = vt()->pvar_info(sl[1].idx[i], raw, &len, &v, &c, &d, &e, desc, desc_len, &b, &ro, &co, &at);
    if (rc)
        return rc;
    if (verbosity)
        *verbosity = v;
    if (var_class)
        *var_class = c;
    if (bind)
        *bind = b;
    if (readonly)
        *readonly = ro;
    if (continuous)
        *continuous = co;
    if (atomic)
        *atomic = at;
    put_common(d, e, dt, et);
    return prefixed(rc, raw, name, name_len);
}

/* The vendor object behind the isthmus object obj, for a variable bound to kind. */
static int vendor_object(int bind, void *obj, ism_vh *out, void **vobj)
{
    *vobj = NULL;
    if (bind == MPI_T_BIND_NO_OBJECT)
        return MPI_SUCCESS;
    if (!obj)
        return MPI_T_ERR_INVALID_HANDLE;
    if (bind == MPI_T_BIND_MPI_COMM) {
        ism_comm *c = ism_abi_comm(*(MPI_Comm *)obj);
        if (!c || !c->vcomm)
            return MPI_T_ERR_INVALID_HANDLE;
        *out = c->vcomm;
    } else if (bind == MPI_T_BIND_MPI_DATATYPE) {
        ism_dt *d = ism_abi_dt_any(*(MPI_Datatype *)obj);
        if (!d || !d->v)
            return MPI_T_ERR_INVALID_HANDLE;
        *out = d->v;
    } else {
        return MPI_T_ERR_INVALID_HANDLE; /* no vendor object isthmus could name */
    }
    *vobj = out; /* little-endian: an int handle is the low half of the word */
    return MPI_SUCCESS;
}

int ism_mpit_vendor_cvar_alloc(int i, void *obj, void **vh, int *count)
{
    int bind = 0;
    int rc = ism_mpit_vendor_cvar_info(i, NULL, NULL, NULL, NULL, NULL, NULL, NULL, &bind, NULL);
    ism_vh v = 0;
    void *vobj;
    if (!rc)
        rc = vendor_object(bind, obj, &v, &vobj);
    return rc ? rc : vt()->cvar_alloc(sl[0].idx[i], vobj, vh, count);
}

int ism_mpit_vendor_cvar_free(void *vh) { return vt() ? vt()->cvar_free(&vh) : MPI_SUCCESS; }

int ism_mpit_vendor_cvar_read(void *vh, void *buf)
{
    return vt() ? vt()->cvar_read(vh, buf) : MPI_T_ERR_INVALID_HANDLE;
}

int ism_mpit_vendor_cvar_write(void *vh, const void *buf)
{
    return vt() ? vt()->cvar_write(vh, buf) : MPI_T_ERR_INVALID_HANDLE;
}

int ism_mpit_vendor_pvar_alloc(void *vs, int i, void *obj, void **vh, int *count)
{
    int bind = 0;
    int rc = ism_mpit_vendor_pvar_info(i, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, &bind,
                                       NULL, NULL, NULL);
    ism_vh v = 0;
    void *vobj;
    if (!rc)
        rc = vendor_object(bind, obj, &v, &vobj);
    return rc ? rc : vt()->pvar_alloc(vs, sl[1].idx[i], vobj, vh, count);
}

int ism_mpit_vendor_cat_info(int i, char *name, int *name_len, char *desc, int *desc_len,
                             int *ncvars, int *npvars, int *ncats)
{
    int n[3] = {0, 0, 0};
    if (!vt() || i < 0 || i >= sl[2].n)
        return MPI_T_ERR_INVALID_INDEX;
    char raw[512];
    int len = sizeof raw;
    int rc = vt()->cat_info(sl[2].idx[i], raw, &len, desc, desc_len, &n[0], &n[1], &n[2]);
    /* members isthmus does not number (the vendor's holes) are left out */
    int *m = rc ? NULL : malloc(sizeof(int) * (size_t)(n[0] + n[1] + n[2] + 1));
    int *outs[3] = {ncvars, npvars, ncats};
    for (int k = 0; m && k < 3; k++) {
        int keep = 0;
        if (n[k] && vt()->cat_members(sl[2].idx[i], k, n[k], m) == 0)
            for (int j = 0; j < n[k]; j++)
                keep += ours(k, m[j]) >= 0;
        if (outs[k])
            *outs[k] = keep;
    }
    free(m);
    return prefixed(rc, raw, name, name_len);
}

int ism_mpit_vendor_cat_members(int i, int what, int len, int out[])
{
    int n[3] = {0, 0, 0};
    if (!vt() || i < 0 || i >= sl[2].n)
        return MPI_T_ERR_INVALID_INDEX;
    int rc = vt()->cat_info(sl[2].idx[i], NULL, NULL, NULL, NULL, &n[0], &n[1], &n[2]);
    int *m = rc ? NULL : malloc(sizeof(int) * (size_t)(n[what] + 1));
    if (!rc && !m)
        return MPI_T_ERR_MEMORY;
    if (!rc && n[what])
        rc = vt()->cat_members(sl[2].idx[i], what, n[what], m);
    int base = what == 0 ? ism_mpit_ncvars() : what == 1 ? ism_mpit_npvars() : ISM_MPIT_NCATS;
    for (int j = 0, k = 0; !rc && j < n[what] && k < len; j++) {
        int o = ours(what, m[j]);
        if (o >= 0 && out)
            out[k++] = base + o;
    }
    free(m);
    return rc;
}
