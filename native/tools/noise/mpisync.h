/* mpisync.h: node clocks onto one time base in an MPI job. Node leaders are the first
 * rank of each shared-memory node (MPI_Comm_split_type); world rank 0 ping-pongs with
 * each leader in phases (before and after a run), and fits each leader's clock map
 * (clocksync.h). Used by mpi-jitter and by the single-core probes run with --mpi. */
#ifndef ISM_NOISE_MPISYNC_H
#define ISM_NOISE_MPISYNC_H

#include <mpi.h>
#include <stddef.h>

#include "clocksync.h"
#include "json.h"

typedef struct {
    int rank, size, lrank, lsize;
    MPI_Comm node;
    int nleaders, *leaders;  /* world ranks of the node leaders, ascending (rank 0 first) */
    int is_leader, my_node;  /* my node's index in leaders[] */
    int rounds;              /* exchanges per leader per phase */
    ism_pingpong **px;       /* rank 0: exchanges per leader */
    size_t *npx;
} ism_mpisync;

/* Collective over MPI_COMM_WORLD. 0, or -1 when out of memory. */
int ism_mpisync_init(ism_mpisync *s, int rounds, int phases);
/* One phase of ping-pongs (collective). */
void ism_mpisync_phase(ism_mpisync *s);
/* Rank 0: the "nodes" array (leader, map, offset and drift, round trip). */
void ism_mpisync_write(ism_json *j, const ism_mpisync *s, double hz);
void ism_mpisync_free(ism_mpisync *s);

#endif
