/* mpit_event.c (abi): MPI 4.0 events (see mpit.h).
 *
 *   isthmus_message_arrived    a message from another site reached this rank
 *   isthmus_unexpected_queued  ... and no receive was posted for it: it was queued
 *   isthmus_link_down          a WAN link of this rank's gateway went down
 *   isthmus_link_up            ... and came back (resumed)
 *
 * The core raises an event only when a registration for its kind exists (a bit in
 * ism_tev_mask), so unused events cost one test. Callbacks run inside the MPI call that
 * took the frame in (progress), so only callbacks registered for MPI_T_CB_REQUIRE_MPI_
 * RESTRICTED or a stricter level are called; an event with none is counted as dropped and
 * the dropped handler is told at once. Link events come from the gateway (ISM_F_WATCH /
 * ISM_F_LINKEV) and carry its clock (source 1); the others this process's (source 0).
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpit.h"

typedef struct {
    int a, b;
    unsigned long long bytes;
    int c;
} msg_elems;

typedef struct {
    int peer_site, peer_gateway, link, state;
} link_elems;

typedef struct {
    const char *name, *desc;
    int kind, nel;
    const char *elems; /* what the elements are, for the description */
} ev_def;

static const ev_def defs[ISM_TEV_N] = {
    {"isthmus_message_arrived", "a message from another site arrived at this rank",
     ISM_TEV_ARRIVED, 4, "source rank (in MPI_COMM_WORLD), tag, bytes, source site"},
    {"isthmus_unexpected_queued", "a message from another site arrived with no receive posted "
     "for it and was queued", ISM_TEV_UNEXPECTED, 4,
     "source rank (in MPI_COMM_WORLD), tag, bytes, messages now queued"},
    {"isthmus_link_down", "a WAN link of this rank's gateway went down", ISM_TEV_LINK_DOWN, 4,
     "peer site, peer gateway, link index, state (0: down)"},
    {"isthmus_link_up", "a WAN link of this rank's gateway came back", ISM_TEV_LINK_UP, 4,
     "peer site, peer gateway, link index, state (2: up)"},
};

int ism_mpit_nevents(void) { return ISM_TEV_N; }
int ism_mpit_event_category(int idx) { return idx >= 0 && idx < ISM_TEV_N ? ISM_MPIT_CAT_EVENTS : -1; }

static int is_link(int k) { return k == ISM_TEV_LINK_DOWN || k == ISM_TEV_LINK_UP; }

static void layout(int k, MPI_Datatype *t, MPI_Aint *d)
{
    if (is_link(k)) {
        for (int i = 0; i < 4; i++) {
            t[i] = MPI_INT;
            d[i] = (MPI_Aint)(i * sizeof(int));
        }
        return;
    }
    t[0] = t[1] = t[3] = MPI_INT;
    t[2] = MPI_UNSIGNED_LONG_LONG;
    d[0] = offsetof(msg_elems, a);
    d[1] = offsetof(msg_elems, b);
    d[2] = offsetof(msg_elems, bytes);
    d[3] = offsetof(msg_elems, c);
}

int PMPI_T_event_get_num(int *num_events)
{
    ISM_MPIT_CHECK();
    *num_events = ISM_TEV_N;
    return MPI_SUCCESS;
}
ISM_PMPI(T_event_get_num)

int PMPI_T_event_get_info(int event_index, char *name, int *name_len, int *verbosity,
                          MPI_Datatype array_of_datatypes[], MPI_Aint array_of_displacements[],
                          int *num_elements, MPI_T_enum *enumtype, MPI_Info *info, char *desc,
                          int *desc_len, int *bind)
{
    ISM_MPIT_CHECK();
    if (event_index < 0 || event_index >= ISM_TEV_N)
        return MPI_T_ERR_INVALID_INDEX;
    const ev_def *e = &defs[event_index];
    ism_mpit_str(e->name, name, name_len);
    char d[512];
    snprintf(d, sizeof d, "%s; elements: %s", e->desc, e->elems);
    ism_mpit_str(d, desc, desc_len);
    if (verbosity)
        *verbosity = MPI_T_VERBOSITY_USER_BASIC;
    MPI_Datatype t[4];
    MPI_Aint disp[4];
    layout(event_index, t, disp);
    /* the arrays are filled up to *num_elements (in), which returns the count */
    int room = num_elements ? *num_elements : 0;
    for (int i = 0; i < e->nel && i < room; i++) {
        if (array_of_datatypes)
            array_of_datatypes[i] = t[i];
        if (array_of_displacements)
            array_of_displacements[i] = disp[i];
    }
    if (num_elements)
        *num_elements = e->nel;
    if (enumtype)
        *enumtype = is_link(event_index) ? (MPI_T_enum)&ism_mpit_link_state : MPI_T_ENUM_NULL;
    if (info)
        *info = MPI_INFO_NULL;
    if (bind)
        *bind = MPI_T_BIND_NO_OBJECT;
    return MPI_SUCCESS;
}
ISM_PMPI(T_event_get_info)

int PMPI_T_event_get_index(const char *name, int *event_index)
{
    ISM_MPIT_CHECK();
    for (int i = 0; name && i < ISM_TEV_N; i++)
        if (!strcmp(defs[i].name, name)) {
            *event_index = i;
            return MPI_SUCCESS;
        }
    return MPI_T_ERR_INVALID_NAME;
}
ISM_PMPI(T_event_get_index)

/* ---- registrations ---- */

enum { LEVELS = 4 }; /* NONE, MPI_RESTRICTED, THREAD_SAFE, ASYNC_SIGNAL_SAFE */

typedef struct reg {
    uint32_t magic;
    int event;
    struct {
        MPI_T_event_cb_function *fn;
        void *user_data;
    } cb[LEVELS];
    MPI_T_event_dropped_cb_function *dropped;
    struct reg *next;
} reg;
#define REG_MAGIC 0x6d746572u

static reg *regs;

static int level_of(MPI_T_cb_safety s)
{
    switch (s) {
    case MPI_T_CB_REQUIRE_NONE: return 0;
    case MPI_T_CB_REQUIRE_MPI_RESTRICTED: return 1;
    case MPI_T_CB_REQUIRE_THREAD_SAFE: return 2;
    case MPI_T_CB_REQUIRE_ASYNC_SIGNAL_SAFE: return 3;
    default: return -1;
    }
}

static const MPI_T_cb_safety safety_of[LEVELS] = {
    MPI_T_CB_REQUIRE_NONE, MPI_T_CB_REQUIRE_MPI_RESTRICTED, MPI_T_CB_REQUIRE_THREAD_SAFE,
    MPI_T_CB_REQUIRE_ASYNC_SIGNAL_SAFE};

static reg *reg_of(MPI_T_event_registration h)
{
    reg *r = (reg *)h;
    return r && r->magic == REG_MAGIC ? r : NULL;
}

typedef struct {
    uint32_t magic;
    const ism_tev *e;
} instance;
#define INST_MAGIC 0x6d746569u

static const ism_tev *inst_of(MPI_T_event_instance h)
{
    instance *i = (instance *)h;
    return i && i->magic == INST_MAGIC ? i->e : NULL;
}

static void dispatch(const ism_tev *e)
{
    for (reg *r = regs; r; r = r->next) {
        if (r->event != e->kind)
            continue;
        int lv = 1; /* the core calls from inside an MPI call: MPI_RESTRICTED or stricter */
        while (lv < LEVELS && !r->cb[lv].fn)
            lv++;
        if (lv == LEVELS) {
            if (r->dropped)
                r->dropped(1, (MPI_T_event_registration)r, e->source,
                           MPI_T_CB_REQUIRE_MPI_RESTRICTED, NULL);
            continue;
        }
        instance in = {INST_MAGIC, e};
        r->cb[lv].fn((MPI_T_event_instance)&in, (MPI_T_event_registration)r, safety_of[lv],
                     r->cb[lv].user_data);
        in.magic = 0; /* an instance is valid only during its callback */
    }
}

/* The kinds anyone listens to; link events are asked of the gateway while wanted. */
static void update_mask(void)
{
    unsigned m = 0, link = 1u << ISM_TEV_LINK_DOWN | 1u << ISM_TEV_LINK_UP;
    for (reg *r = regs; r; r = r->next)
        m |= 1u << r->event;
    if ((m & link) != (ism_tev_mask & link))
        ism_gw_watch((m & link) != 0);
    ism_tev_hook = m ? dispatch : NULL;
    ism_tev_mask = m;
}

int PMPI_T_event_handle_alloc(int event_index, void *obj_handle, MPI_Info info,
                              MPI_T_event_registration *event_registration)
{
    ISM_MPIT_CHECK();
    (void)obj_handle; /* every event is bound to no object */
    (void)info;
    if (event_index < 0 || event_index >= ISM_TEV_N)
        return MPI_T_ERR_INVALID_INDEX;
    reg *r = calloc(1, sizeof *r);
    if (!r)
        return MPI_T_ERR_MEMORY;
    r->magic = REG_MAGIC;
    r->event = event_index;
    r->next = regs;
    regs = r;
    update_mask();
    *event_registration = (MPI_T_event_registration)r;
    return MPI_SUCCESS;
}
ISM_PMPI(T_event_handle_alloc)

int PMPI_T_event_handle_free(MPI_T_event_registration event_registration, void *user_data,
                             MPI_T_event_free_cb_function free_cb_function)
{
    ISM_MPIT_CHECK();
    reg *r = reg_of(event_registration);
    if (!r)
        return MPI_T_ERR_INVALID_HANDLE;
    for (reg **p = &regs; *p; p = &(*p)->next)
        if (*p == r) {
            *p = r->next;
            break;
        }
    update_mask();
    r->magic = 0;
    if (free_cb_function) /* nothing of it is pending: no callback runs any more */
        free_cb_function(event_registration, MPI_T_CB_REQUIRE_NONE, user_data);
    free(r);
    return MPI_SUCCESS;
}
ISM_PMPI(T_event_handle_free)

int PMPI_T_event_register_callback(MPI_T_event_registration event_registration,
                                   MPI_T_cb_safety cb_safety, MPI_Info info, void *user_data,
                                   MPI_T_event_cb_function event_cb_function)
{
    ISM_MPIT_CHECK();
    (void)info;
    reg *r = reg_of(event_registration);
    int lv = level_of(cb_safety);
    if (!r)
        return MPI_T_ERR_INVALID_HANDLE;
    if (lv < 0)
        return MPI_T_ERR_INVALID;
    r->cb[lv].fn = event_cb_function;
    r->cb[lv].user_data = user_data;
    return MPI_SUCCESS;
}
ISM_PMPI(T_event_register_callback)

int PMPI_T_event_set_dropped_handler(MPI_T_event_registration event_registration,
                                     MPI_T_event_dropped_cb_function dropped_cb_function)
{
    ISM_MPIT_CHECK();
    reg *r = reg_of(event_registration);
    if (!r)
        return MPI_T_ERR_INVALID_HANDLE;
    r->dropped = dropped_cb_function;
    return MPI_SUCCESS;
}
ISM_PMPI(T_event_set_dropped_handler)

/* Hints: isthmus takes none, so the info used is always empty. */
static int empty_info(MPI_Info *info_used)
{
    if (!info_used)
        return MPI_T_ERR_INVALID;
    if (!ism.initialized || ism.finalized) {
        *info_used = MPI_INFO_NULL;
        return MPI_SUCCESS;
    }
    return PMPI_Info_create(info_used) == MPI_SUCCESS ? MPI_SUCCESS : MPI_T_ERR_MEMORY;
}

int PMPI_T_event_handle_set_info(MPI_T_event_registration event_registration, MPI_Info info)
{
    ISM_MPIT_CHECK();
    (void)info;
    return reg_of(event_registration) ? MPI_SUCCESS : MPI_T_ERR_INVALID_HANDLE;
}
ISM_PMPI(T_event_handle_set_info)

int PMPI_T_event_handle_get_info(MPI_T_event_registration event_registration,
                                 MPI_Info *info_used)
{
    ISM_MPIT_CHECK();
    return reg_of(event_registration) ? empty_info(info_used) : MPI_T_ERR_INVALID_HANDLE;
}
ISM_PMPI(T_event_handle_get_info)

int PMPI_T_event_callback_set_info(MPI_T_event_registration event_registration,
                                   MPI_T_cb_safety cb_safety, MPI_Info info)
{
    ISM_MPIT_CHECK();
    (void)info;
    if (!reg_of(event_registration))
        return MPI_T_ERR_INVALID_HANDLE;
    return level_of(cb_safety) < 0 ? MPI_T_ERR_INVALID : MPI_SUCCESS;
}
ISM_PMPI(T_event_callback_set_info)

int PMPI_T_event_callback_get_info(MPI_T_event_registration event_registration,
                                   MPI_T_cb_safety cb_safety, MPI_Info *info_used)
{
    ISM_MPIT_CHECK();
    if (!reg_of(event_registration))
        return MPI_T_ERR_INVALID_HANDLE;
    if (level_of(cb_safety) < 0)
        return MPI_T_ERR_INVALID;
    return empty_info(info_used);
}
ISM_PMPI(T_event_callback_get_info)

/* ---- inside a callback ---- */

static void elements(const ism_tev *e, msg_elems *m, link_elems *l)
{
    if (is_link(e->kind))
        *l = (link_elems){(int)e->v[0], (int)e->v[1], (int)e->v[2], (int)e->v[3]};
    else
        *m = (msg_elems){(int)e->v[0], (int)e->v[1], (unsigned long long)e->v[2], (int)e->v[3]};
}

int PMPI_T_event_read(MPI_T_event_instance event_instance, int element_index, void *buffer)
{
    ISM_MPIT_CHECK();
    const ism_tev *e = inst_of(event_instance);
    if (!e || !buffer)
        return MPI_T_ERR_INVALID_HANDLE;
    if (element_index < 0 || element_index >= defs[e->kind].nel)
        return MPI_T_ERR_INVALID_INDEX;
    msg_elems m;
    link_elems l;
    elements(e, &m, &l);
    MPI_Datatype t[4];
    MPI_Aint d[4];
    layout(e->kind, t, d);
    const char *base = is_link(e->kind) ? (const char *)&l : (const char *)&m;
    memcpy(buffer, base + d[element_index],
           t[element_index] == MPI_INT ? sizeof(int) : sizeof(unsigned long long));
    return MPI_SUCCESS;
}
ISM_PMPI(T_event_read)

int PMPI_T_event_copy(MPI_T_event_instance event_instance, void *buffer)
{
    ISM_MPIT_CHECK();
    const ism_tev *e = inst_of(event_instance);
    if (!e || !buffer)
        return MPI_T_ERR_INVALID_HANDLE;
    msg_elems m;
    link_elems l;
    elements(e, &m, &l);
    if (is_link(e->kind))
        memcpy(buffer, &l, sizeof l);
    else
        memcpy(buffer, &m, sizeof m);
    return MPI_SUCCESS;
}
ISM_PMPI(T_event_copy)

int PMPI_T_event_get_timestamp(MPI_T_event_instance event_instance, MPI_Count *event_timestamp)
{
    ISM_MPIT_CHECK();
    const ism_tev *e = inst_of(event_instance);
    if (!e || !event_timestamp)
        return MPI_T_ERR_INVALID_HANDLE;
    *event_timestamp = (MPI_Count)e->ts;
    return MPI_SUCCESS;
}
ISM_PMPI(T_event_get_timestamp)

int PMPI_T_event_get_source(MPI_T_event_instance event_instance, int *source_index)
{
    ISM_MPIT_CHECK();
    const ism_tev *e = inst_of(event_instance);
    if (!e || !source_index)
        return MPI_T_ERR_INVALID_HANDLE;
    *source_index = e->source;
    return MPI_SUCCESS;
}
ISM_PMPI(T_event_get_source)
