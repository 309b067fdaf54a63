#!/usr/bin/env python3
# bench/tcp_streams_crypto.py: what the link cipher changes for the gateways' TCP streams
# themselves, on one emulated link (bench/notebook/link-crypto.md, run 19: cubic under
# random loss). Streams --count (4) x --size-mib (16) MiB from site A to site B (bench/wan_stream.c) with
# `--wan-crypto aead` and `none` alternately (the order flips every repetition), and keeps
# each data stream's kernel counters from `--stats` (TCP_INFO: bytes sent and
# retransmitted, time limited by the send buffer and by the receive window). Prints per
# repetition the rate, the paired ratio, the mean retransmission share, the bytes of the
# busiest and the idlest stream, then medians, means and the difference of the means in
# standard errors. JSON lines (with the raw --stats lines) go to --out. Needs root.
#
#   python3 bench/tcp_streams_crypto.py [--link delay=300ms,rate=100mbit,loss=0.1%]
#                                       [--cc cubic] [--reps 10] [--count 4] [--size-mib 16] [--streams N]
#                                       [--out FILE]
# --streams sets ISTHMUS_WAN_STREAMS (default: the gateways' own, 8 here).
from __future__ import annotations

import argparse
import json
import math
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

from isthmus.paths import find_prefix  # noqa: E402

VALUE = re.compile(r"value=([\d.]+) unit=MB/s")
STREAM = re.compile(r"site A gateway 0 -> site B gateway 0: stream (\d+): tcp busy (\d+) ms "
                    r"\(limited by the receive window ([\d.]+) %, by the send buffer ([\d.]+) %\), "
                    r"transmitted ([\d.]+) MB, retransmitted ([\d.]+) % of bytes")


def one(exe: Path, link: str, cc: str, crypto: str, count: int, streams: int, mib: int) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ISTHMUS_WAN_")}
    env["ISTHMUS_WAN_CRYPTO"] = crypto
    if streams:
        env["ISTHMUS_WAN_STREAMS"] = str(streams)
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "isthmus", "run", "-n", "2", "--mpi", "openmpi",
                        "--wan", link, "--transport", "tcp", "--wan-cc", cc, "--stats",
                        "--timeout", "300", "--", str(exe), "bw", str(mib << 20), str(count), "1"],
                       capture_output=True, text=True, timeout=400, env=env)
    m = VALUE.search(r.stdout)
    streams = [s for s in (STREAM.search(ln) for ln in r.stderr.splitlines()) if s]
    return {"crypto": crypto, "ok": r.returncode == 0 and m is not None,
            "value": float(m[1]) if m else 0.0, "wall_s": time.monotonic() - t0,
            "load1": os.getloadavg()[0],
            "mb": [float(s[5]) for s in streams], "rtx_pct": [float(s[6]) for s in streams],
            "sndbuf_pct": [float(s[4]) for s in streams], "rwnd_pct": [float(s[3]) for s in streams],
            "stats": [ln for ln in r.stderr.splitlines() if ": tcp busy" in ln]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--link", default="delay=300ms,rate=100mbit,loss=0.1%")
    ap.add_argument("--cc", default="cubic")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--count", type=int, default=4, help="messages per run (and one warm-up)")
    ap.add_argument("--size-mib", type=int, default=16, help="MiB per message")
    ap.add_argument("--streams", type=int, default=0, help="ISTHMUS_WAN_STREAMS (0: default)")
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "tcp_streams_crypto.jsonl"))
    a = ap.parse_args()
    prefix = find_prefix()
    exe = Path(tempfile.mkdtemp(prefix="tcpsc-")) / "wan_stream"
    subprocess.run([str(prefix.cc), "-O2", "-o", str(exe), str(REPO / "bench" / "wan_stream.c")],
                   check=True)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    runs = {"aead": [], "none": []}
    paired = []
    with open(a.out, "a") as out:
        for rep in range(a.reps):
            got = {}
            for crypto in (("aead", "none") if rep % 2 == 0 else ("none", "aead")):
                x = one(exe, a.link, a.cc, crypto, a.count, a.streams, a.size_mib)
                x.update(rep=rep, link=a.link, cc=a.cc, count=a.count, streams=a.streams, mib=a.size_mib)
                out.write(json.dumps(x) + "\n")
                out.flush()
                if not x["ok"] or not x["mb"]:
                    print(f"rep {rep} {crypto}: FAILED")
                    continue
                got[crypto] = x
                runs[crypto].append(x)
                print(f"rep {rep} {crypto:4}: {x['value']:5.2f} MB/s, retransmitted "
                      f"{statistics.mean(x['rtx_pct']):.3f} %, streams {min(x['mb']):.1f}-"
                      f"{max(x['mb']):.1f} MB, send-buffer limited {max(x['sndbuf_pct']):.1f} %, "
                      f"load {x['load1']:.1f}", flush=True)
            if len(got) == 2:
                paired.append(got["aead"]["value"] / got["none"]["value"])
    if not paired or len(runs["aead"]) < 2 or len(runs["none"]) < 2:
        return 1
    print(f"\n# {a.cc} over {a.link}, {a.reps} repetitions, aead and none alternating")
    for c, xs in runs.items():
        v = [x["value"] for x in xs]
        print(f"{c:4}: median {statistics.median(v):.2f} MB/s ({min(v):.2f}-{max(v):.2f}), mean "
              f"{statistics.mean(v):.2f} sd {statistics.stdev(v):.2f}; retransmitted "
              f"{statistics.median(statistics.mean(x['rtx_pct']) for x in xs):.3f} % (median); "
              f"busiest/idlest stream {statistics.median(max(x['mb']) / min(x['mb']) for x in xs):.2f}")
    va, vn = ([x["value"] for x in runs[c]] for c in ("aead", "none"))
    se = math.sqrt(statistics.variance(va) / len(va) + statistics.variance(vn) / len(vn))
    print(f"paired aead/none median {statistics.median(paired):.3f} ({min(paired):.2f}-"
          f"{max(paired):.2f}); difference of means {statistics.mean(va) - statistics.mean(vn):+.2f} "
          f"MB/s = {(statistics.mean(va) - statistics.mean(vn)) / se:+.2f} standard errors")
    return 0


if __name__ == "__main__":
    sys.exit(main())
