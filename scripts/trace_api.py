#!/usr/bin/env python3
"""trace_api.py: the MPI wrappers of the tracer (libisthmus-trace), generated from mpi.h.

  trace_api.py generate   regenerate native/src/trace/calls.c
  trace_api.py check      exit 1 if it is out of date (run by the test suite)

Every MPI_ function of include/mpi.h gets a wrapper MPI_X that calls PMPI_X and records the
call (tool.h), except those listed in SKIP (clocks, handle conversions, MPI_T, which tools
call) and HAND (written in native/src/trace/tool.c). What a call records beyond its entry
and exit depends on its kind, decided here by name: point-to-point (peer, tag, bytes,
request), completion (every request completed), collectives (bytes sent and received by
this rank, the formulas of COLL below, docs/trace.md), communicator creation and release.
The large-count (_c) forms are recorded as their int forms are.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mpi_api import REPO, declared  # noqa: E402

CALLS_C = REPO / "native" / "src" / "trace" / "calls.c"

SKIP = re.compile(r"^MPI_(Wtime|Wtick|T_.*|.*_(c2f|f2c|f082c|c2f08|f2f08|f082f|toint|fromint))$")
HAND = {"MPI_Init", "MPI_Init_thread", "MPI_Finalize", "MPI_Pcontrol", "MPI_Abort"}

SEND = {"Send", "Ssend", "Rsend", "Bsend"}
ISEND = {"Isend", "Issend", "Irsend", "Ibsend"}
SEND_INIT = {"Send_init", "Ssend_init", "Rsend_init", "Bsend_init"}
NEWCOMM = {  # function -> (output parameter, communicator with the same members or None)
    "Comm_dup": ("newcomm", None), "Comm_dup_with_info": ("newcomm", None),
    "Comm_idup": ("newcomm", "comm"), "Comm_idup_with_info": ("newcomm", "comm"),
    "Comm_create": ("newcomm", None), "Comm_create_group": ("newcomm", None),
    "Comm_create_from_group": ("newcomm", None), "Comm_split": ("newcomm", None),
    "Comm_split_type": ("newcomm", None), "Intercomm_create": ("newintercomm", None),
    "Intercomm_create_from_groups": ("newintercomm", None),
    "Intercomm_merge": ("newintracomm", None), "Cart_create": ("comm_cart", None),
    "Cart_sub": ("newcomm", None), "Graph_create": ("comm_graph", None),
    "Dist_graph_create": ("comm_dist_graph", None),
    "Dist_graph_create_adjacent": ("comm_dist_graph", None),
}

# Collectives: (bytes this rank's send buffers provide, bytes written into its receive
# buffers, has a root). N: peers (the remote group of an intercommunicator), ME: my rank,
# ISROOT: I am the root (MPI_ROOT on an intercommunicator), INTER, IN/OUT: the degrees of
# a virtual topology, B(n, t): n elements of t, SUM(counts, n), SUMW(counts, types, n).
COLL = {
    "Barrier": ("0", "0", False),
    "Bcast": ("ISROOT ? B(count, datatype) : 0", "ISROOT ? 0 : B(count, datatype)", True),
    "Reduce": ("INTER && ISROOT ? 0 : B(count, datatype)", "ISROOT ? B(count, datatype) : 0",
               True),
    "Allreduce": ("B(count, datatype)", "B(count, datatype)", False),
    "Gather": ("INTER && ISROOT ? 0 : ISROOT && INPLACE(sendbuf) ? 0 : B(sendcount, sendtype)",
               "ISROOT ? N * B(recvcount, recvtype) : 0", True),
    "Gatherv": ("INTER && ISROOT ? 0 : ISROOT && INPLACE(sendbuf) ? 0 : B(sendcount, sendtype)",
                "ISROOT ? SUM(recvcounts, N) * SZ(recvtype) : 0", True),
    "Scatter": ("ISROOT ? N * B(sendcount, sendtype) : 0",
                "INTER && ISROOT ? 0 : ISROOT && INPLACE(recvbuf) ? 0 : B(recvcount, recvtype)",
                True),
    "Scatterv": ("ISROOT ? SUM(sendcounts, N) * SZ(sendtype) : 0",
                 "INTER && ISROOT ? 0 : ISROOT && INPLACE(recvbuf) ? 0 : B(recvcount, recvtype)",
                 True),
    "Allgather": ("INPLACE(sendbuf) ? B(recvcount, recvtype) : B(sendcount, sendtype)",
                  "N * B(recvcount, recvtype)", False),
    "Allgatherv": ("INPLACE(sendbuf) ? (uint64_t)recvcounts[ME] * SZ(recvtype) : "
                   "B(sendcount, sendtype)", "SUM(recvcounts, N) * SZ(recvtype)", False),
    "Alltoall": ("INPLACE(sendbuf) ? N * B(recvcount, recvtype) : N * B(sendcount, sendtype)",
                 "N * B(recvcount, recvtype)", False),
    "Alltoallv": ("INPLACE(sendbuf) ? SUM(recvcounts, N) * SZ(recvtype) : "
                  "SUM(sendcounts, N) * SZ(sendtype)", "SUM(recvcounts, N) * SZ(recvtype)", False),
    "Alltoallw": ("INPLACE(sendbuf) ? SUMW(recvcounts, recvtypes, N) : "
                  "SUMW(sendcounts, sendtypes, N)", "SUMW(recvcounts, recvtypes, N)", False),
    "Reduce_scatter": ("SUM(recvcounts, N) * SZ(datatype)",
                       "(uint64_t)recvcounts[ME] * SZ(datatype)", False),
    "Reduce_scatter_block": ("N * B(recvcount, datatype)", "B(recvcount, datatype)", False),
    "Scan": ("B(count, datatype)", "B(count, datatype)", False),
    "Exscan": ("B(count, datatype)", "B(count, datatype)", False),
    "Neighbor_allgather": ("B(sendcount, sendtype)", "IN * B(recvcount, recvtype)", False),
    "Neighbor_allgatherv": ("B(sendcount, sendtype)", "SUM(recvcounts, IN) * SZ(recvtype)",
                            False),
    "Neighbor_alltoall": ("OUT * B(sendcount, sendtype)", "IN * B(recvcount, recvtype)", False),
    "Neighbor_alltoallv": ("SUM(sendcounts, OUT) * SZ(sendtype)",
                           "SUM(recvcounts, IN) * SZ(recvtype)", False),
    "Neighbor_alltoallw": ("SUMW(sendcounts, sendtypes, OUT)", "SUMW(recvcounts, recvtypes, IN)",
                           False),
}

# One-sided calls: (op, target, bytes to the target, bytes back), an RMA record
# (docs/trace.md). The target is a rank of the window, made global by the tracer (wins.c);
# None: the call has no target (every member, or none). B(n, t): n elements of t.
RMA = {
    "Put": ("PUT", "target_rank", "B(origin_count, origin_datatype)", "0"),
    "Get": ("GET", "target_rank", "0", "B(origin_count, origin_datatype)"),
    "Accumulate": ("ACC", "target_rank", "B(origin_count, origin_datatype)", "0"),
    "Get_accumulate": ("GACC", "target_rank",
                       "op == MPI_NO_OP ? 0 : B(origin_count, origin_datatype)",
                       "B(result_count, result_datatype)"),
    "Fetch_and_op": ("FOP", "target_rank", "op == MPI_NO_OP ? 0 : SZ(datatype)", "SZ(datatype)"),
    "Compare_and_swap": ("CAS", "target_rank", "2 * SZ(datatype)", "SZ(datatype)"),
    "Win_lock": ("LOCK", "rank", "0", "0"),
    "Win_unlock": ("UNLOCK", "rank", "0", "0"),
    "Win_lock_all": ("LOCK_ALL", None, "0", "0"),
    "Win_unlock_all": ("UNLOCK_ALL", None, "0", "0"),
    "Win_flush": ("FLUSH", "rank", "0", "0"),
    "Win_flush_all": ("FLUSH_ALL", None, "0", "0"),
    "Win_flush_local": ("FLUSH_LOCAL", "rank", "0", "0"),
    "Win_flush_local_all": ("FLUSH_LOCAL_ALL", None, "0", "0"),
    "Win_fence": ("FENCE", None, "0", "0"),
    "Win_complete": ("COMPLETE", None, "0", "0"),
    "Win_wait": ("WAIT", None, "0", "0"),
    "Win_test": ("TEST", None, "0", "0"),
    "Win_sync": ("SYNC", None, "0", "0"),
}
RMA_REQ = {"Rput": "Put", "Rget": "Get", "Raccumulate": "Accumulate",
           "Rget_accumulate": "Get_accumulate"}
RMA_GROUP = {"Win_post": "POST", "Win_start": "START"}
WIN_NEW = {"Win_create", "Win_allocate", "Win_allocate_shared", "Win_create_dynamic"}

COMPLETE = {"Wait", "Waitall", "Waitany", "Waitsome", "Test", "Testall", "Testany", "Testsome"}


def _params(params: str) -> list[tuple[str, str, bool]]:
    """(type, name, is_array) of each parameter (int ranges[][3] included)."""
    out = []
    for p in ([] if params in ("void", "") else params.split(",")):
        m = re.match(r"(.*?)\s*\b([A-Za-z_][A-Za-z_0-9]*)\s*((?:\[[^\]]*\])*)\s*$", p.strip())
        out.append((m.group(1).strip(), m.group(2), bool(m.group(3))))
    return out


def coll_base(base: str) -> tuple[str, str] | None:
    """(collective, form) for a collective's blocking, I- or _init form."""
    if base in COLL:
        return base, "blocking"
    if base.startswith("I") and base[1:] in COLL:
        return base[1:], "nb"
    if base.endswith("_init") and base[:-5] in COLL:
        return base[:-5], "init"
    return None


def enum_name(name: str) -> str:
    return "ISM_TR_FN_" + name[4:]


def body(name: str, ret: str, params: str) -> list[str] | None:
    """The lines of the wrapper's body after the `if (!ism_tr.on)` pass-through, or None
    for a function recorded without details."""
    base = name[4:-2] if name.endswith("_c") else name[4:]
    ps = _params(params)
    names = [n for _, n, _ in ps]
    fn = enum_name(name)
    call = f"P{name}({', '.join(names)})"
    pre, post, args = [], [], None

    def p2p(kind: str, flags: str, peer: str, tag: str, nbytes: str, req: str, comm="cid"):
        return [f"        ism_tr_p2p_set(d, {kind}, {flags}, {comm}, {peer}, {tag}, {nbytes}, {req});"]

    if base in SEND or base in ISEND or base in SEND_INIT:
        nb = base in ISEND
        flags = "ISM_TR_P2P_NB" if nb else "ISM_TR_P2P_INIT" if base in SEND_INIT else "0"
        req = "(uint64_t)(uintptr_t)*request" if "request" in names else "0"
        pre = ["    uint32_t cid = ism_tr_comm_id(comm);",
               "    uint64_t nbytes = (uint64_t)count * ism_tr_type_size(datatype);"]
        fill = p2p("ISM_TR_SEND", flags, "dest", "tag", "nbytes", req)
        return simple(fn, call, pre, "ism_tr_p2p", fill, after=True)
    if base in ("Recv", "Irecv", "Recv_init"):
        if base == "Recv":
            pre = ["    MPI_Status st_, *stp = status == MPI_STATUS_IGNORE ? &st_ : status;"]
            args = [n if n != "status" else "stp" for n in names]
            post = ["    uint32_t cid = ism_tr_comm_id(comm);",
                    "    uint64_t got = ism_tr_status_bytes(stp, rc);"]
            fill = p2p("ISM_TR_RECV", "ISM_TR_P2P_STATUS", "stp->MPI_SOURCE", "stp->MPI_TAG",
                       "got", "0")
        else:
            flags = "ISM_TR_P2P_NB" if base == "Irecv" else "ISM_TR_P2P_INIT"
            post = ["    uint32_t cid = ism_tr_comm_id(comm);",
                    "    uint64_t nbytes = (uint64_t)count * ism_tr_type_size(datatype);"]
            fill = p2p("ISM_TR_RECV", flags, "source", "tag", "nbytes",
                       "(uint64_t)(uintptr_t)*request")
        return wrap(fn, name, names, args, pre, post, "ism_tr_p2p", fill)
    if base in ("Sendrecv", "Sendrecv_replace", "Isendrecv", "Isendrecv_replace"):
        rep = base.endswith("_replace")
        scount, stype = ("count", "datatype") if rep else ("sendcount", "sendtype")
        rcount, rtype = ("count", "datatype") if rep else ("recvcount", "recvtype")
        post = ["    uint32_t cid = ism_tr_comm_id(comm);",
                f"    uint64_t sbytes = (uint64_t){scount} * ism_tr_type_size({stype});"]
        if base.startswith("I"):
            req = "(uint64_t)(uintptr_t)*request"
            post.append(f"    uint64_t rbytes = (uint64_t){rcount} * ism_tr_type_size({rtype});")
            fill = (p2p("ISM_TR_SEND", "ISM_TR_P2P_NB", "dest", "sendtag", "sbytes", req) +
                    ["        d++;"] +
                    p2p("ISM_TR_RECV", "ISM_TR_P2P_NB", "source", "recvtag", "rbytes", req))
        else:
            pre = ["    MPI_Status st_, *stp = status == MPI_STATUS_IGNORE ? &st_ : status;"]
            args = [n if n != "status" else "stp" for n in names]
            post.append("    uint64_t got = ism_tr_status_bytes(stp, rc);")
            fill = (p2p("ISM_TR_SEND", "0", "dest", "sendtag", "sbytes", "0") + ["        d++;"] +
                    p2p("ISM_TR_RECV", "ISM_TR_P2P_STATUS", "stp->MPI_SOURCE", "stp->MPI_TAG",
                        "got", "0"))
        return wrap(fn, name, names, args, pre, post, "ism_tr_p2p", fill, count=2)
    if base in ("Mprobe", "Improbe"):
        pre = ["    MPI_Status st_, *stp = status == MPI_STATUS_IGNORE ? &st_ : status;"]
        args = [n if n != "status" else "stp" for n in names]
        flag = "*flag && " if base == "Improbe" else ""
        post = [f"    if (rc == MPI_SUCCESS && {flag}*message != MPI_MESSAGE_NULL)",
                "        ism_tr_message_probed(*message, comm, stp);"]
        return wrap(fn, name, names, args, pre, post, None, [])
    if base in ("Mrecv", "Imrecv"):
        pre = ["    ism_tr_msg m_ = ism_tr_message_take(*message);"]
        if base == "Mrecv":
            pre.append("    MPI_Status st_, *stp = status == MPI_STATUS_IGNORE ? &st_ : status;")
            args = [n if n != "status" else "stp" for n in names]
            post = ["    uint64_t got = ism_tr_status_bytes(stp, rc);"]
            fill = p2p("ISM_TR_RECV", "ISM_TR_P2P_STATUS | ISM_TR_P2P_PROBED", "stp->MPI_SOURCE",
                       "stp->MPI_TAG", "got", "0", comm="m_.comm")
        else:
            post = ["    uint64_t nbytes = (uint64_t)count * ism_tr_type_size(datatype);"]
            fill = p2p("ISM_TR_RECV", "ISM_TR_P2P_NB | ISM_TR_P2P_PROBED", "m_.source",
                       "m_.tag", "nbytes", "(uint64_t)(uintptr_t)*request",
                       comm="m_.comm")
        return wrap(fn, name, names, args, pre, post, "ism_tr_p2p", fill)
    if base in COMPLETE:
        return completion(fn, name, base, names)
    if base in ("Start", "Startall", "Request_free", "Cancel"):
        if base == "Startall":
            pre = ["    MPI_Request *old = ism_tr_scratch_reqs(count);",
                   "    if (old)",
                   "        memcpy(old, array_of_requests, sizeof *old * (size_t)(count > 0 ? count : 0));"]
            post = [f"    ism_tr_req_list({fn}, t0, t1, rc, ISM_TR_START, 0, count, old);"]
        else:
            kind = "ISM_TR_START" if base == "Start" else "ISM_TR_FREE"
            flags = "1" if base == "Cancel" else "0"
            pre = ["    MPI_Request old = *request;"]
            post = [f"    ism_tr_req_list({fn}, t0, t1, rc, {kind}, {flags}, 1, &old);"]
        return wrap(fn, name, names, None, pre, post, None, None)
    if base in RMA or base in RMA_REQ:
        return rma(fn, call, base, names)
    if base in RMA_GROUP:
        return wrap(fn, name, names, None, [],
                    [f"    return ism_tr_rma_group({fn}, t0, t1, rc, ISM_TR_RMA_{RMA_GROUP[base]}, "
                     "win, group, assert);"], None, None, guard=False)[:-1]
    if base in WIN_NEW:
        post = ["    uint32_t cid = ism_tr_comm_id(comm);",
                "    uint32_t wid = ism_tr_win_created(*win, comm);"]
        return wrap(fn, name, names, None, [], post, "ism_tr_win",
                    ["        ism_tr_win_set(d, 0, wid, cid);"])
    if base == "Win_free":
        return wrap(fn, name, names, None, ["    uint32_t wid = ism_tr_win_forget(*win);"], [],
                    "ism_tr_win", ["        ism_tr_win_set(d, ISM_TR_WIN_FREED, wid, UINT32_MAX);"])
    cb = coll_base(base)
    if cb:
        return collective(fn, name, names, *cb)
    if base in NEWCOMM:
        out, like = NEWCOMM[base]
        post = [f"    if (rc == MPI_SUCCESS)",
                f"        ism_tr_comm_created(*{out}, {like or 'MPI_COMM_NULL'});"]
        return wrap(fn, name, names, None, [], post, None, [])
    if base in ("Comm_free", "Comm_disconnect"):
        return wrap(fn, name, names, None, ["    ism_tr_comm_freed(*comm);"], [], None, [])
    return None


def rma(fn, call, base, names):
    """A one-sided operation or synchronisation: its RMA record."""
    op, target, out, back = RMA[RMA_REQ.get(base, base)]

    def c(expr: str) -> str:
        expr = re.sub(r"\bB\(([^,]+), ([^)]+)\)", r"((uint64_t)(\1) * SZ(\2))", expr)
        return "(uint64_t)(" + re.sub(r"\bSZ\(", "ism_tr_type_size(", expr) + ")"

    flags = ["ISM_TR_RMA_REQ"] if base in RMA_REQ else []
    req = "(uint64_t)(uintptr_t)*request" if base in RMA_REQ else "0"
    if base == "Win_lock":
        flags.append("(lock_type == MPI_LOCK_EXCLUSIVE ? ISM_TR_RMA_EXCL : 0)")
    if "assert" in names:
        flags.append("(assert & MPI_MODE_NOCHECK ? ISM_TR_RMA_NOCHECK : 0)")
    if base == "Win_test":
        flags.append("(*flag ? ISM_TR_RMA_DONE : 0)")
    pre = ["    ism_tr_win_ent w_ = ism_tr_win_of(win);"]
    fill = [f"        ism_tr_rma_set(d, ISM_TR_RMA_{op}, {' | '.join(flags) or '0'}, &w_, "
            f"{target or '-1'}, {'assert' if 'assert' in names else '0'}, {c(out)}, "
            f"{c(back)}, {req});"]
    return simple(fn, call, pre, "ism_tr_rma", fill)


def simple(fn, call, pre, dtype, fill, after=False):
    """A wrapper whose details are computed after the call from its arguments."""
    lines = ["    uint64_t t0 = ism_tr_enter();", f"    int rc = {call};",
             "    uint64_t t1 = ism_tr_exit();", GUARD(fn)]
    lines += pre
    lines += [f"    {dtype} *d = ism_tr_leave({fn}, t0, t1, rc, sizeof *d);", "    if (d) {"]
    lines += fill
    lines += ["    }", "    ism_tr_unlock();", "    return rc;"]
    return lines


def GUARD(fn: str) -> str:
    """A failed call records only itself: its arguments may not be valid handles."""
    return f"    if (rc != MPI_SUCCESS)\n        return ism_tr_failed({fn}, t0, t1, rc);"


def wrap(fn, name, names, args, pre, post, dtype, fill, count=1, guard=True):
    call = f"P{name}({', '.join(args or names)})"
    lines = list(pre) + ["    uint64_t t0 = ism_tr_enter();", f"    int rc = {call};",
                         "    uint64_t t1 = ism_tr_exit();"] + ([GUARD(fn)] if guard else [])
    lines += post
    if fill is None:  # the post lines wrote the records
        lines += ["    return rc;"]
        return lines
    if dtype is None:
        lines += [f"    ism_tr_leave({fn}, t0, t1, rc, 0);", "    ism_tr_unlock();",
                  "    return rc;"]
        return lines
    size = "sizeof *d" if count == 1 else f"{count} * sizeof *d"
    lines += [f"    {dtype} *d = ism_tr_leave({fn}, t0, t1, rc, {size});", "    if (d) {"]
    lines += fill
    lines += ["    }", "    ism_tr_unlock();", "    return rc;"]
    return lines


def completion(fn, name, base, names):
    """Wait/Test and their all/any/some forms: the handles are copied before the call (it
    sets completed ones to MPI_REQUEST_NULL) and statuses substituted when ignored, so each
    completed request gets a DONE with what arrived."""
    single = base in ("Wait", "Test")
    any_ = base in ("Waitany", "Testany")
    some = base in ("Waitsome", "Testsome")
    n = "count" if "count" in names else "incount"
    stname = "status" if (single or any_) else "array_of_statuses"
    pre = []
    if single:
        pre.append("    MPI_Request old = *request;")
    else:
        pre += [f"    MPI_Request *old = ism_tr_scratch_reqs({n});",
                "    if (old)",
                f"        memcpy(old, array_of_requests, sizeof *old * (size_t)({n} > 0 ? {n} : 0));"]
    if single or any_:
        pre.append("    MPI_Status st_, *stp = status == MPI_STATUS_IGNORE ? &st_ : status;")
    else:
        pre.append(f"    MPI_Status *stp = array_of_statuses == MPI_STATUSES_IGNORE ? "
                   f"ism_tr_scratch_statuses({n}) : array_of_statuses;")
        # without scratch memory the call still runs, as the program asked
        pre.append("    if (!stp)")
        pre.append("        stp = array_of_statuses;")
    args = [("stp" if x == stname else x) for x in names]
    flag = "*flag" if "flag" in names else "1"
    if single:
        post = [f"    ism_tr_done_list({fn}, t0, t1, rc, {flag} && old != MPI_REQUEST_NULL, "
                "&old, NULL, stp);"]
    elif any_:
        post = [f"    int k_ = {flag} && rc == MPI_SUCCESS && *indx != MPI_UNDEFINED && old;",
                f"    ism_tr_done_list({fn}, t0, t1, rc, k_, k_ ? &old[*indx] : NULL, NULL, stp);"]
    elif some:
        post = [f"    int k_ = *outcount != MPI_UNDEFINED && old ? *outcount : 0;",
                f"    ism_tr_done_list({fn}, t0, t1, rc, k_, old, array_of_indices, stp);"]
    else:
        post = [f"    ism_tr_done_list({fn}, t0, t1, rc, {flag} && old ? {n} : 0, old, NULL, stp);"]
    return wrap(fn, name, names, args, pre, post, None, None, guard=False)


def collective(fn, name, names, coll, form):
    sent, recvd, rooted = COLL[coll]
    lines = ["    uint64_t t0 = ism_tr_enter();", f"    int rc = P{name}({', '.join(names)});",
             "    uint64_t t1 = ism_tr_exit();", GUARD(fn), "    ism_tr_coll_ctx x_;",
             f"    ism_tr_coll_begin(&x_, comm, {'root' if rooted else '-1'}, "
             f"{1 if coll.startswith('Neighbor') else 0});"]
    subst = {"N": "(uint64_t)x_.n", "ME": "x_.me", "ISROOT": "x_.isroot", "INTER": "x_.inter",
             "IN": "(uint64_t)x_.indeg", "OUT": "(uint64_t)x_.outdeg"}

    def c(expr: str) -> str:
        expr = re.sub(r"\bB\(([^,]+), ([^)]+)\)", r"((uint64_t)(\1) * SZ(\2))", expr)
        for k, v in subst.items():
            expr = re.sub(rf"\b{k}\b", v, expr)
        expr = re.sub(r"\bSZ\(", "ism_tr_type_size(", expr)
        expr = re.sub(r"\bINPLACE\((\w+)\)", r"(\1 == MPI_IN_PLACE)", expr)
        expr = re.sub(r"\bSUMW\(", "ISM_TR_SUMW(", expr)
        expr = re.sub(r"\bSUM\(", "ISM_TR_SUM(", expr)
        return expr

    flags = {"blocking": "0", "nb": "ISM_TR_COLL_NB", "init": "ISM_TR_COLL_INIT"}[form]
    req = "(uint64_t)(uintptr_t)*request" if form != "blocking" else "0"
    lines += [f"    uint64_t sent = x_.part ? {c(sent)} : 0;",
              f"    uint64_t recvd = x_.part ? {c(recvd)} : 0;",
              f"    ism_tr_coll *d = ism_tr_leave({fn}, t0, t1, rc, sizeof *d);", "    if (d)",
              f"        ism_tr_coll_set(d, {flags}, &x_, sent, recvd, {req});",
              "    ism_tr_unlock();", "    return rc;"]
    return lines


def gen_calls() -> str:
    decl = [(r, n, p) for r, n, p in declared() if not SKIP.match(n)]
    out = [
        "/* calls.c (trace): the tracer's MPI_X wrappers, one per function of mpi.h, and the",
        " * table of their names (the NAMES record). Each calls PMPI_X and records the call",
        " * (tool.h); what it records beyond entry and exit is decided in scripts/trace_api.py.",
        " * GENERATED by scripts/trace_api.py generate from include/mpi.h; do not edit. */",
        "#include <stdint.h>",
        "#include <string.h>",
        "",
        "#include \"wrap.h\"",
        "",
        "const char *const ism_tr_fn_names[] = {",
    ]
    out += [f"    \"{n}\"," for _, n, _ in decl]
    out += ["};", f"const int ism_tr_fn_count = {len(decl)};", ""]
    for i, (_, n, _) in enumerate(decl):
        out.append(f"#define {enum_name(n)} {i}")
    out.append("")
    for ret, name, params in decl:
        if name in HAND:
            continue
        names = [n for _, n, _ in _params(params)]
        call = f"P{name}({', '.join(names)})"
        b = body(name, ret, params)
        if b is None:
            if ret == "int":
                b = ["    uint64_t t0 = ism_tr_enter();", f"    int rc = {call};",
                     "    uint64_t t1 = ism_tr_exit();",
                     f"    ism_tr_leave({enum_name(name)}, t0, t1, rc, 0);",
                     "    ism_tr_unlock();", "    return rc;"]
            else:
                b = ["    uint64_t t0 = ism_tr_enter();", f"    {ret} r = {call};",
                     "    uint64_t t1 = ism_tr_exit();",
                     f"    ism_tr_leave({enum_name(name)}, t0, t1, 0, 0);",
                     "    ism_tr_unlock();", "    return r;"]
        out.append(f"{ret} {name}({params})")
        out.append("{")
        out.append("    if (!ism_tr.on)")
        out.append(f"        return {call};")
        out += b
        out.append("}")
        out.append("")
    return "\n".join(out)


def main(argv: list[str]) -> int:
    cmd = argv[1] if len(argv) > 1 else "check"
    want = gen_calls()
    if cmd == "generate":
        CALLS_C.write_text(want)
        return 0
    if cmd == "check":
        if not CALLS_C.exists() or CALLS_C.read_text() != want:
            print(f"{CALLS_C.relative_to(REPO)} is out of date: run scripts/trace_api.py generate",
                  file=sys.stderr)
            return 1
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
