/* fileio.h: the MPI-IO requests a rank at another site sends to the file agent in the
 * gateway of the file's site (ISM_F_IO -> ISM_F_IOREP, frame.h), written by core/file.c
 * and served by gateway/fileagent.c.
 *
 * ISM_F_IO:    src = requester, dst = the first global rank of the file's site (so the
 *              frame takes the link to that site's gateway 0, the agent), tag = op,
 *              ctx = the agent's handle of the file (OPEN: unused), a = request id,
 *              b = the op's argument (below); payload below.
 * ISM_F_IOREP: src = that same rank, dst = requester, a = request id, b = the result as a
 *              two's-complement int64: >= 0 success (bytes, size or handle), < 0 -errno;
 *              payload: the bytes read (READ).
 * Payloads are little-endian. A segment list is: u32 n, then n × (u64 offset, u64 len).
 */
#ifndef ISM_CONTRACT_FILEIO_H
#define ISM_CONTRACT_FILEIO_H

enum ism_fio_op {
    ISM_FIO_OPEN = 1,   /* b = open(2) flags; payload u32 path length, path, shared-pointer
                           path (the rest; may be empty). Result: the handle */
    ISM_FIO_CLOSE,      /* b bit 0: also unlink the file (MPI_MODE_DELETE_ON_CLOSE);
                           bit 1: unlink the shared pointer's side file */
    ISM_FIO_WRITE,      /* payload: segment list, then the data of every segment in order.
                           Result: bytes written */
    ISM_FIO_READ,       /* payload: segment list. Result: bytes read (a short read ends the
                           list: the end of the file); the reply carries them */
    ISM_FIO_SIZE,       /* result: the file's size */
    ISM_FIO_TRUNCATE,   /* b = new size */
    ISM_FIO_PREALLOC,   /* b = size the file must have room for */
    ISM_FIO_SYNC,
    ISM_FIO_FETCH_ADD,  /* the shared file pointer: b = increment (etype units, may be 0);
                           result: the pointer before */
    ISM_FIO_SET_SHARED, /* b = new shared file pointer */
    ISM_FIO_LOCK,       /* b = 1 write lock, 2 read lock (tried: result -EAGAIN when
                           another holds it), 0 unlock; payload u64 offset, u64 len: the
                           byte range (atomic mode) */
    ISM_FIO_DELETE,     /* ctx unused; payload: the path */
    ISM_FIO_OP_MAX = ISM_FIO_DELETE
};

#define ISM_FIO_SEG_BYTES 16

#endif
