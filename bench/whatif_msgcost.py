#!/usr/bin/env python3
# bench/whatif_msgcost.py: what a small cross-site message costs beyond the wire, read from
# a trace (`isthmus run --trace`, gateways included). Three places a message spends time
# outside the emulated link, each from one clock:
#   - in the rank: the duration of its sends (MPI_Isend, MPI_Send) and receives (MPI_Recv
#     that returned after the gateway had delivered, i.e. did not wait);
#   - in the gateway: from the message's GW_APP record (taken from the app) to its EAGER
#     frame sent, and from the frame received to its GW_APP record (given to the app);
#   - after delivery: from the gateway's GW_APP (to app) to the rank's MPI_Recv return.
# And on the wire, gateway to gateway per direction (sent -> received; the two gateways'
# clocks as aligned by the tracer), with the pacing rate each gateway's link samples show
# (SO_MAX_PACING_RATE, tune.c). Messages pair FIFO per (source, destination, tag); ranks
# are taken as MPI_COMM_WORLD's (the examples' point-to-point is on the world).
# bench/notebook/whatif.md (run 6) has what it found for the naive aggregate.
#
#   python3 bench/whatif_msgcost.py TRACE [--bytes 16]
from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict, deque
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))

from isthmus.trace import records as R  # noqa: E402
from isthmus.trace.reader import load  # noqa: E402

EAGER = 1  # frame type (native/src/contract/frame.h)


def dist(ns: list[float]) -> str:
    """Median (p10-p90) and count of durations given in nanoseconds, in microseconds."""
    if not ns:
        return "-"
    v = sorted(ns)
    return (f"{statistics.median(v) / 1e3:9.1f} us (p10 {v[len(v) // 10] / 1e3:.1f}, "
            f"p90 {v[9 * len(v) // 10] / 1e3:.1f}), n {len(v)}")


def rank_side(trace, size: int, delivered: dict) -> None:
    for r, rt in sorted(trace.ranks.items()):
        sends, recvs, after = [], [], []
        for c in rt.calls:
            if c.depth or c.fn not in ("MPI_Isend", "MPI_Send", "MPI_Recv"):
                continue
            d = next((x for x in c.details if x[0] in (R.SEND, R.RECV)), None)
            if d is None or d[6] != size:
                continue
            if d[0] == R.SEND:
                sends.append(c.t1 - c.t0)
                continue
            done = next((x for x in c.details if x[0] == R.DONE), None)
            src, tag = (done[3], done[4]) if done is not None else (d[3], d[4])
            q = delivered.get((src, r, tag))
            if not q:
                continue
            t = q.popleft()
            after.append(c.t1 - max(t, c.t0))
            if t <= c.t0:                       # the message was there: the call's own cost
                recvs.append(c.t1 - c.t0)
        print(f"rank {r} (site {rt.site}): send {dist(sends)}")
        print(f"{'':>14}receive, message there {dist(recvs)}")
        print(f"{'':>14}return after delivery {dist(after)}")


def main() -> int:
    ap = argparse.ArgumentParser(description="a small cross-site message's cost beyond the wire")
    ap.add_argument("trace", type=Path)
    ap.add_argument("--bytes", type=int, default=16, help="message size to look at")
    a = ap.parse_args()
    t = load(a.trace)
    gws = list(t.gateways.values()) if isinstance(t.gateways, dict) else list(t.gateways)
    sent: dict = defaultdict(deque)
    delivered: dict = defaultdict(deque)
    for g in gws:
        taken, given = defaultdict(deque), defaultdict(deque)
        for x in sorted(g.app):
            (taken if x[1] == R.GW_FROM_APP else given)[(x[3], x[4], x[5])].append(x[0])
            if x[1] == R.GW_TO_APP:
                delivered[(x[3], x[4], x[5])].append(x[0])
        inside, out = [], []
        for f in sorted(g.frames):
            if f[2] != EAGER or f[6] != a.bytes:
                continue
            key = (f[7], f[8], f[9])
            if f[1] == R.GW_SENT:
                sent[key].append((f[0], g.name))
                if taken[key]:
                    inside.append(f[0] - taken[key].popleft())
            elif f[1] == R.GW_RECEIVED and given[key]:
                out.append(given[key].popleft() - f[0])
        paces = sorted({(g.peer(s[1])[0], s[12]) for s in g.samples})
        print(f"gateway {g.name}: app -> frame sent {dist(inside)}")
        print(f"{'':>12}frame received -> app {dist(out)}")
        print(f"{'':>12}pacing (peer site, B/s): {paces}")
    wire: dict = defaultdict(list)
    for g in gws:
        for f in sorted(g.frames):
            if f[2] == EAGER and f[6] == a.bytes and f[1] == R.GW_RECEIVED:
                q = sent.get((f[7], f[8], f[9]))
                if q:
                    t0, frm = q.popleft()
                    wire[(frm, g.name)].append(f[0] - t0)
    for (frm, to), v in sorted(wire.items()):
        print(f"wire {frm} -> {to}: {dist(v)}")
    rank_side(t, a.bytes, delivered)
    return 0


if __name__ == "__main__":
    sys.exit(main())
