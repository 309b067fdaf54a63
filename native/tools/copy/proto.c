/* proto.c: encoding and validating isthmus-copy's messages (format in proto.h). A
 * cursor reads every field, so no decoder can read past the body, and a body must be
 * consumed exactly: trailing bytes are an error, never ignored. */
#include "proto.h"

#include <string.h>

#include "../../src/common/le.h"
#include "paths.h"

typedef struct cur {
    const uint8_t *p;
    size_t n, at;
    int bad;
} cur;

static const uint8_t *take(cur *c, size_t k)
{
    if (c->bad || k > c->n - c->at) {
        c->bad = 1;
        return NULL;
    }
    const uint8_t *q = c->p + c->at;
    c->at += k;
    return q;
}

static uint8_t u8(cur *c)
{
    const uint8_t *q = take(c, 1);
    return q ? q[0] : 0;
}

static uint16_t u16(cur *c)
{
    const uint8_t *q = take(c, 2);
    return q ? (uint16_t)(q[0] | q[1] << 8) : 0;
}

static uint32_t u32(cur *c)
{
    const uint8_t *q = take(c, 4);
    return q ? ism_get_le32(q) : 0;
}

static uint64_t u64(cur *c)
{
    const uint8_t *q = take(c, 8);
    return q ? ism_get_le64(q) : 0;
}

static void bytes(cur *c, uint8_t *out, size_t k)
{
    const uint8_t *q = take(c, k);
    if (q)
        memcpy(out, q, k);
}

/* A string of k bytes into out (cap + 1 bytes): refused if longer than cap or with a NUL. */
static int str(cur *c, size_t k, char *out, size_t cap)
{
    if (k > cap) {
        c->bad = 1;
        return -1;
    }
    const uint8_t *q = take(c, k);
    if (!q)
        return -1;
    if (memchr(q, 0, k)) {
        c->bad = 1;
        return -1;
    }
    memcpy(out, q, k);
    out[k] = 0;
    return 0;
}

static int done(const cur *c, const char **why, const char *what)
{
    if (c->bad || c->at != c->n) {
        *why = what;
        return -1;
    }
    return 0;
}

typedef struct wr {
    uint8_t *p;
    size_t at;
} wr;

static void w8(wr *w, uint8_t v) { w->p[w->at++] = v; }
static void w16(wr *w, uint16_t v)
{
    w->p[w->at++] = (uint8_t)v;
    w->p[w->at++] = (uint8_t)(v >> 8);
}
static void w32(wr *w, uint32_t v)
{
    ism_put_le32(w->p + w->at, v);
    w->at += 4;
}
static void w64(wr *w, uint64_t v)
{
    ism_put_le64(w->p + w->at, v);
    w->at += 8;
}
static void wb(wr *w, const void *b, size_t k)
{
    memcpy(w->p + w->at, b, k);
    w->at += k;
}

void icp_preamble_encode(uint8_t out[ICP_PREAMBLE], char transport)
{
    memcpy(out, "ISCP", 4);
    out[4] = ICP_VERSION;
    out[5] = (uint8_t)transport;
    out[6] = out[7] = 0;
}

int icp_preamble_decode(const uint8_t in[ICP_PREAMBLE], const char **why)
{
    if (memcmp(in, "ISCP", 4) != 0) {
        *why = "not an isthmus-copy client";
        return -1;
    }
    if (in[4] != ICP_VERSION) {
        *why = "unsupported isthmus-copy protocol version";
        return -1;
    }
    if ((in[5] != 'u' && in[5] != 't') || in[6] || in[7]) {
        *why = "unknown transport in the preamble";
        return -1;
    }
    return in[5];
}

void icp_hdr_encode(uint8_t out[ICP_HDR], int type, uint32_t len)
{
    out[0] = 'I';
    out[1] = 'C';
    out[2] = (uint8_t)type;
    out[3] = 0;
    ism_put_le32(out + 4, len);
}

int icp_hdr_decode(const uint8_t in[ICP_HDR], int *type, uint32_t *len, const char **why)
{
    if (in[0] != 'I' || in[1] != 'C' || in[3] != 0) {
        *why = "bad message header";
        return -1;
    }
    *type = in[2];
    *len = ism_get_le32(in + 4);
    if (*type < ICP_REQ || *type > ICP_ERROR) {
        *why = "unknown message type";
        return -1;
    }
    if (*len > (*type == ICP_DATA ? ICP_MAX_DATA : ICP_MAX_BODY)) {
        *why = "message longer than its type allows";
        return -1;
    }
    return 0;
}

size_t icp_req_encode(const icp_req *r, uint8_t *out)
{
    wr w = {out, 0};
    size_t nl = strlen(r->name), pl = strlen(r->path);
    w8(&w, r->op);
    w8(&w, r->flags);
    w16(&w, 0);
    w64(&w, r->size);
    w32(&w, r->mode);
    w32(&w, 0);
    w64(&w, (uint64_t)r->mtime);
    w64(&w, r->have);
    wb(&w, r->have_sha, ICP_SHA);
    w16(&w, (uint16_t)nl);
    w16(&w, (uint16_t)pl);
    wb(&w, r->name, nl);
    wb(&w, r->path, pl);
    return w.at;
}

static int sha_zero(const uint8_t *h)
{
    uint8_t acc = 0;
    for (int i = 0; i < ICP_SHA; i++)
        acc |= h[i];
    return acc == 0;
}

int icp_req_decode(const uint8_t *in, size_t n, icp_req *r, const char **why)
{
    cur c = {in, n, 0, 0};
    memset(r, 0, sizeof *r);
    r->op = u8(&c);
    r->flags = u8(&c);
    uint16_t z16 = u16(&c);
    r->size = u64(&c);
    r->mode = u32(&c);
    uint32_t z32 = u32(&c);
    r->mtime = (int64_t)u64(&c);
    r->have = u64(&c);
    bytes(&c, r->have_sha, ICP_SHA);
    uint16_t nl = u16(&c), pl = u16(&c);
    if (c.bad) {
        *why = "request too short";
        return -1;
    }
    if (r->op < ICP_PUT || r->op > ICP_LIST || (r->flags & ~ICP_F_ALL) || z16 || z32) {
        *why = "unknown operation or flags in the request";
        return -1;
    }
    /* inline data and a check cannot resume, and only a put carries either; a check
     * stores nothing, so it creates no directories */
    unsigned once = r->flags & (ICP_F_INLINE | ICP_F_CHECK | ICP_F_RESUME);
    if ((once & (once - 1)) ||
        (r->op == ICP_GET && (r->flags & (ICP_F_CHECK | ICP_F_MKDIRS))) ||
        (r->op == ICP_LIST && (r->flags & ~ICP_F_SESSION)) ||
        ((r->flags & ICP_F_CHECK) && (r->flags & ICP_F_MKDIRS))) {
        *why = "flags in the request that do not go together";
        return -1;
    }
    if (r->size >> 62 || r->have >> 62 || (r->mode & ~07777u)) {
        *why = "size or mode out of range in the request";
        return -1;
    }
    if (str(&c, nl, r->name, ICP_MAX_NAME) != 0 || str(&c, pl, r->path, ICP_MAX_PATH) != 0) {
        *why = "file name or path too long, truncated or containing a NUL byte";
        return -1;
    }
    if ((r->op != ICP_PUT && (r->size || nl || r->mode || r->mtime)) ||
        (r->op == ICP_PUT && r->have) || (r->have && !(r->flags & ICP_F_RESUME)) ||
        (r->op == ICP_PUT && !(r->flags & ICP_F_CHECK) && !sha_zero(r->have_sha))) {
        *why = "request fields that its operation does not use are set";
        return -1;
    }
    return done(&c, why, "trailing bytes after the request");
}

size_t icp_rsp_encode(const icp_rsp *r, uint8_t *out)
{
    wr w = {out, 0};
    size_t pl = strlen(r->path), ml = strlen(r->msg);
    w32(&w, r->status);
    w32(&w, 0);
    w64(&w, r->size);
    w32(&w, r->mode);
    w32(&w, 0);
    w64(&w, (uint64_t)r->mtime);
    w64(&w, r->offset);
    wb(&w, r->sha, ICP_SHA);
    w16(&w, (uint16_t)pl);
    w16(&w, (uint16_t)ml);
    wb(&w, r->path, pl);
    wb(&w, r->msg, ml);
    return w.at;
}

int icp_rsp_decode(const uint8_t *in, size_t n, icp_rsp *r, const char **why)
{
    cur c = {in, n, 0, 0};
    memset(r, 0, sizeof *r);
    r->status = u32(&c);
    uint32_t z1 = u32(&c);
    r->size = u64(&c);
    r->mode = u32(&c);
    uint32_t z2 = u32(&c);
    r->mtime = (int64_t)u64(&c);
    r->offset = u64(&c);
    bytes(&c, r->sha, ICP_SHA);
    uint16_t pl = u16(&c), ml = u16(&c);
    if (c.bad) {
        *why = "response too short";
        return -1;
    }
    if (z1 || z2 || r->size >> 62 || r->offset >> 62 || (r->mode & ~07777u) ||
        r->status > ICP_S_LAST) {
        *why = "response field out of range";
        return -1;
    }
    if (str(&c, pl, r->path, ICP_MAX_PATH) != 0 || str(&c, ml, r->msg, ICP_MAX_MSG) != 0) {
        *why = "path or message in the response too long, truncated or containing a NUL";
        return -1;
    }
    return done(&c, why, "trailing bytes after the response");
}

size_t icp_u64_encode(uint64_t v, uint8_t *out)
{
    ism_put_le64(out, v);
    return 8;
}

int icp_u64_decode(const uint8_t *in, size_t n, uint64_t *v, const char **why)
{
    if (n != 8) {
        *why = "START must be 8 bytes";
        return -1;
    }
    *v = ism_get_le64(in);
    if (*v >> 62) {
        *why = "offset out of range";
        return -1;
    }
    return 0;
}

size_t icp_end_encode(const icp_end *e, uint8_t *out)
{
    ism_put_le64(out, e->size);
    memcpy(out + 8, e->sha, ICP_SHA);
    return 8 + ICP_SHA;
}

int icp_end_decode(const uint8_t *in, size_t n, icp_end *e, const char **why)
{
    if (n != 8 + ICP_SHA) {
        *why = "END must be 40 bytes";
        return -1;
    }
    e->size = ism_get_le64(in);
    memcpy(e->sha, in + 8, ICP_SHA);
    if (e->size >> 62) {
        *why = "size out of range";
        return -1;
    }
    return 0;
}

size_t icp_result_encode(const icp_result *r, uint8_t *out)
{
    wr w = {out, 0};
    size_t ml = strlen(r->msg);
    w32(&w, r->status);
    w32(&w, 0);
    wb(&w, r->sha, ICP_SHA);
    w16(&w, (uint16_t)ml);
    wb(&w, r->msg, ml);
    return w.at;
}

int icp_result_decode(const uint8_t *in, size_t n, icp_result *r, const char **why)
{
    cur c = {in, n, 0, 0};
    memset(r, 0, sizeof *r);
    r->status = u32(&c);
    uint32_t z = u32(&c);
    bytes(&c, r->sha, ICP_SHA);
    uint16_t ml = u16(&c);
    if (c.bad || z || r->status > ICP_S_LAST) {
        *why = "malformed result";
        return -1;
    }
    if (str(&c, ml, r->msg, ICP_MAX_MSG) != 0) {
        *why = "result message too long, truncated or containing a NUL";
        return -1;
    }
    return done(&c, why, "trailing bytes after the result");
}

size_t icp_entry_encode(const icp_entry *e, uint8_t *out)
{
    wr w = {out, 0};
    size_t pl = strlen(e->path);
    w8(&w, e->kind);
    w8(&w, e->why);
    w16(&w, (uint16_t)pl);
    w32(&w, e->mode);
    w64(&w, e->size);
    w64(&w, (uint64_t)e->mtime);
    wb(&w, e->path, pl);
    return w.at;
}

int icp_entry_decode(const uint8_t *in, size_t n, icp_entry *e, size_t *used, const char **why)
{
    cur c = {in, n, 0, 0};
    memset(e, 0, sizeof *e);
    e->kind = u8(&c);
    e->why = u8(&c);
    uint16_t pl = u16(&c);
    e->mode = u32(&c);
    e->size = u64(&c);
    e->mtime = (int64_t)u64(&c);
    if (c.bad || str(&c, pl, e->path, ICP_MAX_PATH) != 0) {
        *why = "listing entry truncated, too long or with a NUL in its path";
        return -1;
    }
    if (e->kind < ICP_E_FILE || e->kind > ICP_E_REFUSED || e->why > ICP_W_LAST ||
        (e->kind == ICP_E_FILE) != (e->why == ICP_W_NONE) || (e->mode & ~07777u) ||
        e->size >> 62) {
        *why = "listing entry field out of range";
        return -1;
    }
    /* the client builds local paths from it: only what a request path may be, as is */
    char norm[ICP_MAX_PATH + 1];
    int hint;
    const char *pw = NULL;
    if (icp_path_normalize(e->path, norm, sizeof norm, &hint, &pw) != 0 ||
        strcmp(norm, e->path) != 0) {
        *why = "listing entry with a path that is absolute, has '..', '.', an empty component "
               "or a control character";
        return -1;
    }
    *used = c.at;
    return 0;
}

const char *icp_entry_why(uint8_t why)
{
    switch (why) {
    case ICP_W_LINK_DIR: return "a symbolic link to a directory (not followed)";
    case ICP_W_NOT_REGULAR: return "not a regular file";
    case ICP_W_LINK_OUT: return "leaves the served directory through a symbolic link";
    case ICP_W_UNREADABLE: return "a directory the server cannot read";
    case ICP_W_BAD_NAME: return "a control character or bytes that are not UTF-8 in its name (shown escaped)";
    case ICP_W_TOO_LONG: return "its path is too long (shown cut)";
    default: return "";
    }
}

size_t icp_error_encode(uint32_t status, const char *msg, uint8_t *out)
{
    wr w = {out, 0};
    size_t ml = strlen(msg);
    if (ml > ICP_MAX_MSG)
        ml = ICP_MAX_MSG;
    w32(&w, status);
    w16(&w, (uint16_t)ml);
    wb(&w, msg, ml);
    return w.at;
}

int icp_error_decode(const uint8_t *in, size_t n, uint32_t *status, char msg[ICP_MAX_MSG + 1],
                     const char **why)
{
    cur c = {in, n, 0, 0};
    *status = u32(&c);
    uint16_t ml = u16(&c);
    if (c.bad || *status == ICP_OK || *status > ICP_S_LAST || str(&c, ml, msg, ICP_MAX_MSG) != 0) {
        *why = "malformed error message";
        return -1;
    }
    return done(&c, why, "trailing bytes after the error message");
}

const char *icp_status_name(uint32_t status)
{
    switch (status) {
    case ICP_OK: return "ok";
    case ICP_S_PATH: return "bad path";
    case ICP_S_NOENT: return "not found";
    case ICP_S_TYPE: return "wrong file type";
    case ICP_S_IO: return "I/O error";
    case ICP_S_CHECKSUM: return "checksum mismatch";
    case ICP_S_PROTO: return "protocol error";
    case ICP_S_SIZE: return "source changed size";
    case ICP_S_BUSY: return "busy";
    case ICP_S_ISDIR: return "a directory";
    case ICP_S_LIMIT: return "listing too large";
    default: return "unknown status";
    }
}
