# isthmus/bench/catalog.py: the benchmarks isthmus-bench knows, their options, and the
# rank counts each can run with, so bad input is refused before anything is launched.
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from ..errors import IsthmusError
from ..units import parse_size

BENCHMARKS = {
    "latency": "ping-pong latency between rank 0 and a peer, against message size",
    "bw": "bandwidth of a window of back-to-back MPI_Isend, against message size",
    "bibw": "bidirectional bandwidth (windows both ways at once)",
    "msgrate": "message rate of n/2 pairs streaming at once",
    "placement": "latency from rank 0 to every other rank, by distance (node, site)",
    "one2many": "rank 0 sends to 1..N partners at once; time of the slowest",
    "many2one": "1..N partners send to rank 0 at once; time of the slowest",
    "interference": "ping-pong of a pair while the other ranks run background traffic",
    "coll": "every MPI collective across sizes",
    "a2a-fraction": "Alltoall on 100/50/25/12.5% of the ranks while the rest wait in a barrier",
}

COLLECTIVES = ("barrier bcast reduce allreduce gather gatherv scatter scatterv allgather allgatherv "
               "alltoall alltoallv alltoallw reduce_scatter reduce_scatter_block scan exscan "
               "neighbor_allgather neighbor_allgatherv neighbor_alltoall neighbor_alltoallv "
               "neighbor_alltoallw").split()

# plan/CLI option -> (isthmus-bench flag, kind)
OPTIONS: dict[str, tuple[str, str]] = {
    "sizes": ("-m", "sizes"),
    "iters": ("-i", "int"),
    "warmup": ("-x", "int"),
    "reps": ("-r", "int"),
    "window": ("-W", "int"),
    "peer": ("--peer", "int"),
    "partners": ("--partners", "intlist"),
    "fractions": ("--fractions", "numlist"),
    "background": ("--background", "choice:none,pairs,alltoall"),
    "bg_size": ("--bg-size", "size"),
    "bg_pairs": ("--bg-pairs", "str"),
    "ops": ("--op", "ops"),
    "nonblocking": ("--nonblocking", "flag"),
    "max_time": ("--max-time", "num"),
}


def check_benchmark(name: str) -> None:
    if name not in BENCHMARKS:
        raise IsthmusError(f"unknown benchmark {name!r}; known: {', '.join(BENCHMARKS)}")


def _size_text(v: Any, what: str) -> str:
    if isinstance(v, bool) or not isinstance(v, (int, str)):
        raise IsthmusError(f"{what}: {v!r} is not a size (bytes, or a string like '64k', '1M')")
    text = str(v).strip()
    try:
        parse_size(text)  # isthmus-bench reads sizes with the same grammar (units.h)
    except ValueError:
        raise IsthmusError(f"{what}: {v!r} is not a size (bytes, or a string like '64k', '1M')") from None
    return text


def to_args(options: Mapping[str, Any], where: str = "options") -> list[str]:
    """isthmus-bench arguments for a mapping of plan/CLI options (validated)."""
    args: list[str] = []
    for key, value in options.items():
        if key not in OPTIONS:
            raise IsthmusError(f"{where}: unknown option {key!r}; known: {', '.join(OPTIONS)}")
        flag, kind = OPTIONS[key]
        what = f"{where}: {key}"
        if kind == "flag":
            if not isinstance(value, bool):
                raise IsthmusError(f"{what}: expected true or false, got {value!r}")
            if value:
                args.append(flag)
            continue
        if kind == "sizes":
            values = value if isinstance(value, list) else [value]
            if isinstance(value, str) and ":" in value:
                lo, hi = value.split(":", 1)
                text = f"{_size_text(lo, what)}:{_size_text(hi, what)}"
            else:
                if not values:
                    raise IsthmusError(f"{what}: empty list")
                text = ",".join(_size_text(v, what) for v in values)
        elif kind == "int":
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise IsthmusError(f"{what}: expected a non-negative integer, got {value!r}")
            text = str(value)
        elif kind == "num":
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise IsthmusError(f"{what}: expected a positive number, got {value!r}")
            text = str(value)
        elif kind == "size":
            text = _size_text(value, what)
        elif kind in ("intlist", "numlist"):
            values = value if isinstance(value, list) else [value]
            ok = all(isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 for v in values)
            if not values or not ok or (kind == "intlist" and not all(isinstance(v, int) for v in values)):
                raise IsthmusError(f"{what}: expected a list of positive numbers, got {value!r}")
            text = ",".join(str(v) for v in values)
        elif kind == "ops":
            values = value if isinstance(value, list) else str(value).split(",")
            bad = [v for v in values if v not in COLLECTIVES]
            if bad or not values:
                raise IsthmusError(f"{what}: unknown collective {bad[0] if bad else ''!r}; known: "
                                   f"{', '.join(COLLECTIVES)}")
            text = ",".join(values)
        elif kind.startswith("choice:"):
            choices = kind.split(":", 1)[1].split(",")
            if value not in choices:
                raise IsthmusError(f"{what}: {value!r} is not one of {', '.join(choices)}")
            text = value
        else:
            text = str(value)
        args += [flag, text]
    return args


@dataclass(frozen=True)
class RankNeed:
    minimum: int
    even: bool = False


def rank_need(benchmark: str, options: Mapping[str, Any]) -> RankNeed:
    """The rank count a benchmark needs with these options."""
    check_benchmark(benchmark)
    if benchmark == "coll":
        return RankNeed(1)
    if benchmark == "msgrate":
        return RankNeed(2, even=True)
    need = 2
    if benchmark in ("latency", "bw", "bibw", "interference"):
        need = max(need, int(options.get("peer", 1)) + 1)
    if benchmark == "interference" and options.get("background", "none") != "none":
        need = max(need, 4)
    if benchmark in ("one2many", "many2one") and options.get("partners"):
        parts = options["partners"] if isinstance(options["partners"], list) else [options["partners"]]
        need = max(need, max(int(p) for p in parts) + 1)
    return RankNeed(need)


def check_ranks(benchmark: str, options: Mapping[str, Any], ranks: int, sites: int = 1) -> None:
    """Raise a clear message if `ranks` cannot run this benchmark on `sites` sites."""
    need = rank_need(benchmark, options)
    if ranks < 1:
        raise IsthmusError(f"{benchmark}: rank count must be at least 1, got {ranks}")
    if ranks < need.minimum:
        detail = ""
        if benchmark == "interference" and need.minimum == 4 and ranks >= 2:
            detail = " (2 measured ranks plus at least 2 for the background traffic)"
        elif "peer" in options or "partners" in options:
            detail = " with these peer/partners options"
        raise IsthmusError(f"{benchmark} needs at least {need.minimum} ranks{detail}; got {ranks}")
    if need.even and ranks % 2:
        raise IsthmusError(f"{benchmark} pairs rank i with i+n/2 and needs an even rank count; got {ranks}")
    if ranks < sites:
        raise IsthmusError(f"{ranks} ranks cannot fill {sites} sites (every site needs at least one rank)")
