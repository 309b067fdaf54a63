# isthmus/model/calibrate.py: `isthmus model calibrate`: measure what LogGP is fitted to on
# each level of a multi-site job and fit it. The measuring is isthmus-bench's `loggp`
# benchmark (native/tools/bench/loggp.c) between two ranks:
#   intra  two ranks of one site (started by the vendor's launcher, without a gateway),
#          each message a broadcast between the two (`loggp --via coll`): one message of
#          a collective's schedule, which inside a site takes libisthmus's shared-memory
#          channels up to 8 KiB and the vendor's point-to-point above; the software of
#          one collective call (o_call, measured first) is taken out of every time;
#   wan    one rank at each of two sites: the path through both gateways and the link
#          (emulated with --wan, or the real one of a site file).
# Each quantity's median over the repetitions goes to loggp.fit_loggp; the reduction cost
# is fitted per op and type from MPI_Reduce_local. Inside a site the software cost of one
# collective call of ours (o_call) is measured too: an allreduce on one rank; and the cost
# of a two-way step (o_x, O_x) from what an exchange (MPI_Sendrecv both ways) takes beyond
# what the one-way parameters predict for it. The result is JSON with the parameters,
# every line's fit quality and the medians themselves, so a fit can be judged and redone.
from __future__ import annotations

import datetime
import os
import platform
import shlex
from dataclasses import dataclass, field, replace
from typing import Callable, Iterable

import math

import numpy as np

from ..errors import IsthmusError
from ..units import parse_size
from .loggp import LogGP, Measurements, fit_line, fit_loggp, fit_regimes, with_regimes
from .simulate import exchange_time

DEFAULT_SIZES = "1,8,64,512,1k,4k,16k,64k,256k,1M"
# Inside a site each measurement is made this many times, in separate launches, and each
# quantity's median over them is fitted: one launch in a few came out 2-3x slow at every
# size on this 2-core machine (both ranks sharing a core for a while), and one bad launch
# moved the fit's protocol ranges (bench/notebook/collectives.md, issue 8, the model after the
# channels).
INTRA_LAUNCHES = 3


def merge_launches(lists: list[list[dict]]) -> list[dict]:
    """One record per point of isthmus-bench's records from several launches of the same
    command, its median the median of the launches' medians."""
    points: dict[tuple, list[dict]] = {}
    for recs in lists:
        for r in recs:
            if r.get("status") != "ok":
                continue
            key = (r.get("benchmark"), r.get("quantity"), r.get("op"), r.get("size"))
            points.setdefault(key, []).append(r)
    out = []
    for rs in points.values():
        m = dict(rs[0])
        m["median"] = float(np.median([float(x["median"]) for x in rs]))
        m["launches"] = len(rs)
        out.append(m)
    return out
REDUCE_DEFAULT = "sum/double"  # the op and type whose gamma the level's parameters carry


@dataclass
class LevelData:
    """Medians (seconds) of one level's loggp records."""
    ms: Measurements
    reduce: dict[str, dict[int, float]]
    copy: dict[int, float] = field(default_factory=dict)  # memcpy of m bytes (copy_local)


def level_data(records: Iterable[dict], o_call: float = 0.0) -> LevelData:
    """The medians of one run of `isthmus-bench loggp --json`. Trains become the gap per
    message: (T - one_way(m) - one_way(smallest)) / (n - 1), the train's time minus its
    last message's flight and the acknowledgement's. o_call: the software of one
    collective call, taken out of every message's time (`loggp --via coll`, where each
    message, each exchange and each message of a train is one call); the model charges it
    once per collective on its own."""
    ow: dict[int, float] = {}
    so: dict[int, float] = {}
    ro: dict[int, float] = {}
    trains: dict[int, tuple[float, int]] = {}
    red: dict[str, dict[int, float]] = {}
    cp: dict[int, float] = {}
    ex: dict[int, float] = {}
    for r in records:
        if r.get("benchmark") != "loggp" or r.get("status") != "ok":
            continue
        q, m, t = r.get("quantity"), int(r["size"]), float(r["median"]) * 1e-6
        if q == "one_way":
            ow[m] = t
        elif q == "send_overhead":
            so[m] = t
        elif q == "recv_overhead":
            ro[m] = t
        elif q == "train":
            trains[m] = (t, int(r["iters"]))
        elif q == "reduce_local":
            red.setdefault(str(r.get("op")), {})[m] = t
        elif q == "copy_local":
            cp[m] = t
        elif q == "exchange":
            ex[m] = t
    if not ow:
        raise ValueError("no loggp records (was isthmus-bench run with --json?)")
    if o_call > 0:
        floor = 1e-9  # a time is never below a nanosecond, nor negative
        ow, so, ro, ex = ({m: max(t - o_call, floor) for m, t in d.items()}
                          for d in (ow, so, ro, ex))
        trains = {m: (t - n * o_call, n) for m, (t, n) in trains.items()}
    ack = ow[min(ow)]
    gaps = {}
    for m, (t, n) in trains.items():
        if n >= 2 and m in ow:
            g = (t - ow[m] - ack) / (n - 1)
            if g > 0:
                gaps[m] = g
    return LevelData(Measurements(one_way=ow, send_overhead=so, recv_overhead=ro,
                                  train_gap=gaps, reduce=red.get(REDUCE_DEFAULT, {}),
                                  exchange=ex), red, cp)


def _env_bytes(name: str, default: int) -> int:
    """A size setting from the environment, read as libisthmus reads it (isthmus/units.py
    is the grammar of native/src/common/units.c); a bad one is refused as MPI_Init would."""
    v = os.environ.get(name)
    if not v:
        return default
    try:
        return parse_size(v)
    except ValueError as e:
        raise IsthmusError(f"{name}={v}: {e}") from None


def wan_protocol() -> tuple[int, int]:
    """(eager limit, early bytes) of isthmus's messages between sites under this
    environment, the eager limit lowered to the chunk as core/init.c does."""
    chunk = _env_bytes("ISTHMUS_CHUNK", 256 << 10)
    eager = min(_env_bytes("ISTHMUS_EAGER", 64 << 10), chunk)
    early = _env_bytes("ISTHMUS_EARLY", 2 * chunk)
    return eager, early


def fit_level(data: LevelData, rndv: int = 0, regimes: bool = False,
              two_way: bool = False, early: int = 0) -> dict:
    """The level's JSON: parameters, fit quality, per-op reduction costs, the medians.
    regimes: also cut the sizes into protocol ranges with their own parameters
    (loggp.fit_regimes; for the vendor's path inside a site, whose protocol switches
    we do not know; between sites isthmus's own rendezvous is modelled by rndv and
    early).
    two_way: fit the cost of a two-way step (o_x, O_x; fit_two_way) from the exchange
    medians: inside a node, where the two ranks' copies share its cores and memory
    (between sites each direction has its own link, which the simulator models)."""
    fit = fit_loggp(data.ms, rndv, early)
    params = fit.params
    quality = fit.quality()
    if regimes:
        regs = fit_regimes(data.ms)
        params = with_regimes(params, regs)
        if len(regs) > 1:
            quality["regimes"] = [
                {"first": r.first, "sizes": r.sizes, "synchronous": r.synchronous,
                 **{k: {"r2": v.r2, "median_rel_residual": v.median_rel_residual,
                        "max_rel_residual": v.max_rel_residual, "points": v.points}
                    for k, v in r.lines.items()}} for r in regs]
    reduce = {}
    for op, pts in sorted(data.reduce.items()):
        if len(pts) >= 2:
            lf = fit_line(sorted(pts), [pts[m] for m in sorted(pts)])
            reduce[op] = {"gamma0": max(lf.a, 0.0), "gamma": max(lf.b, 0.0),
                          "quality": {"r2": lf.r2, "median_rel_residual": lf.median_rel_residual,
                                      "max_rel_residual": lf.max_rel_residual,
                                      "points": lf.points}}
    if len(data.copy) >= 2:
        # a schedule's staging copies: copy0 + m copy (older isthmus-bench: none, 0)
        cl = fit_line(sorted(data.copy), [data.copy[m] for m in sorted(data.copy)])
        params = replace(params, copy0=max(cl.a, 0.0), copy=max(cl.b, 0.0),
                         regimes=tuple((lo, replace(r, copy0=max(cl.a, 0.0),
                                                    copy=max(cl.b, 0.0)))
                                       for lo, r in params.regimes))
        quality["copy"] = {"r2": cl.r2, "median_rel_residual": cl.median_rel_residual,
                           "max_rel_residual": cl.max_rel_residual, "points": cl.points}
    if two_way and len(data.ms.exchange) >= 2:
        params, quality["two_way"] = fit_two_way(params, data.ms.exchange)
    ms = data.ms
    return {"params": params.as_dict(), "quality": quality, "reduce": reduce,
            "medians_s": {"one_way": _keys(ms.one_way), "send_overhead": _keys(ms.send_overhead),
                          "recv_overhead": _keys(ms.recv_overhead),
                          "train_gap": _keys(ms.train_gap),
                          "reduce_local": {op: _keys(pts)
                                           for op, pts in sorted(data.reduce.items())},
                          "copy_local": _keys(data.copy),
                          "exchange": _keys(ms.exchange)}}


def _fit_range(params: LogGP, exchange: dict[int, float], sizes: list[int]) -> tuple:
    """o_x, O_x (non-negative least squares, relative residuals) of the exchange's time
    beyond params' prediction of it at these sizes, and the residuals before and after."""
    from scipy.optimize import nnls

    m = np.array(sizes, dtype=float)
    t = np.array([exchange[k] for k in sizes])
    pred = np.array([exchange_time(params, k) for k in sizes])
    w = 1.0 / t  # timing noise is relative, as in every line of the calibration
    a = np.column_stack([np.ones_like(m), m]) if len(sizes) >= 2 else np.ones((1, 1))
    x, _ = nnls(a * w[:, None], (t - pred) * w)
    o_x, O_x = float(x[0]), float(x[1]) if len(x) > 1 else 0.0
    after = np.abs(t - pred - o_x - O_x * m) / t
    return o_x, O_x, {"points": len(sizes),
                      "median_rel_residual_before": float(np.median(np.abs(t - pred) / t)),
                      "median_rel_residual": float(np.median(after)),
                      "max_rel_residual": float(np.max(after))}


def fit_two_way(params: LogGP, exchange: dict[int, float]) -> tuple[LogGP, dict]:
    """params with the cost of a two-way step, from the exchange medians (seconds per
    MPI_Sendrecv of m bytes both ways between two ranks, back to back). Both ranks of an
    exchange receive m bytes while m of their own go the other way, so the model adds
    o_x + O_x m to each receive of it (simulate.predict) and its time per call by as
    much: o_x and O_x are the line, least squares with both non-negative, through what
    the exchange takes beyond what params without them predict. Per protocol range (the
    exchange's sizes in each range), and for the level's own parameters over all sizes.
    Only calibration medians go in: the collectives' timings are the validation."""
    base = replace(params, o_x=0.0, O_x=0.0,
                   regimes=tuple((lo, replace(p, o_x=0.0, O_x=0.0))
                                 for lo, p in params.regimes))
    sizes = sorted(exchange)
    o_x, O_x, q = _fit_range(replace(base, regimes=()), exchange, sizes)
    quality = {"level": q, "ranges": []}
    out = replace(base, o_x=o_x, O_x=O_x)
    regs = []
    for i, (lo, p) in enumerate(base.regimes):
        hi = base.regimes[i + 1][0] if i + 1 < len(base.regimes) else math.inf
        mine = [m for m in sizes if lo <= m < hi]
        if mine:
            rx, rX, rq = _fit_range(base, exchange, mine)
            quality["ranges"].append({"from": int(lo), "o_x": rx, "O_x": rX, **rq})
        else:
            rx = rX = 0.0  # nothing measured in this range: no two-way cost known
        regs.append((lo, replace(p, o_x=rx, O_x=rX)))
    return replace(out, regimes=tuple(regs)), quality


def level_data_from_medians(medians: dict) -> LevelData:
    """LevelData from a level's "medians_s" (as fit_level writes it), to refit stored
    calibrations with the current model."""
    md = {k: {int(m): float(t) for m, t in v.items()} for k, v in medians.items()
          if k not in ("reduce_local", "copy_local")}
    red = {op: {int(m): float(t) for m, t in v.items()}
           for op, v in medians.get("reduce_local", {}).items()}
    try:
        ms = Measurements(one_way=md["one_way"], send_overhead=md["send_overhead"],
                          recv_overhead=md["recv_overhead"], train_gap=md["train_gap"],
                          reduce=red.get(REDUCE_DEFAULT, {}),
                          exchange=md.get("exchange", {}))  # older calibrations: none
    except KeyError as e:
        raise ValueError(f"the stored medians lack {e.args[0]!r}") from None
    return LevelData(ms, red, {int(m): float(t) for m, t in medians.get("copy_local", {}).items()})


def _keys(d: dict[int, float]) -> dict[str, float]:
    return {str(k): v for k, v in sorted(d.items())}


def machine() -> dict:
    try:
        load = os.getloadavg()
    except OSError:
        load = (float("nan"),) * 3
    return {"host": platform.node(), "cpus": os.cpu_count(), "kernel": platform.release(),
            "load_average": [round(x, 2) for x in load],
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}


def calibrate(levels: list[str], mpi: str, link: str | None, sizes: str, reps: int,
              run: Callable, say: Callable[[str], None] = lambda s: None,
              probe: Callable[[], float] | None = None) -> dict:
    """Measure and fit each level. `run(launch)` runs an isthmus-bench launch and returns
    its LaunchResult (bench.launchers.run_launch, or a fake in tests). `probe()`, when
    given, returns the cores' cache-line round trip in ns (noise.corelat.core_round_trip);
    inside a site it is taken before and after every launch, recorded, and a calibration
    that saw the machine change state says so (its fit mixes two machines)."""
    from ..bench.launchers import Launch, Profile
    from ..noise.corelat import STATE_RATIO, states_differ

    core_rtt: list[float] = []
    probe_error: list[str] = []

    def run_probed(launch):
        """run(launch), inside a site with the cores' round trip before and after"""
        def take():
            if probe is None or probe_error:
                return
            try:
                core_rtt.append(float(probe()))
            except IsthmusError as e:
                probe_error.append(str(e))
                say(f"not recording the cores' round trip: {e}")
        if launch.profile.name != "intra":
            return run(launch)
        take()
        res = run(launch)
        take()
        return res

    doc = {"format": "isthmus-loggp", "version": 1, "mpi": mpi, "link": link or "loopback",
           "machine_before": machine(), "levels": {}, "commands": {}}
    for lvl in levels:
        if lvl not in ("intra", "wan"):
            raise IsthmusError(f"unknown level {lvl!r}: use intra and/or wan")
        # inside a site: the vendor's path, started as on one node (no gateway, whose
        # channel a real site's ranks also poll only when cross-site work is pending)
        prof = Profile(lvl, link, 2) if lvl == "wan" else Profile(lvl, None, 1, gateway=False)
        o_call = 0.0
        if lvl == "intra":
            # what a collective of ours costs in software alone: one on a single rank
            # (no message: the call, the choice, the schedule's lookup and its copy);
            # first, since it comes out of every time of the level's measurement
            one = Launch("coll", ["--op", "allreduce", "-m", "4", "-r", str(reps)],
                         f"isthmus-{mpi}", prof, 1, timeout=300,
                         env={"ISTHMUS_COLL_ALLREDUCE": "recursive_doubling"})
            med = []
            for _ in range(INTRA_LAUNCHES):
                r1 = run_probed(one)
                doc["commands"]["intra_call"] = r1.command
                got = [float(x["median"]) for x in r1.records if x.get("status") == "ok"]
                if not r1.ok or not got:
                    raise IsthmusError(f"level intra: measuring the call overhead failed: "
                                       f"{r1.command}\n{r1.stderr_tail}")
                med.append(got[0])
            o_call = float(np.median(med)) * 1e-6
        via = ["--via", "coll"] if lvl == "intra" else []
        launch = Launch("loggp", ["-m", sizes, "-r", str(reps), "--peer", "1", *via],
                        f"isthmus-{mpi}", prof, 2, timeout=900)
        say(f"measuring level {lvl}: 2 ranks, {'one site' if lvl == 'intra' else 'two sites'}"
            + (f" across {link}" if lvl == "wan" and link else ""))
        lists = []
        for _ in range(INTRA_LAUNCHES if lvl == "intra" else 1):
            res = run_probed(launch)
            doc["commands"][lvl] = res.command
            if not res.ok:
                raise IsthmusError(f"level {lvl}: the measurement failed (exit "
                                   f"{res.returncode}): {shlex.quote(res.command)}\n"
                                   f"{res.stderr_tail}")
            lists.append(res.records)
        try:
            # between sites messages above the eager limit go by rendezvous, their
            # first bytes early
            rndv, early = wan_protocol() if lvl == "wan" else (0, 0)
            recs = merge_launches(lists) if len(lists) > 1 else lists[0]
            doc["levels"][lvl] = fit_level(level_data(recs, o_call), rndv,
                                           regimes=lvl == "intra", two_way=lvl == "intra",
                                           early=early)
        except ValueError as e:
            raise IsthmusError(f"level {lvl}: cannot fit LogGP: {e}") from None
        if lvl == "intra":
            doc["levels"][lvl]["params"]["o_call"] = o_call
            doc["levels"][lvl]["via"] = "coll"
            doc["levels"][lvl]["launches"] = INTRA_LAUNCHES
            # isthmus's default barrier on 2 ranks of one site (no algorithm forced; since
            # issue 8's one-site defaults our dissemination over the vendor's
            # point-to-point, before that the vendor's ibarrier): what isthmus-bench coll
            # closes each call of a rooted collective with (tune.predicted(closed=True))
            bar = Launch("coll", ["--op", "barrier", "-r", str(reps)], f"isthmus-{mpi}",
                         prof, 2, timeout=300)
            r2 = run_probed(bar)
            doc["commands"]["intra_barrier"] = r2.command
            med = [float(x["median"]) for x in r2.records
                   if x.get("status") == "ok" and x.get("op") == "barrier"]
            if not r2.ok or not med:
                raise IsthmusError(f"level intra: measuring the default barrier failed: "
                                   f"{r2.command}\n{r2.stderr_tail}")
            doc["levels"][lvl]["params"]["o_barrier"] = med[0] * 1e-6
            if probe is not None:
                changed = states_differ(core_rtt)
                doc["levels"][lvl]["core_round_trip_ns"] = core_rtt
                doc["levels"][lvl]["machine_state_changed"] = changed
                if probe_error:
                    doc["levels"][lvl]["core_round_trip_error"] = probe_error[0]
                if changed:
                    say(f"warning: the cache-line round trip between the two cpus went from "
                        f"{min(core_rtt):.0f} to {max(core_rtt):.0f} ns during the calibration "
                        f"(more than {STATE_RATIO}x): the host moved this machine's cpus, and "
                        "the fit mixes both states. Calibrate again, or on pinned cpus.")
    doc["machine_after"] = machine()
    return doc
