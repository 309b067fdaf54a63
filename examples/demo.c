/* demo.c: the program `isthmus demo` builds with isthmus-cc and runs as 2 sites x 2 ranks.
 *
 * A plain MPI-1 program (it knows nothing about isthmus): it shows where every rank runs,
 * passes a token around a ring, measures ping-pong latency inside a site and across sites,
 * checks MPI_Allreduce results, and has rank 0 print "all results correct" only if every
 * check on every rank passed (else it names the failed checks and every rank returns 1).
 *
 * The site of each rank is read from the environment variable ISTHMUS_SITE (set by
 * `isthmus run`) and shared with MPI_Allgather; when it is unset (a plain vendor mpirun)
 * every rank counts as one site. Works on any number of ranks; 4 or more even is the
 * intended shape.
 *
 * MPI calls used: Init, Comm_rank, Comm_size, Get_processor_name, Send, Recv, Sendrecv,
 * Allgather, Allreduce, Barrier, Wtime, Finalize.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RING_LAPS 3
#define PP_WARMUP 100
#define PP_ITERS 1000
#define VEC_LEN 1000
#define NAME_LEN 64

#define TAG_PLACE 11
#define TAG_RING 12
#define TAG_PP 13
#define TAG_NEIGH 14

enum { CHK_RING, CHK_NEIGH, CHK_PINGPONG, CHK_SUM, CHK_MAX, CHK_COUNT };
static const char *check_names[CHK_COUNT] = {"ring", "neighbour-exchange", "ping-pong",
                                             "allreduce-sum", "allreduce-max"};

static int rank, size;

/* Name of site index `s` from ISTHMUS_SITE_NAMES ("A,B,..."), else its number. */
static void site_name(int s, char *out, size_t n) {
    const char *names = getenv("ISTHMUS_SITE_NAMES");
    if (s < 0) {
        snprintf(out, n, "-");
        return;
    }
    if (names != NULL) {
        int idx = 0;
        const char *p = names;
        while (idx < s && (p = strchr(p, ',')) != NULL) {
            p++;
            idx++;
        }
        if (p != NULL && idx == s) {
            size_t len = strcspn(p, ",");
            if (len >= n) len = n - 1;
            memcpy(out, p, len);
            out[len] = '\0';
            return;
        }
    }
    snprintf(out, n, "%d", s);
}

/* 1. Placement: rank 0 prints every rank's host and site. */
static void placement(const int *sites) {
    char host[MPI_MAX_PROCESSOR_NAME];
    int len = 0;
    memset(host, 0, sizeof host);
    MPI_Get_processor_name(host, &len);
    if (rank != 0) {
        MPI_Send(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, TAG_PLACE, MPI_COMM_WORLD);
        return;
    }
    printf("isthmus demo: %d ranks\n\n", size);
    printf("  %-5s %-8s %s\n", "rank", "site", "host");
    for (int r = 0; r < size; r++) {
        char other[MPI_MAX_PROCESSOR_NAME];
        char sname[NAME_LEN];
        if (r == 0) {
            memcpy(other, host, sizeof other);
        } else {
            MPI_Recv(other, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, r, TAG_PLACE, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            other[MPI_MAX_PROCESSOR_NAME - 1] = '\0';
        }
        site_name(sites[r], sname, sizeof sname);
        printf("  %-5d %-8s %s\n", r, sname, other);
    }
    printf("\n");
    fflush(stdout);
}

/* 2. Ring: a token goes RING_LAPS times around all ranks, each adding its rank. Every
 * receiver checks the value it gets against the closed form. Then a neighbour exchange
 * with MPI_Sendrecv (send right, receive from the left). */
static void ring(int *ok) {
    const long lap_sum = (long)size * (size - 1) / 2;
    const long expected = RING_LAPS * lap_sum;
    long token = 0;
    int right = (rank + 1) % size, left = (rank + size - 1) % size;

    if (size == 1) {
        token = expected; /* nothing to pass around */
    } else {
        for (int lap = 0; lap < RING_LAPS; lap++) {
            if (rank == 0) {
                if (lap > 0) {
                    MPI_Recv(&token, 1, MPI_LONG, left, TAG_RING, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    if (token != lap * lap_sum) ok[CHK_RING] = 0;
                }
                token += rank;
                MPI_Send(&token, 1, MPI_LONG, right, TAG_RING, MPI_COMM_WORLD);
            } else {
                MPI_Recv(&token, 1, MPI_LONG, left, TAG_RING, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                if (token != lap * lap_sum + (long)rank * (rank - 1) / 2) ok[CHK_RING] = 0;
                token += rank;
                MPI_Send(&token, 1, MPI_LONG, right, TAG_RING, MPI_COMM_WORLD);
            }
        }
        if (rank == 0) {
            MPI_Recv(&token, 1, MPI_LONG, left, TAG_RING, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (token != expected) ok[CHK_RING] = 0;
        }
    }

    int from_left = -1;
    MPI_Sendrecv(&rank, 1, MPI_INT, right, TAG_NEIGH, &from_left, 1, MPI_INT, left, TAG_NEIGH,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (from_left != left) ok[CHK_NEIGH] = 0;

    if (rank == 0) {
        printf("ring: token passed %d times around %d ranks: %ld (expected %ld) %s\n", RING_LAPS,
               size, token, expected, token == expected ? "ok" : "WRONG");
        printf("neighbour exchange (MPI_Sendrecv): %s\n\n", ok[CHK_NEIGH] ? "ok" : "WRONG");
        fflush(stdout);
    }
}

/* One ping-pong between rank 0 and `peer`; returns one-way latency in microseconds on
 * rank 0 (0 elsewhere). The 8-byte payload carries the iteration number, echoed back. */
static double pingpong(int peer, int *ok) {
    double t0 = 0.0;
    long long msg;
    if (rank != 0 && rank != peer) return 0.0;
    for (int i = 0; i < PP_WARMUP + PP_ITERS; i++) {
        if (i == PP_WARMUP) t0 = MPI_Wtime();
        if (rank == 0) {
            msg = i;
            MPI_Send(&msg, 8, MPI_BYTE, peer, TAG_PP, MPI_COMM_WORLD);
            MPI_Recv(&msg, 8, MPI_BYTE, peer, TAG_PP, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (msg != (long long)i + 1) ok[CHK_PINGPONG] = 0;
        } else {
            MPI_Recv(&msg, 8, MPI_BYTE, 0, TAG_PP, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (msg != (long long)i) ok[CHK_PINGPONG] = 0;
            msg += 1;
            MPI_Send(&msg, 8, MPI_BYTE, 0, TAG_PP, MPI_COMM_WORLD);
        }
    }
    if (rank != 0) return 0.0;
    return (MPI_Wtime() - t0) / (2.0 * PP_ITERS) * 1e6;
}

/* 3. Ping-pong latency: rank 0 with a rank of its own site and with a rank of another
 * site (from the site table); without site information, ranks 1 and size/2. */
static void latency(const int *sites, int *ok) {
    int inside = -1, across = -1;
    int have_sites = 0;
    for (int r = 0; r < size; r++)
        if (sites[r] != sites[0]) have_sites = 1;
    if (have_sites) {
        for (int r = 1; r < size; r++) {
            if (inside < 0 && sites[r] == sites[0]) inside = r;
            if (across < 0 && sites[r] != sites[0]) across = r;
        }
    } else if (size > 1) {
        inside = 1;
        across = size / 2 != 1 ? size / 2 : -1;
    }

    double lat_in = 0.0, lat_across = 0.0;
    if (inside > 0) lat_in = pingpong(inside, ok);
    MPI_Barrier(MPI_COMM_WORLD);
    if (across > 0) lat_across = pingpong(across, ok);
    MPI_Barrier(MPI_COMM_WORLD);

    if (rank != 0) return;
    const char *across_label = have_sites ? "across sites" : "same site, no site info";
    printf("ping-pong, 8 bytes, %d iterations after %d warm-up (one-way latency):\n", PP_ITERS,
           PP_WARMUP);
    if (inside > 0)
        printf("  rank 0 <-> rank %-4d %-25s %10.2f us\n", inside, "(inside a site)", lat_in);
    else
        printf("  inside a site: no second rank on rank 0's site\n");
    if (across > 0) {
        char label[40];
        snprintf(label, sizeof label, "(%s)", across_label);
        printf("  rank 0 <-> rank %-4d %-25s %10.2f us\n", across, label, lat_across);
    } else {
        printf("  across sites: no rank on another site\n");
    }
    if (inside > 0 && across > 0 && lat_in > 0.0)
        printf("  ratio: %.1fx\n", lat_across / lat_in);
    printf("\n");
    fflush(stdout);
}

/* 4. Allreduce: a 1000-double vector with MPI_SUM (rank r contributes r + i at index i,
 * so element i must be size*(size-1)/2 + size*i) and one int with MPI_MAX. */
static void reductions(int *ok) {
    static double in[VEC_LEN], out[VEC_LEN];
    for (int i = 0; i < VEC_LEN; i++) in[i] = (double)rank + (double)i;
    MPI_Allreduce(in, out, VEC_LEN, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    int bad = 0;
    for (int i = 0; i < VEC_LEN; i++) {
        double want = (double)size * (size - 1) / 2.0 + (double)size * i;
        if (out[i] != want) bad++;
    }
    if (bad) ok[CHK_SUM] = 0;

    int mine = 3 * rank + 1, max = -1;
    MPI_Allreduce(&mine, &max, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (max != 3 * (size - 1) + 1) ok[CHK_MAX] = 0;

    if (rank == 0) {
        printf("allreduce: sum of %d doubles: %s; max of ints: %d (expected %d) %s\n", VEC_LEN,
               bad ? "WRONG" : "ok", max, 3 * (size - 1) + 1, ok[CHK_MAX] ? "ok" : "WRONG");
        fflush(stdout);
    }
}

int main(int argc, char **argv) {
    int ok[CHK_COUNT], all_ok[CHK_COUNT];
    for (int i = 0; i < CHK_COUNT; i++) ok[i] = 1;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    int my_site = 0;
    const char *env_site = getenv("ISTHMUS_SITE");
    if (env_site != NULL && *env_site != '\0') my_site = atoi(env_site);
    int *sites = malloc(sizeof(int) * (size_t)size);
    if (sites == NULL) {
        fprintf(stderr, "demo: out of memory\n");
        MPI_Finalize();
        return 1;
    }
    MPI_Allgather(&my_site, 1, MPI_INT, sites, 1, MPI_INT, MPI_COMM_WORLD);
    if (env_site == NULL || *env_site == '\0')
        for (int r = 0; r < size; r++) sites[r] = -1; /* one site, shown as "-" */

    placement(sites);
    MPI_Barrier(MPI_COMM_WORLD);
    ring(ok);
    MPI_Barrier(MPI_COMM_WORLD);
    latency(sites, ok);
    reductions(ok);

    MPI_Allreduce(ok, all_ok, CHK_COUNT, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    int passed = 1;
    for (int i = 0; i < CHK_COUNT; i++)
        if (!all_ok[i]) passed = 0;
    if (rank == 0) {
        if (passed) {
            printf("\nall results correct\n");
        } else {
            printf("\nFAILED checks:");
            for (int i = 0; i < CHK_COUNT; i++)
                if (!all_ok[i]) printf(" %s", check_names[i]);
            printf("\n");
        }
        fflush(stdout);
    }
    free(sites);
    MPI_Finalize();
    return passed ? 0 : 1;
}
