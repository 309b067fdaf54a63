#!/usr/bin/env python3
# bench/whatif_calls.py: where a what-if prediction loses time, call by call. Replays a
# trace (as `isthmus whatif` does) and sets each rank's blocking calls as replayed beside
# the same calls in the trace: start (ms from the first rank's first call after MPI_Init)
# and duration, and the drift (replayed start - traced start). Rows where the drift moves
# by more than --step ms are the places to look (bench/notebook/whatif.md, run 4).
#
#   python3 bench/whatif_calls.py TRACE --platform links.toml [--rank 0] [--step 5]
#                                 [--no-tcp] [--no-gateway-writes] [--all]
from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))

from isthmus.netemu.matrix import load_matrix  # noqa: E402
from isthmus.netemu.spec import parse_link_spec  # noqa: E402
from isthmus.trace.reader import load  # noqa: E402
from isthmus.whatif.events import convert  # noqa: E402
from isthmus.whatif.predict import predict  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description="replayed against traced calls, per rank")
    ap.add_argument("trace", type=Path)
    ap.add_argument("--platform", type=Path, required=True)
    ap.add_argument("--rank", type=int, default=0)
    ap.add_argument("--step", type=float, default=5.0, help="drift change (ms) to show")
    ap.add_argument("--all", action="store_true", help="every call, not only the jumps")
    ap.add_argument("--no-tcp", action="store_true")
    ap.add_argument("--no-gateway-writes", action="store_true",
                    help="write messages when sent, not when the trace's gateways took them")
    a = ap.parse_args()
    trace = load(a.trace)
    p = predict(trace, convert(trace), load_matrix(a.platform),
                parse_link_spec("delay=1us,rate=10gbit"), None, 64 << 10, 512 << 10,
                baseline=False, tcp=not a.no_tcp, timeline=True,
                gateway_writes=not a.no_gateway_writes)
    print(f"predicted {p.time * 1e3:.1f} ms, measured {p.measured * 1e3:.1f} ms "
          f"(ratio {p.time / p.measured:.3f})")
    t0 = min(next(c for c in rt.calls if c.depth == 0 and not c.fn.startswith("MPI_Init")).t0
             for rt in trace.ranks.values())
    calls = [c for c in trace.ranks[a.rank].calls
             if c.depth == 0 and not c.fn.startswith("MPI_Init")]
    j, prev = 0, 0.0
    print(f"{'call':22s} {'traced at':>10s} {'took':>8s}   {'replayed':>10s} {'took':>8s}"
          f"   {'drift':>8s}")
    for key, s0, s1 in p.timelines[a.rank]:
        fn = key.split(" ")[0]
        while j < len(calls) and calls[j].fn != fn:
            j += 1
        if j >= len(calls):
            break
        c = calls[j]
        j += 1
        at, took = (c.t0 - t0) / 1e6, (c.t1 - c.t0) / 1e6
        drift = s0 * 1e3 - at
        if a.all or abs(drift - prev) > a.step:
            print(f"{fn:22s} {at:10.1f} {took:8.1f}   {s0 * 1e3:10.1f} {(s1 - s0) * 1e3:8.1f}"
                  f"   {drift:8.1f}")
        prev = drift
    return 0


if __name__ == "__main__":
    sys.exit(main())
