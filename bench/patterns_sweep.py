#!/usr/bin/env python3
# bench/patterns_sweep.py: time per step of a pattern example (naive and pattern) against
# the link's one-way delay at a fixed rate, and against its rate at a fixed delay (issue 32
# §2, the plots). The three sites get the same link on every pair, so one number says what
# the link is; ranks are split unevenly as in bench/patterns.py (default 1,2,1). Versions
# alternate within each point (naive, pattern), the same programs and times as patterns.py.
#
#   python3 bench/patterns_sweep.py [--example remote_read] [--reps 1]
#       [--delays 5,10,25,50] [--rate 200mbit] [--rates 1mbit,10mbit,100mbit] [--delay 25]
#   python3 bench/patterns_sweep.py --plot-only RAW.jsonl     # redraw from saved results
#
# Writes JSON lines to bench/results/patterns_sweep/<time>.jsonl (ignored by git) and two
# PNGs, <example>-latency.png and <example>-bandwidth.png, into bench/notebook/img/
# (committed; BENCHMARKS.md links them). Needs root for the runs, not for --plot-only.
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

VERSIONS = ("naive", "pattern")


def uniform_matrix(delay_ms: float, rate: str) -> str:
    """A three-site matrix with the same link on every pair."""
    link = f"delay={delay_ms:g}ms,rate={rate}"
    return (f"# patterns_sweep: every pair {link}\nsites = 3\ndefault = \"{link}\"\n[links]\n"
            + "".join(f"\"{p}\" = \"{link}\"\n" for p in ("A-B", "B-C", "A-C")))


def rate_mbit(rate: str) -> float:
    """Mbit/s of a link-spec rate (kbit, mbit, gbit, kB/s, MB/s), for the plot's axis."""
    m = re.fullmatch(r"([\d.]+)(kbit|mbit|gbit|kB/s|MB/s)", rate)
    if not m:
        raise ValueError(f"patterns sweep: rate '{rate}': give e.g. 10mbit, 1gbit, 340kB/s")
    scale = {"kbit": 1e-3, "mbit": 1.0, "gbit": 1e3, "kB/s": 8e-3, "MB/s": 8.0}[m.group(2)]
    return float(m.group(1)) * scale


def points(delays, rate: str, rates, delay: float):
    """The sweep: (axis, delay in ms, rate) for the delay axis, then the rate axis."""
    return ([("latency", float(d), rate) for d in delays]
            + [("bandwidth", float(delay), r) for r in rates])


def plot(records, out_dir: Path, example: str) -> list[Path]:
    """Draws <example>-latency.png and <example>-bandwidth.png from sweep records: median
    over repetitions per point, one curve per version, min-max as error bars."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for axis, xkey, xlabel in (("latency", "delay_ms", "one-way delay (ms)"),
                               ("bandwidth", "rate_mbit", "link rate (Mbit/s)")):
        recs = [r for r in records if r["axis"] == axis and r["example"] == example]
        if not recs:
            continue
        fixed = {r["rate"] for r in recs} if axis == "latency" else {r["delay_ms"] for r in recs}
        fixed_txt = (f"rate {', '.join(sorted(fixed))}" if axis == "latency"
                     else f"delay {', '.join(f'{d:g}' for d in sorted(fixed))} ms")
        unit = recs[0]["unit"]
        scale = 1.0
        if unit.startswith("us "):  # remote_read prints microseconds; reads cost ms here
            unit, scale = "ms " + unit[3:], 1e-3
        fig, ax = plt.subplots(figsize=(5.5, 3.8))
        for version, marker in zip(VERSIONS, ("o", "s")):
            xs = sorted({r[xkey] for r in recs if r["version"] == version})
            if not xs:
                continue
            vals = [[r["value"] * scale for r in recs if r["version"] == version and r[xkey] == x]
                    for x in xs]
            med = [statistics.median(v) for v in vals]
            err = [[m - min(v) for m, v in zip(med, vals)], [max(v) - m for m, v in zip(med, vals)]]
            ax.errorbar(xs, med, yerr=err, marker=marker, capsize=3, label=version)
        if axis == "bandwidth":
            ax.set_xscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(unit)
        ax.set_ylim(bottom=0)
        ax.set_title(f"{example}, 3 sites, ranks {recs[0]['ranks']}, {fixed_txt}", fontsize=9)
        ax.grid(True, alpha=0.3)
        ax.legend()
        fig.tight_layout()
        path = out_dir / f"{example}-{axis}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written


def run_sweep(a, log: Path) -> list[dict]:
    from isthmus.paths import find_prefix
    import patterns

    naive_args, pat_args, pattern, unit = patterns.CASES[a.example]
    records = []
    with tempfile.TemporaryDirectory() as tmp:
        exe = patterns.build(find_prefix(), a.example, Path(tmp))
        matrix = Path(tmp) / "links.toml"
        for axis, delay, rate in points(a.delays.split(","), a.rate, a.rates.split(","), a.delay):
            matrix.write_text(uniform_matrix(delay, rate))
            for rep in range(a.reps):
                for version, args in zip(VERSIONS, (naive_args, pat_args)):
                    load = os.getloadavg()[0]
                    t = patterns.run_once(exe, args, a.ranks, matrix, pattern)
                    rec = {"example": a.example, "axis": axis, "delay_ms": delay, "rate": rate,
                           "rate_mbit": rate_mbit(rate), "version": version, "rep": rep,
                           "value": t, "unit": unit, "ranks": a.ranks, "load1": load,
                           "args": args}
                    records.append(rec)
                    with log.open("a") as f:
                        f.write(json.dumps(rec) + "\n")
                    print(json.dumps(rec), flush=True)
    return records


def main() -> int:
    ap = argparse.ArgumentParser(description="pattern examples against link delay and rate")
    ap.add_argument("--example", default="remote_read", help="aggregate or remote_read")
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--ranks", default="1,2,1", help="ranks per site A,B,C")
    ap.add_argument("--delays", default="5,10,25,50", help="one-way delays (ms), rate fixed")
    ap.add_argument("--rate", default="200mbit", help="the rate while the delay varies")
    ap.add_argument("--rates", default="1mbit,10mbit,100mbit", help="rates, delay fixed")
    ap.add_argument("--delay", type=float, default=25, help="the delay (ms) while the rate varies")
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "patterns_sweep"))
    ap.add_argument("--img", default=str(REPO / "bench" / "notebook" / "img"))
    ap.add_argument("--plot-only", metavar="RAW.jsonl", help="draw the plots from saved results")
    a = ap.parse_args()
    for r in a.rates.split(",") + [a.rate]:
        rate_mbit(r)
    if a.plot_only:
        records = [json.loads(x) for x in Path(a.plot_only).read_text().splitlines() if x]
    else:
        if os.geteuid() != 0:
            raise SystemExit("patterns sweep: needs root (network namespaces for the links)")
        out = Path(a.out)
        out.mkdir(parents=True, exist_ok=True)
        log = out / time.strftime("%Y%m%d-%H%M%S.jsonl")
        records = run_sweep(a, log)
        print(f"raw: {log}")
    for path in plot(records, Path(a.img), a.example):
        print(f"plot: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
