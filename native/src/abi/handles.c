/* handles.c (abi): handles as integers: the MPI 5.0 MPI_<Handle>_toint/_fromint calls
 * and the Fortran-style MPI_<Handle>_c2f/_f2c. Predefined handles are small integers
 * already and map to themselves; every other handle (a pointer) gets an integer from
 * 0x1000 up the first time it is converted, and keeps it while it lives. A hash from
 * pointer to slot gives the same integer back in constant time (the Fortran bindings
 * convert every handle argument of every call). The Fortran bindings count the handles
 * they hand out for a slot (ism_abi_f_hold: one object can be several handles, e.g. a
 * datatype and what MPI_Type_get_contents returns for it) and give one back when they see
 * a handle freed (ism_abi_f_forget); the last one frees the slot, so the table holds
 * what the program holds.
 */
#include <stdlib.h>

#include "abi.h"
#include "fortran.h"

#define FIRST 0x1000

static void **slot;         /* integer FIRST + i -> handle, NULL while free */
static int *held;           /* handles of the slot the Fortran bindings handed out */
static int nslot, capslot;
static int *freed;          /* free slots, reused last-in first-out */
static int nfreed, capfreed;
static int *hash;           /* linear probing: slot index + 1, 0 when empty */
static size_t hcap, hlive;  /* hcap is 0 or a power of two; at most half full */

static size_t hpos(const void *h)
{
    uint64_t v = (uint64_t)(uintptr_t)h;
    return (size_t)((v >> 4) * 0x9e3779b97f4a7c15ull >> 17) & (hcap - 1);
}

static int grow_hash(void)
{
    size_t ncap = hcap ? 2 * hcap : 256;
    int *n = calloc(ncap, sizeof *n);
    if (!n)
        return -1;
    int *old = hash;
    size_t ocap = hcap;
    hash = n;
    hcap = ncap;
    for (size_t i = 0; i < ocap; i++)
        if (old[i]) {
            size_t j = hpos(slot[old[i] - 1]);
            while (hash[j])
                j = (j + 1) & (hcap - 1);
            hash[j] = old[i];
        }
    free(old);
    return 0;
}

/* The hash position holding h, or the empty position where it would go. */
static size_t find(const void *h)
{
    size_t j = hpos(h);
    while (hash[j] && slot[hash[j] - 1] != h)
        j = (j + 1) & (hcap - 1);
    return j;
}

static int new_slot(void *h)
{
    if (nfreed)
        return freed[--nfreed];
    if (nslot == capslot) {
        int cap = capslot ? 2 * capslot : 64;
        void **n = realloc(slot, sizeof *n * (size_t)cap);
        if (!n)
            return -1;
        slot = n;
        int *c = realloc(held, sizeof *c * (size_t)cap);
        if (!c)
            return -1;
        held = c;
        capslot = cap;
    }
    slot[nslot] = h;
    return nslot++;
}

static int toint(void *h)
{
    uintptr_t v = (uintptr_t)h;
    if (v < FIRST)
        return (int)v;
    if (hcap) {
        size_t j = find(h);
        if (hash[j])
            return FIRST + hash[j] - 1;
    }
    if (2 * (hlive + 1) > hcap && grow_hash())
        return -1; /* no integer: reported as an invalid handle on the way back */
    int s = new_slot(h);
    if (s < 0)
        return -1;
    slot[s] = h;
    held[s] = 0;
    hash[find(h)] = s + 1;
    hlive++;
    return FIRST + s;
}

static void *fromint(int i)
{
    if (i >= 0 && i < FIRST)
        return (void *)(uintptr_t)i;
    return i >= FIRST && i - FIRST < nslot ? slot[i - FIRST] : NULL;
}

MPI_Fint ism_abi_f_hold(MPI_Fint i)
{
    if (i >= FIRST && fromint(i))
        held[i - FIRST]++;
    return i;
}

/* Backward-shift deletion keeps every probe sequence unbroken without tombstones. */
void ism_abi_f_forget(MPI_Fint i)
{
    void *h = fromint(i);
    if (i < FIRST || !h)
        return;
    if (--held[i - FIRST] > 0)
        return; /* another handle of the program still names this object */
    if (nfreed == capfreed) {
        int cap = capfreed ? 2 * capfreed : 64;
        int *n = realloc(freed, sizeof *n * (size_t)cap);
        if (!n)
            return; /* the slot stays taken: a lost integer, never a wrong one */
        freed = n;
        capfreed = cap;
    }
    size_t j = find(h);
    hash[j] = 0;
    for (size_t k = (j + 1) & (hcap - 1); hash[k]; k = (k + 1) & (hcap - 1)) {
        size_t home = hpos(slot[hash[k] - 1]);
        /* move k's entry into the hole unless its home lies cyclically in (j, k] */
        if ((k > j && (home <= j || home > k)) || (k < j && home <= j && home > k)) {
            hash[j] = hash[k];
            hash[k] = 0;
            j = k;
        }
    }
    slot[i - FIRST] = NULL;
    freed[nfreed++] = i - FIRST;
    hlive--;
}

int ism_abi_f_live(void) { return (int)hlive; }

int PMPI_Comm_toint(MPI_Comm comm) { return toint((void *)comm); }
ISM_PMPI(Comm_toint)
MPI_Comm PMPI_Comm_fromint(int comm) { return (MPI_Comm)fromint(comm); }
ISM_PMPI(Comm_fromint)
MPI_Fint PMPI_Comm_c2f(MPI_Comm comm) { return (MPI_Fint)toint((void *)comm); }
ISM_PMPI(Comm_c2f)
MPI_Comm PMPI_Comm_f2c(MPI_Fint comm) { return (MPI_Comm)fromint((int)comm); }
ISM_PMPI(Comm_f2c)

int PMPI_Errhandler_toint(MPI_Errhandler errhandler) { return toint((void *)errhandler); }
ISM_PMPI(Errhandler_toint)
MPI_Errhandler PMPI_Errhandler_fromint(int errhandler) { return (MPI_Errhandler)fromint(errhandler); }
ISM_PMPI(Errhandler_fromint)
MPI_Fint PMPI_Errhandler_c2f(MPI_Errhandler errhandler) { return (MPI_Fint)toint((void *)errhandler); }
ISM_PMPI(Errhandler_c2f)
MPI_Errhandler PMPI_Errhandler_f2c(MPI_Fint errhandler) { return (MPI_Errhandler)fromint((int)errhandler); }
ISM_PMPI(Errhandler_f2c)

int PMPI_File_toint(MPI_File file) { return toint((void *)file); }
ISM_PMPI(File_toint)
MPI_File PMPI_File_fromint(int file) { return (MPI_File)fromint(file); }
ISM_PMPI(File_fromint)
MPI_Fint PMPI_File_c2f(MPI_File file) { return (MPI_Fint)toint((void *)file); }
ISM_PMPI(File_c2f)
MPI_File PMPI_File_f2c(MPI_Fint file) { return (MPI_File)fromint((int)file); }
ISM_PMPI(File_f2c)

int PMPI_Group_toint(MPI_Group group) { return toint((void *)group); }
ISM_PMPI(Group_toint)
MPI_Group PMPI_Group_fromint(int group) { return (MPI_Group)fromint(group); }
ISM_PMPI(Group_fromint)
MPI_Fint PMPI_Group_c2f(MPI_Group group) { return (MPI_Fint)toint((void *)group); }
ISM_PMPI(Group_c2f)
MPI_Group PMPI_Group_f2c(MPI_Fint group) { return (MPI_Group)fromint((int)group); }
ISM_PMPI(Group_f2c)

int PMPI_Info_toint(MPI_Info info) { return toint((void *)info); }
ISM_PMPI(Info_toint)
MPI_Info PMPI_Info_fromint(int info) { return (MPI_Info)fromint(info); }
ISM_PMPI(Info_fromint)
MPI_Fint PMPI_Info_c2f(MPI_Info info) { return (MPI_Fint)toint((void *)info); }
ISM_PMPI(Info_c2f)
MPI_Info PMPI_Info_f2c(MPI_Fint info) { return (MPI_Info)fromint((int)info); }
ISM_PMPI(Info_f2c)

int PMPI_Message_toint(MPI_Message message) { return toint((void *)message); }
ISM_PMPI(Message_toint)
MPI_Message PMPI_Message_fromint(int message) { return (MPI_Message)fromint(message); }
ISM_PMPI(Message_fromint)
MPI_Fint PMPI_Message_c2f(MPI_Message message) { return (MPI_Fint)toint((void *)message); }
ISM_PMPI(Message_c2f)
MPI_Message PMPI_Message_f2c(MPI_Fint message) { return (MPI_Message)fromint((int)message); }
ISM_PMPI(Message_f2c)

int PMPI_Op_toint(MPI_Op op) { return toint((void *)op); }
ISM_PMPI(Op_toint)
MPI_Op PMPI_Op_fromint(int op) { return (MPI_Op)fromint(op); }
ISM_PMPI(Op_fromint)
MPI_Fint PMPI_Op_c2f(MPI_Op op) { return (MPI_Fint)toint((void *)op); }
ISM_PMPI(Op_c2f)
MPI_Op PMPI_Op_f2c(MPI_Fint op) { return (MPI_Op)fromint((int)op); }
ISM_PMPI(Op_f2c)

int PMPI_Request_toint(MPI_Request request) { return toint((void *)request); }
ISM_PMPI(Request_toint)
MPI_Request PMPI_Request_fromint(int request) { return (MPI_Request)fromint(request); }
ISM_PMPI(Request_fromint)
MPI_Fint PMPI_Request_c2f(MPI_Request request) { return (MPI_Fint)toint((void *)request); }
ISM_PMPI(Request_c2f)
MPI_Request PMPI_Request_f2c(MPI_Fint request) { return (MPI_Request)fromint((int)request); }
ISM_PMPI(Request_f2c)

int PMPI_Session_toint(MPI_Session session) { return toint((void *)session); }
ISM_PMPI(Session_toint)
MPI_Session PMPI_Session_fromint(int session) { return (MPI_Session)fromint(session); }
ISM_PMPI(Session_fromint)
MPI_Fint PMPI_Session_c2f(MPI_Session session) { return (MPI_Fint)toint((void *)session); }
ISM_PMPI(Session_c2f)
MPI_Session PMPI_Session_f2c(MPI_Fint session) { return (MPI_Session)fromint((int)session); }
ISM_PMPI(Session_f2c)

int PMPI_Type_toint(MPI_Datatype type) { return toint((void *)type); }
ISM_PMPI(Type_toint)
MPI_Datatype PMPI_Type_fromint(int type) { return (MPI_Datatype)fromint(type); }
ISM_PMPI(Type_fromint)
MPI_Fint PMPI_Type_c2f(MPI_Datatype type) { return (MPI_Fint)toint((void *)type); }
ISM_PMPI(Type_c2f)
MPI_Datatype PMPI_Type_f2c(MPI_Fint type) { return (MPI_Datatype)fromint((int)type); }
ISM_PMPI(Type_f2c)

int PMPI_Win_toint(MPI_Win win) { return toint((void *)win); }
ISM_PMPI(Win_toint)
MPI_Win PMPI_Win_fromint(int win) { return (MPI_Win)fromint(win); }
ISM_PMPI(Win_fromint)
MPI_Fint PMPI_Win_c2f(MPI_Win win) { return (MPI_Fint)toint((void *)win); }
ISM_PMPI(Win_c2f)
MPI_Win PMPI_Win_f2c(MPI_Fint win) { return (MPI_Win)fromint((int)win); }
ISM_PMPI(Win_f2c)
