#!/usr/bin/env python3
# bench/udp_place.py: what direct placement of received payload saves (issue 7): the
# same isthmus-udpperf binary with placement (the receiver's ism_udp_recv_all posts its
# buffer, payload goes packet -> buffer) and without (ISTHMUS_UDP_PLACE=0: packet -> ring
# -> buffer), alternating in one run, on loopback and on an emulated 1 Gbit/s, 20 ms
# link. Reports goodput and CPU seconds per GB of the receiver and the sender (getrusage
# of each process), median and spread over the repetitions, the ratio placed/ring per
# repetition pair, the share of bytes placed directly, and the load average before each
# run. Payload checks are off (--no-verify), so only the transport differs. The link
# part needs root (network namespaces).
#
#   python3 bench/udp_place.py [--reps 5] [--seconds 6] [--block 1m] [--no-link]
#                              [--baseline-exe PATH] (a third mode: another build's
#                              isthmus-udpperf, e.g. main's, run as it is: no --block)
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))

from isthmus.linkprobe.endpoints import Credentials  # noqa: E402
from isthmus.linkprobe.udpperf import udpperf_binary  # noqa: E402
from isthmus.paths import find_prefix  # noqa: E402

sys.path.insert(0, str(REPO / "bench"))
from udp_transport import summary  # noqa: E402  (median, min, max, spread)

MODES = {"placed": {}, "ring": {"ISTHMUS_UDP_PLACE": "0"}}
BASELINE = {}  # mode "baseline" -> its executable, when given


def last_json(text: str) -> dict:
    for line in reversed(text.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    return {"ok": False, "error": text.strip()[-300:]}


def run_pair(start, exe, creds, host, port, seconds, block, window, env):
    """One transfer: receiver, then sender; start(argv, **popen kwargs) runs a side."""
    common = [*creds.args(), "--no-verify"] + (["--block", block] if block else [])
    if window:
        common += ["--window", str(window)]
    full_env = {**os.environ, **env}
    recv = start("B", [exe, "recv", "--listen", f"{host}:{port}", "--omit", "1", *common],
                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=full_env)
    line = recv.stderr.readline()
    if "listening" not in line:
        recv.kill()
        return {"ok": False, "error": line}
    snd = start("A", [exe, "send", "--connect", f"{host}:{port}", "--duration", str(seconds),
                      *common], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                env=full_env)
    s_out, s_err = snd.communicate(timeout=seconds * 4 + 60)
    r_out, r_err = recv.communicate(timeout=seconds * 4 + 60)
    s, r = last_json(s_out or s_err), last_json(r_out or r_err)
    if not (s.get("ok") and r.get("ok")):
        return {"ok": False, "error": r.get("error") or s.get("error")}
    gb = r["bytes"] / 1e9
    u = r.get("udp", {})
    return {"ok": True, "mbit_s": r["mbit_s_after_omit"], "bytes": r["bytes"],
            "recv_cpu_s_per_gb": r["cpu_s"] / gb, "send_cpu_s_per_gb": s["cpu_s"] / gb,
            "direct_share": u.get("bytes_placed_direct", 0) / r["bytes"],
            "back_share": u.get("bytes_placed_back", 0) / r["bytes"], "recv": r, "send": s}


def measure(where, start, exe, creds, host, seconds, block, window, reps, jl, records):
    port = 41960
    for rep in range(reps):
        order = list(MODES)
        order = order[rep % len(order):] + order[:rep % len(order)]  # rotate: drift hits all
        for mode in order:
            la = os.getloadavg()[0]
            port += 1
            base = mode == "baseline"
            r = run_pair(start, BASELINE.get(mode, exe), creds, host, port, seconds,
                         None if base else block, window, MODES[mode])
            rec = {"where": where, "mode": mode, "rep": rep, "block": block, "load1": la, **r}
            records.append(rec)
            jl.write(json.dumps(rec) + "\n")
            jl.flush()
            print(f"{where:10} rep {rep + 1} {mode:6} load {la:4.2f}: "
                  + (f"{r['mbit_s']:8.1f} Mbit/s, recv {r['recv_cpu_s_per_gb']:.3f} s/GB, send "
                     f"{r['send_cpu_s_per_gb']:.3f} s/GB, direct {r['direct_share']:.1%}"
                     if r.get("ok") else f"FAILED {r.get('error')}"), flush=True)


def report(records, where):
    print(f"\n## {where}")
    print(f"{'mode':7} {'Mbit/s':>22} {'recv s/GB':>22} {'send s/GB':>22} {'direct':>7}")
    by = {}
    for mode in MODES:
        ok = [r for r in records if r["where"] == where and r["mode"] == mode and r.get("ok")]
        by[mode] = {r["rep"]: r for r in ok}
        cells = []
        for key, fmt in (("mbit_s", "{:.0f}"), ("recv_cpu_s_per_gb", "{:.3f}"),
                         ("send_cpu_s_per_gb", "{:.3f}")):
            s = summary([r[key] for r in ok])
            cells.append(f"{fmt.format(s['median'])} ({fmt.format(s['min'])}..{fmt.format(s['max'])})"
                         if s else "-")
        d = summary([r["direct_share"] for r in ok])
        print(f"{mode:7} {cells[0]:>22} {cells[1]:>22} {cells[2]:>22} "
              f"{d['median'] if d else 0:7.1%}")
    for other in [m for m in MODES if m != "placed"]:
        for key in ("mbit_s", "recv_cpu_s_per_gb"):
            ratios = [by["placed"][k][key] / by[other][k][key] for k in by["placed"]
                      if k in by[other] and by[other][k][key] > 0]
            s = summary(ratios)
            if s:
                print(f"placed/{other} {key}: median {s['median']:.3f} (min {s['min']:.3f}, "
                      f"max {s['max']:.3f}, {s['n']} pairs)")


def main() -> int:
    ap = argparse.ArgumentParser(description="direct placement vs the receive ring")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=6.0)
    ap.add_argument("--block", default="1m", help="receiver's bytes per recv_all call")
    ap.add_argument("--no-link", action="store_true", help="loopback only (no root needed)")
    ap.add_argument("--no-loopback", action="store_true")
    ap.add_argument("--baseline-exe", help="another isthmus-udpperf (e.g. main's build)")
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "udp_place"))
    a = ap.parse_args()
    exe = udpperf_binary(find_prefix())
    if a.baseline_exe:
        MODES["baseline"] = {}
        BASELINE["baseline"] = a.baseline_exe
    out = Path(f"{a.out}-{time.strftime('%Y%m%dT%H%M%S')}.jsonl")
    out.parent.mkdir(parents=True, exist_ok=True)
    records = []
    print(f"# {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    with open(out, "w") as jl:
        creds = Credentials()
        if not a.no_loopback:
            def local(_site, argv, **kw):
                return subprocess.Popen(argv, **kw)

            measure("loopback", local, exe, creds, "127.0.0.1", a.seconds, a.block, 0, a.reps,
                    jl, records)
        if not a.no_link:
            from isthmus.netemu.emulation import Emulation

            with Emulation(sites=2, link="delay=10ms,rate=1gbit", job="buplace") as emu:
                measure("1g-20ms", emu.popen, exe, creds, emu.address("B"), a.seconds * 2,
                        a.block, int(2 * 1e9 / 8 * 0.020), a.reps, jl, records)
        creds.close()
    print(f"# {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    for where in dict.fromkeys(r["where"] for r in records):
        report(records, where)
    print(f"\nrecords: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
