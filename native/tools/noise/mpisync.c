/* mpisync.c: node leaders, ping-pong phases and the per-node clock maps (see mpisync.h). */
#include "mpisync.h"

#include <stdlib.h>

#include "tsc.h"

#define TAG_SYNC 7301

int ism_mpisync_init(ism_mpisync *s, int rounds, int phases)
{
    s->rounds = rounds;
    s->px = NULL;
    s->npx = NULL;
    MPI_Comm_rank(MPI_COMM_WORLD, &s->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &s->size);
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, s->rank, MPI_INFO_NULL, &s->node);
    MPI_Comm_rank(s->node, &s->lrank);
    MPI_Comm_size(s->node, &s->lsize);
    s->is_leader = s->lrank == 0;
    int *flag = calloc((size_t)s->size, sizeof(int));
    s->leaders = calloc((size_t)s->size, sizeof(int));
    int ok = flag && s->leaders;
    int all_ok;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_ok) {
        free(flag);
        return -1;
    }
    MPI_Allgather(&s->is_leader, 1, MPI_INT, flag, 1, MPI_INT, MPI_COMM_WORLD);
    s->nleaders = 0;
    for (int r = 0; r < s->size; r++)
        if (flag[r])
            s->leaders[s->nleaders++] = r;
    free(flag);
    int leader_world = s->rank;
    MPI_Bcast(&leader_world, 1, MPI_INT, 0, s->node);
    s->my_node = 0;
    for (int l = 0; l < s->nleaders; l++)
        if (s->leaders[l] == leader_world)
            s->my_node = l;
    if (s->rank == 0) {
        s->px = calloc((size_t)s->nleaders, sizeof *s->px);
        s->npx = calloc((size_t)s->nleaders, sizeof *s->npx);
        if (!s->px || !s->npx)
            return -1;
        for (int l = 1; l < s->nleaders; l++)
            if (!(s->px[l] = calloc((size_t)rounds * (size_t)phases, sizeof **s->px)))
                return -1;
    }
    return 0;
}

void ism_mpisync_phase(ism_mpisync *s)
{
    for (int l = 1; l < s->nleaders; l++) {
        int peer = s->leaders[l];
        for (int k = 0; k < s->rounds; k++) {
            uint64_t v;
            if (s->rank == 0) {
                uint64_t t0 = ism_noise_now();
                MPI_Send(&t0, 1, MPI_UINT64_T, peer, TAG_SYNC, MPI_COMM_WORLD);
                MPI_Recv(&v, 1, MPI_UINT64_T, peer, TAG_SYNC, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                uint64_t t1 = ism_noise_now();
                s->px[l][s->npx[l]++] = (ism_pingpong){t0, t1, v};
            } else if (s->rank == peer) {
                MPI_Recv(&v, 1, MPI_UINT64_T, 0, TAG_SYNC, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                v = ism_noise_now();
                MPI_Send(&v, 1, MPI_UINT64_T, 0, TAG_SYNC, MPI_COMM_WORLD);
            }
        }
    }
}

void ism_mpisync_write(ism_json *j, const ism_mpisync *s, double hz)
{
    ism_json_arr(j, "nodes");
    for (int l = 0; l < s->nleaders; l++) {
        ism_clockmap m = {0, 1, 0, 0, 0, 0, 0};
        double ref = 0.0;
        if (l > 0 && s->px && s->px[l] && s->npx[l]) {
            m = ism_clocksync_fit(s->px[l], s->npx[l], (size_t)s->rounds, 0.25);
            ref = (double)s->px[l][0].t0;
        }
        ism_json_obj(j, NULL);
        ism_json_i64(j, "node", l);
        ism_json_i64(j, "leader", s->leaders[l]);
        ism_json_dbl(j, "clock_a", m.a);
        ism_json_dbl(j, "clock_b", m.b);
        /* the same map, readable: offset at the first exchange and drift */
        ism_json_dbl(j, "offset_s", (m.a + (m.b - 1.0) * ref) / hz);
        ism_json_dbl(j, "drift_ppm", (m.b - 1.0) * 1e6);
        ism_json_dbl(j, "rtt_min_s", m.rtt_min / hz);
        ism_json_dbl(j, "rtt_max_used_s", m.rtt_max_used / hz);
        ism_json_dbl(j, "offset_bound_s", m.err_first / hz);
        ism_json_u64(j, "exchanges_used", m.used);
        ism_json_end_obj(j);
    }
    ism_json_end_arr(j);
}

void ism_mpisync_free(ism_mpisync *s)
{
    if (s->px)
        for (int l = 1; l < s->nleaders; l++)
            free(s->px[l]);
    free(s->px);
    free(s->npx);
    free(s->leaders);
    MPI_Comm_free(&s->node);
}
