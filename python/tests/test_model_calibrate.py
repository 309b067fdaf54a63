# tests/test_model_calibrate.py: `isthmus model calibrate` and `isthmus model tune`.
# Calibration on synthetic isthmus-bench records made from known LogGP parameters (the
# fit must find them again), tuning on synthetic parameters (choices the closed forms
# predict, a table libisthmus accepts), and one real short run: calibrate the intra-site
# level, tune, and run a program with the table, which must pick the table's algorithm.
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from isthmus.bench.launchers import LaunchResult
from isthmus.model import calibrate as C
from isthmus.model import tune as T
from isthmus.model.loggp import LogGP

REPO = Path(__file__).resolve().parents[2]
TRUE = LogGP(L=5e-6, o_s=1e-6, o_r=1.5e-6, g=3e-6, G=1e-9, gamma0=2e-7, gamma=4e-10)
SIZES = [1, 8, 64, 512, 1024, 4096, 65536, 1 << 20]


def records(p: LogGP, noise=0.0, train=50):
    """What `isthmus-bench loggp --json` prints for parameters p (medians in us)."""
    import random

    rnd = random.Random(1)
    f = lambda t: t * (1 + rnd.uniform(-noise, noise)) * 1e6
    out = []
    for m in SIZES:
        ow = p.one_way(m)
        for q, t in (("one_way", ow), ("send_overhead", p.o_s), ("recv_overhead", p.o_r),
                     ("train", (train - 1) * p.gap(m) + ow + p.one_way(SIZES[0]))):
            out.append({"isthmus_bench": 1, "benchmark": "loggp", "quantity": q, "size": m,
                        "iters": train, "status": "ok", "median": f(t)})
        for op, scale in (("sum/double", 1.0), ("max/double", 2.0)):
            out.append({"isthmus_bench": 1, "benchmark": "loggp", "quantity": "reduce_local",
                        "op": op, "size": m, "iters": 100, "status": "ok",
                        "median": f(scale * p.reduce_cost(m))})
    # and what the call-overhead launch (isthmus-bench coll on one rank) prints
    out.append({"isthmus_bench": 1, "benchmark": "coll", "op": "allreduce", "size": 4,
                "status": "ok", "median": 0.5})
    out.append({"isthmus_bench": 1, "benchmark": "coll", "op": "barrier", "size": 0,
                "status": "ok", "median": 0.5})
    return out


def test_calibration_finds_known_parameters():
    lvl = C.fit_level(C.level_data(records(TRUE)))
    got = lvl["params"]
    for k in ("L", "o_s", "o_r", "g", "G", "gamma0", "gamma"):
        assert got[k] == pytest.approx(getattr(TRUE, k), rel=1e-6), k
    assert lvl["quality"]["one_way"]["r2"] > 0.999999
    assert lvl["reduce"]["max/double"]["gamma"] == pytest.approx(2 * TRUE.gamma, rel=1e-6)


def test_calibration_within_noise():
    got = C.fit_level(C.level_data(records(TRUE, noise=0.02)))["params"]
    assert got["G"] == pytest.approx(TRUE.G, rel=0.05)
    assert got["L"] == pytest.approx(TRUE.L, rel=0.25)
    assert got["g"] == pytest.approx(TRUE.g, rel=0.25)


def test_calibration_takes_the_call_out_of_every_time():
    """`loggp --via coll` times each message as one collective call: every quantity
    carries o_call once (a train once per message); taken out, the fit finds the message's
    own parameters"""
    o_call = 0.7e-6
    recs = []
    for r in records(TRUE):
        r = dict(r)
        if r["benchmark"] == "loggp" and r["quantity"] in ("one_way", "send_overhead",
                                                           "recv_overhead"):
            r["median"] += o_call * 1e6
        elif r["benchmark"] == "loggp" and r["quantity"] == "train":
            r["median"] += r["iters"] * o_call * 1e6
        recs.append(r)
    got = C.fit_level(C.level_data(recs, o_call=o_call))["params"]
    for k in ("L", "o_s", "o_r", "g", "G"):
        assert got[k] == pytest.approx(getattr(TRUE, k), rel=1e-6), k
    # left in, the call would be charged as message overhead
    assert C.fit_level(C.level_data(recs))["params"]["o_s"] > TRUE.o_s + 0.5 * o_call


def test_one_slow_launch_of_three_does_not_move_the_fit():
    good = records(TRUE)
    slow = [dict(r, median=3 * r["median"]) for r in good]
    merged = C.merge_launches([good, slow, good])
    got = C.fit_level(C.level_data(merged))["params"]
    for k in ("L", "o_s", "o_r", "G"):
        assert got[k] == pytest.approx(getattr(TRUE, k), rel=1e-6), k
    assert all(r["launches"] == 3 for r in merged)
    # a single launch would have been fitted as it came
    assert C.fit_level(C.level_data(slow))["params"]["o_s"] == pytest.approx(3 * TRUE.o_s)


def test_calibration_refuses_records_without_measurements():
    with pytest.raises(ValueError, match="no loggp records"):
        C.level_data([{"benchmark": "latency", "status": "ok"}])


class FakeRun:
    def __init__(self, recs, ok=True):
        self.recs, self.ok, self.launches = recs, ok, []

    def __call__(self, launch):
        self.launches.append(launch)
        return LaunchResult(self.recs if self.ok else [], 0 if self.ok else 1, "fake-cmd", 0.1,
                            "" if self.ok else "it broke")


def test_calibrate_runs_each_level_on_the_right_placement():
    run = FakeRun(records(TRUE))
    doc = C.calibrate(["intra", "wan"], "mpich", "delay=1ms", "1,1k", 3, run)
    assert set(doc["levels"]) == {"intra", "wan"}
    # inside a site the call's cost and the loggp measurement in 3 launches each
    # (C.INTRA_LAUNCHES, medians over them), then the barrier; then the WAN once
    assert [x.benchmark for x in run.launches] == ["coll"] * 3 + ["loggp"] * 3 + ["coll", "loggp"]
    call, intra, bar, wan = run.launches[0], run.launches[3], run.launches[6], run.launches[7]
    assert (intra.profile.sites, intra.profile.link, intra.library) == (1, None, "isthmus-mpich")
    # inside a site a message is one of a schedule's (a two-rank broadcast); between
    # sites it is the point-to-point through the gateways
    assert intra.args[-2:] == ["--via", "coll"] and "--via" not in wan.args
    assert doc["levels"]["intra"]["via"] == "coll"
    assert not intra.profile.gateway and call.ranks == 1 and call.benchmark == "coll"
    assert doc["levels"]["intra"]["params"]["o_call"] > 0
    # the vendor's barrier on 2 ranks of one site, no algorithm forced
    assert (bar.ranks, bar.args[:2], bar.env, bar.profile.gateway) == (2, ["--op", "barrier"],
                                                                        {}, False)
    assert doc["levels"]["intra"]["params"]["o_barrier"] == pytest.approx(0.5e-6)
    assert (wan.profile.sites, wan.profile.link) == (2, "delay=1ms")
    assert intra.benchmark == "loggp" and "--peer" in intra.args
    assert doc["machine_before"]["load_average"] and doc["commands"]["wan"] == "fake-cmd"


def test_calibrate_records_the_cores_round_trip_around_each_launch_inside_a_site():
    """the probe runs before and after each of the 7 launches inside a site (none around
    the WAN's); a calibration that saw the cpus change distance is flagged and says so"""
    from isthmus.errors import IsthmusError

    steady = iter([150.0] * 14 + [900.0] * 10)
    said = []
    doc = C.calibrate(["intra", "wan"], "openmpi", "delay=1ms", "1,1k", 3,
                      FakeRun(records(TRUE)), say=said.append, probe=lambda: next(steady))
    d = doc["levels"]["intra"]
    assert d["core_round_trip_ns"] == [150.0] * 14 and d["machine_state_changed"] is False
    assert "core_round_trip_ns" not in doc["levels"]["wan"]
    assert not any("warning" in x for x in said)

    # a state change half-way through (145 -> 600 ns, as measured on this machine)
    moved = iter([145.0] * 7 + [600.0] * 7)
    said = []
    doc = C.calibrate(["intra"], "openmpi", None, "1,1k", 3, FakeRun(records(TRUE)),
                      say=said.append, probe=lambda: next(moved))
    assert doc["levels"]["intra"]["machine_state_changed"] is True
    assert any("warning" in x and "145 to 600 ns" in x for x in said)
    # 1.4x is one state (the probe's own spread), not a change
    near = iter([145.0, 200.0] * 7)
    doc = C.calibrate(["intra"], "openmpi", None, "1,1k", 3, FakeRun(records(TRUE)),
                      probe=lambda: next(near))
    assert doc["levels"]["intra"]["machine_state_changed"] is False

    # a probe that cannot run is reported once and the calibration goes on without it
    calls = []

    def broken():
        calls.append(1)
        raise IsthmusError("the cores' round trip needs two cpus; this process may use one")
    said = []
    doc = C.calibrate(["intra"], "openmpi", None, "1,1k", 3, FakeRun(records(TRUE)),
                      say=said.append, probe=broken)
    assert len(calls) == 1 and doc["levels"]["intra"]["core_round_trip_ns"] == []
    assert "needs two cpus" in doc["levels"]["intra"]["core_round_trip_error"]
    assert sum("not recording" in x for x in said) == 1


@pytest.mark.native
def test_core_round_trip_probe_runs_on_this_machine(prefix):
    import os

    from isthmus.noise.corelat import core_round_trip, states_differ

    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one cpu: no round trip between two")
    ns = core_round_trip(trips=1000)
    assert 5 < ns < 50e6  # a busy machine can make a round trip wait for a time slice
    assert states_differ([145, 600]) and not states_differ([145, 200]) and not states_differ([145])


def test_calibrate_says_which_level_failed():
    from isthmus.errors import IsthmusError

    with pytest.raises(IsthmusError, match="(?s)level wan: the measurement failed.*it broke"):
        C.calibrate(["wan"], "openmpi", None, "1", 3, FakeRun([], ok=False))


def test_tune_follows_the_predictions():
    # a slow-latency, fast-bandwidth level favours few rounds for small vectors and
    # bandwidth-optimal algorithms for large ones
    lv = LogGP(L=50e-6, o_s=1e-6, o_r=1e-6, g=2e-6, G=1e-10, gamma0=1e-7, gamma=1e-10)
    table, rows = T.tune({"intra": lv}, [8], [], [8, 1 << 22], ["allreduce"])
    small = [r for r in rows if r["size"] == 8][0]
    large = [r for r in rows if r["size"] == 1 << 22][0]
    assert small["chosen"] == min(small["predicted_s"], key=small["predicted_s"].get)
    assert small["chosen"] in ("recursive_doubling", "exchange")
    assert large["chosen"] in ("ring", "rabenseifner")
    rules = table["rules"]
    assert rules[0]["bytes"][0] == 0 and rules[-1]["bytes"][1] is None
    assert all(r["ranks"] == [8, None] and r["level"] == "intra" for r in rules)


def test_measure_inside_a_site_runs_the_candidates_in_turns_per_size():
    """inside a site one launch per size, every candidate (the chain with its segment at
    that size, the vendor) named in --algs; the records map back by their "alg"; between
    sites one launch per candidate, forced through the environment"""
    def rec(alg, m, us):
        return {"isthmus_bench": 1, "benchmark": "coll", "status": "ok", "op": "bcast",
                "alg": alg, "size": max(m, 4), "median": us, "closing_barrier_us": 0.0}

    class Run:
        def __init__(self):
            self.launches = []

        def __call__(self, launch):
            self.launches.append(launch)
            i = launch.args.index("--algs") if "--algs" in launch.args else None
            m = int(launch.args[launch.args.index("-m") + 1].split(",")[0])
            specs = launch.args[i + 1].split(",") if i is not None else ["?"]
            return LaunchResult([rec(a, m, 1.0 + k) for k, a in enumerate(specs)], 0, "cmd",
                                0.1, "")

    run = Run()
    got, cmds = T.measure("bcast", "intra", 2, [8, 65536], "openmpi", None, 3, run)
    cands = T.candidates("bcast", "intra") + ["vendor"]
    assert len(run.launches) == 2 and all(not x.env for x in run.launches)
    assert set(got) == set(cands) and all(set(v) == {8, 65536} for v in got.values())
    specs8 = run.launches[0].args[run.launches[0].args.index("--algs") + 1].split(",")
    specs64 = run.launches[1].args[run.launches[1].args.index("--algs") + 1].split(",")
    assert "chain::1024" in specs8 and "chain::8192" in specs64 and specs8[-1] == "vendor"
    # each candidate's time is its own record's (closed: the barrier part is 0 here)
    for k, a in enumerate(cands):
        assert got[a][8] == pytest.approx((1.0 + k) * 1e-6), a

    wan = Run()
    T.measure("bcast", "wan", 2, [8, 65536], "openmpi", "delay=1ms", 3, wan)
    assert all("--algs" not in x.args and x.env for x in wan.launches)
    # the method before: one launch per candidate (and per size for the chain), forced
    # through the environment
    old = Run()
    T.measure("bcast", "intra", 2, [8, 65536], "openmpi", None, 3, old, in_turns=False)
    envs = [x.env["ISTHMUS_COLL_BCAST"] for x in old.launches]
    assert all("--algs" not in x.args for x in old.launches)
    assert envs.count("vendor") == 1 and "chain::1024" in envs and "chain::8192" in envs
    assert len(old.launches) == len(cands) + 1  # the chain twice


@pytest.mark.native
def test_measure_inside_a_site_for_real(prefix):
    from isthmus.bench.launchers import run_launch

    got, cmds = T.measure("allreduce", "intra", 2, [8, 65536], "openmpi", None, 3, run_launch)
    assert set(got) == set(T.candidates("allreduce", "intra")) | {"vendor"}, got
    assert all(set(v) == {8, 65536} and min(v.values()) > 0 for v in got.values()), got
    assert len(cmds) == 2 and all("--algs" in c for c in cmds)


def test_tune_prefers_the_measured_best():
    lv = LogGP(L=5e-6, o_s=1e-6, o_r=1e-6, g=2e-6, G=1e-9)
    meas = {("reduce", "intra", 4): {"binomial": {1024: 9e-6}, "vendor": {1024: 3e-6},
                                      "chain": {1024: 5e-6}}}
    table, rows = T.tune({"intra": lv}, [4], [], [1024], ["reduce"], meas)
    assert rows[0]["chosen"] == "vendor" and rows[0]["by"] == "measured"
    assert table["rules"][0]["algorithm"] == "vendor"
    assert table["rules"][0]["measured_us"] == pytest.approx(3.0)


def test_tune_sizes_and_names_as_libisthmus_reads_them():
    lv = LogGP(L=5e-6, o_s=1e-6, o_r=1e-6, g=2e-6, G=1e-9)
    # per block in the sweep, all blocks at one rank in the table
    meas = {("allgather", "intra", 4): {"ring": {1024: 1e-6, 4096: 9e-6},
                                         "bruck": {1024: 9e-6, 4096: 1e-6}}}
    table, _ = T.tune({"intra": lv, "wan": lv}, [4], [3], [1024, 4096],
                      ["allgather", "scan", "bcast"], meas)
    ag = [r for r in table["rules"] if r["coll"] == "allgather" and r["level"] == "intra"]
    assert [r["algorithm"] for r in ag] == ["ring", "bruck"]
    assert ag[0]["bytes"] == [0, 4 * 2048] and ag[1]["bytes"] == [4 * 2048 + 1, None]
    assert any(r["coll"] == "exscan" for r in table["rules"])
    assert any(r["level"] == "wan" and r["ranks"] == [3, None] for r in table["rules"])
    for r in table["rules"]:
        if r["algorithm"] == "knomial":
            assert r["radix"] == 4
        if r["algorithm"] == "chain":
            assert r["segment"] >= 1024


@pytest.mark.native
def test_a_real_calibration_tunes_a_table_libisthmus_follows(prefix, tmp_path):
    env = {**os.environ}
    lv = tmp_path / "levels.json"
    r = subprocess.run([sys.executable, "-m", "isthmus", "model", "calibrate", "--levels", "intra",
                        "--sizes", "1,64,4k,64k,1M", "--reps", "3", "--out", str(lv)],
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    doc = json.loads(lv.read_text())
    p = doc["levels"]["intra"]["params"]
    assert p["G"] > 0 and p["L"] + p["o_s"] + p["o_r"] > 0, p
    q = doc["levels"]["intra"]["quality"]
    assert q["one_way"]["points"] + q["one_way_large"]["points"] == 5  # 1, 64, 4k | 64k, 1M
    assert p["o_call"] > 0 and p["o_barrier"] > 0
    assert "sum/double" in doc["levels"]["intra"]["reduce"]
    # the local copy cost (isthmus-bench loggp copy_local) is measured and fitted
    assert p["copy"] > 0 and len(doc["levels"]["intra"]["medians_s"]["copy_local"]) == 5
    # and the exchange (isthmus-bench loggp exchange), which the two-way cost comes from
    assert len(doc["levels"]["intra"]["medians_s"]["exchange"]) == 5
    assert q["two_way"]["level"]["points"] == 5 and p["o_x"] >= 0 and p["O_x"] >= 0
    table = tmp_path / "table.json"
    r = subprocess.run([sys.executable, "-m", "isthmus", "model", "tune", "--params", str(lv),
                        "--ranks", "3", "--coll", "allreduce", "--sizes", "16,1M",
                        "--out", str(table)], capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    rules = json.loads(table.read_text())["rules"]
    small = next(x for x in rules if x["bytes"][0] == 0)
    exe = tmp_path / "coll_wan_count"
    r = subprocess.run([str(prefix.cc), "-O2", "-o", str(exe),
                        str(REPO / "tests" / "mpi" / "coll_wan_count.c")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([sys.executable, "-m", "isthmus", "run", "-n", "3", "--sites", "1", "--",
                        str(exe), "allreduce", "3"], capture_output=True, text=True, timeout=60,
                       env={**env, "ISTHMUS_COLL_TABLE": str(table), "ISTHMUS_COLL_STATS": "1"})
    assert r.returncode == 0 and "coll_wan_count: OK" in r.stdout, r.stderr[-3000:]
    assert f"allreduce intra {small['algorithm']}:" in r.stderr, (small, r.stderr[-2000:])


def test_a_measured_vendor_barrier_closes_rooted_collectives_inside_a_site():
    lv = LogGP(L=0.3e-6, o_s=0.1e-6, o_r=0.1e-6, g=0.1e-6, G=0.1e-9, o_call=0.2e-6)
    from isthmus.model import schedule as S
    from isthmus.model.simulate import predict

    bar = LogGP(**{**lv.as_dict(), "o_barrier": 0.9e-6})
    one = predict(S.build("bcast", "binomial", 2, 4096), lv)
    got = T.predicted("bcast", "binomial", 2, 4096, bar, closed=True, lvl="intra", iters=100)
    assert got == pytest.approx(one + 0.9e-6 + 0.2e-6, rel=1e-9)
    # without the measurement, or for what is not closed by a barrier, as before
    assert T.predicted("bcast", "binomial", 2, 4096, lv, closed=True, lvl="intra",
                       iters=100) != pytest.approx(got)
    assert T.predicted("allreduce", "ring", 2, 4096, bar, closed=True, lvl="intra") == \
        T.predicted("allreduce", "ring", 2, 4096, lv, closed=True, lvl="intra")
