#!/usr/bin/env python3
# bench/nbc_overlap.py: nonblocking allreduces outstanding at once on one communicator
# (bench/nbc_overlap.c) across two emulated sites, for each vendor: the "before" of the
# redesign that lets collectives on one communicator overlap (today they run one at a time
# in start order, docs/design.md "Nonblocking collectives as coroutines").
#
# One job per vendor: 4 ranks on 2 sites (2 each) joined by the link emulator (default
# delay=10ms,rate=100mbit), the program built with isthmus-cc (`isthmus run` refuses a
# program linked to a vendor's libmpi). Each case's time is the slowest rank's, best and
# median of --reps repetitions after one untimed one (the program's header). Prints a
# Markdown table per vendor:
#   best / delay, median / delay   against the link's one-way delay
#   / one                          the case's best against `one`'s best, same job
#   / bound                        eight_128k's best against the least time its bytes need
#                                  on this link (bound_ms below)
# and a second table without the barrier's skew: the sites leave MPI_Barrier up to one
# delay apart (which one first, and by how much, depends on the calls before), and the
# slowest rank's time holds that skew. All ranks share one clock here, so the program also
# records the skew and the time from the last rank's start to the last rank's end.
#
#   .venv/bin/python bench/nbc_overlap.py [--reps 5] [--vendors openmpi,mpich]
#                                         [--wan delay=10ms,rate=100mbit] [--json OUT.jsonl]
#                                         [--sites 1] [--baseline PREFIX --rounds 3]
#                                         [--inter]
#
# --inter runs the allreduces on an intercommunicator of the two halves (one group per
# site: two coupled codes; each rank gets the other group's sum), the barrier on world.
# --sites 1 runs the 4 ranks on one site (no link: the CPU is the bottleneck, and the
# delay columns say nothing). --baseline PREFIX runs every job also with another isthmus
# install (an older build), alternating with the current one --rounds times, and prints
# per case the median over the rounds of each build's best and their ratio (current /
# baseline), measured in the same run.
#
# Needs root (network namespaces, the link emulator). --json appends one JSON line per case
# and vendor (the program's record plus vendor, link, commit, load average) to OUT.jsonl.
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))

from isthmus.netemu.spec import LinkSpec, parse_link_spec  # noqa: E402
from isthmus.paths import find_prefix  # noqa: E402

CASES = ("one", "eight", "eight_128k", "blocking")
NP, SITES = 4, 2


def bound_ms(nbytes: int, link: LinkSpec) -> float | None:
    """The least time an allreduce of nbytes per rank (all outstanding allreduces together)
    can take between two sites on this link: one_way_delay + nbytes * 8 / rate.

    The result at site A depends on every element of site B's contribution (and the other
    way round), and B's nbytes of partial sums do not compress, so at least nbytes cross
    the link B->A: the last of them leaves B no earlier than nbytes * 8 / rate after the
    first, and arrives one delay later. Both directions carry their nbytes at the same time
    (the emulated links are full duplex), so the two sites' transfers do not add. With
    eight_128k: 8 x 128 KiB = 1 MiB, 10 ms + 8388608 * 8 / 100e6 s = 10 + 83.9 = 93.9 ms.
    It is a bound, not a target: it leaves out the TCP/IP headers the emulator's rate also
    carries (1500-byte packets hold 1448 bytes of TCP payload: 96.9 ms), the gateways'
    frame headers and the reduction within each site. None without a rate."""
    if not link.rate:
        return None
    return (link.delay + nbytes / link.rate) * 1e3


def build(prefix, out: Path) -> Path:
    exe = out / f"nbc_overlap-{abs(hash(str(prefix.root))) % 10**8}"
    subprocess.run([str(prefix.cc), "-O2", "-Wall", "-Wextra", "-o", str(exe),
                    str(REPO / "bench" / "nbc_overlap.c")], check=True)
    return exe


def run_job(exe: Path, vendor: str, wan: str, reps: int, timeout: int, sites: int = SITES,
            prefix=None, inter: bool = False) -> dict[str, dict]:
    """One job across the sites; its records by case. Stops the driver on a failed job
    or a missing case (the program exits non-zero on a wrong sum)."""
    cmd = [sys.executable, "-m", "isthmus", "run", "-n", str(NP), "--sites", str(sites),
           "--mpi", vendor] + (["--wan", wan] if sites > 1 else []) + [
           "--timeout", str(timeout), "--", str(exe), str(reps)] + (["1", "inter"] if inter
                                                                       else [])
    env = dict(os.environ, ISTHMUS_PREFIX=str(prefix.root)) if prefix else None
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout + 60, env=env)
    recs = {}
    for line in r.stdout.splitlines():
        if line.startswith("{"):
            rec = json.loads(line)
            recs[rec["case"]] = rec
    missing = [c for c in CASES if c not in recs]
    if r.returncode or missing:
        raise SystemExit(f"nbc_overlap bench: {' '.join(cmd)} exited {r.returncode}"
                         f"{', no result for ' + ', '.join(missing) if missing else ''}:\n"
                         f"{(r.stdout + r.stderr)[-3000:]}")
    return recs


def ratio(x: float, base: float | None) -> str:
    return f"{x / base:.2f}" if base else "-"


def table(vendor: str, recs: dict[str, dict], link: LinkSpec) -> None:
    delay = link.delay * 1e3
    one = recs["one"]["best_ms"]
    print(f"\n{vendor}, {NP} ranks on {SITES} sites, link `{link.text}`, "
          f"{recs['one']['reps']} repetitions (slowest rank's time)\n")
    print("| case | bytes x n | best ms | median ms | min-max ms | spread | best / delay "
          "| median / delay | / one | / bound |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for case in CASES:
        r = recs[case]
        xs = r["all_ms"]
        spread = (max(xs) - min(xs)) / r["median_ms"] if r["median_ms"] else 0.0
        bound = bound_ms(r["bytes"] * r["n"], link) if case == "eight_128k" else None
        print(f"| {case} | {r['bytes']} x {r['n']} | {r['best_ms']:.1f} | {r['median_ms']:.1f} "
              f"| {min(xs):.1f}-{max(xs):.1f} | {spread:.0%} | {ratio(r['best_ms'], delay)} "
              f"| {ratio(r['median_ms'], delay)} "
              f"| {ratio(r['best_ms'], one) if case != 'one' else '-'} "
              f"| {ratio(r['best_ms'], bound)}{f' (bound {bound:.1f} ms)' if bound else ''} |")
    if recs["one"]["skew_all_ms"] is None:
        print("\n(the ranks do not share one clock: no skew-free figures)")
        return
    print("\nThe same repetitions from the last rank's start to the last rank's end, and the "
          "barrier's skew (last start - first start)\n")
    print("| case | from last start, best ms | median ms | best / delay | / one "
          "| / bound | skew ms, median (min-max) |")
    print("|---|---|---|---|---|---|---|")
    one = recs["one"]["from_last_start_best_ms"]
    for case in CASES:
        r = recs[case]
        best, sk = r["from_last_start_best_ms"], r["skew_all_ms"]
        bound = bound_ms(r["bytes"] * r["n"], link) if case == "eight_128k" else None
        print(f"| {case} | {best:.1f} | {r['from_last_start_median_ms']:.1f} "
              f"| {ratio(best, delay)} | {ratio(best, one) if case != 'one' else '-'} "
              f"| {ratio(best, bound)} "
              f"| {statistics.median(sk):.1f} ({min(sk):.1f}-{max(sk):.1f}) |")


def compare(vendor: str, cur: list[dict], base: list[dict], sites: int) -> None:
    """The A/B table: per case the median over the rounds of each build's best, from the
    last rank's start where every rank shares one clock (the barrier's skew, which depends
    on how the calls before it ended, left out), else the slowest rank's."""
    key = ("from_last_start_best_ms" if all(r[c]["from_last_start_best_ms"] is not None
                                             for r in cur + base for c in CASES)
           else "best_ms")
    what = "last rank's start to last end" if key != "best_ms" else "slowest rank"
    print(f"\n{vendor}, {NP} ranks on {sites} site(s), {len(cur)} rounds alternating the "
          f"builds (median over rounds of each job's best, {what})\n")
    print("| case | current ms | baseline ms | current / baseline | per-round ratios |")
    print("|---|---|---|---|---|")
    for case in CASES:
        a = [r[case][key] for r in cur]
        b = [r[case][key] for r in base]
        rs = [x / y for x, y in zip(a, b) if y]
        print(f"| {case} | {statistics.median(a):.2f} | {statistics.median(b):.2f} "
              f"| {statistics.median(a) / statistics.median(b):.2f} "
              f"| {', '.join(f'{x:.2f}' for x in rs)} |")


def commit() -> str:
    r = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                       capture_output=True, text=True)
    return r.stdout.strip() or "unknown"


def main() -> int:
    ap = argparse.ArgumentParser(description="overlapping nonblocking allreduces on one "
                                             "communicator across two emulated sites")
    ap.add_argument("--reps", type=int, default=5, help="timed repetitions per case")
    ap.add_argument("--vendors", default="openmpi,mpich")
    ap.add_argument("--wan", default="delay=10ms,rate=100mbit", help="the link between sites")
    ap.add_argument("--timeout", type=int, default=120, help="seconds per job (isthmus run)")
    ap.add_argument("--json", metavar="OUT", help="append the records as JSON lines to OUT")
    ap.add_argument("--sites", type=int, default=SITES, choices=(1, 2),
                    help="1: all ranks on one site, no link")
    ap.add_argument("--baseline", metavar="PREFIX",
                    help="another isthmus install to compare with, alternating")
    ap.add_argument("--rounds", type=int, default=3, help="with --baseline: jobs per build")
    ap.add_argument("--inter", action="store_true",
                    help="on an intercommunicator of the two halves (one group per site)")
    a = ap.parse_args()
    vendors = [v for v in a.vendors.split(",") if v]
    if a.reps < 1 or not vendors or any(v not in ("openmpi", "mpich") for v in vendors):
        raise SystemExit("nbc_overlap bench: --reps >= 1 and --vendors from openmpi,mpich")
    if os.geteuid() != 0:
        raise SystemExit("nbc_overlap bench: needs root (network namespaces for the link)")
    link = parse_link_spec(a.wan)
    prefix = find_prefix()
    rev = commit()
    results = {}
    if a.baseline:
        if a.rounds < 1:
            raise SystemExit("nbc_overlap bench: --rounds >= 1")
        base = find_prefix({"ISTHMUS_PREFIX": a.baseline})
        with tempfile.TemporaryDirectory() as tmp:
            exes = {"current": (build(prefix, Path(tmp)), prefix),
                    "baseline": (build(base, Path(tmp)), base)}
            for vendor in vendors:
                got = {"current": [], "baseline": []}
                for i in range(a.rounds):
                    for which, (exe, pre) in exes.items():
                        load = os.getloadavg()[0]
                        print(f"nbc_overlap: {vendor}: round {i + 1}/{a.rounds}, {which} "
                              f"(load {load:.2f}) ...", file=sys.stderr, flush=True)
                        got[which].append(run_job(exe, vendor, a.wan, a.reps, a.timeout,
                                                  a.sites, pre, a.inter))
                compare(vendor, got["current"], got["baseline"], a.sites)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        exe = build(prefix, Path(tmp))
        for vendor in vendors:
            load = os.getloadavg()
            print(f"nbc_overlap: {vendor}: {NP} ranks, {SITES} sites, --wan {a.wan}, "
                  f"{a.reps} reps (load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}) ...",
                  file=sys.stderr, flush=True)
            t0 = time.monotonic()
            results[vendor] = run_job(exe, vendor, a.wan, a.reps, a.timeout, a.sites,
                                      inter=a.inter)
            print(f"nbc_overlap: {vendor}: done in {time.monotonic() - t0:.1f} s: " +
                  ", ".join(f"{c} {results[vendor][c]['best_ms']:.1f} ms" for c in CASES),
                  file=sys.stderr, flush=True)
            if a.json:
                with open(a.json, "a") as f:
                    for case in CASES:
                        f.write(json.dumps({"vendor": vendor, "wan": a.wan, "commit": rev,
                                            "load1": load[0], **results[vendor][case]}) + "\n")
    for vendor, recs in results.items():
        table(vendor, recs, link)
    return 0


if __name__ == "__main__":
    sys.exit(main())
