/* admit.h: who may be in the middle of authenticating, for the tools' servers
 * (isthmus-copy serve, isthmus-linkprobe serve) that run the blocking job-secret
 * handshake (wan/auth.h) in one thread per connection.
 *
 * A connection is "pending" from accept until its handshake ended. Pending connections
 * have a budget of their own, separate from the slots of authenticated ones, so
 * strangers can never take those. A new connection is always let in: when the budget
 * is full, the pending connection that has to go is the oldest one of the source
 * address that holds the most (shutdown(2): its handshake fails at once). One address
 * therefore only ever displaces its own connections once another address is pending,
 * and a flood from many addresses displaces the oldest first, which are the idle ones,
 * since a handshake of a client that holds the secret takes a few round trips. Each
 * server also gives a pending connection a fixed time (ISM_ADMIT_PREAUTH_MS) that does
 * not depend on its idle limit for transfers. docs/design.md, "Strangers and slots".
 */
#ifndef ISM_TOOLS_ADMIT_H
#define ISM_TOOLS_ADMIT_H

#include <pthread.h>
#include <stdint.h>
#include <sys/socket.h>

/* From accept to the end of the handshake (and of the request or HELLO that travels
 * with it): long enough for a few round trips of the longest links and a lost packet
 * or two, short enough that an idle stranger holds nothing for long. */
#define ISM_ADMIT_PREAUTH_MS 5000

typedef struct ism_admit_entry {
    struct ism_admit_entry *next;
    int fd;
    uint8_t addr[16]; /* the peer's IP address (not its port) */
    uint8_t alen;
    int dropped;
    uint64_t seq; /* arrival order: lower is older */
} ism_admit_entry;

typedef struct ism_admit {
    pthread_mutex_t mu;
    pthread_cond_t left; /* an entry left: room, or a drain may end */
    ism_admit_entry *head;
    int budget;
    int pending; /* entries not dropped */
    int entries; /* all, dropped ones whose thread has not left yet included */
    uint64_t seq;
} ism_admit;

void ism_admit_init(ism_admit *a, int budget);
void ism_admit_destroy(ism_admit *a);

/* Register the accepted connection fd from sa as pending (e is the caller's, and stays
 * registered until ism_admit_leave). When the budget is full, first drops one pending
 * connection as described above. Returns 1 if one was dropped, else 0. */
int ism_admit_enter(ism_admit *a, ism_admit_entry *e, int fd, const struct sockaddr *sa,
                    socklen_t salen);
/* The handshake ended, either way; call before closing fd. 0: the connection is still
 * admitted; -1: it was dropped meanwhile (close it, whatever the handshake said). */
int ism_admit_leave(ism_admit *a, ism_admit_entry *e);
/* Block while the dropped connections not yet gone, with the pending ones, fill twice
 * the budget (their threads exit within moments of the shutdown), so a flood cannot
 * pile up threads faster than they end. */
void ism_admit_wait_room(ism_admit *a);
/* Drop every pending connection and wait until all have left. */
void ism_admit_drain(ism_admit *a);

#endif
