/* buffer.h: a process's trace records on their way to its file, in bounded memory.
 *
 * The memory is a fixed set of chunks. The recording thread fills one chunk with plain
 * stores (no lock, no atomic: a record costs a bounds check and its fields); a full
 * chunk goes to a writer thread, which writes it to the file and gives it back. When
 * every chunk is full or being written, records are dropped and counted, and the next
 * record that fits is preceded by a LOSS record saying how many went missing: a trace
 * never loses anything silently. The totals go into the file's END record and are
 * returned by ism_tr_buf_close for the process to report.
 *
 * Where the file system allows it the file is written with O_DIRECT: the page cache's
 * copy cost the writer thread 0.16-0.55 ns per byte here, a direct write 0.05 (measured
 * with 1 MiB writes to ext4), and that thread competes with the ranks for the cores.
 * Direct writes must start and end on block boundaries, so the file header goes into the
 * first chunk and each chunk handed over is filled up to the next ISM_TR_BLOCK bytes
 * with a PAD record (readers skip it); the last chunk, at close, is written through the
 * page cache instead, so END stays the file's last record. When chunks queue up (a burst
 * faster than the disk) the writer goes through the page cache too, which takes them
 * faster: direct writes alone dropped records in a burst the page cache absorbed.
 */
#ifndef ISM_TRACE_BUFFER_H
#define ISM_TRACE_BUFFER_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "record.h"

#define ISM_TR_LIKELY(x) __builtin_expect(!!(x), 1)
#define ISM_TR_BLOCK 4096 /* alignment of direct writes: memory, offsets and lengths */

typedef struct ism_tr_chunk {
    char *mem;
    size_t used;
    struct ism_tr_chunk *next;
} ism_tr_chunk;

typedef struct ism_tr_buf {
    char *cur, *end;           /* free room of the chunk being filled */
    ism_tr_chunk *filling;
    size_t chunk_size;
    int nchunks;
    ism_tr_chunk *chunks;
    pthread_mutex_t mu;        /* guards the lists below, taken once per chunk */
    pthread_cond_t cv;
    ism_tr_chunk *free_list, *full_head, *full_tail;
    int closing, writer_up;
    pthread_t writer;
    int fd;
    int pad;                   /* chunks are handed over padded to whole blocks (set at open) */
    int direct, direct_ok;     /* the writer thread's: fd is O_DIRECT now; direct writes work */
    int write_errno;           /* the writer's first failure (then it drops chunks) */
    /* counted by the recording thread */
    uint64_t records, bytes;
    uint64_t lost_records, lost_bytes;       /* over the file */
    uint64_t pend_lost_records, pend_lost_bytes; /* not yet reported by a LOSS record */
    uint64_t (*now)(void);
} ism_tr_buf;

/* Open path for writing (truncating) with `total` bytes of chunks of `chunk` bytes
 * (at least 2 chunks), write the file header, start the writer thread. 0, or -1 with
 * errno and err set. */
int ism_tr_buf_open(ism_tr_buf *b, const char *path, uint32_t proc_kind, int32_t id,
                    size_t total, size_t chunk, uint64_t (*now)(void), char *err,
                    size_t errlen);

void *ism_tr_reserve_slow(ism_tr_buf *b, size_t len);

/* Room for a record of len bytes (a multiple of 8, at most the chunk size), or NULL
 * when it was dropped (counted). The caller fills it completely. */
static inline void *ism_tr_reserve(ism_tr_buf *b, size_t len)
{
    if (ISM_TR_LIKELY((size_t)(b->end - b->cur) >= len)) {
        void *p = b->cur;
        b->cur += len;
        b->records++;
        b->bytes += len;
        return p;
    }
    return ism_tr_reserve_slow(b, len);
}

static inline void ism_tr_hdr_set(void *rec, uint32_t len, uint8_t kind, uint8_t flags,
                                  uint16_t fn)
{
    ism_tr_hdr *h = (ism_tr_hdr *)rec;
    h->len = len;
    h->kind = kind;
    h->flags = flags;
    h->fn = fn;
}

/* A record with a variable tail (INFO, NAMES, COMM, ...): head bytes, then tail bytes,
 * padded with zeros to 8. 0, or -1 when it was dropped or is larger than a chunk. */
int ism_tr_put(ism_tr_buf *b, uint8_t kind, uint8_t flags, uint16_t fn, const void *head,
               size_t head_len, const void *tail, size_t tail_len);

/* Write the END record, hand every chunk to the writer, wait for it and close the file.
 * 0, or the errno of the first write that failed. */
int ism_tr_buf_close(ism_tr_buf *b);

#endif
