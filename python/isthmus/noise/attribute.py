# isthmus/noise/attribute.py: naming the cause of each detour. With a kernel trace, a
# detour is attributed to the interrupt, softirq, vector (local timer, IPI) or task that
# overlaps it most on the same cpu; what overlaps nothing the guest kernel saw is
# "unattributed" (on a virtual machine: the hypervisor). Without a trace, the
# /proc/interrupts and /proc/softirqs deltas per probed cpu are the fallback evidence.
from __future__ import annotations

import re
from collections import defaultdict

import numpy as np

from .tracefs import Interval

UNATTRIBUTED = "unattributed (no kernel event overlaps: hypervisor, SMI or hardware)"


def friendly(name: str) -> str:
    if name == "local_timer":
        return "timer tick (local timer interrupt)"
    return name


def attribute_core(start: np.ndarray, end: np.ndarray, ivs: list[Interval],
                   hits: list[int] | None = None) -> list[list[tuple[str, int]]]:
    """For each detour [start_i, end_i) (ticks), the (cause, overlap ticks) pairs, largest
    first. A core's detours are disjoint and ordered, so each interval finds the detours
    it may overlap by two binary searches; the (interval, detour) pairs are expanded and
    summed per (detour, cause) with numpy. The indices of the intervals that overlap some
    detour are appended to `hits`."""
    out: list[list[tuple[str, int]]] = [[] for _ in range(len(start))]
    if not ivs or not len(start):
        return out
    order = np.argsort(start)
    s, e = np.asarray(start, dtype=np.int64)[order], np.asarray(end, dtype=np.int64)[order]
    e = np.maximum.accumulate(e)
    t0 = np.fromiter((i.t0 for i in ivs), dtype=np.int64, count=len(ivs))
    t1 = np.fromiter((i.t1 for i in ivs), dtype=np.int64, count=len(ivs))
    names, code = np.unique(np.array([i.name for i in ivs], dtype=object), return_inverse=True)
    j0 = np.searchsorted(e, t0, side="right")
    j1 = np.searchsorted(s, t1, side="left")
    n = np.maximum(j1 - j0, 0)
    iv = np.repeat(np.arange(len(ivs)), n)
    if not len(iv):
        return out
    first = np.repeat(j0, n)
    offs = np.arange(len(iv)) - np.repeat(np.cumsum(n) - n, n)
    det = first + offs
    ov = np.minimum(t1[iv], e[det]) - np.maximum(t0[iv], s[det])
    keep = ov > 0
    iv, det, ov = iv[keep], det[keep], ov[keep]
    if hits is not None:
        hits.extend(np.unique(iv).tolist())
    key = det * len(names) + code[iv]
    ukey, inv = np.unique(key, return_inverse=True)
    tot = np.bincount(inv, weights=ov).astype(np.int64)
    for k, v in zip(ukey.tolist(), tot.tolist()):
        j, c = divmod(k, len(names))
        out[order[j]].append((names[c], v))
    for lst in out:
        if len(lst) > 1:
            lst.sort(key=lambda kv: -kv[1])
    return out


KERNEL_THREADS = ("kworker/", "ksoftirqd/", "rcu_", "rcuc/", "rcuog/", "rcuop/", "migration/", "kcompactd",
                  "khugepaged", "kswapd", "watchdog/", "cpuhp/", "irq/", "idle_inject/", "jbd2/", "kthreadd")


def category(name: str) -> str:
    """irq, softirq, vector (local timer, IPIs), kernel thread, or task (other processes)."""
    if name.startswith("irq "):
        return "irq"
    if name.startswith("softirq "):
        return "softirq"
    if name.startswith("task "):
        comm = name[5:]
        return "kernel thread" if comm.startswith(KERNEL_THREADS) else "other process"
    if name == "idle":
        return "other process"
    return "vector"


def cause_table(ivs: list[Interval], hits: list[int], span_ticks: int, hz: float, min_count: int = 5) -> list[dict]:
    """Every cause seen inside detours, from its own trace intervals: how often, how long
    each time, and how regular (the period of its start times)."""
    from .period import class_period  # the same period analysis as for classes
    by: dict[str, list[Interval]] = defaultdict(list)
    for i in hits:
        by[friendly(ivs[i].name)].append(ivs[i])
    rows = []
    span = span_ticks / hz
    for name, lst in by.items():
        if len(lst) < min_count:
            continue
        t0 = np.array([i.t0 for i in lst], dtype=np.float64)
        d = np.array([i.t1 - i.t0 for i in lst], dtype=np.float64) / hz
        rel = (t0 - t0.min()) / hz
        per = class_period(rel, d, span, resolution_s=1.0 / hz)
        rows.append({"cause": name, "category": category(name), "count": len(lst), "per_s": len(lst) / span,
                     "time_median_s": float(np.median(d)), "time_total_s": float(d.sum()),
                     "period": per.as_dict() if per else None})
    rows.sort(key=lambda r: -r["time_total_s"])
    return rows


NOT_KEPT = "not kept (beyond --max-events)"


def noise_by_category(per_detour: list[list[tuple[str, int]]], lost: np.ndarray, span_ticks: int,
                      dropped_lost: int = 0) -> dict:
    """The noise fraction split by what caused it (overlap of causes with detours). The
    time lost in detours the probe counted but did not keep (beyond --max-events) is its
    own category, so the split adds up to the noise fraction."""
    out: dict[str, float] = defaultdict(float)
    if dropped_lost > 0:
        out[NOT_KEPT] = float(dropped_lost)
    for k, causes in enumerate(per_detour):
        covered = 0
        for name, ov in causes:
            o = min(ov, int(lost[k]) - covered)
            if o <= 0:
                break
            out[category(name)] += o
            covered += o
        out["unattributed"] += max(int(lost[k]) - covered, 0)
    return {k: v / span_ticks for k, v in out.items()}


def class_causes(per_detour: list[list[tuple[str, int]]], members: np.ndarray, lost: np.ndarray) -> list[dict]:
    """Causes of one class: how many of its detours each cause dominates, and the share
    of the class's lost time its overlaps cover."""
    votes: dict[str, int] = defaultdict(int)
    cover: dict[str, float] = defaultdict(float)
    total = float(lost[members].sum()) or 1.0
    for m in members:
        causes = per_detour[m]
        if not causes:
            votes[UNATTRIBUTED] += 1
            continue
        votes[friendly(causes[0][0])] += 1
        for name, ov in causes:
            cover[friendly(name)] += min(ov, lost[m])
    n = len(members) or 1
    rows = [{"cause": c, "detours": v, "share_of_detours": v / n, "share_of_time": cover.get(c, 0.0) / total}
            for c, v in votes.items()]
    rows.sort(key=lambda r: -r["detours"])
    return rows


_PROC_LINE = re.compile(r"^\s*([^:\s]+):\s+(.*)$")


def parse_proc_table(text: str) -> tuple[list[int], dict[str, tuple[list[int], str]]]:
    """/proc/interrupts or /proc/softirqs -> (cpu numbers, {line: (counts per column, label)})."""
    lines = text.splitlines()
    if not lines:
        return [], {}
    cpus = [int(c[3:]) for c in lines[0].split() if c.startswith("CPU")]
    rows: dict[str, tuple[list[int], str]] = {}
    for ln in lines[1:]:
        m = _PROC_LINE.match(ln)
        if not m:
            continue
        parts = m.group(2).split()
        counts = []
        for p in parts[: len(cpus)]:
            if not p.isdigit():
                break
            counts.append(int(p))
        label = " ".join(parts[len(counts):])
        rows[m.group(1)] = (counts, label)
    return cpus, rows


def proc_deltas(before: str | None, after: str | None, cpu: int, seconds: float) -> list[dict]:
    """Per-line counts on one cpu between two snapshots, as rates, busiest first."""
    if not before or not after or seconds <= 0:
        return []
    cb, rb = parse_proc_table(before)
    ca, ra = parse_proc_table(after)
    if cpu not in cb or cpu not in ca:
        return []
    ib, ia = cb.index(cpu), ca.index(cpu)
    out = []
    for key, (counts, label) in ra.items():
        if key not in rb or ia >= len(counts) or ib >= len(rb[key][0]):
            continue
        d = counts[ia] - rb[key][0][ib]
        if d > 0:
            out.append({"line": key, "label": label, "count": d, "per_s": d / seconds})
    out.sort(key=lambda r: -r["count"])
    return out


def match_rate(rate: float, deltas: list[dict], period_s: float | None = None, tol: float = 0.15) -> dict | None:
    """The interrupt line that matches a class: by its period when it has one (missed
    or absorbed events do not change a period; 5%), else by its event rate (15%)."""
    want, rel = (1.0 / period_s, 0.05) if period_s else (rate, tol)
    best = None
    for r in deltas:
        if want > 0 and abs(r["per_s"] - want) <= rel * want:
            if best is None or abs(r["per_s"] - want) < abs(best["per_s"] - want):
                best = r
    return best
