# isthmus/trace/paraver.py: a trace in Paraver's format (BSC), the seed's tool: trace.prv
# (records), trace.pcf (names of states, events and values) and trace.row (names of
# nodes, cpus and threads). Sites are nodes; application 1 is the MPI ranks (one task
# each, one thread per thread that called MPI), application 2 the gateways, on their
# sites' nodes. A rank's state is Running outside MPI and the class of the MPI call it
# is in; MPI calls are events 50000001 (value: the function), MPI_Pcontrol phases events
# 50000002; messages are communications from the send to the receive (logical: posted,
# physical: completed); WAN frames are communications between gateways, and each link's
# samples are events 6000001x. Records a process dropped (its trace buffer was full) are
# event 50000003 (value: how many) where recording resumed. Times are nanoseconds on rank
# 0's clock; each process's name in the .row carries the error bound of its clock's
# alignment (docs/trace.md).
from __future__ import annotations

import time
from pathlib import Path

from . import records as R
from .messages import messages
from .reader import Trace

EV_MPI, EV_PHASE, EV_LOST = 50000001, 50000002, 50000003
EV_FRAME_SENT, EV_FRAME_RECV = 60000001, 60000002
EV_QUEUED, EV_UNACKED, EV_LINK_TX, EV_CWND, EV_LINK = 60000011, 60000012, 60000013, 60000014, 60000015
ST_IDLE, ST_RUN, ST_P2P, ST_COLL, ST_OTHER, ST_DOWN = 0, 1, 2, 3, 4, 5
STATES = [(ST_IDLE, "Idle", "117,195,255"), (ST_RUN, "Running", "0,0,255"),
          (ST_P2P, "MPI point-to-point", "255,0,0"), (ST_COLL, "MPI collective", "255,165,0"),
          (ST_OTHER, "MPI other", "192,192,192"), (ST_DOWN, "WAN link down", "139,0,0")]
COLL_NAMES = ("Barrier", "Bcast", "Reduce", "Allreduce", "Gather", "Scatter", "Allgather",
              "Alltoall", "Scan", "Exscan", "Neighbor")


def _state(fn: str) -> int:
    base = fn[4:]
    if base.startswith("I") and any(base[1:].startswith(c) for c in COLL_NAMES):
        return ST_COLL
    if any(base.startswith(c) for c in COLL_NAMES):
        return ST_COLL
    if any(k in base for k in ("send", "Send", "recv", "Recv", "Wait", "Test", "probe", "Probe",
                               "Start")):
        return ST_P2P
    return ST_OTHER


class _Layout:
    """Paraver's numbering: cpus 1.. (one per process, site by site), tasks per app."""

    def __init__(self, trace: Trace, gateways: bool):
        self.nodes = [[] for _ in trace.sites]
        self.rank_threads = {r: max([c.thread for c in rt.calls] + [0]) + 1
                             for r, rt in trace.ranks.items()}
        for r, rt in sorted(trace.ranks.items()):
            self.nodes[min(rt.site, len(self.nodes) - 1)].append(("rank", r))
        self.gws = sorted(trace.gateways) if gateways else []
        for site, gw in self.gws:
            self.nodes[min(site, len(self.nodes) - 1)].append(("gw", (site, gw)))
        self.cpu = {}
        n = 0
        for node in self.nodes:
            for p in node:
                n += 1
                self.cpu[p] = n
        self.rank_task = {r: i + 1 for i, r in enumerate(sorted(trace.ranks))}
        self.gw_task = {g: i + 1 for i, g in enumerate(self.gws)}

    def rank(self, r: int, thread: int = 0) -> str:
        return f"{self.cpu[('rank', r)]}:1:{self.rank_task[r]}:{thread + 1}"

    def gw(self, g) -> str:
        return f"{self.cpu[('gw', g)]}:2:{self.gw_task[g]}:1"


def _ns(t: float) -> int:
    return max(0, int(round(t)))


def export_paraver(trace: Trace, out_prefix: Path, gateways: bool = True) -> int:
    """Write out_prefix.prv/.pcf/.row; the number of records."""
    lay = _Layout(trace, gateways)
    names = sorted({c.fn for rt in trace.ranks.values() for c in rt.calls})
    value = {fn: i + 1 for i, fn in enumerate(names)}
    recs: list[tuple[int, int, str]] = []  # (time, order, line)
    end = _ns(trace.t_end)
    for r, rt in trace.ranks.items():
        at = _ns(rt.calls[0].t0) if rt.calls else 0
        for th in range(lay.rank_threads[r] if at > 0 else 0):
            recs.append((0, 0, f"1:{lay.rank(r, th)}:0:{at}:{ST_IDLE}"))
        last = {}
        for c in rt.calls:
            loc = lay.rank(r, c.thread)
            t0, t1 = _ns(c.t0), _ns(c.t1)
            if c.depth == 0:
                prev = last.get(c.thread, _ns(rt.calls[0].t0))
                if t0 > prev:
                    recs.append((prev, 0, f"1:{loc}:{prev}:{t0}:{ST_RUN}"))
                recs.append((t0, 0, f"1:{loc}:{t0}:{max(t1, t0)}:{_state(c.fn)}"))
                last[c.thread] = max(t1, t0)
            recs.append((t0, 1, f"2:{loc}:{t0}:{EV_MPI}:{value[c.fn]}"))
            recs.append((t1, 3, f"2:{loc}:{t1}:{EV_MPI}:0"))
        for t, level in rt.marks:
            recs.append((_ns(t), 2, f"2:{lay.rank(r)}:{_ns(t)}:{EV_PHASE}:{level}"))
        for t, nrec, _ in rt.losses:
            recs.append((_ns(t), 2, f"2:{lay.rank(r)}:{_ns(t)}:{EV_LOST}:{nrec}"))
    msgs, _, _ = messages(trace)
    for m in msgs:
        if m.recv is None or m.send.src not in trace.ranks or m.send.dst not in trace.ranks:
            continue
        ts, tp, td = _ns(m.send.t), _ns(m.recv.t_post), _ns(m.recv.t_done)
        recs.append((ts, 2, f"3:{lay.rank(m.send.src, m.send.call.thread)}:{ts}:{ts}:"
                            f"{lay.rank(m.send.dst, m.recv.call.thread)}:{tp}:{td}:"
                            f"{m.send.bytes}:{m.send.tag}"))
    if gateways:
        _gateways(trace, lay, recs)
    recs.sort(key=lambda x: (x[0], x[1]))
    ncpus = ",".join(str(len(n)) for n in lay.nodes)
    ranks_apl = ",".join(f"{lay.rank_threads[r]}:{min(rt.site, len(lay.nodes) - 1) + 1}"
                         for r, rt in sorted(trace.ranks.items()))
    apps = f"1:{len(trace.ranks)}({ranks_apl})"
    if lay.gws:
        gw_apl = ",".join(f"1:{min(s, len(lay.nodes) - 1) + 1}" for s, _ in lay.gws)
        apps = f"2:{len(trace.ranks)}({ranks_apl}):{len(lay.gws)}({gw_apl})"
    stamp = time.strftime("%d/%m/%y at %H:%M")
    prv = out_prefix.with_suffix(".prv")
    with prv.open("w") as f:
        f.write(f"#Paraver ({stamp}):{end}_ns:{len(lay.nodes)}({ncpus}):{apps}\n")
        for _, _, line in recs:
            f.write(line + "\n")
    _pcf(out_prefix.with_suffix(".pcf"), names, value)
    _row(out_prefix.with_suffix(".row"), trace, lay)
    return len(recs)


def _gateways(trace: Trace, lay: _Layout, recs: list) -> None:
    sent: dict[tuple, float] = {}
    for g_id, g in trace.gateways.items():
        for f in g.frames:
            if f[1] in (R.GW_SENT, R.GW_RESENT) and f[5]:
                sent[(g_id, f[3], f[5])] = f[0]
    for g_id, g in sorted(trace.gateways.items()):
        loc = lay.gw(g_id)
        recs.append((0, 0, f"1:{loc}:0:{_ns(trace.t_end)}:{ST_RUN}"))
        for f in g.frames:
            t, event, ftype, link, seq, ln = _ns(f[0]), f[1], f[2], f[3], f[5], f[6]
            if event in (R.GW_SENT, R.GW_RESENT):
                recs.append((t, 2, f"2:{loc}:{t}:{EV_FRAME_SENT}:{ftype}:{EV_LINK}:{link}"))
            elif event == R.GW_RECEIVED and seq:
                recs.append((t, 2, f"2:{loc}:{t}:{EV_FRAME_RECV}:{ftype}:{EV_LINK}:{link}"))
                ps, pg = g.peer(link)
                peer = trace.gateways.get((ps, pg))
                back = peer.link_to(*g_id) if peer else None
                ts = sent.get(((ps, pg), back, seq))
                if ts is not None and (ps, pg) in lay.gw_task:
                    s = _ns(ts)
                    recs.append((s, 2, f"3:{lay.gw((ps, pg))}:{s}:{s}:{loc}:{t}:{t}:"
                                       f"{ln + R.FRAME_HDR_BYTES}:{ftype}"))
        for t, nrec, _ in g.losses:
            recs.append((_ns(t), 2, f"2:{loc}:{_ns(t)}:{EV_LOST}:{nrec}"))
        for smp in g.samples:
            t = _ns(smp[0])
            recs.append((t, 2, f"2:{loc}:{t}:{EV_LINK}:{smp[1]}:{EV_QUEUED}:{smp[3]}:"
                               f"{EV_UNACKED}:{smp[4]}:{EV_LINK_TX}:{smp[6]}:{EV_CWND}:{smp[11]}"))
        down: dict[int, float] = {}
        for t, link, state, _why in g.links:
            if state == 0:
                down.setdefault(link, t)
            elif state == 2 and link in down:
                a, b = _ns(down.pop(link)), _ns(t)
                recs.append((a, 0, f"1:{loc}:{a}:{b}:{ST_DOWN}"))


def _pcf(path: Path, names: list[str], value: dict[str, int]) -> None:
    lines = ["DEFAULT_OPTIONS", "", "LEVEL               THREAD", "UNITS               NANOSEC",
             "LOOK_BACK           100", "SPEED               1", "FLAG_ICONS          ENABLED",
             "NUM_OF_STATE_COLORS 1000", "YMAX_SCALE          37", "", "DEFAULT_SEMANTIC", "",
             "THREAD_FUNC         State As Is", "", "STATES"]
    lines += [f"{i}    {n}" for i, n, _ in STATES]
    lines += ["", "STATES_COLOR"] + [f"{i}    {{{c}}}" for i, _, c in STATES]
    lines += ["", "EVENT_TYPE", f"0    {EV_MPI}    MPI call", "VALUES", "0   End"]
    lines += [f"{value[n]}   {n}" for n in names]
    lines += ["", "EVENT_TYPE", f"0    {EV_PHASE}    Application phase (MPI_Pcontrol level)"]
    lines += ["", "EVENT_TYPE",
              f"0    {EV_LOST}    Trace records lost before this point (buffer full)"]
    lines += ["", "EVENT_TYPE", f"0    {EV_FRAME_SENT}    WAN frame sent",
              f"0    {EV_FRAME_RECV}    WAN frame received", "VALUES"]
    lines += [f"{k}   {v}" for k, v in sorted(R.FRAME_TYPES.items())]
    lines += ["", "EVENT_TYPE", f"0    {EV_LINK}    WAN link (index at its gateway)",
              f"0    {EV_QUEUED}    WAN link: frames queued",
              f"0    {EV_UNACKED}    WAN link: frames not yet acknowledged",
              f"0    {EV_LINK_TX}    WAN link: bytes sent so far",
              f"0    {EV_CWND}    WAN link: congestion window (bytes)", ""]
    path.write_text("\n".join(lines) + "\n")


def clock_note(clock) -> str:
    """How far a process's times may be off rank 0's, for its name."""
    return f"(clock +-{clock.error_ns / 1e3:.1f} us)" if clock.aligned else "(clock not aligned)"


def _row(path: Path, trace: Trace, lay: _Layout) -> None:
    def proc(p):
        if p[0] == "rank":
            return f"rank {p[1]} {clock_note(trace.ranks[p[1]].clock)}"
        g = trace.gateways[p[1]]
        return f"gateway {g.name} {clock_note(g.clock)}"

    cpus = [proc(p) for node in lay.nodes for p in node]
    threads = [f"rank {r}" + (f" thread {t}" if t else "") + f" {clock_note(trace.ranks[r].clock)}"
               for r in sorted(trace.ranks) for t in range(lay.rank_threads[r])]
    threads += [f"gateway {trace.gateways[g].name} {clock_note(trace.gateways[g].clock)}"
                for g in lay.gws]
    lines = [f"LEVEL CPU SIZE {len(cpus)}"] + cpus + [""]
    lines += [f"LEVEL NODE SIZE {len(lay.nodes)}"] + [f"site {s}" for s in trace.sites] + [""]
    lines += [f"LEVEL THREAD SIZE {len(threads)}"] + threads + [""]
    path.write_text("\n".join(lines))
