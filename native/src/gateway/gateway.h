/* gateway.h: the gateway's state, shared by its startup, link and event-loop files.
 *
 * A gateway is an extra rank of its site's vendor MPI job. It takes frames from the
 * site's app ranks over the vendor MPI and puts them on authenticated TCP links to the
 * gateways of the other sites, and the other way round. All payload memory comes from
 * one fixed pool of buffers; when the pool is empty the gateway stops taking new frames
 * (from apps and from links) until buffers come back, so its memory is bounded.
 */
#ifndef ISM_GATEWAY_H
#define ISM_GATEWAY_H

#include <stddef.h>
#include <stdint.h>

#include "../backend/backend.h"
#include "../wan/auth.h"
#include "../wan/frame.h"

typedef struct gw_buf {
    struct gw_buf *next;
    size_t len;     /* bytes used: header + payload */
    int pooled;     /* 0: a small control frame allocated on its own */
    char *data;
} gw_buf;

typedef struct gw_link {
    int fd;
    int site, gw;         /* the peer */
    int up, fin_sent, fin_recv;
    gw_buf *txq, *txq_tail;
    size_t tx_off;
    uint8_t rxhdr[ISM_FRAME_HDR_SIZE];
    size_t rx_have;       /* bytes of the current frame read so far */
    ism_frame_hdr rxh;
    gw_buf *rxbuf;
    int64_t last_rx_ms, last_tx_ms;
    uint64_t tx_frames, tx_bytes, tx_msgs, rx_frames, rx_bytes, rx_msgs;
} gw_link;

typedef struct gw_slot {
    gw_buf *buf;
    ism_vh vreq;
} gw_slot;

typedef struct gw_pending {
    gw_buf *buf;
    ism_vh vreq;
} gw_pending;

typedef struct gw_state {
    const ism_backend *be;
    int nsites, site, gwidx, ngw_here;
    int *site_ranks, *site_off, *site_gws;
    char **site_names;
    char **site_hosts;
    int *site_ports;
    ism_vh vworld, vgw, vown;
    int napps, *app_vrank; /* local app rank -> vendor world rank */
    int apps_mine;         /* apps that send through this gateway */
    int apps_fin;
    ism_auth_key key;
    int listen_fd;
    int nlinks;
    gw_link *links;        /* one per gateway of every other site */
    /* pool */
    size_t bufsize;
    gw_buf *pool;
    int pool_total, pool_free;
    size_t held_bytes, peak_bytes;
    /* vendor side */
    int nslots;
    gw_slot *slots;        /* posted receives from apps, in posting order (ring) */
    int slot_head, slot_count;
    gw_pending *pend;      /* sends to apps in flight */
    int npend, pendcap;
    int64_t link_timeout_ms, connect_timeout_ms;
    int idle_max_us, idle_deep_us;
    int stats;
} gw_state;

extern gw_state gw;

void gw_die(int code, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));
void gw_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* pool */
gw_buf *gw_buf_get(void);
gw_buf *gw_buf_small(size_t len);
void gw_buf_put(gw_buf *b);

/* links.c */
void gw_links_connect(void);
void gw_link_send(gw_link *l, gw_buf *b);
gw_link *gw_link_for(int dst_global);
int gw_link_read(gw_link *l);
int gw_link_write(gw_link *l);
void gw_link_control(gw_link *l, int type, uint64_t a, const char *text);
void gw_accept_intruder(void);
int gw_flush_links(int64_t deadline_ms);

/* loop.c */
void gw_deliver_local(gw_buf *b, const ism_frame_hdr *h);
void gw_route_from_link(gw_link *l, gw_buf *b);
void gw_loop(void);
void gw_cancel_receives(void);
void gw_abort_job(int code, const char *reason) __attribute__((noreturn));

#endif
