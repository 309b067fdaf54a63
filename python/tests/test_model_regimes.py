# tests/test_model_regimes.py: protocol ranges of a level (loggp.find_regimes,
# fit_regimes): calibration medians made from known piecewise parameters (an inline
# eager range, an eager range whose blocking send waits for the receiver, a single-copy
# rendezvous range whose receiver does the copy) must be cut where the protocols switch
# and give back each range's parameters; one protocol must stay one range; the ranges
# survive JSON and drive the simulator.
from __future__ import annotations

import numpy as np
import pytest

from isthmus.model import calibrate as C
from isthmus.model import schedule as S
from isthmus.model.loggp import (LogGP, Measurements, find_regimes, fit_loggp, fit_regimes,
                                 with_regimes)
from isthmus.model.simulate import predict

us, ns = 1e-6, 1e-9
SIZES = [1, 8, 64, 128, 512, 1024, 2048, 4096, 16384, 65536, 262144, 1 << 20]
# (first size, L, o_s, O_s, o_r, O_r, G, synchronous)
TRUE = [(0, 0.40 * us, 0.07 * us, 0.0, 0.08 * us, 0.0, 0.05 * ns, False),
        (512, 0.10 * us, 0.80 * us, 0.0, 0.09 * us, 0.01 * ns, 0.02 * ns, True),
        (4096, 0.60 * us, 0.20 * us, 0.0, 3.00 * us, 0.20 * ns, 0.0, True)]


def _range(m):
    return [r for r in TRUE if m >= r[0]][-1]


def true_one_way(m):
    _, L, o_s, O_s, o_r, O_r, G, _ = _range(m)
    return L + o_s + O_s * m + o_r + O_r * m + max(m - 1, 0) * G


def medians(noise=0.0, seed=3) -> Measurements:
    rng = np.random.default_rng(seed)
    jit = lambda v: float(v * (1 + noise * rng.standard_normal()))
    ms = Measurements()
    for m in SIZES:
        _, L, o_s, O_s, o_r, O_r, G, sync = _range(m)
        ow = true_one_way(m)
        ms.one_way[m] = jit(ow)
        # a synchronous protocol's blocking send returns when the receiver has the data
        ms.send_overhead[m] = jit(ow if sync else o_s + O_s * m)
        ms.recv_overhead[m] = jit(o_r + O_r * m)
        ms.train_gap[m] = jit(max(o_s + O_s * m, 0.1 * us) + max(m - 1, 0) * G)
    return ms


def test_the_sizes_are_cut_where_the_protocol_switches():
    for noise in (0.0, 0.02):
        parts = find_regimes(medians(noise))
        assert [p[0] for p in parts] == [1, 512, 4096], noise
        assert sum(parts, []) == SIZES


def test_one_protocol_stays_one_range():
    lg = LogGP(L=4 * us, o_s=1.5 * us, o_r=2 * us, g=3 * us, G=0.4 * ns)
    ms = Measurements(one_way={m: lg.one_way(m) for m in SIZES},
                      send_overhead={m: lg.o_s for m in SIZES},
                      recv_overhead={m: lg.o_r for m in SIZES},
                      train_gap={m: lg.gap(m) for m in SIZES})
    assert len(find_regimes(ms)) == 1
    rng = np.random.default_rng(5)
    for d in (ms.one_way, ms.send_overhead, ms.recv_overhead):
        for m in d:
            d[m] *= 1 + 0.02 * rng.standard_normal()
    assert len(find_regimes(ms)) == 1
    # and calibrate then keeps the plain LogGP (no ranges)
    assert with_regimes(fit_loggp(ms).params, fit_regimes(ms)).regimes == ()


def test_each_range_gets_its_own_parameters():
    regs = fit_regimes(medians())
    assert [r.synchronous for r in regs] == [False, True, True]
    a, b, c = (r.params for r in regs)
    # asynchronous: every parameter is observable
    assert a["L"] == pytest.approx(TRUE[0][1], rel=1e-3)
    assert a["o_s"] == pytest.approx(TRUE[0][2], rel=1e-3)
    assert a["o_r"] == pytest.approx(TRUE[0][4], rel=1e-3)
    assert a["G"] == pytest.approx(TRUE[0][6], rel=1e-3)
    # synchronous: the receiver's part is measured, the rest of the one-way time is the
    # sender's (a blocking send lasts until the data is through: L and G fold into it)
    assert c["o_r"] == pytest.approx(TRUE[2][4], rel=1e-3)
    assert c["O_r"] == pytest.approx(TRUE[2][5], rel=1e-3)
    assert b["o_r"] == pytest.approx(TRUE[1][4], rel=1e-3)
    for r, t in ((b, TRUE[1]), (c, TRUE[2])):
        assert r["L"] + r["o_s"] == pytest.approx(t[1] + t[2], rel=1e-3)
        assert r["G"] + r["O_s"] == pytest.approx(t[6], rel=1e-3, abs=1e-15)


def test_the_fitted_ranges_give_back_the_one_way_times():
    for noise, tol in ((0.0, 1e-6), (0.02, 0.06)):
        ms = medians(noise, seed=11)
        lv = with_regimes(fit_loggp(ms).params, fit_regimes(ms))
        assert len(lv.regimes) == 3
        for m in SIZES + [48, 300, 3000, 8192, 1 << 21]:
            assert lv.one_way(m) == pytest.approx(true_one_way(m), rel=tol, abs=0.01 * us), m
    # one LogGP through the same medians misses the eager sizes by far more
    one = fit_loggp(medians()).params
    assert max(abs(one.one_way(m) / true_one_way(m) - 1) for m in SIZES) > 0.5


def test_a_message_takes_its_sizes_range():
    lv = with_regimes(fit_loggp(medians()).params, fit_regimes(medians()))
    assert lv.at(0) is lv.regimes[0][1] and lv.at(511) is lv.regimes[0][1]
    assert lv.at(512) is lv.regimes[1][1] and lv.at(4095) is lv.regimes[1][1]
    assert lv.at(1 << 30) is lv.regimes[2][1]
    # the simulator charges each message its range: one message of m from 0 to 1
    for m in (8, 1024, 65536):
        s = S.Schedule("x", "x", 2, {0: m})
        s.send(0, 1, [0])
        s.recv(1, 0, [0], "copy")
        assert predict(s, lv) == pytest.approx(lv.one_way(m), rel=1e-9)
    # a receiver that takes two rendezvous messages copies them one after the other
    m = 262144
    s = S.Schedule("x", "x", 3, {0: m})
    s.send(1, 0, [0])
    s.send(2, 0, [0])
    s.recv(0, 1, [0], "copy")
    s.recv(0, 2, [0], "copy")
    assert predict(s, lv) == pytest.approx(lv.one_way(m) + lv.recv_cpu(m), rel=1e-6)


def test_ranges_survive_json_and_bad_ones_are_refused():
    lv = with_regimes(fit_loggp(medians()).params, fit_regimes(medians()))
    assert LogGP.from_dict(lv.as_dict()) == lv
    d = lv.as_dict()
    d["regimes"][2]["from"] = 100
    with pytest.raises(ValueError, match="sizes must increase"):
        LogGP.from_dict(d)
    d = lv.as_dict()
    del d["regimes"][1]["G"]
    with pytest.raises(ValueError, match="regime 1 lacks 'G'"):
        LogGP.from_dict(d)


def test_calibrate_fits_ranges_inside_a_site_only():
    data = C.LevelData(medians(), {})
    intra = C.fit_level(data, regimes=True)
    assert [r["from"] for r in intra["params"]["regimes"]] == [0, 512, 4096]
    assert [r["first"] for r in intra["quality"]["regimes"]] == [1, 512, 4096]
    assert "regimes" not in C.fit_level(data)["params"]
    # the stored medians are enough to fit again (bench/coll_model_vendor_wan.py --reanalyze)
    again = C.fit_level(C.level_data_from_medians(intra["medians_s"]), regimes=True)
    assert again["params"] == intra["params"]


def test_no_ranges_without_the_overheads_at_every_size():
    ms = medians()
    for m in (65536, 262144, 1 << 20):   # an old calibration: overheads of small sizes only
        del ms.send_overhead[m], ms.recv_overhead[m]
    assert find_regimes(ms) == [sorted(ms.one_way)]
    assert C.fit_level(C.LevelData(ms, {}), regimes=True)["params"].get("regimes") is None
