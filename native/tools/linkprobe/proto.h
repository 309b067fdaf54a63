/* proto.h: the wire format between isthmus-linkprobe's client and server.
 *
 * After the job-secret handshake (wan/auth.h) the client sends one 32-byte HELLO saying
 * what the connection is for; the server validates every field before acting on it.
 *   rtt:  then `size`-byte messages are echoed back one at a time until EOF;
 *   setup: the server opens a data port whose listening socket has the requested
 *         receive buffer (it must be set before the handshake to take effect), answers
 *         with its number (PORT: u32, 1..65535), and closes it when this connection
 *         closes; the data port takes connections from this connection's address only;
 *   tput: (to the data port) the client streams bytes until it shuts down its sending
 *         side; the server counts them and answers with a 32-byte REPORT.
 * Little-endian. HELLO: magic "ISLP" u32 | version u8 | mode u8 | stream u8 | nstreams u8 |
 * size u32 | window u32 | omit_ms u32 | zero u32 | session u64.
 * REPORT: magic "ISLR" u32 | zero u32 | bytes u64 | bytes after omit u64 | ns after omit u64.
 */
#ifndef ISM_LINKPROBE_PROTO_H
#define ISM_LINKPROBE_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define LP_HELLO_SIZE 32
#define LP_REPORT_SIZE 32
#define LP_VERSION 1
#define LP_MAX_SIZE (16u << 20)   /* largest rtt message */
#define LP_MAX_WINDOW (1u << 30)
#define LP_MAX_STREAMS 64

enum { LP_RTT = 1, LP_TPUT = 2, LP_SETUP = 3 };

typedef struct lp_hello {
    uint8_t mode, stream, nstreams;
    uint32_t size;    /* rtt: message bytes */
    uint32_t window;  /* tput: receive buffer the server sets (0: leave autotuning) */
    uint32_t omit_ms; /* tput: leave the first omit_ms out of the rate */
    uint64_t session;
} lp_hello;

typedef struct lp_report {
    uint64_t bytes, bytes_after_omit, ns_after_omit;
} lp_report;

void lp_hello_encode(const lp_hello *h, uint8_t out[LP_HELLO_SIZE]);
/* 0, or -1 with a reason in *why (a static string). */
int lp_hello_decode(const uint8_t *in, size_t n, lp_hello *h, const char **why);
/* The server's decision on a HELLO that arrived on the main port (data_only 0) or on a
 * data port (1): the mode to run (LP_RTT, LP_TPUT, LP_SETUP; a data port runs only
 * LP_TPUT, the main port everything else), or -1 with *why. */
int lp_hello_route(const uint8_t *in, size_t n, int data_only, lp_hello *h, const char **why);
#define LP_PORT_SIZE 4
void lp_port_encode(int port, uint8_t out[LP_PORT_SIZE]);
/* The data port's number, or -1 if the answer is not a port. */
int lp_port_decode(const uint8_t *in, size_t n);
void lp_report_encode(const lp_report *r, uint8_t out[LP_REPORT_SIZE]);
int lp_report_decode(const uint8_t *in, size_t n, lp_report *r);

#endif
