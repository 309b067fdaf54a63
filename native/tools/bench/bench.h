/*
 * bench.h - what the parts of isthmus-bench share: the parsed options, the run context
 * (ranks, identity of every rank, configuration string), a measurement point, and the
 * driver that turns a benchmark's sample function into warm-up, repetitions, statistics
 * and one output record per point.
 *
 * Only standard MPI calls are used, so the same sources build with any vendor's mpicc
 * and with isthmus-cc (against isthmus's mpi.h and libisthmus).
 */
#ifndef ISM_BENCH_H
#define ISM_BENCH_H

#include <mpi.h>
#include <stddef.h>

#define ISM_BENCH_VERSION "0.1.0"
#define ISM_BENCH_MAX_LIST 64
#define ISM_BENCH_NAME_LEN 64

enum ism_bench_background { BG_NONE, BG_PAIRS, BG_ALLTOALL };

typedef struct {
    const char *benchmark;
    long long sizes[ISM_BENCH_MAX_LIST];
    int nsizes;
    int sizes_given;
    long iters;          /* per repetition; 0 = default by size */
    long warmup;         /* -1 = default (one repetition's worth) */
    int reps;
    int window;
    int peer;
    int partners[ISM_BENCH_MAX_LIST];
    int npartners;
    double fractions[ISM_BENCH_MAX_LIST];
    int nfractions;
    enum ism_bench_background background;
    long long bg_size;
    int bg_pairs[ISM_BENCH_MAX_LIST][2];
    int nbg_pairs;
    char ops[ISM_BENCH_MAX_LIST][24];
    int nops;
    int nonblocking;
    int via_coll;        /* loggp: messages as two-rank broadcasts (--via coll) */
    char algs[ISM_BENCH_MAX_LIST][48]; /* coll --algs: libisthmus choices, measured in turns */
    int nalgs;
    int algs_wan;        /* --algs-wan: the choice is for the phase among the sites' leaders */
    int json;
    double max_time;     /* seconds per point; 0 = no limit */
    const char *label;
    const char *link;
    int argc;
    char **argv;
} ism_bench_opts;

typedef struct {
    MPI_Comm world;
    int rank, nranks;
    ism_bench_opts opt;
    char (*host)[ISM_BENCH_NAME_LEN];   /* processor name of every rank */
    char (*site)[ISM_BENCH_NAME_LEN];   /* site of every rank */
    char *config_json;                  /* the "config" object every record carries */
    char timer_json[640];               /* MPI_Wtime's check (timer.c), in config_json */
    double timer_resolution_us;         /* the finest time MPI_Wtime shows, worst rank (timer.c) */
    char *library;                      /* MPI_Get_library_version, first line */
    int header_done;
    char last_header[256];
} ism_bench_ctx;

/* One measurement point: what is reported, and its parameters (already JSON and text). */
typedef struct {
    const char *benchmark;
    const char *metric;      /* "latency", "bandwidth", "rate", "time" */
    const char *unit;        /* "us", "MB/s", "msg/s" */
    long long size;
    long iters, warmup;
    char params_json[512];   /* ,"peer":1,... (leading comma) or "" */
    char params_text[128];   /* leading columns for people, e.g. "peer=3 other-site" */
    char header_text[128];   /* column titles of params_text */
    int timed_per_call;      /* each call timed on its own (loggp's overheads), not the loop */
} ism_bench_point;

/* A sample function runs `iters` iterations on every participating rank and returns the
 * metric at control-rank 0 (other ranks' return values are ignored). */
typedef double (*ism_bench_sample_fn)(ism_bench_ctx *c, void *arg, long iters);

/* Warm-up, repetitions, statistics, output. Called by every rank of `ctl`, whose rank 0
 * must be world rank 0 (the reporter). */
void ism_bench_run_point(ism_bench_ctx *c, ism_bench_point *p, MPI_Comm ctl,
                         ism_bench_sample_fn fn, void *arg);

/* n points measured in turns: repetition r of every point before repetition r + 1 of
 * any (each round starting one point further on), after every point's warm-up, so that a
 * slow stretch of the machine falls on all of them alike. For comparing algorithms of
 * one collective within one launch. fn(c, args[i], iters) measures point i. */
void ism_bench_run_interleaved(ism_bench_ctx *c, ism_bench_point *p, int n, MPI_Comm ctl,
                               ism_bench_sample_fn fn, void **args);

/* A point that could not be measured (e.g. too few ranks for a fraction): reported with
 * status "skipped" and the reason, never silently left out. Rank 0 only. */
void ism_bench_report_skipped(ism_bench_ctx *c, ism_bench_point *p, const char *reason);

/* Point set-up helpers */
void ism_bench_point_init(ism_bench_ctx *c, ism_bench_point *p, const char *metric,
                          const char *unit, long long size);
void ism_bench_param_int(ism_bench_point *p, const char *key, long long v);
void ism_bench_param_str(ism_bench_point *p, const char *key, const char *v);
/* in_columns = 0: JSON only (a detail people need not see in the table) */
void ism_bench_param_num(ism_bench_point *p, const char *key, double v, int in_columns);

/* Iterations and warm-up for a point of this size (options or defaults). */
long ism_bench_iters(const ism_bench_ctx *c, long long size);
long ism_bench_warmup(const ism_bench_ctx *c, long iters);

/* Buffers: page-aligned, zero-filled; exits with a message naming the size on failure. */
void *ism_bench_alloc(ism_bench_ctx *c, size_t bytes);

/* Fatal usage error from every rank (only rank 0 prints); ends the program with code 2. */
_Noreturn void ism_bench_usage_error(ism_bench_ctx *c, const char *fmt, ...);

/* Ping-pong of n bytes with `peer` on comm; one-way latency in us (p2p.c). */
double ism_bench_pingpong_us(ism_bench_ctx *c, MPI_Comm comm, int peer, int initiator, int n,
                             void *sbuf, void *rbuf, long iters);

/* Benchmarks: each runs all its points. */
void ism_bench_latency(ism_bench_ctx *c);
void ism_bench_bw(ism_bench_ctx *c);
void ism_bench_bibw(ism_bench_ctx *c);
void ism_bench_msgrate(ism_bench_ctx *c);
void ism_bench_placement(ism_bench_ctx *c);
void ism_bench_one2many(ism_bench_ctx *c);
void ism_bench_many2one(ism_bench_ctx *c);
void ism_bench_interference(ism_bench_ctx *c);
void ism_bench_coll(ism_bench_ctx *c);
void ism_bench_a2a_fraction(ism_bench_ctx *c);
void ism_bench_loggp(ism_bench_ctx *c);

/* MPI_Wtime checked on every rank (timer.c): back-to-back reads with the noise probes'
 * timer check; fills timer_json and timer_resolution_us, and ends the program (code 2, a
 * message naming the rank) when the clock is unusable on any rank. */
void ism_bench_check_timer(ism_bench_ctx *c);
/* For a point timed one call at a time: a note when its value is within 10x of what the
 * clock resolves (then one read's or one step's error is over 10 % of it); 0 if none. */
int ism_bench_timer_note(const ism_bench_ctx *c, const ism_bench_point *p, double value_us, char *out,
                         size_t len);

/* Options (options.c) */
int ism_bench_parse_options(int argc, char **argv, ism_bench_opts *o, char *err, size_t errlen);
void ism_bench_print_usage(void);
/* Collective names known to the coll benchmark (coll.c). */
int ism_bench_coll_known(const char *name);
const char *ism_bench_coll_list(void);

/* JSON string escaping into buf (report.c); returns buf. */
char *ism_bench_json_escape(const char *s, char *buf, size_t len);

#endif
