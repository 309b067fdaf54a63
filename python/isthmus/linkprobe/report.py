# isthmus/linkprobe/report.py: how probe results are shown: an OSU-style text table (one
# `#` header block, then aligned columns), JSON lines, and a plot of throughput against
# window size with the window/RTT law drawn for comparison (PNG or SVG, by extension).
from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

from ..errors import IsthmusError
from .sweep import fmt_size


def table(records: Sequence[dict], title: str) -> str:
    out = [f"# isthmus link probe: {title}"]
    for r in records:
        if r["kind"] != "rtt":
            continue
        if r["ok"]:
            out.append(f"# RTT ({r['size']} bytes, {r['count']} round trips): min {r['min_us'] / 1e3:.3f} ms"
                       f"  median {r['median_us'] / 1e3:.3f} ms  p99 {r['p99_us'] / 1e3:.3f} ms"
                       f"  max {r['max_us'] / 1e3:.3f} ms")
        else:
            out.append(f"# RTT: FAILED: {r['error']}")
    out.append(f"# {'cc':<8}{'streams':>8}{'window':>9}{'Mbit/s':>11}{'MB/s':>10}"
               f"{'law Mbit/s':>12}{'retrans':>9}{'tcp rtt ms':>12}")
    for r in records:
        if r["kind"] != "tput":
            continue
        head = f"  {r['cc']:<8}{r['streams']:>8}{fmt_size(r['window']):>9}"
        if not r["ok"]:
            out.append(f"{head}  FAILED: {r['error']}")
            continue
        law = r.get("law_mbit_s")
        out.append(f"{head}{r['mbit_s']:>11.1f}{r['mbit_s'] / 8:>10.2f}"
                   f"{(f'{law:.1f}' if law else '-'):>12}{r['retrans']:>9}{r['rtt_us'] / 1e3:>12.3f}")
    return "\n".join(out) + "\n"


def write_json(records: Sequence[dict], path: Path) -> None:
    with open(path, "a") as f:
        for r in records:
            f.write(json.dumps(r, sort_keys=True) + "\n")


def plot(records: Sequence[dict], path: Path, title: str) -> None:
    if path.suffix.lower() not in (".png", ".svg"):
        raise IsthmusError(f"--plot {path}: give a .png or .svg file name")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    series: dict[tuple[str, int], list[tuple[int, float]]] = {}
    law: dict[int, float] = {}
    for r in records:
        if r["kind"] == "tput" and r["ok"] and r["window"] > 0:
            series.setdefault((r["cc"], r["streams"]), []).append((r["window"], r["mbit_s"]))
            if r.get("law_mbit_s") and r["streams"] == 1:
                law[r["window"]] = r["law_mbit_s"]
    if not series:
        raise IsthmusError("nothing to plot: no successful throughput point with a fixed window")
    for (cc, n), pts in sorted(series.items()):
        pts.sort()
        ax.plot([p[0] / 1024 for p in pts], [p[1] for p in pts], marker="o",
                label=f"{cc}, {n} stream{'s' if n > 1 else ''}")
    if law:
        xs = sorted(law)
        ax.plot([x / 1024 for x in xs], [law[x] for x in xs], "k--", lw=1,
                label="min(window / RTT, line rate), 1 stream")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("TCP window (KiB)")
    ax.set_ylabel("throughput (Mbit/s, receiver)")
    ax.set_title(title, fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
