/* mpijitter.h: the MPI-Jitter probe (seed 003, 4.3): per iteration a random busy delay,
 * a collective, a fixed compute phase timed on every rank, and the collective again.
 * Per rank t_compute and t_all; per iteration t_lost = max - mean of t_compute; overall
 * lost_rel = mean(t_lost) / mean(t_compute). */
#ifndef ISM_NOISE_MPIJITTER_H
#define ISM_NOISE_MPIJITTER_H

typedef struct {
    int iterations;
    double compute_us;
    double max_delay_us;
    const char *collective;  /* barrier, allreduce, alltoall */
    const char *cpus;        /* pin rank i (node-local or world, see pin_world) to the i-th cpu of this list */
    int pin_world;           /* 1: index cpus by world rank (sites emulated on one host) */
    const char *out_dir;
    int raw;
    int sync_rounds;
    unsigned seed;
    const char *argv_line;
    const char *priority;    /* ranks measure at this priority (prio.h), or NULL */
} ism_mpijitter_opts;

int ism_mpijitter_run(const ism_mpijitter_opts *o, int *argc, char ***argv);

#endif
