# isthmus/whatif/gwwrites.py: when the gateways took each cross-site message from its rank,
# as the trace's gateway records have it (GW_APP, from the app), measured from the rank's
# send call: the gateway's write lag. A gateway is a process that shares the cores with the
# ranks; under load it takes a burst of small messages from the ranks in sub-bursts over
# milliseconds, not at once. Which TCP segments the frames then form, and whether a burst
# of about 10 segments fits the connection's initial window, depends on those times
# (tcp.py; bench/notebook/whatif.md, runs 7 and 8). The replay (engine.py) writes each
# matched message to its connection that long after its rank sent it, instead of at once.
#
# Eager messages only: a frame of type EAGER whose source, destination, tag and payload are
# the send's. Larger messages go through the vendor's rendezvous to the gateway, whose
# progress depends on the rank's later calls, and then isthmus's own; collectives and
# one-sided frames follow isthmus's schedules, not the trace's calls. They are written when
# sent, as before. Frames match sends in order per (source, destination, tag, bytes): a
# frame earlier than the send (a collective's or the start-up's with the same key) is
# skipped, and a send whose next frame is more than MAX_LAG later keeps no lag (its frame
# is not in the trace).
from __future__ import annotations

import statistics
from collections import defaultdict, deque

from ..trace import records as R

EAGER = 1                 # frame type (native/src/contract/frame.h)
EARLY_NS = 1e6            # a frame this much before its send is another's (clock error is
                          # tens of us after the tracer's alignment)
MAX_LAG = 1.0             # seconds: later than this, the frame is not this send's


class GatewayWrites:
    """The EAGER frames the gateways took from their ranks, by (source, destination, tag,
    bytes), each key's in time order; lag() consumes them send by send."""

    def __init__(self, gateways) -> None:
        by: dict[tuple, list] = defaultdict(list)
        for g in gateways:
            for t, way, ftype, src, dst, tag, ln, _link in g.app:
                if way == R.GW_FROM_APP and ftype == EAGER:
                    by[(src, dst, tag, ln)].append(t)
        self.frames = {k: deque(sorted(v)) for k, v in by.items()}
        self.count = sum(len(v) for v in by.values())
        self.lags: list[float] = []
        self.unmatched = 0

    def lag(self, src: int, dst: int, tag: int, nbytes: int, t0: float) -> float | None:
        """Seconds from the send call's start (t0, seconds on the trace's clock) to its
        gateway taking the frame; None if the trace has no such frame (a send of a size
        no EAGER frame had, a rendezvous, is not counted as unmatched)."""
        q = self.frames.get((src, dst, tag, nbytes))
        if q is None:
            return None
        t0_ns = t0 * 1e9
        while q and q[0] < t0_ns - EARLY_NS:
            q.popleft()
        if not q or q[0] - t0_ns > MAX_LAG * 1e9:
            self.unmatched += 1
            return None
        lag = max(0.0, (q.popleft() - t0_ns) / 1e9)
        self.lags.append(lag)
        return lag

    def summary(self) -> str:
        """One line for the notes: how many sends got a lag, and the lags' spread."""
        if not self.lags:
            return ""
        q = statistics.quantiles(self.lags, n=10) if len(self.lags) > 1 else self.lags * 9
        return (f"{len(self.lags)} cross-site eager sends written to their connection as the "
                f"gateways took them in the trace, {statistics.median(self.lags) * 1e6:.0f} us "
                f"(median; p10-p90 {q[0] * 1e6:.0f}-{q[-1] * 1e6:.0f} us) after the rank sent "
                "them" + (f"; {self.unmatched} without a gateway record written when sent"
                          if self.unmatched else ""))
