/* datatype.c: the predefined datatypes and reduction ops, in the core's terms.
 *
 * Each predefined ABI handle indexes a table entry holding the vendor's handle and the
 * element size, filled from the backend once the vendor MPI is up. A type the vendor
 * lacks has no entry (v == 0) and is reported as MPI_ERR_TYPE by the ABI layer.
 */
#include "core.h"

ism_dt ism_dt_table[ISM_DT_COUNT];
ism_op ism_op_table[ISM_OP_COUNT];

void ism_types_init(void)
{
    for (int i = 0; i < ISM_DT_COUNT; i++) {
        int size = 0;
        if (!ism.be->dt[i] || ism.be->type_size(ism.be->dt[i], &size))
            continue;
        ism_dt_table[i].v = ism.be->dt[i];
        ptrdiff_t lb = 0, extent = size;
        ism.be->type_extent(ism.be->dt[i], &lb, &extent);
        ism_dt_table[i].size = size;
        ism_dt_table[i].extent = (int)extent;
        ptrdiff_t tlb = 0, textent = extent;
        ism.be->type_true_extent(ism.be->dt[i], &tlb, &textent);
        ism_dt_table[i].true_extent = (int)textent;
        ism_dt_table[i].abi = ISM_DT_BASE + i;
    }
    for (int i = 0; i < ISM_OP_COUNT; i++) {
        if (!ism.be->op[i])
            continue;
        ism_op_table[i].v = ism.be->op[i];
        ism_op_table[i].abi = ISM_OP_BASE + i;
        ism_op_table[i].commute = 1;
    }
}
