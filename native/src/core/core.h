/* core.h: the isthmus core's objects and the functions the ABI layer calls.
 *
 * The core owns the site model (global rank <-> site, local rank), communicators,
 * datatypes, requests, matching of cross-site messages, and the progress engine. It
 * speaks to the vendor MPI only through the backend table (ism.be), and to other sites
 * only through frames sent to its site's gateway. It never includes mpi.h: rank and tag
 * sentinels below have the standard ABI's values, so the ABI layer passes them through.
 */
#ifndef ISM_CORE_H
#define ISM_CORE_H

#include <stddef.h>
#include <stdint.h>

#include "../backend/backend.h"
#include "../common/knobs.h"
#include "../contract/channel.h"
#include "../contract/frame.h"
#include "../contract/layout.h"
#include "../contract/rxring.h"
#include "dtmap.h"
#include "mt.h"

#define ISM_ANY_SOURCE (-1)
#define ISM_PROC_NULL (-3)
#define ISM_ROOT (-4)
#define ISM_ANY_TAG (-2)
#define ISM_UNDEFINED (-32766)

/* comparison results (MPI_IDENT ...) */
enum { ISM_IDENT = 201, ISM_CONGRUENT = 202, ISM_SIMILAR = 203, ISM_UNEQUAL = 204 };

/* ABI error classes the core produces. */
enum {
    ISM_OK = 0,
    ISM_ERR_BUFFER = 1,
    ISM_ERR_COUNT = 2,
    ISM_ERR_TYPE = 3,
    ISM_ERR_TAG = 4,
    ISM_ERR_COMM = 5,
    ISM_ERR_RANK = 6,
    ISM_ERR_REQUEST = 7,
    ISM_ERR_ROOT = 8,
    ISM_ERR_GROUP = 9,
    ISM_ERR_OP = 10,
    ISM_ERR_ARG = 13,
    ISM_ERR_TRUNCATE = 15,
    ISM_ERR_OTHER = 16,
    ISM_ERR_INTERN = 17,
    ISM_ERR_PENDING = 18,
    ISM_ERR_IN_STATUS = 19,
    ISM_ERR_NO_MEM = 39,
    ISM_ERR_UNSUPPORTED = 55
};

/* A datatype. Predefined types live in ism_dt_table (index = ABI handle - 0x200);
 * derived ones are allocated with their ism_dtx and the ABI handle is the pointer. */
typedef struct ism_dt {
    ism_vh v;   /* vendor handle: the same type built on the vendor MPI */
    int64_t size;   /* bytes of data per element (MPI_Type_size; may pass INT_MAX) */
    int64_t extent; /* bytes of memory per element, padding included (pair types differ) */
    int64_t true_extent; /* from the first to the last byte of data */
    int abi;    /* ABI handle value for predefined types, 0 for derived ones */
    uint8_t contig;    /* count elements are count*size bytes at buf + contig_off */
    uint8_t committed; /* derived: MPI_Type_commit was called (predefined: always) */
    uint8_t freed;     /* derived: every user handle was freed; only references remain */
    int64_t contig_off;
    struct ism_dtx *x; /* derived types only, else NULL */
} ism_dt;

/* A user function: MPI_User_function, called with the ABI datatype handle; or the large-count
 * MPI_User_function_c (ism_op.large), whose len is an MPI_Count. */
typedef void ism_user_fn(void *in, void *inout, int *len, void *dtype_handle);
typedef void ism_user_fn_c(void *in, void *inout, int64_t *len, void *dtype_handle);

/* What only derived types have: their type map, envelope and references. */
typedef struct ism_dtx {
    uint32_t magic;    /* ISM_DT_MAGIC while alive, ISM_DT_MAGIC_FREED once released */
    int refs;          /* user handles + types built on this one + pending operations */
    int handles;       /* user handles (constructors and MPI_Type_get_contents give one) */
    int combiner, ni, na, nt;
    int64_t *ints;     /* as MPI_Type_get_contents lays them out, widened to 64 bits */
    uint8_t large;     /* some integer passes INT_MAX (a _c constructor): its envelope has
                          large counts, and the vendor's twin is built from the map */
    int64_t *aints;
    ism_dt **types;    /* each holds a reference */
    ism_tmap map;
    char name[128];
} ism_dtx;

#define ISM_DT_MAGIC 0x69736474u
#define ISM_DT_MAGIC_FREED 0x66726565u /* released, kept for reuse (core/datatype.c) */
typedef struct ism_op {
    ism_vh v;           /* vendor op (predefined ops only) */
    int abi;            /* ABI handle value of a predefined op, 0 for user ops */
    ism_user_fn *user;  /* user ops: the function, applied by isthmus itself */
    int commute;
    /* how user is called: NULL directly; else through this (a Fortran function wants an
     * integer datatype handle, abi/fortran.c) */
    void (*call)(ism_user_fn *user, void *in, void *inout, int *len, void *dtype_handle);
    int large;          /* user is an ism_user_fn_c (MPI_Op_create_c) */
    int holds;          /* user ops: collectives in flight using it (coll/nb.c) */
    int freed;          /* MPI_Op_free'd while it may be in use (abi/op.c frees it later) */
} ism_op;

typedef struct ism_errh {
    int kind; /* 0 fatal, 1 return, 2 abort, 3 user function */
    void (*fn)(void *comm_handle, int *code, ...);
    int fortran; /* fn takes an integer handle (abi/fortran.c) */
} ism_errh;

/* An MPI group: an ordered list of global ranks (group.c). */
typedef struct ism_group {
    int refs;
    int size;
    int rank; /* my index, or ISM_UNDEFINED */
    int *g;   /* member i -> global rank */
    int builtin;
    struct ism_bbuf **session_bbuf; /* its session's buffer slot (from a session pset) */
} ism_group;

enum { ISM_GROUP_UNION = 1, ISM_GROUP_INTERSECTION, ISM_GROUP_DIFFERENCE };

typedef struct ism_comm {
    uint32_t ctx;      /* user context; ctx+1 is its collective context */
    uint32_t kid_next, kid_end; /* context ids agreed for its children (ism_ctx_child) */
    int rank, size;
    int *g_of;         /* comm rank -> global rank */
    int *l_of;         /* comm rank -> vendor rank in vcomm, -1 when at another site */
    int *c_of_l;       /* vendor rank in vcomm -> comm rank */
    int *c_of_g;       /* global rank -> comm rank, -1 when not a member */
    ism_vh vcomm;      /* vendor communicator of the members at this site */
    ism_vh vcoll;      /* its duplicate for collective point-to-point (neighbor collectives)
                          between members at this site, or 0 */
    int lsize, lrank;  /* size and rank in vcomm */
    int nleaders;      /* sites with members */
    int *leaders;      /* comm rank of each site's leader (lowest comm rank there), by site */
    int my_leader;     /* comm rank of my site's leader */
    int *site_of;      /* comm rank -> site index */
    int all_local;
    int site_runs;     /* every site's members are consecutive comm ranks */
    ism_errh *errh;
    void *attrs;       /* cached attributes, owned by the ABI layer (abi/attr.c) */
    void *topo;        /* virtual topology, owned by the ABI layer (abi/topo.c) */
    void *hints;       /* MPI_Comm_set_info hints, owned by the ABI layer (abi/info.c) */
    /* intercommunicators (intercomm.c): the tables above describe the remote group (the
     * peers of point-to-point); rank is my rank in the local group */
    int is_inter;
    int local_size;
    int *local_g;      /* local group: rank -> global rank */
    struct ism_comm *merged; /* hidden intracommunicator of both groups, for collectives */
    struct ism_comm *local;  /* hidden intracommunicator of the local group */
    int low_first;     /* my group comes first in `merged` */
    int builtin;
    char name[128];
    struct ism_coll_comm *coll; /* the collective layer's state (coll/), or NULL */
    struct ism_bbuf *bbuf;      /* MPI_Comm_attach_buffer's (bsend.c), or NULL */
    struct ism_bbuf **session_bbuf; /* its session's slot, when made from a session */
} ism_comm;

typedef struct ism_status {
    int source, tag, error, cancelled;
    size_t bytes;
} ism_status;

enum ism_req_kind {
    ISM_RQ_VENDOR = 1, /* purely local: a vendor request */
    ISM_RQ_DONE,       /* completed at creation (PROC_NULL, eager remote send, ibsend) */
    ISM_RQ_RSEND,      /* rendezvous send to another site */
    ISM_RQ_RRECV,      /* receive that may match a remote message */
    ISM_RQ_PERSIST,    /* persistent request: a template plus the active inner request */
    ISM_RQ_NBC,        /* nonblocking collective, completed by its coroutine (nbc.c) */
    ISM_RQ_PAIR,       /* MPI_Isendrecv: a receive (inner2) and a send (inner) */
    ISM_RQ_GREQ        /* generalized request: done when the program says so (abi/greq.c) */
};

typedef struct ism_req {
    uint8_t kind, done, is_recv, started_rndv, freed;
    int error;
    ism_vh vreq;      /* vendor request (VENDOR) or vendor shadow (ANY_SOURCE RRECV) */
    int has_shadow;
    ism_comm *comm;
    uint32_t ctx;
    ism_status st;
    /* receive side: cap is the room in packed bytes; a contiguous type's bytes land at
     * buf, any other type's are unpacked into rbuf as they arrive */
    void *buf;
    size_t cap;
    void *rbuf;
    /* a non-contiguous type being packed (send) or unpacked (receive) piece by piece at
     * cur; referenced until the request completes */
    ism_dt *pdt;
    ism_tcursor cur;
    int src, tag;
    uint64_t id, peer_id;
    size_t total, got;
    int chunks_since_credit;
    /* send side */
    const void *sbuf;
    size_t off;
    int dst_g, sync;
    int credits, cts;
    /* receive side of a message whose sender sent its first bytes ahead of the CTS: the
     * bytes announced, and those placed so far (p2p.c, "early data") */
    size_t early, early_got;
    /* bsend: storage in the attached buffer to release on completion */
    void *bsend_seg;
    /* persistent requests (inner); MPI_Isendrecv (inner = send, inner2 = receive, tmp =
     * the packed copy of an Isendrecv_replace, freed on completion) */
    struct ism_req *inner, *inner2;
    void *tmp;
    int p_op; /* 1 send 2 ssend 3 rsend 4 bsend 5 recv; 6 a collective (abi/coll_persist.c,
                 tmp = its template) */
    const void *p_buf;
    int64_t p_count; /* the _init_c forms take counts beyond INT_MAX */
    ism_dt *p_dt;
    int p_peer, p_tag;
    struct ism_greq *greq; /* generalized requests: the program's callbacks (abi/greq.c) */
    struct ism_req *next, *prev;
} ism_req;

/* A received frame nobody has asked for yet. */
typedef struct ism_ux {
    ism_frame_hdr h;
    void *payload; /* EAGER only */
    struct ism_ux *next;
} ism_ux;

/* A message taken by a matched probe (MPI_Mprobe/Improbe), waiting for MPI_Mrecv. */
typedef struct ism_msg {
    int remote;   /* 1: an unexpected cross-site frame; 0: a vendor message */
    ism_comm *comm;
    ism_ux *ux;
    ism_vh vmsg;
} ism_msg;

typedef struct ism_outb {
    void *buf;
    ism_vh vreq;
    size_t len;
} ism_outb;

typedef struct ism_reqlist {
    ism_req *head, *tail;
} ism_reqlist;

typedef struct ism_global {
    /* be: the backend every core path calls; under MPI_THREAD_MULTIPLE its blocking calls
     * give the core lock up (core/mt.c). vbe: the vendor's own table (the fast path). */
    const ism_backend *be, *vbe;
    int initialized, finalized, thread_level;
    int multisite;
    ism_layout lay; /* the job layout (contract/layout.h): sites, their ranks, gateways
                       and names, and this process's site; the gateway holds the same */
    int *site_of_g; /* global rank -> site */
    int grank;
    int lrank, lsize;
    ism_vh vworld, vapp, vgw;
    int ngw, *gw_vrank, my_gw;
    /* remote machinery; remote_active is read without the lock by the fast path, so it is
     * written with ism_remote_add (under the lock) */
    int remote_active;
    int64_t idle_yield_ns; /* an idle wait yields this long before it naps (ism_idle) */
    size_t eager_limit, chunk;
    size_t rma_batch_max; /* puts of at most this many bytes are batched (rma_batch.c) */
    int64_t vendor_max;   /* a site phase's most bytes per vendor call (coll_general.c) */
    int window;
    ism_rxring rx; /* frames from the gateway (contract/rxring.h) */
    ism_outb *outb;
    int nout, outcap;
    size_t out_bytes;
    ism_reqlist posted;  /* RRECV not yet matched, in posting order */
    ism_reqlist rsends;  /* RSEND in flight */
    ism_reqlist rrecvs;  /* RRECV matched to an RTS, receiving data */
    ism_ux *ux_head, *ux_tail;
    uint64_t next_id;
    /* early data (p2p.c): bytes a rank may send to each other rank ahead of a CTS
     * (ISTHMUS_EARLY), what is left of that per destination, what each source has
     * announced and not yet been given back, and the messages still receiving it */
    size_t early_max;
    size_t *early_left, *early_in;
    struct ism_early *early_head;
    int abort_acked;
    ism_reqlist bsends;
    /* statistics */
    uint64_t stat_remote_msgs, stat_remote_bytes;
    uint64_t stat_rma_frames; /* one-sided frames sent to other sites (rma.c) */
    uint64_t stat_rma_shm_wins; /* MPI_Win_allocate windows in the vendor's shared memory (win.c) */
    uint64_t stat_rma_direct;   /* puts and gets done as memcpy into shared memory (rma_direct.c) */
    /* the progress helper of windows across sites (rma_progress.c): its nap
     * (ISTHMUS_RMA_PROGRESS_US; 0: no helper), and whether the vendor granted the thread
     * level it needs (MPI_THREAD_SERIALIZED) */
    int64_t rma_progress_ns;
    int helper_ok;
    int ux_count;        /* cross-site messages in the unexpected queue */
    /* the gateway's answer to the last ISM_F_QUERY (gwquery.c) */
    uint64_t gwq_next, gwq_got;
    uint8_t *gwq_answer;
    size_t gwq_len;
    char procname[256];
} ism_global;

extern ism_global ism;
extern ism_comm ism_comm_world, ism_comm_self;
extern ism_dt ism_dt_table[ISM_DT_COUNT];
extern ism_op ism_op_table[ISM_OP_COUNT];
extern ism_errh ism_errh_fatal, ism_errh_return, ism_errh_abort;

/* init.c */
int ism_core_init(int *argc, char ***argv, int required, int *provided);
int ism_core_finalize(void);
void ism_core_abort(ism_comm *c, int code, const char *why) __attribute__((noreturn));
void ism_die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
/* a knob of knobs.def, `def` when unset; a bad value stops the process (ism_die) */
double ism_core_knob(ism_knob_id id, double def);
const char *ism_site_name(int site);

/* gwlink.c: the app side of the app<->gateway channel */
int ism_gw_setup(void);
void ism_gw_teardown(void);
int ism_gw_post(const ism_frame_hdr *h, const void *payload, size_t len);
/* 1 when a frame of len payload bytes can be posted now, without waiting for the channel */
int ism_gw_room(size_t len);
/* The same, with the payload written straight into the frame by fill (no copy). */
typedef void (*ism_gw_fill_fn)(void *dst, size_t len, void *arg);
int ism_gw_post_with(const ism_frame_hdr *h, size_t len, ism_gw_fill_fn fill, void *arg);
int ism_progress(void);
int ism_progress_depth(void); /* > 0 inside a frame handler (an MPI_T event callback) */
void ism_idle(unsigned *spins);

/* gwquery.c: asking this rank's gateway, for MPI_T (abi/mpit_*.c). ism_gw_query sends a
 * QUERY and progresses until the ANSWER: its little-endian words (contract/gwquery.h), valid
 * until the next query. ISM_ERR_OTHER without a gateway (one site), from a frame handler
 * (the answer could not be taken in), or after 30 s without an answer. */
int ism_gw_query(const uint8_t **words, size_t *nwords);
int ism_gw_watch(int on); /* ISM_F_WATCH: link events wanted (1) or not (0) */
void ism_gw_answered(const ism_frame_hdr *h, const void *payload);

/* fileio.c: MPI-IO requests to the file agent in gateway 0 of another site (contract/fileio.h).
 * post sends one request (payload p1 then p2, at most ism_fio_max_payload() bytes; rbuf
 * takes up to rcap bytes of the answer) and gives its slot; wait progresses until the
 * answer (result: >= 0, or -errno) or ISTHMUS_IO_TIMEOUT (ISM_ERR_OTHER, said on stderr
 * with the site). At most ISM_FIO_SLOTS requests are outstanding. */
#define ISM_FIO_SLOTS 64
size_t ism_fio_max_payload(void);
int ism_fio_post(int site, uint32_t handle, int op, uint64_t b, const void *p1, size_t l1,
                 const void *p2, size_t l2, void *rbuf, size_t rcap, int *slot);
int ism_fio_wait(int slot, int64_t *result, size_t *got);
int ism_fio_call(int site, uint32_t handle, int op, uint64_t b, const void *p1, size_t l1,
                 const void *p2, size_t l2, void *rbuf, size_t rcap, int64_t *result);
void ism_fio_reply(const ism_frame_hdr *h, const void *payload);

/* MPI_T events (abi/mpit_event.c sets the hook and the mask of kinds anyone listens to;
 * the core raises an event only when its bit is set, so nothing is built otherwise) */
enum { ISM_TEV_ARRIVED, ISM_TEV_UNEXPECTED, ISM_TEV_LINK_DOWN, ISM_TEV_LINK_UP, ISM_TEV_N };
typedef struct {
    int kind;
    int source;      /* 0: this process's clock; 1: the gateway's */
    uint64_t ts;     /* CLOCK_MONOTONIC ns of that source */
    int64_t v[4];    /* the elements, as abi/mpit_event.c describes them */
    const char *text;
} ism_tev;
extern unsigned ism_tev_mask;
extern void (*ism_tev_hook)(const ism_tev *e);
void ism_tev_link(const ism_frame_hdr *h, const void *payload); /* an ISM_F_LINKEV frame */
uint64_t ism_tev_now(void); /* this process's event clock: CLOCK_MONOTONIC, ns */

/* p2p.c */
enum { ISM_MODE_STD = 0, ISM_MODE_SYNC, ISM_MODE_READY, ISM_MODE_BUF };
int ism_isend(const void *buf, int64_t count, ism_dt *dt, int dst, int tag, ism_comm *c, uint32_t ctx,
              int mode, ism_req **out);
void ism_fill_packed(void *dst, size_t len, void *req); /* next len bytes of a send's stream */
int ism_irecv(void *buf, int64_t count, ism_dt *dt, int src, int tag, ism_comm *c, uint32_t ctx,
              ism_req **out);
int ism_send(const void *buf, int64_t count, ism_dt *dt, int dst, int tag, ism_comm *c, int mode);
int ism_recv(void *buf, int64_t count, ism_dt *dt, int src, int tag, ism_comm *c, ism_status *st);
int ism_iprobe(int src, int tag, ism_comm *c, int *flag, ism_status *st);
int ism_probe(int src, int tag, ism_comm *c, ism_status *st);
void ism_handle_frame(const ism_frame_hdr *h, const void *payload);
int ism_cancel(ism_req *r);
int ism_improbe(int src, int tag, ism_comm *c, int *flag, ism_msg **msg, ism_status *st);
int ism_imrecv(void *buf, int64_t count, ism_dt *dt, ism_msg *msg, ism_req **out);
typedef struct ism_bbuf ism_bbuf;
ism_bbuf *ism_bbuf_process(void);
int ism_bbuf_attach(ism_bbuf **slot, void *buf, size_t size, int automatic);
int ism_bbuf_detach(ism_bbuf *b, void **buf, size_t *size, int *automatic);
int ism_bbuf_flush(ism_bbuf *b);
int ism_buffer_attach(void *buf, size_t size);
int ism_buffer_detach(void *bufp, size_t *size);
int ism_bsend(const void *buf, int64_t count, ism_dt *dt, int dst, int tag, ism_comm *c,
              ism_req **out);
int ism_bsend_pending(void);

/* request.c */
ism_req *ism_req_alloc(int kind);
void ism_req_free(ism_req *r);
/* requests allocated and not yet freed (a freed communicator waits for 0) */
long ism_req_live(void);
void ism_list_push(ism_reqlist *l, ism_req *r);
void ism_list_remove(ism_reqlist *l, ism_req *r);
int ism_req_test(ism_req *r, int *flag, ism_status *st);
int ism_req_wait(ism_req *r, ism_status *st);
void ism_req_complete(ism_req *r, int error);

/* coll.c */
int ism_barrier(ism_comm *c);
int ism_bcast(void *buf, int count, ism_dt *dt, int root, ism_comm *c);
int ism_reduce(const void *sbuf, void *rbuf, int count, ism_dt *dt, ism_op *op, int root,
               ism_comm *c);
int ism_allreduce(const void *sbuf, void *rbuf, int count, ism_dt *dt, ism_op *op, ism_comm *c);

/* collective internals (coll.c): cross-site messages on the collective context, and
 * waiting on a vendor request of a site-local phase while serving the gateway channel */
enum { TAG_BARRIER = 1, TAG_BCAST, TAG_REDUCE, TAG_ALLREDUCE, TAG_ALLGATHER, TAG_GATHER,
       TAG_SCATTER, TAG_ALLTOALL, TAG_SCAN, TAG_NEIGHBOR, TAG_SCHED, TAG_PIPE,
       TAG_LARGE, /* the large-count (_c) collectives' messages (abi/coll_large.c) */
       TAG_SITE /* a site phase too large for the vendor's int counts (coll_general.c) */ };
int ism_vwait(int rc, const ism_vh *reqp);
int ism_wait_free(ism_req *r);
int ism_xsend(const void *buf, int64_t count, ism_dt *dt, int dst, int tag, ism_comm *c);
int ism_xrecv(void *buf, int64_t count, ism_dt *dt, int src, int tag, ism_comm *c);
/* count elements of dt for the vendor, which takes an int count: the count itself when it
 * fits, else one element of a type covering them (p2p.c); done frees what make built */
typedef struct ism_vcount {
    int n;
    ism_vh t;
    int own;
} ism_vcount;
int ism_vcount_make(int64_t count, ism_dt *dt, ism_vcount *v);
void ism_vcount_done(ism_vcount *v);

/* coll_general.c: two-level collectives for any communicator layout and datatype; data
 * crosses sites as packed bytes, one message per pair of sites. Arguments follow MPI;
 * NULL send buffer = MPI_IN_PLACE. */
int ism_gatherv(const void *sbuf, int scount, ism_dt *sdt, void *rbuf, const int *rcounts,
                const int *displs, ism_dt *rdt, int root, ism_comm *c);
int ism_scatterv(const void *sbuf, const int *scounts, const int *displs, ism_dt *sdt, void *rbuf,
                 int rcount, ism_dt *rdt, int root, ism_comm *c);
int ism_allgatherv(const void *sbuf, int scount, ism_dt *sdt, void *rbuf, const int *rcounts,
                   const int *displs, ism_dt *rdt, ism_comm *c);
/* byte displacements and one type per peer (MPI_Alltoallw); the other forms reduce to it */
/* in place: sbuf == ISM_IN_PLACE (backend.h); NULL is MPI_BOTTOM */
int ism_alltoallw(const void *sbuf, const int *scounts, const int *sdispls, ism_dt *const *sdts,
                  void *rbuf, const int *rcounts, const int *rdispls, ism_dt *const *rdts,
                  ism_comm *c);
/* the same with 64-bit counts and displacements, on any communicator (one held at this
 * site included: the int forms above give that one to the vendor whole) */
int ism_gatherv64(const void *sbuf, int64_t scount, ism_dt *sdt, void *rbuf,
                  const int64_t *rcounts, const int64_t *displs, ism_dt *rdt, int root,
                  ism_comm *c);
int ism_scatterv64(const void *sbuf, const int64_t *scounts, const int64_t *displs, ism_dt *sdt,
                   void *rbuf, int64_t rcount, ism_dt *rdt, int root, ism_comm *c);
int ism_allgatherv64(const void *sbuf, int64_t scount, ism_dt *sdt, void *rbuf,
                     const int64_t *rcounts, const int64_t *displs, ism_dt *rdt, ism_comm *c);
int ism_alltoallw64(const void *sbuf, const int64_t *scounts, const int64_t *sdispls,
                    ism_dt *const *sdts, void *rbuf, const int64_t *rcounts,
                    const int64_t *rdispls, ism_dt *const *rdts, ism_comm *c);

/* coll_neighbor.c: one exchange with each in- and out-neighbor (PROC_NULL: none), on
 * the collective context; byte displacements, one type per neighbor; tags per neighbor
 * (NULL: one tag, pairing in order) */
int ism_neighbor_exchange64(const void *sbuf, int nout, const int *outs, const int64_t *scounts,
                            const ptrdiff_t *sdispls, ism_dt *const *sdts, void *rbuf, int nin,
                            const int *ins, const int64_t *rcounts, const ptrdiff_t *rdispls,
                            ism_dt *const *rdts, const int *stags, const int *rtags,
                            ism_comm *c);
int ism_neighbor_exchange(const void *sbuf, int nout, const int *outs, const int *scounts,
                          const ptrdiff_t *sdispls, ism_dt *const *sdts, void *rbuf, int nin,
                          const int *ins, const int *rcounts, const ptrdiff_t *rdispls,
                          ism_dt *const *rdts, const int *stags, const int *rtags,
                          ism_comm *c);
/* comm.c internals shared with intercomm.c */
typedef struct { int key, prank; } ism_keyed; /* a split's member: key, rank in the parent */
int ism_keyed_cmp(const void *a, const void *b); /* by key, then parent rank */
ism_comm *ism_comm_new(int n, const int *g, uint32_t ctx, ism_vh vcomm, int *rc);
void ism_comm_register(ism_comm *c);
void ism_comm_unregister(ism_comm *c);
void ism_comm_release(ism_comm *c);
int ism_ctx_agree(ism_comm *parent, uint32_t *out);
int ism_vendor_dup(ism_vh v, ism_vh *out); /* yields inside a nonblocking collective */
int ism_ctx_agree_n(ism_comm *parent, int n, uint32_t *out); /* n consecutive id pairs */
int ism_ctx_child(ism_comm *parent, int n, uint32_t *out);
uint32_t ism_ctx_next(void);
void ism_ctx_reserve(uint32_t ctx, int n);

/* intercomm.c */
int ism_intercomm_create(ism_comm *local, int local_leader, ism_comm *peer, int remote_leader,
                         int tag, ism_comm **out);
int ism_intercomm_merge(ism_comm *ic, int high, ism_comm **out);
int ism_intercomm_dup(ism_comm *ic, ism_comm **out);
int ism_intercomm_split(ism_comm *ic, int color, int key, ism_comm **out);
/* (their collectives run in flight on merged: coll/nb_inter.c) */

/* comm.c: give c a vendor communicator for collective point-to-point (collective over
 * c's members at this site) */
int ism_comm_add_vcoll(ism_comm *c);
void ism_comm_spanning_vcoll(ism_comm *c); /* made with the communicator (comm.c) */

/* coll_reduce.c: reductions with user-defined ops (applied in rank order, so
 * non-commutative ops are correct across sites), reduce-scatter and prefix reductions */
int ism_op_apply(ism_op *op, const void *in, void *inout, int count, ism_dt *dt);
/* A user op stays while a collective in flight uses it: MPI_Op_free only marks it then
 * ("pending operations complete normally"). */
static inline void ism_op_hold(ism_op *op)
{
    if (op && op->user)
        op->holds++;
}
void ism_op_release(ism_op *op);
/* A predefined op (ABI handle value) on a short vector of a basic type, done without the
 * vendor (op_local.c): 1 when done, 0 when the vendor must do it. */
int ism_op_local(int op, int dt, const void *in, void *inout, int count);
/* Room for n elements of dt laid out as an array (stride extent); *base is where
 * element 0 begins; free() the returned pointer. */
char *ism_dt_elems(ism_dt *dt, size_t n, char **base);
int ism_reduce_any(const void *sbuf, void *rbuf, int count, ism_dt *dt, ism_op *op, int root,
                   ism_comm *c);
int ism_allreduce_any(const void *sbuf, void *rbuf, int count, ism_dt *dt, ism_op *op,
                      ism_comm *c);
int ism_reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts, ism_dt *dt, ism_op *op,
                       ism_comm *c);
int ism_scan(const void *sbuf, void *rbuf, int count, ism_dt *dt, ism_op *op, int exclusive,
             ism_comm *c);

/* nbc.c: nonblocking collectives run as coroutines (see there) */
typedef struct ism_nbc ism_nbc;
extern ism_nbc *ism_nbc_cur; /* the collective running now, NULL in the program's context */
int ism_nbc_start(ism_comm *c, int (*fn)(void *), const void *args, size_t len, ism_req **out);
int ism_nbc_poll(void);
void ism_nbc_yield(void);
void ism_nbc_drain(ism_comm *c);
/* the argument block of the running coroutine, or NULL outside coroutines */
void *ism_nbc_cur_args(void);
int ism_nbc_pending(void);
/* MPI_Comm_idup sets ism_nbc_next_creates before starting its coroutine (consumed by
 * ism_nbc_start); the coroutine calls ism_nbc_creation_issued once its vendor call is
 * made; ism_nbc_settle_creations runs before a blocking vendor creation (see nbc.c). */
extern int ism_nbc_next_creates;
void ism_nbc_creation_issued(void);
void ism_nbc_settle_creations(ism_vh v);

/* datatype.c: predefined table, derived type lifetime, packing for the wire.
 * ism_dt_pack writes count*size bytes (the type map's order, native layout) and returns
 * that count; ism_dt_unpack reads count*size bytes; ism_dt_unpack_bytes reads a prefix
 * of nbytes (a short or truncated message). Contiguous types are plain memcpy. */
void ism_types_init(void);
const ism_tmap *ism_dt_map(const ism_dt *d);
int ism_dt_create(int combiner, const int64_t *ints, const int64_t *aints, ism_dt *const *types,
                  ism_dt **out);
/* dt_vendor_large.c: the vendor's twin of a type from its map (large-count constructors) */
int ism_dt_vendor_from_map(const ism_tmap *m, ism_vh *out);
int ism_dt_commit(ism_dt *d);
void ism_dt_retain(ism_dt *d);
void ism_dt_release(ism_dt *d);
void ism_dt_user_free(ism_dt *d);
size_t ism_dt_pack(ism_dt *d, const void *buf, int64_t count, void *out);
void ism_dt_unpack(ism_dt *d, const void *in, void *buf, int64_t count);
void ism_dt_unpack_bytes(ism_dt *d, const void *in, size_t nbytes, void *buf);
const char *ism_dt_name(const ism_dt *d);
int ism_dt_set_name(ism_dt *d, const char *name);
/* Name of predefined handle ISM_DT_BASE + idx, also when this site's vendor lacks the
 * type; NULL if the ABI defines no type there. */
const char *ism_dt_predefined_name(unsigned idx);
int ism_dt_set_predefined_name(unsigned idx, const char *name);
static inline int ism_dt_is_contig(const ism_dt *d) { return d->contig; }

/* comm.c */
int ism_comm_build_world(void);
ism_comm *ism_comm_by_ctx(uint32_t ctx);
int ism_comm_dup(ism_comm *parent, ism_comm **out);
int ism_comm_free(ism_comm *c);
/* *out is NULL on ranks that end up in no communicator (MPI_COMM_NULL). color < 0: none. */
int ism_comm_split(ism_comm *parent, int color, int key, ism_comm **out);
int ism_comm_create(ism_comm *parent, const ism_group *grp, ism_comm **out);
int ism_comm_create_group(ism_comm *parent, const ism_group *grp, int tag, ism_comm **out);
/* comm_from_group.c: the sessions model's constructors, called by the group's members */
int ism_comm_from_group(const ism_group *grp, const char *stringtag, ism_comm **out);
int ism_intercomm_from_groups(const ism_group *lg, int lleader, const ism_group *rg, int rleader,
                              const char *stringtag, ism_comm **out);
enum { ISM_SPLIT_NODE = 1, ISM_SPLIT_SITE = 2 };
int ism_comm_split_type(ism_comm *parent, int type, int key, ism_comm **out);
int ism_allgather(const void *sbuf, void *rbuf, int count, ism_dt *dt, ism_comm *c);

/* group.c */
extern ism_group ism_group_empty;
ism_group *ism_group_new(int n, const int *g);
void ism_group_release(ism_group *grp);
int ism_group_index(const ism_group *grp, int g);
ism_group *ism_group_setop(const ism_group *a, const ism_group *b, int op);
int ism_group_compare(const ism_group *a, const ism_group *b);

#define ISM_DT_BYTE (&ism_dt_table[ISM_KIND_BYTE])
#define ISM_DT_INT (&ism_dt_table[ISM_KIND_INT])
#define ISM_OP_MAX (&ism_op_table[ISM_OPI_MAX])

static inline void ism_remote_add(int d)
{
    __atomic_store_n(&ism.remote_active, ism.remote_active + d, __ATOMIC_RELAXED);
}
static inline int ism_remote_idle(void)
{
    return !__atomic_load_n(&ism.remote_active, __ATOMIC_RELAXED);
}

static inline int ism_is_remote(const ism_comm *c, int r) { return c->l_of[r] < 0; }

/* A vendor completion, in the terms of communicator c (vendor rank -> comm rank). */
static inline void ism_status_from_vendor(ism_comm *c, const ism_vstatus *v, ism_status *st)
{
    if (!st)
        return;
    if (v->source >= 0 && v->source < c->lsize)
        st->source = c->c_of_l[v->source];
    else
        st->source = v->source == ISM_VSRC_PROC_NULL ? ISM_PROC_NULL : v->source;
    st->tag = v->tag;
    st->error = v->error;
    st->bytes = v->bytes;
    st->cancelled = v->cancelled;
}

#endif
