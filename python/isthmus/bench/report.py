# isthmus/bench/report.py: `isthmus bench report`: one self-contained HTML file (images
# embedded, no external files) with the plots, per-point statistics, comparisons, failed
# launches, the plan, the exact commands and the machine's environment.
from __future__ import annotations

import base64
import html
import json
import tempfile
from collections import defaultdict
from pathlib import Path

import numpy as np

from . import plot
from .compare import Comparison
from .results import Results
from .stats import summarize

CSS = """body{font-family:system-ui,sans-serif;margin:2em;max-width:1200px}
table{border-collapse:collapse;margin:1em 0;font-size:13px}td,th{border:1px solid #ccc;padding:3px 7px;text-align:right}
th{background:#eee}td.l,th.l{text-align:left}pre{background:#f6f6f6;padding:1em;overflow-x:auto;font-size:12px}
.bad{color:#b00}.good{color:#070}img{max-width:100%;border:1px solid #ddd;margin:.5em 0}"""


def _e(x) -> str:
    return html.escape(str(x))


def _img(path: Path) -> str:
    if path.suffix == ".svg":
        return f'<div>{path.read_text()}</div>'
    data = base64.b64encode(path.read_bytes()).decode()
    return f'<img alt="{_e(path.stem)}" src="data:image/png;base64,{data}">'


def _fmt(v: float) -> str:
    if v is None or not np.isfinite(v):
        return "–"
    return f"{v:.4g}" if abs(v) < 1e5 else f"{v:.3e}"


def _table(header: list[str], rows: list[list], left: int = 1) -> str:
    out = ["<table><tr>" + "".join(f'<th class="{"l" if i < left else ""}">{_e(h)}</th>'
                                   for i, h in enumerate(header)) + "</tr>"]
    for r in rows:
        out.append("<tr>" + "".join(f'<td class="{"l" if i < left else ""}">{c}</td>'
                                    for i, c in enumerate(r)) + "</tr>")
    return "".join(out) + "</table>"


def point_rows(points: list[dict]) -> list[list]:
    """One row per (series, point): median over all runs' samples, min/p99/max of the
    samples, and the run-to-run spread of the per-run medians."""
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in points:
        if r.get("status") != "ok" or not r.get("samples"):
            continue
        params = " ".join(f"{k}={r[k]}" for k in ("op", "peer", "distance", "partners", "remote_partners",
                                                   "background", "fraction", "window") if r.get(k) is not None)
        groups[(r["benchmark"], params, int(r["size"]), r.get("library"), r.get("profile"),
                r.get("ranks"), r.get("unit", ""))].append(r)
    rows = []
    for key in sorted(groups, key=lambda k: tuple(str(x) for x in k[:2]) + (k[2],) + tuple(str(x) for x in k[3:])):
        recs = groups[key]
        s = summarize(np.concatenate([r["samples"] for r in recs]))
        run_meds = [r["median"] for r in recs]
        spread = (max(run_meds) - min(run_meds)) / float(np.median(run_meds)) if len(recs) > 1 else float("nan")
        bench, params, size, lib, prof, ranks, unit = key
        rows.append([_e(bench), _e(params), size, _e(lib), _e(prof), ranks, _e(unit), _fmt(s.median),
                     _fmt(s.min), _fmt(s.p99), _fmt(s.max), len(recs), s.n,
                     "–" if len(recs) < 2 else f"{100 * spread:.1f} %"])
    return rows


def comparison_html(cmp: Comparison, imgdir: Path, tag: str) -> str:
    parts = [f"<h3>B = {_e(cmp.b.text())} against A = {_e(cmp.a.text())}</h3>"]
    parts.append(f"<p>{len(cmp.points)} matched points ({cmp.only_a} only in A, {cmp.only_b} only in B). "
                 "Ratio = median(B)/median(A) over all runs' samples, 95% two-level bootstrap interval "
                 "(runs, then repetitions). Speed-up &gt; 1 means B is better. Averages are geometric "
                 "means.</p>")
    rows = []
    for name, n, g, lo, hi in cmp.summary():
        cls = "good" if lo > 1 else "bad" if hi < 1 else ""
        rows.append([_e(name), n, f'<span class="{cls}">{g:.3g}</span>', f"{lo:.3g} – {hi:.3g}"])
    parts.append(_table(["group", "points", "speed-up (geo. mean)", "95% CI"], rows))
    for path in plot.speedup_bars(cmp, imgdir, "png", f"speedup-{tag}") + plot.heatmap(cmp, imgdir, "png", f"heatmap-{tag}"):
        parts.append(_img(path))
    prow = []
    for p in cmp.points:
        lo, hi = p.ratio.low, p.ratio.high
        prow.append([_e(p.label()), p.field("size"), _e(p.unit), _fmt(p.a_median), _fmt(p.b_median),
                     f"{p.ratio.value:.3g}", f"{lo:.3g} – {hi:.3g}", f"{p.speedup:.3g}", f"{p.a_runs}/{p.b_runs}"])
    parts.append("<details><summary>every matched point</summary>" +
                 _table(["point", "size", "unit", "A median", "B median", "B/A", "95% CI", "speed-up", "runs A/B"], prow) +
                 "</details>")
    return "".join(parts)


def write_report(results: Results, comparisons: list[Comparison], out: Path, title: str) -> Path:
    with tempfile.TemporaryDirectory(prefix="isthmus-report-") as tmp:
        imgdir = Path(tmp)
        body = [f"<h1>{_e(title)}</h1>"]
        nfail = len(results.failed)
        body.append(f"<p>{len(results.ok_points)} measured points from {len(results.launches)} launches "
                    f"({nfail} failed) in {', '.join(_e(s) for s in results.sources)}.</p>")
        if comparisons:
            body.append("<h2>Comparisons</h2>")
            for i, c in enumerate(comparisons):
                body.append(comparison_html(c, imgdir, str(i)))
        body.append("<h2>Curves</h2><p>Line: median over the samples of all runs; band: lowest to highest "
                    "median of a single run (run-to-run spread).</p>")
        for path in plot.curves(results.points, imgdir, "png") + plot.placement_bars(results.points, imgdir, "png"):
            body.append(_img(path))
        body.append("<h2>Every point</h2>")
        body.append(_table(["benchmark", "parameters", "size", "library", "profile", "ranks", "unit", "median",
                            "min", "p99", "max", "runs", "samples", "run-to-run spread (max-min)/median"],
                           point_rows(results.points), left=2))
        skipped = [p for p in results.points if p.get("status") == "skipped"]
        if skipped:
            body.append("<h3>Points the benchmark could not measure</h3>")
            body.append(_table(["benchmark", "library", "profile", "ranks", "reason"],
                               [[_e(p["benchmark"]), _e(p.get("library")), _e(p.get("profile")), p.get("ranks"),
                                 _e(p.get("reason"))] for p in skipped]))
        body.append(f"<h2>Failed launches ({nfail})</h2>")
        if nfail:
            body.append(_table(["benchmark", "library", "profile", "ranks", "run", "error", "command"],
                               [[_e(f.get("benchmark")), _e(f.get("library")), _e(f.get("profile")), f.get("ranks"),
                                 f.get("run"), _e(f.get("error")), f"<code>{_e(f.get('command'))}</code>"]
                                for f in results.failed]))
        else:
            body.append("<p>none</p>")
        body.append("<h2>Exact commands</h2><pre>")
        cmds: dict[str, int] = defaultdict(int)
        for l in results.launches:
            cmds[l.get("command", "")] += 1
        body.append(_e("\n".join(f"[{n}x] {c}" for c, n in cmds.items())))
        body.append("</pre>")
        for m in results.meta:
            body.append(f"<h2>Campaign {_e(m.get('name'))}</h2>")
            for s in m.get("sessions", []):
                env = s.get("environment", {})
                body.append(f"<p>session {_e(s.get('start'))} – {_e(s.get('end', 'interrupted'))}: "
                            f"<code>{_e(' '.join(s.get('command', [])))}</code></p>")
                body.append(_table(["", "value"], [[_e(k), _e(v)] for k, v in env.items()]))
            body.append(f"<h3>Plan</h3><pre>{_e(m.get('plan', ''))}</pre>")
        cfgs = {json.dumps(p.get("config", {}).get("library_version", "")) for p in results.ok_points}
        body.append("<h2>MPI libraries (MPI_Get_library_version)</h2><pre>" +
                    _e("\n\n".join(json.loads(c) for c in sorted(cfgs))) + "</pre>")
        doc = (f"<!doctype html><html><head><meta charset='utf-8'><title>{_e(title)}</title>"
               f"<style>{CSS}</style></head><body>{''.join(body)}</body></html>")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(doc)
    return out
