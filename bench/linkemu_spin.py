#!/usr/bin/env python3
# bench/linkemu_spin.py: what the link emulator's polling before each release costs the
# emulated job. isthmus streams 64 MiB messages across 2 emulated sites (bench/wan_stream.c,
# the issue-4 bandwidth figure) with the emulator in each spin mode in turn, interleaved
# and rotated every repetition; per run: the job's MB/s, the emulator's CPU (of one core),
# its release lateness and the time it spent polling.
#
#   python3 bench/linkemu_spin.py [--reps 5] [--link delay=10ms,rate=1gbit,loss=0.01%,mtu=9000]
#                                 [--modes fixed:50,adaptive:50,fixed:0]
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))
sys.path.insert(0, str(REPO / "bench"))

from wan_transport import MSG, build, isthmus_job, parse_value  # noqa: E402
from isthmus.launch.transport import link_hints  # noqa: E402
from isthmus.netemu.emulation import Emulation  # noqa: E402
from isthmus.netemu.matrix import uniform  # noqa: E402
from isthmus.netemu.spec import parse_link_spec  # noqa: E402
from isthmus.paths import find_prefix  # noqa: E402


def proc_cpu_s(pid: int) -> float:
    f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--link", default="delay=10ms,rate=1gbit,loss=0.01%,mtu=9000")
    ap.add_argument("--modes", default="fixed:50,adaptive:50,fixed:0",
                    help="comma-separated MODE:SPIN_US (MODE: adaptive or fixed)")
    ap.add_argument("--count", type=int, default=4, help="64 MiB messages per run")
    ap.add_argument("--out", default=str(REPO / "bench" / "results"))
    a = ap.parse_args()
    modes = []
    for m in a.modes.split(","):
        mode, _, us = m.partition(":")
        if mode not in ("adaptive", "fixed") or not us.isdigit():
            ap.error(f"--modes: {m!r} is not MODE:SPIN_US with MODE adaptive or fixed")
        modes.append((mode, int(us)))
    prefix = find_prefix()
    matrix = uniform(2, parse_link_spec(a.link))
    hints = link_hints(matrix)
    exe, _ = build(prefix, Path(tempfile.mkdtemp(prefix="isthmus-spin-")))
    rows, t0 = [], time.time()
    for rep in range(a.reps):
        k = rep % len(modes)
        for mode, us in modes[k:] + modes[:k]:
            with Emulation(matrix=matrix, spin_us=us, spin_mode=mode, job=f"spin{rep}{mode[0]}{us}") as emu:
                pid, load = emu._proc.pid, os.getloadavg()[0]
                c0, w0 = proc_cpu_s(pid), time.time()
                out = isthmus_job(emu, prefix, exe, ["bw", str(MSG), str(a.count), "1"], hints)
                c1, w1 = proc_cpu_s(pid), time.time()
            st = emu.final_stats or {}
            row = {"rep": rep, "mode": f"{mode}:{us}", "MBps": parse_value(out, "bw"),
                   "emu_cpu": (c1 - c0) / (w1 - w0), "late_mean_us": st.get("late_mean_ns", 0) / 1e3,
                   "wake_late_mean_us": st.get("wake_late_mean_ns", 0) / 1e3,
                   "lead_us": st.get("lead_ns", 0) / 1e3, "polled_s": st.get("spun_ns", 0) / 1e9,
                   "load1": load}
            rows.append(row)
            print(json.dumps(row), flush=True)
    out = Path(a.out) / f"linkemu-spin-{time.strftime('%Y%m%dT%H%M%S')}.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    line = parse_link_spec(a.link).rate / 1e6  # MB/s
    print(f"\nlink {a.link}, {a.reps} repetitions, {(time.time() - t0) / 60:.1f} min, 1-min load "
          f"{min(r['load1'] for r in rows):.1f}-{max(r['load1'] for r in rows):.1f}; raw: {out}\n")
    print("| emulator spin | MB/s median (min-max) | share of link | ratio to fixed:50, same repetition: median (min-max) | emulator CPU | release late, mean us | lead us |")
    print("|---|---|---:|---|---:|---:|---:|")
    base = {r["rep"]: r["MBps"] for r in rows if r["mode"] == "fixed:50"}
    for mode, us in modes:
        rs = [r for r in rows if r["mode"] == f"{mode}:{us}"]
        mb = [r["MBps"] for r in rs]
        ratio = [r["MBps"] / base[r["rep"]] for r in rs if r["rep"] in base]
        rtxt = f"{statistics.median(ratio):.2f} ({min(ratio):.2f}-{max(ratio):.2f})" if ratio else "-"
        print(f"| {mode}:{us} | {statistics.median(mb):.1f} ({min(mb):.1f}-{max(mb):.1f}) | "
              f"{statistics.median(mb) / line:.2f} | {rtxt} | {statistics.median(r['emu_cpu'] for r in rs):.2f} | "
              f"{statistics.median(r['late_mean_us'] for r in rs):.1f} | {statistics.median(r['lead_us'] for r in rs):.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
