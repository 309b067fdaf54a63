/* aggregate.c (patterns): many small messages between sites as few large ones.
 *
 * Across a WAN every message pays the link's latency and the gateways' per-message cost,
 * so a code that sends thousands of small updates to scattered ranks spends its time in
 * latency. Here a rank queues each message in one buffer per destination *site*; a buffer
 * goes out as one MPI message to that site's leader (its lowest rank) when it reaches the
 * threshold and at every flush. The leader unpacks it and hands each of its site's ranks
 * its part as one local message (the leader keeps its own). A flush is collective
 * without a collective call: every rank ends its packet to every other site's leader (and
 * its own) with an end mark, sent even when nothing else is; a leader that has the end
 * marks of all other ranks has everything, and ends each of its ranks' parts with one.
 * So a flush costs one crossing of each link, where counting first (an allreduce) would
 * add two more. A rank can be one flush ahead of a leader (never two: finishing a flush
 * needs the end marks of every leader's site, that leader's own included), so leaders
 * count end marks per flush parity.
 *
 * Order per (source, destination) holds because every step keeps it: a source appends in
 * call order and its packets to one leader are non-overtaking MPI messages, the leader
 * unpacks them in arrival order and its parts to one rank are non-overtaking too.
 *
 * Record on the wire: dest, source, tag (int32 each), len (uint32), then len bytes; an
 * end mark is dest -1, len 0, tag the flush's number.
 */
#include "patterns.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { TAG_SITE = 1, TAG_PART = 2, POLL_EVERY = 64, END = -1 };

typedef struct rec_hdr {
    int32_t dest, source, tag;
    uint32_t len;
} rec_hdr;

typedef struct bytes {
    char *p;
    size_t len, cap;
} bytes;

typedef struct pending {
    MPI_Request req;
    char *buf;
} pending;

struct ism_pat_agg {
    ism_pat_sites *s;
    MPI_Comm part;            /* a duplicate of the site's communicator: leader -> ranks */
    int *local_of;            /* [size]: rank of each comm rank in its site communicator */
    size_t threshold;
    ism_pat_agg_handler handler;
    void *ctx;
    bytes *to_site;           /* [nsites]: what waits for each site */
    bytes *to_local;          /* leader: [site_size] parts being cut from one packet */
    int flushes;              /* flushes finished */
    int ends[2];              /* leader: end marks received, by flush parity */
    int ends_got;             /* end marks received from this site's leader */
    pending *pend;
    int npend, cappend;
    int in_handler, since_poll;
    ism_pat_agg_stats st;
};

static int grow(bytes *b, size_t more)
{
    if (b->len + more <= b->cap)
        return MPI_SUCCESS;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + more)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p)
        return MPI_ERR_NO_MEM;
    b->p = p;
    b->cap = cap;
    return MPI_SUCCESS;
}

static int append(bytes *b, const rec_hdr *h, const void *data)
{
    if (grow(b, sizeof *h + h->len) != MPI_SUCCESS)
        return MPI_ERR_NO_MEM;
    memcpy(b->p + b->len, h, sizeof *h);
    if (h->len)
        memcpy(b->p + b->len + sizeof *h, data, h->len);
    b->len += sizeof *h + h->len;
    return MPI_SUCCESS;
}

static int reap(ism_pat_agg *a)
{
    int k = 0;
    for (int i = 0; i < a->npend; i++) {
        int done = 0;
        int rc = MPI_Test(&a->pend[i].req, &done, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS)
            return pat_fail(rc, "rank %d (site %d): a packed send failed", a->s->rank,
                            a->s->my_site);
        if (done)
            free(a->pend[i].buf);
        else
            a->pend[k++] = a->pend[i];
    }
    a->npend = k;
    return MPI_SUCCESS;
}

/* Sends b's bytes (handing the buffer over) to peer of comm. */
static int ship(ism_pat_agg *a, bytes *b, int peer, int tag, MPI_Comm comm)
{
    if (b->len > INT_MAX)
        return pat_fail(MPI_ERR_COUNT, "rank %d (site %d): a packet of %zu bytes for rank %d "
                        "is more than one MPI message can carry (%d)", a->s->rank,
                        a->s->my_site, b->len, peer, INT_MAX);
    if (a->npend == a->cappend) {
        int cap = a->cappend ? 2 * a->cappend : 16;
        pending *p = realloc(a->pend, sizeof(*p) * (size_t)cap);
        if (!p)
            return pat_fail(MPI_ERR_NO_MEM, "rank %d: no memory for %d sends in flight",
                            a->s->rank, cap);
        a->pend = p;
        a->cappend = cap;
    }
    pending *p = &a->pend[a->npend];
    int rc = MPI_Isend(b->p, (int)b->len, MPI_BYTE, peer, tag, comm, &p->req);
    if (rc != MPI_SUCCESS)
        return pat_fail(rc, "rank %d (site %d): sending a packet of %zu bytes to rank %d "
                        "failed", a->s->rank, a->s->my_site, b->len, peer);
    p->buf = b->p;
    a->npend++;
    *b = (bytes){0};
    return MPI_SUCCESS;
}

static int split_packet(ism_pat_agg *a, const char *p, size_t n, int from, int end);

/* Sends what waits for site; with end, closed by this flush's end mark. */
static int ship_site(ism_pat_agg *a, int site, int end)
{
    bytes *b = &a->to_site[site];
    if (a->s->leader[site] == a->s->rank) { /* a leader cuts its own packet in place */
        int rc = split_packet(a, b->p, b->len, a->s->rank, 0);
        b->len = 0;
        return rc;
    }
    rec_hdr mark = {END, a->s->rank, a->flushes, 0};
    if (end && append(b, &mark, NULL) != MPI_SUCCESS)
        return pat_fail(MPI_ERR_NO_MEM, "rank %d: no memory for an end mark", a->s->rank);
    int rc = ship(a, b, a->s->leader[site], TAG_SITE, a->s->comm);
    if (rc == MPI_SUCCESS)
        a->st.packets++;
    return rc;
}

/* Walks the records of a packet; each goes to fn. Packets come from this library on
 * other ranks, but a short or overlong record is still refused, never read past. */
static int walk(ism_pat_agg *a, const char *p, size_t n, int from,
                int (*fn)(ism_pat_agg *, const rec_hdr *, const char *))
{
    size_t off = 0;
    while (off < n) {
        rec_hdr h;
        if (n - off < sizeof h)
            return pat_fail(MPI_ERR_TRUNCATE, "rank %d: packet from rank %d ends inside a "
                            "record header (%zu of %zu bytes)", a->s->rank, from, n - off,
                            sizeof h);
        memcpy(&h, p + off, sizeof h);
        if (h.len > n - off - sizeof h)
            return pat_fail(MPI_ERR_TRUNCATE, "rank %d: record from rank %d says %u bytes, "
                            "the packet holds %zu more", a->s->rank, from, h.len,
                            n - off - sizeof h);
        int rc = fn(a, &h, p + off + sizeof h);
        if (rc != MPI_SUCCESS)
            return rc;
        off += sizeof h + h.len;
    }
    return MPI_SUCCESS;
}

static int deliver(ism_pat_agg *a, const rec_hdr *h, const char *data)
{
    if (h->dest == END) {
        a->ends_got++;
        return MPI_SUCCESS;
    }
    int outer = a->in_handler;
    a->in_handler = 1;
    a->handler(h->source, h->tag, data, h->len, a->ctx);
    a->in_handler = outer;
    a->st.delivered++;
    return MPI_SUCCESS;
}

static int cut(ism_pat_agg *a, const rec_hdr *h, const char *data)
{
    if (h->dest == END) {
        a->ends[h->tag & 1]++;
        return MPI_SUCCESS;
    }
    if (h->dest < 0 || h->dest >= a->s->size || a->s->site_of[h->dest] != a->s->my_site)
        return pat_fail(MPI_ERR_RANK, "rank %d (leader of site %d): record for rank %d, "
                        "which is not at this site", a->s->rank, a->s->my_site, h->dest);
    if (h->dest == a->s->rank)
        return deliver(a, h, data);
    if (append(&a->to_local[a->local_of[h->dest]], h, data) != MPI_SUCCESS)
        return pat_fail(MPI_ERR_NO_MEM, "rank %d: no memory for a part of %u bytes",
                        a->s->rank, h->len);
    return MPI_SUCCESS;
}

/* Leader: one packet, cut into one part per rank of this site; with end, every rank's
 * part ends with this flush's end mark and goes even when empty. */
static int split_packet(ism_pat_agg *a, const char *p, size_t n, int from, int end)
{
    int rc = walk(a, p, n, from, cut);
    for (int l = 1; rc == MPI_SUCCESS && l < a->s->site_size[a->s->my_site]; l++) {
        rec_hdr mark = {END, a->s->rank, a->flushes, 0};
        if (end && append(&a->to_local[l], &mark, NULL) != MPI_SUCCESS)
            return pat_fail(MPI_ERR_NO_MEM, "rank %d: no memory for an end mark", a->s->rank);
        if (a->to_local[l].len)
            rc = ship(a, &a->to_local[l], l, TAG_PART, a->part);
    }
    return rc;
}

/* Receives the message probed in st on comm and gives it to the leader's cutter or to
 * the handler. */
static int take(ism_pat_agg *a, MPI_Comm comm, MPI_Status *st)
{
    int n = 0;
    MPI_Get_count(st, MPI_BYTE, &n);
    char *p = malloc(n ? (size_t)n : 1);
    if (!p)
        return pat_fail(MPI_ERR_NO_MEM, "rank %d: no memory for a packet of %d bytes",
                        a->s->rank, n);
    int rc = MPI_Recv(p, n, MPI_BYTE, st->MPI_SOURCE, st->MPI_TAG, comm, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS)
        pat_fail(rc, "rank %d (site %d): receiving a packet of %d bytes from rank %d failed",
                 a->s->rank, a->s->my_site, n, st->MPI_SOURCE);
    else if (st->MPI_TAG == TAG_SITE)
        rc = split_packet(a, p, (size_t)n, st->MPI_SOURCE, 0);
    else
        rc = walk(a, p, (size_t)n, st->MPI_SOURCE, deliver);
    free(p);
    return rc;
}

static int is_leader(const ism_pat_agg *a)
{
    return a->s->leader[a->s->my_site] == a->s->rank;
}

int ism_pat_agg_poll(ism_pat_agg *a)
{
    if (a->in_handler)
        return MPI_SUCCESS; /* a handler that sends: its messages wait for the next poll */
    a->since_poll = 0;
    for (;;) {
        int flag = 0, rc = MPI_SUCCESS;
        MPI_Status st;
        MPI_Comm comm = a->s->comm;
        if (is_leader(a))
            rc = MPI_Iprobe(MPI_ANY_SOURCE, TAG_SITE, comm, &flag, &st);
        if (!flag) {
            comm = a->part;
            rc = MPI_Iprobe(0, TAG_PART, comm, &flag, &st);
        }
        if (rc != MPI_SUCCESS)
            return pat_fail(rc, "rank %d: probing for packets failed", a->s->rank);
        if (!flag)
            break;
        if ((rc = take(a, comm, &st)) != MPI_SUCCESS)
            return rc;
    }
    return reap(a);
}

int ism_pat_agg_send(ism_pat_agg *a, int dest, int tag, const void *data, size_t len)
{
    if (dest < 0 || dest >= a->s->size)
        return pat_fail(MPI_ERR_RANK, "rank %d: ism_pat_agg_send to rank %d; the "
                        "communicator has ranks 0..%d", a->s->rank, dest, a->s->size - 1);
    if (len > (size_t)INT_MAX - sizeof(rec_hdr))
        return pat_fail(MPI_ERR_COUNT, "rank %d: ism_pat_agg_send of %zu bytes to rank %d; "
                        "at most %zu per message", a->s->rank, len, dest,
                        (size_t)INT_MAX - sizeof(rec_hdr));
    int site = a->s->site_of[dest];
    rec_hdr h = {dest, a->s->rank, tag, (uint32_t)len};
    if (append(&a->to_site[site], &h, data) != MPI_SUCCESS)
        return pat_fail(MPI_ERR_NO_MEM, "rank %d: no memory to queue %zu bytes for site %d",
                        a->s->rank, len, site);
    a->st.queued++;
    int rc = MPI_SUCCESS;
    /* from a handler nothing ships: a leader's own site would deliver, and so recurse */
    if (!a->in_handler && a->to_site[site].len >= a->threshold) {
        rc = ship_site(a, site, 0);
        a->since_poll = POLL_EVERY;
    }
    if (rc == MPI_SUCCESS && ++a->since_poll >= POLL_EVERY)
        rc = ism_pat_agg_poll(a);
    return rc;
}

/* Blocks until one packet with tag arrives on comm, and takes it. */
static int take_one(ism_pat_agg *a, int source, int tag, MPI_Comm comm)
{
    MPI_Status st;
    int rc = MPI_Probe(source, tag, comm, &st);
    if (rc != MPI_SUCCESS)
        return pat_fail(rc, "rank %d (site %d): waiting for a packet failed", a->s->rank,
                        a->s->my_site);
    return take(a, comm, &st);
}

int ism_pat_agg_flush(ism_pat_agg *a)
{
    if (a->in_handler)
        return pat_fail(MPI_ERR_OTHER, "rank %d: ism_pat_agg_flush called from a handler "
                        "(a flush is collective; call it from the program)", a->s->rank);
    ism_pat_sites *s = a->s;
    int rc = MPI_SUCCESS, parity = a->flushes & 1;
    for (int site = 0; rc == MPI_SUCCESS && site < s->nsites; site++)
        if (s->leader[site] != s->rank)
            rc = ship_site(a, site, 1);
    if (rc == MPI_SUCCESS && is_leader(a)) {
        rc = ship_site(a, s->my_site, 0);
        while (rc == MPI_SUCCESS && a->ends[parity] < s->size - 1)
            rc = take_one(a, MPI_ANY_SOURCE, TAG_SITE, s->comm);
        a->ends[parity] = 0;
        if (rc == MPI_SUCCESS)
            rc = split_packet(a, NULL, 0, s->rank, 1);
    }
    while (rc == MPI_SUCCESS && !is_leader(a) && a->ends_got <= a->flushes)
        rc = take_one(a, 0, TAG_PART, a->part);
    for (int i = 0; rc == MPI_SUCCESS && i < a->npend; i++) {
        rc = MPI_Wait(&a->pend[i].req, MPI_STATUS_IGNORE);
        free(a->pend[i].buf);
    }
    if (rc == MPI_SUCCESS) {
        a->npend = 0;
        a->flushes++;
    }
    return rc;
}

static void agg_release(ism_pat_agg *a)
{
    if (a->s) {
        for (int i = 0; a->to_site && i < a->s->nsites; i++)
            free(a->to_site[i].p);
        for (int i = 0; a->to_local && i < a->s->site_size[a->s->my_site]; i++)
            free(a->to_local[i].p);
    }
    for (int i = 0; i < a->npend; i++) {
        MPI_Request_free(&a->pend[i].req); /* after an error only: the send may go on */
        free(a->pend[i].buf);
    }
    if (a->part != MPI_COMM_NULL)
        MPI_Comm_free(&a->part);
    ism_pat_sites_free(&a->s);
    free(a->to_site);
    free(a->to_local);
    free(a->local_of);
    free(a->pend);
    free(a);
}

int ism_pat_agg_create(MPI_Comm comm, size_t threshold, ism_pat_agg_handler handler, void *ctx,
                       ism_pat_agg **out)
{
    *out = NULL;
    if (!handler)
        return pat_fail(MPI_ERR_ARG, "ism_pat_agg_create: the handler is NULL; every "
                        "delivered message goes to it");
    ism_pat_agg *a = calloc(1, sizeof(*a));
    if (!a)
        return pat_fail(MPI_ERR_NO_MEM, "no memory for an aggregator");
    a->part = MPI_COMM_NULL;
    a->threshold = threshold ? threshold : 1;
    a->handler = handler;
    a->ctx = ctx;
    int rc = ism_pat_sites_create(comm, &a->s);
    if (rc != MPI_SUCCESS) {
        agg_release(a);
        return rc;
    }
    ism_pat_sites *s = a->s;
    rc = MPI_Comm_dup(s->site, &a->part);
    int here = s->site_size[s->my_site];
    a->to_site = calloc((size_t)s->nsites, sizeof(bytes));
    a->to_local = calloc((size_t)here, sizeof(bytes));
    a->local_of = malloc(sizeof(int) * (size_t)s->size);
    int *seen = calloc((size_t)s->nsites, sizeof(int));
    if (rc == MPI_SUCCESS && !(a->to_site && a->to_local && a->local_of && seen))
        rc = pat_fail(MPI_ERR_NO_MEM, "rank %d: no memory for an aggregator over %d sites",
                      s->rank, s->nsites);
    for (int r = 0; rc == MPI_SUCCESS && r < s->size; r++)
        a->local_of[r] = seen[s->site_of[r]]++;
    free(seen);
    if (rc != MPI_SUCCESS) {
        agg_release(a);
        return rc;
    }
    *out = a;
    return MPI_SUCCESS;
}

int ism_pat_agg_free(ism_pat_agg **ap)
{
    ism_pat_agg *a = *ap;
    if (!a)
        return MPI_SUCCESS;
    int rc = ism_pat_agg_flush(a);
    agg_release(a);
    *ap = NULL;
    return rc;
}

void ism_pat_agg_get_stats(const ism_pat_agg *a, ism_pat_agg_stats *st)
{
    *st = a->st;
}
