# isthmus/whatif/events.py: a trace folder (isthmus run --trace) as what each rank did, in
# the time-independent form the replay needs: compute bursts (the time a rank spent outside
# communication, as measured), point-to-point operations with their peer (a global rank),
# tag, communicator and the bytes that moved, request completions, collectives with their
# bytes, and phase marks (MPI_Pcontrol). Waiting is left out: the simulator decides it.
#
# An operation is a list (JSON for the engine):
#   ["c", seconds]                                   compute (or start-up skew)
#   ["p", level]                                     MPI_Pcontrol(level); 0 ends a phase
#   ["s", fn, op, peer, tag, comm, bytes(, lag)]     a send started (op: its id); lag: seconds
#                                                    from the call to its gateway taking it
#                                                    (gwwrites.py), when the trace has it
#   ["r", fn, op, peer, tag, comm, bytes]            a receive posted (bytes: what arrived)
#   ["w", fn, [op, ...]]                             fn completed these operations
#   ["k", fn, kind, comm, root, bytes]               a collective (root: a global rank or -1)
#   ["a", fn, op, win, target, out, back, oid]       a one-sided operation (op: put, get, acc,
#                                                    gacc, fop, cas) on window win
#                                                    ("comm.k": the k-th window over comm) to
#                                                    a global rank, with the bytes that go to
#                                                    the target and come back; oid: its
#                                                    request's op id (a request form), or 0
#   ["y", fn, op, win, targets, flags]               a synchronisation (lock, unlock, flush,
#                                                    fence, post, ...): targets is a list of
#                                                    global ranks (empty: none, or every
#                                                    member); flags as the RMA record's
from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import IsthmusError
from ..trace import records as R
from ..trace.reader import RankTrace, Trace
from .collectives import kind_of
from .gwwrites import GatewayWrites

# calls that wait or poll: their time is waiting (the simulator's to decide), not work
_POLLING = ("MPI_Wait", "MPI_Test", "MPI_Probe", "MPI_Iprobe", "MPI_Mprobe", "MPI_Improbe")
_END = ("MPI_Finalize",)
# communicator constructors agree on a context id across the members: an allreduce of one
# int (native/src/core/comm.c, ism_ctx_agree_n) on the parent. The trace names the
# communicator a call created, not its parent: the k-th call of a constructor is taken to
# be on MPI_COMM_WORLD when every rank made a k-th call of it and the communicators they
# created cover all ranks (a split of the world, a dup or a Cartesian grid of it), else on
# the new communicator's members. One that created nothing here (MPI_COMM_NULL, an
# intercommunicator) is left out, and a note counts it
_CONSTRUCTORS = ("MPI_Comm_create", "MPI_Comm_split", "MPI_Comm_dup", "MPI_Comm_idup",
                 "MPI_Cart_create", "MPI_Cart_sub", "MPI_Graph_create", "MPI_Dist_graph_create",
                 "MPI_Intercomm_create", "MPI_Intercomm_merge")
AGREEMENT_BYTES = 4
# one-sided calls are replayed from their RMA records (the tracer's since issue 32); a
# trace without them (an older tracer) replays their time as measured, as local work,
# whatever the links, and a note counts them. Local window calls (MPI_Win_get_group,
# MPI_Win_shared_query, ...) are local work in any case
_RMA = {"MPI_Get", "MPI_Put", "MPI_Accumulate", "MPI_Rget", "MPI_Rput", "MPI_Raccumulate",
        "MPI_Fetch_and_op", "MPI_Compare_and_swap", "MPI_Get_accumulate",
        "MPI_Rget_accumulate", "MPI_Win_lock", "MPI_Win_unlock", "MPI_Win_lock_all",
        "MPI_Win_unlock_all", "MPI_Win_flush", "MPI_Win_flush_all", "MPI_Win_flush_local",
        "MPI_Win_flush_local_all", "MPI_Win_fence", "MPI_Win_post", "MPI_Win_start",
        "MPI_Win_complete", "MPI_Win_wait", "MPI_Win_test", "MPI_Win_sync", "MPI_Win_create",
        "MPI_Win_allocate", "MPI_Win_allocate_shared", "MPI_Win_create_dynamic",
        "MPI_Win_free"}


@dataclass
class Converted:
    templates: dict[int, list]               # traced rank -> its operations
    comms: dict[int, dict]                   # comm id -> {"members": [...], "world": bool}
    measured: float                          # seconds from the first recorded call to the last
    measured_phases: dict[int, float] = field(default_factory=dict)  # phase -> longest rank's s
    unmatched: int = 0                       # receives whose source never became known
    skipped: dict[str, int] = field(default_factory=dict)  # collectives left out
    constructors: dict[str, int] = field(default_factory=dict)  # constructors left out
    agreements: int = 0                      # constructors replayed as their agreement
    rma: dict[str, int] = field(default_factory=dict)  # one-sided calls replayed as measured
    rma_ops: int = 0                         # one-sided calls replayed from their records
    writes: GatewayWrites | None = None      # the gateways' app records (None: none traced)


class _Rank:
    def __init__(self, rt: RankTrace, trace: Trace, comm_ids: dict, out: Converted):
        self.rt, self.trace, self.comm_ids, self.out = rt, trace, comm_ids, out
        self.ops: list = []
        self.compute = 0.0
        self.next_op = 1
        self.active: dict[int, list] = {}     # request handle -> its op (pending)
        self.persistent: dict[int, tuple] = {}  # request handle -> (kind, detail, fn)
        self.marks = iter(rt.marks)
        self.agreed: list = []                # (fn, its op, the new members) per constructor
        self.wins: dict[int, tuple] = {}      # tracer's window id -> (window key, comm id)
        self.win_count: dict[int, int] = {}   # comm id -> windows created over it so far
        self.lags: dict[int, float] = {}      # send op id -> its gateway write lag (s)

    def flush(self) -> None:
        if self.compute > 0:
            self.ops.append(["c", self.compute])
        self.compute = 0.0

    def comm(self, cid: int):
        c = self.rt.comms.get(cid)
        if c is None:
            return None, None
        gid = self.comm_ids.get(c.key)
        if gid is None:
            gid = self.comm_ids[c.key] = len(self.comm_ids)
            n = len(self.trace.ranks)
            self.out.comms[gid] = {"members": list(c.members),
                                   "world": not c.inter and sorted(c.members) == list(range(n))}
        return c, gid

    def p2p(self, kind: int, d: tuple, fn: str) -> list | None:
        _, flags, cid, peer, tag, _, nbytes, _ = d
        c, gid = self.comm(cid)
        if c is None:
            return None
        g = c.world(peer) if peer >= 0 else None
        op = ["s" if kind == R.SEND else "r", fn, self.next_op, g, tag, gid, int(nbytes), c]
        self.next_op += 1
        return op

    def emit(self, op: list) -> None:
        self.flush()
        self.ops.append(op)

    def sent(self, op: list, t0: float) -> None:
        """A send started at t0 (s): when its gateway took it, if it crossed sites and the
        trace's gateway records have it (gwwrites.py)."""
        w, me = self.out.writes, self.rt.rank
        if op[0] != "s" or w is None or op[3] is None or \
                self.trace.site_of(op[3]) == self.rt.site:
            return
        lag = w.lag(me, op[3], op[4], op[6], t0)
        if lag is not None:
            self.lags[op[2]] = lag

    def complete(self, done: list[tuple], fn: str) -> None:
        ids = []
        for d in done:
            _, flags, req, source, tag, nbytes = d
            op = self.active.pop(req, None)
            if op is None or flags & R.DONE_CANCELLED:
                continue
            if op[0] == "a":                    # a request form of a one-sided operation
                ids.append(op[7])
                continue
            if op[0] == "r" and source >= 0:     # what arrived (MPI_ANY_SOURCE/TAG resolved)
                op[3] = op[7].world(source)
                op[4], op[6] = tag, int(nbytes)
            ids.append(op[2])
        if ids:
            self.emit(["w", fn, ids])

    def call(self, c) -> None:
        fn = c.fn
        if fn == "MPI_Pcontrol":
            mark = next(self.marks, None)
            if mark is not None:
                self.emit(["p", mark[1]])
            return
        wins = [d for d in c.details if d[0] == R.WIN]
        rmas = [d for d in c.details if d[0] == R.RMA]
        if wins:
            self.window(c, wins[0])
            return
        if rmas:
            self.one_sided(c, rmas)
            return
        sends = [d for d in c.details if d[0] == R.SEND]
        recvs = [d for d in c.details if d[0] == R.RECV]
        colls = [d for d in c.details if d[0] == R.COLL]
        done = [d for d in c.details if d[0] == R.DONE]
        starts = [d for d in c.details if d[0] == R.START]
        if not (sends or recvs or colls or done or starts):
            if fn.startswith(_CONSTRUCTORS):
                self.constructor(c)
            elif not fn.startswith(_POLLING):
                self.compute += c.t1 - c.t0          # local work inside MPI (Comm_rank, ...)
                if fn.removesuffix("_c") in _RMA:
                    self.out.rma[fn] = self.out.rma.get(fn, 0) + 1
            if fn == "MPI_Request_free":
                for d in c.details:
                    if d[0] == R.FREE:
                        self.persistent.pop(d[2], None)
            return
        blocking = []
        for d in recvs + sends:                       # receives first: Sendrecv posts its own
            kind, flags = d[0], d[1]
            op = self.p2p(kind, d, fn)
            if op is None or op[3] is None and not (kind == R.RECV and d[3] == R.MPI_ANY_SOURCE):
                continue                              # MPI_PROC_NULL: nothing moves
            if flags & R.P2P_INIT:
                self.persistent[d[7]] = (kind, d, fn)
                continue
            self.emit(op)
            self.sent(op, c.t0)
            if flags & R.P2P_NB:
                self.active[d[7]] = op
            else:
                blocking.append(op[2])
        for d in starts:
            p = self.persistent.get(d[2])
            if p is None:
                continue
            if p[0] == "coll":
                self.collective(p[1], p[2])
                continue
            op = self.p2p(p[0], p[1], p[2])
            if op is not None:
                self.emit(op)
                self.sent(op, c.t0)
                self.active[d[2]] = op
        for d in colls:
            if d[1] & R.COLL_INIT:
                self.persistent[d[6]] = ("coll", d, fn)
            else:
                self.collective(d, fn)
        if blocking:
            self.emit(["w", fn, blocking])
        self.complete(done, fn)

    def window(self, c, d: tuple) -> None:
        """A window created: isthmus duplicates the communicator (an agreement) and
        gathers every member's size and displacement unit (16 bytes each; core/win.c);
        freed: a barrier over the members."""
        _, flags, wid, cid = d
        if flags & R.WIN_FREED:
            w = self.wins.pop(wid, None)
            if w is not None:
                self.emit(["k", c.fn, "barrier", w[1], -1, 0])
            return
        comm, gid = self.comm(cid)
        if comm is None or comm.inter:
            return
        k = self.win_count.get(gid, 0)
        self.win_count[gid] = k + 1
        self.wins[wid] = (f"{gid}.{k}", gid)
        self.emit(["k", c.fn, "allreduce", gid, -1, AGREEMENT_BYTES])
        self.emit(["k", c.fn, "allgather", gid, -1, 16])

    def one_sided(self, c, rmas: list[tuple]) -> None:
        """An RMA record's operation or synchronisation (a call with a group has one
        record per member: one op with every target)."""
        _, flags, wid, target, op, _, _, out, back, req = rmas[0]
        w = self.wins.get(wid)
        name = R.RMA_OPS.get(op)
        if w is None or name is None:        # a window the trace never saw created
            self.compute += c.t1 - c.t0
            self.out.rma[c.fn] = self.out.rma.get(c.fn, 0) + 1
            return
        self.out.rma_ops += 1
        if op < 16:
            if target < 0:                   # MPI_PROC_NULL: nothing moves
                return
            oid = 0
            if flags & R.RMA_REQ:
                oid = self.next_op
                self.next_op += 1
            a = ["a", c.fn, name, w[0], target, int(out), int(back), oid]
            self.emit(a)
            if oid:
                self.active[req] = a
            return
        targets = [d[3] for d in rmas if d[3] >= 0]
        self.emit(["y", c.fn, name, w[0], targets, flags])

    def constructor(self, c) -> None:
        comm, gid = self.comm(c.created) if c.created is not None else (None, None)
        if comm is None or comm.inter:
            self.out.constructors[c.fn] = self.out.constructors.get(c.fn, 0) + 1
            return
        self.out.agreements += 1
        self.emit(["k", c.fn, "allreduce", gid, -1, AGREEMENT_BYTES])
        self.agreed.append((c.fn, self.ops[-1], comm.members))

    def collective(self, d: tuple, fn: str) -> None:
        _, flags, cid, root, sent, recvd, _ = d
        kind = kind_of(fn)
        c, gid = self.comm(cid)
        if kind is None or c is None or c.inter:
            self.out.skipped[fn] = self.out.skipped.get(fn, 0) + 1
            return
        size = len(c.members)
        if kind == "alltoall":                    # the block for each peer
            nbytes = sent // max(size, 1)
        elif kind == "scatter":                   # each rank's block (the root sends all)
            nbytes = sent // max(size, 1) if sent else recvd
        elif kind in ("gather", "allgather", "reduce_scatter"):
            nbytes = sent                         # own block; reduce_scatter: the vector
        else:
            nbytes = max(sent, recvd)             # the vector of a reduction or broadcast
        rootg = c.world(root) if kind in ("bcast", "reduce", "gather", "scatter") else -1
        self.emit(["k", fn, kind, gid, -1 if rootg is None else rootg, int(nbytes)])


def _agree_on_world(agreed: list[list], n: int) -> None:
    """The k-th call of each constructor agrees on the world when every rank made one and
    together they created communicators covering every rank (see _CONSTRUCTORS)."""
    calls: list[dict[str, list]] = []
    for mine in agreed:
        by_fn: dict[str, list] = {}
        for fn, op, members in mine:
            by_fn.setdefault(fn, []).append((op, members))
        calls.append(by_fn)
    for fn in set(calls[0]) if calls else ():
        for k in range(min(len(c.get(fn, [])) for c in calls)):
            covered = set().union(*(c[fn][k][1] for c in calls))
            if covered == set(range(n)):
                for c in calls:
                    c[fn][k][0][3] = 0            # comm id 0: the world


def _phase_times(marks: list, start: float, end: float) -> dict[int, float]:
    """Seconds this rank spent in each phase between start and end (as the replay counts:
    time before the first mark, and after a level 0, is phase 0)."""
    out: dict[int, float] = {}
    phase, since = 0, start
    for t, level in marks:
        t = min(max(t, start), end)
        out[phase] = out.get(phase, 0.0) + (t - since) / 1e9
        phase, since = level, t
    out[phase] = out.get(phase, 0.0) + (end - since) / 1e9
    return out


def convert(trace: Trace) -> Converted:
    """Every rank's operations, from the end of its MPI_Init (which connects the sites and,
    when tracing, aligns the clocks) to its MPI_Finalize. The earliest rank's first call
    after MPI_Init is time 0; a rank that started later begins with that delay, so the
    replay keeps the start skew."""
    ranks = trace.ranks
    n = len(ranks)
    if sorted(ranks) != list(range(n)):
        missing = sorted(set(range(max(ranks) + 1)) - set(ranks))
        raise IsthmusError(f"{trace.dir}: the trace has no file for rank(s) "
                           f"{', '.join(map(str, missing[:8]))}; a replay needs every rank")
    out = Converted({}, {}, 0.0)
    if any(g.app for g in trace.gateways.values()):
        out.writes = GatewayWrites(trace.gateways.values())
    comm_ids: dict = {("world",): 0}
    out.comms[0] = {"members": list(range(n)), "world": True}
    starts, ends = [], []
    agreed: list[list] = []
    for r in range(n):
        rt = ranks[r]
        calls = [c for c in rt.calls if c.depth == 0]
        calls = calls[1:] if calls and calls[0].fn.startswith("MPI_Init") else calls
        if not calls:
            raise IsthmusError(f"{trace.dir}: rank {r} recorded no MPI call; nothing to replay")
        conv = _Rank(rt, trace, comm_ids, out)
        conv.compute = 0.0
        prev = calls[0].t0
        end = calls[-1].t1
        for c in calls:
            conv.compute += max(c.t0 - prev, 0.0) / 1e9
            if c.fn in _END:
                end = c.t0
                break
            t0, t1 = c.t0, c.t1
            c.t0, c.t1 = t0 / 1e9, t1 / 1e9          # seconds for call()'s local work
            conv.call(c)
            c.t0, c.t1 = t0, t1
            prev = max(prev, t1)
        conv.flush()
        for op in conv.ops:
            if op[0] in "sr":
                del op[7:]                            # the Comm was only for DONE
                if op[0] == "s" and op[2] in conv.lags:
                    op.append(conv.lags[op[2]])
        out.unmatched += sum(1 for op in conv.ops if op[0] == "r" and op[3] is None)
        conv.ops = [op for op in conv.ops if not (op[0] == "r" and op[3] is None)]
        out.templates[r] = conv.ops
        agreed.append(conv.agreed)
        starts.append(calls[0].t0)
        ends.append(end)
        for ph, secs in _phase_times(rt.marks, calls[0].t0, end).items():
            out.measured_phases[ph] = max(out.measured_phases.get(ph, 0.0), secs)
    _agree_on_world(agreed, n)
    t0 = min(starts)
    for r in range(n):
        ops = out.templates[r]
        skew = (starts[r] - t0) / 1e9
        if ops and ops[0][0] == "c":
            ops[0][1] = skew + ops[0][1]
        elif skew > 0:
            ops.insert(0, ["c", skew])
    out.measured = (max(ends) - t0) / 1e9
    return out
