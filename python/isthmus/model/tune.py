# isthmus/model/tune.py: `isthmus model tune`: the selection table libisthmus reads at
# MPI_Init (ISTHMUS_COLL_TABLE; native/src/coll/table.c), from the model's predictions,
# refined by measurement where a measurement is possible.
#
# For every collective, level and group size, each size of the sweep gets the algorithm
# with the least predicted time (simulate.predict of the schedules in schedule.py, with
# the level's LogGP parameters from `isthmus model calibrate`). With measurements (the
# same algorithms forced one by one through ISTHMUS_COLL_<COLL> / ISTHMUS_COLL_WAN_<COLL>
# and timed by isthmus-bench coll; inside a site the vendor's own collective too), the
# measured best wins, and the rule keeps both times so the table says why.
#
# Sizes follow isthmus-bench coll (OSU): the vector for bcast, reduce, allreduce, scan;
# each rank's block for reduce_scatter, allgather, alltoall. The table's "bytes" are what
# libisthmus selects by: the whole result at one rank (vector, or all blocks).
from __future__ import annotations

import math
from typing import Callable, Iterable

from . import schedule as S
from .loggp import LogGP
from .simulate import predict

PER_BLOCK = {"reduce_scatter", "allgather", "alltoall"}
COLLS = ("barrier", "bcast", "reduce", "allreduce", "reduce_scatter", "scan", "allgather",
         "alltoall")
# between sites libisthmus runs these phases with schedules of ours
WAN_COLLS = ("barrier", "bcast", "reduce", "allreduce", "scan", "allgather")


def table_bytes(coll: str, m: int, p: int) -> int:
    return m * p if coll in PER_BLOCK else m


def model_size(coll: str, m: int, p: int) -> int:
    """The model's size argument (schedule.SIZE_MEANS) for a bench size m."""
    return m * p if coll == "reduce_scatter" else m


def c_choice(alg: str, m: int) -> dict:
    """The table's spelling of a model algorithm (and its parameters at size m)."""
    if alg.startswith("knomial"):
        return {"algorithm": "knomial", "radix": int(alg[len("knomial"):] or 4)}
    if alg == "chain":
        return {"algorithm": "chain", "segment": max(1024, m // 8)}
    return {"algorithm": alg}


def candidates(coll: str, lvl: str) -> list[str]:
    algs = list(S.ALGORITHMS[coll])
    if coll == "scan" and lvl == "wan":
        return algs  # the sites' phase of a scan is an exclusive scan of the totals
    return algs


def predicted(coll: str, alg: str, p: int, m: int, params: LogGP, closed: bool = False,
              lvl: str = "intra", iters: int = 1) -> float:
    """The model's time per call. closed: as isthmus-bench coll times bcast, reduce and
    scan, each call followed by a barrier (the vendor's inside a site: its measured time
    on 2 ranks where calibrate has it, else modelled as dissemination; the leaders'
    linear one between sites). iters: calls back to back,
    as the benchmark makes them (a call may start before the last one has finished
    everywhere); the time is the last rank's finish over iters."""
    one = S.build(coll, alg, p, model_size(coll, m, p))
    if closed and coll in ROOTED and lvl == "intra" and p == 2 and params.o_barrier > 0:
        # the closing barrier is the vendor's, measured by calibrate on 2 ranks: it
        # separates the calls, so each costs one collective and that barrier
        return predict(one, params) + params.o_barrier + params.o_call
    if closed and coll in ROOTED:
        b = S.build("barrier", "dissemination" if lvl == "intra" else "linear", p, 0)
        one.chunk_bytes["barrier"] = 0  # its tokens carry nothing
        for r in range(p):
            for op in b.ops[r]:
                one.ops[r].append((op[0], op[1], ("barrier",)) + (
                    (op[3], ("barrier",)) if op[0] == "recv" else ()))
    s = S.Schedule(one.coll, one.algorithm, p, dict(one.chunk_bytes), root=one.root)
    for r in range(p):
        s.ops[r] = list(one.ops[r]) * max(iters, 1)
    # between sites each ordered pair of sites has its own link (the gateways keep one
    # connection per peer site, and --wan emulates one link per direction and pair)
    link = (lambda a, b: (a, b)) if lvl == "wan" else None
    return predict(s, params, link_of=link) / max(iters, 1) + params.o_call


def _bounds(sizes: list[int]) -> list[tuple[int, int | None]]:
    """Ranges around each size: boundaries at the geometric means of neighbours."""
    out = []
    for i, m in enumerate(sizes):
        lo = 0 if i == 0 else int(math.sqrt(max(sizes[i - 1], 1) * max(m, 1))) + 1
        hi = None if i == len(sizes) - 1 else int(math.sqrt(max(m, 1) * max(sizes[i + 1], 1)))
        out.append((lo, hi))
    return out


def _ranks_ranges(ps: list[int]) -> list[tuple[int, int | None]]:
    ps = sorted(set(ps))
    return [(p, None if i == len(ps) - 1 else ps[i + 1] - 1) for i, p in enumerate(ps)]


def tune(levels: dict[str, LogGP], ranks: Iterable[int], sites: Iterable[int],
         sizes: Iterable[int], colls: Iterable[str] = COLLS,
         measured: dict | None = None) -> tuple[dict, list[dict]]:
    """The table and one row per (coll, level, p, size) with every candidate's predicted
    and (where given) measured seconds. measured[(coll, lvl, p)][alg][m] = seconds; the
    intra level may also have alg "vendor"."""
    sizes = sorted(set(sizes))
    rules: list[dict] = []
    rows: list[dict] = []
    plan = []
    if "intra" in levels:
        plan.append(("intra", levels["intra"], [p for p in ranks if p >= 2], COLLS))
    if "wan" in levels:
        plan.append(("wan", levels["wan"], [p for p in sites if p >= 2], WAN_COLLS))
    for lvl, params, plist, allowed in plan:
        for coll in colls:
            if coll not in allowed:
                continue
            for p, (plo, phi) in zip(sorted(set(plist)), _ranks_ranges(plist)):
                grid = [0] if coll == "barrier" else sizes
                meas = (measured or {}).get((coll, lvl, p), {})
                picks = []
                for m in grid:
                    preds = {a: predicted(coll, a, p, m, params) for a in candidates(coll, lvl)}
                    times = {a: meas[a][m] for a in meas if m in meas[a]}
                    if times:
                        best = min(times, key=times.get)
                        why = "measured"
                    else:
                        best = min(preds, key=preds.get)
                        why = "predicted"
                    rows.append({"coll": coll, "level": lvl, "ranks": p, "size": m,
                                 "predicted_s": preds, "measured_s": times, "chosen": best,
                                 "by": why})
                    picks.append((m, best, preds.get(best), times.get(best)))
                prev = -1
                for (m, best, pt, mt), (lo, hi) in zip(picks, _bounds(grid)):
                    rule = {"coll": coll, "level": lvl, "ranks": [plo, phi]}
                    if coll != "barrier":  # contiguous ranges of the table's bytes
                        top = None if hi is None else table_bytes(coll, hi, p)
                        rule["bytes"] = [prev + 1, top]
                        prev = top if top is not None else prev
                    rule.update(c_choice(best, m) if best != "vendor" else {"algorithm": "vendor"})
                    if pt is not None:
                        rule["predicted_us"] = round(pt * 1e6, 3)
                    if mt is not None:
                        rule["measured_us"] = round(mt * 1e6, 3)
                    if rules and _same(rules[-1], rule):
                        rules[-1]["bytes"][1] = rule.get("bytes", [0, None])[1]
                    else:
                        rules.append(rule)
                if coll == "scan":  # exscan takes the same algorithms
                    rules.extend(dict(r, coll="exscan") for r in list(rules)
                                 if r["coll"] == "scan" and r["level"] == lvl
                                 and r["ranks"][0] == plo)
    return {"format": "isthmus-coll-table", "version": 1, "rules": rules}, rows


def _same(a: dict, b: dict) -> bool:
    keys = ("coll", "level", "ranks", "algorithm", "radix", "segment")
    return all(a.get(k) == b.get(k) for k in keys) and "bytes" in a and "bytes" in b


def env_name(coll: str, lvl: str) -> str:
    return f"ISTHMUS_COLL_{'WAN_' if lvl == 'wan' else ''}{coll.upper()}"


def spec_of(alg: str, m: int) -> str:
    """The ISTHMUS_COLL_* value that forces a model algorithm at size m."""
    c = c_choice(alg, m)
    if "radix" in c:
        return f"{c['algorithm']}:{c['radix']}"
    if "segment" in c:
        return f"{c['algorithm']}::{c['segment']}"
    return c["algorithm"]


ROOTED = {"bcast", "reduce", "scan"}  # what isthmus-bench coll closes with a barrier


def coll_seconds(rec: dict) -> float:
    """A coll record's time per call; rooted collectives' iterations are closed by a
    barrier (completion at every rank: see predicted(closed=True))."""
    return float(rec["median"]) * 1e-6


def measure(coll: str, lvl: str, p: int, sizes: list[int], mpi: str, link: str | None,
            reps: int, run: Callable, vendor_too: bool = True,
            say: Callable[[str], None] = lambda s: None,
            iters: int | None = None, in_turns: bool = True) -> tuple[dict, list[str]]:
    """Every candidate forced in turn, timed by isthmus-bench coll: {alg: {m: s}} and the
    commands. Inside a site p ranks on one site, one launch per size in which the
    candidates take turns repetition by repetition (`coll --algs`, each on a communicator
    carrying its hint), so they are compared in the same state of the machine; between
    sites p sites of one rank (so the sites' phase is all there is), one launch per
    candidate (ISTHMUS_COLL_WAN_*). A chain's segment depends on the size. in_turns=False:
    one launch per candidate inside a site too (the method before issue 8's stop 20, kept
    for comparing the two)."""
    from ..bench.launchers import Launch, Profile

    prof = Profile(lvl, link, p) if lvl == "wan" else Profile(lvl, None, 1, gateway=False)
    out: dict[str, dict[int, float]] = {}
    cmds = []
    algs = candidates(coll, lvl) + (["vendor"] if vendor_too and lvl == "intra" else [])
    op = coll
    extra = ["-i", str(iters), "-x", "1"] if iters else []
    if lvl == "intra" and in_turns:
        for m in sizes:
            specs = ["vendor" if a == "vendor" else spec_of(a, m) for a in algs]
            by_spec = dict(zip(specs, algs))
            args = ["--op", op, "-m", str(max(m, 4)), "-r", str(reps), "--algs",
                    ",".join(specs)] + extra
            say(f"  {coll} {lvl} p={p} size {m}: {', '.join(specs)} in turns")
            res = run(Launch("coll", args, f"isthmus-{mpi}", prof, p, timeout=900))
            cmds.append(res.command)
            for r in res.records:
                if r.get("status") == "ok" and r.get("op", coll) == op and r.get("alg") in by_spec:
                    out.setdefault(by_spec[r["alg"]], {})[m] = coll_seconds(r)
        return out, cmds
    for alg in algs:
        groups = [[m] for m in sizes] if alg == "chain" else [sizes]
        for g in groups:
            spec = "vendor" if alg == "vendor" else spec_of(alg, g[0])
            env = {env_name(coll, lvl): spec}
            if coll == "scan" and lvl == "wan":
                env = {env_name("exscan", lvl): spec}
            args = ["--op", op, "-m", ",".join(str(max(m, 4)) for m in g), "-r", str(reps)]
            args += extra
            say(f"  {coll} {lvl} p={p} {spec} sizes {g[0]}..{g[-1]}")
            res = run(Launch("coll", args, f"isthmus-{mpi}", prof, p, timeout=900, env=env))
            cmds.append(" ".join(f"{k}={v}" for k, v in env.items()) + " " + res.command)
            for r in res.records:
                if r.get("status") == "ok" and r.get("op", coll) == op:
                    m = int(r["size"])
                    m = min(sizes, key=lambda s: abs(max(s, 4) - m))
                    out.setdefault(alg, {})[m] = coll_seconds(r)
    return out, cmds
