/* isthmus_patterns.h: helpers for applications that span sites (docs/patterns.md).
 *
 * Three patterns from running real codes across clusters joined by slow links (seed 000,
 * section 5): message aggregation per destination site, a remote-read cache shared by the
 * ranks of a site, and a domain split by measured per-site speed. They use standard MPI
 * calls only, so the same source builds against any MPI; under isthmus a rank's site is
 * MPI_Comm_split_type(ISTHMUS_COMM_TYPE_SITE), elsewhere (a plain vendor MPI, where no
 * such type exists) a site is one shared-memory node.
 *
 * Build: isthmus-cc app.c -listhmus-patterns
 *
 * Every function returns MPI_SUCCESS or an MPI error code; on error it has already printed
 * one line saying what failed (rank, site, peer, value, what is allowed) to stderr.
 */
#ifndef ISTHMUS_PATTERNS_H
#define ISTHMUS_PATTERNS_H

#include <mpi.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- sites: who is where ---- */

/* The sites of a communicator: site numbers 0..nsites-1 in the order of their lowest
 * rank in comm. Collective over comm. */
typedef struct ism_pat_sites {
    MPI_Comm comm;     /* a duplicate of the caller's communicator */
    MPI_Comm site;     /* the caller's site: its members of comm, ordered as in comm */
    int rank, size;    /* in comm */
    int my_site, nsites;
    int *site_of;      /* [size]: the site of every rank of comm */
    int *leader;       /* [nsites]: each site's lowest rank in comm */
    int *site_size;    /* [nsites]: ranks of comm at each site */
} ism_pat_sites;

int ism_pat_sites_create(MPI_Comm comm, ism_pat_sites **out);
void ism_pat_sites_free(ism_pat_sites **s);

/* ---- aggregation of small messages per destination site ---- */

/* Called once per message delivered to this rank, in the order the source sent it. */
typedef void (*ism_pat_agg_handler)(int source, int tag, const void *data, size_t len,
                                    void *ctx);

typedef struct ism_pat_agg ism_pat_agg;

/* Collective over comm. A site's buffer goes out as one message when it holds at least
 * threshold bytes (and at every flush). */
int ism_pat_agg_create(MPI_Comm comm, size_t threshold, ism_pat_agg_handler handler, void *ctx,
                       ism_pat_agg **out);
/* Queue len bytes for rank dest of comm; may deliver messages that have arrived here.
 * tag is the application's (any int). */
int ism_pat_agg_send(ism_pat_agg *a, int dest, int tag, const void *data, size_t len);
/* Deliver whatever has arrived, without waiting. */
int ism_pat_agg_poll(ism_pat_agg *a);
/* Collective: on return every message any rank sent before its flush has been delivered
 * to its handler. */
int ism_pat_agg_flush(ism_pat_agg *a);
/* Collective: flushes, then frees. */
int ism_pat_agg_free(ism_pat_agg **a);

typedef struct ism_pat_agg_stats {
    long queued;        /* messages handed to ism_pat_agg_send */
    long packets;       /* packed messages this rank sent toward sites */
    long delivered;     /* messages given to this rank's handler */
} ism_pat_agg_stats;
void ism_pat_agg_get_stats(const ism_pat_agg *a, ism_pat_agg_stats *st);

/* ---- remote-read cache: read-mostly blocks owned by one rank, fetched once per node ---- */

typedef struct ism_pat_cache ism_pat_cache;

/* Collective over comm. Rank owner passes data (nblocks blocks of block_bytes bytes, which
 * must stay valid and unchanged until ism_pat_cache_invalidate or _free); the others pass
 * NULL. A miss fetches the block and up to prefetch empty blocks after it in one MPI_Get.
 * The owner must make MPI calls now and then (any call) for others' fetches to progress. */
int ism_pat_cache_create(MPI_Comm comm, int owner, const void *data, size_t block_bytes,
                         long nblocks, int prefetch, ism_pat_cache **out);
/* *ptr points to the block in this node's shared copy (read only; valid until the next
 * invalidate or free). */
int ism_pat_cache_get(ism_pat_cache *c, long block, const void **ptr);
/* Collective: the owner has changed its data; every copy is dropped. */
int ism_pat_cache_invalidate(ism_pat_cache *c);
/* Collective. */
int ism_pat_cache_free(ism_pat_cache **c);

typedef struct ism_pat_cache_stats {
    long reads;          /* ism_pat_cache_get calls */
    long hits;           /* found present */
    long waits;          /* found missing or being fetched by another rank of the node */
    long fetches;        /* MPI_Get calls this rank made (each one round trip to the owner) */
    long blocks_fetched; /* blocks those brought */
} ism_pat_cache_stats;
void ism_pat_cache_get_stats(const ism_pat_cache *c, ism_pat_cache_stats *st);

/* ---- speed-weighted decomposition of a 1-D domain (or the rows of a 2-D one) ---- */

typedef struct ism_pat_decomp ism_pat_decomp;

/* Collective. n cells over the ranks of comm, contiguous ranges in rank order, at least one
 * cell each; weight (rank 0's is used, or NULL for equal) sets the first split, e.g. from
 * an earlier run's speeds. */
int ism_pat_decomp_create(MPI_Comm comm, long n, const double *weight, ism_pat_decomp **out);
/* This rank's range. */
void ism_pat_decomp_range(const ism_pat_decomp *d, long *first, long *count);
/* Every rank's: [size + 1] starts, the last is n. */
const long *ism_pat_decomp_firsts(const ism_pat_decomp *d);
/* Collective. compute_s: this rank's time computing its cells since the last rebalance;
 * comm_s: its time communicating (halo waits) over the same steps. Splits again when the
 * predicted step time improves by more than tolerance (0.05 = 5 %); then, if data is not
 * NULL, *data (malloc'd, the rank's cells of cell_bytes each) is replaced by its new cells. */
int ism_pat_decomp_rebalance(ism_pat_decomp *d, double compute_s, double comm_s,
                             double tolerance, void **data, size_t cell_bytes, int *changed);
void ism_pat_decomp_free(ism_pat_decomp **d);

#ifdef __cplusplus
}
#endif
#endif
