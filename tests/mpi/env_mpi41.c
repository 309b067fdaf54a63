/*
 * env_mpi41: the small MPI 4.1 additions, across sites: buffers attached to a
 * communicator (and MPI_BUFFER_AUTOMATIC) used by MPI_Bsend to a far rank, the
 * communicator's buffer taking precedence over the process's, MPI_Comm_flush_buffer,
 * MPI_Comm_iflush_buffer and MPI_Buffer_flush; MPI_Request_get_status_all/any/some (which
 * neither free nor deactivate); MPI_Remove_error_class/code/string; MPI_Type_get_value_index;
 * MPI_Get_hw_resource_info; and two older calls mpi4py's suite checks: MPI_Comm_get_parent
 * (MPI_COMM_NULL, nothing is spawned), MPI_Errhandler_free of the null handler (an
 * error) and the names of MPI_COMM_NULL and MPI_DATATYPE_NULL. Skipped, saying so, under an MPI older than 4.1.
 */
#include "check.h"
#include <string.h>

#if MPI_VERSION > 4 || (MPI_VERSION == 4 && MPI_SUBVERSION >= 1)
static void buffers(int rank, int size)
{
    int to = peer_far_to(rank, size), from = peer_far_from(rank, size);
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    int bsz = 4 * (1000 * (int)sizeof(int) + MPI_BSEND_OVERHEAD);
    char *cbuf = malloc((size_t)bsz);
    CHECK_RC(MPI_Comm_attach_buffer(c, cbuf, bsz), "Comm_attach_buffer");
    /* no process buffer: the communicator's must be the one used */
    int *out = malloc(sizeof(int) * 3000), *in = malloc(sizeof(int) * 3000);
    for (int i = 0; i < 3000; i++)
        out[i] = rank * 10000 + i;
    for (int k = 0; k < 3; k++)
        CHECK_RC(MPI_Bsend(out + 1000 * k, 1000, MPI_INT, to, k, c), "Bsend on c");
    CHECK_RC(MPI_Comm_flush_buffer(c), "Comm_flush_buffer");
    for (int k = 0; k < 3; k++)
        MPI_Recv(in + 1000 * k, 1000, MPI_INT, from, k, c, MPI_STATUS_IGNORE);
    for (int i = 0; i < 3000; i++)
        if (in[i] != from * 10000 + i) {
            CHECK(0, "comm buffer: element %d is %d, not %d", i, in[i], from * 10000 + i);
            break;
        }
    /* nonblocking flush: the matching receive is posted after it */
    CHECK_RC(MPI_Bsend(out, 1000, MPI_INT, to, 9, c), "Bsend before iflush");
    MPI_Request rq;
    CHECK_RC(MPI_Comm_iflush_buffer(c, &rq), "Comm_iflush_buffer");
    MPI_Recv(in, 1000, MPI_INT, from, 9, c, MPI_STATUS_IGNORE);
    CHECK_RC(MPI_Wait(&rq, MPI_STATUS_IGNORE), "wait for iflush");
    CHECK(in[999] == from * 10000 + 999, "after iflush: %d", in[999]);
    void *got = NULL;
    int gsz = -1;
    CHECK_RC(MPI_Comm_detach_buffer(c, &got, &gsz), "Comm_detach_buffer");
    CHECK(got == cbuf && gsz == bsz, "detached %p/%d, attached %p/%d", got, gsz, (void *)cbuf,
          bsz);
    /* a Bsend with no buffer anywhere is MPI_ERR_BUFFER */
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    int rc = MPI_Bsend(out, 10, MPI_INT, to, 11, c), cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_BUFFER, "Bsend with no buffer: class %d", cls);
    /* automatic buffering, then the process buffer and its flush */
    CHECK_RC(MPI_Comm_attach_buffer(c, MPI_BUFFER_AUTOMATIC, 0), "attach automatic");
    CHECK_RC(MPI_Bsend(out, 3000, MPI_INT, to, 12, c), "Bsend automatic");
    MPI_Recv(in, 3000, MPI_INT, from, 12, c, MPI_STATUS_IGNORE);
    CHECK(in[2999] == from * 10000 + 2999, "automatic: %d", in[2999]);
    CHECK_RC(MPI_Comm_detach_buffer(c, &got, &gsz), "detach automatic");
    CHECK(got == MPI_BUFFER_AUTOMATIC && gsz == 0, "detach automatic gave %p/%d", got, gsz);
    char *pbuf = malloc((size_t)bsz);
    MPI_Buffer_attach(pbuf, bsz);
    CHECK_RC(MPI_Bsend(out, 1000, MPI_INT, to, 13, MPI_COMM_WORLD), "Bsend on world");
    MPI_Recv(in, 1000, MPI_INT, from, 13, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK_RC(MPI_Buffer_flush(), "Buffer_flush");
    MPI_Buffer_detach(&got, &gsz);
    CHECK(got == pbuf, "process buffer detach");
    free(pbuf);
    free(cbuf);
    free(out);
    free(in);
    MPI_Comm_free(&c);
}

static void get_status(int rank, int size)
{
    int to = peer_far_to(rank, size), from = peer_far_from(rank, size);
    MPI_Request rq[3] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    int in = -1, flag = 0, idx = -1, n = -1, ids[3];
    MPI_Status st[3];
    MPI_Irecv(&in, 1, MPI_INT, from, 21, MPI_COMM_WORLD, &rq[1]);
    MPI_Request_get_status_any(3, rq, &idx, &flag, &st[0]);
    /* the message has not been sent: nothing can be complete (every rank waits below) */
    CHECK(!flag && idx == MPI_UNDEFINED, "get_status_any before the send: flag %d idx %d",
          flag, idx);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Send(&rank, 1, MPI_INT, to, 21, MPI_COMM_WORLD);
    do
        MPI_Request_get_status_all(3, rq, &flag, st);
    while (!flag);
    CHECK(st[1].MPI_SOURCE == from && st[1].MPI_TAG == 21, "get_status_all: source %d tag %d",
          st[1].MPI_SOURCE, st[1].MPI_TAG);
    CHECK(rq[1] != MPI_REQUEST_NULL, "get_status_all freed the request");
    MPI_Request_get_status_some(3, rq, &n, ids, st);
    CHECK(n == 1 && ids[0] == 1, "get_status_some: %d, first %d", n, ids[0]);
    MPI_Request_get_status_any(3, rq, &idx, &flag, MPI_STATUS_IGNORE);
    CHECK(flag && idx == 1, "get_status_any: flag %d idx %d", flag, idx);
    MPI_Wait(&rq[1], MPI_STATUS_IGNORE);
    CHECK(in == from, "received %d", in);
    MPI_Request_get_status_some(3, rq, &n, ids, MPI_STATUSES_IGNORE);
    CHECK(n == MPI_UNDEFINED, "get_status_some with no active request: %d", n);
}

static void errors_and_types(void)
{
    int cls, code, rc, len;
    char s[MPI_MAX_ERROR_STRING];
    MPI_Add_error_class(&cls);
    MPI_Add_error_code(cls, &code);
    MPI_Add_error_string(code, "a code to remove");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    rc = MPI_Remove_error_class(cls);
    CHECK(rc != MPI_SUCCESS, "a class with a code was removed");
    CHECK(MPI_Remove_error_code(code) != MPI_SUCCESS, "a code with a string was removed");
    CHECK_RC(MPI_Remove_error_string(code), "Remove_error_string");
    MPI_Error_string(code, s, &len);
    CHECK(len == 0, "string after removal: '%s'", s);
    CHECK_RC(MPI_Remove_error_code(code), "Remove_error_code");
    CHECK_RC(MPI_Remove_error_class(cls), "Remove_error_class");
    CHECK(MPI_Remove_error_code(MPI_ERR_ARG) != MPI_SUCCESS, "removed a predefined code");
    MPI_Datatype t;
    MPI_Type_get_value_index(MPI_DOUBLE, MPI_INT, &t);
    CHECK(t == MPI_DOUBLE_INT, "value_index(double, int)");
    MPI_Type_get_value_index(MPI_INT, MPI_INT, &t);
    CHECK(t == MPI_2INT, "value_index(int, int)");
    MPI_Type_get_value_index(MPI_DOUBLE, MPI_LONG, &t);
    CHECK(t == MPI_DATATYPE_NULL, "value_index(double, long) is not predefined");
    MPI_Info hw;
    CHECK_RC(MPI_Get_hw_resource_info(&hw), "Get_hw_resource_info");
    int nk = 0;
    MPI_Info_get_nkeys(hw, &nk);
    CHECK(nk >= 1, "hw resource info has %d keys", nk);
    MPI_Info_free(&hw);
    /* not spawned: no parent; the null error handler cannot be freed */
    MPI_Comm parent = MPI_COMM_WORLD;
    CHECK_RC(MPI_Comm_get_parent(&parent), "Comm_get_parent");
    CHECK(parent == MPI_COMM_NULL, "Comm_get_parent is not MPI_COMM_NULL");
    char nm[MPI_MAX_OBJECT_NAME] = "";
    int nl = 0;
    CHECK_RC(MPI_Comm_get_name(MPI_COMM_NULL, nm, &nl), "Comm_get_name(MPI_COMM_NULL)");
    CHECK(strcmp(nm, "MPI_COMM_NULL") == 0, "name of MPI_COMM_NULL: '%s'", nm);
    CHECK_RC(MPI_Type_get_name(MPI_DATATYPE_NULL, nm, &nl), "Type_get_name(MPI_DATATYPE_NULL)");
    CHECK(strcmp(nm, "MPI_DATATYPE_NULL") == 0, "name of MPI_DATATYPE_NULL: '%s'", nm);
    MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
    CHECK(MPI_Errhandler_free(&eh) != MPI_SUCCESS, "freed MPI_ERRHANDLER_NULL");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}
#endif

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
#if MPI_VERSION > 4 || (MPI_VERSION == 4 && MPI_SUBVERSION >= 1)
    buffers(rank, size);
    get_status(rank, size);
    errors_and_types();
#else
    if (rank == 0)
        printf("env_mpi41: skipped: the library implements MPI %d.%d\n", MPI_VERSION,
               MPI_SUBVERSION);
#endif
    int rc = check_finish("env_mpi41");
    MPI_Finalize();
    return rc;
}
