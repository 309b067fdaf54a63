/* test_trace_buffer.c: the trace buffer (native/src/trace/buffer.c) never loses a record
 * silently. The file is a pipe nobody reads at first, so the writer thread blocks once
 * the pipe is full and the chunks run out: records are then dropped and counted; once
 * the pipe is drained, the next record is preceded by a LOSS record with exactly that
 * count, and the END record carries the totals. Also: records arrive whole and in order,
 * and a record larger than a chunk is dropped and reported the same way. */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../src/trace/buffer.h"
#include "check.h"

#define CHUNK 65536

static uint64_t fake_now(void)
{
    static uint64_t t;
    return ++t;
}

typedef struct {
    int fd;
    char *data;
    size_t len, cap;
} drain;

static void *drain_main(void *arg)
{
    drain *d = arg;
    for (;;) {
        if (d->cap - d->len < 65536) {
            d->cap = d->cap * 2 + 65536;
            d->data = realloc(d->data, d->cap);
        }
        ssize_t k = read(d->fd, d->data + d->len, d->cap - d->len);
        if (k <= 0)
            return NULL;
        d->len += (size_t)k;
    }
}

static uint64_t put_mark(ism_tr_buf *b, uint64_t n)
{
    ism_tr_mark *m = ism_tr_reserve(b, sizeof *m);
    if (!m)
        return 0;
    ism_tr_hdr_set(m, sizeof *m, ISM_TR_MARK, 0, 0);
    m->t = n;
    m->level = (int32_t)n;
    m->pad = 0;
    return 1;
}

/* The test's own account of the drops, to compare with the LOSS records: each run of
 * drops (ended by a record that fits, or by the END record) gets exactly one LOSS record,
 * and a run that dropped marks leaves one gap in their numbers once a later mark fits.
 * How many runs there are depends on when the writer thread gets a core: on a loaded
 * machine the mark after the oversized record can find every chunk full too. */
static uint64_t drop_runs, gap_runs;
static int dropping, marks_dropped;

static void count_drop(int of_a_mark)
{
    drop_runs += !dropping;
    dropping = 1;
    marks_dropped |= of_a_mark;
}

static uint64_t put_counted(ism_tr_buf *b, uint64_t n)
{
    uint64_t ok = put_mark(b, n);
    if (!ok) {
        count_drop(1);
    } else {
        gap_runs += marks_dropped;
        dropping = marks_dropped = 0;
    }
    return ok;
}

/* A regular file: written with O_DIRECT where the file system takes it, chunks padded
 * to whole blocks with PAD records. The file still holds every record in order, each
 * PAD ends on a block, and END is the last record, ending the file. */
static void direct_file(void)
{
    const char *tmp = getenv("TMPDIR");
    char path[4096], err[256];
    snprintf(path, sizeof path, "%s/test_trace_buffer.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    int fd = mkstemp(path);
    CHECK(fd >= 0, "mkstemp %s", path);
    if (fd < 0)
        return;
    close(fd);
    ism_tr_buf b;
    CHECK(ism_tr_buf_open(&b, path, ISM_TR_PROC_GATEWAY, 3, 4 * 8192, 8000, fake_now, err,
                          sizeof err) == 0,
          "open %s: %s", path, err);
    CHECK(b.chunk_size == 8192, "chunks of %zu bytes, not whole blocks", b.chunk_size);
    int padded = b.pad;
    uint64_t tried = 0, written = 0;
    char tail[40] = "odd sizes move the chunk ends around";
    for (int i = 0; i < 6000; i++) {
        written += put_mark(&b, ++tried);
        if (i % 7 == 0) /* an INFO-like record of 16 + 8..40 bytes */
            ism_tr_put(&b, ISM_TR_INFO, 0, 0, (ism_tr_hdr[1]){{0, 0, 0, 0}}, sizeof(ism_tr_hdr),
                       tail, (size_t)(1 + i % 40));
    }
    uint64_t lost = b.lost_records;
    CHECK(ism_tr_buf_close(&b) == 0, "close");
    FILE *f = fopen(path, "rb");
    static char data[1 << 20];
    size_t n = f ? fread(data, 1, sizeof data, f) : 0;
    if (f)
        fclose(f);
    unlink(path);
    uint64_t marks = 0, last = 0, pads = 0, info_lost = 0;
    size_t end_at = 0;
    for (size_t off = sizeof(ism_tr_file_hdr); off < n;) {
        ism_tr_hdr h;
        memcpy(&h, data + off, sizeof h);
        CHECK(h.len >= 8 && h.len % 8 == 0 && off + h.len <= n, "record at %zu", off);
        if (h.len < 8 || off + h.len > n)
            return;
        if (h.kind == ISM_TR_MARK) {
            ism_tr_mark m;
            memcpy(&m, data + off, sizeof m);
            CHECK(m.t > last, "marks out of order");
            last = m.t;
            marks++;
        } else if (h.kind == ISM_TR_PAD) {
            pads++;
            CHECK((off + h.len) % ISM_TR_BLOCK == 0, "a PAD record ends at %zu", off + h.len);
        } else if (h.kind == ISM_TR_END) {
            end_at = off + h.len;
            ism_tr_end e;
            memcpy(&e, data + off, sizeof e);
            info_lost = e.lost_records;
        }
        off += h.len;
    }
    CHECK(end_at == n, "END ends at %zu, the file at %zu", end_at, n);
    CHECK(marks == written, "%llu marks in the file, %llu written",
          (unsigned long long)marks, (unsigned long long)written);
    CHECK(info_lost == lost, "END says %llu lost, %llu were", (unsigned long long)info_lost,
          (unsigned long long)lost);
    CHECK(padded ? pads > 0 : pads == 0, "%llu PAD records, direct writes %s",
          (unsigned long long)pads, padded ? "on" : "off");
    printf("trace buffer: regular file, direct writes %s, %llu PAD records, %llu marks\n",
           padded ? "on" : "off (the file system refused them)", (unsigned long long)pads,
           (unsigned long long)marks);
}

int main(void)
{
    direct_file();
    int p[2];
    CHECK(pipe(p) == 0, "pipe");
    fcntl(p[1], F_SETPIPE_SZ, 65536);
    char path[64], err[256];
    snprintf(path, sizeof path, "/proc/self/fd/%d", p[1]);
    ism_tr_buf b;
    CHECK(ism_tr_buf_open(&b, path, ISM_TR_PROC_RANK, 7, 3 * CHUNK, CHUNK, fake_now, err,
                          sizeof err) == 0,
          "open: %s", err);
    close(p[1]); /* the buffer has its own descriptor */
    /* fill: the pipe takes one chunk, the writer blocks on the next, then drops begin */
    uint64_t written = 0, tried = 0;
    while (b.lost_records < 1000) {
        written += put_counted(&b, ++tried);
        CHECK(tried < 100000, "no record was ever dropped");
        if (tried >= 100000)
            return 1;
    }
    uint64_t dropped = b.lost_records;
    CHECK(dropped == tried - written, "dropped %llu, tried %llu, written %llu",
          (unsigned long long)dropped, (unsigned long long)tried, (unsigned long long)written);
    /* drain the pipe; recording resumes and first says what was lost */
    drain d = {p[0], NULL, 0, 0};
    pthread_t th;
    pthread_create(&th, NULL, drain_main, &d);
    /* Bounded in time, not in tries, and napping between tries: the drain thread and the
     * buffer's writer thread must be scheduled first, which on a loaded machine (ASan, a
     * suite beside it) took longer than 200 000 back-to-back tries once. Every failed try
     * is one more dropped record, which the checks below count. */
    uint64_t more = 0;
    struct timespec t0, now, nap = {0, 100000};
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        more = put_counted(&b, ++tried);
        if (!more)
            nanosleep(&nap, NULL);
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while (!more && now.tv_sec - t0.tv_sec < 60);
    CHECK(more == 1, "recording did not resume within 60 s after the pipe was drained");
    written += more;
    /* a record larger than a chunk: dropped, counted, reported */
    CHECK(ism_tr_reserve(&b, CHUNK + 8) == NULL, "a record larger than a chunk was taken");
    count_drop(0);
    written += put_counted(&b, ++tried);
    uint64_t lost = b.lost_records; /* those above, those while the writer woke up, this one */
    CHECK(lost > dropped && lost == tried - written + 1, "lost %llu, tried %llu, written %llu",
          (unsigned long long)lost, (unsigned long long)tried, (unsigned long long)written);
    CHECK(ism_tr_buf_close(&b) == 0, "close");
    pthread_join(th, NULL);
    /* read it back: header, then the marks in order with LOSS records in the gaps */
    ism_tr_file_hdr fh;
    CHECK(d.len >= sizeof fh, "short file");
    memcpy(&fh, d.data, sizeof fh);
    CHECK(fh.magic == ISM_TR_MAGIC && fh.id == 7, "file header");
    uint64_t marks = 0, losses = 0, lost_in_records = 0, last = 0, gaps = 0;
    ism_tr_end end = {0};
    for (size_t off = sizeof fh; off < d.len;) {
        ism_tr_hdr h;
        memcpy(&h, d.data + off, sizeof h);
        CHECK(h.len >= 8 && h.len % 8 == 0 && off + h.len <= d.len, "record at %zu", off);
        if (h.len < 8 || off + h.len > d.len)
            break;
        if (h.kind == ISM_TR_MARK) {
            ism_tr_mark m;
            memcpy(&m, d.data + off, sizeof m);
            CHECK(m.t > last, "marks out of order: %llu after %llu", (unsigned long long)m.t,
                  (unsigned long long)last);
            if (m.t != last + 1)
                gaps++;
            last = m.t;
            marks++;
        } else if (h.kind == ISM_TR_LOSS) {
            ism_tr_loss l;
            memcpy(&l, d.data + off, sizeof l);
            losses++;
            lost_in_records += l.records;
        } else if (h.kind == ISM_TR_END) {
            memcpy(&end, d.data + off, sizeof end);
        }
        off += h.len;
    }
    CHECK(marks == written, "%llu marks in the file, %llu written", (unsigned long long)marks,
          (unsigned long long)written);
    /* at least: the first fill's run and the oversized record's */
    CHECK(drop_runs >= 2 && gap_runs >= 1, "%llu runs of drops, %llu of them with marks",
          (unsigned long long)drop_runs, (unsigned long long)gap_runs);
    CHECK(losses == drop_runs && gaps == gap_runs,
          "%llu LOSS records for %llu runs of drops, %llu gaps for %llu runs that dropped marks",
          (unsigned long long)losses, (unsigned long long)drop_runs, (unsigned long long)gaps,
          (unsigned long long)gap_runs);
    CHECK(lost_in_records == lost, "LOSS records say %llu lost, %llu were",
          (unsigned long long)lost_in_records, (unsigned long long)lost);
    CHECK(end.lost_records == lost && end.records == marks + losses + 1,
          "END says %llu lost of %llu", (unsigned long long)end.lost_records,
          (unsigned long long)end.records);
    free(d.data);
    close(p[0]);
    if (!failures)
        printf("trace buffer: %llu records dropped and reported, %llu written\n",
               (unsigned long long)lost, (unsigned long long)written);
    return failures != 0;
}
