# isthmus/trace/perfetto.py: a trace as Chrome trace-event JSON, which ui.perfetto.dev and
# chrome://tracing open in a browser. Each site is a process; its ranks and gateways are
# its threads (gateways sorted after the ranks); MPI calls are slices with their details
# as arguments; point-to-point messages are flow arrows from the send to the receive's
# completion; each WAN frame a gateway received is an arrow from the gateway that sent it;
# link samples are counters; outages are slices; lost records are instant events. Times are
# microseconds on rank 0's clock; each track's name and the file's otherData carry the error
# bound of each process's clock alignment (docs/trace.md).
from __future__ import annotations

import json
from pathlib import Path

from . import records as R
from .messages import messages
from .paraver import clock_note
from .reader import Trace, losses

GW_TID = 1_000_000  # gateways' thread ids start here, after any rank


def _us(t: float) -> float:
    return round(t / 1e3, 3)


def _tid_gw(site: int, gw: int) -> int:
    return GW_TID + site * 1000 + gw


def events(trace: Trace, gateways: bool = True) -> list[dict]:
    ev: list[dict] = []
    for s, name in enumerate(trace.sites):
        ev.append({"ph": "M", "name": "process_name", "pid": s, "args": {"name": f"site {name}"}})
        ev.append({"ph": "M", "name": "process_sort_index", "pid": s, "args": {"sort_index": s}})
    for r, rt in sorted(trace.ranks.items()):
        pid = rt.site
        ev.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": r,
                   "args": {"name": f"rank {r} {clock_note(rt.clock)}"}})
        ev.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": r,
                   "args": {"sort_index": r}})
        for c in rt.calls:
            args = {"rc": c.rc} if c.rc else {}
            for d in c.details:
                if d[0] in (R.SEND, R.RECV):
                    args["send" if d[0] == R.SEND else "recv"] = {
                        "peer": d[3], "tag": d[4], "bytes": d[6], "comm": d[2]}
                elif d[0] == R.COLL:
                    args["collective"] = {"comm": d[2], "root": d[3], "sent": d[4],
                                          "received": d[5]}
            ev.append({"ph": "X", "name": c.fn, "cat": "mpi", "pid": pid, "tid": r,
                       "ts": _us(c.t0), "dur": max(_us(c.t1) - _us(c.t0), 0.001), "args": args})
        for t, level in rt.marks:
            ev.append({"ph": "i", "name": f"MPI_Pcontrol({level})", "cat": "phase", "s": "t",
                       "pid": pid, "tid": r, "ts": _us(t)})
        for t, nrec, nbytes in rt.losses:
            ev.append({"ph": "i", "name": f"{nrec} trace records lost", "cat": "trace", "s": "t",
                       "pid": pid, "tid": r, "ts": _us(t)})
    msgs, _, _ = messages(trace)
    for i, m in enumerate(msgs):
        if m.recv is None:
            continue
        sp, dp = trace.site_of(m.send.src), trace.site_of(m.send.dst)
        name = "cross-site message" if sp != dp else "message"
        common = {"name": name, "cat": "p2p", "id": i}
        ev.append({**common, "ph": "s", "pid": sp, "tid": m.send.src, "ts": _us(m.send.t)})
        ev.append({**common, "ph": "f", "bp": "e", "pid": dp, "tid": m.send.dst,
                   "ts": _us(m.recv.t_done)})
    if gateways:
        ev += _gateway_events(trace)
    return ev


def _gateway_events(trace: Trace) -> list[dict]:
    ev: list[dict] = []
    sent: dict[tuple, float] = {}  # (site, gw, link, seq) -> last time it was written
    for (site, gw), g in sorted(trace.gateways.items()):
        for f in g.frames:
            if f[1] in (R.GW_SENT, R.GW_RESENT) and f[5]:
                sent[(site, gw, f[3], f[5])] = f[0]
    flow = 0
    for (site, gw), g in sorted(trace.gateways.items()):
        tid = _tid_gw(site, gw)
        ev.append({"ph": "M", "name": "thread_name", "pid": site, "tid": tid,
                   "args": {"name": f"gateway {g.name} {clock_note(g.clock)}"}})
        for t, nrec, _ in g.losses:
            ev.append({"ph": "i", "name": f"{nrec} trace records lost", "cat": "trace", "s": "t",
                       "pid": site, "tid": tid, "ts": _us(t)})
        ev.append({"ph": "M", "name": "thread_sort_index", "pid": site, "tid": tid,
                   "args": {"sort_index": tid}})
        for f in g.frames:
            t, event, ftype, link, seq, ln = f[0], f[1], f[2], f[3], f[5], f[6]
            tname = R.FRAME_TYPES.get(ftype, str(ftype))
            if event == R.GW_DUPLICATE:
                ev.append({"ph": "i", "name": f"duplicate {tname} dropped", "cat": "wan", "s": "t",
                           "pid": site, "tid": tid, "ts": _us(t)})
            elif event == R.GW_RESENT:
                ev.append({"ph": "i", "name": f"{tname} sent again", "cat": "wan", "s": "t",
                           "pid": site, "tid": tid, "ts": _us(t)})
            if event != R.GW_RECEIVED or not seq:
                continue
            ps, pg = g.peer(link)
            peer = trace.gateways.get((ps, pg))
            back = peer.link_to(site, gw) if peer else None
            ts = sent.get((ps, pg, back, seq)) if back is not None else None
            if ts is None:
                continue
            flow += 1
            common = {"name": f"WAN {tname}", "cat": "wan", "id": f"w{flow}",
                      "args": {"seq": seq, "bytes": ln + R.FRAME_HDR_BYTES}}
            ev.append({**common, "ph": "s", "pid": ps, "tid": _tid_gw(ps, pg), "ts": _us(ts)})
            ev.append({**common, "ph": "f", "bp": "e", "pid": site, "tid": tid, "ts": _us(t)})
            ev.append({"ph": "X", "name": f"WAN {tname}", "cat": "wan", "pid": site, "tid": tid,
                       "ts": _us(t), "dur": 0.001, "args": common["args"]})
        for s in g.samples:
            ps, pg = g.peer(s[1])
            peer = f"{trace.sites[ps] if 0 <= ps < len(trace.sites) else ps}.{pg}"
            ev.append({"ph": "C", "name": f"link {g.name} -> {peer}", "pid": site,
                       "ts": _us(s[0]), "args": {"queued frames": s[3], "unacked frames": s[4],
                                                 "cwnd bytes": s[11]}})
        down: dict[int, float] = {}
        for t, link, state, why in g.links:
            if state == 0:
                down.setdefault(link, t)
            elif state == 2 and link in down:
                a = down.pop(link)
                ev.append({"ph": "X", "name": "link down", "cat": "wan", "pid": site, "tid": tid,
                           "ts": _us(a), "dur": max(_us(t) - _us(a), 0.001), "args": {"why": why}})
    return ev


def export_perfetto(trace: Trace, path: Path, gateways: bool = True) -> int:
    ev = events(trace, gateways)
    clocks = {f"rank {r}": {"aligned": rt.clock.aligned, "error_ns": rt.clock.error_ns}
              for r, rt in sorted(trace.ranks.items())}
    if gateways:
        clocks.update({f"gateway {g.name}": {"aligned": g.clock.aligned,
                                             "error_ns": g.clock.error_ns}
                       for _, g in sorted(trace.gateways.items())})
    other = {"producer": "isthmus trace export", "clocks_aligned": trace.aligned,
             "clock_reference": "rank 0", "clocks": clocks, "losses": losses(trace)}
    path.write_text(json.dumps({"traceEvents": ev, "displayTimeUnit": "ns",
                                "otherData": other}))
    return len(ev)
