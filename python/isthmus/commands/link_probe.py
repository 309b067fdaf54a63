# isthmus/commands/link_probe.py: `isthmus link probe`, `isthmus link serve` and
# `isthmus link watch`: measure a link between two sites (RTT, and throughput against
# TCP window, number of streams and congestion control), serve the far end of such
# measurements on a real host, and monitor a link over time with Prometheus metrics.
from __future__ import annotations

import contextlib
import time
from pathlib import Path

import click
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

from ..errors import IsthmusError
from ..linkprobe.endpoints import PROBE_PORT, Credentials, Endpoints, probe_binary, serve_until_interrupted
from ..linkprobe.report import plot, table, write_json
from ..linkprobe.sweep import Plan, parse_list, parse_size, run_sweep
from ..linkprobe.watch import DEFAULT_LISTEN, Metrics, parse_listen, watch
from ..netemu.emulation import Emulation
from ..netemu.matrix import load_matrix, uniform
from ..netemu.spec import parse_link_spec
from ..outputs import OutputFile
from ..paths import find_prefix
from ..ui import err_console
from .link import _CTX, link_group


def _site_index(emu: Emulation, name: str) -> int:
    if name not in emu.names:
        raise IsthmusError(f"site {name!r} is not one of {', '.join(emu.names)}")
    return emu.names.index(name)


@contextlib.contextmanager
def _endpoints(exe, link_spec, matrix_file, between, to, job, secret_file):
    """Endpoints for the options: an emulation made here (--link/--matrix), or a server
    on a host (--to)."""
    if (link_spec or matrix_file) and to:
        raise IsthmusError("--to (a real host) cannot be combined with --link/--matrix (an emulated link)")
    if not (link_spec or matrix_file or to):
        raise IsthmusError("say what to measure: --link SPEC (an emulated link made here), "
                           "--matrix FILE, or --to HOST[:PORT] (a host running `isthmus link serve`)")
    creds = Credentials(job, secret_file) if to else Credentials()
    try:
        if to:
            host, _, port = to.partition(":")
            ep = Endpoints(exe, creds, f"{host}:{port or PROBE_PORT}", label=f"here -> {host}")
            yield ep, f"here -> {to}", {"link": None}
            return
        matrix = (load_matrix(Path(matrix_file), base=parse_link_spec(link_spec) if link_spec else None)
                  if matrix_file else uniform(2, parse_link_spec(link_spec)))
        con = err_console()
        with Emulation(matrix=matrix, progress=lambda m: con.print(Text(m, style="dim"))) as emu:
            a, b = (_site_index(emu, s) for s in between)
            spec = matrix.get(a, b)
            ep = Endpoints(exe, creds, f"{emu.address(b)}:{PROBE_PORT}",
                           client_prefix=emu.command(a, []), server_prefix=emu.command(b, []),
                           label=f"{emu.names[a]} -> {emu.names[b]}")
            ep.start_server()
            try:
                yield ep, f"{ep.label}, link {spec.describe()}", {
                    "link": spec.describe(), "link_back": matrix.get(b, a).describe(),
                    "link_rate_mbit_s": spec.rate * 8 / 1e6 if spec.rate > 0 else None}
            finally:
                ep.stop_server()
    finally:
        creds.close()


def _between(text: str) -> tuple[str, str]:
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 2 or parts[0] == parts[1]:
        raise IsthmusError(f"--between {text!r}: give two different sites, e.g. A,B")
    return parts[0], parts[1]


_where = [
    click.option("--link", "link_spec", metavar="SPEC", default=None,
                 help="Emulate this link here (needs root) and measure across it, e.g. delay=2.25ms,rate=1gbit."),
    click.option("--matrix", "matrix_file", type=click.Path(dir_okay=False), default=None,
                 help="Emulate a TOML link matrix (see `isthmus link emulate`) and measure --between two of its sites."),
    click.option("--between", default="A,B", show_default=True, help="Sites of the emulation: client,server."),
    click.option("--to", default=None, metavar="HOST[:PORT]",
                 help=f"Measure to a host running `isthmus link serve` (default port {PROBE_PORT})."),
    click.option("--job", default=None, help="With --to: the job id the server printed."),
    click.option("--secret-file", default=None, type=click.Path(dir_okay=False),
                 help="With --to: a 0600 file with the server's secret (hex)."),
]


def _with_where(f):
    for opt in reversed(_where):
        f = opt(f)
    return f


@link_group.command("probe", context_settings=_CTX)
@_with_where
@click.option("--windows", default="64k,128k,256k,512k,1m", show_default=True,
              help="TCP windows (socket buffer sizes) to try; 'auto' is kernel autotuning.")
@click.option("--streams", "streams_text", default="1", show_default=True, help="Numbers of parallel streams to try.")
@click.option("--cc", "cc_text", default="default", show_default=True,
              help="Congestion controls to try, e.g. cubic,bbr ('default': the system's).")
@click.option("--duration", type=click.FloatRange(0.5, 3600), default=5.0, show_default=True,
              help="Seconds per throughput point.")
@click.option("--omit", type=click.FloatRange(0, 3600), default=1.0, show_default=True,
              help="Seconds of slow start left out of each point's rate.")
@click.option("--rtt-count", type=click.IntRange(1, 1000000), default=200, show_default=True)
@click.option("--transport", type=click.Choice(["tcp", "udp"]), default="tcp", show_default=True,
              help="Throughput over kernel TCP, or over isthmus' reliable-UDP transport (--cc bbr "
                   "or reno, one stream; --windows are its buffers; needs --link or --matrix).")
@click.option("--json", "json_file", type=OutputFile(), default=None,
              help="Append every record (JSON lines, with the full configuration) to this file.")
@click.option("--plot", "plot_file", type=OutputFile(), default=None,
              help="Draw throughput against window (PNG or SVG by extension).")
def probe_command(link_spec, matrix_file, between, to, job, secret_file, windows, streams_text,
                  cc_text, duration, omit, rtt_count, transport, json_file, plot_file):
    """Measure RTT and throughput between two sites, against TCP window size, number of
    streams and congestion control. Prints an OSU-style table; --json and --plot keep the
    results. A point that fails is shown and recorded as FAILED."""
    if omit >= duration:
        raise IsthmusError(f"--omit {omit:g} must be shorter than --duration {duration:g}")
    plan = Plan(windows=parse_list(windows, "--windows", parse_size),
                streams=parse_list(streams_text, "--streams", _streams),
                ccs=parse_list(cc_text, "--cc"), duration=duration, omit=omit, rtt_count=rtt_count)
    if plot_file and Path(plot_file).suffix.lower() not in (".png", ".svg"):
        raise IsthmusError(f"--plot {plot_file}: give a .png or .svg file name")
    exe = probe_binary(find_prefix())
    udp_exe = None
    if transport == "udp":
        from ..linkprobe.udpperf import udpperf_binary

        bad = [c for c in plan.ccs if c not in ("default", "bbr", "reno")]
        if bad:
            raise IsthmusError(f"--cc {','.join(bad)}: the UDP transport has bbr and reno")
        if plan.streams != [1]:
            raise IsthmusError("--transport udp measures one flow: leave --streams at 1")
        if to:
            raise IsthmusError("--transport udp needs --link or --matrix (both ends started here)")
        udp_exe = udpperf_binary(find_prefix())
    records = []
    with _endpoints(exe, link_spec, matrix_file, _between(between), to, job, secret_file) as (ep, title, ctx):
        with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                      TimeElapsedColumn(), console=err_console(), transient=True) as bar:
            task = bar.add_task("RTT", total=len(plan.points()) + 1)
            for rec in run_sweep(ep, plan, ctx, progress=lambda d: bar.update(task, description=d),
                                 transport=transport, udp_exe=udp_exe):
                records.append(rec)
                bar.advance(task)
    click.echo(table(records, title), nl=False)
    if json_file:
        write_json(records, Path(json_file))
    if plot_file:
        plot(records, Path(plot_file), title)
    failed = [r for r in records if not r["ok"]]
    if failed:
        raise IsthmusError(f"{len(failed)} of {len(records)} measurements failed (shown as FAILED)")


def _streams(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise IsthmusError(f"--streams {text!r}: expected whole numbers such as 1,4,8") from None
    if not 1 <= n <= 64:
        raise IsthmusError(f"--streams {n}: expected 1..64")
    return n


@link_group.command("serve", context_settings=_CTX)
@click.option("--listen", default=f"0.0.0.0:{PROBE_PORT}", show_default=True, metavar="HOST:PORT")
@click.option("--job", default=None, help="Job id (default: a new one, printed).")
@click.option("--secret-file", default=None, type=click.Path(dir_okay=False),
              help="0600 file with the secret in hex (default: a new one in a private temp file, printed).")
def serve_command(listen, job, secret_file):
    """Serve the far end of `isthmus link probe --to` and `isthmus link watch --to` on
    this host until Ctrl-C. Clients must know the job id and the secret."""
    exe = probe_binary(find_prefix())
    creds = Credentials(job, secret_file)
    try:
        serve_until_interrupted([exe, "serve", "--listen", listen], creds, "probe server",
                                "measuring host")
    finally:
        creds.close()


@link_group.command("watch", context_settings=_CTX)
@_with_where
@click.option("--interval", type=click.FloatRange(0.1, 86400), default=10.0, show_default=True,
              help="Seconds between RTT probes.")
@click.option("--tput-every", type=click.FloatRange(0, 86400), default=60.0, show_default=True,
              help="Seconds between throughput probes (0: none).")
@click.option("--tput-duration", type=click.FloatRange(0.2, 600), default=2.0, show_default=True)
@click.option("--listen", default=DEFAULT_LISTEN, show_default=True, metavar="ADDR:PORT",
              callback=lambda ctx, param, value: parse_listen(value),
              help="Serve the Prometheus metrics here; loopback unless you open it up, e.g. "
                   "0.0.0.0:9464 or :9464 (every address); port 0: any free one.")
@click.option("--no-metrics", is_flag=True, help="Do not serve metrics.")
@click.option("--log", "log_file", type=OutputFile(), default="isthmus-link-watch.jsonl",
              show_default=True, help="Append every measurement here (JSON lines).")
@click.option("--count", type=click.IntRange(1), default=None, help="Stop after this many rounds (default: Ctrl-C).")
def watch_command(link_spec, matrix_file, between, to, job, secret_file, interval, tput_every,
                  tput_duration, listen, no_metrics, log_file, count):
    """Monitor a link: RTT every --interval, throughput every --tput-every, TCP
    retransmissions as the loss TCP saw. Prometheus metrics on --listen (loopback by
    default); every measurement appended to --log."""
    exe = probe_binary(find_prefix())
    con = err_console()
    metrics = Metrics("", None if no_metrics else listen)  # a busy port stops us here
    with _endpoints(exe, link_spec, matrix_file, _between(between), to, job, secret_file) as (ep, title, _):
        metrics.link = ep.label
        con.print(Text(f"watching {title}; log {log_file}"
                       + (f"; metrics on {metrics.url}" if metrics.url else "")))

        def show(rec):
            stamp = time.strftime("%H:%M:%S")
            if not rec["ok"]:
                con.print(Text(f"{stamp} {rec['kind']}: FAILED: {rec['error']}", style="red"))
            elif rec["kind"] == "rtt":
                con.print(Text(f"{stamp} rtt min {rec['min_us'] / 1e3:.3f} ms median "
                               f"{rec['median_us'] / 1e3:.3f} ms p99 {rec['p99_us'] / 1e3:.3f} ms"))
            else:
                con.print(Text(f"{stamp} throughput {rec['mbit_s']:.1f} Mbit/s, retransmitted "
                               f"{100 * rec['retrans_ratio']:.3f}% of segments"))

        try:
            failures = watch(ep, metrics, log_file, interval=interval, tput_every=tput_every,
                             tput_duration=tput_duration, rounds=count, show=show)
        except KeyboardInterrupt:
            return
    if failures:
        raise IsthmusError(f"{failures} probe(s) failed (see {log_file})")
