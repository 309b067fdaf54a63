/* file_coll.c (abi): collective reads and writes, two-phase with a site level.
 *
 * Ranks at the file's site move their own pieces with POSIX calls, at the local rate.
 * At every other site the members of the file's communicator there hand their pieces to
 * their site's leader (vendor MPI inside the site), which sorts them by file offset,
 * merges adjacent ones and sends them through the agent in full frames, a window of them
 * in flight: the WAN carries the site's data once, in large pieces, however finely the
 * view cuts each rank's part (a 3-D subarray: one row per segment). Reads run the same
 * way back: one merged read, then each rank's bytes scattered inside the site. */
#define _GNU_SOURCE
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "file.h"

typedef struct entry {
    int64_t off, len;
    int64_t at;  /* where its bytes are in the site's gathered buffer */
    int64_t seq; /* gathering order: ties keep it */
} entry;

static int by_offset(const void *a, const void *b)
{
    const entry *x = a, *y = b;
    if (x->off != y->off)
        return x->off < y->off ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

typedef struct site_parts {
    int n;               /* ranks at this site */
    int *nseg, *nbyte;   /* per rank: segments, data bytes */
    int *sdisp, *ddisp;  /* their displacements in the gathered buffers (bytes) */
    ism_io_seg *seg;     /* every rank's segments, rank after rank */
    char *data;          /* every rank's data, rank after rank */
    int64_t nsegs, bytes;
} site_parts;

static void parts_free(site_parts *p)
{
    free(p->nseg), free(p->nbyte), free(p->sdisp), free(p->ddisp), free(p->seg), free(p->data);
}

/* At the site's root: counts and displacements of what each rank hands over. */
static int parts_layout(site_parts *p, const int64_t *counts)
{
    p->nseg = malloc(sizeof(int) * (size_t)p->n);
    p->nbyte = malloc(sizeof(int) * (size_t)p->n);
    p->sdisp = malloc(sizeof(int) * (size_t)p->n);
    p->ddisp = malloc(sizeof(int) * (size_t)p->n);
    if (!p->nseg || !p->nbyte || !p->sdisp || !p->ddisp)
        return MPI_ERR_NO_MEM;
    int64_t s = 0, d = 0;
    for (int r = 0; r < p->n; r++) {
        p->nseg[r] = (int)(counts[2 * r] * (int64_t)sizeof(ism_io_seg));
        p->nbyte[r] = (int)counts[2 * r + 1];
        p->sdisp[r] = (int)s;
        p->ddisp[r] = (int)d;
        s += p->nseg[r];
        d += p->nbyte[r];
    }
    p->nsegs = s / (int64_t)sizeof(ism_io_seg);
    p->bytes = d;
    p->seg = malloc((size_t)s + 1);
    p->data = malloc((size_t)d + 1);
    return p->seg && p->data ? MPI_SUCCESS : MPI_ERR_NO_MEM;
}

/* The root's merged access: sorted, adjacent pieces joined; moves the bytes between the
 * gathered buffer and the file. got[r]: the bytes rank r's pieces got (reads). */
static int merged_move(ism_file *f, site_parts *p, int write, int64_t *got)
{
    entry *e = malloc(sizeof *e * (size_t)(p->nsegs + 1));
    ism_fseg_list m = {0};
    char *buf = malloc((size_t)p->bytes + 1);
    int *owner = malloc(sizeof(int) * (size_t)(p->nsegs + 1));
    if (!e || !buf || !owner) {
        free(e), free(buf), free(owner);
        return MPI_ERR_NO_MEM;
    }
    int64_t k = 0;
    for (int r = 0; r < p->n; r++) {
        int64_t at = p->ddisp[r];
        const ism_io_seg *s = p->seg + p->sdisp[r] / (int)sizeof(ism_io_seg);
        for (int j = 0; j < p->nseg[r] / (int)sizeof(ism_io_seg); j++, k++) {
            e[k] = (entry){s[j].off, s[j].len, at, k};
            owner[k] = r;
            at += s[j].len;
        }
    }
    qsort(e, (size_t)k, sizeof *e, by_offset);
    int rc = MPI_SUCCESS;
    int64_t pos = 0;
    for (int64_t i = 0; i < k && !rc; i++) {
        if (write)
            memcpy(buf + pos, p->data + e[i].at, (size_t)e[i].len);
        pos += e[i].len;
        ism_io_seg one = {e[i].off, e[i].len};
        /* joining adjacent pieces, as seg_add does for one rank */
        if (m.n && m.seg[m.n - 1].off + m.seg[m.n - 1].len == one.off) {
            m.seg[m.n - 1].len += one.len;
        } else {
            if (m.n == m.cap) {
                m.cap = m.cap ? m.cap * 2 : 64;
                ism_io_seg *ns = realloc(m.seg, sizeof *ns * m.cap);
                if (!ns)
                    rc = MPI_ERR_NO_MEM;
                else
                    m.seg = ns;
            }
            if (!rc)
                m.seg[m.n++] = one;
        }
    }
    int64_t done = 0;
    if (!rc)
        rc = ism_abi_file_move(f, m.seg, m.n, buf, write, &done);
    if (!rc) {
        /* every piece's share of what was moved (a read may end at the end of the file) */
        int64_t cm = 0;
        for (int64_t i = 0; i < k; i++) {
            int64_t have = done - cm < 0 ? 0 : done - cm > e[i].len ? e[i].len : done - cm;
            int r = owner[e[i].seq];
            got[r] += have;
            if (!write) {
                memcpy(p->data + e[i].at, buf + cm, (size_t)have);
                memset(p->data + e[i].at + have, 0, (size_t)(e[i].len - have));
            }
            cm += e[i].len;
        }
    }
    free(e), free(buf), free(owner), free(m.seg);
    return rc;
}

int ism_abi_file_coll(ism_file *f, ism_fseg_list *segs, char *data, int write, int64_t *done)
{
    int srank, ssize;
    PMPI_Comm_rank(f->sitecomm, &srank);
    PMPI_Comm_size(f->sitecomm, &ssize);
    if (f->here || ssize == 1)
        return ism_abi_file_move(f, segs->seg, segs->n, data, write, done);
    /* what everyone at this site hands over, and whether it fits the gathers' int counts */
    int64_t mine[2] = {segs->n, segs->bytes}, sum[2];
    PMPI_Allreduce(mine, sum, 2, MPI_INT64_T, MPI_SUM, f->sitecomm);
    if (sum[0] * (int64_t)sizeof(ism_io_seg) > INT_MAX || sum[1] > INT_MAX)
        return ism_abi_file_move(f, segs->seg, segs->n, data, write, done);
    site_parts p = {.n = ssize};
    int64_t *counts = srank == 0 ? malloc(sizeof(int64_t) * 2 * (size_t)ssize) : NULL;
    int64_t *got = srank == 0 ? calloc((size_t)ssize, sizeof(int64_t)) : NULL;
    PMPI_Gather(mine, 2, MPI_INT64_T, counts, 2, MPI_INT64_T, 0, f->sitecomm);
    int rc = srank == 0 ? (counts && got ? parts_layout(&p, counts) : MPI_ERR_NO_MEM) : 0;
    if (rc) /* the gathers below need the root's buffers: nothing sensible to go on with */
        ism_die("site %s rank %d: out of memory gathering %lld bytes of MPI-IO data of this "
                "site", ism_site_name(ism.lay.site), ism.grank, (long long)sum[1]);
    PMPI_Gatherv(segs->seg, (int)(segs->n * sizeof(ism_io_seg)), MPI_BYTE, p.seg, p.nseg,
                 p.sdisp, MPI_BYTE, 0, f->sitecomm);
    if (write)
        PMPI_Gatherv(data, (int)segs->bytes, MPI_BYTE, p.data, p.nbyte, p.ddisp, MPI_BYTE, 0,
                     f->sitecomm);
    if (srank == 0 && !rc)
        rc = merged_move(f, &p, write, got);
    int64_t res[2] = {rc, 0};
    int64_t *all = NULL;
    if (srank == 0) {
        all = malloc(sizeof(int64_t) * 2 * (size_t)ssize);
        for (int r = 0; all && r < ssize; r++)
            all[2 * r] = rc, all[2 * r + 1] = got[r];
    }
    PMPI_Scatter(all, 2, MPI_INT64_T, res, 2, MPI_INT64_T, 0, f->sitecomm);
    if (!write && !res[0])
        PMPI_Scatterv(p.data, p.nbyte, p.ddisp, MPI_BYTE, data, (int)segs->bytes, MPI_BYTE, 0,
                      f->sitecomm);
    free(all), free(counts), free(got);
    parts_free(&p);
    *done = res[1];
    return (int)res[0];
}
