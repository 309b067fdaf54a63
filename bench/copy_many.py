#!/usr/bin/env python3
# bench/copy_many.py: issue 29 §4's goals for `isthmus copy` of many files, on one emulated
# link (default: 300 ms round trip, 100 Mbit/s, 0.1 % loss):
#   mixed: a directory of --files files, sizes spread evenly on a log scale from 1 KiB to
#          --max-mb MiB (fixed seed), must reach >= 90 % of the link rate;
#   small: --small files of 4 KiB must finish within 2x the time their bytes need at the
#          link rate (small files must not cost a round trip each).
# The baseline, measured in the same run and interleaved with the directory puts: one
# file of the same total size put with the one-file command (what the link gives one
# copy). Each repetition times the whole command from site A into a server in site B
# (connections, handshakes, data, SHA-256 checks, renames). Prints medians, spreads,
# the share of the link rate, the ratio to the baseline and the load average; appends
# JSON lines to bench/results/copy_many.jsonl. Needs root (network namespaces).
#
#   python3 bench/copy_many.py [--link delay=150ms,rate=100mbit,loss=0.1%] [--files 1000]
#          [--max-mb 200] [--small 10000] [--reps 3] [--parallel 4] [--transport udp]
#          [--only mixed|small] [--rate 100mbit]
# --rate: each repetition also runs every put with `--rate` (the link's rate told, so the
# sends start there instead of ramping up), interleaved with the puts without it; the
# summary then has both, and the ratio of their medians.
# The server writes to a fresh ext4 file system (a sparse image, loop-mounted for the run;
# --served-fs tmp: the temporary directory's own). Why: ext4 makes every file creation
# scan the inodes deleted in the last 5 minutes (recently_deleted() in ialloc.c, seen
# with perf as 60 % of the server's CPU), so a tree put after another tree was deleted
# took 5.1-5.6 s on a link without delay where a fresh file system takes 4.4 s; for the
# same reason the small trees are kept until the end of the run, not deleted per put.
# The sizes (1000 files up to 200 MiB: about 16 GiB, 23 minutes a repetition)
# are the defaults; --files 200 --max-mb 8 is a reduced run of a few minutes.
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import shutil
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

PORT = 41995


def log_sizes(n: int, lo: int, hi: int, seed: int = 29) -> list[int]:
    rnd = random.Random(seed)
    return [int(math.exp(rnd.uniform(math.log(lo), math.log(hi)))) for _ in range(n)]


def write_tree(root: Path, sizes: list[int]) -> int:
    """Files of these sizes in nested directories (ten per directory level); their total."""
    block = os.urandom(1 << 20)
    for i, n in enumerate(sizes):
        p = root / f"d{i % 10}" / f"e{i // 10 % 10}" / f"f{i:05d}.bin"
        p.parent.mkdir(parents=True, exist_ok=True)
        with open(p, "wb") as f:
            f.write(i.to_bytes(8, "little"))  # no two files alike
            left = n - 8
            while left > 0:
                k = min(left, len(block))
                f.write(block[:k])
                left -= k
    return sum(sizes)


def write_file(p: Path, n: int) -> None:
    with open(p, "wb") as f:
        for _ in range(n >> 20):
            f.write(os.urandom(1 << 20))
        f.write(os.urandom(n & ((1 << 20) - 1)))


def timed(emu, argv: list[str]) -> tuple[float, subprocess.CompletedProcess]:
    t0 = time.monotonic()
    r = emu.exec("A", argv, capture_output=True, text=True, timeout=7200)
    return time.monotonic() - t0, r


def report(sc: str, kind: str, xs: list[float], ideal: float, reps: int) -> float | None:
    """One line for a scenario's puts of one kind; their median (None: all failed)."""
    if not xs:
        print(f"{sc} {kind}: every repetition failed")
        return None
    m = statistics.median(xs)
    print(f"{sc} {kind}: median {m:.2f} s ({ideal / m * 100:.1f} % of the link, {m / ideal:.2f}x "
          f"the bytes' time), range {min(xs):.2f}-{max(xs):.2f} s over {len(xs)} of {reps}")
    return m


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--link", default="delay=150ms,rate=100mbit,loss=0.1%")
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--max-mb", type=float, default=200)
    ap.add_argument("--small", type=int, default=10000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--parallel", type=int, default=4)
    ap.add_argument("--transport", choices=["udp", "tcp"], default="udp")
    ap.add_argument("--only", choices=["mixed", "small"], default=None)
    ap.add_argument("--rate", default=None, help="also run every put with --rate RATE")
    ap.add_argument("--served-fs", choices=["fresh", "tmp"], default="fresh")
    a = ap.parse_args()
    variants = [None] + ([a.rate] if a.rate else [])
    exe = str(find_prefix().root / "bin" / "isthmus-copy")
    rate = [p for p in a.link.split(",") if p.startswith("rate=")][0][5:]
    link_bps = float(rate.rstrip("mbit")) * (1000 if rate.endswith("gbit") else 1) * 1e6
    creds = Credentials()
    out = REPO / "bench" / "results" / "copy_many.jsonl"
    out.parent.mkdir(exist_ok=True)
    load0 = os.getloadavg()
    scenarios = [s for s in ("mixed", "small") if a.only in (None, s)]
    with tempfile.TemporaryDirectory(prefix="isthmus-copy-many-") as tmp:
        t = Path(tmp)
        totals = {}
        for sc in scenarios:
            sizes = (log_sizes(a.files, 1024, int(a.max_mb * (1 << 20))) if sc == "mixed"
                     else [4096] * a.small)
            totals[sc] = write_tree(t / sc, sizes)
            write_file(t / f"{sc}-one.bin", totals[sc])
        served = t / "served"
        served.mkdir()
        if a.served_fs == "fresh":
            image = t / "served.img"
            with open(image, "wb") as f:  # sparse: blocks only as the copies write them
                f.truncate(2 * max(totals.values()) + (4 << 30))
            subprocess.run(["mkfs.ext4", "-q", "-F", str(image)], check=True)
            subprocess.run(["mount", "-o", "loop", str(image), str(served)], check=True)
        try:
            return run_puts(a, exe, creds, served, t, totals, scenarios, variants, link_bps,
                            out, load0)
        finally:
            if a.served_fs == "fresh":
                subprocess.run(["umount", str(served)], check=False)
            creds.close()


def run_puts(a, exe, creds, served, t, totals, scenarios, variants, link_bps, out,
             load0) -> int:
    records = []
    with Emulation(sites=2, link=a.link, job="bCopyMany") as emu:
        srv = emu.popen("B", [exe, "serve", str(served), "--listen", f"{emu.address('B')}:{PORT}",
                              *creds.args(), "--timeout", "60"],
                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        if not srv.stdout.readline().startswith("listening"):
            print("the copy server did not start", file=sys.stderr)
            return 1
        common = [*creds.args(), "--transport", a.transport, "--timeout", "60", "--quiet"]
        dest = f"{emu.address('B')}:{PORT}"
        for rep in range(a.reps):
            for sc, rate in [(sc, rate) for sc in scenarios for rate in variants]:
                for kind in ("tree", "one"):
                    name = f"{sc}-{kind}-{rep}"
                    src = [f"{t / sc}/"] if kind == "tree" else [str(t / f"{sc}-one.bin")]
                    extra = ["--parallel", str(a.parallel)] if kind == "tree" else []
                    extra += ["--rate", rate] if rate else []
                    sec, r = timed(emu, [exe, "put", *src, dest, name, *common, *extra])
                    ideal = totals[sc] * 8 / link_bps
                    rec = {"scenario": sc, "kind": kind, "rep": rep, "ok": r.returncode == 0,
                           "rate": rate,
                           "seconds": sec, "bytes": totals[sc], "share": ideal / sec,
                           "x_ideal": sec / ideal, "load1": os.getloadavg()[0],
                           "summary": r.stdout.strip()[-400:],
                           "error": r.stderr.strip()[-400:] if r.returncode else ""}
                    records.append(rec)
                    print(f"rep {rep} {sc} {kind}{' --rate ' + rate if rate else ''}: "
                          f"{sec:.2f} s, {rec['share'] * 100:.1f} % of the "
                          f"link, {rec['x_ideal']:.2f}x the bytes' time"
                          + ("" if rec["ok"] else f" FAILED: {rec['error']}"), flush=True)
                    if sc == "mixed":  # 16 GB a put; the small trees stay (see the top)
                        shutil.rmtree(served / name, ignore_errors=True)
                        (served / name).unlink(missing_ok=True)
                    else:
                        os.rename(served / name, served / f"{name}-{rate or 'ramp'}")
        srv.kill()
        srv.wait()
    load1 = os.getloadavg()
    meta = {"machine": f"{platform.node()} {platform.processor() or platform.machine()}, "
                       f"{os.cpu_count()} cores, kernel {platform.release()}",
            "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]), "link": a.link,
            "files": a.files, "max_mb": a.max_mb, "small": a.small, "parallel": a.parallel,
            "transport": a.transport, "load_before": load0, "load_after": load1}
    with open(out, "a") as f:
        for r in records:
            f.write(json.dumps({**meta, **r}) + "\n")
    print(f"{meta['machine']}; link {a.link}; {a.transport}, {a.parallel} connections; "
          f"load {load0[0]:.2f} before, {load1[0]:.2f} after")
    for sc in scenarios:
        ideal = totals[sc] * 8 / link_bps
        print(f"{sc}: {totals[sc]} bytes, {ideal:.2f} s at the link rate")
        meds = {}
        for rate in variants:
            tag = f" --rate {rate}" if rate else ""
            med = {kind: report(sc, kind + tag, [r["seconds"] for r in records
                                                 if r["scenario"] == sc and r["kind"] == kind
                                                 and r["rate"] == rate and r["ok"]], ideal, a.reps)
                   for kind in ("tree", "one")}
            meds[rate] = med
            if None not in med.values():
                print(f"{sc}{tag}: tree/one-file time ratio {med['tree'] / med['one']:.2f}")
        if a.rate:
            for kind in ("tree", "one"):
                x, y = meds[a.rate][kind], meds[None][kind]
                if x and y:
                    print(f"{sc} {kind}: with --rate {a.rate} / without: {x / y:.2f}")
    return 0 if all(r["ok"] for r in records) else 1


if __name__ == "__main__":
    sys.exit(main())
