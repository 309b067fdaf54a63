#!/usr/bin/env python3
# bench/whatif_validate.py: how close `isthmus whatif` comes to measured runs (issue 32 §3:
# the goal is within 15 %). For each case, --reps times: run a program traced across
# emulated sites (`isthmus run --wan-matrix FILE --trace`), then replay that same trace
# with `isthmus whatif` on the same link matrix, and compare the predicted time with the
# traced run's own (first call after MPI_Init to MPI_Finalize, slowest rank; the
# prediction covers the same span). Each replay predicts the run it was traced from, so
# the ratio per repetition is the error; the summary gives its median and min..max for the
# whole run and for each phase (MPI_Pcontrol level; halo's phase 2 is its second half:
# connections warm, no communicator being created).
# Cases:
#   halo-4KiB, halo-128KiB: examples/halo.c on 2 sites x 2 ranks, --link (10 ms, 100 Mbit/s),
#     small messages (eager, latency-bound) and large ones (early data, bandwidth-bound);
#   aggregate-*, remote_read-*, decompose-*: the pattern examples, naive and pattern
#     version, on three sites with ranks 1,2,1 and --matrix's links (bench/patterns.py:
#     seed, the seed's DD_Filtre2 links, the default; modern, 10-50 ms, 50-500 Mbit/s).
# Every replay is also done with SimGrid's CM02 alone (--no-tcp, column "CM02 only"), to
# show what the TCP model (whatif/tcp.py) changes, and with each message written to its
# connection when its rank sent it (--no-gateway-writes, columns "writes at send"), the
# replay before the gateways' write times were taken from the trace (whatif/gwwrites.py).
#
# Speed-ups (issue 32 §2): each pattern example's naive and pattern versions run one after
# the other in each repetition; the measured speed-up of that repetition is naive/pattern
# of the traced runs, the predicted one naive/pattern of their replays, over two spans:
# "after start" (the whole run less the start skew, see start_skew()) and "phase 1" (the
# part each example times and prints, marked by MPI_Pcontrol). The second table gives
# both and predicted/measured as median (min-max) over repetitions, and the speed-up of
# the times the programs printed ("program").
# remote_read's one-sided calls are replayed from their RMA records (whatif/rma.py); a
# trace without them would copy the measurement. Needs root (network namespaces). JSON lines go to
# bench/results/whatif-<ts>.jsonl; --table prints the tables again from such files.
#
#   python3 bench/whatif_validate.py [--reps 3] [--only halo,aggregate,...]
#                                    [--matrix seed|modern] [--link delay=10ms,rate=100mbit]
#                                    [--prefix _install] [--keep DIR]
#   python3 bench/whatif_validate.py --table FILE.jsonl [FILE.jsonl ...]
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "python"))
from patterns import MATRICES  # noqa: E402  (the seed's and a modern three-site matrix)
from isthmus.trace.reader import load  # noqa: E402

SEED_RANKS = "1,2,1"
# case -> (example, args, ranks per site, "halo" (2 sites, --link) or "pattern" (3 sites,
# --matrix))
CASES = {
    "halo-4KiB": ("halo", [20, 512], "2,2", "halo"),
    "halo-128KiB": ("halo", [10, 16384], "2,2", "halo"),
    "aggregate-naive": ("aggregate", ["naive", 3, 200, 16], SEED_RANKS, "pattern"),
    "aggregate-agg": ("aggregate", ["agg", 3, 200, 16, 8192], SEED_RANKS, "pattern"),
    "remote_read-naive": ("remote_read", ["naive", 4, 8, 256, 512], SEED_RANKS, "pattern"),
    "remote_read-cache": ("remote_read", ["cache", 4, 8, 256, 512, 7], SEED_RANKS, "pattern"),
    "decompose-even": ("decompose", ["even", "1,4,1", 20000, 20, 5], SEED_RANKS, "pattern"),
    "decompose-weighted": ("decompose", ["weighted", "1,4,1", 20000, 20, 5], SEED_RANKS,
                           "pattern"),
}
# pattern example -> (its naive case, its pattern case), for the speed-ups
PAIRS = {"aggregate": ("aggregate-naive", "aggregate-agg"),
         "remote_read": ("remote_read-naive", "remote_read-cache"),
         "decompose": ("decompose-even", "decompose-weighted")}
# examples whose prediction is not independent of the measurement
AS_MEASURED: dict[str, str] = {}
# the time each example prints for its own timed part (rank 0's line "NAME: ...: T s, ...")
PROGRAM_TIME = re.compile(r"^\w+: [^\n]*?: ([\d.]+) s,", re.M)


def sh(cmd: list[str], tries: int = 1, fresh: Path | None = None,
       **kw) -> subprocess.CompletedProcess:
    """Run cmd, up to `tries` times; `fresh` (a folder) is removed before each try."""
    for _ in range(tries):
        if fresh is not None:
            shutil.rmtree(fresh, ignore_errors=True)
        r = subprocess.run(cmd, capture_output=True, text=True, **kw)
        if not r.returncode:
            return r
        print(f"whatif_validate: {' '.join(cmd[2:5])} ... failed (exit {r.returncode}): "
              f"{(r.stdout + r.stderr).strip().splitlines()[-1:]}", file=sys.stderr)
    if r.returncode:
        sys.exit(f"whatif_validate: {' '.join(cmd[:6])} ... failed (exit {r.returncode}):\n"
                 f"{(r.stdout + r.stderr)[-2000:]}")
    return r


def build(prefix: Path, name: str, work: Path, env: dict) -> Path:
    exe = work / name
    if not exe.exists():
        libs = [] if name == "halo" else ["-listhmus-patterns", "-lm"]
        sh([str(prefix / "bin" / "isthmus-cc"), "-O2", "-o", str(exe),
            str(REPO / "examples" / f"{name}.c"), *libs], env=env)
    return exe


def replay(isthmus: list[str], trace: Path, links: Path, env: dict, *opts: str) -> dict:
    r = sh(isthmus + ["whatif", str(trace), "--platform", str(links), "--json",
                      "--no-baseline", *opts], env=env)
    return json.loads(r.stdout)


def start_skew(trace: Path) -> float:
    """Seconds between the first and the last rank's first call after MPI_Init. The replay
    keeps it (a rank starts late by as much), so predicted and measured both contain it;
    across the seed's links it is mostly the tracer's clock alignment in MPI_Init (3.4 s
    here), which would swamp the comparison: "after start" leaves it out of both."""
    t = load(trace, gateways=False)
    starts = []
    for rt in t.ranks.values():
        calls = [c for c in rt.calls if c.depth == 0]
        calls = calls[1:] if calls and calls[0].fn.startswith("MPI_Init") else calls
        starts.append(calls[0].t0)
    return (max(starts) - min(starts)) / 1e9


def summary(rs: list[float], digits: int = 3) -> str:
    if not rs:
        return "-"
    return (f"{statistics.median(rs):.{digits}f} "
            f"({min(rs):.{digits}f}-{max(rs):.{digits}f})")


def spans(row: dict) -> dict[str, tuple[float, float]]:
    """span -> (measured, predicted) seconds of one row: "after start" (the whole run less
    the start skew) and "phase 1" (the examples' timed part, MPI_Pcontrol(1)..(0)) when the
    trace has it."""
    skew = row["start_skew_s"]
    out = {"after start": (row["measured_s"] - skew, row["predicted_s"] - skew)}
    ph = row["phases"].get("1") or row["phases"].get(1)
    if ph:
        out["phase 1"] = (ph["measured_s"], ph["predicted_s"])
    return out


def speedups(rows: list[dict]) -> dict[tuple[str, str], dict[str, dict[str, list[float]]]]:
    """(matrix, example) -> span -> lists with one entry per repetition that has both
    versions: "measured" and "predicted" naive/pattern, "ratio" predicted/measured; the
    span "program" has "measured" alone: naive/pattern of the times the programs printed.
    Rows pair by matrix, repetition and "file" (the result file they came from, if several)."""
    by = {(r.get("matrix", r["links"]), r["case"], r.get("file", 0), r["rep"]): r for r in rows}
    out: dict[tuple[str, str], dict[str, dict[str, list[float]]]] = {}
    for (matrix, case, file, rep), naive in by.items():
        for example, (naive_case, pattern_case) in PAIRS.items():
            pattern = by.get((matrix, pattern_case, file, rep))
            if case != naive_case or pattern is None:
                continue
            g = out.setdefault((matrix, example), {})
            sn, sp = spans(naive), spans(pattern)
            for span in sn.keys() & sp.keys():
                (mn, pn), (mp, pp) = sn[span], sp[span]
                h = g.setdefault(span, {"measured": [], "predicted": [], "ratio": []})
                h["measured"].append(mn / mp)
                h["predicted"].append(pn / pp)
                h["ratio"].append((pn / pp) / (mn / mp))
            if naive.get("program_s") and pattern.get("program_s"):
                g.setdefault("program", {"measured": []})["measured"].append(
                    naive["program_s"] / pattern["program_s"])
    return out


def print_tables(rows: list[dict]) -> None:
    got: dict[str, dict[str, list[float]]] = {}
    for r in rows:
        g = got.setdefault(f"{r['case']} ({r.get('matrix', r['links'])})", {})
        g.setdefault("run", []).append(r["ratio"])
        g.setdefault("after start", []).append(r["ratio_after_start"])
        g.setdefault("run CM02 only", []).append(r["ratio_cm02"])
        for k, x in r["phases"].items():
            g.setdefault(f"phase {k}", []).append(x["predicted_s"] / x["measured_s"])
            if "predicted_at_send_s" in x:   # rows from before gwwrites.py have none
                g.setdefault(f"at send {k}", []).append(x["predicted_at_send_s"]
                                                        / x["measured_s"])
        if "ratio_at_send" in r:
            g.setdefault("run at send", []).append(r["ratio_at_send"])
    print("| case | whole run | after start | CM02 only (whole run) | per phase | "
          "writes at send: whole run; per phase |")
    print("|---|---:|---:|---:|---|---|")
    for case, g in got.items():
        ph = "; ".join(f"{k} {summary(v)}" for k, v in sorted(g.items()) if k.startswith("phase"))
        sent = "; ".join([summary(g.get("run at send", []))] + [
            f"phase {k.split()[-1]} {summary(v)}" for k, v in sorted(g.items())
            if k.startswith("at send")])
        print(f"| {case} | **{summary(g['run'])}** | {summary(g['after start'])} | "
              f"{summary(g['run CM02 only'])} | {ph} | {sent} |")
    sp = speedups(rows)
    if not sp:
        return
    print("\nSpeed-up naive/pattern, median (min-max) over repetitions (\"program\": the "
          "times the programs printed):\n")
    print("| matrix | example | span | measured | predicted | predicted/measured | reps |")
    print("|---|---|---|---:|---:|---:|---:|")
    for (matrix, example), g in sp.items():
        mark = f" ({AS_MEASURED[example]})" if example in AS_MEASURED else ""
        for span in ("after start", "phase 1", "program"):
            h = g.get(span)
            if not h:
                continue
            pred = (f"{summary(h['predicted'], 2)}{mark} | {summary(h['ratio'])}{mark}"
                    if "predicted" in h else "- | -")
            print(f"| {matrix} | {example} | {span} | {summary(h['measured'], 2)} | {pred} | "
                  f"{len(h['measured'])} |")


def run_case(isthmus: list[str], exe: Path, pargs: list, ranks: str, links: Path,
             trace: Path, env: dict) -> tuple[dict, dict, dict, float | None]:
    """Trace one run and replay it three times (TCP model, CM02 only, the TCP model with
    the messages written when sent): (replay, CM02 replay, at-send replay, the time the
    program printed or None)."""
    n = sum(int(x) for x in ranks.split(","))
    # a second try: Open MPI's launcher once failed on another job's session directory
    # (/tmp/ompi.*: "File exists"), which says nothing of the replay
    r = sh(isthmus + ["run", "-n", str(n), "--ranks-per-site", ranks, "--wan-matrix",
                      str(links), "--timeout", "300", "--trace", str(trace), "--", str(exe),
                      *map(str, pargs)], tries=2, fresh=trace, env=env, timeout=360)
    m = PROGRAM_TIME.search(r.stdout)
    return (replay(isthmus, trace, links, env), replay(isthmus, trace, links, env, "--no-tcp"),
            replay(isthmus, trace, links, env, "--no-gateway-writes"),
            float(m.group(1)) if m else None)


def main() -> int:
    ap = argparse.ArgumentParser(description="isthmus whatif against measured runs")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--only", default="", help="case name prefixes, comma-separated")
    ap.add_argument("--matrix", choices=sorted(MATRICES), default="seed",
                    help="the pattern examples' three-site links (bench/patterns.py)")
    ap.add_argument("--link", default="delay=10ms,rate=100mbit", help="halo's link")
    ap.add_argument("--prefix", default=str(REPO / "_install"))
    ap.add_argument("--keep", metavar="DIR", type=Path,
                    help="keep the traces in DIR (CASE-REP), for a closer look")
    ap.add_argument("--table", metavar="FILE", nargs="+",
                    help="print the tables of these result files, run nothing")
    args = ap.parse_args()
    if args.table:
        print_tables([{**json.loads(x), "file": i} for i, name in enumerate(args.table)
                      for x in Path(name).read_text().splitlines() if x])
        return 0
    if os.geteuid() != 0:
        sys.exit("whatif_validate: needs root (network namespaces for the emulated links)")
    only = [x for x in args.only.split(",") if x]
    cases = {c: v for c, v in CASES.items() if not only or c.startswith(tuple(only))}
    prefix = Path(args.prefix)
    env = {**os.environ, "ISTHMUS_PREFIX": args.prefix}
    isthmus = [sys.executable, "-m", "isthmus"]
    out_dir = REPO / "bench" / "results"
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / f"whatif-{dt.datetime.now():%Y%m%d-%H%M%S}.jsonl"
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="whatif-validate-") as tmp, open(out, "w") as f:
        work = Path(tmp)
        matrices = {"halo": work / "halo.toml", "pattern": work / f"{args.matrix}.toml"}
        matrices["halo"].write_text(f'sites = 2\ndefault = "{args.link}"\n')
        matrices["pattern"].write_text(MATRICES[args.matrix])
        for rep in range(args.reps):
            for case, (name, pargs, ranks, links) in cases.items():
                exe = build(prefix, name, work, env)
                trace = (args.keep or work) / f"{case}-{rep}"
                load = os.getloadavg()[0]
                p, q, w, program_s = run_case(isthmus, exe, pargs, ranks, matrices[links],
                                              trace, env)
                ratio, cm02 = p["predicted_s"] / p["traced_s"], q["predicted_s"] / q["traced_s"]
                skew = start_skew(trace)
                at_send = {x["phase"]: x["time_s"] for x in w["phases"]}
                phases = {x["phase"]: (x["traced_s"], x["time_s"]) for x in p["phases"]
                          if x["traced_s"]}
                row = {"case": case, "rep": rep, "load1": load, "ranks": ranks,
                       "links": args.link if links == "halo" else args.matrix,
                       "matrix": "halo" if links == "halo" else args.matrix, "args": pargs,
                       "measured_s": p["traced_s"], "predicted_s": p["predicted_s"],
                       "ratio": ratio, "start_skew_s": skew,
                       "predicted_cm02_s": q["predicted_s"], "ratio_cm02": cm02,
                       "predicted_at_send_s": w["predicted_s"],
                       "ratio_at_send": w["predicted_s"] / w["traced_s"],
                       "program_s": program_s,
                       "phases": {str(k): {"measured_s": a, "predicted_s": b,
                                           "predicted_at_send_s": at_send.get(k, 0.0)}
                                  for k, (a, b) in phases.items()},
                       "notes": p["notes"], "simulation_wall_s": p["simulation_wall_s"],
                       "time": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}
                measured, predicted = spans(row)["after start"]
                row["ratio_after_start"] = after = predicted / measured
                rows.append(row)
                f.write(json.dumps(row) + "\n")
                f.flush()
                print(f"{case} rep {rep} (load {load:.1f}): measured {p['traced_s'] * 1e3:.1f} ms, "
                      f"predicted {p['predicted_s'] * 1e3:.1f} ms, ratio {ratio:.3f}, after the "
                      f"{skew * 1e3:.0f} ms start skew {after:.3f} (CM02 only "
                      f"{cm02:.3f}); phases " + ", ".join(
                          f"{k}: {a * 1e3:.1f}/{b * 1e3:.1f} ms (at send "
                          f"{at_send.get(k, 0.0) * 1e3:.1f})" for k, (a, b) in phases.items()),
                      flush=True)
    loads = [r["load1"] for r in rows]
    print(f"\n{args.reps} repetitions, matrix {args.matrix}, load (1 min) "
          f"{min(loads):.1f}-{max(loads):.1f}; rows: {out}\n")
    print_tables(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
