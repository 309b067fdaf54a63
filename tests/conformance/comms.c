/*
 * comms.c - the communicator kinds of the conformance suite.
 *
 * Ten intracommunicator kinds (world, self, dup, reversed, halved,
 * odd/even split, 2-D and 3-D Cartesian, ring graph, one rank per site) and
 * three intercommunicator-related kinds (between the two halves, between
 * odd and even ranks, and the halves' intercommunicator merged).  The
 * intercommunicators are created with MPI_ERRORS_RETURN set on the parent:
 * a library that reports MPI_ERR_UNSUPPORTED_OPERATION makes those kinds
 * unavailable, with the reason printed by main.c as a "skipped:" line.
 */
#include "conf.h"

#include <stdio.h>
#include <string.h>

const struct comm_kind comm_kinds[] = {
    {"world", "MPI_COMM_WORLD", CK_INTRA, TOPO_NONE},
    {"self", "MPI_COMM_SELF", CK_INTRA, TOPO_NONE},
    {"dup", "MPI_Comm_dup(world)", CK_INTRA, TOPO_NONE},
    {"reversed", "split of world, ranks in reverse order", CK_INTRA, TOPO_NONE},
    {"halved", "split: lower / upper half of world", CK_INTRA, TOPO_NONE},
    {"oddeven", "split: odd / even world ranks", CK_INTRA, TOPO_NONE},
    {"cart2d", "2-D Cartesian, periodic in dim 0", CK_INTRA, TOPO_CART},
    {"cart3d", "3-D Cartesian, periodic in dims 0 and 2", CK_INTRA, TOPO_CART},
    {"graph", "ring graph (next, previous)", CK_INTRA, TOPO_GRAPH},
    {"site_leaders", "one rank per site (split_type, then local rank 0)", CK_INTRA, TOPO_NONE},
    {"inter_halves", "MPI_Intercomm_create: lower half <-> upper half", CK_INTER, TOPO_NONE},
    {"inter_oddeven", "MPI_Intercomm_create: even <-> odd ranks", CK_INTER, TOPO_NONE},
    {"inter_merged", "MPI_Intercomm_merge(inter_halves)", CK_INTRA, TOPO_NONE},
};
const int n_comm_kinds = (int)(sizeof comm_kinds / sizeof comm_kinds[0]);

static int kind(const char *name)
{
    for (int i = 0; i < n_comm_kinds; i++)
        if (strcmp(comm_kinds[i].name, name) == 0)
            return i;
    return -1;
}

/* intercommunicator between the two groups of `local` (color 0/1 of a split
 * of world); the remote leader is the lowest world rank of the other color */
static int make_inter(MPI_Comm local, int other_leader, int tag, MPI_Comm *out, char *why)
{
    MPI_Comm_set_errhandler(local, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rc = MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, other_leader, tag, out);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Comm_set_errhandler(local, MPI_ERRORS_ARE_FATAL);
    int cls = MPI_SUCCESS;
    if (rc != MPI_SUCCESS)
        MPI_Error_class(rc, &cls);
    /* every rank must agree on whether the kind exists */
    int bad = rc != MPI_SUCCESS, anybad = 0, anyunsup = 0,
        unsup = cls == MPI_ERR_UNSUPPORTED_OPERATION;
    MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(&unsup, &anyunsup, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (!anybad)
        return 1;
    if (rc == MPI_SUCCESS)
        MPI_Comm_free(out);
    *out = MPI_COMM_NULL;
    if (anyunsup)
        snprintf(why, 160, "MPI_Intercomm_create returned MPI_ERR_UNSUPPORTED_OPERATION");
    else
        snprintf(why, 160, "MPI_Intercomm_create failed (error class %d)", cls);
    return 0;
}

void comms_build(MPI_Comm *comms, int *avail, char why[][160])
{
    int wr, ws;
    MPI_Comm_rank(MPI_COMM_WORLD, &wr);
    MPI_Comm_size(MPI_COMM_WORLD, &ws);
    for (int i = 0; i < n_comm_kinds; i++) {
        comms[i] = MPI_COMM_NULL;
        avail[i] = 1;
        why[i][0] = '\0';
    }
    comms[kind("world")] = MPI_COMM_WORLD;
    comms[kind("self")] = MPI_COMM_SELF;
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[kind("dup")]);
    MPI_Comm_split(MPI_COMM_WORLD, 0, ws - wr, &comms[kind("reversed")]);
    int half = (ws + 1) / 2, hcolor = wr >= half;
    MPI_Comm_split(MPI_COMM_WORLD, hcolor, wr, &comms[kind("halved")]);
    MPI_Comm_split(MPI_COMM_WORLD, wr % 2, wr, &comms[kind("oddeven")]);
    {
        int dims[2] = {0, 0}, per[2] = {1, 0};
        MPI_Dims_create(ws, 2, dims);
        MPI_Cart_create(MPI_COMM_WORLD, 2, dims, per, 0, &comms[kind("cart2d")]);
    }
    {
        int dims[3] = {0, 0, 0}, per[3] = {1, 0, 1};
        MPI_Dims_create(ws, 3, dims);
        MPI_Cart_create(MPI_COMM_WORLD, 3, dims, per, 0, &comms[kind("cart3d")]);
    }
    {
        int index[64], edges[128];
        int n = ws <= 64 ? ws : 64;
        for (int r = 0; r < n; r++) {
            index[r] = 2 * (r + 1);
            edges[2 * r] = (r + 1) % n;
            edges[2 * r + 1] = (r - 1 + n) % n;
        }
        MPI_Graph_create(MPI_COMM_WORLD, n, index, edges, 0, &comms[kind("graph")]);
    }
    {
        MPI_Comm node;
#ifdef ISTHMUS_COMM_TYPE_SITE
        MPI_Comm_split_type(MPI_COMM_WORLD, ISTHMUS_COMM_TYPE_SITE, wr, MPI_INFO_NULL, &node);
#else
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, wr, MPI_INFO_NULL, &node);
#endif
        int nr;
        MPI_Comm_rank(node, &nr);
        MPI_Comm_split(MPI_COMM_WORLD, nr == 0 ? 0 : MPI_UNDEFINED, wr,
                       &comms[kind("site_leaders")]);
        MPI_Comm_free(&node);
    }
    int ih = kind("inter_halves"), io = kind("inter_oddeven"), im = kind("inter_merged");
    if (ws < 2) {
        avail[ih] = avail[io] = avail[im] = 0;
        snprintf(why[ih], 160, "needs at least 2 ranks");
        snprintf(why[io], 160, "needs at least 2 ranks");
        snprintf(why[im], 160, "needs at least 2 ranks");
        return;
    }
    avail[ih] = make_inter(comms[kind("halved")], hcolor ? 0 : half, 4242, &comms[ih], why[ih]);
    avail[io] = make_inter(comms[kind("oddeven")], wr % 2 ? 0 : 1, 4343, &comms[io], why[io]);
    if (avail[ih]) {
        MPI_Intercomm_merge(comms[ih], hcolor, &comms[im]);
    } else {
        avail[im] = 0;
        memcpy(why[im], why[ih], 160);
    }
}

void comms_free(MPI_Comm *comms)
{
    for (int i = 0; i < n_comm_kinds; i++)
        if (comms[i] != MPI_COMM_NULL && comms[i] != MPI_COMM_WORLD && comms[i] != MPI_COMM_SELF)
            MPI_Comm_free(&comms[i]);
}
