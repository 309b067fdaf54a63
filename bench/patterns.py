#!/usr/bin/env python3
# bench/patterns.py: the naive version of each pattern example against the pattern
# (issue 32 §2), across three emulated sites with the links of the seed's DD_Filtre2 run
# (seed 000, table 5.5: Atlantis-Cacau 62.5-66.4 ms, 304-373 kB/s; Cacau-Cluster150
# 27.3-29.3 ms, 546-808 kB/s; Cluster150-Atlantis 83-84 ms, 71-127 kB/s; here A, B, C with
# the middle of each range, one-way delay) and the ranks split unevenly, the middle site
# largest as in the seed (default 1,2,1). Versions alternate within each repetition
# (naive, pattern, naive, ...), so each ratio compares runs a few seconds apart; the time
# is what the program prints (aggregate: rank 0's per step between two barriers;
# remote_read: the slowest rank's per read), start-up excluded.
#
# --matrix picks the links (one table constant per matrix below):
#   seed    SEED_LINKS, the seed's measured 2000s links above (the default).
#   modern  MODERN_LINKS, today's links between three clusters (issue 32 §2): 10-50 ms one
#           way, 1-10 Gbit/s scaled by 1/20 to 50-500 Mbit/s, because this machine's
#           emulator plus gateways carry about 1 Gbit/s in all (BENCHMARKS.md "Link
#           emulator": 1.64 Gbit/s emulator capacity at MTU 1500, isthmus streaming
#           ~120 MB/s through it), so the emulated rates, not the CPU, stay the limit. The
#           same shape as the seed: A-C longest and slowest, B-C shortest and fastest.
# Reports median, min, max and spread per version, the per-repetition ratio naive/pattern
# (median and range), and the load average before each run. Needs root (network
# namespaces, the link emulator).
#
# decompose (only with --only): the even split ("naive") against the speed-weighted one,
# timed by the wall clock (examples/decompose.c ... wall), on sites made really slower
# with --site-cpu (isthmus run --site-cpu: at most that many cores for a site's ranks
# together). --slow gives each site's work per cell (the same on every site: the speed
# difference is the limit's) and --cells the domain. The value is the whole loop's ms per
# step, rebalances (cells moved across the links) included; each record also keeps the
# last half's ms per step, and the cells and measured speed of each site at the end.
#
#   python3 bench/patterns.py [--matrix seed|modern] [--reps 5] [--ranks 1,2,1]
#                             [--only aggregate,remote_read,decompose] [--site-cpu 1,0.5,0.25]
#                             [--slow 1,1,1] [--cells 100000]
#
# bench/patterns_sweep.py reuses build() and run_once() to vary delay and rate.
# Writes JSON lines to bench/results/patterns/<time>.jsonl (ignored by git) and prints a
# Markdown table.
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))
sys.path.insert(0, str(REPO / "bench"))

from isthmus.paths import find_prefix  # noqa: E402
from udp_transport import summary  # noqa: E402  (median, min, max, spread)

SEED_LINKS = """# seed 000, table 5.5 (DD_Filtre2): middle of each measured range
sites = 3
default = "rate=1gbit"
[links]
"A-B" = "delay=64ms,rate=340kB/s"
"B-C" = "delay=28ms,rate=680kB/s"
"A-C" = "delay=84ms,rate=100kB/s"
"""

MODERN_LINKS = """# issue 32 §2 modern links: 10-50 ms one way, 1-10 Gbit/s scaled by 1/20
sites = 3
default = "rate=1gbit"
[links]
"A-B" = "delay=30ms,rate=200mbit"
"B-C" = "delay=10ms,rate=500mbit"
"A-C" = "delay=50ms,rate=50mbit"
"""

MATRICES = {"seed": SEED_LINKS, "modern": MODERN_LINKS}

# decompose's steps and rebalance interval (the example's defaults); SLOW and CELLS are
# options, CLOCK is wall
DECOMPOSE_STEPS, DECOMPOSE_EVERY = 40, 10
DECOMPOSE_SITE = re.compile(r"decompose: site (\d+): slow \d+, (\d+) ranks, (\d+) cells, "
                            r"([\d.]+) Mcell/s")
DECOMPOSE_HALF = re.compile(r"last half ([\d.]+) ms per step")

# example -> (naive args, pattern args, regex of the time rank 0 prints, unit); decompose's
# "{slow}" and "{cells}" come from the options
CASES = {
    "aggregate": (["naive", 3, 200, 16], ["agg", 3, 200, 16, 8192],
                  re.compile(r"aggregate: \w+ .*: [\d.]+ s, ([\d.]+) ms per step"), "ms per step"),
    "remote_read": (["naive", 4, 8, 256, 512], ["cache", 4, 8, 256, 512, 7],
                    re.compile(r"remote_read: \w+ .*, ([\d.]+) us per read"), "us per read"),
    "decompose": (["even", "{slow}", "{cells}", DECOMPOSE_STEPS, DECOMPOSE_EVERY, "wall"],
                  ["weighted", "{slow}", "{cells}", DECOMPOSE_STEPS, DECOMPOSE_EVERY, "wall"],
                  re.compile(r"decompose: \w+ .*: [\d.]+ s, ([\d.]+) ms per step"), "ms per step"),
}
DEFAULT_ONLY = "aggregate,remote_read"



def build(prefix, name: str, out: Path) -> Path:
    exe = out / name
    subprocess.run([str(prefix.cc), "-O2", "-o", str(exe), str(REPO / "examples" / f"{name}.c"),
                    "-listhmus-patterns", "-lm"], check=True)
    return exe


def run_output(exe: Path, args, ranks: str, matrix: Path, pattern: re.Pattern,
               site_cpu: str | None = None) -> tuple[float, str]:
    """One run: the time it printed, and its output."""
    n = sum(int(x) for x in ranks.split(","))
    cmd = [sys.executable, "-m", "isthmus", "run", "-n", str(n), "--ranks-per-site", ranks,
           "--wan-matrix", str(matrix), "--timeout", "600",
           *(["--site-cpu", site_cpu] if site_cpu else []), "--", str(exe),
           *[str(a) for a in args]]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=660)
    m = pattern.search(r.stdout)
    if r.returncode != 0 or not m or ": ok" not in r.stdout:
        raise SystemExit(f"patterns bench: {exe.name} {' '.join(map(str, args))} failed "
                         f"(exit {r.returncode}):\n{(r.stdout + r.stderr)[-3000:]}")
    return float(m.group(1)), r.stdout


def run_once(exe: Path, args, ranks: str, matrix: Path, pattern: re.Pattern) -> float:
    return run_output(exe, args, ranks, matrix, pattern)[0]


def decompose_details(out: str) -> dict:
    """The last half's ms per step and each site's ranks, cells and speed at the end."""
    half = DECOMPOSE_HALF.search(out)
    return {"last_half": float(half.group(1)) if half else None,
            "sites": [{"ranks": int(r), "cells": int(c), "mcells_s": float(v)}
                      for _, r, c, v in DECOMPOSE_SITE.findall(out)]}


def case_args(args, slow: str, cells: int) -> list:
    return [slow if x == "{slow}" else cells if x == "{cells}" else x for x in args]


def main() -> int:
    ap = argparse.ArgumentParser(description="naive vs pattern over three emulated sites")
    ap.add_argument("--matrix", choices=sorted(MATRICES), default="seed",
                    help="which links between the three sites (see the header)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--ranks", default="1,2,1", help="ranks per site A,B,C")
    ap.add_argument("--only", default=DEFAULT_ONLY, help=f"of {', '.join(CASES)}")
    ap.add_argument("--site-cpu", default=None,
                    help="isthmus run --site-cpu: at most this many cores per site, e.g. 1,0.5,0.25")
    ap.add_argument("--slow", default="1,1,1", help="decompose: updates per cell, per site")
    ap.add_argument("--cells", type=int, default=100000, help="decompose: cells of the domain")
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "patterns"))
    a = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("patterns bench: needs root (network namespaces for the emulated links)")
    if len(a.ranks.split(",")) != 3:
        raise SystemExit(f"patterns bench: --ranks {a.ranks}: give three sites (A,B,C)")
    names = [x for x in a.only.split(",") if x]
    unknown = [x for x in names if x not in CASES]
    if unknown:
        raise SystemExit(f"patterns bench: unknown example {unknown[0]}; known: {', '.join(CASES)}")
    prefix = find_prefix()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    log = out / time.strftime("%Y%m%d-%H%M%S.jsonl")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        matrix = Path(tmp) / "links.toml"
        matrix.write_text(MATRICES[a.matrix])
        for name in names:
            naive_args, pat_args, pattern, unit = CASES[name]
            exe = build(prefix, name, Path(tmp))
            got = {"naive": [], "pattern": []}
            for rep in range(a.reps):
                for version, args in (("naive", naive_args), ("pattern", pat_args)):
                    args = case_args(args, a.slow, a.cells)
                    load = os.getloadavg()[0]
                    t, out = run_output(exe, args, a.ranks, matrix, pattern, a.site_cpu)
                    got[version].append(t)
                    rec = {"example": name, "version": version, "rep": rep, "value": t,
                           "unit": unit, "ranks": a.ranks, "load1": load, "args": args,
                           "matrix": a.matrix, "site_cpu": a.site_cpu}
                    if name == "decompose":
                        rec.update(decompose_details(out))
                    with log.open("a") as f:
                        f.write(json.dumps(rec) + "\n")
                    print(json.dumps(rec), flush=True)
            ratios = [n / p for n, p in zip(got["naive"], got["pattern"])]
            rows.append((name, unit, summary(got["naive"]), summary(got["pattern"]),
                         summary(ratios)))
    print(f"\nmatrix {a.matrix}, ranks per site {a.ranks}, site CPU limits {a.site_cpu or 'none'}, "
          f"{a.reps} repetitions, raw: {log}\n")
    print("| example | unit | naive median (min-max) | pattern median (min-max) | "
          "naive/pattern median (min-max) |")
    print("|---|---|---|---|---|")
    for name, unit, n, p, r in rows:
        print(f"| {name} | {unit} | {n['median']:.1f} ({n['min']:.1f}-{n['max']:.1f}) | "
              f"{p['median']:.1f} ({p['min']:.1f}-{p['max']:.1f}) | "
              f"{r['median']:.2f} ({r['min']:.2f}-{r['max']:.2f}) |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
