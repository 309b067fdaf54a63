#!/usr/bin/env python3
# bench/wan_transport.py: issue 4's "done when" figures, measured in one run on ONE emulated
# link (default: 20 ms RTT, 1 Gbit/s, 0.01% loss): raw TCP on the link (isthmus-linkprobe:
# RTT/2 and one stream's goodput), isthmus across the two sites (bench/wan_stream.c: 8-byte
# ping-pong latency and 64 MiB messages streamed one way), and the vendor baseline (the same
# program built with mpicc.openmpi, as ONE Open MPI job whose two ranks sit in the two
# namespaces: its TCP BTL crosses the same emulated link). Repetitions are interleaved;
# the report gives medians, spread, and per-repetition ratios.
#
#   python3 bench/wan_transport.py [--reps 5] [--link delay=10ms,rate=1gbit,loss=0.01%]
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

from isthmus.launch.layout import embedded_layout  # noqa: E402
from isthmus.launch.job import run_job  # noqa: E402
from isthmus.launch.transport import link_hints  # noqa: E402
from isthmus.linkprobe.endpoints import Credentials, Endpoints  # noqa: E402
from isthmus.netemu.emulation import Emulation  # noqa: E402
from isthmus.netemu.matrix import uniform  # noqa: E402
from isthmus.netemu.spec import parse_link_spec  # noqa: E402
from isthmus.netemu.wanjob import namespaced_builder, wan_layout  # noqa: E402
from isthmus.paths import find_prefix  # noqa: E402

MSG = 64 << 20
AGENT = """#!/bin/sh
# plm_rsh_agent for the vendor baseline: "<host> <command...>" with host site-<X> runs the
# command in namespace <prefix>-<X>, under its own host name (so ranks of different sites
# never use shared memory with each other)
host=$1; shift
exec ip netns exec "{prefix}-${{host#site-}}" unshare -u /bin/sh -c "hostname $host; exec $*"
"""


def capture_stdout(fn):
    """Run fn() with file descriptor 1 redirected to a file; (its result, the text)."""
    with tempfile.TemporaryFile() as f:
        sys.stdout.flush()
        saved = os.dup(1)
        os.dup2(f.fileno(), 1)
        try:
            rc = fn()
        finally:
            sys.stdout.flush()
            os.dup2(saved, 1)
            os.close(saved)
        f.seek(0)
        return rc, f.read().decode(errors="replace")


def parse_value(text: str, mode: str) -> float:
    m = re.search(rf"wan_stream mode={mode} .*value=([\d.]+)", text)
    if not m:
        raise RuntimeError(f"no {mode} result in output:\n{text[-2000:]}")
    return float(m.group(1))


def build(prefix, workdir: Path) -> tuple[Path, Path]:
    src = REPO / "bench" / "wan_stream.c"
    ism, ompi = workdir / "wan_stream.isthmus", workdir / "wan_stream.openmpi"
    subprocess.run([str(prefix.cc), "-O2", "-o", str(ism), str(src)], check=True)
    subprocess.run(["mpicc.openmpi", "-O2", "-o", str(ompi), str(src)], check=True)
    return ism, ompi


def isthmus_job(emu, prefix, exe, args, env) -> str:
    layout = wan_layout(embedded_layout(2, sites=2, mpi="openmpi"), emu)
    rc, out = capture_stdout(lambda: run_job(layout, str(exe), args, prefix=prefix, timeout=600,
                                             base_env={**os.environ, **env},
                                             command_builder=namespaced_builder(emu)))
    if rc != 0:
        raise RuntimeError(f"isthmus job failed ({rc}):\n{out[-2000:]}")
    return out


def vendor_job(emu, workdir: Path, exe, args) -> str:
    agent = workdir / "agent.sh"
    agent.write_text(AGENT.format(prefix=emu.namespace(0).rsplit("-", 1)[0]))
    agent.chmod(0o755)
    hosts = workdir / "hosts"
    hosts.write_text("localhost slots=1\nsite-B slots=1\n")
    net = "10.77.0.0/24"
    cmd = emu.command(0, ["mpirun.openmpi", "--allow-run-as-root", "--oversubscribe", "-np", "2",
                          "--hostfile", str(hosts), "--mca", "plm_rsh_agent", str(agent),
                          "--mca", "plm_rsh_no_tree_spawn", "1",
                          "--mca", "oob_tcp_if_include", net, "--mca", "btl_tcp_if_include", net,
                          "--mca", "btl", "self,vader,tcp", str(exe), *args])
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise RuntimeError(f"vendor baseline failed ({r.returncode}):\n{r.stdout[-1000:]}{r.stderr[-2000:]}")
    return r.stdout


def summary(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return None
    return {"n": len(xs), "median": statistics.median(xs), "min": min(xs), "max": max(xs)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--link", default="delay=10ms,rate=1gbit,loss=0.01%")
    ap.add_argument("--lat-iters", type=int, default=200)
    ap.add_argument("--count", type=int, default=4, help="64 MiB messages per bandwidth run")
    ap.add_argument("--out", default=str(REPO / "bench" / "results"))
    a = ap.parse_args()
    prefix = find_prefix()
    spec = parse_link_spec(a.link)
    matrix = uniform(2, spec)
    hints = link_hints(matrix)
    line_mbit = spec.rate * 8 / 1e6
    work = Path(tempfile.mkdtemp(prefix="isthmus-wanbench-"))
    ism, ompi = build(prefix, work)
    rows = []
    t_start = time.time()
    with Emulation(matrix=matrix) as emu:
        creds = Credentials()
        ep = Endpoints(str(prefix.root / "bin" / "isthmus-linkprobe"), creds,
                       f"{emu.address(1)}:41999", client_prefix=emu.command(0, []),
                       server_prefix=emu.command(1, []), label="A -> B")
        ep.start_server()
        try:
            for rep in range(a.reps):
                row = {"rep": rep, "load1": os.getloadavg()[0]}
                rtt = ep.run("rtt", ["--count", "200"], timeout=120)
                row["tcp_half_rtt_us"] = rtt["median_us"] / 2
                row["tcp_half_rtt_min_us"] = rtt["min_us"] / 2
                tput = ep.run("tput", ["--duration", "6", "--omit", "2"], timeout=120)
                row["tcp_1stream_mbit"] = tput["mbit_s"]
                out = isthmus_job(emu, prefix, ism, ["lat", str(a.lat_iters), "20"], hints)
                row["isthmus_lat_us"] = parse_value(out, "lat")
                out = isthmus_job(emu, prefix, ism, ["bw", str(MSG), str(a.count), "1"], hints)
                row["isthmus_bw_mbit"] = parse_value(out, "bw") * 8
                out = vendor_job(emu, work, ompi, ["lat", str(a.lat_iters), "20"])
                row["vendor_lat_us"] = parse_value(out, "lat")
                out = vendor_job(emu, work, ompi, ["bw", str(MSG), str(a.count), "1"])
                row["vendor_bw_mbit"] = parse_value(out, "bw") * 8
                rows.append(row)
                print(json.dumps(row), flush=True)
        finally:
            ep.stop_server()
            creds.close()
    res = {
        "link": spec.describe(), "hints": hints, "reps": a.reps, "started": t_start,
        "minutes": (time.time() - t_start) / 60, "host": os.uname().nodename,
        "rows": rows,
        "lat_over_half_rtt": summary([r["isthmus_lat_us"] / r["tcp_half_rtt_us"] for r in rows]),
        "lat_vs_vendor": summary([r["isthmus_lat_us"] / r["vendor_lat_us"] for r in rows]),
        "bw_share_of_link": summary([r["isthmus_bw_mbit"] / line_mbit for r in rows]),
        "bw_vs_vendor": summary([r["isthmus_bw_mbit"] / r["vendor_bw_mbit"] for r in rows]),
        "vendor_bw_share": summary([r["vendor_bw_mbit"] / line_mbit for r in rows]),
        "tcp_bw_share": summary([r["tcp_1stream_mbit"] / line_mbit for r in rows]),
    }
    for k in ("tcp_half_rtt_us", "isthmus_lat_us", "vendor_lat_us", "tcp_1stream_mbit",
              "isthmus_bw_mbit", "vendor_bw_mbit", "load1"):
        res[k] = summary([r[k] for r in rows])
    Path(a.out).mkdir(parents=True, exist_ok=True)
    path = Path(a.out) / f"wan-transport-{time.strftime('%Y%m%dT%H%M%S')}.json"
    path.write_text(json.dumps(res, indent=1))
    print(json.dumps({k: v for k, v in res.items() if k != "rows"}, indent=1))
    print(f"raw data: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
