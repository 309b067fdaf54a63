# isthmus/commands/whatif.py: `isthmus whatif TRACE --platform FILE`: how long the traced
# application would take on another platform (other links, more sites, more ranks),
# predicted by replaying its trace in SimGrid (docs/whatif.md); tables for people, --json
# for tools.
from __future__ import annotations

import json
from pathlib import Path

import click

from . import register

_CTX = {"help_option_names": ["-h", "--help"]}


def _trace_dir(ctx, param, value) -> Path:
    p = Path(value).expanduser()
    if not p.is_dir():
        raise click.BadParameter(f"{p}: no such folder (give the folder of `isthmus run "
                                 "--trace DIR`)")
    if not any(p.glob("rank-*.ismt")):
        raise click.BadParameter(f"{p} holds no trace (rank-*.ismt); make one with "
                                 f"`isthmus run --trace {p} ...`")
    return p.resolve()


def _positive(ctx, param, value):
    if value is not None and value < 1:
        raise click.BadParameter(f"must be a positive integer, got {value}")
    return value


def _ms(s: float | None) -> str:
    return "-" if s is None else f"{s * 1e3:.3f}"


@register
@click.command("whatif", context_settings=_CTX,
               short_help="Predict a traced run on another platform (SimGrid replay).")
@click.argument("trace", metavar="TRACE", callback=_trace_dir)
@click.option("--platform", "platform", required=True, type=click.Path(dir_okay=False),
              metavar="FILE", help="Link matrix TOML (sites, default, [links]), the format "
                                   "of `isthmus run --wan-matrix`.")
@click.option("--sites", type=int, default=None, callback=_positive,
              help="Sites to simulate (a multiple of the trace's); the file's `sites` must "
                   "agree or be left out.")
@click.option("--ranks-per-site", type=int, default=None, callback=_positive,
              help="Ranks per simulated site (a multiple of the trace's) [default: as traced].")
@click.option("--lan", default="delay=1us,rate=10gbit", show_default=True, metavar="SPEC",
              help="The network inside a site: host-to-host delay and rate (link spec).")
@click.option("--eager", default="64k", show_default=True, metavar="SIZE",
              help="Largest point-to-point message sent eagerly (ISTHMUS_EAGER).")
@click.option("--early", default="512k", show_default=True, metavar="SIZE",
              help="Bytes of a larger message sent ahead of the clear-to-send (ISTHMUS_EARLY).")
@click.option("--no-baseline", is_flag=True,
              help="Skip the second replay (WAN as fast as the site network), so no WAN cost.")
@click.option("--no-tcp", is_flag=True,
              help="Leave the WAN connections' costs out (gateway frame and TCP/IP "
                   "headers, slow start after idle): SimGrid's CM02 arithmetic alone.")
@click.option("--no-gateway-writes", is_flag=True,
              help="Write each cross-site message to its connection when its rank sends "
                   "it, not when the trace's gateway took it from the rank.")
@click.option("--json", "as_json", is_flag=True, help="Print the prediction as JSON.")
def whatif_command(trace: Path, platform: str, sites: int | None, ranks_per_site: int | None,
                   lan: str, eager: str, early: str, no_baseline: bool, no_tcp: bool,
                   no_gateway_writes: bool, as_json: bool) -> None:
    """Replay the trace in TRACE (a folder written by `isthmus run --trace`) on a simulated
    platform of sites and links, and predict the run time (first recorded call to
    MPI_Finalize), what the WAN costs in each phase (MPI_Pcontrol), and which collective or
    message pattern ranks spend the most time blocked in. With --sites/--ranks-per-site the
    traced ranks are replicated onto a larger platform (docs/whatif.md says the rule)."""
    from ..netemu.matrix import load_matrix
    from ..netemu.spec import SpecError, parse_link_spec
    from ..errors import IsthmusError
    from ..trace.reader import load, losses
    from ..units import parse_size
    from ..whatif.events import convert
    from ..whatif.predict import predict

    if not Path(platform).is_file():
        raise IsthmusError(f"--platform {platform}: no such file (a link matrix TOML: "
                           "sites = 2, default = \"delay=10ms,rate=100mbit\", [links] ...)")
    try:
        lan_spec = parse_link_spec(lan)
    except SpecError as e:
        raise IsthmusError(f"--lan: {e}") from None
    sizes = {}
    for opt, text in (("--eager", eager), ("--early", early)):
        try:
            sizes[opt] = parse_size(text)
        except ValueError as e:
            raise IsthmusError(f"{opt}: {e}") from None
    matrix = load_matrix(Path(platform), sites=sites)
    loaded = load(trace)   # the gateways' records say when they took each message
    for line in losses(loaded):
        click.echo(f"isthmus: warning: {line} (the replay misses what was lost)", err=True)
    pred = predict(loaded, convert(loaded), matrix, lan_spec, ranks_per_site, sizes["--eager"],
                   sizes["--early"], baseline=not no_baseline, tcp=not no_tcp,
                   gateway_writes=not no_gateway_writes)
    if as_json:
        click.echo(json.dumps(pred.as_json(), indent=1))
        return
    _print(pred)


def _print(pred) -> None:
    from rich.console import Console
    from rich.table import Table

    con = Console()
    n = sum(pred.counts)
    layout = " + ".join(f"{c} ({s})" for s, c in zip(pred.sites, pred.counts))
    con.print(f"platform: {len(pred.sites)} sites, {n} ranks: {layout}")
    line = f"predicted run time: [bold]{pred.time * 1e3:.3f} ms[/bold]"
    if pred.no_wan is not None:
        line += (f"; with the WAN as fast as the site network {pred.no_wan * 1e3:.3f} ms, so "
                 f"the WAN costs {(pred.time - pred.no_wan) * 1e3:.3f} ms")
    con.print(line)
    con.print(f"the traced run took {pred.measured * 1e3:.3f} ms (its own layout and links); "
              f"the simulations took {pred.sim_seconds:.2f} s")
    t = Table(title="per phase (MPI_Pcontrol level; 0: outside phases)", title_justify="left")
    for col in ("phase", "time ms", "no-WAN ms", "WAN cost ms", "traced ms"):
        t.add_column(col, justify="right")
    for p in pred.phases:
        t.add_row(str(p["phase"]), _ms(p["time_s"]), _ms(p["no_wan_s"]), _ms(p["wan_cost_s"]),
                  _ms(p["traced_s"]))
    con.print(t)
    t = Table(title="where ranks wait (blocked time per rank, largest first)",
              title_justify="left")
    for col in ("phase", "pattern", "calls", "blocked ms/rank", "cross-site calls"):
        t.add_column(col, justify="left" if col == "pattern" else "right")
    for p in pred.patterns[:10]:
        t.add_row(str(p["phase"]), p["pattern"], str(p["calls"]), _ms(p["blocked_s_per_rank"]),
                  str(p["cross_site_calls"]))
    con.print(t)
    if pred.patterns:
        top = pred.patterns[0]
        con.print(f"dominant: {top['pattern']} in phase {top['phase']} "
                  f"({top['blocked_s_per_rank'] * 1e3:.3f} ms per rank)")
    for note in pred.notes:
        con.print(f"note: {note}")
