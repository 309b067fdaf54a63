/* buffers.c (abi): the buffers of buffered-mode sends: the process's (MPI_Buffer_attach,
 * detach), and MPI 4.1's per communicator and per session, MPI_BUFFER_AUTOMATIC, and the
 * flushes, blocking and nonblocking. A send uses its communicator's buffer, else its
 * session's, else the process's (core/bsend.c). A nonblocking flush is a coroutine on
 * MPI_COMM_SELF (core/nbc.c) that waits for the copies in flight while the program goes on.
 */
#include <limits.h>

#include "abi.h"

static int attach(const char *fn, ism_comm *c, ism_bbuf **slot, void *buffer, MPI_Count size)
{
    int automatic = buffer == MPI_BUFFER_AUTOMATIC;
    if (size < 0 && !automatic)
        return ism_abi_error(c, MPI_ERR_ARG, fn, "size %lld is negative", (long long)size);
    int rc = ism_bbuf_attach(slot, buffer, automatic ? 0 : (size_t)size, automatic);
    if (rc == ISM_ERR_BUFFER)
        return ism_abi_error(c, MPI_ERR_BUFFER, fn, "a buffer is already attached (detach it "
                             "first)");
    return rc ? ism_abi_error(c, MPI_ERR_NO_MEM, fn, "out of memory") : MPI_SUCCESS;
}

/* Detach: *buffer_addr gets the buffer (or MPI_BUFFER_AUTOMATIC), *size its size. */
static int detach(const char *fn, ism_comm *c, ism_bbuf *b, void *buffer_addr, MPI_Count *size)
{
    void *buf;
    size_t n;
    int automatic;
    if (ism_bbuf_detach(b, &buf, &n, &automatic))
        return ism_abi_error(c, MPI_ERR_BUFFER, fn, "no buffer is attached");
    *(void **)buffer_addr = automatic ? MPI_BUFFER_AUTOMATIC : buf;
    *size = (MPI_Count)n;
    return MPI_SUCCESS;
}

static int size_out(const char *fn, ism_comm *c, int rc, MPI_Count n, int *size)
{
    if (rc)
        return rc;
    if (n > INT_MAX)
        return ism_abi_error(c, MPI_ERR_COUNT, fn, "the buffer's size %lld does not fit an int "
                             "(use the _c form)", (long long)n);
    *size = (int)n;
    return MPI_SUCCESS;
}

static int flush_body(void *p)
{
    return ism_bbuf_flush(*(ism_bbuf **)p);
}

static int iflush(const char *fn, ism_bbuf *b, MPI_Request *request)
{
    return ism_abi_nbc_start(fn, MPI_COMM_SELF, flush_body, &b, sizeof b, request);
}

/* ---- the process's buffer ---- */

int PMPI_Buffer_attach_c(void *buffer, MPI_Count size)
{
    ISM_CHECK_INIT("MPI_Buffer_attach");
    ism_bbuf *p = ism_bbuf_process();
    return attach("MPI_Buffer_attach", NULL, &p, buffer, size);
}
ISM_PMPI(Buffer_attach_c)

int PMPI_Buffer_attach(void *buffer, int size)
{
    return PMPI_Buffer_attach_c(buffer, size);
}
ISM_PMPI(Buffer_attach)

int PMPI_Buffer_detach_c(void *buffer_addr, MPI_Count *size)
{
    ISM_CHECK_INIT("MPI_Buffer_detach");
    ism_bbuf *b = ism_bbuf_process();
    /* MPI-3 allowed a detach with nothing attached: NULL and 0 */
    int rc = detach("MPI_Buffer_detach", NULL, b, buffer_addr, size);
    if (rc == MPI_ERR_BUFFER) {
        *(void **)buffer_addr = NULL;
        *size = 0;
        return MPI_SUCCESS;
    }
    return rc;
}
ISM_PMPI(Buffer_detach_c)

int PMPI_Buffer_detach(void *buffer_addr, int *size)
{
    MPI_Count n = 0;
    int rc = PMPI_Buffer_detach_c(buffer_addr, &n);
    return size_out("MPI_Buffer_detach", NULL, rc, n, size);
}
ISM_PMPI(Buffer_detach)

int PMPI_Buffer_flush(void)
{
    ISM_CHECK_INIT("MPI_Buffer_flush");
    return ism_bbuf_flush(ism_bbuf_process());
}
ISM_PMPI(Buffer_flush)

int PMPI_Buffer_iflush(MPI_Request *request)
{
    ISM_CHECK_INIT("MPI_Buffer_iflush");
    return iflush("MPI_Buffer_iflush", ism_bbuf_process(), request);
}
ISM_PMPI(Buffer_iflush)

/* ---- a communicator's ---- */

static int comm_arg(const char *fn, MPI_Comm comm, ism_comm **c)
{
    ISM_CHECK_INIT(fn);
    *c = ism_abi_comm(comm);
    return *c ? MPI_SUCCESS : ism_abi_error(NULL, MPI_ERR_COMM, fn, "invalid communicator");
}

int PMPI_Comm_attach_buffer_c(MPI_Comm comm, void *buffer, MPI_Count size)
{
    ism_comm *c;
    int rc = comm_arg("MPI_Comm_attach_buffer", comm, &c);
    return rc ? rc : attach("MPI_Comm_attach_buffer", c, &c->bbuf, buffer, size);
}
ISM_PMPI(Comm_attach_buffer_c)

int PMPI_Comm_attach_buffer(MPI_Comm comm, void *buffer, int size)
{
    return PMPI_Comm_attach_buffer_c(comm, buffer, size);
}
ISM_PMPI(Comm_attach_buffer)

int PMPI_Comm_detach_buffer_c(MPI_Comm comm, void *buffer_addr, MPI_Count *size)
{
    ism_comm *c;
    int rc = comm_arg("MPI_Comm_detach_buffer", comm, &c);
    return rc ? rc : detach("MPI_Comm_detach_buffer", c, c->bbuf, buffer_addr, size);
}
ISM_PMPI(Comm_detach_buffer_c)

int PMPI_Comm_detach_buffer(MPI_Comm comm, void *buffer_addr, int *size)
{
    MPI_Count n = 0;
    int rc = PMPI_Comm_detach_buffer_c(comm, buffer_addr, &n);
    return size_out("MPI_Comm_detach_buffer", ism_abi_comm(comm), rc, n, size);
}
ISM_PMPI(Comm_detach_buffer)

int PMPI_Comm_flush_buffer(MPI_Comm comm)
{
    ism_comm *c;
    int rc = comm_arg("MPI_Comm_flush_buffer", comm, &c);
    return rc ? rc : ism_bbuf_flush(c->bbuf);
}
ISM_PMPI(Comm_flush_buffer)

int PMPI_Comm_iflush_buffer(MPI_Comm comm, MPI_Request *request)
{
    ism_comm *c;
    int rc = comm_arg("MPI_Comm_iflush_buffer", comm, &c);
    return rc ? rc : iflush("MPI_Comm_iflush_buffer", c->bbuf, request);
}
ISM_PMPI(Comm_iflush_buffer)

/* ---- a session's ---- */

static int session_arg(const char *fn, MPI_Session session, ism_bbuf ***slot)
{
    ISM_CHECK_INIT(fn);
    *slot = ism_abi_session_bbuf(session);
    return *slot ? MPI_SUCCESS : ism_abi_error(NULL, MPI_ERR_SESSION, fn, "invalid session");
}

int PMPI_Session_attach_buffer_c(MPI_Session session, void *buffer, MPI_Count size)
{
    ism_bbuf **slot;
    int rc = session_arg("MPI_Session_attach_buffer", session, &slot);
    return rc ? rc : attach("MPI_Session_attach_buffer", NULL, slot, buffer, size);
}
ISM_PMPI(Session_attach_buffer_c)

int PMPI_Session_attach_buffer(MPI_Session session, void *buffer, int size)
{
    return PMPI_Session_attach_buffer_c(session, buffer, size);
}
ISM_PMPI(Session_attach_buffer)

int PMPI_Session_detach_buffer_c(MPI_Session session, void *buffer_addr, MPI_Count *size)
{
    ism_bbuf **slot;
    int rc = session_arg("MPI_Session_detach_buffer", session, &slot);
    return rc ? rc : detach("MPI_Session_detach_buffer", NULL, *slot, buffer_addr, size);
}
ISM_PMPI(Session_detach_buffer_c)

int PMPI_Session_detach_buffer(MPI_Session session, void *buffer_addr, int *size)
{
    MPI_Count n = 0;
    int rc = PMPI_Session_detach_buffer_c(session, buffer_addr, &n);
    return size_out("MPI_Session_detach_buffer", NULL, rc, n, size);
}
ISM_PMPI(Session_detach_buffer)

int PMPI_Session_flush_buffer(MPI_Session session)
{
    ism_bbuf **slot;
    int rc = session_arg("MPI_Session_flush_buffer", session, &slot);
    return rc ? rc : ism_bbuf_flush(*slot);
}
ISM_PMPI(Session_flush_buffer)

int PMPI_Session_iflush_buffer(MPI_Session session, MPI_Request *request)
{
    ism_bbuf **slot;
    int rc = session_arg("MPI_Session_iflush_buffer", session, &slot);
    return rc ? rc : iflush("MPI_Session_iflush_buffer", *slot, request);
}
ISM_PMPI(Session_iflush_buffer)
