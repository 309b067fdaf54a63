# isthmus/trace/summary.py: where a cross-site run spent its time, from its trace: the
# communication matrix per rank pair (inside a site and across sites), the time in MPI per
# call and per rank, the time ranks waited on messages from other sites, the slowest
# cross-site messages with their phase, and each WAN link's use over time. Numbers here;
# pictures and the HTML page in report.py.
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from . import records as R
from .messages import messages, phase_at
from .reader import Trace, losses

SLOWEST = 20
# start-up and shutdown: not the application's time in MPI (connecting the sites alone
# takes longer than many runs)
STARTUP = ("MPI_Init", "MPI_Init_thread")
OUTSIDE = STARTUP + ("MPI_Finalize",)


@dataclass
class Summary:
    n: int
    sites: list[str]
    site_of: list[int]
    msgs: list[list[int]]          # [src][dst] messages sent
    bytes: list[list[int]]         # [src][dst] bytes sent
    mpi_time: dict[str, list[float]]   # function -> seconds per rank
    calls: dict[str, list[int]]        # function -> calls per rank
    wall: list[float]              # each rank's run: from MPI_Init's end to MPI_Finalize, s
    wait_remote: list[float]       # seconds each rank waited in calls that completed a
    wait_local: list[float]        # receive from another site / from its own site only
    slowest: list[dict]
    links: list[dict]              # per gateway link: totals and its rate timeline
    unmatched: int                 # sends with no receive in the trace
    losses: list[str]
    clock_error_ns: float          # the largest alignment error bound of any process
    aligned: bool
    notes: list[str] = field(default_factory=list)

    def in_mpi(self, rank: int) -> float:
        """Seconds the rank spent in MPI calls, start-up and shutdown left out."""
        return sum(v[rank] for f, v in self.mpi_time.items() if f not in OUTSIDE)

    def totals(self) -> dict:
        """Messages and bytes inside a site and across sites."""
        out = {"local_msgs": 0, "local_bytes": 0, "remote_msgs": 0, "remote_bytes": 0}
        for s in range(self.n):
            for d in range(self.n):
                k = "local" if self.site_of[s] == self.site_of[d] else "remote"
                out[f"{k}_msgs"] += self.msgs[s][d]
                out[f"{k}_bytes"] += self.bytes[s][d]
        return out


def summarize(trace: Trace) -> Summary:
    ranks = sorted(trace.ranks)
    n = max(ranks) + 1 if ranks else 0
    site_of = [trace.site_of(r) for r in range(n)]
    msgs = [[0] * n for _ in range(n)]
    nbytes = [[0] * n for _ in range(n)]
    mpi_time: dict[str, list[float]] = defaultdict(lambda: [0.0] * n)
    calls: dict[str, list[int]] = defaultdict(lambda: [0] * n)
    wall = [0.0] * n
    wait_remote = [0.0] * n
    wait_local = [0.0] * n
    msgs_all, sends, _ = messages(trace)
    for s in sends:
        if 0 <= s.src < n and 0 <= s.dst < n:
            msgs[s.src][s.dst] += 1
            nbytes[s.src][s.dst] += s.bytes
    # which calls completed a receive, and from where: from the paired messages
    completed: dict[int, tuple[bool, bool]] = {}
    for m in msgs_all:
        if m.recv is None:
            continue
        key = id(m.recv.call)
        remote = site_of[m.send.src] != site_of[m.send.dst]
        r, lc = completed.get(key, (False, False))
        completed[key] = (r or remote, lc or not remote)
    for r in ranks:
        rt = trace.ranks[r]
        if rt.calls:
            start = max((c.t1 for c in rt.calls if c.fn in STARTUP), default=rt.calls[0].t0)
            stop = min((c.t0 for c in rt.calls if c.fn == "MPI_Finalize"),
                       default=max(c.t1 for c in rt.calls))
            wall[r] = max(0.0, stop - start) / 1e9
        for c in rt.calls:
            if c.depth:
                continue
            dur = (c.t1 - c.t0) / 1e9
            mpi_time[c.fn][r] += dur
            calls[c.fn][r] += 1
            rem, loc = completed.get(id(c), (False, False))
            if rem:
                wait_remote[r] += dur
            elif loc:
                wait_local[r] += dur
    slowest = []
    for m in msgs_all:
        if m.recv is None or site_of[m.send.src] == site_of[m.send.dst]:
            continue
        slowest.append(m)
    slowest.sort(key=lambda m: m.transfer or 0.0, reverse=True)
    rows = []
    for m in slowest[:SLOWEST]:
        src, dst = trace.ranks.get(m.send.src), trace.ranks.get(m.send.dst)
        err = (src.clock.error_ns if src else 0) + (dst.clock.error_ns if dst else 0)
        rows.append({
            "src": m.send.src, "dst": m.send.dst, "tag": m.send.tag, "bytes": m.send.bytes,
            "transfer_s": (m.transfer or 0.0) / 1e9, "sent_at_s": m.send.t / 1e9,
            "send_call": m.send.call.fn, "recv_call": m.recv.call.fn,
            "phase": phase_at(src.marks, m.send.t) if src else 0,
            "recv_phase": phase_at(dst.marks, m.recv.t_done) if dst else 0,
            "clock_error_s": err / 1e9,
        })  # fmt: skip
    links = link_use(trace)
    lost = losses(trace)
    errs = [r.clock.error_ns for r in trace.ranks.values()] + \
        [g.clock.error_ns for g in trace.gateways.values()]
    notes = []
    if not trace.aligned:
        notes.append("clocks.json is missing (the job did not reach MPI_Finalize): each "
                     "process's times are on its own clock")
    unmatched = sum(1 for m in msgs_all if m.recv is None)
    return Summary(n, trace.sites, site_of, msgs, nbytes, dict(mpi_time), dict(calls), wall,
                   wait_remote, wait_local, rows, links, unmatched, lost,
                   max(errs) if errs else 0.0, trace.aligned, notes)


def link_use(trace: Trace) -> list[dict]:
    """Per gateway and link: bytes and frames each way, frames sent again, duplicates,
    outages, and the send and receive rates between consecutive samples."""
    out = []
    for (site, gw), g in sorted(trace.gateways.items()):
        per: dict[int, list] = defaultdict(list)
        for s in g.samples:
            per[s[1]].append(s)
        counts: dict[int, dict] = defaultdict(lambda: defaultdict(int))
        for f in g.frames:
            c = counts[f[3]]
            c[{R.GW_SENT: "sent", R.GW_RESENT: "resent", R.GW_RECEIVED: "received",
               R.GW_DUPLICATE: "duplicates"}.get(f[1], "other")] += 1
        downs: dict[int, list] = defaultdict(list)
        down_at: dict[int, float] = {}
        for t, link, state, why in g.links:
            if state == 0:
                down_at.setdefault(link, t)
            elif state == 2 and link in down_at:
                downs[link].append((down_at.pop(link), t, why))
        for link in sorted(set(per) | set(counts)):
            ps, pg = g.peer(link)
            sm = per.get(link, [])
            times, tx_rate, rx_rate = [], [], []
            for a, b in zip(sm, sm[1:]):
                dt = (b[0] - a[0]) / 1e9
                if dt <= 0:
                    continue
                times.append(b[0] / 1e9)
                tx_rate.append((b[6] - a[6]) / dt)
                rx_rate.append((b[7] - a[7]) / dt)
            last = sm[-1] if sm else None
            peer = f"{trace.sites[ps] if 0 <= ps < len(trace.sites) else ps}.{pg}"
            out.append({
                "gateway": g.name, "peer": peer, "link": link,
                "tx_bytes": last[6] if last else 0, "rx_bytes": last[7] if last else 0,
                "frames_sent": counts[link]["sent"], "frames_resent": counts[link]["resent"],
                "frames_received": counts[link]["received"],
                "duplicates": counts[link]["duplicates"],
                "outages": [(a / 1e9, b / 1e9, why) for a, b, why in downs.get(link, [])],
                "peak_queue": max((s[3] + s[4] for s in sm), default=0),
                "t": times, "tx_rate": tx_rate, "rx_rate": rx_rate,
            })  # fmt: skip
    return out

