/* inject.h: the noise injector: periodic busy bursts on one cpu, at a chosen scheduling
 * priority, so the probes and the analysis can be checked against a known disturbance. */
#ifndef ISM_NOISE_INJECT_H
#define ISM_NOISE_INJECT_H

typedef struct {
    double period_s;
    double burst_s;
    int cpu;                /* -1: not pinned */
    const char *priority;   /* "fifo:N", "rr:N", "nice:N", or "normal" */
    double run_s;           /* 0: until SIGINT/SIGTERM */
    const char *log_path;   /* JSON with every burst's start and end ticks, or NULL */
    unsigned long max_log;  /* bursts kept in the log (more are counted) */
} ism_inject_opts;

/* Returns a process exit code; errors are printed naming the option at fault. */
int ism_inject_run(const ism_inject_opts *o);

#endif
