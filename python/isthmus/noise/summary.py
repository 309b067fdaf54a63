# isthmus/noise/summary.py: the analysis as text on stdout: per core the totals and one
# line per noise class (band, rate, period, cause), then the per-node totals.
from __future__ import annotations

import sys

from rich.console import Console
from rich.table import Table


def fmt_s(s: float | None) -> str:
    if s is None:
        return "-"
    a = abs(s)
    if a >= 1:
        return f"{s:.3f} s"
    if a >= 1e-3:
        return f"{s * 1e3:.3f} ms"
    if a >= 1e-6:
        return f"{s * 1e6:.2f} us"
    return f"{s * 1e9:.0f} ns"


_RULES = {"factor": "the probe's rule", "spread": "the ordinary samples' spread",
          "timer": "the clock's resolution", "fixed": "given"}


def _threshold_text(c: dict) -> str:
    """One line: what counted as a detour on the core, and why; the core's own timer
    verdict when it differs from a clean one."""
    t = c.get("threshold")
    if not t:
        return "threshold: not recorded (a run file from before issue 23)"
    why = _RULES.get(t["rule"], t["rule"])
    if "threshold_reads" in t:
        out = f"detour: an interval under {t['threshold_reads']} reads (baseline {t['baseline_reads']}), set by {why}"
    else:
        out = (f"detour: over {fmt_s(t['threshold_s'])} (baseline {fmt_s(t['baseline_s'])}), set by {why}")
    timer = c.get("timer") or {}
    v = timer.get("verdict", "")
    if ";" in v or not timer.get("usable", True):
        out += f"; timer on this cpu: {v}"
    return out


def print_summary(res: dict, console: Console | None = None) -> None:
    con = console or Console(highlight=False, width=None if sys.stdout.isatty() else 200)
    con.print(f"attribution: {res['attribution']}")
    clock = (res.get("meta") or {}).get("clock") or {}
    if clock.get("check"):
        con.print(f"clock: {clock['kind']} at {clock['hz'] / 1e9:.6f} GHz ({clock.get('hz_source', '')})")
        con.print(f"timer check: {clock['check']['verdict']}")
    for c in res["cores"]:
        ovh = c.get("overhead_ticks")
        o = f", overhead {ovh['median']}/{ovh['p99']} ticks (median/p99)" if ovh else ""
        con.print(f"[bold]{c['node']} cpu {c['cpu']}[/] ({c['probe']}, {c['span_s']:.1f} s): noise "
                  f"{100 * c['noise_fraction']:.3f}%, {c['per_s']:.1f} detours/s, largest {fmt_s(c['largest_s'])}{o}")
        con.print(f"  {_threshold_text(c)}")
        t = Table(show_edge=False, pad_edge=False)
        for col in ("class", "band", "detours", "per s", "median", "cause time", "share", "period", "check", "cause"):
            t.add_column(col, justify="left" if col in ("band", "cause", "check") else "right")
        for k in c["classes"]:
            p = k["period"]
            check = ""
            if p:
                check = "periodogram ok" if p["confirmed"] else "periodogram differs" if p["periodogram_s"] else \
                    "no periodogram peak"
                if not p["nyquist_ok"]:
                    check += ", below 2 FTQ intervals"
                if p["commensurate"]:
                    check += f", T/interval ~ {p['commensurate']}"
            t.add_row(str(k["index"]), f"{fmt_s(k['band_s'][0])}..{fmt_s(k['band_s'][1])}", str(k["detours"]),
                      f"{k['per_s']:.1f}", fmt_s(k["lost_median_s"]), fmt_s(k.get("cause_time_median_s")), f"{100 * k['share_of_span']:.3f}%",
                      fmt_s(p["period_s"]) if p else "-", check, k["label"])
        con.print(t)
        cat = c.get("noise_by_category")
        if cat:
            con.print("  noise by cause: " + ", ".join(f"{k} {100 * v:.3f}%" for k, v in
                                                      sorted(cat.items(), key=lambda kv: -kv[1])))
        if c.get("causes"):
            t = Table(show_edge=False, pad_edge=False)
            for col in ("cause", "kind", "times", "per s", "each (median)", "total", "period", "check"):
                t.add_column(col, justify="left" if col in ("cause", "kind", "check") else "right")
            procs = [k for k in c["causes"] if k["category"] == "other process"]
            shown = [k for k in c["causes"] if k["category"] != "other process" or k in procs[:8]]
            for k in shown:
                p = k["period"]
                t.add_row(k["cause"], k["category"], str(k["count"]), f"{k['per_s']:.1f}", fmt_s(k["time_median_s"]),
                          fmt_s(k["time_total_s"]), fmt_s(p["period_s"]) if p else "-",
                          ("periodogram ok" if p["confirmed"] else "periodogram differs") if p else "")
            con.print(t)
        if c.get("dropped_events"):
            con.print(f"  [yellow]{c['dropped_events']} detours beyond --max-events were counted, not kept: "
                      f"their time is in the noise fraction, not in the classes (raise --max-events)[/]")
    if len(res["nodes"]) > 1 or len(res["cores"]) > 1:
        for n in res["nodes"]:
            con.print(f"node {n['node']}: {n['cores']} cores, mean noise {100 * n['noise_fraction']:.3f}%, "
                      f"{n['per_s']:.1f} detours/s in all, largest {fmt_s(n['largest_s'])}")
    ic = res.get("inject_check")
    if ic:
        if ic["found"]:
            pe = f"{100 * ic['period_error']:+.2f}%" if ic.get("period_error") is not None else "no period"
            be = f"{100 * ic['burst_error']:+.2f}%" if ic.get("burst_error") is not None else "no duration"
            con.print(f"injector {ic['process']}: {ic['occurrences']} runs seen, period {fmt_s(ic['found_period_s'])} ({pe} "
                      f"against the requested), burst {fmt_s(ic['found_burst_s'])} ({be})")
        else:
            con.print(f"[yellow]injector {ic['process']}: no class is attributed to it[/]")
    load = res.get("load") or []
    if load and load[0]:
        con.print(f"load average before/after: {load[0]} / {load[1]}")
