# isthmus/commands/bench.py: `isthmus bench`: run isthmus-bench once (run), sweep a plan
# (campaign), compare two result sets (compare), draw (plot) and write an HTML report
# (report). Other subcommands (e.g. `baseline`) attach to bench_group the same way.
from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import click
from rich.table import Table
from rich.text import Text

from ..errors import IsthmusError
from ..outputs import OutputDir, OutputFile, check_output_file, check_writable_dir
from ..ui import err_console
from . import register

_CTX = {"help_option_names": ["-h", "--help"]}


@register
@click.group("bench", short_help="Benchmark interconnects and MPI: run, campaign, compare, plot, report.",
             context_settings=_CTX)
def bench_group() -> None:
    """Measure point-to-point, load, interference and collective performance with
    isthmus-bench, under a vendor MPI alone or under isthmus across sites, sweep plans,
    compare result sets and draw reports. See docs/bench.md."""


def _bench_options(f):
    opts = [
        click.option("-m", "--sizes", default=None, help="Sizes: MIN:MAX (powers of two) or a list 8,1k,1M."),
        click.option("-i", "--iters", type=click.IntRange(1), default=None, help="Iterations per repetition."),
        click.option("-x", "--warmup", type=click.IntRange(0), default=None, help="Warm-up iterations per point."),
        click.option("-r", "--reps", type=click.IntRange(1), default=None, help="Repetitions (samples) per point."),
        click.option("-W", "--window", type=click.IntRange(1), default=None, help="Window of back-to-back sends."),
        click.option("--peer", type=click.IntRange(1), default=None, help="Partner rank of rank 0."),
        click.option("--partners", default=None, help="Partner counts for one2many/many2one, e.g. 1,2,4."),
        click.option("--fractions", default=None, help="Percentages for a2a-fraction, e.g. 100,50,25,12.5."),
        click.option("--background", type=click.Choice(["none", "pairs", "alltoall"]), default=None,
                     help="Background traffic for interference."),
        click.option("--bg-size", default=None, help="Background message size, e.g. 64k."),
        click.option("--op", "ops", default=None, help="Collectives for coll, comma-separated (default all)."),
        click.option("--nonblocking", is_flag=True, default=None, help="coll: MPI_I... forms plus MPI_Wait."),
        click.option("--max-time", type=float, default=None, help="Seconds per point before repetitions stop (>= 3 kept)."),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def _collect_options(params: dict) -> dict:
    out = {}
    for key in ("sizes", "iters", "warmup", "reps", "window", "peer", "background", "bg_size", "max_time"):
        if params.get(key) is not None:
            out[key] = params[key]
    for key in ("partners", "fractions"):
        if params.get(key):
            try:
                vals = [float(v) if key == "fractions" else int(v) for v in params[key].split(",")]
            except ValueError:
                raise IsthmusError(f"--{key} {params[key]}: expected a comma-separated list of numbers") from None
            out[key] = vals
    if params.get("ops"):
        out["ops"] = params["ops"].split(",")
    if params.get("nonblocking"):
        out["nonblocking"] = True
    if "sizes" in out and ":" not in out["sizes"]:
        out["sizes"] = out["sizes"].split(",")
    return out


def print_table(records: list[dict], out=None) -> None:
    """OSU-style columns for people (grouped like isthmus-bench's own text output)."""
    out = out or sys.stdout
    last = None
    for r in records:
        params = [k for k in ("op", "peer", "distance", "pairs", "partners", "remote_partners", "background",
                              "bg_size", "fraction",
                              "active", "window")
                  if k in r]
        head = (r["benchmark"], r.get("metric"), tuple(params), r.get("library"), r.get("profile"))
        if head != last:
            cfg = r.get("config", {})
            print(f"# {r['benchmark']}: {cfg.get('library', '?')}; {cfg.get('ranks', '?')} ranks; sites "
                  f"{','.join(cfg.get('sites', []))}; link {cfg.get('link') or 'loopback'}", file=out)
            title = {"latency": "Latency(us)", "bandwidth": "Bandwidth(MB/s)", "rate": "Messages/s"}.get(
                r.get("metric"), "Time(us)")
            print("# " + "".join(f"{p:<14}" for p in params) + f"{'Size':<10}{title:>18}{'Min':>12}{'P99':>12}"
                  f"{'Max':>12}{'Reps':>6}", file=out)
            last = head
        cols = "".join(f"{str(r[p]):<14}" for p in params)
        if r.get("status") != "ok":
            print(f"  {cols}{r['size']:<10} {r.get('status')}: {r.get('reason', '')}", file=out)
            continue
        print(f"  {cols}{r['size']:<10}{r['median']:>18.2f}{r['min']:>12.2f}{r['p99']:>12.2f}{r['max']:>12.2f}"
              f"{r['reps']:>6}", file=out)


@bench_group.command("run", context_settings=_CTX)
@click.argument("benchmark")
@click.option("-n", "--np", "ranks", type=int, default=2, show_default=True, help="Number of ranks.")
@click.option("--library", default="isthmus-openmpi", show_default=True,
              help="openmpi or mpich (the vendor alone), isthmus-openmpi or isthmus-mpich (isthmus on it).")
@click.option("--wan", "link", metavar="SPEC", default=None,
              help="Join the sites with the link emulator (root), e.g. delay=5ms,rate=1gbit; default loopback.")
@click.option("--sites", type=click.IntRange(1, 64), default=2, show_default=True,
              help="Sites for isthmus (and for a vendor across --wan sites).")
@_bench_options
@click.option("--json", "as_json", is_flag=True, help="Print JSON lines instead of columns.")
@click.option("--output", type=OutputFile(), default=None,
              help="Also append the JSON lines to this file.")
@click.option("--timeout", type=click.FloatRange(min=1), default=600, show_default=True,
              help="Seconds before the run is stopped and reported as failed.")
def run_command(benchmark, ranks, library, link, sites, as_json, output, timeout, **params):
    """Run one BENCHMARK (latency, bw, bibw, msgrate, placement, one2many, many2one,
    interference, coll, a2a-fraction) and print its results.

    \b
    Examples:
      isthmus bench run latency -n 2 --library openmpi -m 8,1k,64k
      isthmus bench run coll -n 4 --op allreduce,alltoall --wan delay=5ms
      isthmus bench run a2a-fraction -n 8 --library isthmus-mpich
    """
    from ..bench.catalog import check_benchmark, check_ranks
    from ..bench.launchers import Launch, Profile, check_combination, run_launch, sites_of

    check_benchmark(benchmark)
    options = _collect_options(params)
    profile = Profile("wan" if link else "loopback", link, sites)
    check_ranks(benchmark, options, ranks, sites_of(library, profile))
    check_combination(library, profile)
    from ..bench.catalog import to_args

    launch = Launch(benchmark, to_args(options, where="options"), library, profile, ranks, timeout=timeout)
    con = err_console()
    con.print(Text(f"isthmus bench: {benchmark} on {ranks} ranks, {library}, {profile.describe()}", style="dim"))
    result = run_launch(launch)
    recs = [{**r, "library": library, "profile": profile.name, "ranks": ranks, "command": result.command}
            for r in result.records]
    if output is not None:
        with open(output, "a") as f:
            for r in recs:
                f.write(json.dumps(r, separators=(",", ":")) + "\n")
    if as_json:
        for r in recs:
            print(json.dumps(r, separators=(",", ":")))
    else:
        print_table(recs)
    con.print(Text(f"command: {result.command}", style="dim"))
    if not result.ok or not recs:
        from ..bench.results import _failure_text

        tail = "\n".join(result.stderr_tail.strip().splitlines()[-15:])
        raise IsthmusError(f"{benchmark} failed ({_failure_text(result)}); last output:\n{tail}")


@bench_group.command("campaign", context_settings=_CTX)
@click.argument("plan_file", metavar="PLAN.toml", type=click.Path(path_type=Path))
@click.option("--results", "results_dir", type=OutputDir(), default=None,
              help="Results folder [default: bench-results/<campaign name>]. Rerunning the same command "
                   "resumes: points already recorded there are not run again.")
@click.option("--retry-failed", is_flag=True, help="Run points again that are recorded as failed.")
@click.option("--dry-run", is_flag=True, help="List the points and commands without running anything.")
@click.option("--no-report", is_flag=True, help="Do not write report.html at the end.")
@click.pass_context
def campaign_command(ctx, plan_file, results_dir, retry_failed, dry_run, no_report):
    """Sweep the benchmarks of PLAN.toml over rank counts x MPI libraries x link profiles,
    store every point as JSON lines, then write report.html (see docs/bench.md for the
    plan format and examples/bench-wan.toml for an example)."""
    from ..bench.campaign import run_campaign
    from ..bench.launchers import command_for
    from ..bench.plan import load_plan

    plan = load_plan(plan_file, check_launchable=not dry_run)
    folder = results_dir or Path("bench-results") / plan.name
    if not dry_run:
        check_writable_dir(folder, "results folder", create=True)
    con = err_console()
    if dry_run:
        for p in plan.points:
            print(f"run {p.run + 1} {p.key}: {shlex.join(command_for(p.launch(plan.timeout, plan.env)))}")
        con.print(Text(f"{len(plan.points)} launches ({plan.runs} runs each of {len(plan.points) // plan.runs} points)"))
        return
    con.print(Text(f"campaign {plan.name}: {len(plan.points)} launches, results in {folder}", style="bold"))
    outcome = run_campaign(plan, folder, con, retry_failed=retry_failed, argv=sys.argv)
    con.print(Text(f"{outcome.ran} launched, {outcome.skipped} already recorded, {len(outcome.failed)} failed "
                   f"(recorded as failed in {folder / 'results.jsonl'})"))
    if outcome.interrupted:
        con.print(Text(f"interrupted; resume with: isthmus bench campaign {plan_file} --results {folder}",
                       style="yellow"))
        ctx.exit(130)
    if not no_report:
        path = _write_report([folder], None, folder / "report.html", f"isthmus bench campaign {plan.name}")
        con.print(Text(f"report: {path}"))
    if outcome.failed:
        ctx.exit(1)


def _auto_comparisons(results, paths):
    """Vendor alone (A) against isthmus on the same vendor (B), per profile and rank count."""
    from ..bench.compare import Selector, compare

    seen = {(p.get("library"), p.get("profile")) for p in results.ok_points}
    out = []
    for lib, prof in sorted(seen, key=lambda x: tuple(str(v) for v in x)):
        if lib and lib.startswith("isthmus-") and (lib.split("-", 1)[1], prof) in seen:
            a = Selector(tuple(paths), (("library", lib.split("-", 1)[1]), ("profile", prof)))
            b = Selector(tuple(paths), (("library", lib), ("profile", prof)))
            try:
                out.append(compare(a, b, results, results))
            except IsthmusError:
                continue
    return out


def _comparisons(results, paths, pairs):
    from ..bench.compare import compare, parse_selector

    if not pairs:
        return _auto_comparisons(results, paths)
    return [compare(parse_selector(a), parse_selector(b)) for a, b in pairs]


def _write_report(paths, pairs, out, title):
    from ..bench.report import write_report
    from ..bench.results import load

    results = load(paths)
    return write_report(results, _comparisons(results, paths, pairs), out, title)


@bench_group.command("compare", context_settings=_CTX)
@click.argument("a", metavar="A")
@click.argument("b", metavar="B")
@click.option("--json", "json_out", type=OutputFile(), default=None,
              help="Also write the per-point ratios and summaries to this JSON file.")
@click.option("--all", "show_all", is_flag=True, help="Show every point, not only the summary.")
def compare_command(a, b, json_out, show_all):
    """Compare result set B against A, point by point: ratio of medians B/A with a 95%
    bootstrap confidence interval; summaries are geometric means of speed-ups.

    A and B are results folders or .jsonl files, each optionally filtered with
    @key=value[,key=value] (keys: library, profile, ranks, sites, benchmark, campaign,
    link, run). Example, both from one campaign:

    \b
      isthmus bench compare res@library=openmpi res@library=isthmus-openmpi
    """
    from ..bench.compare import compare, parse_selector

    cmp = compare(parse_selector(a), parse_selector(b))
    con = err_console()
    if show_all:
        t = Table(title="per point (ratio = median B / median A)", title_justify="left")
        for col in ("point", "size", "unit", "A median", "B median", "B/A", "95% CI", "speed-up"):
            t.add_column(col, justify="left" if col == "point" else "right")
        for p in cmp.points:
            t.add_row(p.label(), str(p.field("size")), p.unit, f"{p.a_median:.4g}", f"{p.b_median:.4g}",
                      f"{p.ratio.value:.3g}", f"{p.ratio.low:.3g}–{p.ratio.high:.3g}", f"{p.speedup:.3g}")
        con.print(t)
    t = Table(title=f"speed-up of B over A (> 1: B better); B = {cmp.b.text()}, A = {cmp.a.text()}",
              title_justify="left")
    for col in ("group", "points", "geo. mean", "95% CI"):
        t.add_column(col, justify="left" if col == "group" else "right")
    for name, n, g, lo, hi in cmp.summary():
        t.add_row(name, str(n), f"{g:.3g}", f"{lo:.3g}–{hi:.3g}")
    con.print(t)
    if cmp.only_a or cmp.only_b:
        con.print(Text(f"unmatched: {cmp.only_a} points only in A, {cmp.only_b} only in B", style="yellow"))
    if json_out:
        json_out.write_text(json.dumps({
            "a": cmp.a.text(), "b": cmp.b.text(),
            "points": [{"point": dict(p.ident), "metric": p.metric, "unit": p.unit, "a_median": p.a_median,
                        "b_median": p.b_median, "ratio": p.ratio.value, "ci": [p.ratio.low, p.ratio.high],
                        "speedup": p.speedup} for p in cmp.points],
            "summary": [{"group": n, "points": k, "speedup_geomean": g, "ci": [lo, hi]}
                        for n, k, g, lo, hi in cmp.summary()]}, indent=1))


@bench_group.command("plot", context_settings=_CTX)
@click.argument("results", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--out", "outdir", type=OutputDir(), default=Path("bench-plots"),
              show_default=True, help="Folder for the pictures.")
@click.option("--format", "fmt", type=click.Choice(["png", "svg"]), default="png", show_default=True)
@click.option("--compare", "pairs", nargs=2, multiple=True, metavar="A B",
              help="Speed-up bars and heatmap of B against A (selectors as for compare); "
                   "default: each vendor against isthmus on it, per profile.")
def plot_command(results, outdir, fmt, pairs):
    """Draw latency/bandwidth/time curves, placement bars, speed-up bars and heatmaps."""
    from ..bench import plot
    from ..bench.results import load

    res = load(results)
    made = plot.curves(res.points, outdir, fmt) + plot.placement_bars(res.points, outdir, fmt)
    for i, cmp in enumerate(_comparisons(res, results, pairs)):
        made += plot.speedup_bars(cmp, outdir, fmt, f"speedup-{i}") + plot.heatmap(cmp, outdir, fmt, f"heatmap-{i}")
    if not made:
        raise IsthmusError("nothing to plot: no successful measurements with more than one size "
                           "and no comparison")
    for p in made:
        print(p)


@bench_group.command("report", context_settings=_CTX)
@click.argument("results", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--out", type=OutputFile(), default=None,
              help="HTML file [default: report.html in the (first) results folder].")
@click.option("--compare", "pairs", nargs=2, multiple=True, metavar="A B",
              help="Comparisons to include (default: each vendor against isthmus on it, per profile).")
@click.option("--title", default=None, help="Title of the report.")
def report_command(results, out, pairs, title):
    """Write a self-contained HTML report: plots, statistics, comparisons, failed launches,
    the plan, the exact commands and the environment."""
    first = Path(results[0])
    out = out or check_output_file((first if first.is_dir() else first.parent) / "report.html",
                                   "report")
    path = _write_report(results, pairs, out, title or f"isthmus bench report: {', '.join(map(str, results))}")
    print(path)
