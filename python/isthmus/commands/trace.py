# isthmus/commands/trace.py: `isthmus trace`: reading what `isthmus run --trace DIR` wrote.
# `export` writes it for other tools (OTF2 for Vampir and Score-P's tools, Paraver,
# Chrome/Perfetto JSON for a browser); `summary` answers where the WAN costs time.
from __future__ import annotations

from pathlib import Path

import click

from ..errors import IsthmusError
from ..outputs import OutputDir
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
    for fmt in chosen:
        if fmt == "otf2":
            from ..trace.otf2 import export_otf2

            click.echo(export_otf2(find_prefix(), trace, dest / "otf2", not no_gateways))
        else:
            raise IsthmusError(f"--format {fmt}: not written yet")
