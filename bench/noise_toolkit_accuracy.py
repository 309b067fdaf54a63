#!/usr/bin/env python3
"""How accurately the noise toolkit finds, attributes and models noise on this machine (the
acceptance measurements of issue 6).

Each repetition (--reps, median and spread reported) measures:

  inject   `isthmus noise inject --period 10ms --duration 1ms --cpu 1 --priority fifo:50`
           running while `isthmus noise run --probe selfish --cpus 1` records 10 s with a
           kernel trace; the analysis must find the injector's runs (named by process),
           their period (10.0 ms +-1%) and their length (1.0 ms +-5%).
  idle     the same probe on cpu 0 without the injector: the noise fraction, its split
           by kind of cause (kernel: irq, softirq, timer and other vectors, kernel
           threads; other processes; unattributed), and whether the timer tick is named.
  ftq      FTQ (2^20 ticks) on cpus 0-1 for 5 s: the per-sample overhead in ticks.
  scale    a selfish trace of cpus 0-1 with the injector on cpu 1, then a 2-rank
           MPI-Jitter run (`isthmus run --sites 1 -n 2`, ranks pinned to cpus 0 and 1,
           compute 2 ms, barrier) with the injector running; `isthmus noise scale
           --validate` compares the model's P = 2 slowdown with the measured one.
  scale-rt (--rt) the same with the probe threads and the MPI-Jitter ranks at SCHED_FIFO
           priority 10 (the injector stays at 50, above them): other users' processes
           then cannot time-share the two cores, so the noise is the injector's and the
           kernel's. It starves everything else on the machine for ~10 s, so it runs
           once per invocation, with short runs (trace 5 s, 1000 iterations).

Needs root (real-time priority, tracefs). Progress on stderr, a Markdown summary on
stdout, JSON lines in bench/results/noise-<timestamp>.jsonl. From the repository root:

    .venv/bin/python bench/noise_toolkit_accuracy.py --reps 3
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENV = dict(os.environ, ISTHMUS_PREFIX=str(ROOT / "_install"),
           PATH=f"{ROOT / '_install' / 'bin'}:{ROOT / '.venv' / 'bin'}:{os.environ['PATH']}")
ISTHMUS = [str(ROOT / ".venv" / "bin" / "isthmus")]


def say(*a):
    print(*a, file=sys.stderr, flush=True)


def sh(args, timeout=600, check=True):
    r = subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=ENV)
    if check and r.returncode:
        raise SystemExit(f"failed: {' '.join(map(str, args))}\n{r.stdout}\n{r.stderr}")
    return r


def injector(seconds: float, log: Path):
    return subprocess.Popen(ISTHMUS + ["noise", "inject", "--period", "10ms", "--duration", "1ms", "--cpu", "1",
                                       "--priority", "fifo:50", "--for", f"{seconds}s", "--log", str(log)],
                            env=ENV, stderr=subprocess.DEVNULL)


def loadavg() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def rep(work: Path, i: int) -> dict:
    out: dict = {"rep": i, "load_start": loadavg()}
    w = work / f"rep{i}"
    w.mkdir(parents=True)
    # inject
    say(f"[rep {i}] inject: selfish on cpu 1 with the injector (10 s)")
    inj = injector(13, w / "inject.json")
    time.sleep(0.5)
    sh(ISTHMUS + ["noise", "run", "--probe", "selfish", "--cpus", "1", "--duration", "10s", "--out",
                  str(w / "inject"), "--no-report"])
    inj.wait(timeout=60)
    sh(ISTHMUS + ["noise", "report", str(w / "inject"), "--no-html", "--inject-log", str(w / "inject.json")])
    a = json.loads((w / "inject" / "analysis.json").read_text())
    ic = a["inject_check"]
    out["inject"] = {k: ic.get(k) for k in ("found", "occurrences", "found_period_s", "found_burst_s",
                                            "period_error", "burst_error")}
    # idle
    say(f"[rep {i}] idle: selfish on cpu 0 (10 s)")
    sh(ISTHMUS + ["noise", "run", "--probe", "selfish", "--cpus", "0", "--duration", "10s", "--out",
                  str(w / "idle"), "--no-report", "--max-events", "1000000"])
    a = json.loads((w / "idle" / "analysis.json").read_text())
    c = a["cores"][0]
    cat = c["noise_by_category"] or {}
    ticks = [k["cause"] for k in c["causes"] if "tick" in k["cause"]]
    out["idle"] = {"noise_fraction": c["noise_fraction"], "by_category": cat,
                   "kernel_fraction": sum(v for k, v in cat.items() if k not in ("other process",)),
                   "kernel_named_fraction": sum(v for k, v in cat.items()
                                                if k not in ("other process", "unattributed",
                                                             "not kept (beyond --max-events)")),
                   "tick": ticks, "load": a["load"]}
    # ftq overhead
    say(f"[rep {i}] ftq: cpus 0-1 (5 s)")
    sh(ISTHMUS + ["noise", "run", "--probe", "ftq", "--cpus", "0-1", "--duration", "5s", "--out", str(w / "ftq"),
                  "--no-report", "--no-trace"])
    a = json.loads((w / "ftq" / "analysis.json").read_text())
    out["ftq"] = {str(c["cpu"]): c["overhead_ticks"] for c in a["cores"]}
    # scale: trace with the injector, then MPI-Jitter with the injector
    say(f"[rep {i}] scale: selfish on cpus 0-1 with the injector (10 s), then MPI-Jitter")
    inj = injector(13, w / "inject2.json")
    time.sleep(0.5)
    sh(ISTHMUS + ["noise", "run", "--probe", "selfish", "--cpus", "0-1", "--duration", "10s", "--out",
                  str(w / "trace01"), "--no-report", "--no-trace"])
    inj.wait(timeout=60)
    inj = injector(40, w / "inject3.json")
    time.sleep(0.5)
    sh(["isthmus", "run", "--sites", "1", "-n", "2", "--timeout", "120", "--", str(ROOT / "_install/bin/isthmus-noise"),
        "mpi-jitter", "--iterations", "1000", "--compute-us", "2000", "--max-delay-us", "1000", "--cpus", "0-1",
        "--out", str(w / "mj")], timeout=200)
    inj.terminate()
    inj.wait(timeout=30)
    sh(ISTHMUS + ["noise", "scale", str(w / "trace01"), "--work", "2ms", "--latency", "5us", "--validate",
                  str(w / "mj"), "--samples", "4000"])
    v = json.loads((w / "trace01" / "scale.json").read_text())["validation"]
    out["scale"] = {k: v[k] for k in ("work_s", "slowdown_measured", "slowdown_predicted", "relative_error",
                                      "lost_rel")}
    out["load_end"] = loadavg()
    return out


def rt_validation(work: Path) -> dict:
    w = work / "rt"
    w.mkdir(parents=True)
    say("[rt] scale at SCHED_FIFO 10: selfish on cpus 0-1 with the injector (5 s), then MPI-Jitter")
    inj = injector(8, w / "inject2.json")
    time.sleep(0.5)
    sh(ISTHMUS + ["noise", "run", "--probe", "selfish", "--cpus", "0-1", "--duration", "5s", "--priority", "fifo:10",
                  "--out", str(w / "trace01"), "--no-report", "--no-trace"])
    inj.wait(timeout=60)
    inj = injector(40, w / "inject3.json")
    time.sleep(0.5)
    sh(["isthmus", "run", "--sites", "1", "-n", "2", "--timeout", "120", "--", str(ROOT / "_install/bin/isthmus-noise"),
        "mpi-jitter", "--iterations", "1000", "--compute-us", "2000", "--max-delay-us", "1000", "--cpus", "0-1",
        "--probe-priority", "fifo:10", "--out", str(w / "mj")], timeout=200)
    inj.terminate()
    inj.wait(timeout=30)
    sh(ISTHMUS + ["noise", "scale", str(w / "trace01"), "--work", "2ms", "--latency", "5us", "--validate",
                  str(w / "mj"), "--samples", "4000"])
    v = json.loads((w / "trace01" / "scale.json").read_text())["validation"]
    return {k: v[k] for k in ("work_s", "slowdown_measured", "slowdown_predicted", "relative_error", "lost_rel")}


def med_spread(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return "-"
    return f"{statistics.median(xs):.4g} (min {min(xs):.4g}, max {max(xs):.4g})"


def summary(rows: list[dict], res_file: Path) -> None:
    print(f"runs: {len(rows)}, results {res_file.relative_to(ROOT)}, load average at start of each rep: "
          f"{', '.join(r['load_start'] for r in rows)}\n")
    print("| check | target | median (min, max) |\n|---|---|---|")
    print(f"| injector period found | 10.0 ms ±1% | {med_spread([r['inject']['found_period_s'] * 1e3 if r['inject']['found_period_s'] else None for r in rows])} ms |")
    print(f"| injector run length found | 1.0 ms ±5% | {med_spread([r['inject']['found_burst_s'] * 1e3 if r['inject']['found_burst_s'] else None for r in rows])} ms |")
    print(f"| injector named | isthmus-inject[pid] | {sum(1 for r in rows if r['inject']['found'])}/{len(rows)} reps |")
    print(f"| idle cpu 0: noise fraction, all causes | < 1% | {med_spread([100 * r['idle']['noise_fraction'] for r in rows])} % |")
    print(f"| idle cpu 0: noise not from other processes | < 1% | {med_spread([100 * r['idle']['kernel_fraction'] for r in rows])} % |")
    print(f"| idle cpu 0: of it named kernel causes | | {med_spread([100 * r['idle']['kernel_named_fraction'] for r in rows])} % |")
    print(f"| timer tick named | if visible | {'; '.join(sorted({t for r in rows for t in r['idle']['tick']})) or 'no'} |")
    for cpu in ("0", "1"):
        print(f"| FTQ overhead cpu {cpu}, median ticks | < 100 | {med_spread([r['ftq'][cpu]['median'] for r in rows])} |")
        print(f"| FTQ overhead cpu {cpu}, p99 ticks | | {med_spread([r['ftq'][cpu]['p99'] for r in rows])} |")
    print(f"| MPI-Jitter P=2 slowdown measured | | {med_spread([r['scale']['slowdown_measured'] for r in rows])} |")
    print(f"| scale model P=2 slowdown predicted | within 20% | {med_spread([r['scale']['slowdown_predicted'] for r in rows])} |")
    print(f"| relative error | < 20% | {med_spread([100 * r['scale']['relative_error'] for r in rows])} % |")



def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--work", type=Path, default=Path("/tmp/isthmus-noise-bench"))
    ap.add_argument("--rt", action="store_true", help="also the scale validation at SCHED_FIFO (once)")
    ap.add_argument("--only-rt", action="store_true", help="only the SCHED_FIFO scale validation")
    ap.add_argument("--summarise", type=Path, default=None, help="print the summary of a results file and exit")
    args = ap.parse_args()
    if args.summarise:
        rows = [json.loads(ln) for ln in args.summarise.read_text().splitlines() if ln.strip()]
        for r in rows:
            if "rt" in r:
                rt = r["rt"]
                print(f"scale validation at SCHED_FIFO 10: measured slowdown {rt['slowdown_measured']:.4g}, "
                      f"predicted {rt['slowdown_predicted']:.4g}, error {100 * rt['relative_error']:+.1f}%, "
                      f"MPI-Jitter lost_rel {rt['lost_rel']:.4f}\n")
        summary([r for r in rows if "rep" in r], args.summarise.resolve())
        return
    if os.geteuid() != 0:
        raise SystemExit("needs root (real-time priority for the injector, tracefs)")
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    work = args.work / stamp
    res_file = ROOT / "bench" / "results" / f"noise-{stamp}.jsonl"
    res_file.parent.mkdir(exist_ok=True)
    rows = []
    if args.rt or args.only_rt:
        rt = rt_validation(work)
        with open(res_file, "a") as f:
            f.write(json.dumps({"rt": rt, "load": loadavg()}) + "\n")
        print(f"scale validation at SCHED_FIFO 10 (once): measured slowdown {rt['slowdown_measured']:.4g}, "
              f"predicted {rt['slowdown_predicted']:.4g}, error {100 * rt['relative_error']:+.1f}%, "
              f"MPI-Jitter lost_rel {rt['lost_rel']:.4f}\n")
        if args.only_rt:
            return
    for i in range(args.reps):
        r = rep(work, i)
        rows.append(r)
        with open(res_file, "a") as f:
            f.write(json.dumps(r) + "\n")
    summary(rows, res_file)

if __name__ == "__main__":
    main()
