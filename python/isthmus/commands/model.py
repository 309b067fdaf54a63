# isthmus/commands/model.py: `isthmus model`: the collective cost model. `predict` gives
# every algorithm's LogGP time for a collective, process count and size, on one level or
# over ranks spread across sites; `check` proves the algorithms' schedules give MPI's
# result (docs/model.md).
from __future__ import annotations

import json
from pathlib import Path

import click
from rich.table import Table

from ..errors import IsthmusError
from ..model import schedule as S
from ..model.loggp import LogGP
from ..model.simulate import ScheduleError, check, predict
from ..netemu.spec import parse_size
from ..ui import err_console
from . import register

_CTX = {"help_option_names": ["-h", "--help"]}


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
              help="Bytes: of the vector (bcast, reduce, allreduce, reduce_scatter, scan) or of each "
                   "rank's block (allgather, alltoall).")
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
        t = predict(S.build(coll, alg, ranks, size), level,
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
                        check(S.build(coll, alg, p, 4096), commutative=False)
                con.print(f"ok    {coll}/{alg}")
            except ScheduleError as e:
                bad += 1
                con.print(f"FAIL  {coll}/{alg}: {e}")
    if bad:
        raise IsthmusError(f"{bad} algorithm(s) give a wrong result")
