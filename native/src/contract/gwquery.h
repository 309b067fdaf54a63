/* gwquery.h: what a gateway tells its app ranks about itself (ISM_F_QUERY -> ISM_F_ANSWER,
 * frame.h), for libisthmus's MPI_T performance variables: the counters `isthmus run
 * --stats` prints, per gateway, per link and per connection (stream), and the gateway's
 * clock. The payload is little-endian 64-bit words: ISM_GWQ_HEAD words, then
 * ISM_GWQ_LINK words per link, then ISM_GWQ_STREAM words per stream of each link in link
 * order. Written by gateway/query.c, read by core/gwquery.c. */
#ifndef ISM_CONTRACT_GWQUERY_H
#define ISM_CONTRACT_GWQUERY_H

#define ISM_GWQ_VERSION 1

enum { /* the head */
    ISM_GWQ_H_VERSION,
    ISM_GWQ_H_CLOCK_NS,    /* the gateway's CLOCK_MONOTONIC when it answered */
    ISM_GWQ_H_NLINKS,
    ISM_GWQ_H_NSTREAMS,    /* over all links */
    ISM_GWQ_H_HELD,        /* bytes in pool buffers now */
    ISM_GWQ_H_PEAK,        /* the most ever */
    ISM_GWQ_H_POOL,        /* buffers in the pool */
    ISM_GWQ_H_CHUNK,       /* bytes per buffer */
    ISM_GWQ_HEAD
};

enum { /* one link */
    ISM_GWQ_L_SITE,
    ISM_GWQ_L_GW,
    ISM_GWQ_L_STATE,       /* 0 down, 1 resuming, 2 up */
    ISM_GWQ_L_NSTREAMS,
    ISM_GWQ_L_TX_MSGS,
    ISM_GWQ_L_TX_BYTES,
    ISM_GWQ_L_TX_FRAMES,
    ISM_GWQ_L_TX_EARLY,    /* payload bytes of early data sent */
    ISM_GWQ_L_FLOW_PASSED,
    ISM_GWQ_L_RX_MSGS,
    ISM_GWQ_L_RX_BYTES,
    ISM_GWQ_L_RX_FRAMES,
    ISM_GWQ_L_RECONNECTS,
    ISM_GWQ_L_RESENT,
    ISM_GWQ_L_DUPLICATES,
    ISM_GWQ_L_CRC_ERRORS,
    ISM_GWQ_L_SRTT_NS,     /* the heartbeat round trip, smoothed (0: not measured) */
    ISM_GWQ_L_MIN_RTT_NS,
    ISM_GWQ_LINK
};

enum { /* one stream (TCP connection, or the link's reliable-UDP connection) */
    ISM_GWQ_S_SRTT_NS,     /* the transport's smoothed round trip (0: unknown) */
    ISM_GWQ_S_MIN_RTT_NS,
    ISM_GWQ_S_CWND,        /* congestion window, bytes */
    ISM_GWQ_S_PACING,      /* pacing rate, bytes/s (0: none) */
    ISM_GWQ_STREAM
};

#endif
