#!/usr/bin/env python3
# bench/rma.py: one-sided communication against issue 28's goals, each figure as a ratio to
# a baseline measured in the same run (bench/rma.c prints both).
#
# Across sites: 2 sites x 1 rank in network namespaces joined by the link emulator (default
# delay=10ms,rate=100mbit: 10 ms one way), for each vendor:
#   put_flush / rtt     8-byte MPI_Put + MPI_Win_flush against an 8-byte send/recv round trip
#                       (goal <= 1.05)
#   get_flush / rtt     the same for MPI_Get, target waiting inside MPI (goal <= 1.05)
#   get_busy            one lock/get/unlock while the target computes without calling MPI for
#                       --busy ms (goal: about one round trip; isthmus today waits for the
#                       target's next MPI call, docs/design.md "One-sided")
#   get_busy_flush / rtt  8-byte MPI_Get + MPI_Win_flush in a lock_all epoch while the target
#                       computes for --busy ms (goal <= 1.05; core/rma_progress.c)
#   fence / (rtt/2)     an empty MPI_Win_fence against one one-way trip (goal <= 1.05 plus the
#                       site phases, which are nothing with one rank per site)
#   stream_put / link   32 puts of 1 MiB in one epoch against the link's rate (goal >= 0.95),
#                       and against the same bytes as 32 MPI_Isend in the same run
# On one site (2 ranks, no gateway, the vendor's launcher): isthmus-cc's build against the
# vendor's mpicc build of the same source, runs alternating: 8-byte put+flush latency
# (goal within +100 ns) and the 1 MiB put stream (goal >= 0.97 of the vendor's rate).
# With --puts BASELINE (an install prefix of another isthmus build, e.g. main's), only the
# small-put rate across the sites: 1000 puts of 8 bytes and one flush (bench/rma.c -m puts),
# with this build and with BASELINE's in the same repetition, alternating which goes first,
# each against its own rtt.
#
#   python3 bench/rma.py [--reps 5] [--vendors openmpi,mpich] [--wan delay=10ms,rate=100mbit]
#                        [--skip-wan] [--skip-local] [--puts BASELINE_PREFIX] [--report JSONL]
#
# Needs root for the emulated link. Writes JSON lines to bench/results/rma/<time>.jsonl
# (ignored by git) and prints Markdown tables: the median over repetitions and min-max.
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))

from isthmus.paths import find_prefix  # noqa: E402

LINE = re.compile(r"^rma op=(\w+) size=(\d+) median=([\d.]+) min=([\d.]+) unit=(\S+)", re.M)
MPICC = {"openmpi": "mpicc.openmpi", "mpich": "mpicc.mpich"}
LAUNCH = {"openmpi": ["mpirun.openmpi", "--oversubscribe", "-np", "2"],
          "mpich": ["mpiexec.mpich", "-np", "2"]}


def parse(out: str) -> dict[str, float]:
    got = {m.group(1): float(m.group(3)) for m in LINE.finditer(out)}
    if not got:
        raise RuntimeError(f"no rma lines in the output:\n{out[-2000:]}")
    return got


def rate_of(spec: str) -> float:
    """The link's rate in MB/s from an emulator spec (rate=100mbit, rate=1gbit, 340kB/s)."""
    m = re.search(r"rate=([\d.]+)\s*(gbit|mbit|kbit|GB/s|MB/s|kB/s)", spec)
    if not m:
        raise SystemExit(f"rma bench: --wan {spec!r} names no rate= (needed for the ratio)")
    v, u = float(m.group(1)), m.group(2)
    return v * {"gbit": 125.0, "mbit": 0.125, "kbit": 0.000125, "GB/s": 1000.0, "MB/s": 1.0,
                "kB/s": 0.001}[u]


def run_wan(exe: Path, vendor: str, spec: str, args: list[str],
            prefix: Path | None = None) -> dict[str, float]:
    """One job across 2 emulated sites; prefix: the native build to run it with."""
    env = dict(os.environ, **({"ISTHMUS_PREFIX": str(prefix)} if prefix else {}))
    cmd = [sys.executable, "-m", "isthmus", "run", "-n", "2", "--sites", "2", "--mpi", vendor,
           "--wan", spec, "--timeout", "300", "--", str(exe), *args]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=360, env=env)
    if r.returncode:
        raise RuntimeError(f"{' '.join(cmd)} exited {r.returncode}:\n{(r.stdout + r.stderr)[-3000:]}")
    return parse(r.stdout)


def run_local(exe: Path, vendor: str, isthmus: bool) -> dict[str, float]:
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_mpi_yield_when_idle="0")
    for k in ("ISTHMUS_SITE", "ISTHMUS_SITE_RANKS", "ISTHMUS_MPI"):
        env.pop(k, None)
    if isthmus:
        env["ISTHMUS_MPI"] = vendor
    cmd = [*LAUNCH[vendor], str(exe), "-i", "2000", "-m", "put_flush,stream"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    if r.returncode:
        raise RuntimeError(f"{' '.join(cmd)} exited {r.returncode}:\n{(r.stdout + r.stderr)[-3000:]}")
    return parse(r.stdout)


def med(xs: list[float], fmt: str = ".3f") -> str:
    return f"{statistics.median(xs):{fmt}} ({min(xs):{fmt}}-{max(xs):{fmt}})"


def busy_flush(w: list[dict]) -> str:
    """get_busy_flush / rtt, or '-' for records from before that mode existed."""
    xs = [g["get_busy_flush"] / g["rtt"] for g in w if "get_busy_flush" in g]
    return med(xs) if xs else "-"


def tables(recs: list[dict], link_spec: str, busy: int) -> None:
    """Markdown tables from the JSON records of one campaign (also --report FILE)."""
    link = rate_of(link_spec)
    vendors = list(dict.fromkeys(r["vendor"] for r in recs))
    wan = {v: [r for r in recs if r["where"] == "wan" and r["vendor"] == v] for v in vendors}
    loc = {v: [(r["vendor_alone"], r["isthmus"]) for r in recs
               if r["where"] == "local" and r["vendor"] == v] for v in vendors}
    if any(wan.values()):
        print(f"Across 2 sites, 1 rank each, link `{link_spec}` ({link:.3g} MB/s): median over "
              "repetitions (min-max) of each run's ratio\n")
        print("| vendor | reps | rtt ms | put+flush / rtt | get+flush / rtt | fence / (rtt/2) | "
              f"get, target busy {busy} ms: ms | get+flush, target busy / rtt "
              "| 1 MiB puts / link | puts / sends |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for v in vendors:
            w = wan[v]
            if not w:
                continue
            print(f"| {v} | {len(w)} | {med([g['rtt'] / 1000 for g in w], '.2f')} "
                  f"| {med([g['put_flush'] / g['rtt'] for g in w])} "
                  f"| {med([g['get_flush'] / g['rtt'] for g in w])} "
                  f"| {med([g['fence'] / (g['rtt'] / 2) for g in w])} "
                  f"| {med([g['get_busy'] / 1000 for g in w], '.0f')} "
                  f"| {busy_flush(w)} "
                  f"| {med([g['stream_put'] / link for g in w])} "
                  f"| {med([g['stream_put'] / g['stream_send'] for g in w])} |")
    puts = {v: [r for r in recs if r["where"] == "puts" and r["vendor"] == v] for v in vendors}
    if any(puts.values()):
        n = next(r["nputs"] for v in vendors for r in puts[v])
        print(f"\n{n} puts of 8 B + one flush across 2 sites, link `{link_spec}`: this build "
              "against the baseline build, same repetitions\n")
        table(["rtt ms", "baseline ms", "this ms", "this / baseline", "baseline / rtt",
               "this / rtt"],
              {v: [[g["this"]["rtt"] / 1000 for g in p], [g["baseline"]["puts"] / 1000 for g in p],
                   [g["this"]["puts"] / 1000 for g in p],
                   [g["this"]["puts"] / g["baseline"]["puts"] for g in p],
                   [g["baseline"]["puts"] / g["baseline"]["rtt"] for g in p],
                   [g["this"]["puts"] / g["this"]["rtt"] for g in p]]
               for v, p in puts.items() if p},
              [".2f", ".2f", ".2f", ".3f", ".3f", ".3f"])
    if any(loc.values()):
        print("\nOne site, 2 ranks, no gateway: isthmus against the vendor alone, runs "
              "alternating\n")
        table(["put+flush 8 B, vendor us", "isthmus - vendor, ns", "1 MiB puts, vendor MB/s",
               "isthmus / vendor"],
              {v: [[p[0]["put_flush"] for p in pairs],
                   [(p[1]["put_flush"] - p[0]["put_flush"]) * 1000 for p in pairs],
                   [p[0]["stream_put"] for p in pairs],
                   [p[1]["stream_put"] / p[0]["stream_put"] for p in pairs]]
               for v, pairs in loc.items() if pairs},
              [".3f", ".0f", ".0f", ".3f"])


def table(heads: list[str], cols: dict[str, list[list[float]]], fmts: list[str]) -> None:
    """A Markdown table: per vendor, its repetitions and each column's median (min-max)."""
    print("| vendor | reps | " + " | ".join(heads) + " |")
    print("|---" * (len(heads) + 2) + "|")
    for v, cs in cols.items():
        print(f"| {v} | {len(cs[0])} | " + " | ".join(med(c, f) for c, f in zip(cs, fmts)) + " |")


def main() -> int:
    ap = argparse.ArgumentParser(description="MPI RMA across sites and on one site against "
                                             "same-run baselines (bench/rma.py's header)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--vendors", default="openmpi,mpich")
    ap.add_argument("--wan", default="delay=10ms,rate=100mbit")
    ap.add_argument("--busy", type=int, default=500, help="ms the target computes in get_busy")
    ap.add_argument("--skip-wan", action="store_true")
    ap.add_argument("--skip-local", action="store_true")
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "rma"))
    ap.add_argument("--puts", metavar="BASELINE_PREFIX",
                    help="only the small-put rate across sites, this build against the isthmus "
                         "build installed at BASELINE_PREFIX")
    ap.add_argument("--nputs", type=int, default=1000)
    ap.add_argument("--report", metavar="JSONL", help="print the tables of an earlier campaign")
    a = ap.parse_args()
    if a.report:
        recs = [json.loads(line) for line in Path(a.report).read_text().splitlines()]
        link_spec = next((r["link"] for r in recs if r["where"] == "wan"), a.wan)
        tables(recs, link_spec, a.busy)
        return 0
    vendors = [v for v in a.vendors.split(",") if v]
    if a.reps < 1 or not vendors or any(v not in LAUNCH for v in vendors):
        raise SystemExit("rma bench: --reps >= 1 and --vendors from openmpi,mpich")
    if (a.puts or not a.skip_wan) and os.geteuid() != 0:
        raise SystemExit("rma bench: needs root for the emulated link (or --skip-wan)")
    link = rate_of(a.wan)
    prefix = find_prefix()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    log = out / time.strftime("%Y%m%d-%H%M%S.jsonl")

    def record(rec: dict) -> None:
        rec["load1"] = os.getloadavg()[0]
        with log.open("a") as f:
            f.write(json.dumps(rec) + "\n")
        print(json.dumps(rec), flush=True)

    with tempfile.TemporaryDirectory() as tmp:
        exe = Path(tmp) / "rma"
        subprocess.run([str(prefix.cc), "-O2", "-o", str(exe), str(REPO / "bench" / "rma.c")],
                       check=True)
        vexe = {}
        for v in vendors:
            vexe[v] = Path(tmp) / f"rma.{v}"
            subprocess.run([MPICC[v], "-O2", "-o", str(vexe[v]), str(REPO / "bench" / "rma.c")],
                           check=True)
        if a.puts:
            base = Path(a.puts)
            bexe = Path(tmp) / "rma.baseline"
            subprocess.run([str(base / "bin" / "isthmus-cc"), "-O2", "-o", str(bexe),
                            str(REPO / "bench" / "rma.c")], check=True,
                           env=dict(os.environ, ISTHMUS_PREFIX=str(base)))
            args = ["-m", "rtt,puts", "-i", "20", "-p", str(a.nputs)]
            for rep in range(a.reps):
                for v in vendors:
                    order = ("baseline", "this") if rep % 2 else ("this", "baseline")
                    res = {b: run_wan(bexe if b == "baseline" else exe, v, a.wan, args,
                                      base if b == "baseline" else prefix.root)
                           for b in order}
                    record({"where": "puts", "link": a.wan, "vendor": v, "rep": rep,
                            "nputs": a.nputs, "baseline_prefix": str(base), **res})
        for rep in range(0 if a.puts else a.reps):
            for v in vendors:
                if not a.skip_wan:
                    g = run_wan(exe, v, a.wan, ["-b", str(a.busy)])
                    record({"where": "wan", "link": a.wan, "vendor": v, "rep": rep, **g})
                if not a.skip_local:
                    # alternate which goes first, so neither always runs on a warmer machine
                    order = (False, True) if rep % 2 else (True, False)
                    res = {i: run_local(exe if i else vexe[v], v, i) for i in order}
                    record({"where": "local", "vendor": v, "rep": rep, "vendor_alone": res[False],
                            "isthmus": res[True]})
    print(f"\n{a.reps} repetitions, raw: {log}\n")
    tables([json.loads(line) for line in log.read_text().splitlines()], a.wan, a.busy)
    return 0


if __name__ == "__main__":
    sys.exit(main())
