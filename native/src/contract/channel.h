/* channel.h: how an app rank and its gateway find and talk to each other inside a site's
 * vendor MPI job. Both are ranks of one vendor MPI_COMM_WORLD; at start-up each says its
 * role (handshake.c), and afterwards frames travel as vendor messages with the tags below
 * on a duplicate of that world. Which gateway serves which app rank is fixed here, since
 * both sides and the gateways of other sites route by it. */
#ifndef ISM_CONTRACT_CHANNEL_H
#define ISM_CONTRACT_CHANNEL_H

/* a process's role in its site's vendor job */
enum ism_role { ISM_ROLE_APP = 0, ISM_ROLE_GATEWAY = 1 };

/* vendor tags on the app<->gateway channel */
#define ISM_TAG_APP2GW 1
#define ISM_TAG_GW2APP 2

/* The gateway (0 .. ngw-1 of its site) that carries the frames of the app rank with this
 * local rank: one fixed path per pair of ranks keeps MPI's non-overtaking order. */
static inline int ism_gw_of_local(int local_rank, int ngw)
{
    return local_rank % ngw;
}

#endif
