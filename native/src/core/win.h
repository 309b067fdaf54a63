/* win.h: one-sided communication (MPI windows) across sites, the core's part.
 *
 * A window over a communicator that spans sites is two things: the vendor's window over
 * the members at this site (every member holds it in a permanent MPI_Win_lock_all epoch,
 * so local Put/Get/Accumulate go straight to the vendor at its speed; on one node with the
 * vendor's shared memory, puts and gets are isthmus's memmove, rma_direct.c), and ISM_F_RMA
 * frames for targets at other sites, which the target process applies to its memory when
 * its progress engine runs, turned by the program's MPI calls or, while the program
 * computes, by the progress helper thread (win.c, rma.c, rma_progress.c; docs/design.md
 * "One-sided communication").
 * Synchronisation is isthmus's own for all members: fence is a marker per pair of ranks
 * at different sites plus a site-local barrier; locks are words in a second vendor
 * window, taken with the vendor's atomics, also on behalf of remote origins.
 */
#ifndef ISM_CORE_WIN_H
#define ISM_CORE_WIN_H

#include "core.h"

enum { ISM_WIN_FLAVOR_CREATE = 311, ISM_WIN_FLAVOR_ALLOCATE = 312, ISM_WIN_FLAVOR_DYNAMIC = 313,
       ISM_WIN_FLAVOR_SHARED = 314 };
enum { ISM_LOCK_EXCLUSIVE = 301, ISM_LOCK_SHARED = 302 };
#define ISM_MODE_NOCHECK 1024

/* Error classes of the RMA chapter (standard ABI values). */
enum { ISM_ERR_ASSERT = 22, ISM_ERR_DISP = 26, ISM_ERR_LOCKTYPE = 37, ISM_ERR_RMA_ATTACH = 46,
       ISM_ERR_RMA_RANGE = 48,
       ISM_ERR_RMA_SHARED = 49, ISM_ERR_RMA_SYNC = 50, ISM_ERR_SIZE = 52, ISM_ERR_WIN = 56,
       ISM_ERR_RMA_FLAVOR = 57 };

/* Kinds of ISM_F_RMA frames (the frame's tag field). */
enum {
    ISM_RMA_PUT = 1,  /* a: byte offset in the target window; payload: the data */
    ISM_RMA_ACC,      /* the same, combined with the op */
    ISM_RMA_GET,      /* a: byte offset; payload: request id, bytes wanted */
    ISM_RMA_GACC,     /* a: byte offset; payload: request id, reply offset, data (none for
                         MPI_NO_OP): get-accumulate and fetch-and-op */
    ISM_RMA_CAS,      /* a: byte offset; payload: request id, origin value, compare value */
    ISM_RMA_REPLY,    /* a: request id; b: byte offset in the reply; payload: the data */
    ISM_RMA_LOCK,     /* a: lock type */
    ISM_RMA_GRANT,
    ISM_RMA_UNLOCK,   /* a: lock type */
    ISM_RMA_FLUSH,
    ISM_RMA_ACK,      /* to UNLOCK and FLUSH: everything before it is applied */
    ISM_RMA_FENCE,    /* the sender has entered a fence */
    /* a derived target datatype: the origin cuts the target side into segments of the
     * window; payload: request id, reply offset, segment count (3 x u64), then the
     * segments (offset, length: 2 x u64 each), then their data (none for GETV) */
    ISM_RMA_PUTV,
    ISM_RMA_ACCV,
    ISM_RMA_GETV,     /* answered by one REPLY with the segments' bytes in order */
    ISM_RMA_GACCV     /* get-accumulate: the segments combined with their data (none for
                         MPI_NO_OP), answered by one REPLY with their old bytes in order */
};

/* The b word of an RMA frame: the target's basic type and op (ABI handle values minus
 * their bases) and the sender's count of completed fences, which orders the frame into
 * the target's epochs. */
#define ISM_RMA_B(dt, op, epoch)                                                              \
    ((uint64_t)(uint8_t)(dt) | ((uint64_t)(uint8_t)(op) << 8) | ((uint64_t)(uint32_t)(epoch) << 32))
#define ISM_RMA_B_DT(b) ((int)((b) & 0xff))
#define ISM_RMA_B_OP(b) ((int)(((b) >> 8) & 0xff))
#define ISM_RMA_B_EPOCH(b) ((uint32_t)((b) >> 32))

typedef struct ism_rma_def ism_rma_def;

/* Memory attached to a dynamic window by this process (MPI_Win_attach). */
typedef struct {
    uintptr_t base;
    int64_t size;
} ism_win_region;
typedef struct ism_rma_lockq ism_rma_lockq;
typedef struct ism_rma_batch ism_rma_batch;

typedef struct ism_win {
    uint32_t magic;
    ism_comm *c;          /* private duplicate of the program's communicator */
    void *base;
    int64_t size;
    int disp_unit, flavor;
    void *owned;          /* MPI_Win_allocate's memory when isthmus allocated it */
    int shm;              /* MPI_Win_allocate's memory is vwin's, the vendor's
                             MPI_Win_allocate_shared over the site's members (one node) */
    int64_t *vpad;        /* then per vendor rank: where its window starts in its part of
                             vwin (aligned to 16 bytes as malloc's memory; NULL: at 0) */
    char **lbase;         /* per vendor rank: its window's first byte in this process when
                             the site's window memory is the vendor's shared memory and
                             ISTHMUS_RMA_SHM allows (puts and gets are isthmus's memcpy,
                             rma_direct.c), else NULL */
    unsigned char *vpend; /* with lbase: per vendor rank, vendor operations on vwin not
                             flushed yet (its flush is then a fence alone); npend of them */
    int npend;
    ism_win_region *regions; /* a dynamic window: what I have attached, in no order */
    int nregions, cap_regions;
    ism_vh vwin;          /* the vendor's window over this site's members (disp unit 1);
                             0 when I am the only one (rma.c, ism_rma_self) */
    ism_vh vlock;         /* the vendor's window of lock words, one int64 per member (or 0);
                             for MPI_Win_allocate the same window as vwin (win.c) */
    int64_t *lockword;    /* mine, in vlock (at lock_disps[my vendor rank] when there) */
    int64_t *lock_disps;  /* per vendor rank: where its lock word is in vlock (MPI_Win_allocate:
                             after its window's bytes, so it differs by member), or NULL (0) */
    int64_t *own_lockword; /* lockword when it is not in `owned` */
    void *hints;          /* the MPI_Info of the hints in use (abi/info.c) */
    int64_t *sizes;       /* per member: window size in bytes */
    int *units;           /* per member: displacement unit */
    int nremote;          /* members at other sites */
    uint32_t fences;      /* fences completed */
    uint64_t marks;       /* FENCE markers of the current fence received */
    ism_rma_def *def_head, *def_tail; /* frames of an epoch I have not reached yet */
    ism_rma_lockq *lq_head, *lq_tail; /* remote lock requests not yet granted */
    int *held;            /* per member: the lock I hold on it (0, or ISM_LOCK_*, or -1 nocheck) */
    int lock_all;         /* MPI_Win_lock_all held (1, or -1 with MPI_MODE_NOCHECK) */
    uint64_t acks, grants; /* ACK and GRANT frames received */
    int gets;             /* replies still awaited by operations from here */
    ism_rma_batch *batch; /* per member: small puts not sent yet (rma_batch.c), or NULL */
    int nbatched;         /* members with puts in their batch */
    int *post_to, npost;  /* MPI_Win_post's group (window ranks), its COMPLETEs still due */
    int *start_to, nstart; /* MPI_Win_start's group */
    int self_posted, self_completed; /* POST and COMPLETE to this rank itself: recorded,
                                      * not sent (a blocking send to oneself may wait for
                                      * a receive that only this rank, later, would post) */
    int helped;           /* counted by the progress helper (rma_progress.c) */
    ism_errh *errh;
    void *attrs;          /* owned by abi/win.c */
    char name[128];
    struct ism_win *next;
} ism_win;

#define ISM_WIN_MAGIC 0x69776e64u

/* A byte offset in vendor rank l's window as the vendor window counts it. */
static inline int64_t ism_win_voff(const ism_win *w, int l, int64_t off)
{
    return w->vpad ? off + w->vpad[l] : off;
}

/* win.c: lifetime and synchronisation; errors are ABI error classes */
int ism_win_create(void *base, int64_t size, int disp_unit, ism_comm *comm, int flavor,
                   ism_win **out);
int ism_win_free(ism_win *w);
/* MPI_Win_attach / MPI_Win_detach on a dynamic window: this process's memory, also
 * attached to the vendor's dynamic window over the site */
int ism_win_attach(ism_win *w, void *base, int64_t size);
int ism_win_detach(ism_win *w, const void *base);
/* The bytes [off, off + n) of my window: inside its memory (for a dynamic window, off is
 * an address, and the bytes must lie in attached regions, which may follow each other back
 * to back). Returns the pointer or NULL. */
char *ism_win_mem(ism_win *w, uint64_t off, uint64_t n);
/* MPI_Win_shared_query: rank ISM_PROC_NULL asks for the first member with memory; on a
 * window not made by MPI_Win_allocate_shared, only my own memory is returned */
int ism_win_shared_query(ism_win *w, int rank, int64_t *size, int *disp_unit, void **base);
int ism_win_fence(ism_win *w, int assert_);
int ism_win_lock(ism_win *w, int type, int target, int assert_);
int ism_win_unlock(ism_win *w, int target);
int ism_win_lock_all(ism_win *w, int assert_);
int ism_win_unlock_all(ism_win *w);
int ism_win_flush(ism_win *w, int target); /* target -1: all */
int ism_win_flush_local(ism_win *w, int target); /* target -1: all; no round trip */
int ism_win_sync(ism_win *w);
/* post/start/complete/wait: ranks are window ranks (n of them), copied */
int ism_win_post(ism_win *w, const int *ranks, int n);
int ism_win_start(ism_win *w, const int *ranks, int n);
int ism_win_complete(ism_win *w);
int ism_win_wait(ism_win *w, int *flag); /* flag NULL: MPI_Win_wait, else MPI_Win_test */
/* a one-line reason for the last error raised by win.c/rma.c on this process */
const char *ism_win_why(void);
void ism_win_why_reset(void);

/* rma.c: the operations. A non-NULL *req (R* forms) gets a request that completes when the
 * operation has completed locally (the reply has arrived, for the fetching ones). */
int ism_rma_put(ism_win *w, const void *o, int64_t on, ism_dt *odt, int target, int64_t disp,
                int64_t tn, ism_dt *tdt, ism_req **req);
int ism_rma_get(ism_win *w, void *o, int64_t on, ism_dt *odt, int target, int64_t disp,
                int64_t tn, ism_dt *tdt, ism_req **req);
int ism_rma_acc(ism_win *w, const void *o, int64_t on, ism_dt *odt, int target, int64_t disp,
                int64_t tn, ism_dt *tdt, ism_op *op, ism_req **req);
/* o NULL: MPI_NO_OP */
int ism_rma_get_acc(ism_win *w, const void *o, int64_t on, ism_dt *odt, void *r, int64_t rn,
                    ism_dt *rdt, int target, int64_t disp, int64_t tn, ism_dt *tdt, ism_op *op,
                    ism_req **req);
int ism_rma_cas(ism_win *w, const void *o, const void *cmp, void *r, ism_dt *dt, int target,
                int64_t disp);

/* internals shared by win.c and rma.c */
void ism_rma_frame(const ism_frame_hdr *h, const void *payload); /* from p2p.c */
int ism_rma_poll(void);      /* retry remote lock requests; from gwlink.c's progress */
extern int ism_rma_waiting;  /* windows with lock requests queued */
ism_win *ism_win_by_ctx(uint32_t ctx);
ism_win *ism_win_next(ism_win *w); /* every window of this process: from NULL, until NULL */
int ism_win_any(void); /* a window exists in this process */
void ism_rma_apply(ism_win *w, const ism_frame_hdr *h, const void *payload);
/* A frame to target (a window rank at another site, or the origin of a frame being
 * answered). ism_rma_send posts that target's batch of puts first, so every frame after a
 * put reaches the target after it; ism_rma_post is the frame alone. */
int ism_rma_send(ism_win *w, int target, int kind, uint64_t a, uint64_t b, const void *p,
                 size_t len);
int ism_rma_post(ism_win *w, int target, int kind, uint64_t a, uint64_t b, size_t len,
                 ism_gw_fill_fn fill, void *arg);
/* rma_direct.c: puts and gets into a same-node target's shared window memory as memcpy.
 * open fills w->lbase and w->vpend from the vendor's MPI_Win_shared_query on w->vwin (pads
 * of w->vpad added); direct says whether an operation to vendor rank l takes the road
 * (contiguous types); copy does it (put 1: o into the target). Every other operation on
 * vwin is marked by vpend; vflush (l -1: all) is a fence plus the vendor's flush of the
 * marked targets, vflush_local the same for local completion. */
int ism_rma_direct_open(ism_win *w);
void ism_rma_direct_close(ism_win *w);
int ism_rma_direct(ism_win *w, int l, int64_t on, ism_dt *odt, int64_t tn, ism_dt *tdt);
void ism_rma_direct_copy(ism_win *w, int l, int put, void *o, int64_t on, ism_dt *odt,
                         int64_t off, ism_dt *tdt);
void ism_win_vpend(ism_win *w, int l);
int ism_win_vflush(ism_win *w, int l);
int ism_win_vflush_local(ism_win *w, int l);

/* rma_batch.c: small puts to a target at another site gathered into one PUTV frame.
 * batch_put takes the put (*taken 1) or leaves it to the caller (*taken 0: too large);
 * flush posts one target's batch, flush_win all of a window's, waiting for the channel
 * to the gateway; idle posts what the channel takes now, without waiting (ism_idle). */
int ism_rma_batch_put(ism_win *w, int target, int64_t off, int64_t tn, ism_dt *tdt,
                      const char *data, size_t bytes, int *taken);
int ism_rma_batch_flush(ism_win *w, int target);
int ism_rma_batch_flush_win(ism_win *w);
int ism_rma_batch_idle(void);
void ism_rma_batch_free(ism_win *w);
extern int ism_rma_batched; /* batches pending in all windows */
int ism_rma_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* wait until *count >= want (or, want < 0, until w->gets is 0), progressing; fails after
 * ISTHMUS_RMA_TIMEOUT naming what and whom it waited for */
int ism_rma_wait(ism_win *w, const uint64_t *count, uint64_t want, const char *what, int target);
void ism_rma_lock_request(ism_win *w, const ism_frame_hdr *h); /* a LOCK frame */
void ism_rma_grant(ism_win *w, int src_g);
int ism_rma_lock_release(ism_win *w, int target_l, int type);
/* rma_progress.c: the helper thread that progresses while the program computes. join:
 * w spans sites (called last in the creating call, which holds no core lock unless under
 * MPI_THREAD_MULTIPLE); leave: w is being freed; finalize: stop it whatever is left. */
void ism_rma_progress_join(ism_win *w);
void ism_rma_progress_leave(ism_win *w);
void ism_rma_progress_finalize(void);
/* an operation on my own window when it has no vendor window (rma.c) */
int ism_rma_self(ism_win *w, const void *o, int64_t on, ism_dt *odt, void *res, int64_t rn,
                 ism_dt *rdt, int64_t off, int64_t tn, ism_dt *tdt, ism_op *op);

#endif
