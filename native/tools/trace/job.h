/* job.h: a traced job as the OTF2 exporter sees it before writing events: its
 * processes (app ranks and gateways) and their files, every clock mapped onto rank 0's
 * (DIR/clocks.json), the communicators of all ranks unified into one list, and the time
 * span. Built by reading every file once (job.c). */
#ifndef ISM_TOOLS_TRACE_JOB_H
#define ISM_TOOLS_TRACE_JOB_H

#include <stdint.h>

#include "tracefile.h"
#include "umap.h"

typedef struct {
    double a, b, err;  /* t_process = a + b * t_rank0; err: the bound on the error, ns */
    int aligned;       /* 0: identity (clocks.json is missing or says it could not) */
} tr_clock;

typedef struct {
    int peer_site, peer_gw;
} tr_link;

typedef struct {
    char *path;
    int kind;          /* ISM_TR_PROC_RANK or ISM_TR_PROC_GATEWAY */
    int id;            /* global rank, or site * 65536 + gateway */
    int site;
    char host[128];
    tr_clock clk;
    int nthreads;
    uint32_t *comm_g;  /* local communicator id -> global communicator */
    uint8_t *comm_first; /* intercommunicators: 1 if my local group is the global one's A */
    uint32_t ncomm;
    tr_link *links;    /* gateways: link index -> peer */
    int nlinks;
    int has_samples;
    uint64_t lost_records; /* the LOSS records' sum */
    int ended;         /* has its END record: it closed its trace */
    uint64_t *nevents; /* per thread, filled while writing */
} tr_proc;

typedef struct {
    int inter;
    int na, nb;        /* group A (the local group of intracommunicators), group B */
    int *m;            /* na + nb global ranks */
    int world, self;
} tr_comm;

typedef struct {
    char *dir;
    int size;          /* ranks */
    int nsites;
    char **site_names;
    tr_proc *procs;
    int nprocs, nranks_files, ngw;
    tr_comm *comms;
    int ncomms;
    uint64_t t_min, t_max; /* on the common time base */
    int clocks_found;
    int with_gateways;
    int truncated;     /* files whose tail was cut short */
} tr_job;

/* Read DIR (with its gateways' files unless skip_gateways). 0, or -1 with err. */
int tr_job_load(tr_job *j, const char *dir, int skip_gateways, char *err, size_t errlen);
void tr_job_free(tr_job *j);

/* A time of process p on the common time base: ns since the earliest event. */
static inline uint64_t tr_time(const tr_job *j, const tr_proc *p, uint64_t t)
{
    double g = ((double)t - p->clk.a) / p->clk.b;
    double r = g - (double)j->t_min;
    return r > 0 ? (uint64_t)(r + 0.5) : 0;
}

#endif
