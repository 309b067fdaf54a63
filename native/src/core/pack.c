/* pack.c: moving data between a type's memory layout and a packed stream.
 *
 * Owns the native packing used on the wire between sites of one data representation
 * (blocks copied in type-map order, a partial last element allowed when unpacking a
 * short or truncated message), the count of basic elements in a packed prefix
 * (MPI_Get_elements), and the "external32" representation of MPI 5.0 section 13.5.2:
 * big-endian, standard sizes (long and unsigned long 4 bytes, wchar 2 as MPICH uses
 * them; long double as IEEE binary128). Pure C, no MPI: unit-tested in test_dtmap.c.
 */
#include <float.h>
#include <string.h>

#include "dtmap.h"

/* Addresses as integers: with MPI_BOTTOM the buffer is NULL and the type map holds
 * absolute addresses, which C pointer arithmetic on NULL would not allow. */
#define AT(base, off) ((char *)((uintptr_t)(base) + (uintptr_t)(int64_t)(off)))

void ism_tmap_pack(const ism_tmap *m, const void *buf, int64_t count, void *out)
{
    char *o = out;
    int64_t ext = m->ub - m->lb;
    if (m->nblk == 1) {
        int64_t off = m->blk[0].off, len = m->blk[0].len;
        if (len == ext) {
            memcpy(o, AT(buf, off), (size_t)(count * len));
            return;
        }
        for (int64_t i = 0; i < count; i++, o += len)
            memcpy(o, AT(buf, i * ext + off), (size_t)len);
        return;
    }
    for (int64_t i = 0; i < count; i++) {
        const char *e = AT(buf, i * ext);
        for (int64_t j = 0; j < m->nblk; j++) {
            memcpy(o, e + m->blk[j].off, (size_t)m->blk[j].len);
            o += m->blk[j].len;
        }
    }
}

void ism_tmap_unpack(const ism_tmap *m, const void *in, int64_t nbytes, void *buf)
{
    const char *s = in;
    int64_t ext = m->ub - m->lb;
    if (m->size <= 0 || nbytes <= 0)
        return;
    int64_t full = nbytes / m->size, rem = nbytes % m->size;
    if (m->nblk == 1 && m->blk[0].len == ext) {
        memcpy(AT(buf, m->blk[0].off), s, (size_t)nbytes);
        return;
    }
    for (int64_t i = 0; i < full; i++) {
        char *e = AT(buf, i * ext);
        for (int64_t j = 0; j < m->nblk; j++) {
            memcpy(e + m->blk[j].off, s, (size_t)m->blk[j].len);
            s += m->blk[j].len;
        }
    }
    char *e = AT(buf, full * ext);
    for (int64_t j = 0; j < m->nblk && rem > 0; j++) {
        int64_t n = m->blk[j].len < rem ? m->blk[j].len : rem;
        memcpy(e + m->blk[j].off, s, (size_t)n);
        s += n;
        rem -= n;
    }
}

void ism_tcursor_seek(const ism_tmap *m, int64_t off, ism_tcursor *c)
{
    c->elem = c->blk = c->in = 0;
    if (m->size <= 0)
        return;
    c->elem = off / m->size;
    int64_t r = off % m->size;
    while (r >= m->blk[c->blk].len)
        r -= m->blk[c->blk++].len;
    c->in = r;
}

static void walk_at(const ism_tmap *m, const void *buf, ism_tcursor *c, int64_t n, char *stream,
                    int to_stream)
{
    int64_t ext = m->ub - m->lb;
    while (n > 0) {
        const ism_blk *b = &m->blk[c->blk];
        int64_t take = b->len - c->in < n ? b->len - c->in : n;
        char *mem = AT(buf, c->elem * ext + b->off + c->in);
        if (to_stream)
            memcpy(stream, mem, (size_t)take);
        else
            memcpy(mem, stream, (size_t)take);
        stream += take;
        n -= take;
        c->in += take;
        if (c->in == b->len) {
            c->in = 0;
            if (++c->blk == m->nblk) {
                c->blk = 0;
                c->elem++;
            }
        }
    }
}

void ism_tmap_pack_at(const ism_tmap *m, const void *buf, ism_tcursor *c, int64_t n, void *out)
{
    walk_at(m, buf, c, n, out, 1);
}

void ism_tmap_unpack_at(const ism_tmap *m, const void *in, int64_t n, void *buf, ism_tcursor *c)
{
    walk_at(m, buf, c, n, (char *)(uintptr_t)in, 0);
}

int64_t ism_tmap_elements(const ism_tmap *m, int64_t nbytes)
{
    if (m->size <= 0)
        return 0;
    int64_t full = nbytes / m->size, rem = nbytes % m->size, e = full * m->nelem;
    for (int64_t j = 0; j < m->nrun && rem > 0; j++) {
        int64_t ksz = ism_kind_info(m->run[j].kind)->size, rb = m->run[j].n * ksz;
        if (rem >= rb) {
            e += m->run[j].n;
            rem -= rb;
            continue;
        }
        if (rem % ksz)
            return -1;
        e += rem / ksz;
        rem = 0;
    }
    return e;
}

/* ---- external32 ---- */

static const int little_endian = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;

static void put_be(unsigned char *d, uint64_t v, int n)
{
    for (int i = n - 1; i >= 0; i--, v >>= 8)
        d[i] = (unsigned char)(v & 0xff);
}

static uint64_t get_be(const unsigned char *s, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = v << 8 | s[i];
    return v;
}

static uint64_t load_native(const unsigned char *p, int n)
{
    uint8_t a;
    uint16_t b;
    uint32_t c;
    uint64_t d;
    switch (n) {
    case 1: memcpy(&a, p, 1); return a;
    case 2: memcpy(&b, p, 2); return b;
    case 4: memcpy(&c, p, 4); return c;
    default: memcpy(&d, p, 8); return d;
    }
}

static void store_native(unsigned char *p, uint64_t v, int n)
{
    uint8_t a = (uint8_t)v;
    uint16_t b = (uint16_t)v;
    uint32_t c = (uint32_t)v;
    switch (n) {
    case 1: memcpy(p, &a, 1); break;
    case 2: memcpy(p, &b, 2); break;
    case 4: memcpy(p, &c, 4); break;
    default: memcpy(p, &v, 8); break;
    }
}

/* Native <-> big-endian byte order of an n-byte IEEE value (its own inverse). */
static void swap_copy(unsigned char *d, const unsigned char *s, int n)
{
    if (!little_endian) {
        memcpy(d, s, (size_t)n);
        return;
    }
    for (int i = 0; i < n; i++)
        d[i] = s[n - 1 - i];
}

static uint64_t sign_extend(uint64_t v, int bytes)
{
    if (bytes >= 8)
        return v;
    uint64_t sign = (uint64_t)1 << (bytes * 8 - 1);
    v &= (sign << 1) - 1;
    return (v ^ sign) - sign;
}

/* long double <-> IEEE binary128, big-endian. x87 extended keeps the integer bit
 * explicitly and shares binary128's exponent bias, so the conversion is a shift. */
static int ld_to_ext32(unsigned char *d, const unsigned char *s)
{
#if LDBL_MANT_DIG == 113
    swap_copy(d, s, 16);
    return 0;
#elif LDBL_MANT_DIG == 64 && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t mant;
    uint16_t se;
    memcpy(&mant, s, 8);
    memcpy(&se, s + 8, 2);
    uint64_t frac = mant & ~((uint64_t)1 << 63);
    put_be(d, se, 2);
    put_be(d + 2, frac >> 15, 6);
    put_be(d + 8, (frac & 0x7fff) << 49, 8);
    return 0;
#else
    (void)d, (void)s;
    return ISM_TMAP_EKIND;
#endif
}

static int ld_from_ext32(unsigned char *d, const unsigned char *s)
{
#if LDBL_MANT_DIG == 113
    swap_copy(d, s, 16);
    return 0;
#elif LDBL_MANT_DIG == 64 && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint16_t se = (uint16_t)get_be(s, 2);
    uint64_t frac = get_be(s + 2, 6) << 15 | get_be(s + 8, 8) >> 49;
    uint64_t mant = frac | ((uint64_t)((se & 0x7fff) != 0) << 63);
    memset(d, 0, sizeof(long double));
    memcpy(d, &mant, 8);
    memcpy(d + 8, &se, 2);
    return 0;
#else
    (void)d, (void)s;
    return ISM_TMAP_EKIND;
#endif
}

/* One element of kind k: native s -> external32 d (to=1) or back (to=0). */
static int convert(const ism_kind *k, unsigned char *nat, unsigned char *ext, int to)
{
    switch (k->cls) {
    case ISM_KC_RAW:
        if (to)
            memcpy(ext, nat, (size_t)k->ext32);
        else
            memcpy(nat, ext, (size_t)k->size);
        return 0;
    case ISM_KC_INT:
    case ISM_KC_UINT:
        if (to) {
            uint64_t v = load_native(nat, k->size);
            if (k->cls == ISM_KC_INT)
                v = sign_extend(v, k->size);
            put_be(ext, v, k->ext32);
        } else {
            uint64_t v = get_be(ext, k->ext32);
            if (k->cls == ISM_KC_INT)
                v = sign_extend(v, k->ext32);
            store_native(nat, v, k->size);
        }
        return 0;
    case ISM_KC_FLOAT:
        if (to)
            swap_copy(ext, nat, k->size);
        else
            swap_copy(nat, ext, k->size);
        return 0;
    case ISM_KC_COMPLEX: {
        int h = k->size / 2;
        if (to) {
            swap_copy(ext, nat, h);
            swap_copy(ext + h, nat + h, h);
        } else {
            swap_copy(nat, ext, h);
            swap_copy(nat + h, ext + h, h);
        }
        return 0;
    }
    case ISM_KC_LDOUBLE:
        return to ? ld_to_ext32(ext, nat) : ld_from_ext32(nat, ext);
    case ISM_KC_LDCOMPLEX: {
        int rc, h = k->size / 2;
        if (to)
            rc = ld_to_ext32(ext, nat) ? ISM_TMAP_EKIND : ld_to_ext32(ext + 16, nat + h);
        else
            rc = ld_from_ext32(nat, ext) ? ISM_TMAP_EKIND : ld_from_ext32(nat + h, ext + 16);
        return rc;
    }
    default:
        return ISM_TMAP_EKIND;
    }
}

static int ext32_walk(const ism_tmap *m, unsigned char *buf, int64_t count, unsigned char *ext,
                      int to)
{
    int64_t extent = m->ub - m->lb;
    if (m->ext32 < 0)
        return ISM_TMAP_EKIND;
    for (int64_t i = 0; i < count; i++) {
        for (int64_t j = 0; j < m->nrun; j++) {
            const ism_kind *k = ism_kind_info(m->run[j].kind);
            unsigned char *p = (unsigned char *)AT(buf, i * extent + m->run[j].off);
            for (int64_t n = 0; n < m->run[j].n; n++, p += k->size, ext += k->ext32)
                if (convert(k, p, ext, to))
                    return ISM_TMAP_EKIND;
        }
    }
    return 0;
}

int ism_tmap_pack_ext32(const ism_tmap *m, const void *buf, int64_t count, void *out)
{
    /* the walk is shared with unpacking; packing only reads from buf */
    return ext32_walk(m, (unsigned char *)(uintptr_t)buf, count, out, 1);
}

int ism_tmap_unpack_ext32(const ism_tmap *m, const void *in, int64_t count, void *buf)
{
    return ext32_walk(m, buf, count, (unsigned char *)(uintptr_t)in, 0);
}
