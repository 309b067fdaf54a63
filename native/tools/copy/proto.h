/* proto.h: the messages of isthmus-copy, between a client and `isthmus-copy serve`.
 *
 * Owns the bytes of the copy protocol and their validation, nothing else (no I/O, no
 * files): every field read from the network is checked here before other code sees it
 * (fuzzed by tests/fuzz_copy_proto.c).
 *
 * Before authentication the client sends an 8-byte preamble on the TCP connection:
 * "ISCP" | version (1) | transport ('u' reliable UDP, 't' TCP) | 0 | 0. It only chooses
 * how the connection goes on; the job-secret handshake (wan/auth.h) follows, and for
 * 'u' the reliable-UDP set-up (wan/udp/setup.c). Everything below travels on the
 * authenticated stream, little-endian, as messages of an 8-byte header
 *   "IC" | type u8 | 0 u8 | body length u32 (at most ICP_MAX_BODY, DATA at most ICP_MAX_DATA)
 * and a body:
 *   REQ    client -> server: op u8 (PUT 1, GET 2, LIST 3) | flags u8 (RESUME 1) | 0 u16 |
 *          size u64 (PUT: bytes of the file; GET: 0) | mode u32 | 0 u32 | mtime s i64 |
 *          have u64 (GET: bytes the client holds of a partial copy) | have_sha256[32]
 *          (their digest; a CHECK put: the whole source's digest; else zero) | namelen u16 | pathlen u16 | name (PUT: the source's file
 *          name; GET: empty) | path
 *   RSP    server -> client: status u32 | 0 u32 | size u64 (GET) | mode u32 | 0 u32 |
 *          mtime i64 | offset u64 | sha256[32] | pathlen u16 | msglen u16 | path | msg.
 *          path: where the request resolved to inside the served directory. PUT:
 *          offset = bytes the server holds of a partial copy (RESUME only), sha their
 *          digest; GET: offset = where the data will start (0, or the client's have
 *          when have_sha256 matched the file's first have bytes).
 *   START  client -> server (PUT): offset u64: 0, or the server's offset when the
 *          client's file begins with the same bytes
 *   DATA   source -> sink: file bytes, in order, from the offset on
 *   END    source -> sink: size u64 | sha256[32] of the whole file as the source read it
 *   RESULT sink -> source: status u32 | 0 u32 | sha256[32] of the whole file as written |
 *          msglen u16 | msg
 *   ERROR  either side, instead of its next message: status u32 | msglen u16 | msg
 * A PUT is REQ, RSP, START, DATA..., END, RESULT; a GET is REQ, RSP, DATA..., END,
 * RESULT with the roles of source and sink swapped. A resumed copy's digests cover the
 * whole file, the part that was already there included.
 *
 * A LIST (REQ with op 3, path the directory, every other field zero) is answered with
 * RSP (size = entries, offset = their bytes, path as resolved), then DATA messages that
 * carry the entries whole, offset bytes in all, nothing after them. An entry:
 *   kind u8 (FILE 1, SKIPPED 2, REFUSED 3) | why u8 (ICP_W_*, 0 for a FILE) |
 *   pathlen u16 | mode u32 | size u64 | mtime i64 | path
 * path is relative to the listed directory and normalised (no "..", no "." or empty
 * component, no control character); a LIST of a regular file has one FILE entry with an
 * empty path. The server walks the directory beneath the served one (paths.h), follows
 * no link to a directory, and lists a link that leads out as REFUSED. A listing above
 * ICP_MAX_LIST_ENTRIES entries or ICP_MAX_LIST_BYTES bytes is refused (ICP_S_LIMIT)
 * before a byte of it is sent: the client needs it whole to sort it, and a bound keeps
 * one request from holding the server's memory.
 */
#ifndef ISM_COPY_PROTO_H
#define ISM_COPY_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define ICP_PREAMBLE 8
#define ICP_VERSION 1
#define ICP_HDR 8
#define ICP_MAX_PATH 4096
#define ICP_MAX_NAME 255
#define ICP_MAX_MSG 1024
#define ICP_MAX_BODY (2 * ICP_MAX_PATH + 512)
#define ICP_MAX_DATA (1u << 20)
#define ICP_SHA 32
#define ICP_MAX_LIST_ENTRIES (1u << 20)
#define ICP_MAX_LIST_BYTES (64u << 20)
#define ICP_ENTRY_HDR 24

enum { ICP_REQ = 1, ICP_RSP, ICP_START, ICP_DATA, ICP_END, ICP_RESULT, ICP_ERROR };
enum { ICP_PUT = 1, ICP_GET = 2, ICP_LIST = 3 };
/* A listing entry's kind, and why an entry is not a FILE. */
enum { ICP_E_FILE = 1, ICP_E_SKIPPED, ICP_E_REFUSED };
enum { ICP_W_NONE = 0, ICP_W_LINK_DIR, /* a link to a directory (not followed) */
       ICP_W_NOT_REGULAR,              /* a FIFO, socket or device */
       ICP_W_LINK_OUT,                 /* a link that leads out of the served directory */
       ICP_W_UNREADABLE,               /* a directory the server cannot read */
       ICP_W_BAD_NAME,                 /* a control character or non-UTF-8 in the name (escaped) */
       ICP_W_TOO_LONG,                 /* its path is longer than ICP_MAX_PATH (shown cut) */
       ICP_W_LAST = ICP_W_TOO_LONG };
/* Request flags. RESUME: keep a failed copy's bytes and offer them next time.
 * SESSION: more requests may follow on this connection once this one is answered; the
 *   client ends the session by closing the stream at a request boundary.
 * INLINE (put): DATA and END follow REQ at once, from byte 0, without waiting for RSP
 *   or sending START, so many small files cost no round trip each; the server answers
 *   RSP, then (RSP ok) RESULT; a refused inline put has its data read and dropped.
 * INLINE (get): no RESULT follows the file: the client checks END's digest itself, so
 *   it may send the next requests before this one is answered (a many-file get
 *   pipelines its small files this way).
 * CHECK (put): no data; RSP's size is 1 when the target already is a regular file of
 *   the request's size whose SHA-256 is have_sha (then it need not be sent again), else
 *   0. Nothing is written.
 * MKDIRS (put): the path names the file itself (its last component is the request's
 *   name); missing directories on the way are created inside the served directory.
 * CHECK is a comparison, used by a many-file get too (is the server's file the one the
 *   client already holds?).
 * At most one of RESUME, INLINE and CHECK; GET takes only RESUME, INLINE and SESSION,
 * LIST only SESSION. */
enum { ICP_F_RESUME = 1, ICP_F_SESSION = 2, ICP_F_INLINE = 4, ICP_F_CHECK = 8, ICP_F_MKDIRS = 16,
       ICP_F_ALL = 31 };
/* Statuses: 0 = ok; the rest name the class of failure (the message says more). */
enum {
    ICP_OK = 0,
    ICP_S_PATH = 1,     /* the path is malformed or leaves the served directory */
    ICP_S_NOENT = 2,    /* no such file or directory */
    ICP_S_TYPE = 3,     /* not a regular file / not a directory where one is needed */
    ICP_S_IO = 4,       /* a file-system error (message has errno's text) */
    ICP_S_CHECKSUM = 5, /* the digests differ: the copy was discarded */
    ICP_S_PROTO = 6,    /* a malformed or unexpected message */
    ICP_S_SIZE = 7,     /* the source changed size while it was read */
    ICP_S_BUSY = 8,     /* another copy to the same file is running */
    ICP_S_ISDIR = 9,    /* a directory where a file is needed (a get may list it instead) */
    ICP_S_LIMIT = 10,   /* a listing beyond ICP_MAX_LIST_ENTRIES or ICP_MAX_LIST_BYTES */
    ICP_S_LAST = ICP_S_LIMIT
};

typedef struct icp_req {
    uint8_t op, flags;
    uint64_t size;
    uint32_t mode;
    int64_t mtime;
    uint64_t have;
    uint8_t have_sha[ICP_SHA];
    char name[ICP_MAX_NAME + 1];
    char path[ICP_MAX_PATH + 1];
} icp_req;

typedef struct icp_rsp {
    uint32_t status;
    uint64_t size;
    uint32_t mode;
    int64_t mtime;
    uint64_t offset;
    uint8_t sha[ICP_SHA];
    char path[ICP_MAX_PATH + 1];
    char msg[ICP_MAX_MSG + 1];
} icp_rsp;

typedef struct icp_end {
    uint64_t size;
    uint8_t sha[ICP_SHA];
} icp_end;

typedef struct icp_result {
    uint32_t status;
    uint8_t sha[ICP_SHA];
    char msg[ICP_MAX_MSG + 1];
} icp_result;

typedef struct icp_entry {
    uint8_t kind, why;
    uint32_t mode;
    uint64_t size;
    int64_t mtime;
    char path[ICP_MAX_PATH + 1];
} icp_entry;

/* Preamble: transport 'u' or 't'. decode returns the transport, or -1 with *why. */
void icp_preamble_encode(uint8_t out[ICP_PREAMBLE], char transport);
int icp_preamble_decode(const uint8_t in[ICP_PREAMBLE], const char **why);

/* Message header. decode: 0 and the type and body length, or -1 with *why (unknown
 * type, body longer than that type allows). */
void icp_hdr_encode(uint8_t out[ICP_HDR], int type, uint32_t len);
int icp_hdr_decode(const uint8_t in[ICP_HDR], int *type, uint32_t *len, const char **why);

/* Bodies. encode writes into out (at least ICP_MAX_BODY bytes) and returns the length;
 * decode returns 0, or -1 with a static reason in *why. Strings are checked for length
 * and for NUL bytes (a path with a NUL would mean one thing here and another to the
 * file system). */
size_t icp_req_encode(const icp_req *r, uint8_t *out);
int icp_req_decode(const uint8_t *in, size_t n, icp_req *r, const char **why);
size_t icp_rsp_encode(const icp_rsp *r, uint8_t *out);
int icp_rsp_decode(const uint8_t *in, size_t n, icp_rsp *r, const char **why);
size_t icp_u64_encode(uint64_t v, uint8_t *out); /* START */
int icp_u64_decode(const uint8_t *in, size_t n, uint64_t *v, const char **why);
size_t icp_end_encode(const icp_end *e, uint8_t *out);
int icp_end_decode(const uint8_t *in, size_t n, icp_end *e, const char **why);
size_t icp_result_encode(const icp_result *r, uint8_t *out);
int icp_result_decode(const uint8_t *in, size_t n, icp_result *r, const char **why);
/* One listing entry at out (ICP_ENTRY_HDR + ICP_MAX_PATH bytes at least); its length.
 * decode reads the entry at the start of in (n bytes available) into e: 0 and *used,
 * or -1 with *why (a malformed field, a path that is not normalised). */
size_t icp_entry_encode(const icp_entry *e, uint8_t *out);
int icp_entry_decode(const uint8_t *in, size_t n, icp_entry *e, size_t *used, const char **why);
const char *icp_entry_why(uint8_t why);
size_t icp_error_encode(uint32_t status, const char *msg, uint8_t *out);
int icp_error_decode(const uint8_t *in, size_t n, uint32_t *status, char msg[ICP_MAX_MSG + 1],
                     const char **why);

const char *icp_status_name(uint32_t status);

#endif
