#!/usr/bin/env python3
# bench/multinode_site.py: what a multi-node site costs a cross-site message. On emulated
# clusters (2 sites x 2 nodes, node 0 of each holds the gateway and the WAN address), one
# rank per node, isthmus-bench `latency` (8 B) and `bw` (1 MiB, window 4) from rank 0 of
# site A to the first rank of site B, in two placements, interleaved over --rounds:
#   off-gateway: both ranks on the nodes without the gateway (rank -> vendor TCP to the
#                gateway node -> gateway -> WAN -> gateway -> vendor TCP -> rank)
#   on-gateway:  both ranks on the gateway nodes (the vendor's shared memory to the gateway)
# Reports medians and spreads of each, and the ratio off/on. The job is started from the
# emulated workstation over ssh, as in a deployment. Needs root (namespaces) and sshd.
#
#   python3 bench/multinode_site.py [--link delay=10ms,rate=100mbit] [--rounds 3] [--mpi openmpi]
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))

from isthmus.netemu.clusters import Clusters, vendor_net_args  # noqa: E402
from isthmus.paths import find_prefix  # noqa: E402

BENCHES = {"latency": ["latency", "-m", "8", "-i", "20", "-r", "5"],
           "bw": ["bw", "-m", "1M", "-W", "4", "-i", "4", "-x", "1", "-r", "5"]}


def site_file(bed: Clusters, path: Path, on_gateway: bool, mpi: str) -> Path:
    out = []
    for i, site in enumerate(bed.sites):
        n0, n1 = bed.node(site, 0), bed.node(site, 1)
        first, second = (n0, n1) if on_gateway else (n1, n0)
        out += ["[[site]]", f'name = "{site}"', "ranks = 2", f'mpi = "{mpi}"', 'launch = "ssh"',
                f'ssh_host = "{n0.hostname}"',
                f'nodes = ["{first.hostname}:1", "{second.hostname}:1"]',
                f'gateway_node = "{n0.hostname}"', f'gateway = "{n0.wan_address}:41000"',
                f"mpirun_args = {json.dumps(vendor_net_args(mpi, f'10.78.{i}.0/24'))}", ""]
    path.write_text("\n".join(out))
    return path


def measure(bed: Clusters, sf: Path, bench: list[str], link: str) -> dict:
    exe = find_prefix().root / "bin" / "isthmus-bench"
    cmd = [sys.executable, "-m", "isthmus", "run", "--site-file", str(sf), "--timeout", "240",
           str(exe), *bench, "--peer", "2", "--json", "--link", link]
    r = bed.workstation(cmd, capture_output=True, text=True, timeout=300, cwd=str(sf.parent))
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({r.returncode}):\n{(r.stdout + r.stderr)[-3000:]}")
    for line in r.stdout.splitlines():
        body = line.split("] ", 1)[1] if line.startswith("[") and "] " in line else line
        if body.startswith("{"):
            return json.loads(body)
    raise SystemExit(f"no JSON record in the output:\n{r.stdout[-2000:]}")


def main() -> int:
    ap = argparse.ArgumentParser(description="cross-site latency and bandwidth of a multi-node site")
    ap.add_argument("--link", default="delay=10ms,rate=100mbit")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--mpi", default="openmpi", choices=("openmpi", "mpich"))
    ap.add_argument("--json", type=Path, default=None, help="also write the records here")
    a = ap.parse_args()
    results: dict[tuple[str, str], list[float]] = {}
    records = []
    with Clusters(sites=2, nodes_per_site=2, link=a.link, job=f"mn{os.getpid()}") as bed, \
            tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
        files = {p: site_file(bed, Path(tmp) / f"{p}.toml", p == "on-gateway", a.mpi)
                 for p in ("off-gateway", "on-gateway")}
        for rnd in range(a.rounds):
            order = list(files) if rnd % 2 == 0 else list(reversed(files))
            for name, bench in BENCHES.items():
                for placement in order:
                    rec = measure(bed, files[placement], bench, a.link)
                    hosts = rec["config"]["rank_hosts"]
                    results.setdefault((name, placement), []).extend(rec["samples"])
                    records.append({"round": rnd, "bench": name, "placement": placement,
                                    "rank_hosts": hosts, "record": rec})
                    print(f"round {rnd} {name:7s} {placement:11s} median {rec['median']:.3f} "
                          f"{rec['unit']} (ranks 0 and 2 on {hosts[0]}, {hosts[2]})", flush=True)
    print(f"\nlink {a.link}, {a.mpi}, {a.rounds} rounds x 5 repetitions, median (min-max):")
    for name in BENCHES:
        row = {}
        for placement in ("off-gateway", "on-gateway"):
            s = results[(name, placement)]
            row[placement] = statistics.median(s)
            print(f"  {name:7s} {placement:11s} {statistics.median(s):10.3f} ({min(s):.3f}-{max(s):.3f})")
        print(f"  {name:7s} off/on ratio {row['off-gateway'] / row['on-gateway']:.3f}")
    if a.json:
        a.json.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
