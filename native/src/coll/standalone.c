/* standalone.c: the core symbols the collective selection (select.c, table.c) reaches,
 * for the programs that use it without the core and without a job: isthmus-knobs, which
 * checks the ISTHMUS_COLL_* settings as MPI_Init does, and test_coll_select. There is no
 * site, and a bad setting ends the program (exit status 2) with the line MPI_Init prints.
 */
#include <stdlib.h>

#include "coll.h"

ism_global ism;

const char *ism_site_name(int site)
{
    (void)site;
    return "A";
}

double ism_core_knob(ism_knob_id id, double def)
{
    return ism_knob_or_exit(id, def, 2);
}
