#!/usr/bin/env python3
# bench/gateway_transport.py: what the gateways' transport choice means for an MPI job:
# bench/wan_stream.c (built with isthmus-cc) streams large messages from rank 0 (site A)
# to rank 1 (site B) through the gateways, across one emulated link, with `isthmus run
# --wan <link> --transport tcp|udp` and the congestion control given; repetitions are
# interleaved (the order rotates). Reports MB/s as median (min-max), the share of the link
# rate (the application's bytes only), the 8-byte one-way latency, and each gateway's CPU
# seconds per GB moved (`--stats`). Needs root (network namespaces), except with
# --link loopback (no emulator: the gateways talk over loopback, where the CPU is the
# limit). --cryptos compares link protection in the same run: aead (the default suite),
# aes (AES-256-GCM forced), chacha (ChaCha20-Poly1305 forced), none (in the clear); the
# ratios against none are printed (of the medians, and the median of the ratios paired
# within a repetition). "loop s/GB" is the CPU of the busier gateway's event-loop thread
# per GB: what one core per gateway caps. --seal-workers 0,2 runs every encrypted variant once per
# number of the gateways' crypto workers (ISTHMUS_WAN_SEAL_WORKERS; named aead.w0,
# aead.w2, ...), interleaved like the rest; without it the gateways choose (auto).
#
#   python3 bench/gateway_transport.py [--link delay=150ms,rate=100mbit,loss=0.1%]
#       [--configs tcp:cubic,tcp:bbr,udp:bbr] [--cryptos aead,none] [--seal-workers 0,2]
#       [--reps 3] [--size-mib 16 --count 8] [--lat-iters 20] [--lat-only]
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

from isthmus.netemu.spec import parse_link_spec  # noqa: E402
from isthmus.paths import find_prefix  # noqa: E402

VALUE = re.compile(r"wan_stream mode=(\w+) size=\d+ value=([\d.]+)")
MEDIAN = re.compile(r" median=([\d.]+)")
CPU = re.compile(r"isthmus stats: site (\w+) gateway \d+: peak buffered .*; cpu ([\d.]+) s ")
LOOP = re.compile(r"isthmus stats: site \w+ gateway \d+: peak buffered .*; event loop thread cpu "
                  r"([\d.]+) s")
BATCHED = re.compile(r"; records in batches (\d+), (\d+) of them by the workers")
WORKERS = re.compile(r"isthmus stats: site \w+ gateway \d+: peak buffered .*; crypto workers (\d+)")
SENT = re.compile(r"isthmus stats: site A gateway 0 -> site B gateway 0: sent \d+ msgs (\d+) bytes")


CRYPTO_ENV = {
    "aead": {"ISTHMUS_WAN_CRYPTO": "aead"},
    "aes": {"ISTHMUS_WAN_CRYPTO": "aead", "ISTHMUS_WAN_CIPHER": "aes-256-gcm"},
    "chacha": {"ISTHMUS_WAN_CRYPTO": "aead", "ISTHMUS_WAN_CIPHER": "chacha20-poly1305"},
    "none": {"ISTHMUS_WAN_CRYPTO": "none"},
}


def crypto_env(variant: str) -> dict:
    """aead, aes, chacha, none; an encrypted one with .wN: N crypto workers per gateway."""
    base, _, w = variant.partition(".w")
    return {**CRYPTO_ENV[base], **({"ISTHMUS_WAN_SEAL_WORKERS": w} if w else {})}


def run(exe, link, transport, cc, args, timeout, crypto="aead"):
    wan = [] if link == "loopback" else ["--wan", link]
    cmd = [sys.executable, "-m", "isthmus", "run", "-n", "2", "--mpi", "openmpi", *wan,
           "--transport", transport, "--wan-cc", cc, "--stats", "--timeout", str(timeout),
           "--", str(exe), *args]
    t0 = time.monotonic()
    env = {k: v for k, v in os.environ.items()
           if k not in ("ISTHMUS_WAN_CRYPTO", "ISTHMUS_WAN_CIPHER", "ISTHMUS_WAN_SEAL_WORKERS")}
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout + 60,
                       env={**env, **crypto_env(crypto)})
    m = VALUE.search(r.stdout)
    if r.returncode or not m:
        return {"ok": False, "error": (r.stderr or r.stdout)[-600:]}
    cpu = sum(float(c) for _, c in CPU.findall(r.stderr))
    sent = SENT.search(r.stderr)
    med = MEDIAN.search(r.stdout)
    return {"ok": True, "value": float(m.group(2)), "gw_cpu_s": cpu,
            "loop_cpu_s": [float(x) for x in LOOP.findall(r.stderr)],
            "workers": [int(w) for w in WORKERS.findall(r.stderr)],
            "batched": [[int(a), int(b)] for a, b in BATCHED.findall(r.stderr)],
            "median": float(med.group(1)) if med else None,
            "gw_bytes": int(sent.group(1)) if sent else 0, "wall_s": time.monotonic() - t0}


def lat_summary(records, configs, a) -> int:
    """Latency only: per variant the median over repetitions of each run's median one-way
    latency, and the paired difference against none in the same repetition (runs of one
    repetition follow each other, so slow drifts of the machine cancel)."""
    print(f"\n# isthmus 8-byte one-way latency through the gateways, {a.link}, {a.reps} "
          f"interleaved repetitions of {a.lat_iters} round trips")
    print(f"{'transport':10} {'cc':6} {'crypto':9} {'median us':>9} {'min':>7} {'max':>7} "
          f"{'minus none (paired) median':>27} {'min':>7} {'max':>7}")
    by = {(r["transport"], r["cc"], r["crypto"], r["rep"]): r["lat"] for r in records}
    for transport, cc, crypto in configs:
        v = sorted(by[(transport, cc, crypto, k)]["median"] for k in range(a.reps)
                   if by[(transport, cc, crypto, k)]["ok"])
        d = sorted(by[(transport, cc, crypto, k)]["median"] - by[(transport, cc, "none", k)]["median"]
                   for k in range(a.reps) if (transport, cc, "none", k) in by
                   and by[(transport, cc, crypto, k)]["ok"] and by[(transport, cc, "none", k)]["ok"])
        if not v:
            print(f"{transport:10} {cc:6} {crypto:9} FAILED")
            continue
        dd = (f"{statistics.median(d):+27.2f} {d[0]:+7.2f} {d[-1]:+7.2f}" if d and crypto != "none"
              else f"{'-':>27} {'-':>7} {'-':>7}")
        print(f"{transport:10} {cc:6} {crypto:9} {statistics.median(v):9.2f} {v[0]:7.2f} "
              f"{v[-1]:7.2f} {dd}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description="MPI streaming through the gateways, tcp vs udp")
    ap.add_argument("--link", default="delay=150ms,rate=100mbit,loss=0.1%")
    ap.add_argument("--configs", default="tcp:cubic,tcp:bbr,udp:bbr")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--size-mib", type=int, default=16)
    ap.add_argument("--count", type=int, default=8)
    ap.add_argument("--cryptos", default="aead",
                    help="link protection variants, comma-separated: aead, aes, chacha, none")
    ap.add_argument("--seal-workers", default="",
                    help="comma-separated crypto worker counts per gateway: each encrypted "
                         "variant runs once per count (e.g. 0,2); default: the gateways' own")
    ap.add_argument("--lat-iters", type=int, default=20)
    ap.add_argument("--lat-only", action="store_true",
                    help="measure the 8-byte latency only (no bandwidth run), and print the "
                         "paired difference of each variant against none per repetition")
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "gateway_transport"))
    a = ap.parse_args()
    prefix = find_prefix()
    rate_mb = 0 if a.link == "loopback" else (parse_link_spec(a.link).rate or 0) / 1e6
    d = Path(tempfile.mkdtemp(prefix="gwxp-"))
    exe = d / "wan_stream"
    subprocess.run([str(prefix.cc), "-O2", "-o", str(exe), str(REPO / "bench" / "wan_stream.c")],
                   check=True)
    cryptos = [c for c in a.cryptos.split(",") if c]
    bad = [c for c in cryptos if c not in CRYPTO_ENV]
    if bad:
        ap.error(f"--cryptos {bad[0]}: expected aead, aes, chacha or none")
    workers = [w for w in a.seal_workers.split(",") if w]
    if any(not w.isdigit() for w in workers):
        ap.error(f"--seal-workers {a.seal_workers}: expected whole numbers, e.g. 0,2")
    if workers:
        cryptos = [v for c in cryptos
                   for v in ([c] if c == "none" else [f"{c}.w{w}" for w in workers])]
    configs = [(*c.split(":"), k) for c in a.configs.split(",") if c for k in cryptos]
    size = a.size_mib << 20
    records = []
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    jl = open(str(out) + ".jsonl", "w")
    t_start = time.time()
    for rep in range(a.reps):
        order = configs[rep % len(configs):] + configs[:rep % len(configs)]
        for transport, cc, crypto in order:
            load = os.getloadavg()[0]
            bw = ({"ok": False, "error": "--lat-only"} if a.lat_only else
                  run(exe, a.link, transport, cc, ["bw", str(size), str(a.count), "1"], 600, crypto))
            lat = run(exe, a.link, transport, cc, ["lat", str(a.lat_iters), "3"], 300, crypto)
            rec = {"link": a.link, "transport": transport, "cc": cc, "crypto": crypto, "rep": rep,
                   "load1": load, "bw": bw, "lat": lat}
            records.append(rec)
            jl.write(json.dumps(rec) + "\n")
            jl.flush()
            print(f"rep {rep + 1} {transport}/{cc}/{crypto}: "
                  + (f"{bw['value']:.2f} MB/s" if bw["ok"] else f"bw: {bw['error'][-200:]}")
                  + (f", {lat['value'] / 1000:.3f} ms one-way (median {lat['median']:.1f} us)"
                     if lat["ok"] and lat.get("median") is not None
                     else f", {lat['value'] / 1000:.2f} ms one-way" if lat["ok"] else
                     f", lat FAILED {lat['error'][-200:]}"),
                  flush=True)
    jl.close()
    if a.lat_only:
        return lat_summary(records, configs, a)
    print(f"\n# isthmus MPI streaming through the gateways, {a.link}, {a.reps} interleaved "
          f"repetitions of {a.count} x {a.size_mib} MiB (+1 warm-up), wall "
          f"{(time.time() - t_start) / 60:.1f} min")
    print(f"{'transport':10} {'cc':6} {'crypto':9} {'MB/s median':>11} {'min':>7} {'max':>7} "
          f"{'share':>6} {'vs none':>7} {'paired':>6} {'range':11} {'gw CPU s/GB':>11} {'loop s/GB':>9} {'latency us':>10} {'min':>7} "
          f"{'max':>7} {'vs none':>8} {'load':>5}")
    med = {}
    for transport, cc, crypto in configs:
        rs = [r for r in records if (r["transport"], r["cc"], r["crypto"]) == (transport, cc, crypto)]
        ok = [r["bw"] for r in rs if r["bw"]["ok"]]
        lats = sorted(r["lat"]["value"] for r in rs if r["lat"]["ok"])
        if ok:
            med[(transport, cc, crypto)] = (statistics.median(x["value"] for x in ok),
                                            statistics.median(lats) if lats else 0.0)
    for transport, cc, crypto in configs:
        rs = [r for r in records if (r["transport"], r["cc"], r["crypto"]) == (transport, cc, crypto)]
        ok = [r["bw"] for r in rs if r["bw"]["ok"]]
        if not ok:
            print(f"{transport:10} {cc:6} {crypto:9} FAILED")
            continue
        v = sorted(x["value"] for x in ok)
        cpu = statistics.median(x["gw_cpu_s"] / (x["gw_bytes"] / 1e9) for x in ok if x["gw_bytes"])
        # the busier gateway's event-loop thread: the one a single core caps
        loops = [max(x["loop_cpu_s"]) / (x["gw_bytes"] / 1e9) for x in ok
                 if x["gw_bytes"] and x.get("loop_cpu_s")]
        loop = statistics.median(loops) if loops else 0.0
        lats = sorted(r["lat"]["value"] for r in rs if r["lat"]["ok"])
        share = statistics.median(v) / rate_mb if rate_mb else 0
        base = med.get((transport, cc, "none"))
        if crypto != "none" and workers:
            want = int(crypto.partition(".w")[2])
            seen = {w for x in ok for w in x.get("workers", [])}
            if seen != {want}:
                print(f"  (warning: {transport}/{crypto} ran with crypto workers {sorted(seen)})")
        ratio = f"{statistics.median(v) / base[0]:7.3f}" if base else f"{'-':>7}"
        # the ratio within each repetition (runs made one after the other), then its median
        paired = sorted(r["bw"]["value"] / n["bw"]["value"] for r in rs if r["bw"]["ok"]
                        for n in records if (n["transport"], n["cc"], n["crypto"], n["rep"]) ==
                        (transport, cc, "none", r["rep"]) and n["bw"]["ok"])
        pr = (f"{statistics.median(paired):6.3f} {paired[0]:5.2f}-{paired[-1]:<5.2f}"
              if paired and crypto != "none" else f"{'-':>6} {'-':>11}")
        lat_med = statistics.median(lats) if lats else 0
        dlat = f"{lat_med - base[1]:+8.1f}" if base and lats else f"{'-':>8}"
        print(f"{transport:10} {cc:6} {crypto:9} {statistics.median(v):11.2f} {v[0]:7.2f} "
              f"{v[-1]:7.2f} {share:6.1%} {ratio} {pr} {cpu:11.2f} {loop:9.2f} {lat_med:10.1f} "
              f"{lats[0] if lats else 0:7.1f} {lats[-1] if lats else 0:7.1f} {dlat} "
              f"{statistics.median(r['load1'] for r in rs):5.1f}")
    print(f"records: {out}.jsonl")
    return 0


if __name__ == "__main__":
    sys.exit(main())
