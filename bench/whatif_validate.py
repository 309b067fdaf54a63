#!/usr/bin/env python3
# bench/whatif_validate.py: how close `isthmus whatif` comes to measured runs (issue 32 §3:
# the goal is within 15 %). For each case, --reps times: run examples/halo.c traced across
# 2 emulated sites (`isthmus run --wan SPEC --trace`), then replay that same trace with
# `isthmus whatif` on a platform file with the same link, and compare the predicted time
# with the traced run's own (first call after MPI_Init to MPI_Finalize, slowest rank; the
# prediction covers the same span). Each replay predicts the run it was traced from, so
# the ratio per repetition is the error; the summary gives its median and min..max, for the
# whole run and for halo's phase 2 alone (its second half: connections warm, no
# communicator being created).
# Cases: small halo messages (4 KiB, eager, latency-bound) and large ones (128 KiB,
# rendezvous, bandwidth-bound). JSON lines go to bench/results/whatif-<ts>.jsonl.
#
#   python3 bench/whatif_validate.py [--reps 5] [--link delay=10ms,rate=100mbit]
#                                    [--prefix _install]
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CASES = {"halo-4KiB": (20, 512), "halo-128KiB": (10, 16384)}  # iterations, edge (doubles)


def sh(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode:
        sys.exit(f"whatif_validate: {' '.join(cmd[:6])} ... failed (exit {r.returncode}):\n"
                 f"{(r.stdout + r.stderr)[-2000:]}")
    return r


def main() -> int:
    ap = argparse.ArgumentParser(description="isthmus whatif against measured halo runs")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--link", default="delay=10ms,rate=100mbit")
    ap.add_argument("--prefix", default=str(REPO / "_install"))
    args = ap.parse_args()
    env = {**os.environ, "ISTHMUS_PREFIX": args.prefix}
    isthmus = [sys.executable, "-m", "isthmus"]
    out_dir = REPO / "bench" / "results"
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / f"whatif-{dt.datetime.now():%Y%m%d-%H%M%S}.jsonl"
    ratios: dict[str, list[float]] = {c: [] for c in CASES}
    ratios2: dict[str, list[float]] = {c: [] for c in CASES}
    with tempfile.TemporaryDirectory(prefix="whatif-validate-") as tmp, open(out, "w") as f:
        work = Path(tmp)
        exe = work / "halo"
        sh([str(Path(args.prefix) / "bin" / "isthmus-cc"), "-O2", "-o", str(exe),
            str(REPO / "examples" / "halo.c")], env=env)
        links = work / "links.toml"
        links.write_text(f'sites = 2\ndefault = "{args.link}"\n')
        for rep in range(args.reps):
            for case, (iters, edge) in CASES.items():
                trace = work / f"{case}-{rep}"
                sh(isthmus + ["run", "-n", "4", "--wan", args.link, "--trace", str(trace),
                              "--", str(exe), str(iters), str(edge)], env=env)
                r = sh(isthmus + ["whatif", str(trace), "--platform", str(links), "--json"],
                       env=env)
                p = json.loads(r.stdout)
                ratio = p["predicted_s"] / p["traced_s"]
                ratios[case].append(ratio)
                ph2 = next(x for x in p["phases"] if x["phase"] == 2)
                ratio2 = ph2["time_s"] / ph2["traced_s"]
                ratios2[case].append(ratio2)
                row = {"case": case, "rep": rep, "link": args.link, "iterations": iters,
                       "edge_doubles": edge, "measured_s": p["traced_s"],
                       "predicted_s": p["predicted_s"], "no_wan_s": p["no_wan_s"],
                       "ratio": ratio, "phase2_measured_s": ph2["traced_s"],
                       "phase2_predicted_s": ph2["time_s"], "phase2_ratio": ratio2,
                       "simulation_wall_s": p["simulation_wall_s"]}
                f.write(json.dumps(row) + "\n")
                f.flush()
                print(f"{case} rep {rep}: measured {p['traced_s'] * 1e3:.1f} ms, predicted "
                      f"{p['predicted_s'] * 1e3:.1f} ms, ratio {ratio:.3f}; phase 2 "
                      f"{ph2['traced_s'] * 1e3:.1f} / {ph2['time_s'] * 1e3:.1f} ms, ratio "
                      f"{ratio2:.3f}", flush=True)
    for case in CASES:
        for what, rs in (("run", ratios[case]), ("phase 2", ratios2[case])):
            print(f"{case} {what}: predicted/measured median {statistics.median(rs):.3f} "
                  f"(min {min(rs):.3f}, max {max(rs):.3f}, {len(rs)} runs)")
    print(f"rows: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
