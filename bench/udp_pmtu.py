#!/usr/bin/env python3
# bench/udp_pmtu.py: what path-MTU discovery (native/src/wan/udp/pmtu.c) buys on a
# jumbo-frame link, measured in one run on an emulated link (default 1 Gbit/s, 20 ms RTT,
# mtu=9000): goodput of isthmus-udpperf with probing on (ceiling 9000) against fixed
# packets of 1500 and of 9000 (--no-pmtud), repetitions interleaved, and how long the
# discovery took (pmtu_raised_us: from connection setup to the last size increase).
# Prints a table and JSON lines (one per transfer). Needs root (network namespaces).
#
#   python3 bench/udp_pmtu.py [--reps 3] [--link delay=10ms,rate=1gbit,mtu=9000]
#                             [--duration 12] [--omit 3]
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))

from isthmus.linkprobe.endpoints import Credentials  # noqa: E402
from isthmus.linkprobe.udpperf import transfer, udpperf_binary  # noqa: E402
from isthmus.netemu.emulation import Emulation  # noqa: E402
from isthmus.paths import find_prefix  # noqa: E402

CONFIGS = {
    "probed (ceiling 9000)": ["--pmtud", "--mtu", "9000"],
    "fixed 1500": ["--mtu", "1500", "--no-pmtud"],
    "fixed 9000": ["--mtu", "9000", "--no-pmtud"],
}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--link", default="delay=10ms,rate=1gbit,mtu=9000")
    ap.add_argument("--duration", type=float, default=12)
    ap.add_argument("--omit", type=float, default=3)
    ap.add_argument("--json", default=None, help="also append the JSON lines to this file")
    a = ap.parse_args()
    exe = udpperf_binary(find_prefix())
    creds = Credentials()
    res: dict[str, list[dict]] = {k: [] for k in CONFIGS}
    loads = [os.getloadavg()[0]]
    out = open(a.json, "a") if a.json else None
    try:
        with Emulation(sites=2, link=a.link, job="benchPmtu", seed=1) as emu:
            for rep in range(a.reps):
                for name, extra in CONFIGS.items():
                    t = transfer(emu, exe, creds, duration=a.duration, omit=a.omit, extra=extra,
                                 timeout=a.duration * 3 + 60)
                    u = t.send.get("udp", {})
                    rec = {"config": name, "rep": rep, "link": a.link, "ok": t.ok,
                           "mbit_s": t.recv.get("mbit_s"), "plpmtu": u.get("plpmtu"),
                           "pmtu_raised_us": u.get("pmtu_raised_us"),
                           "probes": u.get("pmtu_probes_sent"), "load1": os.getloadavg()[0]}
                    res[name].append(rec)
                    loads.append(rec["load1"])
                    line = json.dumps(rec)
                    print(line, flush=True)
                    if out:
                        out.write(line + "\n")
    finally:
        creds.close()
        if out:
            out.close()
    print(f"\nlink {a.link}, {a.reps} reps of {a.duration:g} s (first {a.omit:g} s omitted), "
          f"load average {min(loads):.2f}..{max(loads):.2f}")
    base = statistics.median(r["mbit_s"] for r in res["fixed 1500"] if r["ok"]) \
        if any(r["ok"] for r in res["fixed 1500"]) else None
    print(f"{'config':24} {'median Mbit/s':>14} {'min..max':>16} {'vs 1500':>8} {'plpmtu':>7} "
          f"{'found after':>12}")
    for name, rs in res.items():
        ok = [r for r in rs if r["ok"]]
        if not ok:
            print(f"{name:24} failed: {rs}")
            continue
        g = [r["mbit_s"] for r in ok]
        med = statistics.median(g)
        found = [r["pmtu_raised_us"] for r in ok if r["pmtu_raised_us"] not in (None, -1)]
        fs = f"{statistics.median(found) / 1000:.0f} ms" if found else "-"
        ratio = f"{med / base:.2f}x" if base else "-"
        print(f"{name:24} {med:14.1f} {min(g):7.1f}..{max(g):7.1f} {ratio:>8} "
              f"{ok[-1]['plpmtu']:>7} {fs:>12}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
