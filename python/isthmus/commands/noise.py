# isthmus/commands/noise.py: `isthmus noise`: the OS-noise toolkit. `run` probes cores
# (FTQ, FWQ or selfish detour) with a kernel trace alongside, `inject` makes known noise,
# `report` analyses a run (classes, periods, causes; plots and HTML), `scale` predicts
# what the measured noise costs a bulk-synchronous code at 2 .. 10^6 processes.
from __future__ import annotations

import json
from pathlib import Path

import click
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

from ..errors import IsthmusError
from ..netemu.spec import parse_time
from ..outputs import OutputDir, OutputFile, check_writable_dir
from ..noise import runner
from ..ui import err_console
from . import register

_CTX = {"help_option_names": ["-h", "--help"]}


def _time(ctx, param, value):
    if value is None:
        return None
    try:
        v = parse_time(value)
    except ValueError as e:
        raise click.BadParameter(str(e)) from None
    if v <= 0:
        raise click.BadParameter(f"{value!r} must be positive")
    return v


@register
@click.group("noise", short_help="Measure OS noise, name its causes, predict its cost at scale.", context_settings=_CTX)
def noise_group() -> None:
    """OS-noise (jitter) toolkit: probes, attribution, analysis, and cost at scale.

    See docs/noise.md."""


@noise_group.command("run", context_settings=_CTX)
@click.option("--probe", type=click.Choice(["ftq", "fwq", "selfish"]), default="selfish", show_default=True)
@click.option("--cpus", default=None, help="Cores to probe at once, one pinned thread each [default: all allowed].")
@click.option("--duration", default="10s", callback=_time, show_default=True, help="Measuring time, e.g. 10s.")
@click.option("--out", type=OutputDir(), required=True, help="Run directory.")
@click.option("--interval-log2", type=click.IntRange(8, 40), default=None, help="FTQ interval 2^N ticks [20].")
@click.option("--quantum", default=None, callback=_time, help="FWQ work quantum, e.g. 100us.")
@click.option("--k", type=click.FloatRange(1.01), default=None, help="Selfish threshold = K x the ordinary loop time [10].")
@click.option("--threshold", default=None, callback=_time, help="Selfish: fixed threshold instead of --k, e.g. 1us.")
@click.option("--raw", is_flag=True, help="Also keep every sample (TSV per core).")
@click.option("--max-events", type=click.IntRange(1, 100_000_000), default=None,
              help="Detours kept per core for the analysis [200000]; more are counted in the noise "
                   "fraction only. 32 bytes each.")
@click.option("--priority", default=None,
              help="Probe threads at fifo:N, rr:N or nice:N (root): they then do not share their cpu with "
                   "ordinary processes, so what remains is the OS's own noise.")
@click.option("--trace/--no-trace", default=True, show_default=True,
              help="Record irq/softirq/sched_switch tracepoints (tracefs, root) to name causes.")
@click.option("--report/--no-report", default=True, show_default=True, help="Write report/index.html.")
def run_command(probe, cpus, duration, out, interval_log2, quantum, k, threshold, raw, max_events, priority,
                trace, report) -> None:
    """Probe cores for OS noise and analyse the result."""
    cpu_list = runner.parse_cpus(cpus) if cpus else runner.allowed_cpus()
    extra: list[str] = []
    if interval_log2 is not None:
        extra += ["--interval-log2", str(interval_log2)]
    if quantum is not None:
        extra += ["--quantum-us", repr(quantum * 1e6)]
    if k is not None:
        extra += ["--k", repr(k)]
    if threshold is not None:
        extra += ["--threshold-ns", repr(threshold * 1e9)]
    if raw:
        extra.append("--raw")
    if max_events is not None:
        extra += ["--max-events", str(max_events)]
    if priority:
        extra += ["--probe-priority", priority]
    con = err_console()
    with Progress(TextColumn("{task.description}"), BarColumn(), TimeRemainingColumn(), console=con,
                  transient=True) as bar:
        task = bar.add_task(f"{probe} on cpus {','.join(map(str, cpu_list))}", total=duration)
        facts = runner.run_probe(probe, out, cpu_list, duration, extra, trace,
                                 progress=lambda s: bar.update(task, completed=s))
    if facts.get("trace", {}).get("error"):
        con.print(f"[yellow]{facts['trace']['error']}[/]: causes come from /proc/interrupts deltas only")
    _report(out, report, con)


def _report(path: Path, html: bool, con) -> dict:
    # numpy and scipy.signal load here, not at import: every `isthmus` command (a job
    # launch too) would otherwise pay ~1.5 s for them
    from ..noise.analyze import analyze, public
    from ..noise.runs import load_run
    from ..noise.summary import print_summary
    run = load_run(path)
    res = analyze(run)
    d = path if path.is_dir() else path.parent
    (d / "analysis.json").write_text(json.dumps(public(res), indent=1))
    print_summary(res)
    if html:
        from ..noise.report import write_report
        page = write_report(run, res, d / "report")
        con.print(f"report: {page}")
    return res


@noise_group.command("report", context_settings=_CTX)
@click.argument("run_dir", type=click.Path(exists=True, path_type=Path))
@click.option("--html/--no-html", default=True, show_default=True, help="Write plots and report/index.html.")
@click.option("--inject-log", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="The injector's --log file, to compare the analysis with what was injected.")
def report_command(run_dir, html, inject_log) -> None:
    """Analyse a run directory: classes, periods, causes, summary; plots and HTML."""
    check_writable_dir(run_dir if run_dir.is_dir() else run_dir.parent, "RUN_DIR")
    if inject_log:
        d = run_dir if run_dir.is_dir() else run_dir.parent
        (d / "inject.json").write_text(inject_log.read_text())
    _report(run_dir, html, err_console())


@noise_group.command("inject", context_settings=_CTX)
@click.option("--period", required=True, callback=_time, help="Time between burst starts, e.g. 10ms.")
@click.option("--duration", required=True, callback=_time, help="Busy time per burst, e.g. 1ms.")
@click.option("--cpu", type=click.IntRange(0), default=None, help="Pin the bursts to this cpu.")
@click.option("--priority", default="normal", show_default=True,
              help="fifo:N or rr:N (real-time, root), nice:N, or normal.")
@click.option("--for", "run_for", default=None, callback=_time, help="Stop after this long [default: Ctrl-C].")
@click.option("--log", type=OutputFile(), default=None,
              help="Write every burst's start and end (TSC ticks) as JSON.")
def inject_command(period, duration, cpu, priority, run_for, log) -> None:
    """Make periodic busy bursts: known noise to validate the probes and the analysis."""
    if duration >= period:
        raise IsthmusError(f"--duration ({duration * 1e3:g} ms) must be shorter than --period ({period * 1e3:g} ms)")
    rc = runner.run_inject(period, duration, cpu, priority, run_for, log)
    if rc:
        raise IsthmusError(f"the injector exited with status {rc}")


@noise_group.command("scale", context_settings=_CTX)
@click.argument("run_dir", type=click.Path(exists=True, path_type=Path))
@click.option("--work", "work", default="1ms", callback=_time, show_default=True,
              help="Compute per iteration of the bulk-synchronous loop (W).")
@click.option("--latency", default="5us", callback=_time, show_default=True,
              help="Latency of one collective round (L); the collective has ceil(log2 P) rounds.")
@click.option("--pmax", type=click.IntRange(2), default=1_000_000, show_default=True)
@click.option("--samples", type=click.IntRange(100), default=20000, show_default=True,
              help="Random iteration start times drawn from the trace per core.")
@click.option("--validate", type=click.Path(exists=True, path_type=Path), default=None,
              help="An MPI-Jitter run directory (mpi-jitter.json) to compare the P=2 prediction with.")
@click.option("--plot", type=OutputFile(), default=None, help="Write the plot here.")
@click.option("--start", "mode", type=click.Choice(["free", "wall"]), default="free", show_default=True,
              help="Iteration starts uniform over the process's free time (it runs when an iteration "
                   "begins), or over wall time (a detour in progress counts: an upper bound).")
@click.option("--seed", type=int, default=1, show_default=True)
def scale_command(run_dir, work, latency, pmax, samples, validate, plot, mode, seed) -> None:
    """Predict the slowdown noise causes a bulk-synchronous loop at P = 2 .. PMAX processes."""
    check_writable_dir(run_dir if run_dir.is_dir() else run_dir.parent, "RUN_DIR")
    from ..noise.runs import load_run
    from ..noise.scale import predict, print_scale, plot_scale, validate_mpijitter
    run = load_run(run_dir)
    res = predict(run, work, latency, pmax, samples, seed, mode)
    val = validate_mpijitter(run, validate, samples, seed, mode) if validate else None
    print_scale(res, val)
    d = run_dir if run_dir.is_dir() else run_dir.parent
    (d / "scale.json").write_text(json.dumps({"prediction": res, "validation": val}, indent=1))
    out = plot or d / "scale.png"
    plot_scale(res, out)
    err_console().print(f"plot: {out}")
