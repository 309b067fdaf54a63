# isthmus/commands/model.py: `isthmus model`: the collective cost model. `predict` gives
# every algorithm's LogGP time for a collective, process count and size, on one level or
# over ranks spread across sites; `check` proves the algorithms' schedules give MPI's
# result; `calibrate` measures and fits the parameters per level; `tune` writes the
# selection table libisthmus reads (docs/model.md).
from __future__ import annotations

import json
from pathlib import Path

import click
from rich.table import Table

from ..errors import IsthmusError
from ..model import schedule as S
from ..model.loggp import LogGP
from ..model.simulate import ScheduleError, check, predict
from ..outputs import OutputFile
from ..units import parse_size
from ..ui import err_console
from . import register

_CTX = {"help_option_names": ["-h", "--help"]}
COLLS_DEFAULT = ("barrier", "bcast", "reduce", "allreduce", "reduce_scatter", "scan", "allgather",
                 "alltoall")


def _size(ctx, param, value):
    try:
        return parse_size(value)
    except ValueError as e:
        raise click.BadParameter(str(e)) from None


def load_levels(path: Path) -> dict[str, LogGP]:
    """A parameters file: {"levels": {"intra": {L, o_s, o_r, g, G, ...}, "wan": {...}}},
    or one level's parameters alone (then called "intra")."""
    try:
        doc = json.loads(path.read_text())
    except OSError as e:
        raise IsthmusError(f"cannot read {path}: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise IsthmusError(f"{path} is not JSON: {e}") from None
    if not isinstance(doc, dict):
        raise IsthmusError(f"{path}: expected a JSON object")
    levels = doc.get("levels", {"intra": doc})
    if not isinstance(levels, dict) or not levels:
        raise IsthmusError(f"{path}: \"levels\" must map level names to LogGP parameters")
    out = {}
    for name, d in levels.items():
        try:
            out[name] = LogGP.from_dict(d.get("params", d) if isinstance(d, dict) else {})
        except ValueError as e:
            raise IsthmusError(f"{path}: level {name!r}: {e}") from None
    return out


def _placement(ranks: int, sites: int) -> list[int]:
    """Site of each rank: contiguous blocks, the first sites one rank larger."""
    base, extra = divmod(ranks, sites)
    out = []
    for s in range(sites):
        out += [s] * (base + (1 if s < extra else 0))
    return out


@register
@click.group("model", short_help="Predict collective algorithms' times with LogGP.", context_settings=_CTX)
def model_group() -> None:
    """The collective cost model: LogGP parameters per level (intra-site, WAN), algorithm
    schedules, their predicted times. See docs/model.md."""


@model_group.command("predict", context_settings=_CTX)
@click.option("--params", "params_path", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="LogGP parameters (JSON): one level, or {\"levels\": {\"intra\": ..., \"wan\": ...}}.")
@click.option("--coll", type=click.Choice(sorted(S.ALGORITHMS)), required=True)
@click.option("--ranks", "-n", type=click.IntRange(1, 4096), required=True)
@click.option("--size", default="8", callback=_size, show_default=True,
              help="Bytes (64k = 65536: docs/knobs.md, Units): of the vector (bcast, reduce, "
                   "allreduce, reduce_scatter, scan) or of each rank's block (allgather, alltoall).")
@click.option("--sites", type=click.IntRange(1, 64), default=1, show_default=True,
              help="Spread the ranks over this many sites in contiguous blocks; messages between "
                   "sites use the \"wan\" level and share one link per direction and site pair.")
@click.option("--non-commutative", is_flag=True, help="Leave out algorithms that need a commutative op.")
@click.option("--json", "as_json", is_flag=True, help="Print the predictions as JSON on stdout.")
def predict_cmd(params_path, coll, ranks, size, sites, non_commutative, as_json):
    """Predicted time of every algorithm of a collective, fastest first."""
    levels = load_levels(params_path)
    if "intra" not in levels:
        raise IsthmusError(f"{params_path}: no \"intra\" level")
    if sites > 1 and "wan" not in levels:
        raise IsthmusError(f"{params_path}: --sites {sites} needs a \"wan\" level")
    if sites > ranks:
        raise IsthmusError(f"--sites {sites} is more than --ranks {ranks}")
    site = _placement(ranks, sites)
    intra, wan = levels["intra"], levels.get("wan")
    level = lambda a, b: intra if site[a] == site[b] else wan
    rows = []
    for alg in S.ALGORITHMS[coll]:
        if non_commutative and (coll, alg) in S.COMMUTATIVE_ONLY:
            continue
        t = predict(S.build(coll, alg, ranks, size, commutative=not non_commutative), level,
                    lambda a, b: (site[a], site[b]) if site[a] != site[b] else None)
        rows.append({"algorithm": alg, "seconds": t,
                     "commutative_only": (coll, alg) in S.COMMUTATIVE_ONLY})
    rows.sort(key=lambda r: r["seconds"])
    if as_json:
        click.echo(json.dumps({"coll": coll, "ranks": ranks, "size": size, "sites": sites,
                               "predictions": rows}, indent=1))
        return
    t = Table(title=f"{coll}, {ranks} ranks on {sites} site(s), {size} B")
    t.add_column("algorithm")
    t.add_column("predicted", justify="right")
    t.add_column("vs best", justify="right")
    for r in rows:
        t.add_row(r["algorithm"] + (" (commutative op)" if r["commutative_only"] else ""),
                  f"{r['seconds'] * 1e6:.1f} us", f"{r['seconds'] / rows[0]['seconds']:.2f}x")
    err_console().print(t)


@model_group.command("check", context_settings=_CTX)
@click.option("--max-ranks", type=click.IntRange(1, 64), default=9, show_default=True)
def check_cmd(max_ranks):
    """Prove every algorithm's schedule gives MPI's result on 1..N ranks, with a
    non-commutative op wherever the algorithm allows one."""
    con = err_console()
    bad = 0
    for coll, algs in S.ALGORITHMS.items():
        for alg in algs:
            try:
                for p in range(1, max_ranks + 1):
                    check(S.build(coll, alg, p, 4096), commutative=True)
                    if (coll, alg) not in S.COMMUTATIVE_ONLY:
                        check(S.build(coll, alg, p, 4096, commutative=False), commutative=False)
                con.print(f"ok    {coll}/{alg}")
            except ScheduleError as e:
                bad += 1
                con.print(f"FAIL  {coll}/{alg}: {e}")
    if bad:
        raise IsthmusError(f"{bad} algorithm(s) give a wrong result")


def _bench_sizes(text: str) -> list[int]:
    """A list like isthmus-bench's -m: 8,1k,64k,1M (sizes as everywhere: k = 1024)."""
    out = []
    for tok in text.split(","):
        try:
            out.append(parse_size(tok.strip()))
        except ValueError as e:
            raise IsthmusError(f"--sizes: {e}") from None
    return out


def _int_list(text: str, what: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise IsthmusError(f"{what} must be a comma-separated list of whole numbers, "
                           f"not {text!r}") from None


@model_group.command("calibrate", context_settings=_CTX)
@click.option("--levels", default="intra,wan", show_default=True,
              help="intra: two ranks of one site (the vendor's path); wan: one rank at each of "
                   "two sites (through the gateways and the link).")
@click.option("--mpi", type=click.Choice(["openmpi", "mpich"]), default="openmpi",
              show_default=True, help="The vendor MPI inside the sites.")
@click.option("--wan", "link", metavar="SPEC", default=None,
              help="Emulate the link between the sites (as isthmus run --wan; root), e.g. "
                   "delay=10ms,rate=100mbit. Without it the sites talk over loopback.")
@click.option("--sizes", default="1,8,64,512,1k,4k,16k,64k,256k,1M", show_default=True,
              help="Message sizes (k = 1024, M = 1048576; docs/knobs.md, Units).")
@click.option("--reps", type=click.IntRange(3, 1000), default=10, show_default=True,
              help="Repetitions per size: the fit uses their median.")
@click.option("--out", "out_path", type=OutputFile(), default=Path("levels.json"),
              show_default=True)
def calibrate_cmd(levels, mpi, link, sizes, reps, out_path):
    """Measure LogGP parameters (L, o_s, o_r, g, G), the reduction cost per op and type
    and the local copy cost on each level, fit them by least squares (inside a site per
    protocol range found in the measurements), and write them with their fit quality as
    JSON (the input of `predict` and `tune`)."""
    from ..bench.launchers import run_launch
    from ..model.calibrate import calibrate
    from ..noise.corelat import core_round_trip

    _bench_sizes(sizes)  # refuse a bad list before anything starts
    con = err_console()
    doc = calibrate([x.strip() for x in levels.split(",") if x.strip()], mpi, link, sizes, reps,
                    run_launch, say=lambda s: con.print(s), probe=core_round_trip)
    out_path.write_text(json.dumps(doc, indent=1) + "\n")
    t = Table(title=f"LogGP parameters ({out_path})")
    for col in ("level", "L us", "o_s us", "o_r us", "g us", "G ns/B", "gamma ns/B",
                "one-way fit R2", "median rel. residual"):
        t.add_column(col, justify="right")
    for lvl, d in doc["levels"].items():
        p, q = d["params"], d["quality"]["one_way"]
        t.add_row(lvl, f"{p['L'] * 1e6:.2f}", f"{p['o_s'] * 1e6:.2f}", f"{p['o_r'] * 1e6:.2f}",
                  f"{p['g'] * 1e6:.2f}", f"{p['G'] * 1e9:.3f}", f"{p['gamma'] * 1e9:.3f}",
                  f"{q['r2']:.4f}", f"{q['median_rel_residual'] * 100:.1f}%")
    con.print(t)
    for lvl, d in doc["levels"].items():
        regs = d["params"].get("regimes")
        if not regs:
            continue
        r = Table(title=f"level {lvl}: protocol ranges found in the medians (from size: "
                        f"own parameters); copy {d['params'].get('copy', 0.0) * 1e9:.3f} ns/B")
        for col in ("from B", "L us", "o_s us", "O_s ns/B", "o_r us", "O_r ns/B", "g us",
                    "G ns/B"):
            r.add_column(col, justify="right")
        for x in regs:
            r.add_row(str(x["from"]), f"{x['L'] * 1e6:.2f}", f"{x['o_s'] * 1e6:.2f}",
                      f"{x['O_s'] * 1e9:.3f}", f"{x['o_r'] * 1e6:.2f}", f"{x['O_r'] * 1e9:.3f}",
                      f"{x['g'] * 1e6:.2f}", f"{x['G'] * 1e9:.3f}")
        con.print(r)


@model_group.command("tune", context_settings=_CTX)
@click.option("--params", "params_path", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="LogGP parameters from `isthmus model calibrate`.")
@click.option("--ranks", default="2,4,8", show_default=True,
              help="Group sizes inside a site to tune for.")
@click.option("--sites", default="2,3", show_default=True,
              help="Numbers of sites to tune the phase between sites for.")
@click.option("--sizes", default="8,64,512,4k,32k,256k,1M,4M", show_default=True,
              help="Sizes of the sweep (k = 1024, M = 1048576: docs/knobs.md, Units; per block "
                   "for reduce_scatter, "
                   "allgather, alltoall, as isthmus-bench coll).")
@click.option("--coll", "colls", default=",".join(COLLS_DEFAULT), show_default=True)
@click.option("--measure", is_flag=True,
              help="Refine by measurement: run every algorithm (and inside a site the vendor's "
                   "collective) with isthmus-bench coll and keep the fastest measured one.")
@click.option("--mpi", type=click.Choice(["openmpi", "mpich"]), default="openmpi", show_default=True)
@click.option("--wan", "link", metavar="SPEC", default=None,
              help="With --measure: the emulated link between sites (root).")
@click.option("--reps", type=click.IntRange(3, 1000), default=5, show_default=True)
@click.option("--out", "out_path", type=OutputFile(), default=Path("coll-table.json"),
              show_default=True)
@click.option("--report", "report_path", type=OutputFile(),
              default=None, help="Also write every candidate's predicted and measured time (JSON).")
def tune_cmd(params_path, ranks, sites, sizes, colls, measure, mpi, link, reps, out_path,
             report_path):
    """Write the selection table libisthmus reads at MPI_Init (ISTHMUS_COLL_TABLE): for
    each collective, level, group size and size, the algorithm with the least predicted
    time, or with --measure the fastest measured one."""
    from ..bench.launchers import run_launch
    from ..model import tune as T

    levels = load_levels(params_path)
    rl, sl, sz = _int_list(ranks, "--ranks"), _int_list(sites, "--sites"), _bench_sizes(sizes)
    cl = [c.strip() for c in colls.split(",") if c.strip()]
    for c in cl:
        if c not in T.COLLS:
            raise IsthmusError(f"--coll {c}: unknown; known: {', '.join(T.COLLS)}")
    con = err_console()
    measured, commands = {}, []
    if measure:
        for lvl, plist in (("intra", rl), ("wan", sl)):
            if lvl not in levels:
                continue
            for p in plist:
                for c in cl:
                    if lvl == "wan" and c not in T.WAN_COLLS:
                        continue
                    got, cmds = T.measure(c, lvl, p, [0] if c == "barrier" else sz, mpi, link,
                                          reps, run_launch, say=lambda s: con.print(s))
                    measured[(c, lvl, p)] = got
                    commands += cmds
    table, rows = T.tune(levels, rl, sl, sz, cl, measured)
    out_path.write_text(json.dumps(table, indent=1) + "\n")
    if report_path:
        from ..model.calibrate import machine

        report_path.write_text(json.dumps({"rows": rows, "commands": commands,
                                           "machine": machine()}, indent=1) + "\n")
    by = sum(1 for r in rows if r["by"] == "measured")
    con.print(f"wrote {out_path}: {len(table['rules'])} rules from {len(rows)} points "
              f"({by} chosen by measurement); use it with ISTHMUS_COLL_TABLE={out_path}")
