/* mpit.c (abi): MPI_T's life, strings, enumerations, categories, event sources and the
 * control variables (see mpit.h).
 *
 * The control variables are the ISTHMUS_* settings of common/knobs.def, by their
 * variable names, with their documentation. A value is what this process uses: the live
 * value for the settings the library holds (ISTHMUS_EAGER, _CHUNK, _EARLY, _WINDOW,
 * _IDLE_YIELD_US once MPI is initialized), else the environment's, else the default. Two
 * may be changed at run time because only this rank's next messages or waits follow
 * them: ISTHMUS_EAGER (up to ISTHMUS_CHUNK) and ISTHMUS_IDLE_YIELD_US. All others are
 * read-only: the sites must agree on them, or they are read once at start. The vendor's
 * variables and categories follow isthmus's (mpit_vendor.c).
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/knobs.h"
#include "mpit.h"

int ism_mpit_refs;

void ism_mpit_str(const char *src, char *dst, int *len)
{
    if (!len)
        return;
    int n = (int)strlen(src);
    if (dst && *len > 0) {
        int k = n < *len - 1 ? n : *len - 1;
        memcpy(dst, src, (size_t)k);
        dst[k] = 0;
    }
    *len = n + 1;
}

int PMPI_T_init_thread(int required, int *provided)
{
    (void)required;
    if (provided)
        *provided = MPI_THREAD_SINGLE; /* isthmus's MPI_T is not thread safe */
    ism_mpit_refs++;
    return MPI_SUCCESS;
}
ISM_PMPI(T_init_thread)

int PMPI_T_finalize(void)
{
    ISM_MPIT_CHECK();
    if (--ism_mpit_refs == 0)
        ism_mpit_vendor_detach();
    return MPI_SUCCESS;
}
ISM_PMPI(T_finalize)

/* ---- enumerations ---- */

static const char *link_states[] = {"down", "resuming", "up"};
ism_mpit_enum ism_mpit_link_state = {ISM_MPIT_ENUM_MAGIC, "isthmus_link_state", 3, link_states,
                                     NULL, NULL};

/* the ENUM settings' words ("tcp|udp"), split once */
static ism_mpit_enum knob_enums[ISM_K_N];

static ism_mpit_enum *knob_enum(int k)
{
    if (ism_knobs[k].kind != ISM_KNOB_ENUM)
        return NULL;
    ism_mpit_enum *e = &knob_enums[k];
    if (e->magic)
        return e;
    const char *u = ism_knobs[k].unit;
    int n = 1;
    for (const char *p = u; *p; p++)
        n += *p == '|';
    char *words = strdup(u);
    const char **items = calloc((size_t)n, sizeof *items);
    if (!words || !items) {
        free(words);
        free(items);
        return NULL;
    }
    int i = 0;
    for (char *save = NULL, *t = strtok_r(words, "|", &save); t && i < n;
         t = strtok_r(NULL, "|", &save))
        items[i++] = t;
    *e = (ism_mpit_enum){ISM_MPIT_ENUM_MAGIC, ism_knobs[k].name, i, items, NULL, NULL};
    return e;
}

static ism_mpit_enum *enum_of(MPI_T_enum h)
{
    ism_mpit_enum *e = (ism_mpit_enum *)h;
    return e && e->magic == ISM_MPIT_ENUM_MAGIC ? e : NULL;
}

int PMPI_T_enum_get_info(MPI_T_enum enumtype, int *num, char *name, int *name_len)
{
    ISM_MPIT_CHECK();
    ism_mpit_enum *e = enum_of(enumtype);
    if (!e)
        return MPI_T_ERR_INVALID_HANDLE;
    if (e->vendor)
        return ism.be->t->enum_info(e->vendor, num, name, name_len);
    if (num)
        *num = e->n;
    ism_mpit_str(e->name, name, name_len);
    return MPI_SUCCESS;
}
ISM_PMPI(T_enum_get_info)

int PMPI_T_enum_get_item(MPI_T_enum enumtype, int indx, int *value, char *name, int *name_len)
{
    ISM_MPIT_CHECK();
    ism_mpit_enum *e = enum_of(enumtype);
    if (!e)
        return MPI_T_ERR_INVALID_HANDLE;
    if (e->vendor)
        return ism.be->t->enum_item(e->vendor, indx, value, name, name_len);
    if (indx < 0 || indx >= e->n)
        return MPI_T_ERR_INVALID_ITEM;
    if (value)
        *value = e->values ? e->values[indx] : indx;
    ism_mpit_str(e->items[indx], name, name_len);
    return MPI_SUCCESS;
}
ISM_PMPI(T_enum_get_item)

/* ---- control variables ---- */

int ism_mpit_ncvars(void) { return ISM_K_N; }

static int cvar_writable(int k) { return k == ISM_K_EAGER || k == ISM_K_IDLE_YIELD_US; }

static int is_text(int k)
{
    ism_knob_kind kind = ism_knobs[k].kind;
    return kind == ISM_KNOB_NAME || kind == ISM_KNOB_FILE || kind == ISM_KNOB_CHOICE;
}

static MPI_Datatype cvar_type(int k)
{
    switch (ism_knobs[k].kind) {
    case ISM_KNOB_SIZE:
    case ISM_KNOB_COUNT: return MPI_UNSIGNED_LONG_LONG;
    case ISM_KNOB_BOOL:
    case ISM_KNOB_ENUM: return MPI_INT;
    case ISM_KNOB_DURATION:
    case ISM_KNOB_RATE:
    case ISM_KNOB_RATIO: return MPI_DOUBLE;
    default: return MPI_CHAR;
    }
}

#define TEXT_MAX 4096 /* a text setting's room (a path) */

/* What this process uses for knob k: 1 and *num (or *text) set; 0 if it is unknown
 * here (a default that depends on what the gateway measures, such as "automatic"). */
static int cvar_value(int k, double *num, const char **text)
{
    if (ism.initialized && !ism.finalized) {
        switch (k) {
        case ISM_K_EAGER: *num = (double)ism.eager_limit; return 1;
        case ISM_K_CHUNK: *num = (double)ism.chunk; return 1;
        case ISM_K_EARLY: *num = (double)ism.early_max; return 1;
        case ISM_K_WINDOW: *num = ism.window; return 1;
        case ISM_K_IDLE_YIELD_US: *num = (double)ism.idle_yield_ns / 1000.0; return 1;
        default: break;
        }
    }
    ism_knob_val v;
    char err[512];
    int rc = ism_knob_env((ism_knob_id)k, &v, err, sizeof err);
    if (rc < 0)
        return 0;
    if (!rc) {
        /* the documented default: "64k", "0 (automatic)", "1500"; or words for "none" */
        char first[64];
        snprintf(first, sizeof first, "%s", ism_knobs[k].def);
        first[strcspn(first, " ,(")] = 0;
        if (is_text(k)) {
            *text = "";
            return 1;
        }
        if (!strcmp(first, "unknown")) { /* a link not described: 0, as the gateway takes it */
            *num = 0;
            return 1;
        }
        if (!strcmp(first, "auto") && ism_knob_auto((ism_knob_id)k) >= 0) {
            *num = ism_knob_auto((ism_knob_id)k); /* a count computed where it is read */
            return 1;
        }
        if (ism_knob_parse((ism_knob_id)k, first, &v, err, sizeof err))
            return 0;
    }
    if (is_text(k))
        *text = v.str ? v.str : "";
    else if (ism_knobs[k].kind == ISM_KNOB_ENUM) {
        ism_mpit_enum *e = knob_enum(k);
        *num = 0;
        for (int i = 0; e && i < e->n; i++)
            if (v.str && !strcmp(e->items[i], v.str))
                *num = i;
    } else
        *num = v.num;
    return 1;
}

int PMPI_T_cvar_get_num(int *num_cvar)
{
    ISM_MPIT_CHECK();
    ism_mpit_vendor_attach();
    *num_cvar = ism_mpit_ncvars() + ism_mpit_vendor_ncvars();
    return MPI_SUCCESS;
}
ISM_PMPI(T_cvar_get_num)

int PMPI_T_cvar_get_info(int cvar_index, char *name, int *name_len, int *verbosity,
                         MPI_Datatype *datatype, MPI_T_enum *enumtype, char *desc,
                         int *desc_len, int *bind, int *scope)
{
    ISM_MPIT_CHECK();
    int nk = ism_mpit_ncvars();
    if (cvar_index >= nk)
        return ism_mpit_vendor_cvar_info(cvar_index - nk, name, name_len, verbosity, datatype,
                                         enumtype, desc, desc_len, bind, scope);
    if (cvar_index < 0)
        return MPI_T_ERR_INVALID_INDEX;
    const ism_knob *k = &ism_knobs[cvar_index];
    ism_mpit_str(k->name, name, name_len);
    char d[1024];
    snprintf(d, sizeof d, "%s (default: %s)", k->doc, k->def);
    ism_mpit_str(d, desc, desc_len);
    if (verbosity)
        *verbosity = MPI_T_VERBOSITY_TUNER_BASIC;
    if (datatype)
        *datatype = cvar_type(cvar_index);
    if (enumtype) {
        ism_mpit_enum *e = knob_enum(cvar_index);
        *enumtype = e ? (MPI_T_enum)e : MPI_T_ENUM_NULL;
    }
    if (bind)
        *bind = MPI_T_BIND_NO_OBJECT;
    if (scope)
        *scope = cvar_writable(cvar_index) ? MPI_T_SCOPE_LOCAL : MPI_T_SCOPE_READONLY;
    return MPI_SUCCESS;
}
ISM_PMPI(T_cvar_get_info)

static int find_name(const char *name, int n, const char *(*name_of)(int))
{
    for (int i = 0; i < n; i++)
        if (!strcmp(name_of(i), name))
            return i;
    return -1;
}

static const char *knob_name(int i) { return ism_knobs[i].name; }

/* the vendor's entries by name: through its info calls */
static int vendor_find(const char *name, int n, int pvar, int var_class)
{
    char buf[512];
    for (int i = 0; i < n; i++) {
        int len = sizeof buf, cls = 0;
        int rc = pvar ? ism_mpit_vendor_pvar_info(i, buf, &len, NULL, &cls, NULL, NULL, NULL,
                                                  NULL, NULL, NULL, NULL, NULL)
                      : ism_mpit_vendor_cvar_info(i, buf, &len, NULL, NULL, NULL, NULL, NULL,
                                                  NULL, NULL);
        if (rc == MPI_SUCCESS && !strcmp(buf, name) && (!pvar || cls == var_class))
            return i;
    }
    return -1;
}

int PMPI_T_cvar_get_index(const char *name, int *cvar_index)
{
    ISM_MPIT_CHECK();
    if (!name || !cvar_index)
        return MPI_T_ERR_INVALID;
    int i = find_name(name, ism_mpit_ncvars(), knob_name);
    if (i < 0) {
        ism_mpit_vendor_attach();
        int v = vendor_find(name, ism_mpit_vendor_ncvars(), 0, 0);
        if (v < 0)
            return MPI_T_ERR_INVALID_NAME;
        i = ism_mpit_ncvars() + v;
    }
    *cvar_index = i;
    return MPI_SUCCESS;
}
ISM_PMPI(T_cvar_get_index)

/* A cvar handle: one of isthmus's settings, or the vendor's handle. */
typedef struct {
    uint32_t magic;
    int index;
    void *vendor;
} cvar_handle;
#define CVAR_MAGIC 0x6d746376u

static cvar_handle *cvh(MPI_T_cvar_handle h)
{
    cvar_handle *c = (cvar_handle *)h;
    return c && c->magic == CVAR_MAGIC ? c : NULL;
}

int PMPI_T_cvar_handle_alloc(int cvar_index, void *obj_handle, MPI_T_cvar_handle *handle,
                             int *count)
{
    ISM_MPIT_CHECK();
    int nk = ism_mpit_ncvars();
    if (cvar_index < 0 || cvar_index >= nk + ism_mpit_vendor_ncvars())
        return MPI_T_ERR_INVALID_INDEX;
    cvar_handle *c = calloc(1, sizeof *c);
    if (!c)
        return MPI_T_ERR_MEMORY;
    c->magic = CVAR_MAGIC;
    c->index = cvar_index;
    if (cvar_index >= nk) {
        int rc = ism_mpit_vendor_cvar_alloc(cvar_index - nk, obj_handle, &c->vendor, count);
        if (rc) {
            free(c);
            return rc;
        }
    } else if (count) {
        *count = is_text(cvar_index) ? TEXT_MAX : 1;
    }
    *handle = (MPI_T_cvar_handle)c;
    return MPI_SUCCESS;
}
ISM_PMPI(T_cvar_handle_alloc)

int PMPI_T_cvar_handle_free(MPI_T_cvar_handle *handle)
{
    ISM_MPIT_CHECK();
    cvar_handle *c = handle ? cvh(*handle) : NULL;
    if (!c)
        return MPI_T_ERR_INVALID_HANDLE;
    int rc = c->vendor ? ism_mpit_vendor_cvar_free(c->vendor) : MPI_SUCCESS;
    c->magic = 0;
    free(c);
    *handle = MPI_T_CVAR_HANDLE_NULL;
    return rc;
}
ISM_PMPI(T_cvar_handle_free)

int PMPI_T_cvar_read(MPI_T_cvar_handle handle, void *buf)
{
    ISM_MPIT_CHECK();
    cvar_handle *c = cvh(handle);
    if (!c || !buf)
        return MPI_T_ERR_INVALID_HANDLE;
    if (c->vendor)
        return ism_mpit_vendor_cvar_read(c->vendor, buf);
    double num = 0;
    const char *text = NULL;
    if (!cvar_value(c->index, &num, &text))
        return MPI_T_ERR_NOT_ACCESSIBLE;
    MPI_Datatype t = cvar_type(c->index);
    if (t == MPI_CHAR)
        snprintf(buf, TEXT_MAX, "%s", text ? text : "");
    else if (t == MPI_INT)
        *(int *)buf = (int)num;
    else if (t == MPI_DOUBLE)
        *(double *)buf = num;
    else
        *(unsigned long long *)buf = (unsigned long long)llround(num);
    return MPI_SUCCESS;
}
ISM_PMPI(T_cvar_read)

int PMPI_T_cvar_write(MPI_T_cvar_handle handle, const void *buf)
{
    ISM_MPIT_CHECK();
    cvar_handle *c = cvh(handle);
    if (!c || !buf)
        return MPI_T_ERR_INVALID_HANDLE;
    if (c->vendor)
        return ism_mpit_vendor_cvar_write(c->vendor, buf);
    if (!cvar_writable(c->index))
        return MPI_T_ERR_CVAR_SET_NEVER;
    if (!ism.initialized || ism.finalized)
        return MPI_T_ERR_CVAR_SET_NOT_NOW; /* MPI_Init would set it from the environment */
    if (c->index == ISM_K_EAGER) {
        unsigned long long v = *(const unsigned long long *)buf;
        if (v > ism.chunk)
            return MPI_T_ERR_INVALID; /* an eager message must fit one frame */
        ism.eager_limit = (size_t)v;
    } else {
        double us = *(const double *)buf;
        if (!(us >= 0 && us <= ism_knobs[ISM_K_IDLE_YIELD_US].max))
            return MPI_T_ERR_INVALID;
        ism.idle_yield_ns = (int64_t)(us * 1000);
    }
    return MPI_SUCCESS;
}
ISM_PMPI(T_cvar_write)

/* ---- categories: isthmus's, then the vendor's ---- */

static const struct {
    const char *name, *desc;
} cats[ISM_MPIT_NCATS] = {
    {"isthmus_settings", "the ISTHMUS_* settings of this process (docs/knobs.md)"},
    {"isthmus_gateway", "this rank's gateway: its buffers and its clock"},
    {"isthmus_links", "the WAN links of this rank's gateway, one element per link"},
    {"isthmus_streams", "the connections of those links (TCP streams or the reliable-UDP "
                        "connection), one element per connection"},
    {"isthmus_rank", "this rank's own cross-site traffic"},
    {"isthmus_events", "events of cross-site traffic and of the WAN links"},
};

static int members(int cat, int what, int *out, int len)
{
    int n = 0;
    if (what == 0 && cat == ISM_MPIT_CAT_SETTINGS)
        for (int i = 0; i < ism_mpit_ncvars(); i++, n++)
            if (out && n < len)
                out[n] = i;
    if (what == 1)
        for (int i = 0; i < ism_mpit_npvars(); i++)
            if (ism_mpit_pvar_category(i) == cat) {
                if (out && n < len)
                    out[n] = i;
                n++;
            }
    if (what == 3)
        for (int i = 0; i < ism_mpit_nevents(); i++)
            if (ism_mpit_event_category(i) == cat) {
                if (out && n < len)
                    out[n] = i;
                n++;
            }
    return n;
}

int PMPI_T_category_get_num(int *num_cat)
{
    ISM_MPIT_CHECK();
    ism_mpit_vendor_attach();
    *num_cat = ISM_MPIT_NCATS + ism_mpit_vendor_ncats();
    return MPI_SUCCESS;
}
ISM_PMPI(T_category_get_num)

int PMPI_T_category_get_info(int cat_index, char *name, int *name_len, char *desc,
                             int *desc_len, int *num_cvars, int *num_pvars, int *num_categories)
{
    ISM_MPIT_CHECK();
    if (cat_index >= ISM_MPIT_NCATS)
        return ism_mpit_vendor_cat_info(cat_index - ISM_MPIT_NCATS, name, name_len, desc,
                                        desc_len, num_cvars, num_pvars, num_categories);
    if (cat_index < 0)
        return MPI_T_ERR_INVALID_INDEX;
    ism_mpit_str(cats[cat_index].name, name, name_len);
    ism_mpit_str(cats[cat_index].desc, desc, desc_len);
    if (num_cvars)
        *num_cvars = members(cat_index, 0, NULL, 0);
    if (num_pvars)
        *num_pvars = members(cat_index, 1, NULL, 0);
    if (num_categories)
        *num_categories = 0;
    return MPI_SUCCESS;
}
ISM_PMPI(T_category_get_info)

static int cat_list(int cat, int what, int len, int out[])
{
    ISM_MPIT_CHECK();
    if (cat >= ISM_MPIT_NCATS)
        return what == 3 ? MPI_SUCCESS
                         : ism_mpit_vendor_cat_members(cat - ISM_MPIT_NCATS, what, len, out);
    if (cat < 0)
        return MPI_T_ERR_INVALID_INDEX;
    if (what != 2)
        members(cat, what, out, len);
    return MPI_SUCCESS;
}

int PMPI_T_category_get_cvars(int cat_index, int len, int indices[])
{
    return cat_list(cat_index, 0, len, indices);
}
ISM_PMPI(T_category_get_cvars)

int PMPI_T_category_get_pvars(int cat_index, int len, int indices[])
{
    return cat_list(cat_index, 1, len, indices);
}
ISM_PMPI(T_category_get_pvars)

int PMPI_T_category_get_categories(int cat_index, int len, int indices[])
{
    return cat_list(cat_index, 2, len, indices);
}
ISM_PMPI(T_category_get_categories)

int PMPI_T_category_get_events(int cat_index, int len, int indices[])
{
    return cat_list(cat_index, 3, len, indices);
}
ISM_PMPI(T_category_get_events)

int PMPI_T_category_get_num_events(int cat_index, int *num_events)
{
    ISM_MPIT_CHECK();
    if (cat_index < 0 || cat_index >= ISM_MPIT_NCATS + ism_mpit_vendor_ncats())
        return MPI_T_ERR_INVALID_INDEX;
    *num_events = cat_index < ISM_MPIT_NCATS ? members(cat_index, 3, NULL, 0) : 0;
    return MPI_SUCCESS;
}
ISM_PMPI(T_category_get_num_events)

static const char *cat_name(int i) { return cats[i].name; }

int PMPI_T_category_get_index(const char *name, int *cat_index)
{
    ISM_MPIT_CHECK();
    if (!name || !cat_index)
        return MPI_T_ERR_INVALID;
    int i = find_name(name, ISM_MPIT_NCATS, cat_name);
    if (i < 0) {
        ism_mpit_vendor_attach();
        char buf[512];
        for (int v = 0; i < 0 && v < ism_mpit_vendor_ncats(); v++) {
            int len = sizeof buf;
            if (ism_mpit_vendor_cat_info(v, buf, &len, NULL, NULL, NULL, NULL, NULL) ==
                    MPI_SUCCESS &&
                !strcmp(buf, name))
                i = ISM_MPIT_NCATS + v;
        }
        if (i < 0)
            return MPI_T_ERR_INVALID_NAME;
    }
    *cat_index = i;
    return MPI_SUCCESS;
}
ISM_PMPI(T_category_get_index)

int PMPI_T_category_changed(int *update_number)
{
    ISM_MPIT_CHECK();
    ism_mpit_vendor_attach();
    *update_number = ism_mpit_vendor_changes();
    return MPI_SUCCESS;
}
ISM_PMPI(T_category_changed)

/* ---- event sources: this process's clock and the gateway's ---- */

static const struct {
    const char *name, *desc;
} sources[2] = {
    {"isthmus_process", "this process's CLOCK_MONOTONIC, in nanoseconds"},
    {"isthmus_gateway", "the CLOCK_MONOTONIC of this rank's gateway, in nanoseconds (link "
                        "events); on another host it is another clock"},
};

int PMPI_T_source_get_num(int *num_sources)
{
    ISM_MPIT_CHECK();
    *num_sources = 2;
    return MPI_SUCCESS;
}
ISM_PMPI(T_source_get_num)

int PMPI_T_source_get_info(int source_index, char *name, int *name_len, char *desc,
                           int *desc_len, MPI_T_source_order *ordering,
                           MPI_Count *ticks_per_second, MPI_Count *max_ticks, MPI_Info *info)
{
    ISM_MPIT_CHECK();
    if (source_index < 0 || source_index > 1)
        return MPI_T_ERR_INVALID_INDEX;
    ism_mpit_str(sources[source_index].name, name, name_len);
    ism_mpit_str(sources[source_index].desc, desc, desc_len);
    if (ordering)
        *ordering = MPI_T_SOURCE_ORDERED;
    if (ticks_per_second)
        *ticks_per_second = 1000000000;
    if (max_ticks)
        *max_ticks = INT64_MAX;
    if (info)
        *info = MPI_INFO_NULL;
    return MPI_SUCCESS;
}
ISM_PMPI(T_source_get_info)

int PMPI_T_source_get_timestamp(int source_index, MPI_Count *timestamp)
{
    ISM_MPIT_CHECK();
    if (source_index == 0) {
        *timestamp = (MPI_Count)ism_tev_now();
        return MPI_SUCCESS;
    }
    if (source_index != 1)
        return MPI_T_ERR_INVALID_INDEX;
    uint64_t ns;
    if (ism_mpit_gateway_clock(&ns))
        return MPI_T_ERR_NOT_ACCESSIBLE;
    *timestamp = (MPI_Count)ns;
    return MPI_SUCCESS;
}
ISM_PMPI(T_source_get_timestamp)
