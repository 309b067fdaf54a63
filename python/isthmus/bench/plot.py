# isthmus/bench/plot.py: pictures of benchmark results with matplotlib (Agg, no display):
# latency/bandwidth/time curves against message size per (library, profile, ranks),
# speed-up bars (geometric means with confidence intervals) and speed-up heatmaps
# (benchmark x size) from a comparison. PNG or SVG.
from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from .compare import Comparison  # noqa: E402

FORMATS = ("png", "svg")
YLABEL = {"latency": "one-way latency (µs)", "bandwidth": "bandwidth (MB/s)",
          "rate": "messages/s", "time": "time per operation (µs)"}


def _series_key(rec: dict) -> str:
    return f"{rec.get('library', '?')} · {rec.get('profile', '?')} · n={rec.get('ranks', '?')}"


def _figure_key(rec: dict) -> str:
    parts = [rec["benchmark"]]
    for k in ("op", "background", "partners", "fraction"):
        if rec.get(k) is not None:
            parts.append(f"{k}-{rec[k]}" if k != "op" else str(rec[k]))
    return "-".join(str(p) for p in parts).replace("/", "_").replace(" ", "")


def curves(points: list[dict], outdir: Path, fmt: str = "png") -> list[Path]:
    """One figure per benchmark (and collective/variant) with a line per series: the
    median over all runs' samples, a band from the lowest to the highest run median."""
    outdir.mkdir(parents=True, exist_ok=True)
    figs: dict[str, dict[str, dict[int, list[dict]]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for rec in points:
        if rec.get("status") != "ok" or rec.get("benchmark") == "placement" or not rec.get("samples"):
            continue
        figs[_figure_key(rec)][_series_key(rec)][int(rec["size"])].append(rec)
    made = []
    for fkey, series in sorted(figs.items()):
        sizes_all = {s for ser in series.values() for s in ser}
        if len(sizes_all) < 2:
            continue  # a single size is a bar, not a curve; the tables show it
        fig, ax = plt.subplots(figsize=(7, 4.2))
        metric = next(iter(next(iter(series.values())).values()))[0]["metric"]
        for skey, by_size in sorted(series.items()):
            xs = sorted(by_size)
            med = [float(np.median(np.concatenate([r["samples"] for r in by_size[x]]))) for x in xs]
            lo = [min(r["median"] for r in by_size[x]) for x in xs]
            hi = [max(r["median"] for r in by_size[x]) for x in xs]
            xplot = [max(x, 1) for x in xs]
            ax.plot(xplot, med, marker="o", ms=3, label=skey)
            ax.fill_between(xplot, lo, hi, alpha=0.2)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("message size (bytes)")
        ax.set_ylabel(YLABEL.get(metric, metric))
        ax.set_title(fkey)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
        fig.tight_layout()
        path = outdir / f"curve-{fkey}.{fmt}"
        fig.savefig(path)
        plt.close(fig)
        made.append(path)
    return made


def speedup_bars(cmp: Comparison, outdir: Path, fmt: str = "png", name: str = "speedup") -> list[Path]:
    outdir.mkdir(parents=True, exist_ok=True)
    rows = cmp.summary()
    if not rows:
        return []
    labels = [r[0] for r in rows]
    vals = np.array([r[2] for r in rows])
    err = np.array([[r[2] - r[3] for r in rows], [r[4] - r[2] for r in rows]])
    fig, ax = plt.subplots(figsize=(7, 0.35 * len(rows) + 1.5))
    y = np.arange(len(rows))
    colors = ["tab:green" if v >= 1 else "tab:red" for v in vals]
    ax.barh(y, vals, xerr=err, color=colors, alpha=0.8, capsize=3)
    ax.axvline(1.0, color="black", lw=1)
    ax.set_yticks(y, labels, fontsize=8)
    ax.set_xscale("log")
    ax.set_xlabel("speed-up of B over A (geometric mean, 95% bootstrap CI; > 1: B better)")
    ax.set_title(f"B = {cmp.b.text()}\nA = {cmp.a.text()}", fontsize=8)
    ax.invert_yaxis()
    fig.tight_layout()
    path = outdir / f"{name}.{fmt}"
    fig.savefig(path)
    plt.close(fig)
    return [path]


def heatmap(cmp: Comparison, outdir: Path, fmt: str = "png", name: str = "heatmap") -> list[Path]:
    """Speed-up per (benchmark/collective, size): log2 colour scale centred on 1."""
    outdir.mkdir(parents=True, exist_ok=True)
    groups = cmp.groups()
    if not groups:
        return []
    sizes = sorted({int(p.field("size")) for p in cmp.points})
    rows = sorted(groups)
    grid = np.full((len(rows), len(sizes)), np.nan)
    for i, g in enumerate(rows):
        per_size = defaultdict(list)
        for p in groups[g]:
            per_size[int(p.field("size"))].append(p.speedup)
        for j, s in enumerate(sizes):
            if per_size.get(s):
                grid[i, j] = float(np.exp(np.mean(np.log(per_size[s]))))
    fig, ax = plt.subplots(figsize=(max(5, 0.7 * len(sizes) + 3), 0.4 * len(rows) + 1.8))
    lg = np.log2(grid)
    lim = float(np.nanmax(np.abs(lg))) if np.isfinite(lg).any() else 1.0
    lim = lim or 1.0
    im = ax.imshow(lg, cmap="RdYlGn", vmin=-lim, vmax=lim, aspect="auto")
    ax.set_xticks(range(len(sizes)), [_size_label(s) for s in sizes], fontsize=8, rotation=45)
    ax.set_yticks(range(len(rows)), rows, fontsize=8)
    for i in range(len(rows)):
        for j in range(len(sizes)):
            if np.isfinite(grid[i, j]):
                ax.text(j, i, f"{grid[i, j]:.2g}", ha="center", va="center", fontsize=7)
    cb = fig.colorbar(im, ax=ax)
    cb.set_label("log2 speed-up of B over A")
    ax.set_xlabel("message size")
    ax.set_title(f"speed-up of B over A (geometric mean over the variants of a cell)\n"
                 f"B = {cmp.b.text()}\nA = {cmp.a.text()}", fontsize=7)
    fig.tight_layout()
    path = outdir / f"{name}.{fmt}"
    fig.savefig(path)
    plt.close(fig)
    return [path]


def placement_bars(points: list[dict], outdir: Path, fmt: str = "png") -> list[Path]:
    """Latency by distance class (placement benchmark), one bar group per series."""
    recs = [r for r in points if r.get("benchmark") == "placement" and r.get("status") == "ok"]
    if not recs:
        return []
    outdir.mkdir(parents=True, exist_ok=True)
    data: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in recs:
        data[_series_key(r)][r.get("distance", "?")].extend(r["samples"])
    classes = ["same-node", "same-site", "other-site"]
    fig, ax = plt.subplots(figsize=(7, 4))
    width = 0.8 / max(1, len(data))
    for k, (skey, by) in enumerate(sorted(data.items())):
        vals = [float(np.median(by[c])) if by.get(c) else np.nan for c in classes]
        ax.bar(np.arange(len(classes)) + k * width, vals, width, label=skey)
    ax.set_xticks(np.arange(len(classes)) + width * (len(data) - 1) / 2, classes)
    ax.set_yscale("log")
    ax.set_ylabel("one-way latency (µs), median")
    ax.legend(fontsize=7)
    fig.tight_layout()
    path = outdir / f"placement.{fmt}"
    fig.savefig(path)
    plt.close(fig)
    return [path]


def _size_label(s: int) -> str:
    for unit, v in (("M", 1 << 20), ("k", 1 << 10)):
        if s >= v and s % v == 0:
            return f"{s // v}{unit}"
    return str(s)
