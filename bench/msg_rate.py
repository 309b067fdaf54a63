#!/usr/bin/env python3
# bench/msg_rate.py: the cross-site message rate of small sends (bench/msg_rate.c) on one
# emulated link, this build against a baseline build in the same repetition (alternating
# which goes first), with each vendor. Per job: the fastest 8-byte round trip (rtt) and the
# median of its bursts (N Isends of SIZE bytes, then a zero-byte reply once all arrived);
# per repetition the ratio to the baseline. Needs root (network namespaces).
#
#   python3 bench/msg_rate.py --baseline PREFIX [--link delay=10ms,rate=100mbit]
#          [--n 1000] [--size 8] [--reps 5] [--mpi openmpi,mpich]
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def build(prefix: Path, out: Path) -> Path:
    subprocess.run([str(prefix / "bin" / "isthmus-cc"), "-O2", "-o", str(out),
                    str(REPO / "bench" / "msg_rate.c")], check=True)
    return out


def job(prefix: Path, exe: Path, vendor: str, link: str, n: int, size: int) -> dict:
    env = dict(os.environ, ISTHMUS_PREFIX=str(prefix))
    cmd = [sys.executable, "-m", "isthmus", "run", "-n", "2", "--sites", "2", "--mpi", vendor,
           "--wan", link, "--timeout", "300", "--", str(exe), str(n), str(size), "20"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=400, env=env,
                       cwd=REPO / "python")
    if r.returncode:
        raise RuntimeError(f"{' '.join(cmd)} exited {r.returncode}:\n{(r.stdout + r.stderr)[-2000:]}")
    rtt = [float(l.split()[1]) for l in r.stdout.splitlines() if l.startswith("rtt_ms")]
    burst = [float(l.split()[1]) for l in r.stdout.splitlines() if l.startswith("burst_ms")]
    return {"rtt": rtt[0], "burst": statistics.median(burst)}


def med(xs: list[float]) -> str:
    return f"{statistics.median(xs):.3f} ({min(xs):.3f}-{max(xs):.3f})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--baseline", required=True, type=Path, help="the other build's prefix")
    ap.add_argument("--link", default="delay=10ms,rate=100mbit")
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--size", type=int, default=8)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--mpi", default="openmpi,mpich")
    a = ap.parse_args()
    this = Path(os.environ.get("ISTHMUS_PREFIX", REPO / "_install"))
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as t:
        exes = {"this": build(this, Path(t) / "this"), "base": build(a.baseline, Path(t) / "base")}
        for vendor in a.mpi.split(","):
            rows = {"this": [], "base": []}
            ratio = []
            for rep in range(a.reps):
                order = ("this", "base") if rep % 2 == 0 else ("base", "this")
                got = {}
                for which in order:
                    prefix = this if which == "this" else a.baseline
                    got[which] = job(prefix, exes[which], vendor, a.link, a.n, a.size)
                    rows[which].append(got[which])
                ratio.append(got["this"]["burst"] / got["base"]["burst"])
                print(f"{vendor} rep {rep}: baseline {got['base']['burst']:.2f} ms, this "
                      f"{got['this']['burst']:.2f} ms (rtt {got['this']['rtt']:.2f} ms)", flush=True)
            for which in ("base", "this"):
                b = [x["burst"] for x in rows[which]]
                per = [x["burst"] / x["rtt"] for x in rows[which]]
                print(f"{vendor} {which}: {a.n} x {a.size} B in {med(b)} ms, {med(per)} round trips, "
                      f"rtt {med([x['rtt'] for x in rows[which]])} ms")
            print(f"{vendor} this / baseline: {med(ratio)}")
    print(f"link {a.link}; load {load0:.2f} before, {os.getloadavg()[0]:.2f} after")
    return 0


if __name__ == "__main__":
    sys.exit(main())
