/* mpit.h (abi): the tools information interface (MPI_T), shared by its files:
 *   mpit.c        init and finalize, strings, enumerations, categories, sources, and the
 *                 control variables: every ISTHMUS_* setting of common/knobs.def
 *   mpit_pvar.c   performance variables: the gateway's and its links' counters that
 *                 `isthmus run --stats` prints (asked of the gateway, core/gwquery.c),
 *                 the gateway's clock, and this rank's own counters
 *   mpit_event.c  MPI 4.0 events: a message from another site arrived, one was queued as
 *                 unexpected, a link went down, a link came back
 *   mpit_vendor.c the vendor MPI's own variables and categories, behind a prefix
 * MPI_T calls report MPI_T error codes and never invoke error handlers.
 */
#ifndef ISM_ABI_MPIT_H
#define ISM_ABI_MPIT_H

#include "abi.h"

extern int ism_mpit_refs; /* MPI_T_init_thread calls not yet finalized */

#define ISM_MPIT_CHECK()                                                                           \
    do {                                                                                           \
        if (!ism_mpit_refs)                                                                        \
            return MPI_T_ERR_NOT_INITIALIZED;                                                      \
    } while (0)

/* The MPI_T way of returning a string: copy up to *len - 1 characters and a '\0' into
 * dst (if dst and *len > 0), and set *len to the string's length plus one. */
void ism_mpit_str(const char *src, char *dst, int *len);

/* An enumeration (MPI_T_enum handles point to these). */
typedef struct ism_mpit_enum {
    uint32_t magic;
    const char *name;
    int n;
    const char **items;
    const int *values;  /* NULL: 0..n-1 */
    void *vendor;       /* a vendor enumeration (mpit_vendor.c), else NULL */
} ism_mpit_enum;
#define ISM_MPIT_ENUM_MAGIC 0x6d74656eu

extern ism_mpit_enum ism_mpit_link_state; /* down, resuming, up */

/* isthmus's own variables, categories and events; the vendor's follow them. */
int ism_mpit_ncvars(void);
int ism_mpit_npvars(void);
int ism_mpit_nevents(void);
int ism_mpit_pvar_category(int idx);  /* the isthmus category of pvar idx */
int ism_mpit_event_category(int idx);
enum {
    ISM_MPIT_CAT_SETTINGS,
    ISM_MPIT_CAT_GATEWAY,
    ISM_MPIT_CAT_LINKS,
    ISM_MPIT_CAT_STREAMS,
    ISM_MPIT_CAT_RANK,
    ISM_MPIT_CAT_EVENTS,
    ISM_MPIT_NCATS
};

/* The gateway's clock now (source 1 of the events, pvar isthmus_gw_clock_ns). */
int ism_mpit_gateway_clock(uint64_t *ns);

/* ---- the vendor's MPI_T (mpit_vendor.c): attached once MPI is initialized ---- */
void ism_mpit_vendor_attach(void);   /* idempotent; counts stay 0 without a vendor MPI_T */
void ism_mpit_vendor_detach(void);
int ism_mpit_vendor_ncvars(void);
int ism_mpit_vendor_npvars(void);
int ism_mpit_vendor_ncats(void);
int ism_mpit_vendor_changes(void);   /* how often the vendor's set grew */
int ism_mpit_vendor_cvar_info(int i, char *name, int *name_len, int *verbosity,
                              MPI_Datatype *dt, MPI_T_enum *et, char *desc, int *desc_len,
                              int *bind, int *scope);
int ism_mpit_vendor_cvar_alloc(int i, void *obj, void **vh, int *count);
int ism_mpit_vendor_cvar_free(void *vh);
int ism_mpit_vendor_cvar_read(void *vh, void *buf);
int ism_mpit_vendor_cvar_write(void *vh, const void *buf);
int ism_mpit_vendor_pvar_info(int i, char *name, int *name_len, int *verbosity, int *var_class,
                              MPI_Datatype *dt, MPI_T_enum *et, char *desc, int *desc_len,
                              int *bind, int *readonly, int *continuous, int *atomic);
/* a handle in vendor session vs (made with ism.be->t->session_create) */
int ism_mpit_vendor_pvar_alloc(void *vs, int i, void *obj, void **vh, int *count);
enum { ISM_MPIT_OP_START, ISM_MPIT_OP_STOP, ISM_MPIT_OP_READ, ISM_MPIT_OP_WRITE,
       ISM_MPIT_OP_RESET, ISM_MPIT_OP_READRESET };
int ism_mpit_vendor_cat_info(int i, char *name, int *name_len, char *desc, int *desc_len,
                             int *ncvars, int *npvars, int *ncats);
/* the members of vendor category i, as indices in isthmus's numbering */
int ism_mpit_vendor_cat_members(int i, int what, int len, int out[]); /* what: 0 cvars,
                                                                         1 pvars, 2 cats */

#endif
