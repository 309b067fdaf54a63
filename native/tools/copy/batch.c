/* batch.c: `isthmus-copy put` and `get` of many files (copy.h: icp_put_many,
 * icp_get_many): directories and file lists (tree.h) put under a remote directory, or a
 * remote directory's listing (getmany.h) fetched into a local one, over several
 * connections at once, each a session of requests (proto.h: SESSION), largest files
 * first.
 *
 * Why this shape: on a long link a file that waits for its answer before the next one
 * starts costs a round trip (300 ms on the link: 10 000 small files would take
 * 50 minutes of waiting). So a file under ICP_INLINE_MAX goes INLINE: its request, data
 * and digest are sent at once, behind the previous file's, and the answers are read as
 * they come (at most PEND_MAX unanswered per connection, so the answers the server
 * writes never outgrow the buffers while we are busy sending). A larger file goes the
 * classic way (one round trip for its answer, which is small against its transfer) and
 * so can resume from a partial copy the server kept (its prefix checked by digest);
 * an interrupted small file is simply sent again: it costs less than the round trip
 * that checking a prefix would need. With --resume, first every file is CHECKed
 * (pipelined, one round trip for all): those the server already holds, same size and
 * same SHA-256, are not sent again.
 *
 * A get mirrors it: a small file is asked for INLINE (no RESULT owed, so the requests
 * go out back to back, at most GET_PEND_BYTES of them unanswered: they wait in the
 * server's receive buffer while it sends), a large one the classic way, resumable; with
 * --resume the files already here with the listed size are CHECKed first.
 *
 * Worker threads (--parallel) each hold one connection and take the next file from the
 * shared list; the main thread shows progress. At the end: a summary line on stdout,
 * every failed file on stderr, the JSON manifest (path, size, sha256, status), exit 1
 * if any file failed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "copy.h"
#include "getmany.h"
#include "log.h"
#include "paths.h"
#include "tree.h"

#define ICP_INLINE_MAX (1u << 20) /* below: sent inline (about a round trip's worth at 100 Mbit/s) */
#define PEND_MAX 1024            /* unanswered inline files per connection */
#define PEND_ANSWER_BYTES (128u << 10) /* what their answers may add up to, estimated */
#define GET_PEND_BYTES (32u << 10) /* a get's unanswered requests, in bytes */
#define MAX_PARALLEL 64
/* an inline file's messages: REQ, its DATA parts, END */
#define WIRE_MAX (ICP_INLINE_MAX + (ICP_INLINE_MAX / ICP_CHUNK + 3) * ICP_HDR + ICP_MAX_BODY)
#define RECONNECTS 2 /* per worker, after a connection broke */

enum { PH_CHECK, PH_PUT };

typedef struct batch {
    icp_list *l;
    const icp_opts *o;
    const char *hostport, *remote;
    int get;           /* a many-file get: files come from remote into local */
    int lroot;         /* get: the local destination (O_PATH) */
    const char *local; /* get: its name, for messages */
    char *one_remote;  /* get of a single file: its remote path (its rel is the local name) */
    pthread_mutex_t mu;
    size_t next[2]; /* the next item of each phase */
    pthread_barrier_t phase;
    _Atomic uint64_t bytes_done, bytes_sent;
    atomic_uint files_done, files_failed;
    char conn_err[700]; /* the last connection failure (under mu) */
    const char *transport; /* (under mu) */
    atomic_int running; /* workers not yet done */
    /* (under mu) the items given back by workers whose connection broke before its
     * answers came (a busy server, its copy slots held, refuses a connection after its
     * handshake), for the workers still taking to take first; room for every item */
    size_t *back;
    size_t nback;
} batch;

typedef struct pend {
    size_t idx;
    int check;
    uint32_t answer; /* estimated bytes of its answers */
} pend;

typedef struct worker {
    batch *b;
    int id;
    icp_stream s;
    int up;
    uint8_t *buf;
    uint8_t *wire; /* an inline file's messages, gathered (WIRE_MAX bytes) */
    pend q[PEND_MAX];
    size_t head, n;
    uint32_t answer_bytes;
    int answered; /* an answer came on this connection (broken(): refused or not) */
    icp_meter m; /* the large file in flight, for the progress thread */
    pthread_t th;
} worker;

static size_t take(batch *b, int ph)
{
    pthread_mutex_lock(&b->mu);
    size_t i = ph == PH_PUT && b->nback ? b->back[--b->nback]
               : b->next[ph] < b->l->n ? b->next[ph]++ : (size_t)-1;
    pthread_mutex_unlock(&b->mu);
    return i;
}

/* Give a put's item i back, to be taken before anything else by a worker still in the
 * phase (the caller itself, which reconnects, or another): 1, or 0 outside the put phase
 * (the item is then the caller's to fail). One left behind when every worker then failed
 * to connect is failed with the files no connection reached. Sending a file again is
 * safe: the server replaces the target atomically. */
static int give_back(batch *b, int ph, size_t i)
{
    pthread_mutex_lock(&b->mu);
    int ok = ph == PH_PUT && b->nback < b->l->n;
    if (ok) {
        icp_item *it = &b->l->v[i];
        it->sent = 0;
        b->back[b->nback++] = i;
    }
    pthread_mutex_unlock(&b->mu);
    return ok;
}

static void finish(batch *b, icp_item *it, int state, uint64_t sent)
{
    if (it->counted)
        return;
    it->counted = 1;
    it->state = state;
    it->sent = sent;
    atomic_fetch_add(&b->bytes_sent, sent);
    if (state == ICP_IT_FAILED) {
        atomic_fetch_add(&b->files_failed, 1);
    } else {
        atomic_fetch_add(&b->files_done, 1);
        atomic_fetch_add(&b->bytes_done, it->size);
    }
}

static void remote_path(const batch *b, const icp_item *it, char *out, size_t outlen)
{
    if (b->one_remote) {
        snprintf(out, outlen, "%s", b->one_remote);
        return;
    }
    size_t n = strlen(b->remote);
    snprintf(out, outlen, "%s%s%s", b->remote, n && b->remote[n - 1] != '/' ? "/" : "", it->rel);
}

static void fill_req(const batch *b, const icp_item *it, int flags, icp_req *q)
{
    memset(q, 0, sizeof *q);
    q->op = ICP_PUT;
    q->flags = (uint8_t)(flags | ICP_F_SESSION);
    q->size = it->size;
    q->mode = it->mode;
    q->mtime = it->mtime;
    const char *slash = strrchr(it->rel, '/');
    snprintf(q->name, sizeof q->name, "%s", slash ? slash + 1 : it->rel);
    remote_path(b, it, q->path, sizeof q->path);
}

/* The source's bytes (it->size of them, which must still be its size) into buf, with
 * their digest. 0, or -1 with the item failed. */
static int read_small(icp_item *it, uint8_t *buf, uint8_t sha[ICP_SHA])
{
    int fd = open(it->src, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        icp_item_fail(it, ICP_IT_FAILED, "%s", strerror(errno));
        return -1;
    }
    struct stat st;
    ssize_t r = 0;
    size_t got = 0;
    if (fstat(fd, &st) == 0 && (uint64_t)st.st_size == it->size)
        while (got <= it->size && (r = read(fd, buf + got, it->size + 1 - got)) > 0)
            got += (size_t)r;
    int e = errno;
    int ok = r == 0 && got == it->size && icp_sha_buf(buf, it->size, sha) == 0;
    close(fd);
    if (!ok) {
        icp_item_fail(it, ICP_IT_FAILED, "%s", r < 0 ? strerror(e)
                                              : "the file changed size since it was listed");
        return -1;
    }
    return 0;
}

static int send_inline(worker *w, icp_item *it)
{
    batch *b = w->b;
    uint8_t *data = w->buf; /* it->size < ICP_INLINE_MAX: with the byte past the end */
    uint8_t sha[ICP_SHA], hdr[ICP_MAX_BODY];
    if (read_small(it, data, sha) != 0) {
        finish(b, it, ICP_IT_FAILED, 0);
        return 0;
    }
    memcpy(it->sha, sha, ICP_SHA);
    it->has_sha = 1;
    icp_req q;
    fill_req(b, it, ICP_F_INLINE | ICP_F_MKDIRS, &q);
    /* the whole file's messages in one send: a few full packets (or one AEAD record
     * train) per small file instead of one per message part */
    uint8_t *o = w->wire;
    o += icp_msg_put(o, ICP_REQ, hdr, icp_req_encode(&q, hdr));
    for (uint64_t at = 0; at < it->size; at += ICP_CHUNK) {
        size_t k = it->size - at < ICP_CHUNK ? (size_t)(it->size - at) : ICP_CHUNK;
        o += icp_msg_put(o, ICP_DATA, data + at, k);
    }
    icp_end e = {it->size, {0}};
    memcpy(e.sha, sha, ICP_SHA);
    o += icp_msg_put(o, ICP_END, hdr, icp_end_encode(&e, hdr));
    return icp_send(&w->s, w->wire, (size_t)(o - w->wire));
}

static int send_check(worker *w, icp_item *it)
{
    int fd = w->b->get ? icp_open_beneath(w->b->lroot, it->rel, O_RDONLY | O_NONBLOCK | O_NOCTTY)
                       : open(it->src, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    struct stat st;
    int ok = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
             (uint64_t)st.st_size == it->size && icp_sha_prefix(fd, it->size, w->buf, it->sha) == 0;
    if (fd >= 0)
        close(fd);
    if (!ok)
        return 1; /* not checked: it is copied (a put fails then if it cannot be read) */
    it->has_sha = 1;
    icp_req q;
    fill_req(w->b, it, ICP_F_CHECK, &q);
    memcpy(q.have_sha, it->sha, ICP_SHA);
    uint8_t hdr[ICP_MAX_BODY];
    return icp_msg_send(&w->s, ICP_REQ, hdr, icp_req_encode(&q, hdr)) != 0 ? -1 : 0;
}

/* An INLINE get's answer (rc: icp_rsp_check's): the data into the local file, or, when
 * that cannot be opened, read and dropped so that the session goes on. 0, or -1 when
 * the stream broke. */
static int get_answer(worker *w, icp_item *it, const icp_rsp *r, int rc, char *err)
{
    batch *b = w->b;
    char msg[ICP_MAX_MSG + ICP_MAX_PATH + 300];
    if (rc > 0) {
        icp_item_fail(it, ICP_IT_FAILED, "%s", err);
        finish(b, it, ICP_IT_FAILED, 0);
        return 0;
    }
    icp_target t;
    uint64_t have;
    int st = icp_get_open_local(b->lroot, it, 0, &t, &have, msg, sizeof msg);
    int sink = -1;
    if (st != ICP_OK) {
        icp_item_fail(it, ICP_IT_FAILED, "%s", msg);
        sink = open("/dev/null", O_WRONLY | O_CLOEXEC);
        memset(&t, 0, sizeof t);
        t.dirfd = -1;
        t.fd = sink;
    }
    icp_meter m;
    icp_meter_start(&m, r->size, 1);
    rc = icp_get_receive(&w->s, r, &t, b->o->umask, 1, &m, w->buf, it->sha, msg, sizeof msg);
    if (sink >= 0) {
        close(sink);
        finish(b, it, ICP_IT_FAILED, r->size);
        return rc < 0 ? -1 : 0;
    }
    icp_target_close(&t);
    if (rc != 0) {
        icp_item_fail(it, ICP_IT_FAILED, "%s", rc < 0 ? w->s.err : msg);
        finish(b, it, ICP_IT_FAILED, r->size);
        return rc < 0 ? -1 : 0;
    }
    it->has_sha = 1;
    finish(b, it, ICP_IT_OK, r->size);
    return 0;
}

/* The answers to the oldest unanswered request. 0, or -1 when the stream broke. */
static int answer_one(worker *w)
{
    batch *b = w->b;
    pend p = w->q[w->head];
    icp_item *it = &b->l->v[p.idx];
    icp_rsp r;
    icp_result res;
    char err[ICP_MAX_MSG + ICP_MAX_PATH + 300];
    int rc = icp_rsp_check(&w->s, w->buf, &r, "store the file", err, sizeof err);
    if (rc < 0)
        return -1;
    w->answered = 1;
    w->head = (w->head + 1) % PEND_MAX;
    w->n--;
    w->answer_bytes -= p.answer;
    if (p.check) {
        if (rc == 0 && r.size == 1) {
            finish(b, it, ICP_IT_UNCHANGED, 0);
        }
        return 0; /* anything else: it is sent */
    }
    if (b->get)
        return get_answer(w, it, &r, rc, err);
    if (rc > 0) {
        icp_item_fail(it, ICP_IT_FAILED, "%s", err);
        finish(b, it, ICP_IT_FAILED, it->size);
        return 0;
    }
    if (icp_result_recv(&w->s, w->buf, &res, err, sizeof err) != 0)
        return -1;
    if (res.status != ICP_OK || memcmp(res.sha, it->sha, ICP_SHA) != 0) {
        icp_item_fail(it, ICP_IT_FAILED, "%s", res.status != ICP_OK ? res.msg
                                                  : "the server's SHA-256 differs from ours");
        finish(b, it, ICP_IT_FAILED, it->size);
        return 0;
    }
    finish(b, it, ICP_IT_OK, it->size);
    return 0;
}

static int drain(worker *w, int all)
{
    uint32_t most = w->b->get ? GET_PEND_BYTES : PEND_ANSWER_BYTES;
    while (w->n && (all || w->n >= PEND_MAX || w->answer_bytes > most ||
                    icp_wait_readable(&w->s, 0) == 1))
        if (answer_one(w) != 0)
            return -1;
    return 0;
}

static void push(worker *w, size_t idx, int check)
{
    const icp_item *it = &w->b->l->v[idx];
    /* a put's answers, a get's requests (its answers are the files) */
    uint32_t answer = (uint32_t)((w->b->get && !check ? ICP_HDR + 88 : 2 * (ICP_HDR + 128)) +
                                 strlen(w->b->remote) + strlen(it->rel));
    w->q[(w->head + w->n) % PEND_MAX] = (pend){idx, check, answer};
    w->n++;
    w->answer_bytes += answer;
}

static int put_large(worker *w, icp_item *it)
{
    batch *b = w->b;
    int fd = open(it->src, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || (uint64_t)st.st_size != it->size) {
        icp_item_fail(it, ICP_IT_FAILED, "%s", fd < 0 ? strerror(errno)
                                               : "the file changed size since it was listed");
        if (fd >= 0)
            close(fd);
        finish(b, it, ICP_IT_FAILED, 0);
        return 0;
    }
    icp_req q;
    fill_req(b, it, ICP_F_MKDIRS | (b->o->resume ? ICP_F_RESUME : 0), &q);
    char to[ICP_MAX_PATH + 300], err[ICP_MAX_MSG + ICP_MAX_PATH + 400];
    uint64_t start = 0, moved = 0;
    icp_meter_start(&w->m, it->size, 1);
    int rc = icp_put_on(&w->s, fd, it->src, b->hostport, &q, &w->m, w->buf, to, sizeof to, &start,
                        &moved, it->sha, err, sizeof err);
    close(fd);
    atomic_store(&w->m.done, 0);
    if (rc < 0 && moved == 0 && !w->answered)
        return -1; /* no answer on this connection yet: broken() may give the file back */
    w->answered = 1;
    if (rc == 0) {
        it->has_sha = 1;
        it->resumed_at = start;
        finish(b, it, ICP_IT_OK, moved);
        return 0;
    }
    icp_item_fail(it, ICP_IT_FAILED, "%s", err);
    it->sent = moved; /* counted by broken() when the stream broke */
    if (rc > 0)
        finish(b, it, ICP_IT_FAILED, moved);
    return rc > 0 ? 0 : -1;
}

/* A small file asked for: its answer is read later (get_answer). */
static int send_get(worker *w, icp_item *it)
{
    icp_req q;
    memset(&q, 0, sizeof q);
    q.op = ICP_GET;
    q.flags = ICP_F_INLINE | ICP_F_SESSION;
    remote_path(w->b, it, q.path, sizeof q.path);
    uint8_t hdr[ICP_MAX_BODY];
    return icp_msg_send(&w->s, ICP_REQ, hdr, icp_req_encode(&q, hdr)) != 0 ? -1 : 0;
}

/* A large file, resumable from a partial copy here (offered by its digest). 0, or -1
 * when the stream broke (the item is then failed by broken()). */
static int get_large(worker *w, icp_item *it)
{
    batch *b = w->b;
    char msg[ICP_MAX_MSG + ICP_MAX_PATH + 300];
    icp_target t;
    icp_req q;
    memset(&q, 0, sizeof q);
    int resume = b->o->resume;
    int st = icp_get_open_local(b->lroot, it, resume, &t, &q.have, msg, sizeof msg);
    if (st != ICP_OK) {
        icp_item_fail(it, ICP_IT_FAILED, "%s", msg);
        finish(b, it, ICP_IT_FAILED, 0);
        return 0;
    }
    q.op = ICP_GET;
    q.flags = (uint8_t)(ICP_F_SESSION | (resume ? ICP_F_RESUME : 0));
    if (!resume || (q.have && icp_sha_prefix(t.fd, q.have, w->buf, q.have_sha) != 0))
        q.have = 0;
    remote_path(b, it, q.path, sizeof q.path);
    icp_rsp r;
    int rc = icp_msg_send(&w->s, ICP_REQ, w->buf, icp_req_encode(&q, w->buf)) != 0 ? -1
             : icp_rsp_check(&w->s, w->buf, &r, "send the file", msg, sizeof msg);
    if (rc >= 0)
        w->answered = 1;
    if (rc == 0 && r.offset && r.offset != q.have) {
        snprintf(w->s.err, sizeof w->s.err, "%s offered to resume at a byte we did not offer",
                 w->s.peer);
        rc = -1;
    }
    if (rc == 0) {
        icp_meter_start(&w->m, r.size, 1);
        rc = icp_get_receive(&w->s, &r, &t, b->o->umask, 0, &w->m, w->buf, it->sha, msg,
                             sizeof msg);
        atomic_store(&w->m.done, 0);
    }
    icp_target_close(&t); /* keeps a resumable partial file */
    if (rc < 0) {
        if (w->answered) /* else no answer yet: broken() may give the file back */
            icp_item_fail(it, ICP_IT_FAILED, "%s", w->s.err[0] ? w->s.err : msg);
        it->sent = 0;
        return -1;
    }
    if (rc > 0) {
        icp_item_fail(it, ICP_IT_FAILED, "%s", msg);
        finish(b, it, ICP_IT_FAILED, 0);
        return 0;
    }
    it->has_sha = 1;
    it->resumed_at = r.offset;
    finish(b, it, ICP_IT_OK, r.size - r.offset);
    return 0;
}

/* The stream broke: what waited for an answer failed with it (a check is just not
 * known: the file is sent). */
static void broken(worker *w, icp_item *cur, int ph)
{
    batch *b = w->b;
    char why[700];
    snprintf(why, sizeof why, "the connection failed: %s", w->s.err[0] ? w->s.err : "closed");
    /* Before its first answer the server may have refused the connection (busy): what
     * was in flight goes back to be sent again, by this worker once it has reconnected or
     * by another. After answers came, the files in flight fail as the connection did. */
    int fresh = !w->answered;
    for (; w->n; w->n--, w->head = (w->head + 1) % PEND_MAX) {
        size_t idx = w->q[w->head].idx;
        icp_item *it = &b->l->v[idx];
        if (fresh && it->state == ICP_IT_PENDING && !it->counted && give_back(b, ph, idx))
            continue;
        if (!w->q[w->head].check) {
            icp_item_fail(it, ICP_IT_FAILED, "%s", why);
            finish(b, it, ICP_IT_FAILED, it->size);
        }
    }
    if (cur && ph == PH_PUT && !cur->counted) { /* in flight, or failed by put_large */
        if (fresh && cur->state == ICP_IT_PENDING && give_back(b, ph, (size_t)(cur - b->l->v))) {
            cur = NULL;
        } else {
            if (cur->state == ICP_IT_PENDING)
                icp_item_fail(cur, ICP_IT_FAILED, "%s", why);
            finish(b, cur, ICP_IT_FAILED, cur->sent);
        }
    }
    w->answered = 0;
    w->answer_bytes = 0;
    w->head = 0;
    icp_abort(&w->s);
    w->up = 0;
}

static int connect_worker(worker *w, int *tries)
{
    if (w->up)
        return 0;
    if ((*tries)++ > RECONNECTS)
        return -1;
    if (icp_connect(&w->s, w->b->hostport, w->b->o) != 0) {
        pthread_mutex_lock(&w->b->mu);
        snprintf(w->b->conn_err, sizeof w->b->conn_err, "connecting to %s: %s", w->b->hostport,
                 w->s.err);
        pthread_mutex_unlock(&w->b->mu);
        return -1;
    }
    pthread_mutex_lock(&w->b->mu);
    w->b->transport = icp_transport(&w->s);
    pthread_mutex_unlock(&w->b->mu);
    w->up = 1;
    return 0;
}

static int have_work(batch *b, int ph)
{
    pthread_mutex_lock(&b->mu);
    int more = (ph == PH_PUT && b->nback) || b->next[ph] < b->l->n;
    pthread_mutex_unlock(&b->mu);
    return more;
}

/* Take items while there are any. A worker connects before it takes one (lazily: not at
 * all when the others took everything), so one that cannot connect holds no item when it
 * stops; what nobody could send is failed after the run, naming the connection error. */
static void run_phase(worker *w, int ph, int *tries)
{
    batch *b = w->b;
    for (;;) {
        size_t i = (size_t)-1;
        while (have_work(b, ph) && connect_worker(w, tries) == 0 &&
               (i = take(b, ph)) != (size_t)-1) {
            icp_item *it = &b->l->v[i];
            if (it->state != ICP_IT_PENDING)
                continue;
            int rc;
            if (ph == PH_CHECK) {
                rc = drain(w, 0);
                if (rc == 0 && (rc = send_check(w, it)) == 0)
                    push(w, i, 1);
                rc = rc < 0 ? -1 : 0;
            } else if (it->size >= ICP_INLINE_MAX) {
                rc = drain(w, 1);
                if (rc == 0)
                    rc = b->get ? get_large(w, it) : put_large(w, it);
            } else {
                rc = drain(w, 0);
                if (rc == 0 && (rc = b->get ? send_get(w, it) : send_inline(w, it)) == 0 &&
                    it->state == ICP_IT_PENDING)
                    push(w, i, 0);
            }
            if (rc == 0)
                rc = drain(w, 0);
            if (rc != 0)
                broken(w, it, ph);
        }
        if (w->up && drain(w, 1) != 0) {
            broken(w, NULL, ph);
            continue; /* what it gave back is ours to send again, or another's */
        }
        break;
    }
}

static void *work(void *arg)
{
    worker *w = arg;
    int tries = 0;
    if (w->b->o->resume)
        run_phase(w, PH_CHECK, &tries);
    pthread_barrier_wait(&w->b->phase); /* every check answered before any file is sent */
    run_phase(w, PH_PUT, &tries);
    if (w->up && icp_close(&w->s) != 0)
        icp_abort(&w->s);
    w->up = 0;
    atomic_fetch_sub(&w->b->running, 1);
    return NULL;
}

/* --- progress, manifest, summary --- */

static uint64_t progress_bytes(batch *b, worker *ws, int n)
{
    uint64_t v = atomic_load(&b->bytes_done);
    for (int i = 0; i < n; i++)
        v += atomic_load_explicit(&ws[i].m.done, memory_order_relaxed);
    return v;
}

static void show(batch *b, worker *ws, int n, uint64_t total, size_t nfiles, double t0, int final)
{
    const icp_opts *o = b->o;
    double dt = icp_now_s() - t0;
    uint64_t done = progress_bytes(b, ws, n);
    unsigned files = atomic_load(&b->files_done), failed = atomic_load(&b->files_failed);
    double rate = dt > 0 ? done / dt : 0;
    if (o->progress_json) {
        printf("{\"progress\": {\"bytes\": %llu, \"total_bytes\": %llu, \"files\": %u, "
               "\"failed\": %u, \"total_files\": %zu, \"seconds\": %.3f, \"final\": %s}}\n",
               (unsigned long long)done, (unsigned long long)total, files, failed, nfiles, dt,
               final ? "true" : "false");
        fflush(stdout);
    } else if (!o->quiet && !final) {
        fprintf(stderr, "%llu of %llu bytes (%.0f%%), %u of %zu files%s, %.1f Mbit/s, ETA %.0f s\n",
                (unsigned long long)done, (unsigned long long)total,
                total ? 100.0 * done / total : 100.0, files + failed, nfiles,
                failed ? " (some failed)" : "", rate * 8 / 1e6,
                rate > 0 && total > done ? (total - done) / rate : 0.0);
    }
}

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20 || *p == 0x7F)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

static const char *state_name(const icp_item *it)
{
    switch (it->state) {
    case ICP_IT_OK: return it->resumed_at ? "resumed" : "copied";
    case ICP_IT_UNCHANGED: return "unchanged";
    case ICP_IT_SKIPPED: return "skipped";
    default: return "failed";
    }
}

/* Written to a temporary name and renamed: a reader never sees half a manifest. */
static int write_manifest(const batch *b, const char *path, double dt, char *err, size_t errlen)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.partial", path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        snprintf(err, errlen, "%.1000s: %s", tmp, strerror(errno));
        return -1;
    }
    char dest[ICP_MAX_PATH + 300];
    snprintf(dest, sizeof dest, "%s:%s", b->hostport, b->remote);
    fprintf(f, "{\n  \"version\": 1,\n  \"%s\": ", b->get ? "source" : "destination");
    json_str(f, dest);
    if (b->get) {
        fprintf(f, ",\n  \"destination\": ");
        json_str(f, b->local);
    }
    fprintf(f, ",\n  \"transport\": \"%s\",\n  \"seconds\": %.3f,\n  \"bytes_sent\": %llu,\n"
               "  \"files\": [", b->transport ? b->transport : (b->o->udp ? "udp" : "tcp"), dt,
            (unsigned long long)atomic_load(&b->bytes_sent));
    for (size_t i = 0; i < b->l->n; i++) {
        const icp_item *it = &b->l->v[i];
        fprintf(f, "%s\n    {\"path\": ", i ? "," : "");
        json_str(f, it->rel);
        fprintf(f, ", \"%s\": ", b->get ? "local" : "source");
        json_str(f, it->src);
        fprintf(f, ", \"size\": %llu, \"sha256\": ", (unsigned long long)it->size);
        if (it->has_sha && (it->state == ICP_IT_OK || it->state == ICP_IT_UNCHANGED)) {
            fputc('"', f);
            for (int k = 0; k < ICP_SHA; k++)
                fprintf(f, "%02x", it->sha[k]);
            fputc('"', f);
        } else {
            fprintf(f, "null");
        }
        fprintf(f, ", \"status\": \"%s\", \"bytes_sent\": %llu", state_name(it),
                (unsigned long long)it->sent);
        if (it->resumed_at)
            fprintf(f, ", \"resumed_at\": %llu", (unsigned long long)it->resumed_at);
        if (it->err) {
            fprintf(f, ", \"error\": ");
            json_str(f, it->err);
        }
        fputc('}', f);
    }
    fprintf(f, "\n  ]\n}\n");
    if (fflush(f) != 0 || fsync(fileno(f)) != 0 || fclose(f) != 0 || rename(tmp, path) != 0) {
        snprintf(err, errlen, "writing the manifest %.1000s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

static void batch_init(batch *b, icp_list *l, const icp_opts *o, const char *hostport,
                       const char *remote)
{
    memset(b, 0, sizeof *b);
    b->l = l;
    b->o = o;
    b->hostport = hostport;
    b->remote = remote;
    b->lroot = -1;
}

/* The files of b->l over the connections, then the summary and the manifest. first: a
 * connection that is already up (a get's listing came over it), or NULL. The exit
 * status: 0, or 1 if any file failed. */
static int run(batch *b, icp_stream *first)
{
    icp_list *L = b->l;
    const icp_opts *o = b->o;
    const char *hostport = b->hostport, *remote = b->remote;
    char err[1200];
    pthread_mutex_init(&b->mu, NULL);
    uint64_t total = 0;
    size_t nfiles = 0;
    for (size_t i = 0; i < L->n; i++)
        if (L->v[i].state == ICP_IT_PENDING)
            total += L->v[i].size, nfiles++;
        else if (L->v[i].state == ICP_IT_FAILED)
            atomic_fetch_add(&b->files_failed, 1);
    int par = o->parallel < 1 ? 1 : o->parallel > MAX_PARALLEL ? MAX_PARALLEL : o->parallel;
    if ((size_t)par > nfiles)
        par = nfiles ? (int)nfiles : 1;
    worker *ws = calloc((size_t)par, sizeof *ws);
    pthread_barrier_init(&b->phase, NULL, (unsigned)par);
    b->back = calloc(L->n + 1, sizeof *b->back);
    if (!b->back) {
        icp_log("isthmus-copy: ", "no memory for %zu files", L->n);
        _exit(1);
    }
    atomic_init(&b->running, par);
    double t0 = icp_now_s();
    int started = 0;
    for (int i = 0; ws && i < par; i++) {
        ws[i].b = b;
        ws[i].id = i;
        ws[i].buf = malloc(ICP_MAX_DATA + 1);
        ws[i].wire = malloc(WIRE_MAX);
        icp_meter_start(&ws[i].m, 0, 1);
        if (i == 0 && first) {
            ws[0].s = *first;
            ws[0].up = 1;
        }
        if (!ws[i].buf || !ws[i].wire || pthread_create(&ws[i].th, NULL, work, &ws[i]) != 0)
            break;
        started++;
    }
    if (started < par) {
        /* the barrier counts par threads: without all of them none may pass it */
        icp_log("isthmus-copy: ", "no memory or threads for %d connections", par);
        _exit(1);
    }
    double last = t0;
    for (;;) {
        unsigned gone = atomic_load(&b->files_done) + atomic_load(&b->files_failed);
        if (gone >= L->n)
            break;
        sleep_s(0.1);
        int alive = atomic_load(&b->running);
        double now = icp_now_s();
        if (now - last >= (o->progress_json ? 0.5 : 1.0) && now - t0 >= 1.0) {
            show(b, ws, par, total, nfiles, t0, 0);
            last = now;
        }
        if (!alive)
            break;
    }
    for (int i = 0; i < par; i++)
        pthread_join(ws[i].th, NULL);
    double dt = icp_now_s() - t0;
    /* files no connection reached */
    for (size_t i = 0; i < L->n; i++)
        if (L->v[i].state == ICP_IT_PENDING) {
            icp_item_fail(&L->v[i], ICP_IT_FAILED, "not copied: %s",
                          b->conn_err[0] ? b->conn_err : "no connection was left");
            finish(b, &L->v[i], ICP_IT_FAILED, 0);
        }
    unsigned ok = 0, same = 0, failed = 0, skipped = 0;
    uint64_t copied = 0;
    for (size_t i = 0; i < L->n; i++) {
        icp_item *it = &L->v[i];
        ok += it->state == ICP_IT_OK;
        same += it->state == ICP_IT_UNCHANGED;
        skipped += it->state == ICP_IT_SKIPPED;
        if (it->state == ICP_IT_OK)
            copied += it->size;
        if (it->state == ICP_IT_FAILED) {
            failed++;
            icp_log("isthmus-copy: ", "FAILED %s: %s", it->rel, it->err ? it->err : "?");
        } else if (it->state == ICP_IT_SKIPPED) {
            icp_log("isthmus-copy: ", "skipped %s: %s", it->rel, it->err ? it->err : "?");
        }
    }
    show(b, ws, par, total, nfiles, t0, 1);
    if (o->manifest && write_manifest(b, o->manifest, dt, err, sizeof err) != 0) {
        icp_log("isthmus-copy: ", "%s", err);
        failed++;
    }
    uint64_t sent = atomic_load(&b->bytes_sent);
    char dest[2 * ICP_MAX_PATH + 300];
    if (b->get)
        snprintf(dest, sizeof dest, "%s:%s -> %s", hostport, remote[0] ? remote : ".", b->local);
    else
        snprintf(dest, sizeof dest, "-> %s:%s", hostport, remote);
    icp_escape(dest, err, sizeof err);
    printf("%s %u files (%llu bytes) %s: %llu bytes sent in %.2f s, %.1f Mbit/s over %s "
           "with %d connection%s; %u unchanged, %u skipped, %u failed%s\n",
           b->get ? "get" : "put", ok, (unsigned long long)copied, err, (unsigned long long)sent, dt,
           dt > 0 ? sent * 8 / dt / 1e6 : 0.0, b->transport ? b->transport : (o->udp ? "udp" : "tcp"),
           par, par == 1 ? "" : "s", same, skipped, failed,
           failed ? "" : ", sha256 verified");
    fflush(stdout);
    for (int i = 0; i < par; i++) {
        free(ws[i].buf);
        free(ws[i].wire);
    }
    free(ws);
    free(b->back);
    pthread_barrier_destroy(&b->phase);
    pthread_mutex_destroy(&b->mu);
    icp_list_free(L);
    return failed ? 1 : 0;
}

int icp_put_many(char **locals, int n, const char *hostport, const char *remote, const icp_opts *o)
{
    icp_list l = {0};
    char err[1200];
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++)
        rc = icp_list_add(&l, locals[i], 0, err, sizeof err);
    if (rc == 0 && o->files_from)
        rc = icp_list_add_from(&l, o->files_from, err, sizeof err);
    if (rc == 0)
        rc = icp_list_sort(&l, err, sizeof err);
    if (rc != 0) {
        icp_log("isthmus-copy: ", "%s (nothing was copied)", err);
        icp_list_free(&l);
        return 1;
    }
    batch b;
    batch_init(&b, &l, o, hostport, remote);
    return run(&b, NULL);
}

/* The local destination of a get, made if missing (as mkdir -p): its fd (O_PATH), or -1
 * with err. A single file (single) goes where a one-file get would put it: into local
 * when it is a directory or ends in '/', else as local's last component; *rel is then
 * the name it gets. */
static int open_local(const char *local, int single, char **rel, char *err, size_t errlen)
{
    char msg[ICP_MAX_MSG];
    size_t n = strlen(local);
    if (single) {
        icp_target t;
        if (icp_target_resolve(AT_FDCWD, local, n == 0 || local[n - 1] == '/', *rel, 0, &t, msg,
                               sizeof msg) != ICP_OK) {
            snprintf(err, errlen, "%s", msg);
            return -1;
        }
        char *name = strdup(t.name);
        int fd = t.dirfd;
        t.dirfd = -1;
        icp_target_close(&t);
        if (!name) {
            close(fd);
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        free(*rel);
        *rel = name;
        return fd;
    }
    char p[ICP_MAX_PATH + 1];
    snprintf(p, sizeof p, "%s", local);
    for (size_t at = 1; at <= n && at < sizeof p; at++) {
        if (p[at] != '/' && p[at] != 0)
            continue;
        char c = p[at];
        p[at] = 0;
        if (mkdir(p, 0777) != 0 && errno != EEXIST) {
            snprintf(err, errlen, "making %s: %s", p, strerror(errno));
            return -1;
        }
        p[at] = c;
    }
    int fd = open(local, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        snprintf(err, errlen, "%s: %s", local, strerror(errno));
    return fd;
}

int icp_get_many(const char *hostport, const char *remote, const char *local, const icp_opts *o)
{
    char err[ICP_MAX_MSG + 2 * ICP_MAX_PATH + 300];
    icp_list l = {0};
    char *base = NULL;
    int single = 0;
    uint8_t *buf = malloc(ICP_MAX_DATA + 1);
    icp_stream s;
    if (!buf) {
        icp_log("isthmus-copy: ", "out of memory");
        return 1;
    }
    if (icp_connect(&s, hostport, o) != 0) {
        icp_log("isthmus-copy: ", "connecting to %s: %s (nothing was copied)", hostport, s.err);
        free(buf);
        return 1;
    }
    int rc = icp_list_remote(&s, remote, &l, &base, &single, buf, err, sizeof err);
    free(buf);
    int lroot = -1;
    char *one = NULL;
    if (rc == 0 && single && asprintf(&one, "%s%s%s", base, base[0] ? "/" : "", l.v[0].rel) < 0)
        one = NULL, rc = -1, snprintf(err, sizeof err, "out of memory");
    if (rc == 0 && single)
        lroot = open_local(local, 1, &l.v[0].rel, err, sizeof err);
    else if (rc == 0)
        lroot = open_local(local, 0, NULL, err, sizeof err);
    if (rc == 0 && lroot < 0)
        rc = 1;
    if (rc == 0)
        rc = icp_list_sort(&l, err, sizeof err) != 0;
    if (rc != 0) {
        icp_log("isthmus-copy: ", "get %s:%s: %s (nothing was copied)", hostport, remote, err);
        if (rc < 0)
            icp_abort(&s);
        else if (icp_close(&s) != 0)
            icp_abort(&s);
        if (lroot >= 0)
            close(lroot);
        free(base);
        free(one);
        icp_list_free(&l);
        return 1;
    }
    for (size_t i = 0; i < l.n; i++) { /* src: the local path, for messages */
        char *p = NULL;
        if (asprintf(&p, "%s%s%s", local, local[0] && local[strlen(local) - 1] != '/' ? "/" : "",
                     l.v[i].rel) >= 0) {
            free(l.v[i].src);
            l.v[i].src = p;
        }
    }
    batch b;
    batch_init(&b, &l, o, hostport, base);
    b.get = 1;
    b.one_remote = one;
    b.lroot = lroot;
    b.local = local;
    rc = run(&b, &s);
    close(lroot);
    free(base);
    free(one);
    return rc;
}
