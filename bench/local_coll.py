#!/usr/bin/env python3
# bench/local_coll.py: what isthmus costs a blocking collective on one site. For each
# vendor MPI it runs `isthmus-bench coll` (2 ranks, one node, no gateway) as
#   a  vendor alone       isthmus-bench.<vendor> started with the vendor launcher
#   b  isthmus, 1 site    isthmus-bench (libisthmus over the same vendor, ISTHMUS_MPI set)
#   c  optional           --compare DIR: the isthmus-bench of another install (e.g. a build
#                         from before a change), run the same way as b
# interleaved round-robin with the order rotated every round, and reports per collective
# and size the median time of each configuration and the per-round ratios b/a (and c/a),
# median and min-max over the rounds. JSON lines go to bench/results/local-coll-<ts>.jsonl.
#
#   python3 bench/local_coll.py [--rounds 5] [--ops allreduce,bcast,...] [--sizes 8,1k,...]
#                               [--vendors openmpi,mpich] [--compare /tmp/before_install]
#                               [--b-env ISTHMUS_COLL_TABLE=table.json]
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

REPO = Path(__file__).resolve().parents[1]
LAUNCH = {
    "openmpi": ["mpirun.openmpi", "--oversubscribe", "--allow-run-as-root", "-np", "2"],
    "mpich": ["mpiexec.mpich", "-np", "2"],
}


def run_bench(cmd: list[str], env: dict[str, str], timeout: float) -> list[dict]:
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {r.returncode}: {(r.stderr or r.stdout)[-400:]}")
    recs = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    bad = [x for x in recs if x.get("status") != "ok"]
    if not recs or bad:
        raise RuntimeError(f"{' '.join(cmd)}: no result or a failed point: {bad[:1]}")
    return recs


def main() -> int:
    ap = argparse.ArgumentParser(description="Blocking collectives on one site: vendor alone vs isthmus "
                                             "(see the comment at the top of bench/local_coll.py).")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--ops", default="barrier,bcast,reduce,allreduce,allgather")
    ap.add_argument("--sizes", default="8,1k,64k,1M")
    ap.add_argument("--vendors", default="openmpi,mpich")
    ap.add_argument("--reps", type=int, default=5, help="isthmus-bench -r within one run")
    ap.add_argument("--prefix", default=os.environ.get("ISTHMUS_PREFIX", str(REPO / "_install")))
    ap.add_argument("--compare", help="another isthmus install to run as configuration c")
    ap.add_argument("--label-compare", default="c")
    ap.add_argument("--b-env", action="append", default=[], metavar="KEY=VALUE",
                    help="environment of configuration b only (e.g. ISTHMUS_COLL_TABLE=t.json)")
    args = ap.parse_args()
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")
    prefix = Path(args.prefix)
    configs = {"a": None, "b": prefix}
    if args.compare:
        configs["c"] = Path(args.compare)
    for name, p in configs.items():
        if p is not None and not (p / "bin" / "isthmus-bench").exists():
            ap.error(f"configuration {name}: no {p}/bin/isthmus-bench (build and install first)")
    vendors = [v for v in args.vendors.split(",") if v]
    for v in vendors:
        if v not in LAUNCH:
            ap.error(f"unknown vendor {v!r} (openmpi or mpich)")
    out_dir = REPO / "bench" / "results"
    out_dir.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%S")
    out = out_dir / f"local-coll-{stamp}.jsonl"
    base = dict(os.environ, OMPI_MCA_mpi_yield_when_idle="0")
    for k in ("ISTHMUS_SITE", "ISTHMUS_MPI", "ISTHMUS_SITE_RANKS"):
        base.pop(k, None)
    # times[(vendor, config, op, size)] = [median of one run per round]
    times: dict[tuple, list[float]] = {}
    names = list(configs)
    with out.open("w") as f, Progress(console=Console(stderr=True)) as prog:
        f.write(json.dumps({"meta": {"start": stamp, "ops": args.ops, "sizes": args.sizes,
                                      "b_env": args.b_env,
                                      "rounds": args.rounds, "configs": {k: str(v) for k, v in configs.items()},
                                      "load": os.getloadavg()[0], "cpus": os.cpu_count()}}) + "\n")
        task = prog.add_task("local collectives", total=args.rounds * len(vendors) * len(names))
        for rnd in range(args.rounds):
            for v in vendors:
                order = names[rnd % len(names):] + names[:rnd % len(names)]
                for name in order:
                    p = configs[name]
                    env = dict(base)
                    if p is None:
                        exe = str(prefix / "bin" / f"isthmus-bench.{v}")
                    else:
                        exe = str(p / "bin" / "isthmus-bench")
                        env.update(ISTHMUS_MPI=v, ISTHMUS_PREFIX=str(p))
                        if name == "b":
                            env.update(kv.split("=", 1) for kv in args.b_env)
                    cmd = LAUNCH[v] + [exe, "coll", "--op", args.ops, "-m", args.sizes,
                                       "-r", str(args.reps), "--json"]
                    for rec in run_bench(cmd, env, timeout=600):
                        times.setdefault((v, name, rec["op"], rec["size"]), []).append(rec["median"])
                        f.write(json.dumps({"round": rnd, "vendor": v, "config": name,
                                            "op": rec["op"], "size": rec["size"],
                                            "median_us": rec["median"], "min_us": rec["min"],
                                            "max_us": rec["max"], "load": os.getloadavg()[0]}) + "\n")
                    prog.advance(task)
        table = Table(title=f"blocking collectives, 2 ranks, one node ({args.rounds} rounds)")
        for col in ["vendor", "op", "size", "a us", "b us", "b/a median (min-max)"]:
            table.add_column(col)
        if "c" in configs:
            table.add_column("c us")
            table.add_column("c/a median (min-max)")
        summary = []
        for (v, name, op, size), vals in sorted(times.items()):
            if name != "a":
                continue
            row = [v, op, str(size), f"{statistics.median(vals):.2f}"]
            rec = {"summary": True, "vendor": v, "op": op, "size": size,
                   "a_median_us": statistics.median(vals)}
            for other in names[1:]:
                ov = times[(v, other, op, size)]
                ratios = [o / a for o, a in zip(ov, vals)]
                rm = statistics.median(ratios)
                row += [f"{statistics.median(ov):.2f}", f"{rm:.2f} ({min(ratios):.2f}-{max(ratios):.2f})"]
                rec.update({f"{other}_median_us": statistics.median(ov), f"{other}_over_a": rm,
                            f"{other}_over_a_min": min(ratios), f"{other}_over_a_max": max(ratios)})
            table.add_row(*row)
            summary.append(rec)
        for rec in summary:
            f.write(json.dumps(rec) + "\n")
    Console().print(table)
    print(f"results: {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
