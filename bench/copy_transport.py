#!/usr/bin/env python3
# bench/copy_transport.py: `isthmus copy` over the reliable-UDP transport against the same
# copy over kernel TCP (the system's default congestion control), on one emulated link,
# repetitions interleaved (udp, tcp, udp, tcp, ...) in one run so both see the same
# machine. Each repetition puts one random file from site A into a server in site B and
# times the whole command (connection, handshake, data, SHA-256 check, rename). Prints
# medians, spreads and the ratio, the load average before and after; appends JSON lines
# to bench/results/copy_transport.jsonl. Needs root (network namespaces).
#
#   python3 bench/copy_transport.py [--link delay=150ms,rate=100mbit,loss=0.1%]
#                                   [--size-mb 200] [--reps 3] [--tcp-window BYTES]
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))

from isthmus.linkprobe.endpoints import Credentials  # noqa: E402
from isthmus.netemu.emulation import Emulation  # noqa: E402
from isthmus.paths import find_prefix  # noqa: E402

PORT = 41994


def one(emu, exe, creds, src, transport, link_mbit, tcp_window=None):
    extra = ["--window", tcp_window] if transport == "tcp" and tcp_window else []
    t0 = time.monotonic()
    r = emu.exec("A", [exe, "put", str(src), f"{emu.address('B')}:{PORT}", f"{transport}.bin",
                       *creds.args(), "--transport", transport, "--quiet", "--timeout", "60", *extra],
                 capture_output=True, text=True, timeout=1800)
    wall = time.monotonic() - t0
    size = src.stat().st_size
    rec = {"transport": transport, "ok": r.returncode == 0, "seconds": wall,
           "mbit_s": size * 8 / wall / 1e6, "share": size * 8 / wall / 1e6 / link_mbit,
           "summary": r.stdout.strip(), "error": r.stderr.strip()[-300:] if r.returncode else ""}
    return rec


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--link", default="delay=150ms,rate=100mbit,loss=0.1%")
    ap.add_argument("--size-mb", type=int, default=200)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--tcp-window", default=None,
                    help="socket buffers of the TCP copies (isthmus-copy --window), e.g. 16m")
    a = ap.parse_args()
    exe = str(find_prefix().root / "bin" / "isthmus-copy")
    rate = [p for p in a.link.split(",") if p.startswith("rate=")][0][5:]
    link_mbit = float(rate.rstrip("mbit")) * (1000 if rate.endswith("gbit") else 1)
    creds = Credentials()
    out = REPO / "bench" / "results" / "copy_transport.jsonl"
    out.parent.mkdir(exist_ok=True)
    records = []
    load0 = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="isthmus-copy-bench-") as tmp:
        src = Path(tmp) / "src.bin"
        with open(src, "wb") as f:
            for _ in range(a.size_mb):
                f.write(os.urandom(1 << 20))
        served = Path(tmp) / "served"
        served.mkdir()
        with Emulation(sites=2, link=a.link, job="bCopy") as emu:
            srv = emu.popen("B", [exe, "serve", str(served), "--listen",
                                  f"{emu.address('B')}:{PORT}", *creds.args()],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            if not srv.stdout.readline().startswith("listening"):
                print("the copy server did not start", file=sys.stderr)
                return 1
            for rep in range(a.reps):
                for transport in ("udp", "tcp"):
                    rec = one(emu, exe, creds, src, transport, link_mbit, a.tcp_window)
                    rec.update(rep=rep, link=a.link, size_mb=a.size_mb, load1=os.getloadavg()[0],
                               tcp_window=a.tcp_window)
                    records.append(rec)
                    print(f"rep {rep} {transport}: {rec['seconds']:.2f} s, {rec['mbit_s']:.1f} Mbit/s"
                          + ("" if rec["ok"] else f" FAILED: {rec['error']}"), flush=True)
    creds.close()
    load1 = os.getloadavg()
    meta = {"machine": f"{platform.node()} {platform.processor() or platform.machine()}, "
                       f"{os.cpu_count()} cores, kernel {platform.release()}",
            "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
            "load_before": load0, "load_after": load1,
            "tcp_cc": Path("/proc/sys/net/ipv4/tcp_congestion_control").read_text().strip()}
    with open(out, "a") as f:
        for r in records:
            f.write(json.dumps({**meta, **r}) + "\n")
    print(f"{meta['machine']}; link {a.link}; {a.size_mb} MiB; tcp cc {meta['tcp_cc']}, "
          f"window {a.tcp_window or 'autotuned'}; "
          f"load {load0[0]:.2f} before, {load1[0]:.2f} after")
    med = {}
    for t in ("udp", "tcp"):
        xs = [r["seconds"] for r in records if r["transport"] == t and r["ok"]]
        if not xs:
            print(f"{t}: every repetition failed")
            continue
        med[t] = statistics.median(xs)
        print(f"{t}: median {med[t]:.2f} s ({a.size_mb * 8 * 1.048576 / med[t]:.1f} Mbit/s), "
              f"range {min(xs):.2f}-{max(xs):.2f} s over {len(xs)} of {a.reps}")
    if len(med) == 2:
        print(f"tcp/udp time ratio: {med['tcp'] / med['udp']:.2f}")
    return 0 if all(r["ok"] for r in records) else 1


if __name__ == "__main__":
    sys.exit(main())
