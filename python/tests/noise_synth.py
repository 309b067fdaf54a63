# tests/noise_synth.py: synthetic isthmus-noise runs with known noise (classes, periods,
# causes), written in the probe's own file format, for the analysis tests.
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

HZ = 2.0e9
T0 = 10**12  # run start, ticks


def interrupts_text(cpus: int, loc: list[int], other: list[int]) -> str:
    head = "           " + "".join(f"CPU{c:<8d}" for c in range(cpus))
    return (head + "\n"
            + "  LOC: " + " ".join(f"{v:10d}" for v in loc) + "   Local timer interrupts\n"
            + "  11: " + " ".join(f"{v:10d}" for v in other) + "   IR-IO-APIC  11-fasteoi  virtio0\n")


def periodic(period: float, dur: float, span: float, rng, jitter: float = 0.0, phase: float = 0.0,
             keep: float = 1.0) -> list[tuple[float, float]]:
    t = np.arange(phase, span - dur, period)
    t = t + rng.normal(0, jitter, len(t)) if jitter else t
    mask = rng.random(len(t)) < keep
    return [(float(a), dur) for a in t[mask]]


def selfish_doc(detours: list[tuple[float, float]], span: float, cpu: int = 1, node: str = "synth",
                loc_rate: float = 0.0) -> dict:
    """A selfish-detour run file with the given (start s, length s) detours on one core."""
    ev = []
    min_loop = 50
    for s, d in sorted(detours):
        t = T0 + int(s * HZ)
        v = int(d * HZ)
        ev.append([t, v, v - min_loop, 1])
    lost = sum(e[2] for e in ev)
    before = interrupts_text(2, [1000, 1000], [5, 5])
    loc = int(loc_rate * span)
    after = interrupts_text(2, [1000 + loc, 1000 + loc], [5, 9])
    return {
        "format": "isthmus-noise/1", "probe": "selfish", "command": "synthetic",
        "params": {"probe": "selfish", "duration_s": span, "k": 10},
        "meta": {"hostname": node, "kernel": "synthetic", "clock": {"kind": "tsc", "hz": HZ, "ref_tick": T0,
                                                                    "ref_monoraw_ns": 0},
                 "cpus": [{"cpu": cpu, "governor": "performance"}],
                 "before": {"wall": 100.0, "interrupts": before, "softirqs": "", "loadavg": "0.00"},
                 "after": {"wall": 100.0 + span, "interrupts": after, "softirqs": "", "loadavg": "0.00"}},
        "cores": [{"cpu": cpu, "tid": 4242, "pin_error": None, "t_begin": T0, "t_end": T0 + int(span * HZ),
                   "span_s": span, "samples": 10**8, "baseline": min_loop, "threshold": 500,
                   "noise_fraction": lost / (span * HZ), "n_outliers": len(ev), "events": ev,
                   "dropped_events": 0, "hist": []}],
    }


def ftq_doc(detours: list[tuple[float, float]], span: float, log2q: int = 20, cpu: int = 0) -> dict:
    """An FTQ run file: the counts the probe would see with the given detours, as its
    outlier events (runs of zero-count slots merged, as the probe writes them)."""
    q = 1 << log2q
    best = 40000
    nslots = int(span * HZ) // q
    lost = np.zeros(nslots)
    for s, d in detours:
        a, b = s * HZ, (s + d) * HZ
        i = int(a // q)
        while i < nslots and i * q < b:
            lost[i] += min(b, (i + 1) * q) - max(a, i * q)
            i += 1
    counts = np.round(best * (1 - np.minimum(lost, q) / q)).astype(int)
    first = (T0 >> log2q) + 1
    ev = []
    i = 0
    while i < nslots:
        c = counts[i]
        if c < best * 0.99:
            run = 1
            if c == 0:
                while i + run < nslots and counts[i + run] == 0:
                    run += 1
            ev.append([int((first + i) << log2q), int(c), int((best - c) * q / best) * run, run])
            i += run
        else:
            i += 1
    return {
        "format": "isthmus-noise/1", "probe": "ftq", "command": "synthetic",
        "params": {"probe": "ftq", "duration_s": span, "ftq_log2": log2q, "interval_ticks": q},
        "meta": {"hostname": "synth", "clock": {"kind": "tsc", "hz": HZ, "ref_tick": T0, "ref_monoraw_ns": 0},
                 "cpus": [], "before": {"wall": 0.0}, "after": {"wall": span}},
        "cores": [{"cpu": cpu, "tid": 1, "pin_error": None, "t_begin": int(first << log2q),
                   "t_end": int((first + nslots) << log2q), "samples": nslots, "baseline": best,
                   "threshold": int(best * 0.99), "noise_fraction": float(lost.sum() / (nslots * q)),
                   "events": ev, "dropped_events": 0, "overhead": {"median": 70, "p99": 90}}],
    }


def trace_lines(cpu: int, probe_tid: int, preempt: list[tuple[float, float, str, int]],
                vectors: list[tuple[float, float, str]]) -> str:
    """A text trace (x86-tsc clock) holding sched_switch pairs for the given preemptions
    (start s, length s, comm, pid) and irq_vectors entry/exit pairs."""
    rows = []
    for s, d, comm, pid in preempt:
        a, b = T0 + int(s * HZ), T0 + int((s + d) * HZ)
        rows.append((a, f"           probe-{probe_tid}   [{cpu:03d}] d..2. {a}: sched_switch: prev_comm=probe "
                        f"prev_pid={probe_tid} prev_prio=120 prev_state=R ==> next_comm={comm} next_pid={pid} next_prio=49"))
        rows.append((b, f"      {comm}-{pid}   [{cpu:03d}] d..2. {b}: sched_switch: prev_comm={comm} prev_pid={pid} "
                        f"prev_prio=49 prev_state=S ==> next_comm=probe next_pid={probe_tid} next_prio=120"))
    for s, d, vec in vectors:
        a, b = T0 + int(s * HZ), T0 + int((s + d) * HZ)
        rows.append((a, f"           probe-{probe_tid}   [{cpu:03d}] d.h1. {a}: {vec}_entry: vector=236"))
        rows.append((b, f"           probe-{probe_tid}   [{cpu:03d}] d.h1. {b}: {vec}_exit: vector=236"))
    rows.sort()
    return "# tracer: nop\n#\n" + "\n".join(r for _, r in rows) + "\n"


def write_run(d: Path, doc: dict, trace: str | None = None, name: str = "selfish-run.json") -> Path:
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_text(json.dumps(doc))
    if trace is not None:
        (d / "trace.txt").write_text(trace)
        (d / "run.json").write_text(json.dumps({"trace": {"clock": "x86-tsc", "lost_events": {}, "file": "trace.txt"}}))
    return d
