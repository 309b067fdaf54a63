#!/usr/bin/env python3
# bench/udp_transport.py: issue 7's "done when" table, measured in one run on emulated
# links: goodput of the reliable-UDP transport (isthmus-udpperf, BBR-like controller)
# as a share of the link rate, next to kernel TCP on the same link in the same run
# (isthmus-linkprobe tput: CUBIC x1, BBR x1, BBR x8 streams, each stream with a window
# of 2 BDP), repetitions interleaved; plus CPU seconds per GB moved (getrusage of sender
# + receiver, and that plus the link emulator's CPU, which kernel TCP's softirq work lands
# on) for UDP (with and without its CRC32C) and TCP on the lossless link (isthmus-udpperf
# both ways, payload checks off, so only the transports differ). Prints a table, writes JSON lines and an
# SVG plot. Needs root (network namespaces).
#
#   python3 bench/udp_transport.py [--reps 3] [--scale 1.0] [--links canberra,1g-20ms,...]
#                                  [--fairness delay=25ms,rate=100mbit]
#                                  [--fair-against cubic,bbr] [--fair-orders together,udp-first,tcp-first]
#                                  [--fair-lead 3] [--udp-args '--no-pmtud --trace']
#                                  [--configs udp-bbr,tcp-bbr-x8] (a subset, for A/B runs)
# ISTHMUS_PREFIX chooses the native build measured (e.g. a baseline installed elsewhere).
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))

from rich.progress import Progress  # noqa: E402

from isthmus.linkprobe.endpoints import Credentials  # noqa: E402
from isthmus.linkprobe.udpperf import transfer, udpperf_binary  # noqa: E402
from isthmus.netemu.emulation import Emulation  # noqa: E402
from isthmus.paths import find_prefix  # noqa: E402

# name: (link spec, rate Mbit/s, RTT s, goal share, duration s, omit s)
LINKS = {
    "canberra": ("delay=150ms,rate=100mbit,loss=0.1%", 100, 0.300, 0.95, 40, 12),
    "1g-20ms": ("delay=10ms,rate=1gbit", 1000, 0.020, 0.95, 12, 3),
    "1g-20ms-1%": ("delay=10ms,rate=1gbit,loss=1%", 1000, 0.020, 0.90, 12, 3),
    # not one of the rows (run it with --links): the lossless row with jumbo
    # frames, where a packet carries 6x the payload, so per-packet CPU matters less
    "1g-20ms-jumbo": ("delay=10ms,rate=1gbit,mtu=9000", 1000, 0.020, 0.95, 12, 3),
    "100m-100ms-2%burst": ("delay=50ms,rate=100mbit,loss=2%,lossburst=4", 100, 0.100, 0.80, 25, 6),
}
TCP_CONFIGS = [("tcp-cubic-x1", "cubic", 1), ("tcp-bbr-x1", "bbr", 1), ("tcp-bbr-x8", "bbr", 8)]
PROBE_PORT = 41995


def loadavg() -> float:
    return os.getloadavg()[0]


def tcp_run(emu, probe, creds, cc, streams, window, duration, omit):
    r = emu.exec("A", [probe, "tput", "--connect", f"{emu.address('B')}:{PROBE_PORT}",
                       *creds.args(), "--cc", cc, "--streams", str(streams), "--window",
                       str(window), "--duration", str(duration), "--omit", str(omit)],
                 capture_output=True, text=True, timeout=duration * 3 + 60)
    for line in r.stdout.splitlines():
        if line.startswith("{"):
            return {"ok": True, "mbit_s": json.loads(line)["mbit_s"], "raw": json.loads(line)}
    return {"ok": False, "error": (r.stderr or r.stdout).strip()[-300:]}


def proc_cpu_s(pid) -> float:
    """utime + stime of a process, seconds (the link emulator's: softirq work of kernel TCP
    triggered by its writes to the TUN devices is charged to it)."""
    if not pid:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def udp_run(emu, exe, creds, duration, omit, cc="bbr", transport="udp", extra=()):
    emu0 = proc_cpu_s(emu.pid)
    t = transfer(emu, exe, creds, transport=transport, cc=cc, duration=duration, omit=omit,
                 extra=extra, timeout=duration * 4 + 90)
    emu_cpu = proc_cpu_s(emu.pid) - emu0
    if not t.ok:
        return {"ok": False, "error": t.recv.get("error") or t.send.get("error")}
    return {"ok": True, "mbit_s": t.recv["mbit_s_after_omit"], "bytes": t.recv["bytes"],
            "cpu_s": t.send["cpu_s"] + t.recv["cpu_s"], "emu_cpu_s": emu_cpu, "send": t.send,
            "recv": t.recv}


def fairness_run(emu, exe, probe, creds, tcp_cc, window, duration, omit, udp_extra=(), lead=0.0,
                 flow=()):
    """One reliable-UDP flow and one kernel TCP flow (tcp_cc) from A to B over the same
    emulated bottleneck; each one's goodput over the same window (after omit seconds), and
    the UDP sender's statistics (loss, retransmissions, path MTU) to explain a share.
    lead > 0: the UDP flow starts lead seconds before the TCP one; < 0: after it (the
    first flow runs lead seconds longer and omits lead seconds more, so both measure the
    same stretch of time, all of it shared). flow: isthmus-udpperf arguments for both ends
    of the first flow (e.g. --transport tcp --cc cubic: the baseline of TCP against TCP)."""
    u_dur, u_omit = duration + max(lead, 0), omit + max(lead, 0)
    t_dur, t_omit = duration + max(-lead, 0), omit + max(-lead, 0)
    recv = emu.popen("B", [exe, "recv", "--listen", f"{emu.address('B')}:41994", "--omit",
                           str(u_omit), *flow, *creds.args()], stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE, text=True)
    recv.stderr.readline()
    tcp = {}
    tcp_thread = threading.Thread(
        target=lambda: tcp.update(tcp_run(emu, probe, creds, tcp_cc, 1, window, t_dur, t_omit)))
    if lead < 0:
        tcp_thread.start()
        time.sleep(-lead)
    snd = emu.popen("A", [exe, "send", "--connect", f"{emu.address('B')}:41994", "--duration",
                          str(u_dur), *udp_extra, *flow, *creds.args()], stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE, text=True)
    if lead >= 0:
        time.sleep(lead)
        tcp_thread.start()
    tcp_thread.join()
    sout, serr = snd.communicate(timeout=duration * 4 + 60)
    sj = [x for x in sout.splitlines() if x.startswith("{")]
    send = json.loads(sj[-1]) if sj else {}
    trace = [x for x in serr.splitlines() if x.startswith("trace ")]  # with --udp-args --trace
    if trace:
        send["trace"] = trace
    out, _ = recv.communicate(timeout=duration * 4 + 60)
    u = json.loads([x for x in out.splitlines() if x.startswith("{")][-1])
    if not (u.get("ok") and tcp.get("ok")):
        return {"ok": False, "error": u.get("error") or tcp.get("error")}
    tot = u["mbit_s_after_omit"] + tcp["mbit_s"]
    return {"ok": True, "udp_mbit_s": u["mbit_s_after_omit"], "tcp_mbit_s": tcp["mbit_s"],
            "udp_share_of_total": u["mbit_s_after_omit"] / tot if tot else 0.0, "send": send}


def fair_config(tcc, order):
    """The record's config name (a run that starts both flows together keeps the old one)."""
    return f"fair-vs-{tcc}" + ("" if order == "together" else f"-{order}")


def summary(xs):
    xs = sorted(xs)
    if not xs:
        return None
    med = statistics.median(xs)
    return {"median": med, "min": xs[0], "max": xs[-1], "n": len(xs),
            "spread": (xs[-1] - xs[0]) / med if med else 0.0}


def main() -> int:
    ap = argparse.ArgumentParser(description="reliable UDP vs kernel TCP on emulated links")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--scale", type=float, default=1.0, help="multiply durations")
    ap.add_argument("--links", default=",".join(n for n in LINKS if n != "1g-20ms-jumbo"))
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "udp_transport"))
    ap.add_argument("--no-cpu", action="store_true", help="skip the CPU-per-GB runs")
    ap.add_argument("--configs", default="",
                    help="only these configurations (udp-bbr, tcp-cubic-x1, tcp-bbr-x1, "
                         "tcp-bbr-x8); default all")
    ap.add_argument("--fairness", default="",
                    help="link spec for the fairness runs (UDP against one TCP CUBIC and one "
                         "TCP BBR flow on one bottleneck), e.g. delay=25ms,rate=100mbit; "
                         "with --links '' only these run")
    ap.add_argument("--fair-against", default="cubic,bbr",
                    help="the kernel TCP congestion controls of the fairness runs")
    ap.add_argument("--fair-orders", default="together",
                    help="start orders of the fairness runs: together, udp-first, tcp-first "
                         "(the first flow leads by --fair-lead seconds)")
    ap.add_argument("--fair-lead", type=float, default=3.0)
    ap.add_argument("--fair-flow", default="udp", choices=("udp", "tcp-cubic", "tcp-bbr"),
                    help="the flow measured against kernel TCP: udp (the transport), or "
                         "tcp-cubic / tcp-bbr (a kernel TCP flow of isthmus-udpperf, the "
                         "baseline: how TCP shares with itself in the same runs)")
    ap.add_argument("--udp-args", default="",
                    help="extra isthmus-udpperf arguments for every UDP sender, e.g. "
                         "'--no-pmtud --trace'")
    a = ap.parse_args()
    udp_extra = tuple(a.udp_args.split())
    flow = () if a.fair_flow == "udp" else ("--transport", "tcp", "--cc", a.fair_flow[4:])
    orders = [o for o in a.fair_orders.split(",") if o]
    for o in orders:
        if o not in ("together", "udp-first", "tcp-first"):
            ap.error(f"--fair-orders: {o!r}: expected together, udp-first or tcp-first")
    fair_runs = [(t, o) for t in a.fair_against.split(",") if t for o in orders]
    prefix = find_prefix()
    exe = udpperf_binary(prefix)
    probe = str(prefix.root / "bin" / "isthmus-linkprobe")
    names = [n for n in a.links.split(",") if n]
    only = {c for c in a.configs.split(",") if c}
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    records = []
    jl = open(str(out) + ".jsonl", "w")
    t_start = time.time()
    with Progress() as prog:
        nconf = len(only) if only else 4
        total = sum(a.reps * (nconf + (0 if a.no_cpu or n != "1g-20ms" else 3)) for n in names)
        total += len(fair_runs) * a.reps if a.fairness else 0
        task = prog.add_task("measuring", total=total)
        for name in names:
            spec, rate, rtt, goal, dur, omit = LINKS[name]
            dur, omit = dur * a.scale, omit * a.scale
            window = int(2 * rate * 1e6 / 8 * rtt)
            creds = Credentials()
            with Emulation(sites=2, link=spec, job=f"bu{name[:8].replace('-', '')}") as emu:
                srv = emu.popen("B", [probe, "serve", "--listen",
                                      f"{emu.address('B')}:{PROBE_PORT}", *creds.args()],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                time.sleep(0.5)
                for rep in range(a.reps):
                    configs = [("udp-bbr", None, 0)] + TCP_CONFIGS
                    if only:
                        configs = [c for c in configs if c[0] in only]
                    if not a.no_cpu and name == "1g-20ms":
                        configs += [("cpu-udp", None, 0), ("cpu-udp-nocrc", None, 0),
                                    ("cpu-tcp-cubic", "cubic", 1)]
                    # rotate the order each repetition so drift hits every config alike
                    configs = configs[rep % len(configs):] + configs[:rep % len(configs)]
                    for cfg, cc, streams in configs:
                        prog.update(task, description=f"{name} rep {rep + 1}: {cfg}")
                        la = loadavg()
                        if cfg == "udp-bbr":
                            # the link's MTU is the ceiling of the path-MTU search
                            mtu = re.search(r"mtu=(\d+)", spec)
                            r = udp_run(emu, exe, creds, dur, omit,
                                        extra=[*(["--mtu", mtu.group(1)] if mtu else ()),
                                               *udp_extra])
                        elif cfg == "cpu-udp":
                            r = udp_run(emu, exe, creds, dur / 2, 0, extra=["--no-verify"])
                        elif cfg == "cpu-udp-nocrc":  # UDP's own checksum only, as TCP
                            r = udp_run(emu, exe, creds, dur / 2, 0,
                                        extra=["--no-verify", "--no-crc"])
                        elif cfg == "cpu-tcp-cubic":
                            r = udp_run(emu, exe, creds, dur / 2, 0, cc="cubic", transport="tcp",
                                        extra=["--no-verify", "--window", str(window)])
                        else:
                            r = tcp_run(emu, probe, creds, cc, streams, window, dur, omit)
                        rec = {"link": name, "spec": spec, "rate_mbit": rate, "config": cfg,
                               "rep": rep, "window": window, "load1": la, **r}
                        if r.get("ok"):
                            rec["share"] = r["mbit_s"] / rate
                            if "cpu_s" in r:
                                rec["cpu_s_per_gb"] = r["cpu_s"] / (r["bytes"] / 1e9)
                                rec["cpu_emu_s_per_gb"] = ((r["cpu_s"] + r["emu_cpu_s"])
                                                           / (r["bytes"] / 1e9))
                        records.append(rec)
                        jl.write(json.dumps(rec) + "\n")
                        jl.flush()
                        prog.advance(task)
                st = emu.link_stats("A", "B")
                srv.terminate()
            creds.close()
            records.append({"link": name, "config": "emulator-stats", "stats": st})
        if a.fairness:
            from isthmus.netemu.spec import parse_link_spec

            spec = parse_link_spec(a.fairness)
            creds = Credentials()
            with Emulation(sites=2, link=a.fairness, job="bufair") as emu:
                srv = emu.popen("B", [probe, "serve", "--listen",
                                      f"{emu.address('B')}:{PROBE_PORT}", *creds.args()],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                time.sleep(0.5)
                rtt = max(2 * spec.delay, 0.01)
                window = max(int(2 * (spec.rate or 1.25e7) * rtt), 1 << 20)
                dur, omit = 40 * a.scale, 10 * a.scale
                for rep in range(a.reps):
                    for tcc, order in fair_runs:
                        prog.update(task, description=f"fairness rep {rep + 1}: udp vs tcp {tcc}"
                                                      f" ({order})")
                        la = loadavg()
                        lead = {"together": 0.0, "udp-first": a.fair_lead,
                                "tcp-first": -a.fair_lead}[order]
                        r = fairness_run(emu, exe, probe, creds, tcc, window, dur, omit, udp_extra,
                                         lead, flow + (("--window", str(window)) if flow else ()))
                        rec = {"link": "fairness", "spec": a.fairness,
                               "config": fair_config(tcc, order), "order": order, "lead_s": lead,
                               "flow": a.fair_flow,
                               "rep": rep, "load1": la, **r}
                        records.append(rec)
                        jl.write(json.dumps(rec) + "\n")
                        jl.flush()
                        prog.advance(task)
                srv.terminate()
            creds.close()
    jl.close()
    wall = time.time() - t_start

    # ---- report ----
    print(f"\n# reliable UDP vs kernel TCP, {a.reps} interleaved repetitions, "
          f"wall {wall / 60:.1f} min, load average at start of each run in brackets")
    hdr = f"{'link':20} {'config':14} {'share median':>12} {'min':>6} {'max':>6} {'load':>5}  ratio UDP/this"
    print(hdr)
    table = {}
    for name in names:
        udp = {r["rep"]: r["share"] for r in records if r.get("link") == name and r["config"] == "udp-bbr" and r.get("ok")}
        for cfg in ["udp-bbr"] + [c[0] for c in TCP_CONFIGS]:
            rs = [r for r in records if r.get("link") == name and r["config"] == cfg]
            if not rs:
                continue  # not measured in this run (--configs)
            ok = [r for r in rs if r.get("ok")]
            s = summary([r["share"] for r in ok])
            ratios = [udp[r["rep"]] / r["share"] for r in ok if r["rep"] in udp and r["share"] > 0]
            rs_ = summary(ratios)
            la = statistics.median([r["load1"] for r in rs]) if rs else 0
            table[(name, cfg)] = {"share": s, "ratio": rs_, "load": la,
                                  "failed": [r.get("error") for r in rs if not r.get("ok")]}
            if s:
                ratio = "" if cfg == "udp-bbr" or not rs_ else f"{rs_['median']:.2f}x"
                print(f"{name:20} {cfg:14} {s['median']:12.1%} {s['min']:6.1%} {s['max']:6.1%} "
                      f"{la:5.1f}  {ratio}")
            else:
                print(f"{name:20} {cfg:14} FAILED: {table[(name, cfg)]['failed'][:1]}")
    cpu, cpu_emu = {}, {}
    for cfg in ("cpu-udp", "cpu-udp-nocrc", "cpu-tcp-cubic"):
        ok = [r for r in records if r.get("config") == cfg and r.get("ok")]
        cpu[cfg] = summary([r["cpu_s_per_gb"] for r in ok])
        cpu_emu[cfg] = summary([r["cpu_emu_s_per_gb"] for r in ok])
        g = summary([r["mbit_s"] for r in ok])
        if cpu[cfg]:
            print(f"CPU {cfg:14} endpoints {cpu[cfg]['median']:.2f} s/GB (min "
                  f"{cpu[cfg]['min']:.2f}, max {cpu[cfg]['max']:.2f}); with the emulator "
                  f"{cpu_emu[cfg]['median']:.2f} s/GB (min {cpu_emu[cfg]['min']:.2f}, max "
                  f"{cpu_emu[cfg]['max']:.2f}) at {g['median']:.0f} Mbit/s")
    for tcc, order in fair_runs:
        ok = [r for r in records if r.get("config") == fair_config(tcc, order) and r.get("ok")]
        f = summary([r["udp_share_of_total"] for r in ok])
        if f:
            print(f"fairness vs TCP {tcc} ({order}): {a.fair_flow} share of the bottleneck median "
                  f"{f['median']:.0%} (min {f['min']:.0%}, max {f['max']:.0%}; goal 30..70%) "
                  f"{a.fair_flow} {statistics.median(r['udp_mbit_s'] for r in ok):.1f} / TCP "
                  f"{statistics.median(r['tcp_mbit_s'] for r in ok):.1f} Mbit/s")
    for cfg in ("cpu-udp", "cpu-udp-nocrc"):
        if cpu.get(cfg) and cpu.get("cpu-tcp-cubic"):
            print(f"CPU ratio {cfg}/TCP: endpoints "
                  f"{cpu[cfg]['median'] / cpu['cpu-tcp-cubic']['median']:.2f}x, with the "
                  f"emulator {cpu_emu[cfg]['median'] / cpu_emu['cpu-tcp-cubic']['median']:.2f}x")
    with open(str(out) + ".summary.json", "w") as f:
        json.dump({"wall_s": wall, "reps": a.reps, "scale": a.scale,
                   "table": {f"{k[0]}|{k[1]}": v for k, v in table.items()}, "cpu": cpu,
                   "cpu_with_emulator": cpu_emu}, f,
                  indent=1)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        cfgs = ["udp-bbr"] + [c[0] for c in TCP_CONFIGS]
        fig, ax = plt.subplots(figsize=(9, 4))
        w = 0.2
        for i, cfg in enumerate(cfgs):
            cell = [(table.get((n, cfg)) or {}).get("share") or {} for n in names]
            med = [c.get("median", 0) * 100 for c in cell]
            lo = [m - c.get("min", 0) * 100 for m, c in zip(med, cell)]
            hi = [c.get("max", 0) * 100 - m for m, c in zip(med, cell)]
            ax.bar([x + i * w for x in range(len(names))], med, w, yerr=[lo, hi], label=cfg,
                   capsize=2)
        for x, n in enumerate(names):
            ax.hlines(LINKS[n][3] * 100, x - w / 2, x + 3.5 * w, colors="k", linestyles="dashed")
        ax.set_xticks([x + 1.5 * w for x in range(len(names))], names)
        ax.set_ylabel("goodput, % of link rate")
        ax.set_title("reliable UDP vs kernel TCP on emulated links (dashed: issue 7 goal)")
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(str(out) + ".svg")
        print(f"plot: {out}.svg")
    except Exception as e:  # a missing plot must not lose the measurements
        print(f"no plot: {e}")
    print(f"records: {out}.jsonl")
    return 0


if __name__ == "__main__":
    sys.exit(main())
