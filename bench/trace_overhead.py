#!/usr/bin/env python3
# bench/trace_overhead.py: what `isthmus run --trace` costs an application (issue 30: an
# application with 10^5 messages per second per rank runs at most 3 % slower traced).
#
# Builds bench/trace_overhead.c with isthmus-cc and, per layout (1site: 2 ranks in one
# site; 2sites: 1 rank in each of 2 sites, every message across the WAN through the
# gateways):
#   1. calibrates once, untraced: the work per iteration that makes the halo loop send
#      --rate messages per second per rank (where the layout can reach it at all);
#      (--max-rate: each layout also with no work, its highest rate);
#   2. runs the halo loop with that same work untraced (off) and traced (on), --reps
#      times, interleaved, the order flipped every repetition; the loop's time is the
#      program's own (barrier to last MPI_Waitall, slowest rank): start-up, clock
#      alignment and the final flush are one-time costs and reported apart (wall_s);
#   3. reports per layout the median loop time of off and on with min..max, and the ratio
#      on/off per repetition (median, min..max), plus what the trace held and lost.
# Then the record path itself (`calls` mode, 1 site): per-call times of MPI_Comm_rank and
# of an MPI_Isend to MPI_PROC_NULL + MPI_Wait pair (and of the other --kinds), traced and
# untraced, interleaved; the
# per-percentile difference is the distribution of what a record costs.
# JSON lines go to bench/results/trace-overhead-<ts>.jsonl.
#
#   python3 bench/trace_overhead.py [--reps 7] [--layouts 1site,2sites] [--rate 1e5]
#                                   [--seconds 2] [--calls 200000] [--prefix _install]
#                                   [--kinds rank,null,halo,rma]
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
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LAYOUTS = {"1site": ("2", "1"), "2sites": ("2", "2")}  # (-n, --sites)
KV = re.compile(r"([\w.]+)=([-\w.]+)")
LOST = re.compile(r"(\d+) records \((\d+) bytes\) were dropped")


def parse(line_start: str, text: str) -> dict:
    for line in text.splitlines():
        if line.startswith(line_start):
            return {k: (float(v) if re.fullmatch(r"-?[\d.]+(e[-+]?\d+)?", v) else v)
                    for k, v in KV.findall(line)}
    raise RuntimeError(f"no '{line_start}' line in the output:\n{text[-1500:]}")


class Runner:
    def __init__(self, prefix: Path, exe: Path, scratch: Path):
        self.prefix, self.exe, self.scratch = prefix, exe, scratch
        self.env = dict(os.environ, ISTHMUS_PREFIX=str(prefix))
        for k in ("ISTHMUS_SITE", "ISTHMUS_MPI", "ISTHMUS_SITE_RANKS", "ISTHMUS_TRACE_DIR"):
            self.env.pop(k, None)

    def command(self, layout: str, trace: Path | None, args: list[str]) -> list[str]:
        n, sites = LAYOUTS[layout]
        cmd = [sys.executable, "-m", "isthmus", "run", "-n", n, "--sites", sites,
               "--mpi", "openmpi", "--timeout", "300"]
        if trace is not None:
            cmd += ["--trace", str(trace)]
        return cmd + ["--", str(self.exe)] + args

    def run(self, layout: str, traced: bool, args: list[str], head: str) -> dict:
        trace = self.scratch / "trace" if traced else None
        if trace is not None and trace.exists():
            shutil.rmtree(trace)
        cmd = self.command(layout, trace, args)
        t0 = time.monotonic()
        r = subprocess.run(cmd, env=self.env, capture_output=True, text=True, timeout=400)
        wall = time.monotonic() - t0
        if r.returncode:
            raise RuntimeError(f"{' '.join(cmd)} exited {r.returncode}:\n{(r.stderr or r.stdout)[-1500:]}")
        rec = parse(head, r.stdout)
        rec["wall_s"] = round(wall, 3)
        rec["load"] = os.getloadavg()[0]
        if trace is not None:
            files = list(trace.glob("*.ismt"))
            rec["trace_bytes"] = sum(p.stat().st_size for p in files)
            rec["lost_records"] = sum(int(m.group(1)) for m in LOST.finditer(r.stderr))
            shutil.rmtree(trace)
        return rec


def spread(v: list[float]) -> str:
    m = statistics.median(v)
    return f"{m:.4g} ({min(v):.4g}..{max(v):.4g}, {(max(v) - min(v)) / m * 100:.1f} %)"


def main() -> int:
    ap = argparse.ArgumentParser(description="isthmus run --trace against untraced "
                                             "(see the comment at the top of this file)")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--layouts", default="1site,2sites")
    ap.add_argument("--rate", type=float, default=1e5,
                    help="messages sent per second per rank to calibrate the work for")
    ap.add_argument("--seconds", type=float, default=2.0, help="length of a halo loop")
    ap.add_argument("--max-rate", action="store_true",
                    help="also run each layout with no work at all (its highest message rate)")
    ap.add_argument("--calls", type=int, default=200000, help="calls timed per calls run")
    ap.add_argument("--call-reps", type=int, default=5)
    ap.add_argument("--kinds", default="rank,null,halo,rma",
                    help="calls timed: rank, null, halo, rma (a put and a get to MPI_PROC_NULL)")
    ap.add_argument("--prefix", default=os.environ.get("ISTHMUS_PREFIX", str(REPO / "_install")))
    args = ap.parse_args()
    layouts = [x for x in args.layouts.split(",") if x]
    if args.reps < 1 or args.call_reps < 0 or any(x not in LAYOUTS for x in layouts):
        ap.error(f"--reps >= 1, --call-reps >= 0, layouts from {', '.join(LAYOUTS)}")
    prefix = Path(args.prefix).resolve()
    out_dir = REPO / "bench" / "results"
    out_dir.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%S")
    out = out_dir / f"trace-overhead-{stamp}.jsonl"
    with tempfile.TemporaryDirectory(prefix="trace-overhead-") as tmp, out.open("w") as f:
        scratch = Path(tmp)
        exe = scratch / "tro"
        subprocess.run([str(prefix / "bin" / "isthmus-cc"), "-O2", "-o", str(exe),
                        str(REPO / "bench" / "trace_overhead.c")], check=True)
        run = Runner(prefix, exe, scratch)
        f.write(json.dumps({"meta": {"start": stamp, "reps": args.reps, "rate": args.rate,
                                     "seconds": args.seconds, "cpus": os.cpu_count(),
                                     "load": os.getloadavg()[0], "prefix": str(prefix)}}) + "\n")

        def emit(rec: dict) -> None:
            f.write(json.dumps(rec) + "\n")
            f.flush()

        plan = {}  # config -> (layout, work, iterations)
        for lay in layouts:
            cal = run.run(lay, False, ["halo", "--calibrate", str(args.rate), "-i", "5000"],
                          "trace_overhead mode=calibrate")
            work, unit = int(cal["work"]), cal["unit_ns"] / 1e9
            # the machine is shared: the work takes longer than calibrated when others run,
            # so correct it from what the loop then reached (half steps, at most 4), and
            # size the runs from a probe at the work finally chosen
            for _ in range(4):
                probe = run.run(lay, False, ["halo", "-i", "5000", "-w", str(work)],
                                "trace_overhead mode=halo")
                per_iter, got = probe["loop_s"] / 5000, probe["msgs_per_s_per_rank"]
                step = int(0.5 * (2 / args.rate - per_iter) / unit)
                if abs(got / args.rate - 1) < 0.25 or (work == 0 and step <= 0) or step == 0:
                    break
                work = max(0, work + step)
            else:
                probe = run.run(lay, False, ["halo", "-i", "5000", "-w", str(work)],
                                "trace_overhead mode=halo")
                per_iter, got = probe["loop_s"] / 5000, probe["msgs_per_s_per_rank"]
            plan[lay] = (lay, work, max(1000, int(args.seconds / per_iter)))
            emit({"layout": lay, "calibration": cal, "probe": probe, "plan": plan[lay]})
            print(f"{lay}: work {work} units/iteration (exchange alone {cal['exchange_us']:.1f} "
                  f"us), untraced probe {got:.0f} msgs/s/rank", file=sys.stderr)
            if args.max_rate and work:
                nowork = run.run(lay, False, ["halo", "-i", "5000", "-w", "0"],
                                 "trace_overhead mode=halo")
                plan[f"{lay}-nowork"] = (lay, 0, max(1000, int(args.seconds * 5000 /
                                                                nowork["loop_s"])))
        loops: dict[tuple[str, bool], list[dict]] = {}
        for rep in range(args.reps):
            for name, (lay, work, iters) in plan.items():
                for traced in ((False, True) if rep % 2 == 0 else (True, False)):
                    try:
                        rec = run.run(lay, traced, ["halo", "-i", str(iters), "-w", str(work)],
                                      "trace_overhead mode=halo")
                    except (RuntimeError, subprocess.TimeoutExpired) as e:
                        emit({"config": name, "traced": traced, "rep": rep, "failed": str(e)})
                        print(f"rep {rep} {name} traced={traced} FAILED: {str(e)[:300]}",
                              file=sys.stderr)
                        continue
                    rec.update(config=name, layout=lay, traced=traced, rep=rep)
                    loops.setdefault((name, traced), []).append(rec)
                    emit(rec)
                    print(f"rep {rep} {name} {'on ' if traced else 'off'} loop {rec['loop_s']:.3f}"
                          f" s ({rec['msgs_per_s_per_rank']:.0f} msgs/s/rank), load "
                          f"{rec['load']:.1f}", file=sys.stderr)
        calls: dict[tuple[str, bool], list[dict]] = {}
        for rep in range(args.call_reps):
            for kind in args.kinds.split(","):
                for traced in ((False, True) if rep % 2 == 0 else (True, False)):
                    try:
                        rec = run.run("1site", traced, ["calls", kind, "-n", str(args.calls)],
                                      "trace_overhead mode=calls")
                    except (RuntimeError, subprocess.TimeoutExpired) as e:
                        emit({"calls": kind, "traced": traced, "rep": rep, "failed": str(e)})
                        continue
                    rec.update(traced=traced, rep=rep)
                    calls.setdefault((kind, traced), []).append(rec)
                    emit(rec)

        print(f"\nhalo loop, {args.reps} interleaved repetitions (pairs where both ran); "
              f"JSON lines: {out}")
        for lay, (_, work, iters) in plan.items():
            both = {x["rep"] for x in loops.get((lay, False), [])} & \
                {x["rep"] for x in loops.get((lay, True), [])}
            if not both:
                print(f"  {lay}: no repetition where both runs succeeded")
                continue
            off = [x for x in loops[(lay, False)] if x["rep"] in both]
            on = [x for x in loops[(lay, True)] if x["rep"] in both]
            ratios = [b["loop_s"] / a["loop_s"] for a, b in zip(off, on)]
            rate = statistics.median(x["msgs_per_s_per_rank"] for x in off)
            print(f"  {lay}: {iters} iterations, work {work}, untraced "
                  f"{rate:.0f} msgs sent/s/rank")
            print(f"    loop s  off {spread([x['loop_s'] for x in off])}")
            print(f"    loop s  on  {spread([x['loop_s'] for x in on])}")
            print(f"    on/off per repetition: {spread(ratios)}  "
                  f"(slower by {(statistics.median(ratios) - 1) * 100:+.2f} %)")
            cpu = [b["cpu_s"] / a["cpu_s"] for a, b in zip(off, on)]
            print(f"    CPU s off {spread([x['cpu_s'] for x in off])}, on "
                  f"{spread([x['cpu_s'] for x in on])}; on/off {spread(cpu)}")
            print(f"    wall s  off {spread([x['wall_s'] for x in off])}, "
                  f"on {spread([x['wall_s'] for x in on])}")
            print(f"    trace {statistics.median(x['trace_bytes'] for x in on) / 1e6:.1f} MB "
                  f"per run, records lost {sum(x['lost_records'] for x in on)} in all runs")
            emit({"summary": lay, "ratio_median": statistics.median(ratios),
                  "cpu_ratio_median": statistics.median(cpu),
                  "ratio_min": min(ratios), "ratio_max": max(ratios), "untraced_rate": rate,
                  "off_median_s": statistics.median(x["loop_s"] for x in off),
                  "on_median_s": statistics.median(x["loop_s"] for x in on)})
        if args.call_reps:
            first = args.kinds.split(",")[0]
            keys = [k for k in calls[(first, False)][0] if re.fullmatch(r"p[\d.]+", k)]
            print(f"\nper-call time, ns (median over {args.call_reps} runs of {args.calls} "
                  f"calls each; timer pair {statistics.median(x['timer_p50_ns'] for x in calls[(first, False)]):.0f} ns)")
            print("  call                         " + " ".join(f"{k:>8}" for k in keys))
            labels = {"rank": "MPI_Comm_rank", "null": "Isend(PROC_NULL)+Wait",
                      "halo": "halo iteration (5 calls)", "rma": "Put+Get (PROC_NULL)"}
            for kind, label in ((k, labels[k]) for k in args.kinds.split(",")):
                rows = {}
                for traced in (False, True):
                    rows[traced] = [statistics.median(x[k] for x in calls[(kind, traced)])
                                    for k in keys]
                    print(f"  {label:21s} {'on ' if traced else 'off'}   "
                          + " ".join(f"{v:8.0f}" for v in rows[traced]))
                diff = [b - a for a, b in zip(rows[False], rows[True])]
                print(f"  {label:21s} cost  " + " ".join(f"{v:8.0f}" for v in diff))
                writer = statistics.median(x["other_threads_cpu_ns_per_call"]
                                           for x in calls[(kind, True)])
                print(f"  {label:21s} the trace writer thread's CPU: {writer:.0f} ns per call")
                emit({"summary": f"calls-{kind}", "percentiles": keys, "off": rows[False],
                      "on": rows[True], "cost": diff, "writer_ns": writer})
    return 0


if __name__ == "__main__":
    sys.exit(main())
