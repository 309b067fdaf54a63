# isthmus/linkprobe/sweep.py: `isthmus link probe`'s measurement sweep: the RTT, then the
# throughput for every (congestion control, streams, window) point, each point a record
# that carries its whole configuration; a point that fails is recorded as failed (with
# the reason), never dropped. Also the window/RTT law each point is compared with.
from __future__ import annotations

import platform
import time
from dataclasses import dataclass
from typing import Callable, Iterable

from ..errors import IsthmusError
from .endpoints import Endpoints

UNITS = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


def parse_size(text: str) -> int:
    """'64k' -> 65536; 'auto' or '0' -> 0 (kernel autotuning)."""
    t = text.strip().lower()
    if t in ("auto", "0"):
        return 0
    mult = UNITS.get(t[-1:], 1)
    num = t[:-1] if t[-1:] in UNITS else t
    try:
        v = int(float(num) * mult)
    except ValueError:
        raise IsthmusError(f"window {text!r}: expected bytes such as 64k, 1m or auto") from None
    if v < 4096 or v > 1 << 30:
        raise IsthmusError(f"window {text!r}: expected 4k .. 1g (or auto)")
    return v


def parse_list(text: str, what: str, conv=str) -> list:
    items = [x.strip() for x in text.split(",") if x.strip()]
    if not items:
        raise IsthmusError(f"{what}: give at least one value")
    return [conv(x) for x in items]


def fmt_size(v: int) -> str:
    if v == 0:
        return "auto"
    for suffix, m in (("g", 1 << 30), ("m", 1 << 20), ("k", 1 << 10)):
        if v % m == 0:
            return f"{v // m}{suffix}"
    return str(v)


@dataclass
class Plan:
    windows: list[int]
    streams: list[int]
    ccs: list[str]
    duration: float = 5.0
    omit: float = 1.0
    rtt_count: int = 200
    rtt_size: int = 8

    def points(self) -> list[tuple[str, int, int]]:
        return [(cc, n, w) for cc in self.ccs for n in self.streams for w in self.windows]


def law_mbit(window: int, streams: int, rtt_us: float, line_mbit: float | None = None) -> float | None:
    """The window/RTT law: at most `streams` windows per round trip, and never more than
    the line rate when it is known."""
    if window <= 0 or rtt_us <= 0:
        return None
    law = window * streams * 8 / (rtt_us / 1e6) / 1e6
    return min(law, line_mbit) if line_mbit else law


def run_sweep(ep: Endpoints, plan: Plan, context: dict,
              progress: Callable[[str], None] | None = None) -> Iterable[dict]:
    """Yield the RTT record, then one record per throughput point."""
    base = {"time": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "host": platform.node(),
            "kernel": platform.release(), "from_to": ep.label, **context}
    try:
        rtt = ep.run("rtt", ["--count", str(plan.rtt_count), "--size", str(plan.rtt_size)],
                     timeout=60 + plan.rtt_count)
        yield {**base, "kind": "rtt", "ok": True, **rtt}
        rtt_us = rtt["min_us"]
    except IsthmusError as e:
        yield {**base, "kind": "rtt", "ok": False, "error": str(e)}
        rtt_us = 0.0
    for cc, n, w in plan.points():
        if progress:
            progress(f"cc {cc}, {n} stream(s), window {fmt_size(w)}")
        args = ["--streams", str(n), "--duration", str(plan.duration), "--omit", str(plan.omit)]
        if w:
            args += ["--window", str(w)]
        if cc != "default":
            args += ["--cc", cc]
        rec = {**base, "kind": "tput", "cc": cc, "streams": n, "window": w,
               "law_mbit_s": law_mbit(w, n, rtt_us, context.get("link_rate_mbit_s"))}
        try:
            rec.update(ep.run("tput", args, timeout=plan.duration + 60), ok=True)
            rec["cc"] = cc
        except IsthmusError as e:
            rec.update(ok=False, error=str(e))
        yield rec
