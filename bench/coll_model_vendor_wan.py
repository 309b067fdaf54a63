#!/usr/bin/env python3
"""The collectives measured four ways (first written for issue 8): the cost model against
measurement, the selection, isthmus against the vendor on one site, and collectives across
two emulated sites.

Sections (--sections, default all, in this order):

  model     `isthmus model calibrate` of the intra-site level (2 ranks on one node, started
            by the vendor's launcher, no gateway) and of
            the WAN level (one rank at each of 2 sites across --wan), then every
            algorithm of every collective forced in turn (ISTHMUS_COLL_[WAN_]<COLL>) and
            timed by isthmus-bench coll: inside a site with 2 ranks, between sites with
            2 and 3 sites of one rank (so the sites' phase is all there is). Reports per
            algorithm the median absolute relative error of the prediction, and how
            often the algorithm the model picks is within 10% of the best measured one.
  vendor    1 site, 2 ranks: a table tuned by measurement (`isthmus model tune
            --measure`, the vendor's own collective among the candidates) and then the
            vendor alone vs isthmus with that table, interleaved rounds (bench/local_coll.py),
            Allreduce, Reduce, Reduce_scatter, Scan; Open MPI and MPICH.
  wan       2 emulated sites (--wan), 4 ranks each: every collective at 8 B, 64 KiB and
            1 MiB under isthmus's defaults and plain Open MPI as one job across the same
            link (`isthmus bench baseline`), interleaved, iterations per size (WAN_PLAN);
            each against its physical bound (one one-way delay per unavoidable cross-site
            dependency, plus the bytes that must cross one direction over the rate).
  pipeline  the same placement, a 64 MiB MPI_Allreduce with and without the pipelined
            inter-site phase (ISTHMUS_COLL_WAN_ALLREDUCE=pipeline), interleaved rounds.

Needs root for the emulated link. Run from the repository root after a build:

    .venv/bin/python bench/coll_model_vendor_wan.py --wan delay=10ms,rate=100mbit

Progress on stderr, Markdown on stdout, everything (commands, raw records, load) in
bench/results/coll-model-vendor-wan-<timestamp>/ (the runs of BENCHMARKS.md, named
coll-issue8-*, are on the bench-results branch).
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "python"))

from isthmus.bench.launchers import Launch, Profile, run_launch  # noqa: E402
from isthmus.model import calibrate as C  # noqa: E402
from isthmus.model import tune as T  # noqa: E402
from isthmus.model.loggp import LogGP  # noqa: E402
from isthmus.noise.corelat import STATE_RATIO, core_round_trip  # noqa: E402

PY = str(REPO / ".venv" / "bin" / "python")
OUT: Path


def say(msg: str) -> None:
    print(f"[{dt.datetime.now():%H:%M:%S} load {os.getloadavg()[0]:.1f}] {msg}", file=sys.stderr,
          flush=True)


def save(name: str, obj) -> None:
    (OUT / name).write_text(json.dumps(obj, indent=1, default=str) + "\n")


def median(xs):
    return statistics.median(xs) if xs else float("nan")


# ---- model against measurement, selection ----

def section_model(args) -> str:
    levels = args.levels.split(",")
    say(f"calibrating levels {', '.join(levels)}")
    doc = C.calibrate(levels, args.mpi, args.wan, args.cal_sizes, args.reps, run_launch,
                      say=say, probe=core_round_trip)
    save("levels.json", doc)
    rows, commands = [], []
    plan = []
    if "intra" in levels:
        plan.append(("intra", 2, [8, 1024, 16384, 262144, 1 << 20], T.COLLS))
    if "wan" in levels:
        plan += [("wan", s, [8, 65536, 1 << 20], T.WAN_COLLS) for s in (2, 3)]
    methods = args.sweep.split(",")
    texts = []
    for method in methods:
        rows, commands = [], []
        for lvl, p, sizes, colls in plan:
            for coll in colls:
                sz = [0] if coll == "barrier" else sizes
                # inside the node: the cores' round trip before and after, so each row can
                # be put beside the calibration's machine state (docs/model.md)
                rtt = [core_round_trip()] if lvl == "intra" else []
                got, cmds = T.measure(coll, lvl, p, sz, args.mpi, args.wan, args.reps,
                                      run_launch, vendor_too=False, say=say,
                                      iters=5 if lvl == "wan" else None,
                                      in_turns=method == "turns")
                if lvl == "intra":
                    rtt.append(core_round_trip())
                commands += cmds
                for alg, pts in got.items():
                    for m, t in pts.items():
                        rows.append({"level": lvl, "p": p, "coll": coll, "alg": alg, "size": m,
                                     "measured_s": t, **({"core_rtt_ns": rtt} if rtt else {})})
        suffix = "" if len(methods) == 1 else f"_{method}"
        save(f"model_rows{suffix}.json", {"rows": rows, "commands": commands, "sweep": method})
        text = model_report(args, doc, rows, suffix)
        texts.append(text if len(methods) == 1 else
                     f"#### Sweep measured {'in turns' if method == 'turns' else 'one launch per algorithm'}\n\n{text}")
    return "\n".join(texts)


BENCH_OP = "sum/float"


def refit(doc: dict, regimes: bool = True, two_way: bool = True) -> dict[str, LogGP]:
    """The levels' parameters from the medians a calibration kept (the same fit as
    `isthmus model calibrate`, so a model change can be judged on old measurements).
    regimes=False: one LogGP per level, the model before protocol ranges; two_way=False:
    no cost of two-way steps (o_x, O_x), the model before it (a calibration without
    exchange medians has none either way)."""
    out = {}
    for lvl, d in doc["levels"].items():
        # the calibration's own protocol when it stored it (older ones: 64 KiB, none early)
        wp = d.get("params", {})
        rndv = int(wp.get("rndv", 65536)) if lvl == "wan" else 0
        early = int(wp.get("early", 0)) if lvl == "wan" else 0
        fit = C.fit_level(C.level_data_from_medians(d["medians_s"]), rndv,
                          regimes=regimes and lvl == "intra",
                          two_way=two_way and lvl == "intra", early=early)
        # isthmus-bench coll reduces MPI_FLOAT with MPI_SUM: that op's cost (the level's
        # own gamma is calibrate's default, sum/double)
        red = d["reduce"].get(BENCH_OP) or d["reduce"].get("sum/double", {})
        p = LogGP.from_dict({**fit["params"], "gamma0": red.get("gamma0", 0.0),
                             "gamma": red.get("gamma", 0.0),
                             "o_call": d["params"].get("o_call", 0.0),
                             "o_barrier": d["params"].get("o_barrier", 0.0)})
        out[lvl] = p
    return out


def _without(p: LogGP, **zero) -> LogGP:
    """p with some parameters set, in every protocol range too."""
    from dataclasses import replace

    regs = tuple((lo, replace(r, **zero)) for lo, r in p.regimes)
    return replace(p, **zero, regimes=regs)


def terms_report(rows: list[dict], lv: dict[str, LogGP]) -> str:
    """Which term of the prediction dominates each intra-site point: the per-byte terms
    (G, O_s, O_r), the reduction (gamma0, gamma), the call's software cost (o_call) or
    the per-message latency and overheads (the rest), each as a share of the predicted
    time; beside the measured time, so a miss can be traced to a term."""
    out = ["| collective | algorithm | size | measured (us) | predicted (us) | pred./meas. | "
           "per-byte | reduction | o_call | per-message | dominant |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in sorted((r for r in rows if r["level"] == "intra"),
                    key=lambda r: (r["coll"], r["alg"], r["size"])):
        p = lv["intra"]
        n = 100 if r["size"] <= 8192 else 20

        def pr(q):
            return T.predicted(r["coll"], r["alg"], r["p"], r["size"], q, closed=True,
                               lvl="intra", iters=n)
        full = r["predicted_s"]
        nobytes = pr(_without(p, G=0.0, O_s=0.0, O_r=0.0))
        nored = pr(_without(p, gamma0=0.0, gamma=0.0))
        sh = {"per-byte": (full - nobytes) / full, "reduction": (full - nored) / full,
              "o_call": p.o_call / full}
        sh["per-message"] = max(1.0 - sum(sh.values()), 0.0)
        dom = max(sh, key=sh.get)
        out.append(f"| {r['coll']} | {r['alg']} | {r['size']} | {r['measured_s'] * 1e6:.2f} | "
                   f"{full * 1e6:.2f} | {full / r['measured_s']:.2f} | "
                   + " | ".join(f"{sh[k] * 100:.0f}%" for k in
                                ("per-byte", "reduction", "o_call", "per-message"))
                   + f" | {dom} |")
    return "\n".join(out) + "\n"


def by_algorithm(rows: list[dict]) -> dict[tuple, list[float]]:
    """The rows' relative errors per (level, ranks/sites, collective, algorithm)."""
    groups: dict[tuple, list[float]] = {}
    for r in rows:
        groups.setdefault((r["level"], r["p"], r["coll"], r["alg"]), []).append(r["rel_err"])
    return groups


def by_point(rows: list[dict]) -> dict[tuple, list[dict]]:
    """The rows per sweep point (level, ranks/sites, collective, size): the candidates."""
    pts: dict[tuple, list[dict]] = {}
    for r in rows:
        pts.setdefault((r["level"], r["p"], r["coll"], r["size"]), []).append(r)
    return pts


def model_report(args, doc: dict, rows: list[dict], suffix: str = "") -> str:
    lv = refit(doc, regimes=not getattr(args, "no_regimes", False),
               two_way=not getattr(args, "no_two_way", False))
    for r in rows:
        # as many calls back to back as isthmus-bench made (its default: 100 up to 8 KiB,
        # 20 above; 5 between sites), bcast/reduce/scan closed by a barrier
        n = 5 if r["level"] == "wan" else (100 if r["size"] <= 8192 else 20)
        r["predicted_s"] = T.predicted(r["coll"], r["alg"], r["p"], r["size"], lv[r["level"]],
                                       closed=True, lvl=r["level"], iters=n)
        r["rel_err"] = abs(r["predicted_s"] - r["measured_s"]) / r["measured_s"]
    save(f"model_predicted{suffix}.json", {"levels": {k: v.as_dict() for k, v in lv.items()},
                                           "rows": rows})
    (OUT / f"model_terms{suffix}.md").write_text(terms_report(rows, lv))
    out = ["### Model against measurement", "",
           f"LogGP fitted by `isthmus model calibrate --mpi {args.mpi} --wan {args.wan}` "
           "(the medians, fit quality and commands in `levels.json`; between sites G from the "
           "sizes above the 64 KiB eager limit, whose rendezvous the model charges 2 L):", "",
           "| level | L (us) | o_s (us) | o_r (us) | g (us) | G (ns/B) | gamma (ns/B) | o_call (us) |",
           "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for k, p in lv.items():
        out.append(f"| {k} | {p.L * 1e6:.2f} | {p.o_s * 1e6:.2f} | {p.o_r * 1e6:.2f} | "
                   f"{p.g * 1e6:.2f} | {p.G * 1e9:.3f} | {p.gamma * 1e9:.3f} | "
                   f"{p.o_call * 1e6:.2f} |")
    for k, p in lv.items():
        if p.regimes:
            out += ["", f"Protocol ranges of level {k} (found in the calibration medians; "
                    "`loggp.fit_regimes`):", "",
                    "| from (B) | L (us) | o_s (us) | O_s (ns/B) | o_r (us) | O_r (ns/B) | "
                    "g (us) | G (ns/B) | o_x (us) | O_x (ns/B) |",
                    "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
            for lo, r in p.regimes:
                out.append(f"| {int(lo)} | {r.L * 1e6:.2f} | {r.o_s * 1e6:.2f} | "
                           f"{r.O_s * 1e9:.3f} | {r.o_r * 1e6:.2f} | {r.O_r * 1e9:.3f} | "
                           f"{r.g * 1e6:.2f} | {r.G * 1e9:.3f} | {r.o_x * 1e6:.2f} | "
                           f"{r.O_x * 1e9:.3f} |")
    out += ["", "Median absolute relative error of the predicted time, per algorithm, over the "
            "sizes (each measured point the median of its repetitions; predicted as the "
            "benchmark runs it: calls back to back, bcast/reduce/scan each followed by a "
            "barrier):", "",
            "| level | ranks/sites | collective | algorithm | points | median abs. rel. error | max |",
            "|---|---:|---|---|---:|---:|---:|"]
    groups = by_algorithm(rows)
    ok = 0
    for k, errs in sorted(groups.items()):
        ok += median(errs) <= 0.25
        out.append(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | {len(errs)} | {median(errs) * 100:.0f}% "
                   f"| {max(errs) * 100:.0f}% |")
    by_lvl = {}
    for k, errs in groups.items():
        a, b = by_lvl.get(k[0], (0, 0))
        by_lvl[k[0]] = (a + (median(errs) <= 0.25), b + 1)
    out += ["", f"Algorithms whose median error is within 25%: {ok} of {len(groups)} ("
            + ", ".join(f"{k}: {a} of {b}" for k, (a, b) in sorted(by_lvl.items())) + ").", ""]
    # selection: the model's pick against the measured best, per point
    pts = by_point(rows)
    good = 0
    detail = []
    for k, rs in sorted(pts.items()):
        best = min(rs, key=lambda r: r["measured_s"])
        pick = min(rs, key=lambda r: r["predicted_s"])
        slow = pick["measured_s"] / best["measured_s"]
        good += slow <= 1.10
        detail.append(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | {pick['alg']} | {best['alg']} | "
                      f"{slow:.2f} |")
    out += ["### Selection", "",
            f"The model's pick is within 10% of the best measured algorithm at {good} of "
            f"{len(pts)} points ({100 * good / max(len(pts), 1):.0f}%).", "",
            "| level | ranks/sites | collective | size | model picks | measured best | pick / best |",
            "|---|---:|---|---:|---|---|---:|"] + detail + [""]
    out += state_report(doc, rows)
    return "\n".join(out)


def state_report(doc: dict, rows: list[dict]) -> list[str]:
    """Inside the node, the same two scores over the rows measured in the calibration's
    machine state only: the cores' round trip before and after the row's launches within
    STATE_RATIO of the calibration's median. Shown beside, never instead of, the scores
    over every row."""
    cal = doc.get("levels", {}).get("intra", {}).get("core_round_trip_ns") or []
    intra = [r for r in rows if r["level"] == "intra" and r.get("core_rtt_ns")]
    if not cal or not intra:
        return []
    ref = median(cal)

    def same(r):
        return all(ref / STATE_RATIO <= x <= ref * STATE_RATIO for x in r["core_rtt_ns"])
    kept = [r for r in intra if same(r)]
    groups = by_algorithm(kept)
    ok = sum(median(e) <= 0.25 for e in groups.values())
    whole = {k: rs for k, rs in by_point(intra).items() if all(same(r) for r in rs)}
    good = sum(min(rs, key=lambda r: r["predicted_s"])["measured_s"]
               <= 1.10 * min(r["measured_s"] for r in rs) for rs in whole.values())
    sweep = [x for r in intra for x in r["core_rtt_ns"]]
    return ["### The machine's state inside the node", "",
            f"The cores' cache-line round trip (`isthmus-noise corelat`) during the "
            f"calibration: median {ref:.0f} ns ({min(cal):.0f}–{max(cal):.0f}, "
            f"{len(cal)} probes{', the state changed' if doc['levels']['intra'].get('machine_state_changed') else ''}); "
            f"around the sweep's launches {min(sweep):.0f}–{max(sweep):.0f} ns. "
            f"Rows measured within {STATE_RATIO}x of the calibration's state: {len(kept)} of "
            f"{len(intra)}.", "",
            f"Over those rows only: algorithms within 25%: {ok} of {len(groups)}; the pick "
            f"within 10% of the best at {good} of {len(whole)} points whose every algorithm "
            f"was measured in that state.", ""]


# ---- isthmus against the vendor on one site ----

def section_vendor(args) -> str:
    out = ["### isthmus against the vendor, one site, 2 ranks", ""]
    ops = "allreduce,reduce,reduce_scatter,scan"
    sizes = "8,64,1k,8k,64k,256k,1M"
    for v in ("openmpi", "mpich"):
        table = OUT / f"table-{v}.json"
        cmd = [PY, "-m", "isthmus", "model", "tune", "--params", str(OUT / "levels.json"),
               "--ranks", "2", "--sites", "2", "--coll", ops, "--sizes", sizes, "--measure",
               "--mpi", v, "--reps", str(args.reps), "--out", str(table),
               "--report", str(OUT / f"tune-{v}.json")]
        say(" ".join(cmd))
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode:
            out.append(f"tune for {v} failed: {r.stderr[-800:]}")
            continue
        # only the intra rules: the wan ones need emulated sites, not used on one site
        t = json.loads(table.read_text())
        t["rules"] = [x for x in t["rules"] if x["level"] == "intra"]
        table.write_text(json.dumps(t, indent=1))
        cmd = [PY, str(HERE / "local_coll.py"), "--rounds", str(args.rounds), "--ops", ops,
               "--sizes", sizes, "--vendors", v, "--reps", str(args.reps),
               "--b-env", f"ISTHMUS_COLL_TABLE={table}"]
        say(" ".join(cmd))
        r = subprocess.run(cmd, capture_output=True, text=True)
        (OUT / f"vendor-{v}.txt").write_text(r.stdout + r.stderr)
        res = re.search(r"results: (\S+)", r.stderr)
        if r.returncode or not res:
            out.append(f"local_coll for {v} failed: {r.stderr[-800:]}")
            continue
        summ = [json.loads(x) for x in Path(res.group(1)).read_text().splitlines()]
        summ = [x for x in summ if x.get("summary")]
        out += [f"**{v}** (`{' '.join(cmd[1:])}`, table `{table.name}`):", "",
                "| op | size | vendor alone (us) | isthmus (us) | isthmus/vendor, median of rounds (min–max) | algorithm |",
                "|---|---:|---:|---:|---|---|"]
        rules = t["rules"]
        wins = 0
        for x in summ:
            alg = next((ru["algorithm"] for ru in rules if ru["coll"] == x["op"] and
                        ru["bytes"][0] <= _tbytes(x["op"], x["size"]) <=
                        (ru["bytes"][1] if ru["bytes"][1] is not None else 1 << 62)), "default")
            wins += x["b_over_a"] <= 1.0
            out.append(f"| {x['op']} | {x['size']} | {x['a_median_us']:.2f} | {x['b_median_us']:.2f} | "
                       f"{x['b_over_a']:.2f} ({x['b_over_a_min']:.2f}–{x['b_over_a_max']:.2f}) | {alg} |")
        out += ["", f"isthmus at least as fast (ratio ≤ 1.00): {wins} of {len(summ)} points "
                f"({100 * wins / max(len(summ), 1):.0f}%).", ""]
    return "\n".join(out)


def _tbytes(op: str, size: int) -> int:
    return size * 2 if op in T.PER_BLOCK else size


# ---- across two emulated sites ----

OPS = ["barrier", "bcast", "reduce", "allreduce", "gather", "scatter", "allgather", "alltoall",
       "reduce_scatter", "scan", "exscan"]


CLOSED = {"bcast", "reduce", "gather", "scatter", "scan", "exscan"}  # barrier-closed


def bound_ms(op: str, size: int, delay_ms: float, rate_bps: float, k: int) -> float:
    """One one-way delay plus what must cross one direction (k ranks per site); for a
    collective the benchmark closes with a barrier (completion at every rank), the
    barrier's own delay too: the far site learns that everyone finished one delay later."""
    cross = {"barrier": 0, "bcast": size, "reduce": size, "allreduce": size, "scan": size,
             "exscan": size, "gather": k * size, "scatter": k * size, "allgather": k * size,
             "reduce_scatter": k * size, "alltoall": k * k * size}[op]
    return (2 if op in CLOSED else 1) * delay_ms + cross * 8 / rate_bps * 1e3


def _link(spec: str) -> tuple[float, float]:
    from isthmus.netemu.spec import parse_link_spec

    ls = parse_link_spec(spec)  # seconds and bytes/s
    return ls.delay * 1e3, ls.rate * 8


# iterations per repetition, repetitions, by size. Each repetition starts after a barrier
# that leaves the sites up to one one-way delay apart, and the slowest rank's mean per
# call carries that skew divided by the iterations: with 3 iterations an 8-byte allreduce
# measured 14.0 ms, with 20 10.6 ms (stop 20; the reference, plain Open MPI at
# 10.3 ms, was taken the OSU way, with many iterations). The 1 MiB points take 0.1-2 s per
# call, so fewer there.
WAN_PLAN = ((8, 20, 5), (65536, 10, 5), (1 << 20, 4, 3))


def section_wan(args) -> str:
    delay_ms, rate = _link(args.wan)
    k = 4
    configs = {"isthmus default": {}}
    for spec in args.wan_config or []:
        name, _, rest = spec.partition(":")
        configs[f"isthmus {name}"] = dict(kv.split("=", 1) for kv in rest.split(":") if kv)
    res: dict[tuple, list[float]] = {}
    cmds: dict[str, list[str]] = {}

    def keep(name, stdout_records):
        for rec in stdout_records:
            if rec.get("status") == "ok":
                res.setdefault((name, rec["op"], rec["size"]), []).append(rec["median"] / 1e3)

    wan_ops = [o for o in OPS if not args.ops or o in args.ops.split(",")]
    for rnd in range(args.wan_rounds):
        for size, iters, reps in WAN_PLAN:
            ops = wan_ops if size == 8 else [o for o in wan_ops if o != "barrier"]
            bench_args = ["--op", ",".join(ops), "-m", str(size), "-i", str(iters), "-r",
                          str(reps), "-x", "1"]
            for name, env in configs.items():
                launch = Launch("coll", bench_args, "isthmus-openmpi",
                                Profile("wan", args.wan, 2), 2 * k, timeout=1800, env=env)
                say(f"wan round {rnd}, {size} B: {name}")
                r = run_launch(launch)
                cmds.setdefault(name, []).append(
                    " ".join(f"{a}={b}" for a, b in env.items()) + " " + r.command)
                keep(name, r.records)
                if not r.ok:
                    say(f"  failed: {r.stderr_tail[-400:]}")
            base = [PY, "-m", "isthmus", "bench", "baseline", "-n", str(2 * k), "--sites", "2",
                    "--wan", args.wan, "--", str(REPO / "_install" / "bin" / "isthmus-bench.openmpi"),
                    "coll", *bench_args, "--json"]
            say(f"wan round {rnd}, {size} B: Open MPI alone")
            r = subprocess.run(base, capture_output=True, text=True, timeout=3600)
            cmds.setdefault("Open MPI alone", []).append(" ".join(base))
            keep("Open MPI alone", [json.loads(x) for x in r.stdout.splitlines()
                                    if x.startswith("{")])
            if r.returncode:
                say(f"  baseline failed: {r.stderr[-400:]}")
    save("wan.json", {"results": {"|".join(map(str, key)): v for key, v in res.items()},
                      "commands": cmds})
    plan = "; ".join(f"{m} B: {r} repetitions of {i} calls" for m, i, r in WAN_PLAN)
    out = ["### Across 2 emulated sites, 4 ranks each", "",
           f"Link `{args.wan}` each way. Times in ms: median over {args.wan_rounds} interleaved "
           f"runs of the per-run medians ({plan}). bcast, reduce, gather, scatter, scan and "
           "exscan are closed by a barrier (completion at every rank), so their bound has two "
           "one-way delays: the collective's and the barrier's.", "",
           "| collective | size | bound | isthmus | × bound | Open MPI alone | × bound | isthmus / Open MPI |"
           + "".join(f" {n} | × bound |" for n in list(configs)[1:]),
           "|---|---:|---:|---:|---:|---:|---:|---:|" + "---:|---:|" * (len(configs) - 1)]
    within = never_slower = n = 0
    for op in wan_ops:
        for size in ([0] if op == "barrier" else [8, 65536, 1 << 20]):
            b = bound_ms(op, size, delay_ms, rate, k)
            vals = {name: median(res.get((name, op, size), []))
                    for name in ("isthmus default", "Open MPI alone")}
            ours, theirs = vals["isthmus default"], vals["Open MPI alone"]
            n += 1
            within += ours <= 1.2 * b
            never_slower += ours <= theirs
            extra = ""
            for name in list(configs)[1:]:
                v = median(res.get((name, op, size), []))
                extra += f" {v:.1f} | {v / b:.2f} |"
            out.append(f"| {op} | {size} | {b:.1f} | {ours:.1f} | {ours / b:.2f} | "
                       f"{theirs:.1f} | {theirs / b:.2f} | {ours / theirs:.2f} |" + extra)
    out += ["", f"isthmus within 1.2× the bound: {within} of {n}; not slower than Open MPI "
            f"alone: {never_slower} of {n}.", ""]
    for name, cs in cmds.items():
        out.append(f"- {name}: " + "; ".join(f"`{c}`" for c in cs[:len(WAN_PLAN)]))
    return "\n".join(out) + "\n"


def section_pipeline(args) -> str:
    k = 4
    configs = {"two-level, not pipelined": {},
               "pipelined (1 MiB segments)": {"ISTHMUS_COLL_WAN_ALLREDUCE": "pipeline::1M"},
               "pipelined (256 KiB segments)": {"ISTHMUS_COLL_WAN_ALLREDUCE": "pipeline::256k"}}
    res: dict[str, list[float]] = {}
    cmds = {}
    for rnd in range(args.pipe_rounds):
        names = list(configs)
        names = names[rnd % len(names):] + names[:rnd % len(names)]
        for name in names:
            launch = Launch("coll", ["--op", "allreduce", "-m", "64M", "-i", "1", "-r", "3", "-x", "1"],
                            "isthmus-openmpi", Profile("wan", args.wan, 2), 2 * k, timeout=1800,
                            env=configs[name])
            say(f"pipeline round {rnd}: {name}")
            r = run_launch(launch)
            cmds[name] = " ".join(f"{a}={b}" for a, b in configs[name].items()) + " " + r.command
            for rec in r.records:
                if rec.get("status") == "ok":
                    res.setdefault(name, []).append(rec["median"] / 1e6)
    save("pipeline.json", {"results": res, "commands": cmds})
    delay_ms, rate = _link(args.wan)
    bound = delay_ms / 1e3 + (64 << 20) * 8 / rate
    base = median(res.get("two-level, not pipelined", []))
    out = ["### 64 MiB MPI_Allreduce across 2 emulated sites (4 ranks each)", "",
           f"Link `{args.wan}`; bound {bound:.2f} s (one delay + 64 MiB over the rate). Seconds "
           f"per call: median (min–max) of {args.pipe_rounds} interleaved runs (each the median of 3).", "",
           "| configuration | time (s) | speed-up over not pipelined | × bound |", "|---|---|---:|---:|"]
    for name in configs:
        xs = res.get(name, [])
        m = median(xs)
        out.append(f"| {name} | {m:.2f} ({min(xs, default=float('nan')):.2f}–{max(xs, default=float('nan')):.2f}) | "
                   f"{base / m:.2f} | {m / bound:.2f} |")
    out += [""] + [f"- {n}: `{c}`" for n, c in cmds.items()]
    return "\n".join(out) + "\n"


def main() -> int:
    global OUT
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sections", default="model,vendor,wan,pipeline")
    ap.add_argument("--wan", default="delay=10ms,rate=100mbit")
    ap.add_argument("--levels", default="intra,wan",
                    help="levels the model section calibrates and measures")
    ap.add_argument("--cal-sizes", default="1,8,64,512,1k,4k,16k,64k,256k,1M",
                    help="message sizes of the calibration (a denser grid places the "
                         "protocol ranges' boundaries more precisely)")
    ap.add_argument("--sweep", default="turns",
                    help="how the model section measures inside a site: turns (the "
                         "algorithms of a collective in turns in one launch per size), "
                         "launches (one launch per algorithm, the method before stop 20), "
                         "or turns,launches (both, after one calibration)")
    ap.add_argument("--mpi", default="openmpi", choices=["openmpi", "mpich"])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=5, help="rounds of the vendor comparison")
    ap.add_argument("--wan-rounds", type=int, default=3)
    ap.add_argument("--ops", default="",
                    help="wan section: only these collectives (comma-separated; default all)")
    ap.add_argument("--pipe-rounds", type=int, default=3)
    ap.add_argument("--wan-config", action="append", metavar="NAME:VAR=VALUE[:VAR=VALUE]",
                    help="wan section: one more isthmus configuration, interleaved with the "
                         "others and shown in columns of its own (e.g. eager256k:ISTHMUS_EAGER=256k)")
    ap.add_argument("--out", help="folder (default bench/results/coll-model-vendor-wan-<timestamp>)")
    ap.add_argument("--reanalyze", action="store_true",
                    help="recompute the model section from --out's levels.json and "
                         "model_rows.json (the same measurements, the current model)")
    ap.add_argument("--data", help="with --reanalyze: read levels.json and model_rows.json "
                    "from this folder (default --out), write to --out")
    ap.add_argument("--no-regimes", action="store_true",
                    help="with --reanalyze: one LogGP per level (the model before protocol "
                         "ranges)")
    ap.add_argument("--no-two-way", action="store_true",
                    help="predict without the cost of two-way steps (o_x, O_x: the model "
                         "before it), e.g. with --reanalyze on the same measurements")
    args = ap.parse_args()
    for spec in args.wan_config or []:
        name, _, rest = spec.partition(":")
        if not name or not rest or any("=" not in kv for kv in rest.split(":") if kv):
            ap.error(f"--wan-config {spec!r}: expected NAME:VAR=VALUE[:VAR=VALUE]")
    bad = [m for m in args.sweep.split(",") if m not in ("turns", "launches")]
    if bad:
        ap.error(f"--sweep {args.sweep}: expected turns, launches or both, comma-separated")
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%S")
    OUT = Path(args.out).resolve() if args.out else HERE / "results" / f"coll-model-vendor-wan-{stamp}"
    OUT.mkdir(parents=True, exist_ok=True)
    if args.reanalyze:
        src = Path(args.data).resolve() if args.data else OUT
        doc = json.loads((src / "levels.json").read_text())
        rows = json.loads((src / "model_rows.json").read_text())["rows"]
        for r in rows:  # measurements only: predictions are remade
            for k in ("predicted_s", "rel_err"):
                r.pop(k, None)
        text = model_report(args, doc, rows)
        (OUT / "model_report.md").write_text(text + "\n")
        print(text)
        return 0
    md = [f"Measured {stamp} UTC on `{os.uname().nodename}` ({os.cpu_count()} CPUs); load "
          f"average at start {os.getloadavg()}; results in `{OUT.relative_to(REPO)}`.", ""]
    for sec in args.sections.split(","):
        t0 = time.monotonic()
        md.append({"model": section_model, "vendor": section_vendor, "wan": section_wan,
                   "pipeline": section_pipeline}[sec](args))
        md.append(f"_(section {sec}: {time.monotonic() - t0:.0f} s; load average after: "
                  f"{os.getloadavg()})_\n")
        (OUT / "report.md").write_text("\n".join(md))
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
