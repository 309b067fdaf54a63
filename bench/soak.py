#!/usr/bin/env python3
"""bench/soak.py: a long run under load and faults (issue 23 §6), for BENCHMARKS.md.

2 emulated sites x 4 ranks run tests/mpi/soak.c (all-to-all and allreduce, every byte
checked) for --seconds (600) over a link that loses, reorders and duplicates packets
(--link, default delay=5ms,rate=200mbit,loss=1%,reorder=5%,dup=1%), while site A's link
is cut for --cut seconds (20) at each of --cut-at (a third and two thirds of the run).
Records: the soak's rounds, messages and bytes, bytes found wrong, the gateways' peak
buffered bytes (--stats) and peak resident memory (VmHWM, sampled every second), the
emulator's counters, reconnects, and the job's exit status; as JSON in
bench-results/soak/ and a summary line per item on stdout. Needs root (namespaces).

    sudo bench/soak.py [--seconds 600] [--transport tcp|udp] [--mpi openmpi|mpich]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def build(prefix: Path, out: Path) -> Path:
    exe = out / "soak"
    subprocess.run([str(prefix / "bin" / "isthmus-cc"), "-O2", "-o", str(exe),
                    str(REPO / "tests" / "mpi" / "soak.c")], check=True)
    return exe


def cut(job_pid: int, site: str, at: list[float], seconds: float, log: list, t0: float):
    ns = f"ism-{job_pid}-{site}"
    for when in at:
        time.sleep(max(0.0, t0 + when - time.monotonic()))
        if subprocess.run(["ip", "-n", ns, "link", "set", "ism0", "down"],
                          capture_output=True).returncode != 0:
            log.append(("cut failed", time.monotonic() - t0))
            return
        log.append(("down", round(time.monotonic() - t0, 1)))
        time.sleep(seconds)
        subprocess.run(["ip", "-n", ns, "link", "set", "ism0", "up"], capture_output=True)
        log.append(("up", round(time.monotonic() - t0, 1)))


def gateway_peaks(tag: str, peaks: dict, stop: threading.Event):
    """The largest VmHWM (peak RSS) of each gateway of the job, sampled every second."""
    while not stop.wait(1.0):
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                if tag.encode() not in Path(f"/proc/{pid}/environ").read_bytes() or \
                        b"isthmus-gateway" not in Path(f"/proc/{pid}/cmdline").read_bytes():
                    continue
                m = re.search(r"VmHWM:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text())
            except OSError:
                continue
            if m:
                peaks[pid] = max(peaks.get(pid, 0), int(m.group(1)))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--link", default="delay=5ms,rate=200mbit,loss=1%,reorder=5%,dup=1%")
    ap.add_argument("--cut", type=float, default=20)
    ap.add_argument("--cut-at", type=float, nargs="*")
    ap.add_argument("--transport", default="tcp", choices=["tcp", "udp"])
    ap.add_argument("--mpi", default="openmpi", choices=["openmpi", "mpich"])
    ap.add_argument("--ranks-per-site", default="4,4")
    a = ap.parse_args()
    cut_at = a.cut_at if a.cut_at is not None else [a.seconds / 3, 2 * a.seconds / 3]
    prefix = Path(os.environ.get("ISTHMUS_PREFIX", REPO / "_install"))
    out = REPO / "bench-results" / "soak" / time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    out.mkdir(parents=True, exist_ok=True)
    exe = build(prefix, out)
    n = sum(int(x) for x in a.ranks_per_site.split(","))
    tag = f"soak-{os.getpid()}"
    cmd = [sys.executable, "-m", "isthmus", "run", "-n", str(n), "--ranks-per-site",
           a.ranks_per_site, "--mpi", a.mpi, "--transport", a.transport, "--wan", a.link,
           "--stats", "--timeout", str(int(a.seconds + 300)), "--", str(exe), str(a.seconds)]
    print("[soak] " + " ".join(cmd), file=sys.stderr)
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env={**os.environ, "ISTHMUS_TEST_TAG": tag})
    log: list = []
    peaks: dict = {}
    stop = threading.Event()
    threading.Thread(target=cut, args=(p.pid, "A", cut_at, a.cut, log, t0), daemon=True).start()
    threading.Thread(target=gateway_peaks, args=(tag, peaks, stop), daemon=True).start()

    def progress():
        while not stop.wait(30):
            print(f"[soak] {time.monotonic() - t0:.0f} s of {a.seconds:.0f}; link events {log}",
                  file=sys.stderr)

    threading.Thread(target=progress, daemon=True).start()
    so, se = p.communicate()
    stop.set()
    (out / "stdout.txt").write_text(so)
    (out / "stderr.txt").write_text(se)
    m = re.search(r"soak: (\d+) rounds in ([\d.]+) s; (\d+) messages, (\d+) bytes handed to "
                  r"MPI; (\d+) wrong", so)
    buffered = [int(x) for x in re.findall(r"peak buffered (\d+) bytes", se)]
    reconnects = [int(x) for x in re.findall(r"(\d+) reconnects", se)]
    res = {
        "command": " ".join(cmd), "exit": p.returncode, "link_events": log,
        "rounds": int(m.group(1)) if m else None, "seconds": float(m.group(2)) if m else None,
        "messages": int(m.group(3)) if m else None, "bytes": int(m.group(4)) if m else None,
        "wrong": int(m.group(5)) if m else None,
        "soak_ok": "soak: OK" in so,
        "gateway_peak_buffered_bytes": buffered,
        "gateway_peak_rss_kb": sorted(peaks.values()),
        "reconnects": reconnects,
        "emulator": re.findall(r"isthmus stats: link .*", se),
        "lost_lines": [ln for ln in se.splitlines() if "lost (" in ln],
    }
    (out / "result.json").write_text(json.dumps(res, indent=1))
    for k, v in res.items():
        print(f"{k}: {v}")
    print(f"[soak] results in {out}", file=sys.stderr)
    return 0 if p.returncode == 0 and res["soak_ok"] and res["wrong"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
