# isthmus/noise/analyze.py: the analysis of a run: per core the summary (noise fraction,
# events per second, largest detour), the noise classes with their densities, periods
# and causes; per node the same totals; names for classes (the timer tick, a task).
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import attribute
from .classes import find_classes
from .period import class_period
from .runs import Core, Run
from .tracefs import make_converter, parse_trace

TICK_HZ = (100, 250, 300, 1000)


def _tick_name(period: float | None) -> str | None:
    if not period:
        return None
    for hz in TICK_HZ:
        if abs(period * hz - 1.0) <= 0.02:
            return f"timer tick ({hz} Hz)"
    return None


def _label(causes: list[dict], period: dict | None, deltas_match: dict | None) -> str:
    tick = _tick_name(period["period_s"] if period else None)
    top = causes[0]["cause"] if causes else None
    if top and top.startswith("timer tick"):
        return tick or "timer tick"
    if top and top != attribute.UNATTRIBUTED and causes[0]["share_of_detours"] >= 0.5:
        return top
    if tick:
        return tick + ("" if causes else ", by its period")
    if deltas_match:
        return f"likely {deltas_match['line']} ({deltas_match['label']}), by its rate"
    return top or "unknown"


def _trace_intervals(run: Run) -> tuple[dict[int, list], str]:
    """cpu -> intervals from the run's trace, or ({}, why not)."""
    if not run.trace:
        return {}, "no kernel trace recorded with this run"
    if run.trace.get("error"):
        return {}, run.trace["error"]
    path = (run.path if run.path.is_dir() else run.path.parent) / run.trace["file"]
    if not path.exists():
        return {}, f"trace file {path} missing"
    clock = run.meta["clock"]
    conv = make_converter(run.trace["clock"], float(clock["hz"]), int(clock.get("ref_tick", 0)),
                          int(clock.get("ref_monoraw_ns", 0)))
    tids = {c.cpu: c.tid for c in run.cores}
    ivs = parse_trace(path, conv, tids)
    by: dict[int, list] = {}
    for i in ivs:
        by.setdefault(i.cpu, []).append(i)
    return by, ""


def analyze_core(core: Core, ivs: list | None, meta: dict) -> dict:
    hz = core.hz
    lost_s = core.lost / hz
    t_s = core.seconds(core.start)
    span = core.span_s
    grid = core.interval / hz if core.probe == "ftq" else 0.0
    per_detour = attribute.attribute_core(core.start, np.maximum(core.window, core.start + core.lost), ivs or [])
    deltas = attribute.proc_deltas(meta.get("before", {}).get("interrupts"), meta.get("after", {}).get("interrupts"),
                                   core.cpu, meta.get("after", {}).get("wall", 0) - meta.get("before", {}).get("wall", 0))
    classes = []
    for c in find_classes(lost_s):
        m = c.members
        per = class_period(t_s[m], lost_s[m], span, grid_s=grid, resolution_s=1.0 / hz)
        causes = attribute.class_causes(per_detour, m, core.lost) if ivs is not None else []
        rate = len(m) / span if span > 0 else 0.0
        dm = attribute.match_rate(rate, deltas) if ivs is None else None
        pd = per.as_dict() if per else None
        classes.append({
            "index": c.index, "band_s": [c.lo, c.hi], "detours": int(len(m)), "per_s": rate,
            "lost_median_s": float(np.median(lost_s[m])), "lost_p10_s": float(np.percentile(lost_s[m], 10)),
            "lost_p90_s": float(np.percentile(lost_s[m], 90)), "lost_total_s": float(lost_s[m].sum()),
            "share_of_span": float(lost_s[m].sum() / span) if span else 0.0,
            "period": pd, "causes": causes[:5], "label": _label(causes, pd, dm),
        })
    largest = float(lost_s.max()) if len(lost_s) else 0.0
    ovh = core.overhead or {}
    return {
        "node": core.node, "cpu": core.cpu, "probe": core.probe, "span_s": span, "samples": core.samples,
        "noise_fraction": core.noise_fraction, "detours": int(len(lost_s)),
        "per_s": len(lost_s) / span if span else 0.0, "largest_s": largest,
        "overhead_ticks": {"median": ovh.get("median"), "p99": ovh.get("p99")} if ovh else None,
        "dropped_events": core.dropped_events, "classes": classes, "interrupts": deltas[:8],
    }


def analyze(run: Run) -> dict:
    by_cpu, why = _trace_intervals(run)
    traced = bool(run.trace) and not why
    meta = run.meta
    cores = [analyze_core(c, by_cpu.get(c.cpu, []) if traced else None, meta) for c in run.cores]
    nodes: dict[str, dict] = {}
    for c in cores:
        n = nodes.setdefault(c["node"], {"node": c["node"], "cores": 0, "noise_fraction": 0.0, "per_s": 0.0,
                                         "largest_s": 0.0})
        n["cores"] += 1
        n["noise_fraction"] += c["noise_fraction"]
        n["per_s"] += c["per_s"]
        n["largest_s"] = max(n["largest_s"], c["largest_s"])
    for n in nodes.values():
        n["noise_fraction"] /= n["cores"]
    return {
        "probe": run.probe, "path": str(run.path),
        "attribution": "kernel trace (tracefs: irq, softirq, irq_vectors, sched_switch)" if traced else
                       f"no kernel trace: {why}; /proc/interrupts deltas per cpu instead",
        "trace": run.trace, "inject": {k: v for k, v in (run.inject or {}).items() if k != "log"} or None,
        "cores": cores, "nodes": list(nodes.values()),
        "meta": {k: meta.get(k) for k in ("hostname", "kernel", "cmdline", "cmdline_params", "isolated", "nohz_full",
                                         "cpu_model", "turbo", "clocksource", "clock")},
        "governors": {str(c["cpu"]): c.get("governor") for c in meta.get("cpus", [])},
        "load": [meta.get("before", {}).get("loadavg"), meta.get("after", {}).get("loadavg")],
    }
