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
    """A class's name: from the kernel trace when there is one (the timer tick when the
    local timer interrupt dominates, with its rate from the period); without a trace from
    the interrupt line whose count rate matches the class's rate."""
    tick = _tick_name(period["period_s"] if period else None)
    top = causes[0]["cause"] if causes else None
    if top and top.startswith("timer tick"):
        return tick or "timer tick"
    if top and top != attribute.UNATTRIBUTED and causes[0]["share_of_detours"] >= 0.5:
        return top
    if deltas_match:
        if deltas_match["line"] == "LOC":
            return (tick or "timer tick") + ", by its rate (local timer interrupts)"
        return f"likely {deltas_match['line']} ({deltas_match['label']}), by its rate"
    if top:
        return top
    if period:
        return f"periodic, {1.0 / period['period_s']:.4g} Hz (no cause known)"
    return "unknown"


def _name_ticks(rows: list[dict]) -> list[dict]:
    """Timer causes whose period is a kernel tick rate are the timer tick by name."""
    for r in rows:
        tick = _tick_name(r["period"]["period_s"] if r["period"] else None)
        if tick and (r["cause"].startswith("timer tick") or r["cause"] == "softirq TIMER"):
            r["cause"] = f"{r['cause']}: {tick}"
    return rows


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


def _cause_time(per_detour: list, members: np.ndarray, cause: str, hz: float) -> float | None:
    """Median time the class's main cause itself held the cpu in each detour (a detour
    can hold more: what ran after the cause before the probe got the cpu back)."""
    if cause == attribute.UNATTRIBUTED:
        return None
    t = [sum(ov for name, ov in per_detour[m] if attribute.friendly(name) == cause) for m in members]
    t = [v for v in t if v > 0]
    return float(np.median(t)) / hz if t else None


def split_by_cause(members: np.ndarray, per_detour: list, min_count: int = 5, min_share: float = 0.05) -> list[np.ndarray]:
    """A band's detours grouped by the cause that dominates each (largest overlap): a
    cause holding enough of the band becomes its own class; the rest stay together."""
    if not per_detour or len(members) == 0:
        return [members]
    top = [attribute.friendly(per_detour[m][0][0]) if per_detour[m] else attribute.UNATTRIBUTED for m in members]
    need = max(min_count, int(min_share * len(members)))
    groups: dict[str, list[int]] = {}
    for m, c in zip(members, top):
        groups.setdefault(c, []).append(int(m))
    big = sorted((g for g in groups.values() if len(g) >= need), key=len, reverse=True)
    rest = [m for g in groups.values() if len(g) < need for m in g]
    out = [np.asarray(sorted(g)) for g in big]
    if rest:
        out.append(np.asarray(sorted(rest)))
    return out


def _threshold(core: Core) -> dict | None:
    """What counted as a detour on this core: the baseline, the threshold (time, or for
    FTQ reads per interval) and the rule that set it (docs/noise.md, "Calibration")."""
    c = core.calib
    if not c:
        return None
    if core.probe == "ftq":
        return {"baseline_reads": c["typical"], "threshold_reads": c["threshold"], "rule": c["rule"]}
    return {"baseline_s": c["typical"] / core.hz, "threshold_s": c["threshold"] / core.hz, "rule": c["rule"]}


def analyze_core(core: Core, ivs: list | None, meta: dict) -> dict:
    hz = core.hz
    lost_s = core.lost / hz
    t_s = core.seconds(core.start)
    span = core.span_s
    grid = core.interval / hz if core.probe == "ftq" else 0.0
    hits: list[int] = []
    per_detour = attribute.attribute_core(core.start, np.maximum(core.window, core.start + core.lost), ivs or [], hits)
    span_ticks = core.t_end - core.t_begin
    deltas = attribute.proc_deltas(meta.get("before", {}).get("interrupts"), meta.get("after", {}).get("interrupts"),
                                   core.cpu, meta.get("after", {}).get("wall", 0) - meta.get("before", {}).get("wall", 0))
    classes = []
    groups = []
    for band in find_classes(lost_s):
        groups += split_by_cause(band.members, per_detour) if ivs is not None else [band.members]
    for idx, m in enumerate(groups):
        c_lo, c_hi = float(lost_s[m].min()), float(np.nextafter(lost_s[m].max(), np.inf))
        per = class_period(t_s[m], lost_s[m], span, grid_s=grid, resolution_s=1.0 / hz)
        causes = attribute.class_causes(per_detour, m, core.lost) if ivs is not None else []
        rate = len(m) / span if span > 0 else 0.0
        pd = per.as_dict() if per else None
        dm = attribute.match_rate(rate, deltas, per.period_s if per else None) if ivs is None else None
        cause_t = _cause_time(per_detour, m, causes[0]["cause"], hz) if causes else None
        classes.append({
            "index": idx, "band_s": [c_lo, c_hi], "detours": int(len(m)), "per_s": rate,
            "lost_median_s": float(np.median(lost_s[m])), "lost_p10_s": float(np.percentile(lost_s[m], 10)),
            "lost_p90_s": float(np.percentile(lost_s[m], 90)), "lost_total_s": float(lost_s[m].sum()),
            "share_of_span": float(lost_s[m].sum() / span) if span else 0.0,
            "period": pd, "causes": causes[:5], "label": _label(causes, pd, dm),
            "cause_time_median_s": cause_t,
        })
    largest = float(lost_s.max()) if len(lost_s) else 0.0
    ovh = core.overhead or {}
    return {
        "node": core.node, "cpu": core.cpu, "probe": core.probe, "span_s": span, "samples": core.samples,
        "noise_fraction": core.noise_fraction, "detours": int(len(lost_s)),
        "per_s": len(lost_s) / span if span else 0.0, "largest_s": largest,
        "overhead_ticks": {"median": ovh.get("median"), "p99": ovh.get("p99")} if ovh else None,
        "threshold": _threshold(core),
        "timer": core.timer,
        "dropped_events": core.dropped_events, "classes": classes, "interrupts": deltas[:8],
        "_members": groups,  # detour indices per class, for plots (not written to analysis.json)
        "causes": _name_ticks(attribute.cause_table(ivs, hits, span_ticks, hz)) if ivs else [],
        "noise_by_category": attribute.noise_by_category(per_detour, core.lost, span_ticks,
                                                          core.dropped_lost) if ivs is not None else None,
    }


def inject_check(inj: dict | None, cores: list[dict]) -> dict | None:
    """What the injector's log says it did against what the analysis found: the cause
    named after the injector's process (period of its runs, and the time each held the cpu)."""
    if not inj or not inj.get("log"):
        return None
    log = np.asarray(inj["log"], dtype=np.float64)
    hz = float(inj["hz"])
    truth_p = float(np.median(np.diff(log[:, 0]))) / hz if len(log) > 1 else None
    truth_d = float(np.median(log[:, 1] - log[:, 0])) / hz
    who = f"isthmus-inject[{inj['pid']}]"
    found = None
    for c in cores:
        if c["cpu"] != inj.get("cpu"):
            continue
        for k in c.get("causes", []):
            if who in k["cause"]:
                found = k
    out = {"process": who, "period_s": truth_p, "burst_s": truth_d, "found": found is not None}
    if found:
        fp = found["period"]["period_s"] if found["period"] else None
        out.update({"occurrences": found["count"], "found_period_s": fp, "found_burst_s": found["time_median_s"],
                    "period_error": (fp - inj["period_s"]) / inj["period_s"] if fp else None,
                    "burst_error": (found["time_median_s"] - inj["burst_s"]) / inj["burst_s"]})
    return out


def public(res: dict) -> dict:
    """The analysis without its in-memory parts (keys starting with "_"), for JSON."""
    return {**res, "cores": [{k: v for k, v in c.items() if not k.startswith("_")} for c in res["cores"]]}


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
        "inject_check": inject_check(run.inject, cores),
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
