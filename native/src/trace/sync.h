/* sync.h: the trace's clocks on one time base, that of world rank 0.
 *
 * As the noise toolkit does (native/tools/noise/clocksync.h), processes exchange
 * ping-pongs at MPI_Init and again at MPI_Finalize, and a least-squares line through the
 * fastest exchanges of both phases maps one clock onto the other: offset and drift.
 * Here the exchanges follow a tree, so no rank waits for all others: rank 0 with the
 * first rank of every (site, host) group, those leaders with the other ranks of their
 * group, and the first ranks of a site with that site's gateways (through libisthmus's
 * MPI_T variable isthmus_gw_clock_ns). Each process's map is the composition along its
 * path from rank 0; its error bound is the sum of half the shortest round trips along
 * it. Rank 0 gathers the exchanges and writes DIR/clocks.json; every process also keeps
 * its own exchanges as SYNC records.
 */
#ifndef ISM_TRACE_SYNC_H
#define ISM_TRACE_SYNC_H

void ism_tr_sync_start(void); /* collective, in MPI_Init */
void ism_tr_sync_stop(void);  /* collective, in MPI_Finalize: writes clocks.json */

#endif
