"""mpi_fortran.py: the Fortran bindings of libisthmus (mpif.h, `use mpi`, `use mpi_f08`),
generated from include/mpi.h, the set of functions native/src/abi/ implements
(scripts/mpi_api.py) and the table below, so that the Fortran layer can never drift from
the C layer. scripts/mpi_api.py fortran writes the files; scripts/mpi_api.py check (run by
the test suite) fails when one is stale.

What is generated, into native/fortran/:
  mpif.h        the include file: constants, sentinels in common blocks, EXTERNALs
  mpi.f90       module mpi: the same constants, an explicit interface per routine without
                a choice buffer (as MPICH's module: see gen_mpi_module), MPI_Sizeof
  mpi_f08.f90   modules mpi_f08_types (handle types, TYPE(MPI_Status), comparisons),
                mpi_f08 (generics over the specifics MPI_X_f08 and, with choice buffers
                TYPE(*), DIMENSION(..) (TS 29113), MPI_X_f08ts; ierror optional;
                large-count (_c) forms), mpi_f08_glue, and the MPI_X_f08ts procedures
  bindings.c    the C entry points: pmpi_x_ for mpif.h and `use mpi` (gfortran's names,
                hidden character lengths last), pmpi_x_f08_ for the mpi_f08 specifics
                without choice buffers (mostly aliases of pmpi_x_), ism_f08_X, the BIND(C)
                glue MPI_X_f08ts calls; each converts its arguments and calls PMPI_X, so a
                C profiling layer's MPI_X is bypassed and a Fortran one replaces mpi_x_,
                mpi_x_f08_ (weak) or MPI_X_f08ts by name

How each C parameter crosses is decided by classify() below from its type and name, with
the exceptions listed in the tables; a function whose parameters cannot all be classified
gets no Fortran binding, and docs/mpi-coverage.md says why.
"""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import mpi_api

REPO = mpi_api.REPO
OUT = REPO / "native" / "fortran"
HEADER = mpi_api.HEADER

# C handle type -> the prefix of its PMPI_<prefix>_f2c/_c2f functions, its null handle
HANDLES = {
    "MPI_Comm": ("Comm", "MPI_COMM_NULL"), "MPI_Datatype": ("Type", "MPI_DATATYPE_NULL"),
    "MPI_Group": ("Group", "MPI_GROUP_NULL"), "MPI_Op": ("Op", "MPI_OP_NULL"),
    "MPI_Info": ("Info", "MPI_INFO_NULL"), "MPI_Errhandler": ("Errhandler", "MPI_ERRHANDLER_NULL"),
    "MPI_Request": ("Request", "MPI_REQUEST_NULL"), "MPI_Message": ("Message", "MPI_MESSAGE_NULL"),
    "MPI_Session": ("Session", "MPI_SESSION_NULL"), "MPI_Win": ("Win", "MPI_WIN_NULL"),
    "MPI_File": ("File", "MPI_FILE_NULL"),
}

# Functions whose handle pointers are read and written (freed, completed, committed):
# every other handle pointer is an output.
INOUT_HANDLES = {
    "MPI_Wait", "MPI_Test", "MPI_Start", "MPI_Request_free", "MPI_Cancel", "MPI_Waitall",
    "MPI_Waitany", "MPI_Waitsome", "MPI_Testall", "MPI_Testany", "MPI_Testsome",
    "MPI_Startall", "MPI_Comm_free", "MPI_Type_free", "MPI_Type_commit", "MPI_Group_free",
    "MPI_Op_free", "MPI_Info_free", "MPI_Errhandler_free", "MPI_Session_finalize",
    "MPI_Mrecv", "MPI_Imrecv", "MPI_Mrecv_c", "MPI_Imrecv_c", "MPI_Comm_disconnect",
    "MPI_Win_free", "MPI_File_close",
}

# Booleans: (function or "*", parameter). Scalars in and out, arrays (pass through: C reads
# any non-zero as true, and writes 0 and 1, which are gfortran's .FALSE. and .TRUE.).
LOGICAL = {
    ("MPI_Op_create", "commute"), ("MPI_Op_commutative", "commute"),
    ("MPI_Cart_create", "reorder"), ("MPI_Graph_create", "reorder"),
    ("MPI_Dist_graph_create", "reorder"), ("MPI_Dist_graph_create_adjacent", "reorder"),
    ("MPI_Intercomm_merge", "high"), ("MPI_Status_set_cancelled", "flag"),
    ("MPI_Dist_graph_neighbors_count", "weighted"), ("*", "flag"),
    ("MPI_Cart_create", "periods"), ("MPI_Cart_map", "periods"), ("MPI_Cart_get", "periods"),
    ("MPI_Cart_sub", "remain_dims"),
}

# Output strings: the C buffer each needs (Fortran lengths are one less: no NUL).
STRING_OUT = {
    ("MPI_Comm_get_name", "comm_name"): "MPI_MAX_OBJECT_NAME",
    ("MPI_Type_get_name", "type_name"): "MPI_MAX_OBJECT_NAME",
    ("MPI_Error_string", "string"): "MPI_MAX_ERROR_STRING",
    ("MPI_Get_processor_name", "name"): "MPI_MAX_PROCESSOR_NAME",
    ("MPI_Get_library_version", "version"): "MPI_MAX_LIBRARY_VERSION_STRING",
    ("MPI_Info_get_nthkey", "key"): "MPI_MAX_INFO_KEY",
    ("MPI_Info_get", "value"): "*valuelen + 1",
    # value and pset_name: their length argument says how much room there is (below)
    ("MPI_Info_get_string", "value"): "sized",
    ("MPI_Session_get_nth_pset", "pset_name"): "sized",
}
# Input strings whose leading blanks go too (info keys and values, MPI 4.1 section 10.1).
STRIP_LEADING = {"MPI_Info_set", "MPI_Info_get", "MPI_Info_delete", "MPI_Info_get_valuelen",
                 "MPI_Info_get_string"}

# Handle arrays: their length (a C expression over the call's arguments).
HANDLE_ARRAYS = {
    ("MPI_Type_create_struct", "array_of_types"): "*count",
    ("MPI_Type_create_struct_c", "array_of_types"): "*count",
    ("MPI_Type_struct", "array_of_types"): "*count",
    ("MPI_Type_get_contents", "array_of_datatypes"): "*max_datatypes",
    ("MPI_Startall", "array_of_requests"): "*count",
    ("MPI_Waitall", "array_of_requests"): "*count",
    ("MPI_Testall", "array_of_requests"): "*count",
    ("MPI_Waitany", "array_of_requests"): "*count",
    ("MPI_Testany", "array_of_requests"): "*count",
    ("MPI_Waitsome", "array_of_requests"): "*incount",
    ("MPI_Testsome", "array_of_requests"): "*incount",
}
# the w-collectives' type arrays: one per peer (ism_f_peers: send or receive side)
for _f in ("Alltoallw", "Ialltoallw", "Alltoallw_init", "Neighbor_alltoallw",
           "Ineighbor_alltoallw", "Neighbor_alltoallw_init"):
    _nb = " | ISM_F_NEIGHBORS" if "eighbor" in _f else ""
    for _s in ("", "_c"):
        HANDLE_ARRAYS[(f"MPI_{_f}{_s}", "sendtypes")] = f"ism_f_peers(PMPI_Comm_f2c(*comm), ISM_F_SEND{_nb})"
        HANDLE_ARRAYS[(f"MPI_{_f}{_s}", "recvtypes")] = f"ism_f_peers(PMPI_Comm_f2c(*comm), 0{_nb})"

# Fortran indices count from 1 (MPI_Waitany's index, MPI_Waitsome's indices).
INDEX_OUT = {("MPI_Waitany", "indx"): None, ("MPI_Testany", "indx"): None,
             ("MPI_Waitsome", "array_of_indices"): "*outcount",
             ("MPI_Testsome", "array_of_indices"): "*outcount"}

# Parameters C has and Fortran does not: the value C gets instead.
DROPPED = {("MPI_Init", "argc"): "NULL", ("MPI_Init", "argv"): "NULL",
           ("MPI_Init_thread", "argc"): "NULL", ("MPI_Init_thread", "argv"): "NULL",
           ("MPI_Info_create_env", "argc"): "0", ("MPI_Info_create_env", "argv"): "NULL"}

# Functions whose C side is written by hand (native/fortran/callbacks.c): their Fortran
# arguments are procedures, which need a C function in between.
HANDWRITTEN = {
    "MPI_Op_create": "procedure", "MPI_Comm_create_errhandler": "procedure",
    "MPI_Session_create_errhandler": "procedure", "MPI_Errhandler_create": "procedure",
    "MPI_Comm_create_keyval": "procedure", "MPI_Type_create_keyval": "procedure",
    "MPI_Keyval_create": "procedure", "MPI_Grequest_start": "procedure",
}

# Functions MPI defines for C only, or not for every binding.
C_ONLY = re.compile(r"(_c2f|_f2c|_toint|_fromint|_c2f08|_f082c)$")
# Removed in MPI 3.0 (abi/legacy.c) or deprecated since MPI 2.0: mpif.h and `use mpi` only.
NOT_F08 = {"MPI_Address", "MPI_Type_hindexed", "MPI_Type_hvector", "MPI_Type_struct",
           "MPI_Type_extent", "MPI_Type_lb", "MPI_Type_ub", "MPI_Errhandler_create",
           "MPI_Errhandler_get", "MPI_Errhandler_set", "MPI_Attr_delete", "MPI_Attr_get",
           "MPI_Attr_put", "MPI_Keyval_create", "MPI_Keyval_free"}
# MPI-1's Fortran forms of these take default INTEGERs where later ones take address-sized
# integers: (function, parameter) -> converted through MPI_Aint.
MPI1_INTS = {("MPI_Address", "address"), ("MPI_Type_extent", "extent"),
             ("MPI_Type_lb", "displacement"), ("MPI_Type_ub", "displacement"),
             ("MPI_Type_hvector", "stride"), ("MPI_Type_hindexed", "array_of_displacements"),
             ("MPI_Type_struct", "array_of_displacements")}

# For the f08 choice buffers: the buffers that hold exactly (count, datatype) of data, so a
# noncontiguous section can be described by a datatype (everything else is copied to and
# from a contiguous image of the section). Rooted and all-to-all collectives' "many" side
# holds one block per rank and reductions must give a user function the program's own
# datatype: those take the copy.
def buffer_is_triple(fn: str, buf: str) -> bool:
    base = re.sub(r"^MPI_(I(?=[a-z]|[A-Z][a-z]))?", "", fn)
    base = re.sub(r"(_init)?(_c)?$", "", base)
    if base.lower() in ("bcast",):
        return True
    coll = re.match(r"(Neighbor_)?(all)?(gather|scatter|alltoall|reduce|scan|exscan)",
                    base, re.I)
    if not coll:
        return True     # point-to-point, probes, packing
    kind = coll.group(3).lower()
    if kind in ("gather",) and buf == "sendbuf":
        return True
    if kind == "scatter" and buf == "recvbuf":
        return True
    return False


@dataclasses.dataclass
class Param:
    name: str
    ctype: str          # as declared, without the name
    array: bool
    kind: str           # see classify()
    intent: str = "in"  # in, out, inout
    extra: str = ""     # a length expression, a handle type, a C buffer size ...

    @property
    def base(self) -> str:
        return self.ctype.replace("const ", "").replace("*", "").strip()


@dataclasses.dataclass
class Func:
    name: str                       # MPI_Send
    ret: str                        # int, double, MPI_Aint
    params: list[Param]
    why: dict[str, str]             # binding -> why it has none ("f77", "f08")
    c_name: str = ""                # the C function called (PMPI_...)

    @property
    def large(self) -> bool:
        return self.name.endswith("_c") and not C_ONLY.search(self.name)

    def has(self, binding: str) -> bool:
        return binding not in self.why


def _params(params: str) -> list[tuple[str, str, bool]] | None:
    out = []
    params = re.sub(r",\s*\.\.\.$", "", params)
    for p in ([] if params in ("void", "") else params.split(",")):
        p = p.strip()
        m = re.match(r"(.*?)\s*\b([A-Za-z_][A-Za-z_0-9]*)\s*((\[\s*\d*\s*\])*)$", p)
        if not m:
            return None
        dims = m.group(3)
        ctype = m.group(1).strip()
        if dims.count("[") == 2:
            ctype += " [][3]"
        out.append((ctype, m.group(2), bool(dims)))
    return out


def classify(fn: str, ret: str, params: str) -> Func:
    why: dict[str, str] = {}
    func = Func(fn, ret, [], why, "P" + fn)
    if C_ONLY.search(fn):
        why["f77"] = why["f08"] = "C only (MPI defines no Fortran form)"
        return func
    if fn.endswith("_c"):
        why["f77"] = "large counts: mpi_f08 only"
    if fn in NOT_F08:
        why["f08"] = "removed or deprecated before MPI 3.0: mpif.h and mpi only"
    parsed = _params(params)
    if parsed is None or ret not in ("int", "double", "MPI_Aint"):
        why["f77"] = why["f08"] = "no Fortran form generated"
        return func
    for ctype, name, arr in parsed:
        p = _classify_param(fn, ctype, name, arr)
        if p is None:
            why.setdefault("f77", f"parameter {name} ({ctype}) has no Fortran mapping")
            why.setdefault("f08", why["f77"])
            return func
        func.params.append(p)
    return func


def _classify_param(fn: str, ctype: str, name: str, arr: bool) -> Param | None:
    base = ctype.replace("const ", "").strip()
    # MPI-1's prototypes (abi/legacy.c) had no const: their arrays are inputs all the same
    const = ctype.startswith("const") or (fn in NOT_F08 and arr)
    key = (fn, name)
    gen = re.sub(r"_c$", "", fn)
    if key in DROPPED:
        return Param(name, ctype, arr, "drop", extra=DROPPED[key])
    if gen in ("MPI_Comm_idup", "MPI_Comm_idup_with_info") and name == "newcomm":
        return Param(name, ctype, arr, "handle_deferred", "out", "MPI_Comm")
    if fn in HANDWRITTEN and (base.endswith("function *") or base.endswith("fn *")
                              or name == "extra_state"):
        return Param(name, ctype, arr, "proc" if name != "extra_state" else "extra_state")
    if ctype == "int [][3]":
        return Param(name, ctype, True, "ranges", "in")
    if (gen, name) in MPI1_INTS:
        if base in ("MPI_Aint", "MPI_Aint *"):
            kind = "aint_as_int_array" if arr else ("aint_as_int_out" if "*" in base
                                                    else "aint_as_int")
            return Param(name, ctype, arr, kind, "out" if kind.endswith("_out") else "in")
    if key in STRING_OUT or (base == "char *" and not const and not arr):
        size = STRING_OUT.get(key)
        return None if size is None else Param(name, ctype, arr, "string_out", "out", size)
    if base in ("char *", "char") and const:
        return Param(name, ctype, arr, "string_in", "in",
                     "lead" if fn in STRIP_LEADING else "")
    if (fn, name) in LOGICAL or (("*", name) in LOGICAL and base == "int *"):
        if arr:
            return Param(name, ctype, arr, "logical_array", "in" if const else "out",
                         "*maxdims" if fn == "MPI_Cart_get" else "")
        return Param(name, ctype, arr, "logical_out" if "*" in base else "logical",
                     "out" if "*" in base else "in")
    if (gen, name) in INDEX_OUT or (fn, name) in INDEX_OUT:
        n = INDEX_OUT.get((gen, name), INDEX_OUT.get((fn, name)))
        return Param(name, ctype, arr, "indices_out" if n else "index_out", "out", n or "")
    if name in ("weights", "sourceweights", "destweights"):
        return Param(name, ctype, arr, "weights", "in" if const else "out")
    # handles
    hb = base.rstrip(" *")
    if hb in HANDLES:
        if arr:
            n = HANDLE_ARRAYS.get(key)
            if n is None:
                return None
            intent = "in" if const else ("inout" if gen in INOUT_HANDLES else "out")
            return Param(name, ctype, arr, "handle_array", intent, n)
        if "*" in base:
            return Param(name, ctype, arr, "handle",
                         "inout" if gen in INOUT_HANDLES else "out", hb)
        return Param(name, ctype, arr, "handle", "in", hb)
    if base in ("MPI_Status *",) or (base == "MPI_Status" and arr):
        if fn in ("MPI_Waitall", "MPI_Testall", "MPI_Waitsome", "MPI_Testsome"):
            return Param(name, ctype, arr, "statuses", "out")
        if const:
            return Param(name, ctype, arr, "status", "in")
        setter = re.match(r"MPI_Status_(set|get)_", fn)
        if setter:
            return Param(name, ctype, arr, "status", "inout" if setter.group(1) == "set" else "in")
        return Param(name, ctype, arr, "status_out", "out")
    if base == "MPI_Fint *" and "status" in name:
        return Param(name, ctype, arr, "f_status", "in" if const else "out")
    if base == "MPI_F08_status *":
        return Param(name, ctype, arr, "f08_status", "in" if const else "out")
    # attributes and their extra state
    if name == "attribute_val":
        legacy = fn.startswith("MPI_Attr_")
        if "get" in fn:
            return Param(name, ctype, arr, "attr_out", "out", "int" if legacy else "aint")
        return Param(name, ctype, arr, "attr_in", "in", "int" if legacy else "aint")
    # an address given back (MPI_Alloc_mem, MPI_Win_allocate[_shared], MPI_Win_shared_query):
    # TYPE(C_PTR) in mpi_f08, INTEGER(KIND=MPI_ADDRESS_KIND) before it; not a choice buffer
    if name == "baseptr":
        return Param(name, ctype, arr, "baseptr", "out")
    if name == "buffer_addr":
        return Param(name, ctype, arr, "buffer_addr", "out")
    if (fn, name) in (("MPI_Get_address", "location"), ("MPI_Address", "location"),
                      ("MPI_Buffer_attach", "buffer"), ("MPI_Free_mem", "base"),
                      ("MPI_F_sync_reg", "buf")):
        return Param(name, ctype, arr, "location", "in")
    # choice buffers
    if base in ("void *",) and not arr:
        return Param(name, ctype, arr, "buffer", "in" if const else "inout")
    # plain numbers
    num = {"int": "int", "MPI_Aint": "aint", "MPI_Count": "count", "MPI_Offset": "offset",
           "MPI_Fint": "int"}
    nb = base.rstrip(" *")
    if nb in num:
        kind = num[nb]
        if arr:
            return Param(name, ctype, arr, kind + "_array", "in" if const else
                         ("inout" if fn == "MPI_Dims_create" else "out"))
        if "*" in base:
            inout = {("MPI_Pack", "position"), ("MPI_Unpack", "position"),
                     ("MPI_Pack_external", "position"), ("MPI_Unpack_external", "position"),
                     ("MPI_Info_get_string", "buflen"), ("MPI_Session_get_nth_pset", "pset_len"),
                     ("MPI_Comm_free_keyval", "comm_keyval"), ("MPI_Type_free_keyval",
                                                               "type_keyval"),
                     ("MPI_Keyval_free", "keyval")}
            return Param(name, ctype, arr, kind, "inout" if (gen, name) in inout else "out")
        return Param(name, ctype, arr, kind, "in")
    return None


def functions() -> list[Func]:
    impl = mpi_api.implemented()
    out = []
    for ret, name, params in mpi_api.declared():
        if name in impl:
            out.append(classify(name, ret, params))
    names = {f.name: f for f in out}
    # a large-count form that Fortran cannot tell from the int form (both counts are
    # INTEGER(KIND=8) when MPI_ADDRESS_KIND == MPI_COUNT_KIND) is left out of the generic
    for f in out:
        if f.large and f.has("f08"):
            base = names.get(f.name[:-2])
            if base is None or not base.has("f08"):
                f.why["f08"] = "its int form has no mpi_f08 binding"
            elif _f08_signature(base) == _f08_signature(f):
                f.why["f08"] = ("the same Fortran interface as " + base.name +
                                " (MPI_ADDRESS_KIND equals MPI_COUNT_KIND)")
    return out


# ---- C entry points (bindings.c) --------------------------------------------------------

def f77_symbol(fn: str, prof: bool = True) -> str:
    return ("p" if prof else "") + fn.lower() + "_"


CHOICE = ("buffer", "location")


def has_choice(f: Func) -> bool:
    """Whether f takes a choice buffer (TYPE(*), DIMENSION(..) in mpi_f08)."""
    return any(p.kind in CHOICE for p in f.params)


def f08_specific(f: Func, prof: bool = False) -> str:
    """The name of f's mpi_f08 specific procedure (MPI 4.1 table 19.1): MPI_X_f08ts with
    choice buffers (TS 29113 interfaces), else MPI_X_f08. A Fortran profiling layer
    replaces it by defining a procedure of that name."""
    return ("P" if prof else "") + f.name + ("_f08ts" if has_choice(f) else "_f08")


def f08_glue(f: Func) -> str:
    """The BIND(C) C function the mpi_f08 specifics of a routine with choice buffers call
    (internal to libisthmus_fortran)."""
    return "ism_f08_" + f.name[4:]


def is_persistent(f: Func) -> bool:
    return bool(re.search(r"_init(_c)?$", f.name))


def request_out(f: Func) -> Param | None:
    for p in f.params:
        if p.kind == "handle" and p.extra == "MPI_Request" and p.intent == "out":
            return p
    return None


@dataclasses.dataclass
class CCode:
    params: list[str]
    hidden: list[str]
    decls: list[str]
    pre: list[str]
    args: list[str]
    post: list[str]
    cleanup: list[str]


def _count_type(f: Func) -> str:
    return "MPI_Count" if f.large else "int"


def c_code(f: Func, binding: str) -> CCode:
    """How f's C entry point for one binding takes its arguments and calls P<f>: "f77"
    (mpif.h and `use mpi`) and "f08" (an mpi_f08 specific without choice buffers) are
    gfortran externals (by reference, hidden character lengths last); "f08c" is the BIND(C)
    glue an mpi_f08 specific with choice buffers calls (buffers and strings as CFI
    descriptors)."""
    cc = CCode([], [], [], [], [], [], [])
    names = {p.name: p for p in f.params}
    req = request_out(f)
    skip: set[str] = set()          # count/datatype arguments a buffer triple supplies
    # the length argument of a "sized" output string goes through c_<name> (below)
    sized = {("buflen" if "buflen" in names else "pset_len") for p in f.params
             if p.kind == "string_out" and p.extra == "sized"}
    i = 0
    while i < len(f.params):
        p = f.params[i]
        nm, k = p.name, p.kind
        cst = "const " if p.intent == "in" else ""
        if nm in skip:
            # the Fortran argument is still there; the triple supplies the C argument
            ftype = "MPI_Count" if p.kind == "count" else "MPI_Fint"
            cc.params.append(f"const {ftype} *{nm}")
            i += 1
            continue
        if k == "drop":
            cc.args.append(p.extra)
        elif k in ("int", "aint", "count", "offset"):
            t = {"int": "MPI_Fint", "aint": "MPI_Aint", "count": "MPI_Count",
                 "offset": "MPI_Offset"}[k]
            cc.params.append(f"{cst}{t} *{nm}")
            cc.args.append(f"&c_{nm}" if nm in sized else f"*{nm}" if p.intent == "in" else nm)
        elif k in ("int_array", "aint_array", "count_array", "index_out"):
            t = {"int_array": "MPI_Fint", "aint_array": "MPI_Aint", "count_array": "MPI_Count",
                 "index_out": "MPI_Fint"}[k]
            cc.params.append(f"{cst}{t} *{nm}")
            # MPI-1's prototypes lack the const of their input arrays
            cc.args.append(nm if cst == "" or p.ctype.startswith("const") else f"({t} *){nm}")
            if k == "index_out":
                cc.post.append(f"if (rc == MPI_SUCCESS && *{nm} >= 0)\n        *{nm} += 1;")
        elif k == "indices_out":
            cc.params.append(f"MPI_Fint *{nm}")
            cc.args.append(nm)
            n = p.extra
            cc.post.append(f"if ((rc == MPI_SUCCESS || rc == MPI_ERR_IN_STATUS) && {n} > 0)\n"
                           f"        for (int i = 0; i < {n}; i++)\n"
                           f"            {nm}[i] += 1;")
        elif k == "ranges":
            cc.params.append(f"MPI_Fint (*{nm})[3]")
            cc.args.append(nm)
        elif k == "logical":
            cc.params.append(f"const MPI_Fint *{nm}")
            cc.args.append(f"ism_f_bool(*{nm})")
        elif k == "logical_out":
            cc.params.append(f"MPI_Fint *{nm}")
            cc.args.append(nm)
            cc.post.append(f"*{nm} = ism_f_logical(*{nm});")
        elif k == "logical_array":
            cc.params.append(f"{cst}MPI_Fint *{nm}")
            cc.args.append(nm)
            if p.intent == "out":
                cc.post.append(f"for (int i = 0; rc == MPI_SUCCESS && i < {p.extra}; i++)\n"
                               f"        {nm}[i] = ism_f_logical({nm}[i]);")
        elif k == "weights":
            cc.params.append(f"{cst}MPI_Fint *{nm}")
            cc.args.append(f"ism_f_weights({nm})")
        elif k == "handle":
            pre, null = HANDLES[p.extra]
            cc.params.append(f"{cst}MPI_Fint *{nm}")
            if p.intent == "in":
                cc.args.append(f"PMPI_{pre}_f2c(*{nm})")
            else:
                init = f"PMPI_{pre}_f2c(*{nm})" if p.intent == "inout" else null
                cc.decls.append(f"{p.extra} c_{nm} = {init};")
                cc.args.append(f"&c_{nm}")
                if p.intent == "inout":
                    cc.post.append(f"ism_f_store({nm}, PMPI_{pre}_c2f(c_{nm}), "
                                   f"(MPI_Fint)(intptr_t){null});")
                else:
                    cc.post.append(f"*{nm} = ism_abi_f_hold(PMPI_{pre}_c2f(c_{nm}));")
        elif k == "handle_deferred":
            # written when the request completes (MPI_Comm_idup): a cell that outlives the call
            cc.params.append(f"MPI_Fint *{nm}")
            cc.decls.append(f"MPI_Comm *c_{nm} = ism_f_comm_cell();")
            cc.pre.append(f"if (!c_{nm})\n        rc = ism_f_nomem(\"{f.name}\");")
            cc.args.append(f"c_{nm}")
            cc.cleanup.append(f"ism_f_keep_comm(rc, {req.name}, {nm}, c_{nm});")
        elif k == "handle_array":
            ht = p.base.rstrip(" *")
            pre, null = HANDLES[ht]
            n = p.extra
            cc.params.append(f"{cst}MPI_Fint *{nm}")
            keep = p.intent == "in" and req is not None   # read until completion
            cc.decls.append(f"{ht} *c_{nm} = NULL;" if keep else f"{ht} s_{nm}[8], *c_{nm} = NULL;")
            cc.decls.append(f"int n_{nm} = 0;")
            alloc = (f"ism_f_kept_alloc(n_{nm}, sizeof *c_{nm})" if keep else
                     f"ism_f_alloc(n_{nm}, sizeof *c_{nm}, s_{nm}, 8)")
            cc.pre.append(f"n_{nm} = {n};\n"
                          f"    c_{nm} = {alloc};\n"
                          f"    if (!c_{nm})\n        rc = ism_f_nomem(\"{f.name}\");")
            if p.intent in ("in", "inout"):
                cc.pre.append(f"for (int i = 0; rc == MPI_SUCCESS && i < n_{nm}; i++)\n"
                              f"        c_{nm}[i] = PMPI_{pre}_f2c({nm}[i]);")
            else:
                cc.pre.append(f"for (int i = 0; rc == MPI_SUCCESS && i < n_{nm}; i++)\n"
                              f"        c_{nm}[i] = {null};")
            cc.args.append(f"c_{nm}")
            if p.intent == "inout":
                cc.post.append(f"for (int i = 0; c_{nm} && i < n_{nm}; i++)\n"
                               f"        ism_f_store(&{nm}[i], PMPI_{pre}_c2f(c_{nm}[i]), "
                               f"(MPI_Fint)(intptr_t){null});")
            elif p.intent == "out":
                cc.post.append(f"for (int i = 0; rc == MPI_SUCCESS && i < n_{nm}; i++)\n"
                               f"        {nm}[i] = ism_abi_f_hold(PMPI_{pre}_c2f(c_{nm}[i]));")
            if keep:
                cc.cleanup.append(f"ism_f_keep_free(rc, {req.name}, c_{nm});")
            else:
                cc.cleanup.append(f"if (c_{nm} != s_{nm})\n        free(c_{nm});")
        elif k in ("status", "status_out", "statuses", "f_status"):
            cc.params.append(f"{cst}MPI_Fint *{nm}")
            if k == "status_out":
                cc.args.append(f"ism_f_status({nm})")
            elif k == "statuses":
                cc.args.append(f"ism_f_statuses({nm})")
            elif k == "status":
                cc.args.append(f"({'const ' if p.ctype.startswith('const') else ''}MPI_Status *){nm}")
            else:
                cc.args.append(f"({cst}MPI_Fint *){nm}")
        elif k == "f08_status":
            cc.params.append(f"{cst}MPI_F08_status *{nm}")
            cc.args.append(nm)
        elif k == "string_in":
            lead = 1 if p.extra == "lead" else 0
            if binding != "f08c":
                cc.params.append(f"const char *{nm}")
                cc.hidden.append(f"size_t {nm}_len")
                src = f"{nm}, {nm}_len"
            else:
                cc.params.append(f"CFI_cdesc_t *{nm}")
                src = f"{nm}->base_addr, {nm}->elem_len"
            cc.decls.append(f"char *c_{nm} = ism_f_cstr({src}, {lead});")
            cc.pre.append(f"if (!c_{nm})\n        rc = ism_f_nomem(\"{f.name}\");")
            cc.args.append(f"c_{nm}")
            cc.cleanup.append(f"free(c_{nm});")
        elif k == "string_out":
            if binding != "f08c":
                cc.params.append(f"char *{nm}")
                cc.hidden.append(f"size_t {nm}_len")
                dst, flen = nm, f"{nm}_len"
            else:
                cc.params.append(f"CFI_cdesc_t *{nm}")
                dst, flen = f"{nm}->base_addr", f"{nm}->elem_len"
            flag = "flag" in names
            if p.extra == "sized":
                # MPI_Info_get_string, MPI_Session_get_nth_pset: the length argument says
                # how much room there is and comes back as the length the value needs
                ln = "buflen" if "buflen" in names else "pset_len"
                cc.decls.append(f"int c_{ln} = 0;")
                cc.decls.append(f"char *c_{nm} = NULL;")
                cc.pre.append(f"c_{ln} = *{ln} > 0 ? (int)ism_f_min((size_t)*{ln}, {flen}) + 1 : 0;\n"
                              f"    if (!(c_{nm} = malloc((size_t)c_{ln} + 1)))\n"
                              f"        rc = ism_f_nomem(\"{f.name}\");")
                cc.args.append(f"c_{nm}")
                cond = " && *flag" if flag else ""
                cc.post.append(f"if (rc == MPI_SUCCESS{cond} && *{ln} > 0)\n"
                               f"        ism_f_fstr({dst}, {flen}, c_{nm});\n"
                               f"    if (rc == MPI_SUCCESS{cond})\n"
                               f"        *{ln} = c_{ln} > 0 ? c_{ln} - 1 : 0;")
            else:
                cc.decls.append(f"char *c_{nm} = malloc((size_t)({p.extra} > 0 ? {p.extra} : 1));")
                cc.pre.append(f"if (!c_{nm})\n        rc = ism_f_nomem(\"{f.name}\");")
                cc.args.append(f"c_{nm}")
                cond = " && *flag" if flag else ""
                cc.post.append(f"if (rc == MPI_SUCCESS{cond})\n        ism_f_fstr({dst}, {flen}, c_{nm});")
            cc.cleanup.append(f"free(c_{nm});")
        elif k in ("attr_in", "attr_out"):
            t = "MPI_Aint" if p.extra == "aint" else "MPI_Fint"
            if k == "attr_in":
                cc.params.append(f"const {t} *{nm}")
                cc.args.append(f"(void *)(intptr_t)*{nm}")
            else:
                keyval = next(q.name for q in f.params if "keyval" in q.name)
                cc.params.append(f"{t} *{nm}")
                cc.decls.append(f"void *c_{nm} = NULL;")
                cc.args.append(f"&c_{nm}")
                cc.post.append(f"if (rc == MPI_SUCCESS && *flag)\n"
                               f"        *{nm} = ({t})ism_f_attr(*{keyval}, c_{nm});")
        elif k == "baseptr":
            cc.params.append(f"{'MPI_Aint' if binding == 'f77' else 'void *'} *{nm}")
            cc.args.append(nm)
        elif k == "buffer_addr":
            if binding == "f77":
                # MPI's Fortran form returns no address here (there is no pointer to hold it)
                cc.params.append(f"void *{nm}")
                cc.decls.append(f"void *c_{nm} = NULL;")
                cc.pre.append(f"(void){nm};")
                cc.args.append(f"&c_{nm}")
            else:
                cc.params.append(f"void **{nm}")
                cc.args.append(nm)
        elif k == "aint_as_int":
            cc.params.append(f"const MPI_Fint *{nm}")
            cc.args.append(f"(MPI_Aint)*{nm}")
        elif k == "aint_as_int_out":
            cc.params.append(f"MPI_Fint *{nm}")
            cc.decls.append(f"MPI_Aint c_{nm} = 0;")
            cc.args.append(f"&c_{nm}")
            cc.post.append(f"if (rc == MPI_SUCCESS)\n        rc = ism_f_to_int(\"{f.name}\", c_{nm}, {nm});")
        elif k == "aint_as_int_array":
            cc.params.append(f"const MPI_Fint *{nm}")
            cc.decls.append(f"MPI_Aint *c_{nm} = NULL;")
            cc.pre.append(f"if (!(c_{nm} = ism_f_alloc(*count, sizeof *c_{nm}, NULL, 0)))\n"
                          f"        rc = ism_f_nomem(\"{f.name}\");\n"
                          f"    for (int i = 0; rc == MPI_SUCCESS && i < *count; i++)\n"
                          f"        c_{nm}[i] = {nm}[i];")
            cc.args.append(f"c_{nm}")
            cc.cleanup.append(f"free(c_{nm});")
        elif k in ("location", "buffer") and binding != "f08c":
            cc.params.append(f"{cst}void *{nm}")
            cc.args.append(f"ism_f_buf({nm})")
        elif k == "location":
            cc.params.append(f"CFI_cdesc_t *{nm}")
            cc.args.append(f"ism_f08_addr({nm})")
        elif k == "buffer":
            cc.params.append(f"CFI_cdesc_t *{nm}")
            flags = ["ISM_F08_IN"] + (["ISM_F08_OUT"] if p.intent != "in" else [])
            if is_persistent(f):
                flags.append("ISM_F08_PERSIST")
            nxt = f.params[i + 1:i + 3]
            triple = (len(nxt) == 2 and nxt[0].kind in ("int", "count") and
                      nxt[0].intent == "in" and nxt[1].kind == "handle" and
                      nxt[1].extra == "MPI_Datatype" and nxt[1].intent == "in" and
                      buffer_is_triple(f.name, nm))
            cc.decls.append(f"ism_f08_buf b_{nm} = ISM_F08_BUF_INIT;")
            if triple:
                cn, tn = nxt[0].name, nxt[1].name
                cc.pre.append(f"rc = ism_f08_triple({nm}, *{cn}, PMPI_Type_f2c(*{tn}), "
                              f"{' | '.join(flags)}, \"{f.name}\", &b_{nm});")
                cc.args += [f"b_{nm}.buf", f"({_count_type(f)})b_{nm}.count",
                            f"b_{nm}.type"]
                skip.update({cn, tn})
            else:
                cc.pre.append(f"rc = ism_f08_image({nm}, {' | '.join(flags)}, "
                              f"\"{f.name}\", &b_{nm});")
                cc.args.append(f"b_{nm}.buf")
            rq = req.name if req is not None and not is_persistent(f) else "NULL"
            cc.cleanup.insert(0, f"ism_f08_done(&b_{nm}, rc, {rq});")
            cc.decls.sort(key=lambda d: not d.startswith("ism_f08_buf"))
        else:
            raise ValueError(f"{f.name}: no C code for {k} ({nm})")
        i += 1
    return cc


# Routines whose Fortran form has no IERROR (MPI-4.0 19.1.17: MPI_F_SYNC_REG(buf)). A
# legacy entry point that read one would write through whatever the caller left in the
# second argument's register: `use mpi` and mpif.h have no interface for choice routines.
NO_IERROR = {"MPI_F_sync_reg"}


def c_entry(f: Func, binding: str) -> tuple[str, str]:
    """(the parameter list, the body) of f's entry point for a binding."""
    cc = c_code(f, binding)
    no_ierror = f.name in NO_IERROR and binding == "f77"
    params = cc.params + ([] if f.ret != "int" or no_ierror else ["MPI_Fint *ierror"]) + cc.hidden
    plist = ", ".join(params) if params else "void"
    call = f"{f.c_name}({', '.join(cc.args)})"
    if f.ret != "int":
        return plist, f"{{\n    return {call};\n}}\n"
    lines = []
    if not (cc.decls or cc.pre or cc.post or cc.cleanup):
        lines.append(f"    int rc = {call};")
    else:
        lines.append("    int rc = MPI_SUCCESS;")
        lines += ["    " + d for d in cc.decls]
        for pr in cc.pre:
            lines.append("    if (rc == MPI_SUCCESS) {" if "\n" in pr else "    if (rc == MPI_SUCCESS)")
            lines.append("        " + pr.replace("\n    ", "\n        ") if "\n" in pr
                         else "        " + pr)
            if "\n" in pr:
                lines.append("    }")
        lines.append("    if (rc == MPI_SUCCESS)")
        lines.append(f"        rc = {call};")
        lines += ["    " + x for x in cc.post]
        lines += ["    " + x for x in cc.cleanup]
    lines.append("    (void)rc;" if no_ierror else "    if (ierror)\n        *ierror = rc;")
    return plist, "{\n" + "\n".join(lines) + "\n}\n"


def c_ret(f: Func) -> str:
    return {"int": "void", "double": "double", "MPI_Aint": "MPI_Aint"}[f.ret]


def gen_bindings_c(funcs: list[Func]) -> str:
    out = [
        "/* bindings.c (fortran): the C entry points of the Fortran bindings. pmpi_x_ serves",
        " * mpif.h and `use mpi` (gfortran's name for MPI_X: arguments by reference, hidden",
        " * character lengths last), pmpi_x_f08_ the mpi_f08 specific MPI_X_f08 (the same",
        " * conventions, ierror may be absent: mostly an alias of pmpi_x_), each with a weak",
        " * mpi_x_ / mpi_x_f08_ a Fortran profiling layer can replace. A routine with choice",
        " * buffers has ism_f08_X instead, the BIND(C) function its mpi_f08 specifics",
        " * MPI_X_f08ts and PMPI_X_f08ts (mpi_f08.f90) call, with buffers and strings as CFI",
        " * descriptors. Each converts its arguments (handles, booleans, strings, statuses,",
        " * sentinels) and calls PMPI_X.",
        " * GENERATED by scripts/mpi_api.py fortran from include/mpi.h; do not edit. */",
        "#include <stdint.h>",
        "#include <stdlib.h>",
        "",
        "#include \"glue.h\"",
        "",
    ]

    def define(ret: str, sym: str, entry: tuple[str, str], weak: str | None) -> None:
        out.append(f"{ret} {sym}({entry[0]});")
        out.append(f"{ret} {sym}({entry[0]})\n{entry[1]}" +
                   (f"ISM_F_WEAK({weak}, {sym})\n" if weak else ""))

    for f in funcs:
        if f.name in HANDWRITTEN or (not f.has("f77") and not f.has("f08")):
            continue
        ret = c_ret(f)
        f77 = None
        if f.has("f77"):
            f77 = c_entry(f, "f77")
            define(ret, f77_symbol(f.name), f77, f77_symbol(f.name, False))
        if not f.has("f08"):
            continue
        if has_choice(f):
            define(ret, f08_glue(f), c_entry(f, "f08c"), None)
            continue
        f08 = c_entry(f, "f08")
        sym, weak = f77_symbol(f08_specific(f, True), False), f77_symbol(f08_specific(f), False)
        if f77 is not None and f77 == f08:
            out.append(f"ISM_F_ALIAS({sym}, {f77_symbol(f.name)})")
            out.append(f"ISM_F_WEAK({weak}, {f77_symbol(f.name)})\n")
        else:
            define(ret, sym, f08, weak)
    return "\n".join(out)


# ---- Fortran declarations ----------------------------------------------------------------

KIND = {"int": "INTEGER", "aint": "INTEGER(KIND=MPI_ADDRESS_KIND)",
        "count": "INTEGER(KIND=MPI_COUNT_KIND)", "offset": "INTEGER(KIND=MPI_OFFSET_KIND)"}
# the f08 abstract interface of each procedure argument
PROC_F08 = {
    ("MPI_Op_create", "user_fn"): "MPI_User_function",
    ("MPI_Comm_create_errhandler", "comm_errhandler_fn"): "MPI_Comm_errhandler_function",
    ("MPI_Session_create_errhandler", "session_errhandler_fn"): "MPI_Session_errhandler_function",
    ("MPI_Comm_create_keyval", "comm_copy_attr_fn"): "MPI_Comm_copy_attr_function",
    ("MPI_Comm_create_keyval", "comm_delete_attr_fn"): "MPI_Comm_delete_attr_function",
    ("MPI_Type_create_keyval", "type_copy_attr_fn"): "MPI_Type_copy_attr_function",
    ("MPI_Type_create_keyval", "type_delete_attr_fn"): "MPI_Type_delete_attr_function",
    ("MPI_Grequest_start", "query_fn"): "MPI_Grequest_query_function",
    ("MPI_Grequest_start", "free_fn"): "MPI_Grequest_free_function",
    ("MPI_Grequest_start", "cancel_fn"): "MPI_Grequest_cancel_function",
}


def is_nonblocking(f: Func) -> bool:
    return request_out(f) is not None


def fdecl(f: Func, p: Param, binding: str) -> tuple[str, str, str, bool]:
    """(type, attributes, dimensions, ignore-TKR) of p in a Fortran interface."""
    k = p.kind
    intent = {"in": "INTENT(IN)", "out": "INTENT(OUT)", "inout": "INTENT(INOUT)"}[p.intent]
    f08 = binding in ("f08", "f08c")
    if k in KIND:
        return KIND[k], intent, "", False
    if k in ("int_array", "aint_array", "count_array", "weights"):
        return KIND[k.replace("_array", "").replace("weights", "int")], intent, "(*)", False
    if k in ("index_out",):
        return "INTEGER", intent, "", False
    if k in ("indices_out",):
        return "INTEGER", intent, "(*)", False
    if k == "ranges":
        return "INTEGER", intent, "(3,*)", False
    if k in ("logical", "logical_out"):
        return "LOGICAL", intent, "", False
    if k == "logical_array":
        return "LOGICAL", intent, "(*)", False
    if k in ("handle", "handle_deferred"):
        t = f"TYPE({p.extra})" if f08 else "INTEGER"
        if k == "handle_deferred" and f08:
            intent += ", ASYNCHRONOUS"
        return t, intent, "", False
    if k == "handle_array":
        t = f"TYPE({p.base.rstrip(' *')})" if f08 else "INTEGER"
        return t, intent, "(*)", False
    if k in ("status", "status_out"):
        return ("TYPE(MPI_Status)", intent, "", False) if f08 else \
            ("INTEGER", intent, "(MPI_STATUS_SIZE)", False)
    if k == "statuses":
        return ("TYPE(MPI_Status)", "", "(*)", False) if f08 else \
            ("INTEGER", "", "(MPI_STATUS_SIZE,*)", False)
    if k == "f_status":
        return "INTEGER", intent, "(MPI_STATUS_SIZE)", False
    if k == "f08_status":
        return "TYPE(MPI_Status)", intent, "", False
    if k in ("string_in", "string_out"):
        return "CHARACTER(LEN=*)", intent, "", False
    if k in ("attr_in", "attr_out"):
        return KIND["aint" if p.extra == "aint" else "int"], intent, "", False
    if k == "extra_state":
        return KIND["int" if f.name == "MPI_Keyval_create" else "aint"], intent, "", False
    if k == "baseptr":
        return ("TYPE(C_PTR)", intent, "", False) if f08 else (KIND["aint"], intent, "", False)
    if k == "buffer_addr":
        return ("TYPE(C_PTR)", intent, "", False) if f08 else ("TYPE(*)", "", "(*)", True)
    if k in ("aint_as_int", "aint_as_int_out"):
        return "INTEGER", intent, "", False
    if k == "aint_as_int_array":
        return "INTEGER", intent, "(*)", False
    if k in ("buffer", "location"):
        attrs = ["INTENT(IN)"] if p.intent == "in" and k == "buffer" else []
        if f08:
            if is_nonblocking(f) or k == "location":
                attrs.append("ASYNCHRONOUS")
            return "TYPE(*)", ", ".join(attrs), "(..)", False
        return "TYPE(*)", ", ".join(attrs), "(*)", True
    if k == "proc":
        return ("PROCEDURE(" + PROC_F08[(f.name, p.name)] + ")" if f08 else "EXTERNAL"), "", "", False
    raise ValueError(f"{f.name}: no Fortran declaration for {k} ({p.name})")


def _f08_signature(f: Func) -> tuple:
    """What Fortran's generic resolution sees: types, kinds and ranks (the three 8-byte
    kinds are one kind)."""
    def kind(t: str) -> str:
        return re.sub(r"MPI_(ADDRESS|COUNT|OFFSET)_KIND", "8", t)
    return tuple((kind(fdecl(f, p, "f08")[0]), fdecl(f, p, "f08")[2]) for p in f.params
                 if p.kind != "drop")


def f_interface(f: Func, binding: str, specific: str, label: str | None, ind: str) -> list[str]:
    """One interface body. label: the BIND(C) name, or None for a gfortran-named external."""
    args = [p.name for p in f.params if p.kind != "drop"]
    if f.ret == "int":
        args.append("ierror")
    head = "SUBROUTINE" if f.ret == "int" else "FUNCTION"
    bind = f' BIND(C, NAME="{label}")' if label else ""
    res = " RESULT(res)" if f.ret != "int" else ""
    lines = wrap(f"{ind}{head} {specific}({', '.join(args)}){bind}{res}")
    lines.append(f"{ind}  IMPORT")
    lines.append(f"{ind}  IMPLICIT NONE")
    for p in f.params:
        if p.kind == "drop":
            continue
        t, attrs, dims, tkr = fdecl(f, p, binding)
        if tkr:
            lines.append(f"{ind}  !GCC$ ATTRIBUTES NO_ARG_CHECK :: {p.name}")
        if t == "EXTERNAL":
            lines.append(f"{ind}  EXTERNAL :: {p.name}")
            continue
        a = f", {attrs}" if attrs else ""
        lines.append(f"{ind}  {t}{a} :: {p.name}{dims}")
    if f.ret == "int":
        opt = "OPTIONAL, " if binding in ("f08", "f08c") else ""
        lines.append(f"{ind}  INTEGER, {opt}INTENT(OUT) :: ierror")
    else:
        t = "DOUBLE PRECISION" if f.ret == "double" else KIND["aint"]
        lines.append(f"{ind}  {t} :: res")
    lines.append(f"{ind}END {head} {specific}")
    return lines


def wrap(line: str, width: int = 100) -> list[str]:
    """A free-form line split after commas into continuation lines of at most width."""
    if len(line) <= width:
        return [line]
    ind = " " * (len(line) - len(line.lstrip()) + 4)
    out, cur = [], ""
    for piece in re.split(r"(?<=, )", line):
        if cur and len(cur) + len(piece) > width - 2:
            out.append(cur.rstrip() + " &")
            cur = ind + piece
        else:
            cur += piece
    out.append(cur)
    return out


# ---- constants ----------------------------------------------------------------------------

@dataclasses.dataclass
class Const:
    name: str
    value: int
    handle: str = ""    # the C handle type of a predefined handle, else ""


def constants() -> list[Const]:
    text = HEADER.read_text()
    out: list[Const] = []
    seen: dict[str, Const] = {}

    def add(c: Const):
        if c.name not in seen:
            seen[c.name] = c
            out.append(c)

    for m in re.finditer(r"^#define (MPI_\w+)\s+\(\((MPI_\w+)\)(0x[0-9a-fA-F]+)\)", text, re.M):
        if not m.group(2).startswith("MPI_T_"):
            add(Const(m.group(1), int(m.group(3), 16), m.group(2)))
    for m in re.finditer(r"^#define (MPI_\w+)\s+(MPI_\w+)\s*$", text, re.M):
        if m.group(2) in seen:
            c = seen[m.group(2)]
            add(Const(m.group(1), c.value, c.handle))
    for body in re.findall(r"enum\s*\w*\s*\{(.*?)\}", text, re.S):
        for m in re.finditer(r"^\s*(MPIX?_\w+)\s*=\s*(-?\w+)", body, re.M):
            name = m.group(1)
            if name.startswith("MPI_T_") or name.startswith("MPI_F_"):
                continue
            add(Const(name, int(m.group(2), 0)))
    # strings: Fortran strings carry no NUL, so their maxima are one less (MPI 4.1 A.1.1)
    for m in re.finditer(r"^#define (MPI_MAX_\w+)\s+(\d+)", text, re.M):
        add(Const(m.group(1), int(m.group(2)) - 1))
    for m in re.finditer(r"^#define (MPI_BSEND_OVERHEAD|MPI_VERSION|MPI_SUBVERSION)\s+(\d+)",
                         text, re.M):
        add(Const(m.group(1), int(m.group(2))))
    for m in re.finditer(r"^#define (ISTHMUS_\w+)\s+(0x[0-9a-fA-F]+|\d+)", text, re.M):
        add(Const(m.group(1), int(m.group(2), 0)))
    # a Fortran status is an array of MPI_STATUS_SIZE integers, indexed from 1
    status = dict(re.findall(r"(MPI_F_\w+)\s*=\s*(\d+)", text))
    add(Const("MPI_STATUS_SIZE", int(status["MPI_F_STATUS_SIZE"])))
    for f in ("SOURCE", "TAG", "ERROR"):
        add(Const(f"MPI_{f}", int(status[f"MPI_F_{f}"]) + 1))
    return out


KINDS = [("MPI_INTEGER_KIND", 4), ("MPI_ADDRESS_KIND", 8), ("MPI_OFFSET_KIND", 8),
         ("MPI_COUNT_KIND", 8)]
# (name, Fortran type, dimensions, common block): addresses the C side recognises
SENTINELS = [
    ("MPI_BOTTOM", "INTEGER", "", "MPI_FORTRAN_BOTTOM"),
    ("MPI_IN_PLACE", "INTEGER", "", "MPI_FORTRAN_IN_PLACE"),
    ("MPI_BUFFER_AUTOMATIC", "INTEGER", "", "MPI_FORTRAN_BUFFER_AUTOMATIC"),
    ("MPI_STATUS_IGNORE", "status", "", "MPI_FORTRAN_STATUS_IGNORE"),
    ("MPI_STATUSES_IGNORE", "statuses", "", "MPI_FORTRAN_STATUSES_IGNORE"),
    ("MPI_ERRCODES_IGNORE", "INTEGER", "(1)", "MPI_FORTRAN_ERRCODES_IGNORE"),
    ("MPI_UNWEIGHTED", "INTEGER", "(1)", "MPI_FORTRAN_UNWEIGHTED"),
    ("MPI_WEIGHTS_EMPTY", "INTEGER", "(1)", "MPI_FORTRAN_WEIGHTS_EMPTY"),
    ("MPI_ARGV_NULL", "CHARACTER(LEN=1)", "(1)", "MPI_FORTRAN_ARGV_NULL"),
    ("MPI_ARGVS_NULL", "CHARACTER(LEN=1)", "(1,1)", "MPI_FORTRAN_ARGVS_NULL"),
]
# predefined callback procedures (native/fortran/callbacks.c) and their f08 interfaces
CALLBACKS = [
    ("MPI_NULL_COPY_FN", "legacy_copy"), ("MPI_DUP_FN", "legacy_copy"),
    ("MPI_NULL_DELETE_FN", "legacy_delete"),
    ("MPI_COMM_NULL_COPY_FN", "MPI_Comm_copy_attr_function"),
    ("MPI_COMM_DUP_FN", "MPI_Comm_copy_attr_function"),
    ("MPI_COMM_NULL_DELETE_FN", "MPI_Comm_delete_attr_function"),
    ("MPI_TYPE_NULL_COPY_FN", "MPI_Type_copy_attr_function"),
    ("MPI_TYPE_DUP_FN", "MPI_Type_copy_attr_function"),
    ("MPI_TYPE_NULL_DELETE_FN", "MPI_Type_delete_attr_function"),
]


def f_constants(form: str) -> list[str]:
    """Declarations of every constant: form "fixed" (mpif.h, fixed and free form alike),
    "mpi" (module mpi) or "f08" (handles as TYPE(MPI_<kind>))."""
    out = []
    if form == "fixed":
        def decl(t, name, value):
            out.append(f"      {t} {name}")
            out.append(f"      PARAMETER ({name}={value})")
    else:
        def decl(t, name, value):
            out.append(f"  {t}, PARAMETER :: {name} = {value}")
    for name, v in KINDS:
        if form != "f08":   # mpi_f08 has them from mpi_f08_types
            decl("INTEGER", name, v)
    for c in constants():
        if c.handle and form == "f08":
            decl(f"TYPE({c.handle})", c.name, f"{c.handle}({c.value})")
        else:
            decl("INTEGER", c.name, c.value)
    decl("INTEGER(KIND=MPI_OFFSET_KIND)", "MPI_DISPLACEMENT_CURRENT", -1)
    sub = ".TRUE." if form == "f08" else ".FALSE."
    decl("LOGICAL", "MPI_SUBARRAYS_SUPPORTED", sub)
    decl("LOGICAL", "MPI_ASYNC_PROTECTS_NONBLOCKING", sub)
    return out


def f_sentinels(form: str) -> list[str]:
    out = []
    ind = "      " if form == "fixed" else "  "
    for name, t, dims, common in SENTINELS:
        if t == "status":
            t, dims = ("TYPE(MPI_Status)", "") if form == "f08" else ("INTEGER", "(MPI_STATUS_SIZE)")
        elif t == "statuses":
            t, dims = ("TYPE(MPI_Status)", "(1)") if form == "f08" else \
                ("INTEGER", "(MPI_STATUS_SIZE,1)")
        out.append(f"{ind}{t} {name}{dims}" if form == "fixed" else f"{ind}{t} :: {name}{dims}")
        out.append(f"{ind}COMMON /{common}/ {name}")
    return out


# ---- the three bindings' files ------------------------------------------------------------

def free_form(lines: list[str]) -> str:
    out = []
    for line in lines:
        out += [line] if line.lstrip().startswith("!") else wrap(line)
    return "\n".join(out) + "\n"


def gen_mpif_h(funcs: list[Func]) -> str:
    head = [
        "! mpif.h: the Fortran 77-style MPI include file of isthmus (MPI 5.0 standard ABI",
        "! values; handles are INTEGERs). Valid in fixed and free source form.",
        "! GENERATED by scripts/mpi_api.py fortran from include/mpi.h; do not edit.",
    ]
    body = f_constants("fixed") + f_sentinels("fixed")
    body += [f"      EXTERNAL {n}" for n, _ in CALLBACKS]
    for f in funcs:
        if f.ret != "int" and f.has("f77"):
            t = "DOUBLE PRECISION" if f.ret == "double" else KIND["aint"]
            for pre in ("", "P"):
                body.append(f"      {t} {pre}{f.name.upper()}")
                body.append(f"      EXTERNAL {pre}{f.name.upper()}")
    return "\n".join(head + body) + "\n"


TYPES_MODULE = "mpi_f08_types"


def gen_types_module() -> list[str]:
    handles = sorted(HANDLES)
    out = [f"MODULE {TYPES_MODULE}",
           "  ! The mpi_f08 handle types, TYPE(MPI_Status) (shared with module mpi, for",
           "  ! MPI_Status_f2f08 and MPI_Status_f082f) and the comparison of handles.",
           "  USE, INTRINSIC :: ISO_C_BINDING, ONLY : C_INT",
           "  IMPLICIT NONE",
           "  PRIVATE"]
    out.append("  PUBLIC :: " + ", ".join(handles + ["MPI_Status"]))
    out.append("  PUBLIC :: OPERATOR(==), OPERATOR(/=)")
    out.append("  PUBLIC :: " + ", ".join(n for n, _ in KINDS))
    out += [f"  INTEGER, PARAMETER :: {n} = {v}" for n, v in KINDS]
    for h in handles:
        out += [f"  TYPE, BIND(C) :: {h}", "    INTEGER(C_INT) :: MPI_VAL", f"  END TYPE {h}"]
    out += ["  ! the same eight integers as a C MPI_Status and a Fortran status array",
            "  TYPE, BIND(C) :: MPI_Status",
            "    INTEGER(C_INT) :: MPI_SOURCE, MPI_TAG, MPI_ERROR",
            "    INTEGER(C_INT) :: MPI_internal(5)",
            "  END TYPE MPI_Status"]
    out.append("  INTERFACE OPERATOR(==)")
    out.append("    MODULE PROCEDURE " + ", ".join(f"ism_{h[4:].lower()}_eq" for h in handles))
    out.append("  END INTERFACE")
    out.append("  INTERFACE OPERATOR(/=)")
    out.append("    MODULE PROCEDURE " + ", ".join(f"ism_{h[4:].lower()}_ne" for h in handles))
    out.append("  END INTERFACE")
    out.append("CONTAINS")
    for h in handles:
        n = h[4:].lower()
        for op, sym in (("eq", "=="), ("ne", "/=")):
            out += [f"  ELEMENTAL LOGICAL FUNCTION ism_{n}_{op}(a, b)",
                    f"    TYPE({h}), INTENT(IN) :: a, b",
                    f"    ism_{n}_{op} = a%MPI_VAL {sym} b%MPI_VAL",
                    f"  END FUNCTION ism_{n}_{op}"]
    out.append(f"END MODULE {TYPES_MODULE}")
    return out


def gen_mpi_module(funcs: list[Func]) -> str:
    out = [
        "! mpi.f90: module mpi of isthmus: the constants of mpif.h and an explicit interface",
        "! for every routine without a choice buffer. Those with one are called as in",
        "! mpif.h, without an interface, as MPICH's module does: programs written against",
        "! it pass an array where a scalar is due (MPICH's f90/coll/alltoallvf90) or define",
        "! MPI_Send themselves in a unit that uses the module (f90/profile), which an",
        "! interface would refuse. Noncontiguous sections are copied in and out by the",
        "! compiler, so MPI_SUBARRAYS_SUPPORTED is .FALSE. here.",
        "! GENERATED by scripts/mpi_api.py fortran from include/mpi.h; do not edit.",
        "MODULE mpi",
        f"  USE {TYPES_MODULE}, ONLY : MPI_Status",
        "  IMPLICIT NONE",
    ]
    out += f_constants("mpi") + f_sentinels("mpi")
    out.append("  EXTERNAL :: " + ", ".join(n for n, _ in CALLBACKS))
    out.append("  INTERFACE")
    for f in funcs:
        # (Buffer_detach's buffer_addr is a choice argument in mpif.h and `use mpi` too)
        if f.has("f77") and not has_choice(f) and f.name != "MPI_Buffer_detach":
            out += f_interface(f, "f77", f.name, None, "    ")
            if f.ret != "int":   # the profiling names of functions need their type too
                out += f_interface(f, "f77", "P" + f.name, None, "    ")
    out.append("  END INTERFACE")
    sizeof, procs = gen_sizeof("f77")
    out += sizeof + ["CONTAINS"] + procs
    out.append("END MODULE mpi")
    return free_form(out)


# abstract interfaces of the procedures programs pass (MPI 4.1 section 19.3.7 and A.4)
ABSTRACT = {
    "MPI_User_function": ("invec, inoutvec, len, datatype",
                          ["TYPE(C_PTR), VALUE :: invec, inoutvec", "INTEGER :: len",
                           "TYPE(MPI_Datatype) :: datatype"]),
    "MPI_Comm_errhandler_function": ("comm, error_code",
                                     ["TYPE(MPI_Comm) :: comm", "INTEGER :: error_code"]),
    "MPI_Session_errhandler_function": ("session, error_code",
                                        ["TYPE(MPI_Session) :: session",
                                         "INTEGER :: error_code"]),
    "MPI_Grequest_query_function": ("extra_state, status, ierror",
                                    ["INTEGER(KIND=MPI_ADDRESS_KIND) :: extra_state",
                                     "TYPE(MPI_Status) :: status", "INTEGER :: ierror"]),
    "MPI_Grequest_free_function": ("extra_state, ierror",
                                   ["INTEGER(KIND=MPI_ADDRESS_KIND) :: extra_state",
                                    "INTEGER :: ierror"]),
    "MPI_Grequest_cancel_function": ("extra_state, complete, ierror",
                                     ["INTEGER(KIND=MPI_ADDRESS_KIND) :: extra_state",
                                      "LOGICAL :: complete", "INTEGER :: ierror"]),
}


# attribute copy and delete functions, alike for communicators and datatypes
for _obj, _t, _o in (("Comm", "MPI_Comm", "comm"), ("Type", "MPI_Datatype", "type")):
    _old = "oldcomm" if _o == "comm" else "oldtype"
    _this = "comm" if _o == "comm" else "datatype"
    ABSTRACT[f"MPI_{_obj}_copy_attr_function"] = (
        f"{_old}, {_o}_keyval, extra_state, attribute_val_in, attribute_val_out, flag, ierror",
        [f"TYPE({_t}) :: {_old}", f"INTEGER :: {_o}_keyval, ierror",
         "INTEGER(KIND=MPI_ADDRESS_KIND) :: extra_state, attribute_val_in, attribute_val_out",
         "LOGICAL :: flag"])
    ABSTRACT[f"MPI_{_obj}_delete_attr_function"] = (
        f"{_this}, {_o}_keyval, attribute_val, extra_state, ierror",
        [f"TYPE({_t}) :: {_this}", f"INTEGER :: {_o}_keyval, ierror",
         "INTEGER(KIND=MPI_ADDRESS_KIND) :: attribute_val, extra_state"])


def gen_f08_module(funcs: list[Func]) -> str:
    out = [
        "! mpi_f08.f90: modules mpi_f08_types and mpi_f08 of isthmus (MPI 4.1 chapter 19):",
        "! handles are TYPE(MPI_<kind>), ierror is optional, choice buffers are TYPE(*),",
        "! DIMENSION(..) (TS 29113), so noncontiguous array sections reach the library as",
        "! they are (MPI_SUBARRAYS_SUPPORTED), and each routine with large-count arguments",
        "! is a generic over its int and MPI_Count forms. Every specific is a BIND(C)",
        "! interface to the C entry point of the same name (bindings.c); those taking",
        "! procedures are plain externals (callbacks.c).",
        "! GENERATED by scripts/mpi_api.py fortran from include/mpi.h; do not edit.",
    ]
    out += gen_types_module()
    out += ["",
            "MODULE mpi_f08",
            f"  USE {TYPES_MODULE}",
            "  USE, INTRINSIC :: ISO_C_BINDING, ONLY : C_PTR",
            "  IMPLICIT NONE"]
    out += f_constants("f08") + f_sentinels("f08")
    out.append("  ABSTRACT INTERFACE")
    for name, (args, decls) in ABSTRACT.items():
        out.append(f"    SUBROUTINE {name}({args})")
        out.append("      IMPORT")
        out.append("      IMPLICIT NONE")
        out += ["      " + d for d in decls]
        out.append(f"    END SUBROUTINE {name}")
    out.append("  END INTERFACE")
    # the predefined attribute callbacks, with the interface of what they stand for
    out.append("  INTERFACE")
    for name, iface in CALLBACKS[3:]:
        args, decls = ABSTRACT[iface]
        out.append(f"    SUBROUTINE {name}({args})")
        out.append("      IMPORT")
        out.append("      IMPLICIT NONE")
        out += ["      " + d for d in decls]
        out.append(f"    END SUBROUTINE {name}")
    out.append("  END INTERFACE")
    generic: dict[str, list[Func]] = {}
    for f in funcs:
        if f.has("f08"):
            generic.setdefault(re.sub(r"_c$", "", f.name) if f.large else f.name, []).append(f)
    for prof in ("", "P"):
        for g, fs in generic.items():
            out.append(f"  INTERFACE {prof}{g}")
            for f in fs:
                out += f_interface(f, "f08", f08_specific(f, prof == "P"), None, "    ")
            out.append(f"  END INTERFACE {prof}{g}")
    sizeof, procs = gen_sizeof("f08")
    out += sizeof + ["CONTAINS"] + procs
    out.append("END MODULE mpi_f08")
    out += gen_f08_wrappers([f for f in funcs if f.has("f08") and has_choice(f)])
    return free_form(out)


def gen_f08_wrappers(funcs: list[Func]) -> list[str]:
    """The specifics MPI_X_f08ts and PMPI_X_f08ts of the routines with choice buffers:
    external procedures (so a Fortran profiling layer replaces them by name) that pass
    their arguments to the BIND(C) glue, which receives the buffers as C descriptors."""
    out = ["",
           "! The BIND(C) glue of the routines with choice buffers (bindings.c).",
           "MODULE mpi_f08_glue",
           f"  USE {TYPES_MODULE}",
           "  USE, INTRINSIC :: ISO_C_BINDING, ONLY : C_PTR",
           "  IMPLICIT NONE",
           "  INTERFACE"]
    for f in funcs:
        out += f_interface(f, "f08c", f08_glue(f), f08_glue(f), "    ")
    out += ["  END INTERFACE", "END MODULE mpi_f08_glue"]
    for f in funcs:
        args = [p.name for p in f.params if p.kind != "drop"] + ["ierror"]
        for prof in (False, True):
            body = f_interface(f, "f08", f08_specific(f, prof), None, "")
            # the interface body, made a procedure: the glue instead of IMPORT
            at = body.index("  IMPORT")
            body[at:at + 1] = [f"  USE {TYPES_MODULE}", f"  USE mpi_f08_glue, ONLY : {f08_glue(f)}",
                               "  USE, INTRINSIC :: ISO_C_BINDING, ONLY : C_PTR"]
            body.insert(-1, f"  CALL {f08_glue(f)}({', '.join(args)})")
            out += [""] + body
    return out


# MPI_Sizeof: Fortran only (a generic over the intrinsic types, in the modules; mpif.h
# cannot declare a generic), so it is module procedures here, not a C entry point
FORTRAN_ONLY = {"MPI_Sizeof"}
SIZEOF_TYPES = ([("INTEGER", k) for k in (1, 2, 4, 8, 16)] + [("REAL", k) for k in (4, 8, 10, 16)]
                + [("COMPLEX", k) for k in (4, 8, 10, 16)] + [("LOGICAL", k) for k in (1, 2, 4, 8)]
                + [("CHARACTER", "*")])


def gen_sizeof(binding: str) -> tuple[list[str], list[str]]:
    """(the generic's declaration, the module procedures) of MPI_Sizeof: the bytes of one
    element of x, any rank (storage_size is in bits)."""
    names = [f"ism_sizeof_{t[0].lower()}{k if k != '*' else ''}" for t, k in
             ((t, k) for t, k in SIZEOF_TYPES)]
    decl = ["  INTERFACE MPI_Sizeof", "    MODULE PROCEDURE " + ", ".join(names),
            "  END INTERFACE MPI_Sizeof"]
    opt = "OPTIONAL, " if binding == "f08" else ""
    procs = []
    for name, (t, k) in zip(names, SIZEOF_TYPES):
        ty = "CHARACTER(LEN=*)" if t == "CHARACTER" else f"{t}(KIND={k})"
        procs += [f"  SUBROUTINE {name}(x, size, ierror)",
                  f"    {ty}, DIMENSION(..), INTENT(IN) :: x",
                  "    INTEGER, INTENT(OUT) :: size",
                  f"    INTEGER, {opt}INTENT(OUT) :: ierror",
                  "    size = int(storage_size(x) / 8)",
                  "    " + ("IF (PRESENT(ierror)) " if opt else "") + "ierror = MPI_SUCCESS",
                  f"  END SUBROUTINE {name}"]
    return decl, procs


def generated() -> dict[Path, str]:
    funcs = functions()
    return {OUT / "mpif.h": gen_mpif_h(funcs), OUT / "mpi.f90": gen_mpi_module(funcs),
            OUT / "mpi_f08.f90": gen_f08_module(funcs),
            OUT / "bindings.c": gen_bindings_c(funcs)}
