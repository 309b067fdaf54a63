# isthmus/linkprobe/sweep.py: `isthmus link probe`'s measurement sweep: the RTT, then the
# throughput for every (congestion control, streams, window) point, each point a record
# that carries its whole configuration; a point that fails is recorded as failed (with
# the reason), never dropped. Also the window/RTT law each point is compared with. With
# --transport udp the points run over the reliable-UDP transport (isthmus-udpperf).
from __future__ import annotations

import json
import platform
import subprocess
import time
from dataclasses import dataclass
from typing import Callable, Iterable

from .. import units
from ..errors import IsthmusError
from .endpoints import Endpoints

def parse_size(text: str) -> int:
    """A window: '64k' -> 65536 (isthmus/units.py); 'auto' or '0' -> 0 (kernel autotuning)."""
    t = text.strip()
    if t.lower() in ("auto", "0"):
        return 0
    try:
        v = units.parse_size(t)
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


UDP_PORT_OFFSET = 1  # isthmus-udpperf listens next to the TCP probe server


def udp_point(ep: Endpoints, udp_exe: str, cc: str, window: int, plan: Plan) -> dict:
    """One throughput point over the reliable-UDP transport: isthmus-udpperf receiving on
    the server side (started here, so only where we start the server) and sending from
    the client side; every byte is verified. The result in tput-record fields."""
    if ep.server_prefix is None:
        raise IsthmusError("--transport udp needs both ends under our control (--link or "
                           "--matrix): the far end's isthmus-udpperf is started by the probe")
    host, port = ep.server_addr.rsplit(":", 1)
    addr = f"{host}:{int(port) + UDP_PORT_OFFSET}"
    common = [*ep.creds.args(), "--cc", cc]
    if window:
        common += ["--window", str(window)]
    recv = subprocess.Popen([*ep.server_prefix, udp_exe, "recv", "--listen", addr, "--omit",
                             str(plan.omit), *common], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        if "listening" not in recv.stderr.readline():
            recv.wait(5)
            raise IsthmusError(f"isthmus-udpperf did not start at {addr}: {recv.stderr.read().strip()}")
        snd = subprocess.run([*ep.client_prefix, udp_exe, "send", "--connect", addr, "--duration",
                              str(plan.duration), *common], capture_output=True, text=True,
                             timeout=4 * plan.duration + 60)
        out, err = recv.communicate(timeout=4 * plan.duration + 60)
    except subprocess.TimeoutExpired:
        raise IsthmusError(f"udp probe to {addr} took longer than {4 * plan.duration + 60:.0f} s") from None
    finally:
        if recv.poll() is None:
            recv.kill()
            recv.wait()
    try:
        r = json.loads(out.strip().splitlines()[-1])
        s = json.loads(snd.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise IsthmusError(f"udp probe printed no result: {(snd.stderr or err).strip()}") from None
    if not (r.get("ok") and s.get("ok")):
        raise IsthmusError(r.get("error") or s.get("error") or "udp transfer failed")
    return {"mbit_s": r["mbit_s_after_omit"], "bytes": r["bytes"], "verified": r["verified"],
            "retrans": s["udp"]["pkts_retransmitted"], "rtt_us": s["udp"]["srtt_us"],
            "cpu_s": s["cpu_s"] + r["cpu_s"], "duration_s": plan.duration, "omit_s": plan.omit}


def run_sweep(ep: Endpoints, plan: Plan, context: dict,
              progress: Callable[[str], None] | None = None, transport: str = "tcp",
              udp_exe: str | None = None) -> Iterable[dict]:
    """Yield the RTT record, then one record per throughput point (over kernel TCP, or
    with transport "udp" over the reliable-UDP transport, whose cc is bbr or reno)."""
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
        if transport == "udp":
            ucc = "bbr" if cc == "default" else cc
            rec = {**base, "kind": "tput", "transport": "udp", "cc": f"udp-{ucc}", "streams": 1,
                   "window": w, "law_mbit_s": law_mbit(w, 1, rtt_us, context.get("link_rate_mbit_s"))}
            try:
                rec.update(udp_point(ep, udp_exe, ucc, w, plan), ok=True)
            except IsthmusError as e:
                rec.update(ok=False, error=str(e))
            yield rec
            continue
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
