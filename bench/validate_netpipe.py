#!/usr/bin/env python3
"""Check isthmus-bench against an independent measurement: NetPIPE 3.7.2 (Debian packages
netpipe-openmpi and netpipe-mpich2), for the same vendor MPI and sizes.

Why NetPIPE: the OSU Micro-Benchmarks and the Intel MPI Benchmarks are not packaged by
Debian (bookworm's Sources list has neither, nor a package bundling them) and this
machine has no network beyond the package registries. NetPIPE is packaged, built against
each vendor MPI, and times the same ping-pong as osu_latency.

What is compared, per vendor and size, in interleaved repetitions (every repetition runs
each tool once, alternating which goes first):
  latency  NetPIPE `NP<vendor> -l S -u S -p 0 -n N`: one-way time, the best of its 7
           trials of N round trips. isthmus-bench `latency -m S -i N -r 7`: the lowest of
           its 7 samples of N round trips (the same best-of-7 definition), and its median.
  stream   NetPIPE `-s` (N back-to-back blocking sends one way, then one reply) against
           isthmus-bench `bw -W N -i 1 -r 7` (N back-to-back MPI_Isend, then an ack) and
           the project's bench/pingpong.c --bw (window 64, ack per window). Best of 7.
  buffers  The definitions differ in one place that matters on shared memory: NetPIPE (in
           its default "cache" mode) sends from and receives into ONE buffer, while
           osu_latency and isthmus-bench send from one buffer and receive into another.
           bench/pingpong.c's latency mode also uses one buffer, so on this host it is run
           beside them (best of 7 launches) as the control for NetPIPE's definition.
The ratio isthmus-bench / NetPIPE is taken per repetition; its median over repetitions
and its range are reported.

--wan SPEC runs both tools as one Open MPI job across 2 sites joined by the link emulator
(root; the same launcher as `isthmus bench`'s cross-site vendor baseline), where the link,
not the shared machine's scheduling, sets the time scale.
"""
from __future__ import annotations

import argparse
import datetime as _dt
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

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
VENDORS = {
    "openmpi": {"np": "NPopenmpi", "launch": ["mpirun.openmpi", "--oversubscribe", "-np", "2"],
                "cc": "mpicc.openmpi", "label": "Open MPI"},
    "mpich": {"np": "NPmpich2", "launch": ["mpiexec.mpich", "-np", "2"], "cc": "mpicc.mpich",
              "label": "MPICH"},
}
LAT_SIZES = {8: 4000, 1024: 4000, 65536: 400, 1048576: 40}
STREAM_SIZES = {65536: 256, 1048576: 64}
NP_LINE = re.compile(r"^\s*(\d+)\s+([0-9.eE+-]+)\s+([0-9.eE+-]+)\s*$")


WAN = {"link": None}


def run(cmd, env, timeout=300) -> str:
    """Run an MPI command: as given (the vendor launcher on this host), or with --wan as one
    Open MPI job of 2 ranks across 2 emulated sites (cmd minus its launcher prefix)."""
    if WAN["link"]:
        sys.path.insert(0, str(ROOT / "python"))
        from isthmus.bench.vendorwan import run_across_sites

        argv = cmd[len(VENDORS["openmpi"]["launch"]):]
        out, err, code, timed_out, shown = run_across_sites(2, 2, WAN["link"], argv, env, timeout)
        if code != 0 or timed_out:
            raise RuntimeError(f"{shown} failed ({code}): {err[-800:]}")
        return out
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr[-800:]}")
    return r.stdout


def netpipe(vendor, size, n, stream, env, tmp) -> float:
    """One-way time in us (latency) or MB/s (stream), best of NetPIPE's 7 trials."""
    out = Path(tmp) / "np.out"
    cmd = [*VENDORS[vendor]["launch"], VENDORS[vendor]["np"], "-l", str(size), "-u", str(size), "-p", "0",
           "-n", str(n), "-o", str(out)] + (["-s"] if stream else [])
    run(cmd, env)
    for line in out.read_text().splitlines():
        m = NP_LINE.match(line)
        if m and int(m.group(1)) == size:
            mbps, secs = float(m.group(2)), float(m.group(3))
            return mbps / 8.0 if stream else secs * 1e6
    raise RuntimeError(f"no result for {size} bytes in {out}")


def ibench(vendor, args, env, prefix) -> dict:
    exe = Path(prefix) / "bin" / f"isthmus-bench.{vendor}"
    out = run([*VENDORS[vendor]["launch"], str(exe), *args, "--json"], env)
    recs = [json.loads(l) for l in out.splitlines() if l.startswith("{")]
    if len(recs) != 1 or recs[0]["status"] != "ok":
        raise RuntimeError(f"isthmus-bench {args}: unexpected output {out[-500:]}")
    return recs[0]


def pingpong_lat(vendor, size, iters, env, exe) -> float:
    """bench/pingpong.c latency (one buffer, as NetPIPE): the best of 7 launches, in us."""
    best = float("inf")
    for _ in range(7):
        out = run([*VENDORS[vendor]["launch"], str(exe), "-s", str(size), "-i", str(iters),
                   "-x", str(max(1, iters // 10))], env)
        best = min(best, float(re.search(r"value=([0-9.eE+-]+)", out).group(1)))
    return best


def pingpong_bw(vendor, size, iters, env, exe) -> float:
    out = run([*VENDORS[vendor]["launch"], str(exe), "-s", str(size), "--bw", "-i", str(iters), "-x", "1"], env)
    m = re.search(r"value=([0-9.eE+-]+)", out)
    return float(m.group(1))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--prefix", default=str(ROOT / "_install"))
    ap.add_argument("--vendors", default="openmpi,mpich")
    ap.add_argument("--out", default=None)
    ap.add_argument("--wan", default=None, metavar="SPEC",
                    help="run across 2 emulated sites with this link (Open MPI only), e.g. delay=5ms,rate=100mbit")
    opt = ap.parse_args()
    global LAT_SIZES, STREAM_SIZES
    if opt.wan:
        WAN["link"] = opt.wan
        opt.vendors = "openmpi"
        LAT_SIZES = {8: 20, 1024: 20, 65536: 10}
        STREAM_SIZES = {262144: 64}
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S")
    out = Path(opt.out or HERE / "results" / f"validate-netpipe-{stamp}.jsonl")
    out.parent.mkdir(parents=True, exist_ok=True)
    vendors = opt.vendors.split(",")
    for v in vendors:
        if shutil.which(VENDORS[v]["np"]) is None:
            print(f"{VENDORS[v]['np']} missing: apt install netpipe-openmpi netpipe-mpich2", file=sys.stderr)
            return 2
    t0 = time.time()
    rows = []
    with tempfile.TemporaryDirectory() as tmp, open(out, "w") as log:
        pp = {}
        for v in vendors:
            pp[v] = Path(tmp) / f"pingpong-{v}"
            r = subprocess.run([VENDORS[v]["cc"], "-O2", "-o", str(pp[v]), str(HERE / "pingpong.c")],
                               capture_output=True, text=True)
            if r.returncode != 0:
                raise RuntimeError(f"building bench/pingpong.c failed: {r.stderr}")
        for rep in range(opt.reps):
            for v in vendors:
                for size, n in LAT_SIZES.items():
                    order = [0, 1] if (rep + size) % 2 == 0 else [1, 0]
                    got = {}
                    for which in order:
                        if which == 0:
                            got["netpipe"] = netpipe(v, size, n, False, env, tmp)
                        else:
                            rec = ibench(v, ["latency", "-m", str(size), "-i", str(n), "-r", "7",
                                             "-x", str(max(1, n // 10))], env, opt.prefix)
                            got["bench_min"], got["bench_median"] = rec["min"], rec["median"]
                    if not WAN["link"]:
                        got["pingpong_c"] = pingpong_lat(v, size, n, env, pp[v])
                    row = {"rep": rep, "vendor": v, "kind": "latency", "size": size, "n": n, **got,
                           "load": os.getloadavg()[0]}
                    rows.append(row)
                    log.write(json.dumps(row) + "\n")
                for size, n in STREAM_SIZES.items():
                    got = {"netpipe": netpipe(v, size, n, True, env, tmp)}
                    rec = ibench(v, ["bw", "-m", str(size), "-W", str(n), "-i", "1", "-r", "7", "-x", "1"],
                                 env, opt.prefix)
                    got["bench_min"], got["bench_median"] = rec["max"], rec["median"]  # best = max for MB/s
                    got["pingpong_c"] = pingpong_bw(v, size, max(1, n // 64) * 7, env, pp[v])
                    row = {"rep": rep, "vendor": v, "kind": "stream", "size": size, "n": n, **got,
                           "load": os.getloadavg()[0]}
                    rows.append(row)
                    log.write(json.dumps(row) + "\n")
            print(f"repetition {rep + 1}/{opt.reps} done ({time.time() - t0:.0f} s)", file=sys.stderr)
    where = f"one Open MPI job across 2 emulated sites, link {opt.wan}" if opt.wan else "2 ranks on this host"
    print(f"{where}. Measured {_dt.datetime.now(_dt.timezone.utc):%Y-%m-%d %H:%M} UTC, {opt.reps} interleaved repetitions, "
          f"{(time.time() - t0) / 60:.1f} min; 1-min load average during the runs: "
          f"{min(r['load'] for r in rows):.1f}-{max(r['load'] for r in rows):.1f} (2 CPUs). Raw: {out}\n")
    print("| vendor | test | size | NetPIPE (best of 7) | isthmus-bench best of 7 | ratio best/NetPIPE: median (min-max) | isthmus-bench median sample | within 5 %? |")
    print("|---|---|---:|---:|---:|---|---:|---|")
    keys = sorted({(r["vendor"], r["kind"], r["size"]) for r in rows}, key=lambda k: (k[0], k[1], k[2]))
    for v, kind, size in keys:
        rs = [r for r in rows if (r["vendor"], r["kind"], r["size"]) == (v, kind, size)]
        ratios = [r["bench_min"] / r["netpipe"] for r in rs]
        med = statistics.median(ratios)
        unit = "us" if kind == "latency" else "MB/s"
        print(f"| {VENDORS[v]['label']} | {kind} | {size} | {statistics.median(r['netpipe'] for r in rs):.3g} {unit} | "
              f"{statistics.median(r['bench_min'] for r in rs):.3g} {unit} | {med:.3f} ({min(ratios):.3f}-{max(ratios):.3f}) | "
              f"{statistics.median(r['bench_median'] for r in rs):.3g} {unit} | {'yes' if abs(med - 1) <= 0.05 else 'no'} |")
        if "pingpong_c" in rs[0]:
            pr = [r["pingpong_c"] / r["netpipe"] for r in rs]
            what = "stream: bench/pingpong.c --bw" if kind == "stream" else "latency: bench/pingpong.c (one buffer)"
            print(f"| {VENDORS[v]['label']} | {what} | {size} | | "
                  f"{statistics.median(r['pingpong_c'] for r in rs):.3g} {unit} | {statistics.median(pr):.3f} "
                  f"({min(pr):.3f}-{max(pr):.3f}) | | {'yes' if abs(statistics.median(pr) - 1) <= 0.05 else 'no'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
