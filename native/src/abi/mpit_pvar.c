/* mpit_pvar.c (abi): MPI_T performance variables (see mpit.h).
 *
 * The gateway's variables are the fields `isthmus run --stats` prints, read from the
 * gateway itself: a read sends it a QUERY and waits for its ANSWER (core/gwquery.c), so
 * a value is as fresh as the read, and costs a round trip to the gateway (tens of
 * microseconds on one host). Per-link variables have one element per link of this rank's
 * gateway (isthmus_link_peer_site and _peer_gateway say which), per-connection ones one
 * per connection of those links in link order. All are continuous and read-only: they
 * count from the start of the job and cannot be started, stopped, reset or written. This
 * rank's own counters need no gateway. The vendor's variables follow (mpit_vendor.c).
 */
#include <stdlib.h>
#include <string.h>

#include "../contract/gwquery.h"
#include "../common/le.h"
#include "mpit.h"

enum { W_HEAD, W_LINK, W_STREAM, W_RANK };
enum { R_MSGS, R_BYTES, R_UNEXPECTED, R_RMA_FRAMES, R_RMA_SHM_WINS, R_RMA_DIRECT };

typedef struct {
    const char *name, *desc;
    int cls, cat, where, word;
} pvar_def;

#define C MPI_T_PVAR_CLASS_COUNTER
#define G MPI_T_PVAR_CLASS_GENERIC
#define L ISM_MPIT_CAT_LINKS
#define S ISM_MPIT_CAT_STREAMS
static const pvar_def defs[] = {
    {"isthmus_gw_clock_ns", "the gateway's CLOCK_MONOTONIC when it answered the read, ns",
     G, ISM_MPIT_CAT_GATEWAY, W_HEAD, ISM_GWQ_H_CLOCK_NS},
    {"isthmus_gw_buffered_bytes", "bytes the gateway holds in its buffer pool now",
     MPI_T_PVAR_CLASS_LEVEL, ISM_MPIT_CAT_GATEWAY, W_HEAD, ISM_GWQ_H_HELD},
    {"isthmus_gw_peak_buffered_bytes", "the most bytes the gateway held (--stats: peak buffered)",
     MPI_T_PVAR_CLASS_HIGHWATERMARK, ISM_MPIT_CAT_GATEWAY, W_HEAD, ISM_GWQ_H_PEAK},
    {"isthmus_gw_pool_buffers", "buffers in the gateway's pool (ISTHMUS_GW_BUFFERS)",
     MPI_T_PVAR_CLASS_SIZE, ISM_MPIT_CAT_GATEWAY, W_HEAD, ISM_GWQ_H_POOL},
    {"isthmus_link_peer_site", "the site at the other end of each link", G, L, W_LINK,
     ISM_GWQ_L_SITE},
    {"isthmus_link_peer_gateway", "the gateway at the other end of each link", G, L, W_LINK,
     ISM_GWQ_L_GW},
    {"isthmus_link_state", "each link's state (down, resuming, up)", MPI_T_PVAR_CLASS_STATE, L,
     W_LINK, ISM_GWQ_L_STATE},
    {"isthmus_link_streams", "connections of each link", MPI_T_PVAR_CLASS_SIZE, L, W_LINK,
     ISM_GWQ_L_NSTREAMS},
    {"isthmus_link_sent_messages", "messages sent on each link", C, L, W_LINK, ISM_GWQ_L_TX_MSGS},
    {"isthmus_link_sent_bytes", "bytes written to each link's connections", C, L, W_LINK,
     ISM_GWQ_L_TX_BYTES},
    {"isthmus_link_sent_frames", "frames sent on each link", C, L, W_LINK, ISM_GWQ_L_TX_FRAMES},
    {"isthmus_link_early_bytes", "payload bytes of early data (sent before the receiver's "
     "clear-to-send) sent on each link", C, L, W_LINK, ISM_GWQ_L_TX_EARLY},
    {"isthmus_link_flow_frames_ahead", "flow-control frames that passed queued data on each link",
     C, L, W_LINK, ISM_GWQ_L_FLOW_PASSED},
    {"isthmus_link_received_messages", "messages received on each link", C, L, W_LINK,
     ISM_GWQ_L_RX_MSGS},
    {"isthmus_link_received_bytes", "bytes read from each link's connections", C, L, W_LINK,
     ISM_GWQ_L_RX_BYTES},
    {"isthmus_link_received_frames", "frames received on each link", C, L, W_LINK,
     ISM_GWQ_L_RX_FRAMES},
    {"isthmus_link_reconnects", "times each link went down and was rebuilt", C, L, W_LINK,
     ISM_GWQ_L_RECONNECTS},
    {"isthmus_link_resent_frames", "frames sent again after a reconnection on each link", C, L,
     W_LINK, ISM_GWQ_L_RESENT},
    {"isthmus_link_duplicate_frames", "frames received twice and dropped on each link", C, L,
     W_LINK, ISM_GWQ_L_DUPLICATES},
    {"isthmus_link_crc_errors", "frames that failed their CRC32C on each link", C, L, W_LINK,
     ISM_GWQ_L_CRC_ERRORS},
    {"isthmus_link_rtt_ns", "each link's heartbeat round trip, smoothed, ns (0: not yet measured)",
     G, L, W_LINK, ISM_GWQ_L_SRTT_NS},
    {"isthmus_link_min_rtt_ns", "each link's shortest heartbeat round trip, ns",
     MPI_T_PVAR_CLASS_LOWWATERMARK, L, W_LINK, ISM_GWQ_L_MIN_RTT_NS},
    {"isthmus_stream_rtt_ns", "each connection's round trip as its transport measures it, ns",
     G, S, W_STREAM, ISM_GWQ_S_SRTT_NS},
    {"isthmus_stream_min_rtt_ns", "each connection's shortest round trip, ns",
     MPI_T_PVAR_CLASS_LOWWATERMARK, S, W_STREAM, ISM_GWQ_S_MIN_RTT_NS},
    {"isthmus_stream_cwnd_bytes", "each connection's congestion window, bytes", G, S, W_STREAM,
     ISM_GWQ_S_CWND},
    {"isthmus_stream_pacing_bytes_per_s", "each connection's pacing rate, bytes/s (0: none)", G,
     S, W_STREAM, ISM_GWQ_S_PACING},
    {"isthmus_rank_remote_messages_sent", "messages this rank sent to other sites", C,
     ISM_MPIT_CAT_RANK, W_RANK, R_MSGS},
    {"isthmus_rank_remote_bytes_sent", "bytes this rank sent to other sites", C,
     ISM_MPIT_CAT_RANK, W_RANK, R_BYTES},
    {"isthmus_rank_unexpected_queued", "messages from other sites waiting in this rank's "
     "unexpected queue", MPI_T_PVAR_CLASS_LEVEL, ISM_MPIT_CAT_RANK, W_RANK, R_UNEXPECTED},
    {"isthmus_rank_rma_frames_sent", "one-sided frames this rank sent to other sites "
     "(operations, their replies, synchronisation; small puts gathered into one frame count "
     "once)", C, ISM_MPIT_CAT_RANK, W_RANK, R_RMA_FRAMES},
    {"isthmus_rank_rma_shm_windows", "MPI_Win_allocate windows this rank made whose memory is "
     "the vendor's shared memory (every member at this site on one node; ISTHMUS_RMA_SHM)", C,
     ISM_MPIT_CAT_RANK, W_RANK, R_RMA_SHM_WINS},
    {"isthmus_rank_rma_direct_ops", "puts and gets this rank did itself as memcpy into the "
     "shared memory of a window's member on this node (ISTHMUS_RMA_SHM)", C, ISM_MPIT_CAT_RANK,
     W_RANK, R_RMA_DIRECT},
};
#undef C
#undef G
#undef L
#undef S
#define NDEFS ((int)(sizeof defs / sizeof defs[0]))

int ism_mpit_npvars(void) { return NDEFS; }

int ism_mpit_pvar_category(int idx) { return idx >= 0 && idx < NDEFS ? defs[idx].cat : -1; }

static int is_state(int i) { return defs[i].where == W_LINK && defs[i].word == ISM_GWQ_L_STATE; }

/* The gateway's answer: its head and the counts of links and streams it describes. */
static int ask(const uint8_t **w, size_t *nw, int *nlinks, int *nstreams)
{
    if (ism_gw_query(w, nw))
        return MPI_T_ERR_NOT_ACCESSIBLE;
    *nlinks = (int)ism_get_le64(*w + 8 * ISM_GWQ_H_NLINKS);
    *nstreams = (int)ism_get_le64(*w + 8 * ISM_GWQ_H_NSTREAMS);
    size_t need = ISM_GWQ_HEAD + (size_t)*nlinks * ISM_GWQ_LINK + (size_t)*nstreams * ISM_GWQ_STREAM;
    return *nw >= need ? MPI_SUCCESS : MPI_T_ERR_NOT_ACCESSIBLE;
}

int ism_mpit_gateway_clock(uint64_t *ns)
{
    const uint8_t *w;
    size_t nw;
    int nl, ns_;
    if (ask(&w, &nw, &nl, &ns_))
        return -1;
    *ns = ism_get_le64(w + 8 * ISM_GWQ_H_CLOCK_NS);
    return 0;
}

/* ---- get_num, get_info, get_index ---- */

int PMPI_T_pvar_get_num(int *num_pvar)
{
    ISM_MPIT_CHECK();
    ism_mpit_vendor_attach();
    *num_pvar = NDEFS + ism_mpit_vendor_npvars();
    return MPI_SUCCESS;
}
ISM_PMPI(T_pvar_get_num)

int PMPI_T_pvar_get_info(int pvar_index, char *name, int *name_len, int *verbosity,
                         int *var_class, MPI_Datatype *datatype, MPI_T_enum *enumtype,
                         char *desc, int *desc_len, int *bind, int *readonly, int *continuous,
                         int *atomic)
{
    ISM_MPIT_CHECK();
    if (pvar_index >= NDEFS)
        return ism_mpit_vendor_pvar_info(pvar_index - NDEFS, name, name_len, verbosity,
                                         var_class, datatype, enumtype, desc, desc_len, bind,
                                         readonly, continuous, atomic);
    if (pvar_index < 0)
        return MPI_T_ERR_INVALID_INDEX;
    const pvar_def *d = &defs[pvar_index];
    ism_mpit_str(d->name, name, name_len);
    ism_mpit_str(d->desc, desc, desc_len);
    if (verbosity)
        *verbosity = d->where == W_STREAM ? MPI_T_VERBOSITY_TUNER_DETAIL : MPI_T_VERBOSITY_USER_BASIC;
    if (var_class)
        *var_class = d->cls;
    if (datatype)
        *datatype = is_state(pvar_index) ? MPI_INT : MPI_UNSIGNED_LONG_LONG;
    if (enumtype)
        *enumtype = is_state(pvar_index) ? (MPI_T_enum)&ism_mpit_link_state : MPI_T_ENUM_NULL;
    if (bind)
        *bind = MPI_T_BIND_NO_OBJECT;
    if (readonly)
        *readonly = 1;
    if (continuous)
        *continuous = 1;
    if (atomic)
        *atomic = 0;
    return MPI_SUCCESS;
}
ISM_PMPI(T_pvar_get_info)

int PMPI_T_pvar_get_index(const char *name, int var_class, int *pvar_index)
{
    ISM_MPIT_CHECK();
    if (!name || !pvar_index)
        return MPI_T_ERR_INVALID;
    for (int i = 0; i < NDEFS; i++)
        if (!strcmp(defs[i].name, name) && defs[i].cls == var_class) {
            *pvar_index = i;
            return MPI_SUCCESS;
        }
    ism_mpit_vendor_attach();
    char buf[512];
    for (int i = 0; i < ism_mpit_vendor_npvars(); i++) {
        int len = sizeof buf, cls = 0;
        if (ism_mpit_vendor_pvar_info(i, buf, &len, NULL, &cls, NULL, NULL, NULL, NULL, NULL,
                                      NULL, NULL, NULL) == MPI_SUCCESS &&
            cls == var_class && !strcmp(buf, name)) {
            *pvar_index = NDEFS + i;
            return MPI_SUCCESS;
        }
    }
    return MPI_T_ERR_INVALID_NAME;
}
ISM_PMPI(T_pvar_get_index)

/* ---- sessions and handles ---- */

typedef struct pvar_handle {
    uint32_t magic;
    struct pvar_session *s;
    int index, count;
    void *vendor;
    struct pvar_handle *next;
} pvar_handle;

typedef struct pvar_session {
    uint32_t magic;
    pvar_handle *handles;
    void *vendor;  /* the vendor session, made with the first vendor handle */
} pvar_session;

#define SESSION_MAGIC 0x6d747073u
#define HANDLE_MAGIC 0x6d747068u

static pvar_session *sess(MPI_T_pvar_session h)
{
    pvar_session *s = (pvar_session *)h;
    return s && s->magic == SESSION_MAGIC ? s : NULL;
}

static pvar_handle *hnd(pvar_session *s, MPI_T_pvar_handle h)
{
    pvar_handle *p = (pvar_handle *)h;
    return p && p != (pvar_handle *)MPI_T_PVAR_ALL_HANDLES && p->magic == HANDLE_MAGIC &&
                   p->s == s
               ? p
               : NULL;
}

int PMPI_T_pvar_session_create(MPI_T_pvar_session *session)
{
    ISM_MPIT_CHECK();
    pvar_session *s = calloc(1, sizeof *s);
    if (!s)
        return MPI_T_ERR_MEMORY;
    s->magic = SESSION_MAGIC;
    *session = (MPI_T_pvar_session)s;
    return MPI_SUCCESS;
}
ISM_PMPI(T_pvar_session_create)

static void handle_release(pvar_handle *p)
{
    if (p->vendor)
        ism.be->t->pvar_free(p->s->vendor, &p->vendor);
    p->magic = 0;
    free(p);
}

int PMPI_T_pvar_session_free(MPI_T_pvar_session *session)
{
    ISM_MPIT_CHECK();
    pvar_session *s = session ? sess(*session) : NULL;
    if (!s)
        return MPI_T_ERR_INVALID_SESSION;
    while (s->handles) {
        pvar_handle *p = s->handles;
        s->handles = p->next;
        handle_release(p);
    }
    if (s->vendor)
        ism.be->t->session_free(&s->vendor);
    s->magic = 0;
    free(s);
    *session = MPI_T_PVAR_SESSION_NULL;
    return MPI_SUCCESS;
}
ISM_PMPI(T_pvar_session_free)

int PMPI_T_pvar_handle_alloc(MPI_T_pvar_session session, int pvar_index, void *obj_handle,
                             MPI_T_pvar_handle *handle, int *count)
{
    ISM_MPIT_CHECK();
    pvar_session *s = sess(session);
    if (!s)
        return MPI_T_ERR_INVALID_SESSION;
    if (pvar_index < 0 || pvar_index >= NDEFS + ism_mpit_vendor_npvars())
        return MPI_T_ERR_INVALID_INDEX;
    pvar_handle *p = calloc(1, sizeof *p);
    if (!p)
        return MPI_T_ERR_MEMORY;
    p->magic = HANDLE_MAGIC;
    p->s = s;
    p->index = pvar_index;
    int rc = MPI_SUCCESS;
    if (pvar_index >= NDEFS) {
        if (!s->vendor)
            rc = ism.be->t->session_create(&s->vendor);
        if (!rc)
            rc = ism_mpit_vendor_pvar_alloc(s->vendor, pvar_index - NDEFS, obj_handle,
                                            &p->vendor, &p->count);
    } else if (defs[pvar_index].where == W_RANK) {
        p->count = 1;
    } else {
        const uint8_t *w;
        size_t nw;
        int nl, nst;
        rc = ask(&w, &nw, &nl, &nst);
        int where = defs[pvar_index].where;
        p->count = where == W_HEAD ? 1 : where == W_LINK ? nl : nst;
    }
    if (rc) {
        free(p);
        return rc;
    }
    p->next = s->handles;
    s->handles = p;
    if (count)
        *count = p->count;
    *handle = (MPI_T_pvar_handle)p;
    return MPI_SUCCESS;
}
ISM_PMPI(T_pvar_handle_alloc)

int PMPI_T_pvar_handle_free(MPI_T_pvar_session session, MPI_T_pvar_handle *handle)
{
    ISM_MPIT_CHECK();
    pvar_session *s = sess(session);
    if (!s)
        return MPI_T_ERR_INVALID_SESSION;
    pvar_handle *p = handle ? hnd(s, *handle) : NULL;
    if (!p)
        return MPI_T_ERR_INVALID_HANDLE;
    for (pvar_handle **q = &s->handles; *q; q = &(*q)->next)
        if (*q == p) {
            *q = p->next;
            break;
        }
    handle_release(p);
    *handle = MPI_T_PVAR_HANDLE_NULL;
    return MPI_SUCCESS;
}
ISM_PMPI(T_pvar_handle_free)

/* start, stop, reset: for one handle, or every handle of the session (continuous
 * variables are then passed over, as MPI says) */
static int control(MPI_T_pvar_session session, MPI_T_pvar_handle handle, int op)
{
    ISM_MPIT_CHECK();
    pvar_session *s = sess(session);
    if (!s)
        return MPI_T_ERR_INVALID_SESSION;
    if (handle == MPI_T_PVAR_ALL_HANDLES) {
        for (pvar_handle *p = s->handles; p; p = p->next)
            if (p->vendor) {
                int cont = 1, ro = 1;
                ism_mpit_vendor_pvar_info(p->index - NDEFS, NULL, NULL, NULL, NULL, NULL, NULL,
                                          NULL, NULL, NULL, &ro, &cont, NULL);
                if (!cont && !(op == ISM_MPIT_OP_RESET && ro))
                    ism.be->t->pvar_op(s->vendor, op, p->vendor, NULL);
            }
        return MPI_SUCCESS;
    }
    pvar_handle *p = hnd(s, handle);
    if (!p)
        return MPI_T_ERR_INVALID_HANDLE;
    if (p->vendor)
        return ism.be->t->pvar_op(s->vendor, op, p->vendor, NULL);
    return op == ISM_MPIT_OP_RESET ? MPI_T_ERR_PVAR_NO_WRITE : MPI_T_ERR_PVAR_NO_STARTSTOP;
}

int PMPI_T_pvar_start(MPI_T_pvar_session session, MPI_T_pvar_handle handle)
{
    return control(session, handle, ISM_MPIT_OP_START);
}
ISM_PMPI(T_pvar_start)

int PMPI_T_pvar_stop(MPI_T_pvar_session session, MPI_T_pvar_handle handle)
{
    return control(session, handle, ISM_MPIT_OP_STOP);
}
ISM_PMPI(T_pvar_stop)

int PMPI_T_pvar_reset(MPI_T_pvar_session session, MPI_T_pvar_handle handle)
{
    return control(session, handle, ISM_MPIT_OP_RESET);
}
ISM_PMPI(T_pvar_reset)

static int read_ours(const pvar_handle *p, void *buf)
{
    const pvar_def *d = &defs[p->index];
    unsigned long long *out = buf;
    if (d->where == W_RANK) {
        out[0] = d->word == R_MSGS         ? ism.stat_remote_msgs
                 : d->word == R_BYTES      ? ism.stat_remote_bytes
                 : d->word == R_RMA_FRAMES ? ism.stat_rma_frames
                 : d->word == R_RMA_SHM_WINS ? ism.stat_rma_shm_wins
                 : d->word == R_RMA_DIRECT ? ism.stat_rma_direct
                                           : (unsigned long long)(ism.ux_count > 0 ? ism.ux_count : 0);
        return MPI_SUCCESS;
    }
    const uint8_t *w;
    size_t nw;
    int nl, nst;
    int rc = ask(&w, &nw, &nl, &nst);
    if (rc)
        return rc;
    int n = d->where == W_HEAD ? 1 : d->where == W_LINK ? nl : nst;
    if (n > p->count)
        n = p->count;
    for (int i = 0; i < n; i++) {
        size_t at = d->where == W_HEAD   ? (size_t)d->word
                    : d->where == W_LINK ? ISM_GWQ_HEAD + (size_t)i * ISM_GWQ_LINK + (size_t)d->word
                                         : ISM_GWQ_HEAD + (size_t)nl * ISM_GWQ_LINK +
                                               (size_t)i * ISM_GWQ_STREAM + (size_t)d->word;
        uint64_t v = ism_get_le64(w + 8 * at);
        if (is_state(p->index))
            ((int *)buf)[i] = (int)v;
        else
            out[i] = v;
    }
    return MPI_SUCCESS;
}

int PMPI_T_pvar_read(MPI_T_pvar_session session, MPI_T_pvar_handle handle, void *buf)
{
    ISM_MPIT_CHECK();
    pvar_session *s = sess(session);
    if (!s)
        return MPI_T_ERR_INVALID_SESSION;
    pvar_handle *p = hnd(s, handle);
    if (!p || !buf)
        return MPI_T_ERR_INVALID_HANDLE;
    if (p->vendor)
        return ism.be->t->pvar_op(s->vendor, ISM_MPIT_OP_READ, p->vendor, buf);
    return read_ours(p, buf);
}
ISM_PMPI(T_pvar_read)

int PMPI_T_pvar_write(MPI_T_pvar_session session, MPI_T_pvar_handle handle, const void *buf)
{
    ISM_MPIT_CHECK();
    pvar_session *s = sess(session);
    if (!s)
        return MPI_T_ERR_INVALID_SESSION;
    pvar_handle *p = hnd(s, handle);
    if (!p)
        return MPI_T_ERR_INVALID_HANDLE;
    if (p->vendor)
        return ism.be->t->pvar_op(s->vendor, ISM_MPIT_OP_WRITE, p->vendor, (void *)(uintptr_t)buf);
    return MPI_T_ERR_PVAR_NO_WRITE;
}
ISM_PMPI(T_pvar_write)

int PMPI_T_pvar_readreset(MPI_T_pvar_session session, MPI_T_pvar_handle handle, void *buf)
{
    ISM_MPIT_CHECK();
    pvar_session *s = sess(session);
    if (!s)
        return MPI_T_ERR_INVALID_SESSION;
    pvar_handle *p = hnd(s, handle);
    if (!p)
        return MPI_T_ERR_INVALID_HANDLE;
    if (p->vendor)
        return ism.be->t->pvar_op(s->vendor, ISM_MPIT_OP_READRESET, p->vendor, buf);
    return MPI_T_ERR_PVAR_NO_ATOMIC;
}
ISM_PMPI(T_pvar_readreset)
