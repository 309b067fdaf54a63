# tests/test_model.py: the collective cost model (isthmus/model): LogGP fitting on
# synthetic data with known parameters, every algorithm's schedule proved right on 1-9
# ranks (non-commutative where the algorithm allows it), wrong schedules caught, and the
# predicted times against closed forms.
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from isthmus.errors import IsthmusError
from isthmus.model import schedule as S
from isthmus.model.loggp import LogGP, Measurements, fit_line, fit_loggp
from isthmus.model.simulate import ScheduleError, check, predict

TRUE = LogGP(L=4.0e-6, o_s=1.5e-6, o_r=2.0e-6, g=3.0e-6, G=0.4e-9, gamma0=0.5e-6, gamma=0.25e-9)
SIZES = [1, 8, 64, 512, 1024, 4096, 65536, 1 << 20, 4 << 20]


def synthetic(p: LogGP, noise: float, seed: int = 1) -> Measurements:
    rng = np.random.default_rng(seed)
    jit = lambda v: float(v * (1 + noise * rng.standard_normal()))
    return Measurements(
        one_way={m: jit(p.one_way(m)) for m in SIZES},
        send_overhead={m: jit(p.o_s) for m in SIZES if m <= 1024},
        recv_overhead={m: jit(p.o_r) for m in SIZES if m <= 1024},
        train_gap={m: jit(p.gap(m)) for m in SIZES},
        reduce={m: jit(p.reduce_cost(m)) for m in SIZES},
    )


def test_fit_recovers_known_parameters_exactly_without_noise():
    f = fit_loggp(synthetic(TRUE, 0.0))
    for name in ("L", "o_s", "o_r", "g", "G", "gamma0", "gamma"):
        assert getattr(f.params, name) == pytest.approx(getattr(TRUE, name), rel=1e-6), name
    assert f.lines["one_way"].r2 == pytest.approx(1.0)


def test_fit_recovers_known_parameters_within_noise():
    f = fit_loggp(synthetic(TRUE, 0.02, seed=7))
    assert f.params.G == pytest.approx(TRUE.G, rel=0.05)
    assert f.params.gamma == pytest.approx(TRUE.gamma, rel=0.05)
    assert f.params.o_s == pytest.approx(TRUE.o_s, rel=0.05)
    assert f.params.o_r == pytest.approx(TRUE.o_r, rel=0.05)
    # L is what remains of a 7.5 us intercept: noise of a few % there is ~10 % of L
    assert f.params.L == pytest.approx(TRUE.L, rel=0.2)
    q = f.quality()
    # G from the sizes from 32 KiB, the intercept from the smaller ones
    assert q["one_way"]["points"] + q["one_way_large"]["points"] == len(SIZES)
    assert q["one_way_large"]["r2"] > 0.99 and q["one_way"]["median_rel_residual"] < 0.03


def test_fit_takes_G_from_large_sizes_past_a_protocol_switch():
    """An eager/rendezvous switch at 4 KiB adds a step: the slope must not follow it."""
    ms = synthetic(TRUE, 0.0)
    ms.one_way = {m: TRUE.one_way(m) + (20e-6 if m > 4096 else 0.0) for m in SIZES}
    f = fit_loggp(ms)
    assert f.params.G == pytest.approx(TRUE.G, rel=0.01)
    assert f.params.L == pytest.approx(TRUE.L, rel=0.01)


def test_a_rendezvous_costs_a_round_trip_and_keeps_G():
    lv = LogGP(L=10e-3, o_s=1e-6, o_r=1e-6, g=1e-5, G=8e-8, rndv=65536)
    eager, rv = S.Schedule("x", "x", 2, {0: 65536}), S.Schedule("x", "x", 2, {0: 65537})
    for s in (eager, rv):
        s.send(0, 1, [0])
        s.recv(1, 0, [0], "copy")
    assert predict(rv, lv) - predict(eager, lv) == pytest.approx(2 * lv.L + lv.G, rel=1e-6)
    ms = synthetic(TRUE, 0.0)
    ms.one_way = {m: TRUE.one_way(m) + (2 * TRUE.L if m > 4096 else 0.0) for m in SIZES}
    f = fit_loggp(ms, rndv=4096)
    assert f.params.G == pytest.approx(TRUE.G, rel=0.01) and f.params.rndv == 4096


def test_early_data_covers_the_handshake():
    """Early bytes leave with the request to send: a message all early waits for nothing,
    a longer one waits only what of the round trip its early bytes do not cover."""
    def one(m, **kw):
        s = S.Schedule("x", "x", 2, {0: m})
        s.send(0, 1, [0])
        s.recv(1, 0, [0], "copy")
        return predict(s, LogGP(L=10e-3, o_s=1e-6, o_r=1e-6, g=1e-5, G=8e-8, rndv=65536, **kw))
    m = 200 << 10
    assert one(m, early=256 << 10) == pytest.approx(one(m) - 20e-3, rel=1e-9)
    # 64 KiB early cover 64 KiB x G = 5.2 ms of the 20 ms round trip
    assert one(1 << 20) - one(1 << 20, early=64 << 10) == pytest.approx(65536 * 8e-8, rel=1e-6)
    # a BDP or more early: no wait at all
    assert one(1 << 20) - one(1 << 20, early=256 << 10) == pytest.approx(20e-3, rel=1e-6)
    # the parameters keep it through JSON
    assert LogGP.from_dict(LogGP(1, 1, 1, 1, 1, early=4096).as_dict()).early == 4096


def test_wan_protocol_reads_the_environment_as_the_library_does(monkeypatch):
    from isthmus.model.calibrate import wan_protocol
    for k in ("ISTHMUS_CHUNK", "ISTHMUS_EAGER", "ISTHMUS_EARLY"):
        monkeypatch.delenv(k, raising=False)
    assert wan_protocol() == (65536, 524288)   # two chunks
    monkeypatch.setenv("ISTHMUS_EARLY", "0")
    monkeypatch.setenv("ISTHMUS_EAGER", "1M")   # above the chunk: clamped to it
    assert wan_protocol() == (262144, 0)
    monkeypatch.setenv("ISTHMUS_CHUNK", "128k")
    monkeypatch.delenv("ISTHMUS_EARLY")
    assert wan_protocol() == (131072, 262144)
    monkeypatch.setenv("ISTHMUS_EARLY", "1.5MiB")  # the sizes' one grammar (units.py)
    assert wan_protocol()[1] == 3 << 19
    monkeypatch.setenv("ISTHMUS_EARLY", "abc")  # refused, as MPI_Init refuses it (was 0)
    with pytest.raises(IsthmusError, match="ISTHMUS_EARLY=abc: 'abc' is not a size in bytes"):
        wan_protocol()


def test_fit_reports_a_poor_fit():
    ms = synthetic(TRUE, 0.0)
    ms.one_way = {m: (1e-3 if i % 2 else 1e-6) for i, m in enumerate(SIZES)}   # no line
    q = fit_loggp(ms).quality()["one_way"]
    assert q["r2"] < 0.5 and q["max_rel_residual"] > 0.5


@pytest.mark.parametrize("bad,msg", [
    (dict(one_way={}), "no one way"),
    (dict(send_overhead={65536: 1e-6}), "no measurement at a size up to"),
    (dict(one_way={8: 1e-6, 9: float("nan")}), "NaN"),
    (dict(one_way={8: 1e-6}), "at least 2 points"),
    (dict(one_way={8: 1e-6, 64: -2e-6}), "must be positive"),
])
def test_fit_rejects_bad_measurements(bad, msg):
    ms = synthetic(TRUE, 0.0)
    for k, v in bad.items():
        setattr(ms, k, v)
    with pytest.raises(ValueError, match=msg):
        fit_loggp(ms)


def test_fit_line_needs_two_sizes():
    with pytest.raises(ValueError, match="one size"):
        fit_line([4, 4, 4], [1, 2, 3])


def test_parameters_from_json_dict():
    assert LogGP.from_dict(TRUE.as_dict()) == TRUE
    with pytest.raises(ValueError, match="lack 'G'"):
        LogGP.from_dict({"L": 1, "o_s": 1, "o_r": 1, "g": 1})
    with pytest.raises(ValueError, match="not numbers"):
        LogGP.from_dict(dict(TRUE.as_dict(), L="fast"))


CASES = [(c, a) for c, algs in S.ALGORITHMS.items() for a in algs]


@pytest.mark.parametrize("coll,alg", CASES, ids=[f"{c}-{a}" for c, a in CASES])
def test_every_algorithm_gives_mpis_result_on_1_to_9_ranks(coll, alg):
    for p in range(1, 10):
        for size in (4, 4096, 100_000):
            check(S.build(coll, alg, p, size), commutative=True)
            if (coll, alg) not in S.COMMUTATIVE_ONLY:
                check(S.build(coll, alg, p, size, commutative=False), commutative=False)


@pytest.mark.parametrize("root", [0, 2, 4])
@pytest.mark.parametrize("maker", [S.bcast_tree, S.reduce_tree, S.bcast_chain, S.reduce_chain,
                                   S.bcast_scatter_allgather, S.reduce_rabenseifner])
def test_rooted_algorithms_at_any_root(maker, root):
    for p in range(root + 1, 10):
        check(maker(p, 4096, root), commutative=False)


def test_ring_is_wrong_for_a_non_commutative_op():
    with pytest.raises(ScheduleError, match="not adjacent"):
        check(S.allreduce_ring(4, 4096), commutative=False)


def test_a_wrong_schedule_is_caught():
    s = S.Schedule("allreduce", "crossed", 2, {0: 8})
    s.recv(0, 1, [0], "right")          # both wait for the other first
    s.recv(1, 0, [0], "left")
    s.send(0, 1, [0])
    s.send(1, 0, [0])
    with pytest.raises(ScheduleError, match="deadlocks: rank 0 waits for rank 1"):
        check(s)
    s = S.reduce_tree(4, 64)
    s.recv(0, 1, [0], "right")          # rank 1's contribution a second time
    s.send(1, 0, [0])
    with pytest.raises(ScheduleError, match="reduced twice"):
        check(s, commutative=True)
    s = S.bcast_tree(4, 64)
    s.send(0, 3, [0])                   # a message nobody receives
    with pytest.raises(ScheduleError, match="unreceived"):
        check(s)


def test_unknown_names_are_reported():
    with pytest.raises(ValueError, match="unknown collective 'allred'"):
        S.build("allred", "ring", 4, 8)
    with pytest.raises(ValueError, match="unknown allreduce algorithm 'tree'"):
        S.build("allreduce", "tree", 4, 8)
    with pytest.raises(ValueError, match="at least 1"):
        S.build("allreduce", "ring", 0, 8)


P = LogGP(L=5e-6, o_s=1e-6, o_r=2e-6, g=3e-6, G=1e-9, gamma0=0.0, gamma=0.5e-9)


def test_predict_point_to_point_closed_forms():
    m = 1 << 20
    one_way = P.L + P.o_s + P.o_r + (m - 1) * P.G
    assert predict(S.bcast_tree(2, m), P) == pytest.approx(one_way)
    # a binomial broadcast on 4 ranks: the root sends twice (2 then 1), rank 2 forwards
    t_root_second = P.gap(m) + one_way            # root's second message, to rank 1
    t_via_2 = 2 * one_way - P.o_r + P.o_r         # rank 2 receives, then sends to 3
    assert predict(S.bcast_tree(4, m), P) == pytest.approx(max(t_root_second, t_via_2))


def test_predict_counts_reduction_and_receiver_bandwidth():
    m = 1 << 20
    one = (m - 1) * P.G
    # linear allreduce on 3 ranks: rank 0 takes in two vectors one after the other (its
    # link carries one at a time), reduces each, then sends the result twice
    t = predict(S.allreduce_linear(3, m), P)
    second_in = P.o_s + P.L + 2 * one
    assert t == pytest.approx(second_in + P.o_r + P.reduce_cost(m) + P.gap(m) + P.o_s + one
                              + P.L + P.o_r)
    # the first reduction overlaps the second vector's arrival: gamma costs one reduction
    free = LogGP(**dict(P.as_dict(), gamma=0.0))
    assert t - predict(S.allreduce_linear(3, m), free) == pytest.approx(m * P.gamma)


def test_predict_mixes_levels_across_sites():
    intra = LogGP(L=1e-6, o_s=1e-6, o_r=1e-6, g=1e-6, G=0.1e-9)
    wan = LogGP(L=10e-3, o_s=5e-6, o_r=5e-6, g=5e-6, G=80e-9)   # 10 ms, 12.5 MB/s
    site = [0, 0, 1, 1]
    level = lambda a, b: intra if site[a] == site[b] else wan
    t = predict(S.barrier_dissemination(4), level)
    # 2 rounds: distance 1 (0->1 local, 1->2 WAN) and distance 2 (all cross): >= 2 L_wan
    assert 2 * wan.L <= t < 2 * wan.L + 1e-3
    # a bcast of 1 MiB must cross once: its time is at least one WAN transfer
    assert predict(S.bcast_tree(4, 1 << 20), level) >= wan.one_way(1 << 20)


def test_predicted_bruck_beats_ring_allgather_for_small_blocks_on_many_ranks():
    lat = LogGP(L=50e-6, o_s=1e-6, o_r=1e-6, g=1e-6, G=1e-10)
    ring = predict(S.allgather_ring(9, 8), lat)
    bruck = predict(S.allgather_bruck(9, 8), lat)
    assert bruck < ring and math.isclose(ring / lat.L, 8, rel_tol=0.2)


def test_messages_between_sites_share_the_link():
    wan = LogGP(L=10e-3, o_s=0.0, o_r=0.0, g=0.0, G=80e-9)
    site = [0, 0, 1, 1]
    link = lambda a, b: (site[a], site[b]) if site[a] != site[b] else None
    # ranks 0 and 1 each send 1 MB to their partner on the other site at once
    s = S.Schedule("alltoall", "two-pairs", 4, {(0, 2): 10**6, (1, 3): 10**6})
    s.send(0, 2, [(0, 2)])
    s.send(1, 3, [(1, 3)])
    s.recv(2, 0, [(0, 2)], "copy")
    s.recv(3, 1, [(1, 3)], "copy")
    body = (10**6 - 1) * wan.G
    assert predict(s, wan) == pytest.approx(body + wan.L)               # private links
    assert predict(s, wan, link) == pytest.approx(2 * body + wan.L)     # one shared link


def test_links_to_different_sites_run_side_by_side():
    """A rank's messages to two sites stream on two links at once (the gateway keeps one
    connection per peer site); two to the same site share its link; from two sites to one
    rank they arrive side by side too. (stop 22: the model had charged every body to the
    sender, so a 3-site bcast of 1 MiB was predicted at 1.8x its measured time.)"""
    wan = LogGP(L=10e-3, o_s=1e-6, o_r=1e-6, g=1e-5, G=80e-9)
    pair = lambda a, b: (a, b)
    body = (10**6 - 1) * wan.G
    two = S.Schedule("x", "to-two-sites", 3, {0: 10**6})
    for d in (1, 2):
        two.send(0, d, [0])
        two.recv(d, 0, [0], "copy")
    assert predict(two, wan, pair) < body + wan.L + 1e-3
    assert predict(two, wan) > 2 * body   # one sender's injection, as on one link
    same = S.Schedule("x", "twice-to-one", 2, {0: 10**6, 1: 10**6})
    same.send(0, 1, [0])
    same.send(0, 1, [1])
    same.recv(1, 0, [0], "copy")
    same.recv(1, 0, [1], "copy")
    assert predict(same, wan, pair) > 2 * body + wan.L
    fan_in = S.Schedule("x", "from-two-sites", 3, {1: 10**6, 2: 10**6})
    for d in (1, 2):
        fan_in.send(d, 0, [d])
        fan_in.recv(0, d, [d], "copy")
    assert predict(fan_in, wan, pair) < body + wan.L + 1e-3


def test_early_bytes_come_back_before_they_are_spent_again():
    """Between sites a sender spends per receiver only the early bytes given back, a round
    trip after they left: two 256 KiB messages back to back with 256 KiB of early data,
    the second waits for its handshake; with 512 KiB neither does."""
    def two(early):
        s = S.Schedule("x", "x", 2, {0: 256 << 10, 1: 256 << 10})
        s.send(0, 1, [0])
        s.send(0, 1, [1])
        s.recv(1, 0, [0], "copy")
        s.recv(1, 0, [1], "copy")
        lv = LogGP(L=10e-3, o_s=1e-6, o_r=1e-6, g=1e-5, G=8e-8, rndv=65536, early=early)
        return predict(s, lv, lambda a, b: (a, b))
    body = ((256 << 10) - 1) * 8e-8
    assert two(512 << 10) == pytest.approx(2 * body + 10e-3, rel=0.02)
    assert two(256 << 10) > 2 * body + 10e-3 + 5e-3


def test_a_rendezvous_send_completes_at_the_match():
    """A rendezvous send completes when the receiver's clear-to-send is back, and
    libisthmus's schedules end a round only then: a chain of 8 segments of 128 KiB between
    2 sites pays a round trip per segment (measured: 173 ms against 108 for one message of
    1 MiB, 10 ms apart), while one 1 MiB message does not."""
    lv = LogGP(L=10e-3, o_s=1e-6, o_r=1e-6, g=1e-5, G=8e-8, rndv=65536, early=512 << 10)
    m = 1 << 20
    one = S.build("bcast", "linear", 2, m)
    seg = S.ALGORITHMS["bcast"]["chain"](2, m)  # segments of m // 8, as tune picks it
    assert len(seg.chunk_bytes) == 8, seg.chunk_bytes
    pair = lambda a, b: (a, b)
    assert predict(seg, lv, pair) >= 8 * 2 * lv.L
    assert predict(one, lv, pair) < m * lv.G + 2 * lv.L


def test_cli_predict_and_check(tmp_path):
    from click.testing import CliRunner

    from isthmus.cli import main
    params = tmp_path / "p.json"
    params.write_text(json.dumps({"levels": {"intra": P.as_dict(), "wan": dict(
        P.as_dict(), L=10e-3, G=80e-9)}}))
    r = CliRunner().invoke(main, ["model", "predict", "--params", str(params), "--coll",
                                  "allreduce", "-n", "8", "--size", "1MiB", "--sites", "2",
                                  "--non-commutative", "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    algs = [p["algorithm"] for p in doc["predictions"]]
    assert "ring" not in algs and set(algs) == set(S.ALGORITHMS["allreduce"]) - {"ring"}
    secs = [p["seconds"] for p in doc["predictions"]]
    assert secs == sorted(secs) and secs[0] > 2 * 10e-3     # at least two crossings
    r = CliRunner().invoke(main, ["model", "predict", "--params", str(params), "--coll",
                                  "bcast", "-n", "2", "--sites", "3"])
    assert r.exit_code == 2 and "more than --ranks" in r.output
    params.write_text("{\"levels\": {\"intra\": {\"L\": 1}}}")
    r = CliRunner().invoke(main, ["model", "predict", "--params", str(params), "--coll",
                                  "bcast", "-n", "2"])
    assert r.exit_code == 2 and "lack 'o_s'" in r.output
    r = CliRunner().invoke(main, ["model", "check", "--max-ranks", "4"])
    assert r.exit_code == 0 and "ok    allreduce/rabenseifner" in r.output
