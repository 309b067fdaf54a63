#!/usr/bin/env python3
"""Link emulator accuracy and capacity (isthmus-linkemu through `isthmus.netemu`).

Measures, each repeated --reps times (median and spread reported):

  rtt       RTT of UDP ping-pong (Python probe, one packet in flight) across links of
            one-way delay 1, 5 and 20 ms, pinged in turn with a 0 ms link whose RTT
            (the probe's own cost) is subtracted. Error = (RTT - probe RTT) - 2 x delay.
            Also the emulator's own release lateness (write time - due time).
  tcp       one TCP stream (default congestion control) for --seconds over a 5 ms link at
            10, 100 and 500 Mbit/s: receiver goodput vs the set rate, and the IP bytes the
            emulator delivered in the same time vs the set rate (the rate counts whole IP
            packets, so goodput is at most 1448/1500 = 96.5% of it at MTU 1500).
  capacity  one TCP stream over an unlimited 1 ms link at MTU 9000 and 1500: goodput,
            the emulator's CPU use and the machine's idle CPU (is the CPU the limit?).
  loss      20000 UDP datagrams at 20 kpps over links with 0.1%, 1%, 5% random loss and
            1% loss in bursts of 4: measured loss vs the setting (with the 95% binomial
            interval of the measurement) and mean burst length.

Needs root (namespaces, TUN). Progress on stderr; a Markdown section on stdout; JSON
lines in bench/results/linkemu-<timestamp>.jsonl. Run from the repository root:

    .venv/bin/python bench/linkemu_accuracy.py --reps 5
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "python"))

from isthmus.netemu import Emulation, load_matrix  # noqa: E402
from isthmus.netemu.matrix import uniform  # noqa: E402
from isthmus.netemu.spec import parse_link_spec  # noqa: E402

PY = sys.executable
PROBE = [PY, "-m", "isthmus.netemu.probe"]
RTT_DELAYS_MS = [1, 5, 20]
TCP_RATES_MBIT = [10, 100, 500]
LOSSES = ["loss=0.1%", "loss=1%", "loss=5%", "loss=1%,lossburst=4"]
CLK = os.sysconf("SC_CLK_TCK")


def log(msg: str) -> None:
    print(f"[linkemu-bench] {msg}", file=sys.stderr, flush=True)


def describe(xs: list[float]) -> dict:
    xs = sorted(xs)
    med = statistics.median(xs)
    return {"n": len(xs), "median": med, "min": xs[0], "max": xs[-1]}


def server(emu, site, argv):
    p = emu.popen(site, PROBE + argv, stdout=subprocess.PIPE, text=True)
    if p.stdout.readline().strip() != "listening":
        raise RuntimeError(f"probe server {argv[0]} did not start")
    return p


def probe(emu, site, argv, timeout=120):
    r = emu.exec(site, PROBE + argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                 timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError(r.stderr)
    return json.loads(r.stdout)


def cpu_ticks(pid: int) -> int:
    f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(f[11]) + int(f[12])


def machine_idle() -> tuple[int, int]:
    f = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return f[3] + f[4], sum(f)


def bench_rtt(rep: int) -> list[dict]:
    names = ["A", "B"] + [f"D{d}" for d in RTT_DELAYS_MS]
    text = f"sites = {names!r}\n".replace("'", '"') + '[links]\n"A-B" = "delay=0ms"\n'
    text += "".join(f'"A-D{d}" = "delay={d}ms"\n' for d in RTT_DELAYS_MS)
    path = Path(f"/tmp/linkemu-bench-{os.getpid()}.toml")
    path.write_text(text)
    out = []
    with Emulation(matrix=load_matrix(path), job=f"bR{rep}") as emu:
        targets = []
        for k, site in enumerate(names[1:]):
            server(emu, site, ["echo-server", "--port", str(9500 + k), "--seconds", "120"])
            targets += ["--target", f"{emu.address(site)}:{9500 + k}"]
        res = probe(emu, "A", ["rtt", "--count", "40", "--interval", "0.002", *targets])["results"]
        st = emu.stats()
    path.unlink()
    base = res[0]["median"]
    for d, r in zip(RTT_DELAYS_MS, res[1:]):
        want = 2 * d / 1e3
        out.append({"delay_ms": d, "set_rtt": want, "median_rtt": r["median"], "min_rtt": r["min"],
                    "probe_rtt": base, "error": r["median"] - base - want,
                    "late_mean_us": st["late_mean_ns"] / 1e3, "late_max_us": st["late_max_ns"] / 1e3})
    return out


def tcp_run(link: str, seconds: float, job: str) -> dict:
    spec = parse_link_spec(link)
    with Emulation(matrix=uniform(2, spec), job=job) as emu:
        sink = server(emu, "B", ["tcp-sink", "--port", "9600"])
        t0, idle0 = cpu_ticks(emu.pid), machine_idle()
        w0 = time.monotonic()
        probe(emu, "A", ["tcp-source", "--host", emu.address("B"), "--port", "9600",
                         "--seconds", str(seconds)])
        got = json.loads(sink.stdout.readline())
        wall = time.monotonic() - w0
        ab = emu.link_stats("A", "B")
        t1, idle1 = cpu_ticks(emu.pid), machine_idle()
    return {"link": link, "goodput_bps": got["rate_Bps"] * 8, "emu_cpu": (t1 - t0) / CLK / wall,
            "ip_bps": ab["bytes_delivered"] * 8 / got["seconds"] if got["seconds"] else 0.0,
            "machine_idle": (idle1[0] - idle0[0]) / max(1, idle1[1] - idle0[1]),
            "queue_drops": ab["drop_queue"], "pool_drops": ab["drop_pool"]}


def bench_tcp(rep: int, seconds: float) -> list[dict]:
    out = []
    for rate in TCP_RATES_MBIT:
        r = tcp_run(f"delay=5ms,rate={rate}mbit", seconds, f"bT{rep}")
        r.update(rate_mbit=rate, ratio=r["goodput_bps"] / (rate * 1e6),
                 ratio_ip=r["ip_bps"] / (rate * 1e6))
        out.append(r)
    return out


def bench_capacity(rep: int, seconds: float) -> list[dict]:
    out = []
    for mtu in (9000, 1500):
        r = tcp_run(f"delay=1ms,mtu={mtu}", seconds, f"bC{rep}")
        r.update(mtu=mtu)
        out.append(r)
    return out


def bench_loss(rep: int) -> list[dict]:
    out = []
    n = 20000
    for k, link in enumerate(LOSSES):
        spec = parse_link_spec(link)
        with Emulation(matrix=uniform(2, spec), job=f"bL{rep}", seed=1000 * rep + k) as emu:
            counter = server(emu, "B", ["udp-count", "--port", "9700", "--idle", "2"])
            probe(emu, "A", ["udp-blast", "--host", emu.address("B"), "--port", "9700",
                             "--count", str(n), "--pps", "20000", "--size", "100"])
            got = json.loads(counter.stdout.readline())
            ab = emu.link_stats("A", "B")
        lost = n - got["received"]
        p = spec.mean_loss()
        out.append({"link": link, "set": p, "measured": lost / n, "model": ab["drop_loss"] / n,
                    "ci95": 1.96 * (p * (1 - p) / n) ** 0.5, "emulator_drops": ab["drop_loss"],
                    "burst": got["missing"] / got["loss_runs"] if got["loss_runs"] else 0.0})
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=4.0, help="length of each TCP transfer")
    ap.add_argument("--only", choices=["rtt", "tcp", "capacity", "loss"], action="append")
    args = ap.parse_args()
    parts = args.only or ["rtt", "tcp", "capacity", "loss"]
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%d-%H%M%S")
    results_dir = HERE / "results"
    results_dir.mkdir(exist_ok=True)
    jpath = results_dir / f"linkemu-{stamp}.jsonl"
    rows: dict[str, list[dict]] = {p: [] for p in parts}
    loads = []
    start = time.monotonic()
    with jpath.open("w") as jf:
        for rep in range(args.reps):
            for part in parts:
                log(f"rep {rep + 1}/{args.reps}: {part}")
                if part == "rtt":
                    recs = bench_rtt(rep)
                elif part == "tcp":
                    recs = bench_tcp(rep, args.seconds)
                elif part == "capacity":
                    recs = bench_capacity(rep, args.seconds)
                else:
                    recs = bench_loss(rep)
                for r in recs:
                    r.update(part=part, rep=rep)
                    jf.write(json.dumps(r) + "\n")
                rows[part] += recs
                loads.append(os.getloadavg()[0])
    report(args, rows, loads, jpath, time.monotonic() - start)
    return 0


def fmt_spread(xs, scale=1.0, digits=3):
    d = describe([x * scale for x in xs])
    return f"{d['median']:.{digits}f} ({d['min']:.{digits}f} – {d['max']:.{digits}f})"


def table(title: str, header: list[str], align: str, lines: list[list[str]]) -> str:
    """A Markdown table; align holds 'l' or 'r' per column."""
    out = [f"### {title}\n", "| " + " | ".join(header) + " |",
           "|" + "|".join("---:" if a == "r" else "---" for a in align) + "|"]
    out += ["| " + " | ".join(cells) + " |" for cells in lines]
    return "\n".join(out) + "\n"


def med(rs: list[dict], key: str, scale: float = 1.0) -> float:
    return statistics.median([r[key] for r in rs]) * scale


def report(args, rows, loads, jpath, wall) -> None:
    w = print
    now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    w(f"Measured {now} on `{platform.node()}` ({os.cpu_count()} CPUs, kernel {platform.release()}), "
      f"{args.reps} repetitions, wall time {wall / 60:.1f} min.\n")
    w("```\n" + " ".join(["python", "bench/linkemu_accuracy.py", "--reps", str(args.reps),
                         "--seconds", f"{args.seconds:g}"]) + "\n```\n")
    w(f"1-minute load average after each part: median {statistics.median(loads):.1f}, "
      f"min {min(loads):.1f}, max {max(loads):.1f} (the machine has {os.cpu_count()} CPUs).\n")
    spread = "median (min – max)"
    if "rtt" in rows:
        lines = []
        for d in RTT_DELAYS_MS:
            rs = [r for r in rows["rtt"] if r["delay_ms"] == d]
            lines.append([f"{d} ms", f"{2 * d}", fmt_spread([r["median_rtt"] for r in rs], 1e3),
                          fmt_spread([r["probe_rtt"] for r in rs], 1e3),
                          fmt_spread([r["error"] for r in rs], 1e6, 0), f"{0.02 * 2 * d * 1e3 + 100:.0f}"])
        w(table("RTT vs setting (UDP ping-pong, 40 pings per repetition, median per repetition)",
                ["one-way delay", "set RTT ms", f"measured RTT ms {spread} over reps",
                 "probe RTT on 0 ms link, ms", f"error = RTT - probe - set, us {spread}",
                 "allowed: 2% + 100 us"], "rrlllr", lines))
        late = [r["late_mean_us"] for r in rows["rtt"]]
        w(f"Emulator release lateness (write time - due time): mean per repetition median "
          f"{statistics.median(late):.1f} us (max of means {max(late):.1f} us); worst single packet "
          f"{max(r['late_max_us'] for r in rows['rtt']):.0f} us.\n")
    if "tcp" in rows:
        lines = []
        for rate in TCP_RATES_MBIT:
            rs = [r for r in rows["tcp"] if r["rate_mbit"] == rate]
            lines.append([f"{rate} Mbit/s", fmt_spread([r["goodput_bps"] for r in rs], 1e-6, 1),
                          fmt_spread([r["ratio"] for r in rs], 100, 1) + " %",
                          fmt_spread([r["ratio_ip"] for r in rs], 100, 1) + " %",
                          f"{med(rs, 'queue_drops'):.0f}", f"{med(rs, 'emu_cpu', 100):.0f} %",
                          f"{med(rs, 'machine_idle', 100):.0f} %"])
        w(table(f"One TCP stream vs set rate (5 ms one-way, {args.seconds:g} s, receiver goodput)",
                ["set rate", f"goodput Mbit/s {spread}", "goodput / set rate",
                 "IP bytes delivered / set rate", "queue drops (median)", "emulator CPU",
                 "machine idle CPU"], "rlllrrr", lines))
    if "capacity" in rows:
        lines = []
        for mtu in (9000, 1500):
            rs = [r for r in rows["capacity"] if r["mtu"] == mtu]
            lines.append([str(mtu), fmt_spread([r["goodput_bps"] for r in rs], 1e-9, 2),
                          f"{med(rs, 'emu_cpu', 100):.0f} %", f"{med(rs, 'machine_idle', 100):.0f} %"])
        w(table(f"Capacity: one TCP stream, unlimited rate, 1 ms one-way, {args.seconds:g} s",
                ["MTU", f"goodput Gbit/s {spread}", "emulator CPU (of one core)", "machine idle CPU"],
                "rlrr", lines))
    if "loss" in rows:
        lines = []
        for link in LOSSES:
            rs = [r for r in rows["loss"] if r["link"] == link]
            lines.append([f"`{link}`", f"{rs[0]['set'] * 100:.2f} %",
                          fmt_spread([r["measured"] for r in rs], 100, 3),
                          fmt_spread([r["model"] for r in rs], 100, 3),
                          f"± {rs[0]['ci95'] * 100:.3f} % (Bernoulli)", f"{med(rs, 'burst'):.2f}"])
        w(table("Loss vs setting (20000 UDP datagrams at 20 kpps per repetition)",
                ["link", "set mean loss", f"end-to-end loss % {spread}",
                 f"dropped by the loss model % {spread}", "95% interval of one run",
                 "mean burst, packets (median)"], "lrllrr", lines))
    rel = jpath.relative_to(HERE.parent) if jpath.is_relative_to(HERE.parent) else jpath
    w(f"Raw data: `{rel}` (not committed).")
    log(f"done in {wall / 60:.1f} min; raw data in {jpath}")


if __name__ == "__main__":
    sys.exit(main())
