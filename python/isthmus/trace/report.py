# isthmus/trace/report.py: `isthmus trace summary`'s outputs: a few lines for the terminal,
# summary.json for tools, the communication matrix as a heat-map picture (matrix.png), and
# one self-contained HTML page (summary.html: plots embedded) in the style of `isthmus
# bench report`.
from __future__ import annotations

import base64
import io
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ..bench.report import CSS, _e, _table  # noqa: E402
from .summary import Summary  # noqa: E402


def _si(v: float, unit: str = "") -> str:
    for f, p in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= f:
            return f"{v / f:.3g} {p}{unit}"
    return f"{v:.3g} {unit}".strip()


def _ms(s: float) -> str:
    return f"{s * 1e3:.3f}"


def text_lines(s: Summary) -> list[str]:
    t = s.totals()
    mpi = [s.in_mpi(r) for r in range(s.n)]
    lines = [
        f"{s.n} ranks on {len(s.sites)} sites; messages inside a site: {t['local_msgs']} "
        f"({_si(t['local_bytes'], 'B')}), across sites: {t['remote_msgs']} "
        f"({_si(t['remote_bytes'], 'B')})",
        "rank  site  wall s   in MPI s  waiting on other sites s",
    ]
    for r in range(s.n):
        site = s.sites[s.site_of[r]] if s.site_of[r] < len(s.sites) else "?"
        lines.append(f"{r:4d}  {site:>4}  {s.wall[r]:7.3f}  {mpi[r]:8.3f}  {s.wait_remote[r]:8.3f}")
    if s.slowest:
        m = s.slowest[0]
        lines.append(f"slowest cross-site message: rank {m['src']} -> {m['dst']}, tag {m['tag']}, "
                     f"{_si(m['bytes'], 'B')} in {_ms(m['transfer_s'])} ms (phase {m['phase']}, "
                     f"{m['send_call']} -> {m['recv_call']})")
    for ln in s.links:
        busy = max(ln["tx_rate"], default=0.0)
        lines.append(f"link {ln['gateway']} -> {ln['peer']}: sent {_si(ln['tx_bytes'], 'B')} "
                     f"({ln['frames_sent']} frames, {ln['frames_resent']} again), peak "
                     f"{_si(busy * 8, 'bit/s')}, {len(ln['outages'])} outages")
    lines.append(f"clocks: {'aligned' if s.aligned else 'NOT aligned'}, largest error bound "
                 f"{s.clock_error_ns / 1e3:.1f} us")
    lines += [f"warning: {x}" for x in s.losses + s.notes]
    return lines


def write_json(s: Summary, path: Path) -> None:
    doc = {
        "ranks": s.n, "sites": s.sites, "site_of": s.site_of, "totals": s.totals(),
        "messages": s.msgs, "bytes": s.bytes, "mpi_time_s": s.mpi_time, "calls": s.calls,
        "wall_s": s.wall, "wait_remote_s": s.wait_remote, "wait_local_s": s.wait_local,
        "slowest_cross_site": s.slowest, "unmatched_sends": s.unmatched,
        "links": [{k: v for k, v in ln.items()} for ln in s.links],
        "losses": s.losses, "clock_error_ns": s.clock_error_ns, "aligned": s.aligned,
        "notes": s.notes,
    }  # fmt: skip
    path.write_text(json.dumps(doc, indent=1) + "\n")


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()


def heatmap(s: Summary, path: Path | None = None) -> str:
    """The bytes matrix, sites marked by lines; saved to path, returned as base64 PNG."""
    m = np.array(s.bytes, dtype=float) if s.n else np.zeros((1, 1))
    fig, ax = plt.subplots(figsize=(5.5, 4.5))
    shown = np.where(m > 0, np.log10(np.maximum(m, 1)), np.nan)
    im = ax.imshow(shown, cmap="viridis", interpolation="nearest")
    fig.colorbar(im, ax=ax, label="log10 bytes sent")
    for r in range(1, s.n):  # site boundaries
        if s.site_of[r] != s.site_of[r - 1]:
            ax.axhline(r - 0.5, color="red", lw=1)
            ax.axvline(r - 0.5, color="red", lw=1)
    _ticks(ax, s.n, x=True, y=True)
    ax.set_xlabel("destination rank")
    ax.set_ylabel("source rank")
    ax.set_title("point-to-point bytes (red: site boundaries)")
    if path is not None:
        fig.savefig(path, dpi=90, bbox_inches="tight")
    return _png(fig)


def _ticks(ax, n: int, x: bool = True, y: bool = False) -> None:
    if n <= 32:
        if x:
            ax.set_xticks(range(n))
        if y:
            ax.set_yticks(range(n))


def _mpi_bars(s: Summary) -> str:
    from .summary import OUTSIDE

    fns = sorted((f for f in s.mpi_time if f not in OUTSIDE), key=lambda f: -sum(s.mpi_time[f]))[:8]
    fig, ax = plt.subplots(figsize=(7, 3.5))
    bottom = np.zeros(s.n)
    for f in fns:
        v = np.array(s.mpi_time[f])
        ax.bar(range(s.n), v, bottom=bottom, label=f)
        bottom += v
    ax.bar(range(s.n), s.wait_remote, width=0.25, color="red", label="waiting on other sites")
    _ticks(ax, s.n)
    ax.set_xlabel("rank")
    ax.set_ylabel("seconds")
    ax.set_title("time in MPI per rank and call (start-up and shutdown left out)")
    ax.legend(fontsize=7, ncol=2)
    return _png(fig)


def _links_plot(s: Summary) -> str | None:
    if not any(ln["t"] for ln in s.links):
        return None
    fig, ax = plt.subplots(figsize=(7, 3.5))
    for ln in s.links:
        if ln["t"]:
            ax.plot(ln["t"], np.array(ln["tx_rate"]) * 8 / 1e6,
                    label=f"{ln['gateway']} -> {ln['peer']}")
        for a, b, _ in ln["outages"]:
            ax.axvspan(a, b, color="red", alpha=0.2)
    ax.set_xlabel("seconds since the trace began")
    ax.set_ylabel("Mbit/s sent")
    ax.set_title("WAN link use (red: link down)")
    ax.legend(fontsize=7)
    return _png(fig)


def write_html(s: Summary, path: Path, title: str) -> None:
    t = s.totals()
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{_e(title)}</title>"
             f"<style>{CSS}</style></head><body><h1>{_e(title)}</h1>"]
    parts.append(f"<p>{s.n} ranks on {len(s.sites)} sites ({_e(', '.join(s.sites))}). "
                 f"Clocks {'aligned' if s.aligned else '<b>not aligned</b>'} (largest error "
                 f"bound {s.clock_error_ns / 1e3:.1f} &micro;s).</p>")
    for w in s.losses + s.notes:
        parts.append(f"<p class='bad'>{_e(w)}</p>")
    parts.append("<h2>Communication matrix</h2>")
    parts.append(_table(["", "messages", "bytes"],
                        [["inside a site", t["local_msgs"], _e(_si(t["local_bytes"], "B"))],
                         ["across sites", t["remote_msgs"], _e(_si(t["remote_bytes"], "B"))]]))
    parts.append(f'<img alt="matrix" src="data:image/png;base64,{heatmap(s)}">')
    head = ["src \\ dst"] + [str(d) for d in range(s.n)]
    rows = [[str(r)] + [f"{s.msgs[r][d]}<br><small>{_e(_si(s.bytes[r][d], 'B'))}</small>"
                        if s.msgs[r][d] else "" for d in range(s.n)] for r in range(s.n)]
    if s.n <= 64:
        parts.append(_table(head, rows))
    parts.append("<h2>Time in MPI</h2>")
    parts.append(f'<img alt="mpi time" src="data:image/png;base64,{_mpi_bars(s)}">')
    fns = sorted(s.mpi_time, key=lambda f: -sum(s.mpi_time[f]))
    parts.append(_table(["call", "calls", "total ms", "max rank ms"],
                        [[_e(f), sum(s.calls[f]), _ms(sum(s.mpi_time[f])),
                          _ms(max(s.mpi_time[f]))] for f in fns]))
    mpi = [s.in_mpi(r) for r in range(s.n)]
    parts.append("<p>Wall: from the end of MPI_Init (which connects the sites) to MPI_Finalize; "
                 "in MPI: every other call.</p>")
    parts.append(_table(["rank", "site", "wall ms", "in MPI ms", "waiting on other sites ms",
                         "waiting on its own site ms"],
                        [[r, _e(s.sites[s.site_of[r]]), _ms(s.wall[r]), _ms(mpi[r]),
                          _ms(s.wait_remote[r]), _ms(s.wait_local[r])] for r in range(s.n)]))
    parts.append("<h2>Slowest cross-site messages</h2><p>Transfer: from when both sides were "
                 "ready (send started, receive posted) to the receive's completion. Phase: "
                 "the sender's last MPI_Pcontrol level.</p>")
    parts.append(_table(["src", "dst", "tag", "bytes", "transfer ms", "sent at s", "phase",
                         "send call", "completed by", "clock error ms"],
                        [[m["src"], m["dst"], m["tag"], m["bytes"], _ms(m["transfer_s"]),
                          f"{m['sent_at_s']:.6f}", m["phase"], _e(m["send_call"]),
                          _e(m["recv_call"]), _ms(m["clock_error_s"])] for m in s.slowest]))
    parts.append("<h2>WAN links</h2>")
    img = _links_plot(s)
    if img:
        parts.append(f'<img alt="links" src="data:image/png;base64,{img}">')
    parts.append(_table(["gateway", "peer", "sent", "received", "frames", "sent again",
                         "duplicates", "peak queued", "outages"],
                        [[_e(ln["gateway"]), _e(ln["peer"]), _e(_si(ln["tx_bytes"], "B")),
                          _e(_si(ln["rx_bytes"], "B")), ln["frames_sent"], ln["frames_resent"],
                          ln["duplicates"], ln["peak_queue"], len(ln["outages"])]
                         for ln in s.links]))
    parts.append("</body></html>")
    path.write_text("\n".join(parts))
