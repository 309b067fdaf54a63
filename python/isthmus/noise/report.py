# isthmus/noise/report.py: plots (matplotlib) and a self-contained HTML report (images
# embedded) of an analysed run: per core the detour timeline coloured by class, the
# density of detour lengths with the class bands, per-class inter-arrival histograms,
# and the smoothed periodogram; then the class table with periods and causes.
from __future__ import annotations

import base64
import html
import io
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from scipy import signal  # noqa: E402

from .classes import density  # noqa: E402
from .period import daniell_weights  # noqa: E402
from .runs import Core, Run  # noqa: E402
from .summary import fmt_s  # noqa: E402


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()


def _class_of(core_res: dict, lost_s: np.ndarray) -> np.ndarray:
    cls = np.full(len(lost_s), -1)
    members = core_res.get("_members")
    for k in core_res["classes"]:
        if members is not None:
            cls[members[k["index"]]] = k["index"]
        else:
            lo, hi = k["band_s"]
            cls[(lost_s >= lo) & (lost_s < hi)] = k["index"]
    return cls


def core_figures(core: Core, cres: dict) -> list[tuple[str, str]]:
    lost = core.lost / core.hz
    t = core.seconds(core.start)
    cls = _class_of(cres, lost)
    figs = []
    fig, ax = plt.subplots(figsize=(9, 3))
    for k in cres["classes"]:
        m = cls == k["index"]
        ax.scatter(t[m], lost[m] * 1e6, s=4, label=f"class {k['index']}: {k['label'][:40]}")
    ax.set_yscale("log")
    ax.set_xlabel("time in run (s)")
    ax.set_ylabel("detour (us)")
    ax.legend(fontsize=7, loc="upper right")
    ax.set_title(f"cpu {core.cpu}: detours over time")
    fig.tight_layout()
    figs.append(("Detours over time", _png(fig)))
    if len(lost) >= 2:
        x = np.log10(np.maximum(lost, 1e-12))
        grid = np.linspace(x.min() - 0.3, x.max() + 0.3, 512)
        fig, ax = plt.subplots(figsize=(9, 3))
        ax.plot(10 ** grid * 1e6, density(x, grid))
        ax.set_xscale("log")
        for k in cres["classes"]:
            ax.axvspan(k["band_s"][0] * 1e6, k["band_s"][1] * 1e6, alpha=0.12)
        ax.set_xlabel("detour (us), log scale")
        ax.set_ylabel("density of log10(detour)")
        ax.set_title("Kernel density (Silverman bandwidth) and the class bands")
        fig.tight_layout()
        figs.append(("Density of detour lengths", _png(fig)))
    per = sorted((k for k in cres["classes"] if k["detours"] >= 3), key=lambda k: -k["lost_total_s"])[:6]
    if per:
        fig, axes = plt.subplots(1, len(per), figsize=(3.2 * len(per) + 1, 2.8), squeeze=False)
        for ax, k in zip(axes[0], per):
            tt = np.sort(t[cls == k["index"]])
            d = np.diff(tt) * 1e3
            if len(d):
                ax.hist(d, bins=min(60, max(5, len(d) // 4)))
            if k["period"]:
                ax.axvline(k["period"]["period_s"] * 1e3, color="k", ls="--", lw=0.8)
            ax.set_xlabel("inter-arrival (ms)")
            ax.set_title(f"class {k['index']}", fontsize=9)
        fig.tight_layout()
        figs.append(("Inter-arrival times per class (dashed: period found)", _png(fig)))
    if len(t) >= 8 and core.span_s > 0:
        dt = core.interval / core.hz if core.interval else 50e-6
        n = int(core.span_s / dt)
        if n >= 64:
            x = np.zeros(n)
            np.add.at(x, np.clip((t / dt).astype(int), 0, n - 1), lost)
            f, p = signal.periodogram(x - x.mean(), fs=1 / dt, detrend=False)
            ps = np.convolve(p, daniell_weights(10), mode="same")
            fig, ax = plt.subplots(figsize=(9, 3))
            ax.loglog(f[1:], ps[1:])
            ax.set_xlabel("frequency (Hz)")
            ax.set_ylabel("smoothed power")
            ax.set_title("Smoothed periodogram of lost time (modified Daniell, m = 10)")
            fig.tight_layout()
            figs.append(("Periodogram", _png(fig)))
    return figs


def _table(rows: list[list[str]], head: list[str]) -> str:
    h = "".join(f"<th>{html.escape(c)}</th>" for c in head)
    b = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><tr>{h}</tr>{b}</table>"


def write_report(run: Run, res: dict, out_dir: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    meta = res["meta"]
    parts = [f"<h1>OS noise: {html.escape(res['probe'])} run on {html.escape(str(meta.get('hostname')))}</h1>",
             "<p>" + html.escape(res["attribution"]) + "</p>",
             _table([[k, str(v)] for k, v in meta.items()] + [["governors", str(res["governors"])],
                                                              ["load average before / after", str(res["load"])]],
                    ["fact", "value"])]
    for core, cres in zip(run.cores, res["cores"]):
        parts.append(f"<h2>{html.escape(cres['node'])} cpu {cres['cpu']}</h2>")
        ovh = cres.get("overhead_ticks")
        parts.append(f"<p>noise {100 * cres['noise_fraction']:.4f}% of {cres['span_s']:.2f} s, "
                     f"{cres['per_s']:.1f} detours/s, largest {fmt_s(cres['largest_s'])}"
                     + (f", per-sample overhead {ovh['median']} ticks median, {ovh['p99']} p99" if ovh else "")
                     + "</p>")
        rows = []
        for k in cres["classes"]:
            p = k["period"]
            rows.append([k["index"], f"{fmt_s(k['band_s'][0])} .. {fmt_s(k['band_s'][1])}", k["detours"],
                         f"{k['per_s']:.2f}", fmt_s(k["lost_median_s"]),
                         f"{fmt_s(k['lost_p10_s'])} .. {fmt_s(k['lost_p90_s'])}", f"{100 * k['share_of_span']:.4f}%",
                         (f"{fmt_s(p['period_s'])} ± {fmt_s(p['resolution_s'])}" if p else "-"),
                         (fmt_s(p["periodogram_s"]) if p and p["periodogram_s"] else "-"), k["label"],
                         "; ".join(f"{c['cause']} ({100 * c['share_of_detours']:.0f}%)" for c in k["causes"][:3])])
        parts.append(_table(rows, ["class", "band", "detours", "per s", "median", "p10..p90", "share of time",
                                   "period (inter-arrival)", "periodogram", "name", "causes (share of detours)"]))
        if cres["interrupts"]:
            parts.append("<p>interrupts on this cpu during the run:</p>" + _table(
                [[r["line"], r["label"], r["count"], f"{r['per_s']:.1f}"] for r in cres["interrupts"]],
                ["line", "label", "count", "per s"]))
        for title, img in core_figures(core, cres):
            parts.append(f"<h3>{html.escape(title)}</h3><img src='data:image/png;base64,{img}'>")
    style = ("body{font-family:sans-serif;max-width:1100px;margin:auto}table{border-collapse:collapse;"
             "font-size:13px}td,th{border:1px solid #bbb;padding:2px 6px;text-align:left}")
    page = out_dir / "index.html"
    page.write_text(f"<!doctype html><html><head><meta charset='utf-8'><title>isthmus noise report</title>"
                    f"<style>{style}</style></head><body>{''.join(parts)}</body></html>")
    return page
