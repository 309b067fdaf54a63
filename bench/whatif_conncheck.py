#!/usr/bin/env python3
# bench/whatif_conncheck.py: the replay's model of one WAN connection (whatif/tcp.py, Ramp)
# checked alone against a trace. For each direction between two gateways, the frames the
# sending gateway wrote (GW_FRAME SENT: time, bytes plus the 80-byte frame and link
# headers, ACK frames included) go into a Ramp, which says when the window
# and the pacing let it go; its arrival is when the link (a queue at its rate, as SimGrid
# has it) has sent it, plus the one-way delay.
# Beside it, when the peer gateway read the frame (GW_FRAME RECEIVED, matched by the
# link's sequence number; the tracer aligns the gateways' clocks). Printed per direction
# and per slice of time from the first MPI_Pcontrol (the examples' timed phase): median
# and worst of both, in ms. The writes are the measured ones, so what differs is the
# connection's model; bench/whatif_calls.py shows where a whole replay drifts.
# bench/notebook/whatif.md (run 7) has what it found for the naive aggregate.
#
#   python3 bench/whatif_conncheck.py TRACE --platform links.toml [--slice 50] [--span 400]
from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))

from isthmus.netemu.matrix import load_matrix  # noqa: E402
from isthmus.trace import records as R  # noqa: E402
from isthmus.trace.reader import load  # noqa: E402
from isthmus.whatif.platform import tcp_ramps  # noqa: E402
from isthmus.whatif.tcp import ACK_FRAME, Ramp  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description="one WAN connection's model against a trace")
    ap.add_argument("trace", type=Path)
    ap.add_argument("--platform", type=Path, required=True)
    ap.add_argument("--slice", type=float, default=50.0, help="ms per row")
    ap.add_argument("--span", type=float, default=400.0, help="ms after the mark to show")
    a = ap.parse_args()
    t, m = load(a.trace), load_matrix(a.platform)
    width = a.slice / 1e3
    ramps = tcp_ramps(m)
    gws = list(t.gateways.values()) if isinstance(t.gateways, dict) else list(t.gateways)
    site = {g.name: m.names.index(g.name.split(".")[0]) for g in gws}
    marks = [c.t0 for rt in t.ranks.values() for c in rt.calls if c.fn == "MPI_Pcontrol"]
    p1 = min(marks) if marks else 0
    got = {}
    for g in gws:
        for f in g.frames:
            if f[1] == R.GW_RECEIVED and f[5]:
                got[(g.peer(f[3])[0], site[g.name], f[5])] = f[0]
    for g in gws:
        me = site[g.name]
        by = defaultdict(list)
        for f in sorted(g.frames):
            if f[1] == R.GW_SENT:
                by[g.peer(f[3])[0]].append(f)
        for peer, frames in sorted(by.items()):
            rtt, rate, mtu, pace, oneway = ramps[f"{me}>{peer}"]
            ramp = Ramp(rtt, rate, mtu, pace, oneway)
            rows = defaultdict(list)
            link = float("-inf")      # when the link has sent what it was given (its queue)
            for f in frames:
                now, n = f[0] / 1e9, f[6] + ACK_FRAME
                link = max(now + ramp.delay(now, n), link) + n / rate
                modelled = link + oneway - now
                there = got.get((me, peer, f[5])) if f[5] else None
                s = (f[0] - p1) / 1e9
                if there is not None and -width <= s < a.span / 1e3:
                    rows[int(s // width)].append((there / 1e9 - now, modelled))
            print(f"{m.names[me]}>{m.names[peer]} (one way {oneway * 1e3:.0f} ms)")
            for k in sorted(rows):
                x = rows[k]
                meas, mod = [u * 1e3 for u, _ in x], [v * 1e3 for _, v in x]
                print(f"  {k * a.slice:6.0f} ms  n {len(x):4d}  measured {statistics.median(meas):7.1f}"
                      f" (worst {max(meas):7.1f})  model {statistics.median(mod):7.1f}"
                      f" (worst {max(mod):7.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
