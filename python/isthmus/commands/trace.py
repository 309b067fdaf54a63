# isthmus/commands/trace.py: `isthmus trace`: reading what `isthmus run --trace DIR` wrote.
# `export` writes it for other tools (OTF2 for Vampir and Score-P's tools, Paraver,
# Chrome/Perfetto JSON for a browser); `summary` answers where the WAN costs time.
from __future__ import annotations

from pathlib import Path

import click

from ..outputs import OutputDir, OutputFile
from ..paths import find_prefix
from . import register

_CTX = {"help_option_names": ["-h", "--help"]}
FORMATS = ("otf2", "paraver", "perfetto")


def _trace_dir(ctx, param, value) -> Path:
    p = Path(value).expanduser()
    if not p.is_dir():
        raise click.BadParameter(f"{p}: no such folder")
    if not any(p.glob("rank-*.ismt")):
        raise click.BadParameter(f"{p} holds no trace (rank-*.ismt); make one with "
                                 f"`isthmus run --trace {p} ...`")
    return p.resolve()


@register
@click.group("trace", short_help="Export and summarise traces of `isthmus run --trace`.",
             context_settings=_CTX)
def trace_group() -> None:
    """Traces of cross-site runs: every MPI call of every rank and every WAN frame of every
    gateway, on one time base (see docs/trace.md)."""


@trace_group.command("export", context_settings=_CTX)
@click.argument("trace", metavar="DIR", callback=_trace_dir)
@click.option("--format", "formats", type=click.Choice(FORMATS + ("all",)), multiple=True,
              default=("otf2",), show_default=True,
              help="otf2 (Vampir, Score-P's tools, otf2-print), paraver (.prv/.pcf/.row) or "
                   "perfetto (Chrome trace JSON: ui.perfetto.dev or chrome://tracing); repeat "
                   "it, or all.")
@click.option("--out", type=OutputDir(), default=None,
              help="Folder for the exported files [default: DIR].")
@click.option("--no-gateways", is_flag=True, help="Leave the gateways out (only the app ranks).")
def export_command(trace: Path, formats: tuple[str, ...], out: Path | None,
                   no_gateways: bool) -> None:
    """Write the trace in DIR for other tools: DIR/otf2/traces.otf2, DIR/trace.prv (with
    .pcf and .row), DIR/trace.json."""
    chosen = FORMATS if "all" in formats else tuple(dict.fromkeys(formats))
    dest = (out or trace).resolve()
    dest.mkdir(parents=True, exist_ok=True)
    loaded = None
    for fmt in chosen:
        if fmt == "otf2":
            from ..trace.otf2 import export_otf2

            click.echo(export_otf2(find_prefix(), trace, dest / "otf2", not no_gateways))
            continue
        if loaded is None:
            from ..trace.reader import load, losses

            loaded = load(trace, gateways=not no_gateways)
            if "otf2" not in chosen:  # else isthmus-trace-otf2 has said it
                _warn(loaded, losses(loaded))
        if fmt == "paraver":
            from ..trace.paraver import export_paraver

            n = export_paraver(loaded, dest / "trace", gateways=not no_gateways)
            click.echo(f"{dest / 'trace.prv'}: {n} records (with trace.pcf, trace.row)")
        else:
            from ..trace.perfetto import export_perfetto

            n = export_perfetto(loaded, dest / "trace.json", gateways=not no_gateways)
            click.echo(f"{dest / 'trace.json'}: {n} events (open it in ui.perfetto.dev)")


def _warn(loaded, lost: list[str]) -> None:
    """What the exported files miss, on stderr: never silently."""
    if not loaded.aligned:
        click.echo(f"isthmus: warning: {loaded.dir}/clocks.json is missing (the job did not "
                   "reach MPI_Finalize): the sites' clocks are not aligned", err=True)
    for line in lost:
        click.echo(f"isthmus: warning: {line}", err=True)


@trace_group.command("summary", context_settings=_CTX)
@click.argument("trace", metavar="DIR", callback=_trace_dir)
@click.option("--html", "html_out", type=OutputFile(), default=None,
              help="Write the HTML report here [default: DIR/summary.html].")
@click.option("--json", "json_out", type=OutputFile(), default=None,
              help="Write the numbers as JSON here [default: DIR/summary.json].")
def summary_command(trace: Path, html_out: Path | None, json_out: Path | None) -> None:
    """Where the run spent its time: the communication matrix per rank pair (inside a site
    and across sites; DIR/matrix.png), time in MPI per call and rank, time waiting on
    messages from other sites, the slowest cross-site messages with their phase, and each
    WAN link's use over time. Prints the main lines; writes DIR/summary.html and .json."""
    from ..trace.reader import load
    from ..trace.report import heatmap, text_lines, write_html, write_json
    from ..trace.summary import summarize

    s = summarize(load(trace))
    for line in text_lines(s):
        click.echo(line)
    html_path = html_out or trace / "summary.html"
    json_path = json_out or trace / "summary.json"
    heatmap(s, trace / "matrix.png")
    write_json(s, json_path)
    write_html(s, html_path, f"isthmus trace summary: {trace}")
    click.echo(f"report: {html_path} (numbers: {json_path}, matrix: {trace / 'matrix.png'})")
