/* status.c (abi): calls that write or read a status object directly (for generalized
 * requests and layered libraries), and MPI_Pcontrol.
 */
#include "abi.h"
#include "../core/dtmap.h"

static void set_bytes(MPI_Status *s, uint64_t bytes)
{
    s->MPI_internal[0] = (int)(uint32_t)(bytes & 0xffffffffu);
    s->MPI_internal[1] = (int)(uint32_t)(bytes >> 32);
}

int PMPI_Status_set_cancelled(MPI_Status *status, int flag)
{
    if (!status || status == MPI_STATUS_IGNORE)
        return ism_abi_error(NULL, MPI_ERR_ARG, "MPI_Status_set_cancelled", "no status given");
    status->MPI_internal[2] = flag != 0;
    return MPI_SUCCESS;
}
ISM_PMPI(Status_set_cancelled)

/* The status records bytes: count basic elements of the type are the whole elements'
 * bytes plus the bytes of the first count % nelem basic elements of one more. */
int PMPI_Status_set_elements_x(MPI_Status *status, MPI_Datatype datatype, MPI_Count count)
{
    ism_dt *d = ism_abi_dt_any(datatype);
    if (!status || status == MPI_STATUS_IGNORE)
        return ism_abi_error(NULL, MPI_ERR_ARG, "MPI_Status_set_elements", "no status given");
    if (!d)
        return ism_abi_error(NULL, MPI_ERR_TYPE, "MPI_Status_set_elements", "invalid datatype");
    if (count < 0)
        return ism_abi_error(NULL, MPI_ERR_COUNT, "MPI_Status_set_elements",
                             "count %lld is negative", (long long)count);
    const ism_tmap *m = ism_dt_map(d);
    if (!m || m->nelem <= 0) {
        set_bytes(status, 0);
        return MPI_SUCCESS;
    }
    int64_t bytes = count / m->nelem * m->size, rest = count % m->nelem;
    for (int64_t j = 0; j < m->nrun && rest > 0; j++) {
        int64_t n = m->run[j].n < rest ? m->run[j].n : rest;
        bytes += n * ism_kind_info(m->run[j].kind)->size;
        rest -= n;
    }
    set_bytes(status, (uint64_t)bytes);
    return MPI_SUCCESS;
}
ISM_PMPI(Status_set_elements_x)

int PMPI_Status_set_elements(MPI_Status *status, MPI_Datatype datatype, int count)
{
    return PMPI_Status_set_elements_x(status, datatype, count);
}
ISM_PMPI(Status_set_elements)

int PMPI_Status_set_elements_c(MPI_Status *status, MPI_Datatype datatype, MPI_Count count)
{
    return PMPI_Status_set_elements_x(status, datatype, count);
}
ISM_PMPI(Status_set_elements_c)

/* Profiling control: meaningful only to a profiling layer that intercepts it. */
int PMPI_Pcontrol(const int level, ...)
{
    (void)level;
    return MPI_SUCCESS;
}
ISM_PMPI(Pcontrol)

/* MPI 4.1 accessors of the public status fields */
#define STATUS_FIELD(Name, field)                                                                  \
    int PMPI_Status_get_##Name(MPI_Status *status, int *v)                                         \
    {                                                                                              \
        if (!status || status == MPI_STATUS_IGNORE || !v)                                          \
            return ism_abi_error(NULL, MPI_ERR_ARG, "MPI_Status_get_" #Name, "no status given");   \
        *v = status->field;                                                                        \
        return MPI_SUCCESS;                                                                        \
    }                                                                                              \
    ISM_PMPI(Status_get_##Name)                                                                    \
    int PMPI_Status_set_##Name(MPI_Status *status, int v)                                          \
    {                                                                                              \
        if (!status || status == MPI_STATUS_IGNORE)                                                \
            return ism_abi_error(NULL, MPI_ERR_ARG, "MPI_Status_set_" #Name, "no status given");   \
        status->field = v;                                                                         \
        return MPI_SUCCESS;                                                                        \
    }                                                                                              \
    ISM_PMPI(Status_set_##Name)

STATUS_FIELD(source, MPI_SOURCE)
STATUS_FIELD(tag, MPI_TAG)
STATUS_FIELD(error, MPI_ERROR)
