/* handshake.h: the start-up sequence every process of a site's vendor job runs, app ranks
 * in MPI_Init (core/init.c) and gateways (gateway/main.c) alike. Its steps are vendor
 * collectives on the vendor's MPI_COMM_WORLD, so both sides must make the same calls in the
 * same order; written once here, they cannot drift apart:
 *   1. allgather of every process's role (channel.h): who is a gateway;
 *   2. split of the world by role: the app ranks' own world, and the gateways';
 *   3. dup of the world: the app<->gateway channel the frames travel on. */
#ifndef ISM_CONTRACT_HANDSHAKE_H
#define ISM_CONTRACT_HANDSHAKE_H

#include "../backend/backend.h"
#include "channel.h"

typedef struct ism_join {
    int wrank, wsize; /* in the vendor's MPI_COMM_WORLD */
    int *roles;       /* every vendor rank's role; freed by ism_join_free */
    ism_vh own;       /* the processes of my role (split) */
    ism_vh channel;   /* the app<->gateway channel (dup of the world) */
} ism_join;

/* Out of memory for the roles (vendor error codes are positive). */
#define ISM_JOIN_ENOMEM (-1)

/* Run the sequence as `role`. 0, or the vendor's error code or ISM_JOIN_ENOMEM (j is
 * then freed). */
int ism_join_site(const ism_backend *be, int role, ism_join *j);

/* The vendor ranks of `role`, in rank order, into out (may be NULL); their count. */
int ism_join_ranks(const ism_join *j, int role, int *out);

/* My index among the processes of my role (a gateway's number within its site). */
int ism_join_index(const ism_join *j);

void ism_join_free(ism_join *j);

#endif
