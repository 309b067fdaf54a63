# isthmus/trace/reader.py: a trace folder in memory, every time on rank 0's clock.
#
# Each rank-*.ismt becomes a RankTrace: its MPI calls (each with the details of what it
# did), communicators, phase marks and losses; each gw-*.ismt a GatewayTrace: its frames,
# acknowledgements, link samples, link changes and app frames. DIR/clocks.json maps
# every process's CLOCK_MONOTONIC onto rank 0's (t_process = a + b t_rank0); times here
# are nanoseconds since the earliest event of the trace.
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import IsthmusError
from . import records as R


@dataclass
class Clock:
    a: float = 0.0
    b: float = 1.0
    error_ns: float = 0.0
    aligned: bool = False

    def to_ref(self, t: int) -> float:
        return (t - self.a) / self.b


@dataclass
class Call:
    fn: str
    t0: float
    t1: float
    thread: int
    depth: int
    rc: int
    details: list = field(default_factory=list)  # (kind, flags, fields...) tuples
    created: int | None = None  # the communicator this call defined (its COMM record)


@dataclass
class Comm:
    id: int
    inter: bool
    members: list[int]        # global ranks of the (local) group
    remote: list[int]         # of the remote group (intercommunicators)
    rank: int                 # mine in it
    key: tuple = ()           # the same on every member (see _keys)

    def world(self, peer: int) -> int | None:
        """The global rank of `peer` (a rank in this communicator; the remote group's for an
        intercommunicator), or None for MPI_ANY_SOURCE / MPI_PROC_NULL / out of range."""
        group = self.remote if self.inter else self.members
        return group[peer] if 0 <= peer < len(group) else None


@dataclass
class RankTrace:
    rank: int
    info: dict
    clock: Clock
    calls: list[Call] = field(default_factory=list)
    comms: dict[int, Comm] = field(default_factory=dict)
    marks: list[tuple[float, int]] = field(default_factory=list)   # (t, level)
    losses: list[tuple[float, int, int]] = field(default_factory=list)  # (t, records, bytes)
    truncated: bool = False
    end: tuple | None = None  # the END record's totals (records, bytes, lost records, lost
                              # bytes); None: the process never closed its trace

    @property
    def site(self) -> int:
        return int(self.info.get("site", 0))


@dataclass
class GatewayTrace:
    site: int
    gw: int
    info: dict
    clock: Clock
    frames: list[tuple] = field(default_factory=list)   # (t, event, type, link, stream, seq, len, src, dst, tag, a, b)
    acks: list[tuple] = field(default_factory=list)     # (t, link, ack)
    samples: list[tuple] = field(default_factory=list)  # (t, link, state, sendq, unacked, ooo, tx, rx, held, early, srtt_us, cwnd, pacing, credits)
    links: list[tuple] = field(default_factory=list)    # (t, link, state, why)
    app: list[tuple] = field(default_factory=list)      # (t, dir, type, src, dst, tag, len, link)
    losses: list[tuple] = field(default_factory=list)
    truncated: bool = False
    end: tuple | None = None  # as RankTrace.end

    @property
    def name(self) -> str:
        sites = self.info.get("sites") or []
        s = sites[self.site] if self.site < len(sites) else str(self.site)
        return f"{s}.{self.gw}"

    def peer(self, link: int) -> tuple[int, int]:
        for ln in self.info.get("links", []):
            if ln.get("link") == link:
                return int(ln["site"]), int(ln["gateway"])
        return -1, -1

    def link_to(self, site: int, gw: int) -> int | None:
        """This gateway's link to gateway gw of site, if it has one."""
        for ln in self.info.get("links", []):
            if int(ln["site"]) == site and int(ln["gateway"]) == gw:
                return int(ln["link"])
        return None


@dataclass
class Trace:
    dir: Path
    ranks: dict[int, RankTrace]
    gateways: dict[tuple[int, int], GatewayTrace]
    sites: list[str]
    aligned: bool
    t_end: float
    job: dict

    def site_of(self, rank: int) -> int:
        r = self.ranks.get(rank)
        if r is not None:
            return r.site
        off = 0
        for i, s in enumerate(self.job.get("sites", [])):
            off += int(s.get("ranks", 0))
            if rank < off:
                return i
        return 0

    def comm(self, rank: int, cid: int) -> Comm | None:
        r = self.ranks.get(rank)
        return r.comms.get(cid) if r else None


def _records(data: bytes, path: Path):
    """(kind, flags, fn, body offset, record end) of each record; stops at a cut-off tail."""
    off = R.FILE_HDR.size
    n = len(data)
    while off + R.HDR.size <= n:
        length, kind, flags, fn = R.HDR.unpack_from(data, off)
        if length < R.HDR.size or length % 8 or off + length > n:
            break
        yield kind, flags, fn, off + R.HDR.size, off + length
        off += length
    return off < n


def _head(data: bytes, path: Path) -> tuple[int, int]:
    if len(data) < R.FILE_HDR.size:
        raise IsthmusError(f"{path}: not an isthmus trace file (too short)")
    magic, version, kind, pid = R.FILE_HDR.unpack_from(data, 0)
    if magic != R.MAGIC or version != R.VERSION:
        raise IsthmusError(f"{path}: not an isthmus trace file of version {R.VERSION} "
                           f"(magic {magic:08x}, version {version})")
    return kind, pid


def _info(data: bytes, body: int, end: int) -> dict:
    text = data[body:end].split(b"\0", 1)[0].decode("utf-8", "replace")
    return json.loads(text) if text else {}


def read_clocks(d: Path) -> tuple[dict[tuple[str, int], Clock], bool]:
    p = d / "clocks.json"
    if not p.is_file():
        return {}, False
    try:
        doc = json.loads(p.read_text())
    except (OSError, ValueError) as e:
        raise IsthmusError(f"{p}: not readable as JSON ({e})") from None
    out = {}
    for e in doc.get("processes", []):
        ok = bool(e.get("aligned")) and float(e.get("b", 0)) > 0
        out[(e["kind"], int(e["id"]))] = Clock(float(e["a"]), float(e["b"]),
                                               float(e.get("error_ns", 0)), ok) if ok else Clock()
    return out, True


def _read_rank(path: Path, data: bytes, clock: Clock) -> RankTrace:
    kind, pid = _head(data, path)
    rt = RankTrace(rank=pid, info={}, clock=clock)
    names: list[str] = []
    cur: Call | None = None
    defined: int | None = None   # a COMM record comes before the CALL that created it
    it = _records(data, path)
    end_off = R.FILE_HDR.size
    for kind, flags, fn, body, end in it:
        end_off = end
        if kind == R.CALL:
            t0, t1, th, depth, rc = R.BODY[R.CALL].unpack_from(data, body)
            cur = Call(names[fn] if fn < len(names) else f"MPI_#{fn}", clock.to_ref(t0),
                       clock.to_ref(t1), th, depth, rc, created=defined)
            defined = None
            rt.calls.append(cur)
        elif kind in (R.SEND, R.RECV, R.COLL, R.DONE, R.START, R.FREE, R.RMA, R.WIN):
            if cur is not None:
                cur.details.append((kind, flags) + R.BODY[kind].unpack_from(data, body))
        elif kind == R.COMM:
            cid, size, rsize, myrank = R.BODY[R.COMM].unpack_from(data, body)
            if flags & R.COMM_WORLD:
                members = list(range(size))
                remote: list[int] = []
            else:
                n = size + rsize
                at = body + R.BODY[R.COMM].size
                ranks = list(memoryview(data)[at:at + 4 * n].cast("i")) if n else []
                members, remote = ranks[:size], ranks[size:]
            rt.comms[cid] = Comm(cid, bool(flags & R.COMM_INTER), members, remote, myrank)
            defined = cid
        elif kind == R.MARK:
            t, level, _ = R.BODY[R.MARK].unpack_from(data, body)
            rt.marks.append((clock.to_ref(t), level))
        elif kind == R.LOSS:
            t, nrec, nbytes = R.BODY[R.LOSS].unpack_from(data, body)
            rt.losses.append((clock.to_ref(t), nrec, nbytes))
        elif kind == R.END:
            rt.end = R.BODY[R.END].unpack_from(data, body)[1:]
        elif kind == R.INFO:
            rt.info = _info(data, body, end)
        elif kind == R.NAMES:
            names = [s.decode() for s in data[body:end].split(b"\0") if s]
    rt.truncated = end_off < len(data)
    return rt


def _read_gateway(path: Path, data: bytes, clock: Clock) -> GatewayTrace:
    kind, pid = _head(data, path)
    gt = GatewayTrace(site=pid // 65536, gw=pid % 65536, info={}, clock=clock)
    end_off = R.FILE_HDR.size
    ref = clock.to_ref
    for kind, flags, fn, body, end in _records(data, path):
        end_off = end
        if kind == R.GW_FRAME:
            t, seq, link, stream, ln, src, dst, tag, ff, _, a, b = R.BODY[kind].unpack_from(data, body)
            gt.frames.append((ref(t), flags, fn, link, stream, seq, ln, src, dst, tag, a, b))
        elif kind == R.GW_SAMPLE:
            v = R.BODY[kind].unpack_from(data, body)
            gt.samples.append((ref(v[0]), v[1], flags, v[3], v[4], v[5], v[6], v[7], v[8], v[9],
                               v[10], v[11], v[12], v[13]))
        elif kind == R.GW_ACK:
            t, ack, link, _, _ = R.BODY[kind].unpack_from(data, body)
            gt.acks.append((ref(t), link, ack))
        elif kind == R.GW_LINK:
            t, link, _, _, _, _ = R.BODY[kind].unpack_from(data, body)
            at = body + R.BODY[kind].size
            why = data[at:end].split(b"\0", 1)[0].decode("utf-8", "replace")
            gt.links.append((ref(t), link, flags, why))
        elif kind == R.GW_APP:
            t, src, dst, tag, ln, a, link, _, _ = R.BODY[kind].unpack_from(data, body)
            gt.app.append((ref(t), flags, fn, src, dst, tag, ln, link))
        elif kind == R.LOSS:
            t, nrec, nbytes = R.BODY[R.LOSS].unpack_from(data, body)
            gt.losses.append((ref(t), nrec, nbytes))
        elif kind == R.END:
            gt.end = R.BODY[R.END].unpack_from(data, body)[1:]
        elif kind == R.INFO:
            gt.info = _info(data, body, end)
    gt.truncated = end_off < len(data)
    return gt


def losses(trace: "Trace") -> list[str]:
    """One line for each process whose trace misses something: records dropped because
    its buffer was full (LOSS), a cut-off last record, or no END record (the process
    never closed its trace, so what it held in memory is missing)."""
    out = []
    procs = [(f"rank {r}", t) for r, t in sorted(trace.ranks.items())]
    procs += [(f"gateway {g.name}", g) for _, g in sorted(trace.gateways.items())]
    for who, t in procs:
        lost = sum(x[1] for x in t.losses)
        if lost:
            out.append(f"{who}: {lost} records dropped (trace buffer full) in {len(t.losses)} "
                       f"gap{'s' if len(t.losses) != 1 else ''}")
        if t.truncated:
            out.append(f"{who}: the file ends in a cut-off record (the process died while "
                       "writing)")
        elif t.end is None:
            out.append(f"{who}: no END record: the process ended without closing its trace, "
                       "so the records it still held in memory are missing")
    return out


def _keys(rt: RankTrace) -> None:
    """A key every member computes alike: the members (an intercommunicator's two groups
    in a fixed order) and how many communicators with those members this rank created
    before (the tracer's promise, native/src/trace/comms.c; the OTF2 exporter does the
    same)."""
    seen: dict[tuple, int] = {}
    for cid in sorted(rt.comms):
        c = rt.comms[cid]
        if cid == 0:
            c.key = ("world",)
            continue
        if cid == 1 and not c.inter and len(c.members) == 1:
            c.key = ("self", c.members[0])
            continue
        a, b = tuple(c.members), tuple(c.remote)
        if c.inter and (len(b), b) < (len(a), a):
            a, b = b, a
        base = (c.inter, a, b)
        k = seen.get(base, 0)
        seen[base] = k + 1
        c.key = base + (k,)


def _shift(trace: Trace, t0: float) -> None:
    """Times from the earliest event of the trace."""
    for r in trace.ranks.values():
        for c in r.calls:
            c.t0 -= t0
            c.t1 -= t0
        r.marks = [(t - t0, lv) for t, lv in r.marks]
        r.losses = [(x[0] - t0,) + x[1:] for x in r.losses]
    for g in trace.gateways.values():
        g.frames = [(f[0] - t0,) + f[1:] for f in g.frames]
        g.acks = [(a[0] - t0,) + a[1:] for a in g.acks]
        g.samples = [(s[0] - t0,) + s[1:] for s in g.samples]
        g.links = [(x[0] - t0,) + x[1:] for x in g.links]
        g.app = [(x[0] - t0,) + x[1:] for x in g.app]
        g.losses = [(x[0] - t0,) + x[1:] for x in g.losses]


def load(d: Path, gateways: bool = True) -> Trace:
    d = Path(d)
    rank_files = sorted(d.glob("rank-*.ismt"))
    if not rank_files:
        raise IsthmusError(f"{d}: no trace files (rank-*.ismt); make one with "
                           f"`isthmus run --trace {d} ...`")
    clocks, aligned = read_clocks(d)
    job = {}
    if (d / "job.json").is_file():
        try:
            job = json.loads((d / "job.json").read_text())
        except ValueError:
            job = {}
    ranks: dict[int, RankTrace] = {}
    for p in rank_files:
        data = p.read_bytes()
        _, pid = _head(data, p)
        ranks[pid] = _read_rank(p, data, clocks.get(("rank", pid), Clock()))
        _keys(ranks[pid])
    gws: dict[tuple[int, int], GatewayTrace] = {}
    for p in sorted(d.glob("gw-*.ismt")) if gateways else []:
        data = p.read_bytes()
        _, pid = _head(data, p)
        g = _read_gateway(p, data, clocks.get(("gateway", pid), Clock()))
        gws[(g.site, g.gw)] = g
    sites = next((r.info.get("sites") for r in ranks.values() if r.info.get("sites")),
                 [s.get("name") for s in job.get("sites", [])] or ["A"])
    times = [c.t0 for r in ranks.values() for c in r.calls[:1]]
    times += [f[0] for g in gws.values() for f in (g.frames[:1] + g.samples[:1])]
    t0 = min(times) if times else 0.0
    trace = Trace(d, ranks, gws, list(sites), aligned, 0.0, job)
    _shift(trace, t0)
    ends = [c.t1 for r in ranks.values() for c in r.calls] + \
        [x[0] for g in gws.values() for x in g.frames + g.samples]
    trace.t_end = max(ends) if ends else 0.0
    return trace
