# tests/test_model_two_way.py: the cost of two-way steps inside a node (o_x, O_x; issue 8).
# The calibration's exchange medians (MPI_Sendrecv both ways, back to back) made from known
# parameters must give o_x and O_x back, per protocol range too and within noise; the
# simulator must charge them to receives whose message crossed one of the rank's own (an
# exchange), not to a reply to a message that has arrived; calibrations without an
# exchange (older isthmus-bench, older levels.json) must load and predict as before.
from __future__ import annotations

import numpy as np
import pytest

from isthmus.model import calibrate as C
from isthmus.model import schedule as S
from isthmus.model import tune as T
from isthmus.model.loggp import LogGP, fit_loggp, fit_regimes, with_regimes
from isthmus.model.simulate import exchange_time, predict

us, ns = 1e-6, 1e-9
BASE = LogGP(L=0.5 * us, o_s=0.2 * us, o_r=0.3 * us, g=0.3 * us, G=0.1 * ns, gamma0=0.1 * us,
             gamma=0.02 * ns)
TRUE = LogGP(**{**BASE.as_dict(), "o_x": 0.4 * us, "O_x": 0.06 * ns})
SIZES = [1, 8, 64, 512, 1024, 4096, 16384, 65536, 262144, 1 << 20]


def records(p: LogGP, noise=0.0, seed=2, exchange=True):
    """`isthmus-bench loggp --json` records (us) of a level with parameters p."""
    rng = np.random.default_rng(seed)
    f = lambda t: float(t * (1 + noise * rng.standard_normal()) * 1e6)
    out = []
    for m in SIZES:
        qs = [("one_way", p.one_way(m)), ("send_overhead", p.o_s), ("recv_overhead", p.o_r),
              ("train", 49 * p.gap(m) + p.one_way(m) + p.one_way(SIZES[0]))]
        if exchange:
            qs.append(("exchange", exchange_time(p, m)))
        for q, t in qs:
            out.append({"benchmark": "loggp", "quantity": q, "size": m, "iters": 50,
                        "status": "ok", "median": f(t)})
    return out


def test_an_exchange_costs_each_receive_its_two_way_part():
    # both ranks receive m bytes while m of theirs go the other way: per call exactly
    # o_x + O_x m more than without (the fit relies on it)
    for m in (8, 4096, 1 << 20):
        assert exchange_time(TRUE, m) - exchange_time(BASE, m) == pytest.approx(
            TRUE.o_x + TRUE.O_x * m, rel=1e-9)
    # an exchange of the one-way model alone costs no more than one message each way
    assert exchange_time(BASE, 1 << 20) == pytest.approx(BASE.one_way(1 << 20), rel=0.01)


def test_calibration_finds_the_cost_of_two_way_steps():
    lvl = C.fit_level(C.level_data(records(TRUE)), two_way=True)
    got = lvl["params"]
    assert got["o_x"] == pytest.approx(TRUE.o_x, rel=1e-6)
    assert got["O_x"] == pytest.approx(TRUE.O_x, rel=1e-6)
    for k in ("L", "o_s", "o_r", "g", "G"):  # the one-way fit is untouched
        assert got[k] == pytest.approx(getattr(TRUE, k), rel=1e-6), k
    q = lvl["quality"]["two_way"]["level"]
    assert q["points"] == len(SIZES) and q["max_rel_residual"] < 1e-9
    assert q["median_rel_residual_before"] > 0.05
    # 3 % timing noise: still the right size
    noisy = C.fit_level(C.level_data(records(TRUE, noise=0.03)), two_way=True)["params"]
    assert noisy["O_x"] == pytest.approx(TRUE.O_x, rel=0.15)
    assert noisy["o_x"] == pytest.approx(TRUE.o_x, rel=0.5)
    # no two-way cost in the data: none found (non-negative least squares, no noise fit)
    none = C.fit_level(C.level_data(records(BASE)), two_way=True)["params"]
    assert none["o_x"] == pytest.approx(0, abs=1e-12) and none["O_x"] == pytest.approx(0, abs=1e-18)


def test_each_protocol_range_gets_its_own_two_way_cost():
    # a level with an eager and a rendezvous range, each its own two-way cost
    eager = LogGP(L=0.4 * us, o_s=0.1 * us, o_r=0.1 * us, g=0.0, G=0.05 * ns, o_x=0.05 * us)
    rndv = LogGP(L=0.6 * us, o_s=0.0, o_r=1.5 * us, g=0.0, G=0.01 * ns, O_r=0.12 * ns,
                 o_x=0.3 * us, O_x=0.09 * ns)
    lv = LogGP(**{**eager.as_dict()}, regimes=((0, eager), (4096, rndv)))
    ex = {m: exchange_time(lv, m) for m in SIZES}
    fitted, q = C.fit_two_way(lv, ex)
    (_, a), (_, b) = fitted.regimes
    assert a.o_x == pytest.approx(eager.o_x, rel=1e-6) and a.O_x == pytest.approx(0, abs=1e-18)
    assert b.o_x == pytest.approx(rndv.o_x, rel=1e-6) and b.O_x == pytest.approx(rndv.O_x, rel=1e-6)
    assert [r["from"] for r in q["ranges"]] == [0, 4096]
    assert [r["points"] for r in q["ranges"]] == [5, 5]
    # the other parameters of each range are kept
    assert (b.L, b.o_r, b.O_r, b.G) == (rndv.L, rndv.o_r, rndv.O_r, rndv.G)


def test_ranges_found_in_real_medians_carry_their_two_way_cost():
    # the regime fit of calibrate, then the two-way fit per range, through the JSON
    ms = C.level_data(records(TRUE)).ms
    lv = with_regimes(fit_loggp(ms).params, fit_regimes(ms))
    doc = C.fit_level(C.level_data(records(TRUE)), regimes=True, two_way=True)
    again = LogGP.from_dict(doc["params"])
    assert LogGP.from_dict(again.as_dict()) == again
    assert len(again.regimes) == len(lv.regimes)
    for m in (64, 65536, 1 << 20):
        assert exchange_time(again, m) == pytest.approx(exchange_time(TRUE, m), rel=0.05), m


def test_replies_and_one_way_collectives_are_not_two_way():
    x = TRUE
    for coll, alg in (("bcast", "binomial"), ("reduce", "binomial"), ("allreduce", "linear"),
                      ("allreduce", "knomial4"), ("bcast", "chain")):
        for m in (64, 1 << 20):
            s = S.build(coll, alg, 2, m)
            assert predict(s, x) == pytest.approx(predict(s, BASE), rel=1e-12), (coll, alg, m)
    # exchanges are: one two-way receive per rank and step
    for coll, alg in (("allreduce", "recursive_doubling"), ("alltoall", "pairwise"),
                      ("allgather", "ring")):
        m = 1 << 18
        s = S.build(coll, alg, 2, T.model_size(coll, m, 2))
        step = s.bytes_of(next(op for op in s.ops[0] if op[0] == "recv")[2])
        assert predict(s, x) - predict(s, BASE) == pytest.approx(x.o_x + x.O_x * step,
                                                                   rel=1e-9), (coll, alg)
    # a ring on 4 ranks: every receive crosses the rank's own send of that step
    s = S.build("allgather", "ring", 4, 4096)
    assert predict(s, x) > predict(s, BASE) + 3 * (x.o_x + x.O_x * 4096) * 0.99


def test_old_calibrations_load_and_predict_as_before():
    old = {k: v for k, v in BASE.as_dict().items() if k not in ("o_x", "O_x")}
    lv = LogGP.from_dict(old)
    assert (lv.o_x, lv.O_x) == (0.0, 0.0) and lv == BASE
    # medians stored before the exchange was measured: fitted again, no two-way cost
    doc = C.fit_level(C.level_data(records(BASE, exchange=False)), regimes=True, two_way=True)
    assert "two_way" not in doc["quality"] and doc["medians_s"]["exchange"] == {}
    med = {k: v for k, v in doc["medians_s"].items() if k != "exchange"}
    again = C.fit_level(C.level_data_from_medians(med), regimes=True, two_way=True)
    assert again["params"] == doc["params"] and again["params"]["O_x"] == 0.0
    s = S.build("alltoall", "pairwise", 2, 1 << 20)
    assert predict(s, LogGP.from_dict(again["params"])) == predict(
        s, LogGP.from_dict(doc["params"]))


def test_calibrate_fits_two_way_steps_inside_a_site_only():
    from isthmus.bench.launchers import LaunchResult

    recs = records(TRUE) + [
        {"benchmark": "coll", "op": "allreduce", "size": 4, "status": "ok", "median": 0.5},
        {"benchmark": "coll", "op": "barrier", "size": 0, "status": "ok", "median": 0.5}]
    run = lambda launch: LaunchResult(recs, 0, "fake", 0.1, "")
    doc = C.calibrate(["intra", "wan"], "openmpi", "delay=1ms", "1,1k", 3, run)
    assert doc["levels"]["intra"]["params"]["O_x"] > 0
    assert doc["levels"]["wan"]["params"]["O_x"] == 0.0  # each direction its own link
    assert doc["levels"]["wan"]["medians_s"]["exchange"]  # measured, kept, not used
