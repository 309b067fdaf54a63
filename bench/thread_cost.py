#!/usr/bin/env python3
"""thread_cost.py: what MPI_THREAD_MULTIPLE costs a single-threaded program on isthmus.

Within one site (plain mpirun, 2 ranks, no gateway), bench/pingpong.c's 8-byte latency
with MPI_THREAD_MULTIPLE requested against MPI_THREAD_SINGLE, under each vendor, built with
isthmus-cc and, as the baseline, with the vendor's own mpicc: the vendor's MPI_THREAD_MULTIPLE
costs something by itself, and isthmus's part is the difference of the differences. Runs
of the four alternate, so all see the same machine (a same-run baseline); prints the
median and the range of each, and the medians of the paired differences. Then the
deterministic figure: instructions isthmus itself executes per send + receive, counted
with callgrind as bench/fastpath_instructions.sh does, at each level.

  python3 bench/thread_cost.py [--reps 9] [--iters 20000] [--callgrind-iters 5000]
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
PREFIX = Path(os.environ.get("ISTHMUS_PREFIX", HERE / "_install"))
LEVELS = ["single", "multiple"]
# the functions a local 8-byte send and receive run (abi/p2p.c, the backend's wrappers)
PATH = ["PMPI_Send", "b_send", "PMPI_Recv", "b_recv"]
LINE = re.compile(r"^pingpong size=8 mode=lat value=([0-9.]+) unit=us", re.M)


def launch(vendor: str) -> list[str]:
    if vendor == "openmpi":
        return ["mpirun.openmpi", "--oversubscribe", "-np", "2"]
    return ["mpiexec.mpich", "-np", "2"]


def env_for(vendor: str, level: str) -> dict:
    return dict(os.environ, ISTHMUS_MPI=vendor, PINGPONG_THREAD=level,
                OMPI_MCA_mpi_yield_when_idle="0", OMPI_ALLOW_RUN_AS_ROOT="1",
                OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


def latency(exe: Path, vendor: str, level: str, iters: int) -> float:
    r = subprocess.run([*launch(vendor), str(exe), "-s", "8", "-i", str(iters), "-x",
                        str(iters // 10)], capture_output=True, text=True,
                       env=env_for(vendor, level), timeout=600)
    m = LINE.search(r.stdout)
    if r.returncode or not m:
        sys.exit(f"thread_cost: {vendor} {level}: exit {r.returncode}\n{r.stdout}{r.stderr}")
    return float(m.group(1)) * 1000.0  # ns


def instructions(exe: Path, vendor: str, level: str, iters: int, work: Path) -> dict:
    """isthmus's self cost per call of each function on the path. Both ranks run the same
    loop; what one rank alone executes (spinning in the start-up barrier while valgrind
    starts the other, which differs from run to run) is not per message: so the smaller
    of the two ranks' counts, per function."""
    out = work / f"cg.{vendor}.{level}"
    for f in work.glob(f"cg.{vendor}.{level}.*"):
        f.unlink()
    subprocess.run([*launch(vendor), "valgrind", "--tool=callgrind",
                    f"--callgrind-out-file={out}.%p", str(exe), "-s", "8", "-i", str(iters),
                    "-x", "100"], capture_output=True, text=True, env=env_for(vendor, level),
                   timeout=1200, check=True)
    calls = iters + 100
    per_rank = []
    for f in sorted(work.glob(f"cg.{vendor}.{level}.*")):
        ann = subprocess.run(["callgrind_annotate", "--inclusive=no", str(f)],
                             capture_output=True, text=True, check=True).stdout
        cost = {}
        for line in ann.splitlines():
            if "libisthmus" not in line and "isthmus-backend" not in line:
                continue
            n = line.split()[0].replace(",", "")
            fn = line.split(":", 1)[1].split()[0] if ":" in line else "?"
            if n.isdigit():
                cost[fn] = int(n) / calls
        per_rank.append(cost)
    if len(per_rank) != 2:
        sys.exit(f"thread_cost: expected 2 callgrind files, got {len(per_rank)}")
    a, b = per_rank
    return {fn: min(a[fn], b.get(fn, 0.0)) for fn in a if b.get(fn, 0.0) > 0}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--iters", type=int, default=20000)
    ap.add_argument("--callgrind-iters", type=int, default=5000)
    ap.add_argument("--vendors", default="openmpi,mpich")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        exe = work / "pp"
        subprocess.run([str(PREFIX / "bin" / "isthmus-cc"), "-O2", "-o", str(exe),
                        str(HERE / "bench" / "pingpong.c")], check=True)
        for vendor in a.vendors.split(","):
            vexe = work / f"pp-{vendor}"
            subprocess.run([f"mpicc.{vendor}", "-O2", "-o", str(vexe),
                            str(HERE / "bench" / "pingpong.c")], check=True)
            runs = {(b, lv): [] for b in ("isthmus", "vendor") for lv in LEVELS}
            for _ in range(a.reps):
                for b, e in (("isthmus", exe), ("vendor", vexe)):
                    for lv in LEVELS:
                        runs[(b, lv)].append(latency(e, vendor, lv, a.iters))
            print(f"== {vendor}: 8-byte one-way latency, 2 ranks on one site, {a.reps} runs "
                  f"of {a.iters} round trips each, alternating")
            for (b, lv), v in runs.items():
                print(f"  {b:8s} {lv:9s} median {statistics.median(v):7.1f} ns  "
                      f"(min {min(v):.1f}, max {max(v):.1f})")
            d = {b: [m - s for s, m in zip(runs[(b, "single")], runs[(b, "multiple")])]
                 for b in ("isthmus", "vendor")}
            for b in ("isthmus", "vendor"):
                print(f"  {b:8s} multiple - single, paired: median {statistics.median(d[b]):+.1f} "
                      f"ns (min {min(d[b]):+.1f}, max {max(d[b]):+.1f})")
            dd = [i - v for i, v in zip(d["isthmus"], d["vendor"])]
            print(f"  isthmus's own part (isthmus diff - vendor diff): median "
                  f"{statistics.median(dd):+.1f} ns (min {min(dd):+.1f}, max {max(dd):+.1f})")
            for lv in LEVELS:
                cost = instructions(exe, vendor, lv, a.callgrind_iters, work)
                path = {fn: cost.get(fn, 0.0) for fn in PATH}
                rest = sum(c for fn, c in cost.items() if fn not in PATH)
                parts = ", ".join(f"{fn} {c:.1f}" for fn, c in path.items())
                print(f"  instructions per send + receive, {lv}: {sum(path.values()):.1f} "
                      f"({parts}); elsewhere in isthmus {rest:.1f} per message (start-up and "
                      f"the barriers, spread over the run)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
