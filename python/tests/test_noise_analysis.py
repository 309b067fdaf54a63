# tests/test_noise_analysis.py: the noise analysis on synthetic runs with known noise:
# classes, densities, periods (with harmonic grouping and FTQ-grid aliasing), the
# periodogram check, attribution from a kernel trace and the /proc/interrupts fallback,
# the injector check, the report, and the cost-at-scale model.
from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from isthmus.cli import main
from isthmus.noise import attribute, period, scale
from isthmus.noise.analyze import analyze
from isthmus.noise.classes import find_classes, silverman_bw
from isthmus.noise.runs import load_run
from isthmus.noise.tracefs import parse_trace

import noise_synth as ns


def test_silverman_matches_the_seed_formula():
    x = np.array([1.0, 2.0, 3.0, 4.0, 10.0])
    sd = np.std(x, ddof=1)
    iqr = np.percentile(x, 75) - np.percentile(x, 25)
    assert silverman_bw(x) == pytest.approx(0.9 * min(sd, iqr / 1.34) * 5 ** -0.2)


def test_classes_found_in_three_bands():
    rng = np.random.default_rng(3)
    lost = np.concatenate([rng.lognormal(np.log(2e-6), 0.1, 400), rng.lognormal(np.log(60e-6), 0.1, 150),
                           rng.lognormal(np.log(1e-3), 0.05, 80)])
    cls = find_classes(lost)
    assert len(cls) == 3
    med = sorted(float(np.median(lost[c.members])) for c in cls)
    assert med[0] == pytest.approx(2e-6, rel=0.1)
    assert med[1] == pytest.approx(60e-6, rel=0.1)
    assert med[2] == pytest.approx(1e-3, rel=0.1)
    assert sum(len(c.members) for c in cls) == len(lost)


def test_small_band_is_merged_not_a_class():
    rng = np.random.default_rng(4)
    lost = np.concatenate([rng.lognormal(np.log(5e-6), 0.1, 500), [3e-3]])
    cls = find_classes(lost)
    assert len(cls) == 1 and len(cls[0].members) == 501


def test_period_with_missed_beats_is_the_fundamental():
    rng = np.random.default_rng(5)
    t = np.arange(0, 5, 0.004)
    t = t[rng.random(len(t)) < 0.6] + rng.normal(0, 2e-6, None if False else 1)[0]
    p = period.interarrival_period(t + rng.normal(0, 1e-6, len(t)))
    assert p is not None
    assert p.period_s == pytest.approx(0.004, rel=1e-4)
    assert p.missing > 0.3 * len(t)


def test_aperiodic_events_have_no_period():
    rng = np.random.default_rng(6)
    t = np.cumsum(rng.exponential(0.01, 300))
    assert period.interarrival_period(t) is None


def test_periodogram_groups_harmonics_to_the_fundamental():
    t = np.arange(0.001, 4, 0.01)
    got = period.periodogram_period(t, np.full(len(t), 1e-3), 4.0, 1e-4)
    assert got == pytest.approx(0.01, rel=0.02)


def test_ftq_grid_aliasing_is_reported():
    # a period of exactly 3 FTQ intervals: commensurate with the grid
    q = (1 << 20) / ns.HZ
    near, frac, res = period.grid_aliasing(3 * q, q, 5.0)
    assert near and frac == "3/1" and res > 0
    # a period shorter than two intervals cannot be resolved on the grid
    ok, _, _ = period.grid_aliasing(1.5 * q, q, 5.0)
    assert not ok
    # an incommensurate period: quantisation averages out
    ok, frac, res = period.grid_aliasing(0.0100037, q, 5.0)
    assert ok and frac is None and res < q


def test_ftq_run_recovers_period_and_detour_length(tmp_path):
    rng = np.random.default_rng(7)
    det = ns.periodic(0.010, 1e-3, 8.0, rng, phase=0.0031)
    det += ns.periodic(0.004, 6e-6, 8.0, rng, phase=0.0007)
    d = ns.write_run(tmp_path / "ftq", ns.ftq_doc(det, 8.0), name="ftq-run.json")
    res = analyze(load_run(d))
    big = max(res["cores"][0]["classes"], key=lambda k: k["lost_median_s"])
    # a 1 ms detour spans several 0.52 ms slots; merged it is one detour of ~1 ms
    assert big["lost_median_s"] == pytest.approx(1e-3, rel=0.05)
    assert big["period"]["period_s"] == pytest.approx(0.010, rel=0.001)
    assert big["period"]["confirmed"]
    small = min(res["cores"][0]["classes"], key=lambda k: k["lost_median_s"])
    assert small["period"]["period_s"] == pytest.approx(0.004, rel=0.002)
    # no trace and no interrupt counts in this run: periodic, but no cause is claimed
    assert small["label"] == "periodic, 250 Hz (no cause known)"


def _traced_run(tmp_path, with_trace=True):
    rng = np.random.default_rng(8)
    inj = ns.periodic(0.010, 1e-3, 6.0, rng, jitter=3e-6, phase=0.002)
    tick = ns.periodic(0.004, 4e-6, 6.0, rng, jitter=0.5e-6, phase=0.0005)
    other = [(float(s), float(rng.uniform(20e-6, 40e-6))) for s in np.sort(rng.uniform(0, 6, 40))]
    det = inj + tick + other
    # a detour during a burst is absorbed into the burst's detour
    det = inj + [x for x in tick + other if not any(y[0] - 50e-6 <= x[0] <= y[0] + y[1] + 50e-6 for y in inj)]
    trace = ns.trace_lines(1, 4242, [(s, d, "isthmus-inject", 777) for s, d in inj],
                           [(s, d, "local_timer") for s, d in tick]) if with_trace else None
    return ns.write_run(tmp_path / "run", ns.selfish_doc(det, 6.0, loc_rate=250.0), trace)


def test_attribution_names_the_injector_and_the_tick(tmp_path):
    res = analyze(load_run(_traced_run(tmp_path)))
    assert res["attribution"].startswith("kernel trace")
    cls = res["cores"][0]["classes"]
    inj = [k for k in cls if "isthmus-inject[777]" in k["label"]]
    assert len(inj) == 1
    assert inj[0]["period"]["period_s"] == pytest.approx(0.010, rel=0.01)
    assert inj[0]["cause_time_median_s"] == pytest.approx(1e-3, rel=0.05)
    assert inj[0]["causes"][0]["share_of_detours"] == 1.0
    tick = [k for k in cls if k["label"].startswith("timer tick")]
    assert len(tick) == 1 and tick[0]["label"] == "timer tick (250 Hz)"
    assert tick[0]["period"]["period_s"] == pytest.approx(0.004, rel=0.01)


def test_without_trace_falls_back_to_interrupt_counts(tmp_path):
    res = analyze(load_run(_traced_run(tmp_path, with_trace=False)))
    assert "no kernel trace" in res["attribution"]
    core = res["cores"][0]
    assert core["interrupts"][0]["line"] == "LOC" and core["interrupts"][0]["per_s"] == pytest.approx(250)
    tick = [k for k in core["classes"] if k["period"] and k["period"]["period_s"] == pytest.approx(0.004, rel=0.01)]
    assert tick and tick[0]["label"].startswith("timer tick (250 Hz)")


def test_injector_check_compares_with_its_log(tmp_path):
    d = _traced_run(tmp_path)
    hz = ns.HZ
    log = [[ns.T0 + int((0.002 + 0.01 * i) * hz), ns.T0 + int((0.003 + 0.01 * i) * hz)] for i in range(599)]
    (d / "inject.json").write_text(json.dumps({"pid": 777, "cpu": 1, "period_s": 0.01, "burst_s": 0.001,
                                               "hz": hz, "log": log}))
    ic = analyze(load_run(d))["inject_check"]
    assert ic["found"] and abs(ic["period_error"]) < 0.01 and abs(ic["burst_error"]) < 0.05
    assert ic["period_s"] == pytest.approx(0.01, rel=1e-6)


def test_parse_trace_pairs_switches_and_vectors(tmp_path):
    p = tmp_path / "t.txt"
    p.write_text(ns.trace_lines(0, 5, [(1.0, 0.001, "some thing", 9)], [(2.0, 1e-5, "local_timer")]))
    ivs = parse_trace(p, int, {0: 5})
    kinds = sorted((i.kind, i.name) for i in ivs)
    assert kinds == [("task", "task some thing[9]"), ("vector", "local_timer")]
    task = [i for i in ivs if i.kind == "task"][0]
    assert abs(task.t1 - task.t0 - 0.001 * ns.HZ) <= 1


def test_proc_interrupt_deltas():
    b = ns.interrupts_text(2, [10, 20], [1, 1])
    a = ns.interrupts_text(2, [510, 20], [1, 3])
    d0 = attribute.proc_deltas(b, a, 0, 2.0)
    assert d0 == [{"line": "LOC", "label": "Local timer interrupts", "count": 500, "per_s": 250.0}]
    d1 = attribute.proc_deltas(b, a, 1, 2.0)
    assert d1[0]["line"] == "11" and d1[0]["count"] == 2


def test_bad_run_dir_is_a_clear_error(tmp_path):
    r = CliRunner().invoke(main, ["noise", "report", str(tmp_path), "--no-html"])
    assert r.exit_code == 2 and "no probe run files" in r.output


def test_report_command_writes_html(tmp_path):
    d = _traced_run(tmp_path)
    r = CliRunner().invoke(main, ["noise", "report", str(d)])
    assert r.exit_code == 0, r.output
    assert "isthmus-inject[777]" in r.output
    page = (d / "report" / "index.html").read_text()
    assert "data:image/png;base64," in page and "timer tick (250 Hz)" in page
    assert json.loads((d / "analysis.json").read_text())["cores"][0]["classes"]


# ---- the scale model ----

def test_delays_through_detours():
    s, e = np.array([1.0, 2.0, 2.5]), np.array([1.5, 2.2, 3.0])
    got = scale.delays(s, e, np.array([0.0, 0.9, 1.2, 1.6, 5.0]), 0.5)
    assert np.allclose(got, [0.0, 0.5, 0.3, 0.2, 0.0])


def test_free_time_starts_avoid_detours_and_are_uniform():
    rng = np.random.default_rng(12)
    s, e = np.array([1.0, 5.0]), np.array([3.0, 6.0])
    t = scale.starts(s, e, 10.0, 200000, rng, "free")
    assert not np.any(((t >= 1) & (t < 3)) | ((t >= 5) & (t < 6)))
    assert t.min() >= 0 and t.max() < 10
    # 7 s of free time: each free second gets 1/7 of the starts
    assert np.mean(t < 1) == pytest.approx(1 / 7, abs=0.005)
    assert np.mean((t >= 3) & (t < 5)) == pytest.approx(2 / 7, abs=0.005)
    w = scale.starts(s, e, 10.0, 200000, rng, "wall")
    assert np.mean((w >= 1) & (w < 3)) == pytest.approx(0.2, abs=0.005)


def test_long_rare_detour_costs_less_with_free_starts():
    # one 50 ms detour per second (RT throttling's shape): with starts while running, a
    # 2 ms iteration is hit with probability ~2/950 and loses ~50 ms (~0.1 ms on average);
    # starting at random wall times adds the inspection paradox (~5% x 25 ms)
    s = np.arange(0.5, 20, 1.0)
    e = s + 0.05
    rng = np.random.default_rng(13)
    free = scale.delays(s, e, scale.starts(s, e, 19.0, 200000, rng, "free"), 2e-3).mean()
    wall = scale.delays(s, e, scale.starts(s, e, 19.0, 200000, rng, "wall"), 2e-3).mean()
    assert free == pytest.approx(2e-3 / 0.95 * 0.05, rel=0.1)
    assert wall == pytest.approx(0.05 * 0.025 + 0.002 * 0.05, rel=0.1)


def test_expected_max_matches_monte_carlo():
    rng = np.random.default_rng(9)
    a = rng.exponential(1.0, 4000)
    b = rng.exponential(2.0, 4000)
    exact = scale.expected_max([a, b], [3, 2])
    mc = np.mean(np.max(np.hstack([rng.choice(a, (20000, 3)), rng.choice(b, (20000, 2))]), axis=1))
    assert exact == pytest.approx(mc, rel=0.03)


def test_scale_model_grows_unsync_not_cosched(tmp_path):
    rng = np.random.default_rng(10)
    det = ns.periodic(0.010, 1e-3, 20.0, rng, phase=0.0013)
    run = load_run(ns.write_run(tmp_path / "s", ns.selfish_doc(det, 20.0)))
    res = scale.predict(run, 2e-3, 5e-6, 4096, 4000, seed=1)
    rows = {r["P"]: r for r in res["rows"]}
    # one core, period 10 ms, 1 ms detours, 2 ms work: a window meets a detour with
    # probability (2 + 1) / 10 ... expected delay ~ 0.1 x 2 ms / 0.9 x ... at P=2 modest
    assert 1.05 < rows[2]["slowdown_unsync"] < 1.6
    # with many processes some process is always hit: the slowdown approaches the worst case
    assert rows[4096]["slowdown_unsync"] > rows[2]["slowdown_unsync"]
    assert rows[4096]["slowdown_unsync"] == pytest.approx((2e-3 + 12 * 5e-6 + 1e-3) / (2e-3 + 12 * 5e-6), rel=0.05)
    # co-scheduled noise costs the same at every scale (apart from the longer collective)
    assert rows[4096]["slowdown_cosched"] == pytest.approx(rows[2]["slowdown_cosched"], rel=0.1)


def test_scale_validation_against_mpi_jitter(tmp_path):
    rng = np.random.default_rng(11)
    det = ns.periodic(0.010, 1e-3, 20.0, rng, phase=0.0013)
    d = ns.write_run(tmp_path / "s", ns.selfish_doc(det, 20.0, cpu=1))
    doc = ns.selfish_doc([], 20.0, cpu=0)
    (d / "selfish-other.json").write_text(json.dumps(doc))
    W = 2e-3
    # what a 2-rank run would see: the rank on cpu 1 delayed as the trace says
    s, e = scale.merged_detours(load_run(d).cores[[c.cpu for c in load_run(d).cores].index(1)])
    t = scale.starts(s, e, 15.0, 3000, rng, "free")
    cmax = W + scale.delays(s, e, t, W)
    mj = tmp_path / "mj"
    mj.mkdir()
    (mj / "mpi-jitter.json").write_text(json.dumps({
        "ranks": [{"rank": 0, "cpu": 0, "t_compute_min_s": W}, {"rank": 1, "cpu": 1, "t_compute_min_s": W}],
        "iterations": {"t_compute_max_s": list(cmax)}, "summary": {"lost_rel": 0.1}}))
    val = scale.validate_mpijitter(load_run(d), mj, 4000, seed=2)
    assert abs(val["relative_error"]) < 0.03
    r = CliRunner().invoke(main, ["noise", "scale", str(d), "--work", "2ms", "--pmax", "64", "--samples", "500",
                                  "--validate", str(mj)])
    assert r.exit_code == 0, r.output
    assert "validation against" in r.output and (d / "scale.png").stat().st_size > 1000


def test_scale_refuses_a_rank_on_an_unprobed_cpu(tmp_path):
    d = ns.write_run(tmp_path / "s", ns.selfish_doc([], 5.0, cpu=1))
    mj = tmp_path / "mj.json"
    mj.write_text(json.dumps({"ranks": [{"rank": 0, "cpu": 0, "t_compute_min_s": 1e-3},
                                        {"rank": 1, "cpu": 1, "t_compute_min_s": 1e-3}],
                              "iterations": {"t_compute_max_s": [1e-3]}, "summary": {"lost_rel": 0}}))
    r = CliRunner().invoke(main, ["noise", "scale", str(d), "--validate", str(mj), "--pmax", "4"])
    assert r.exit_code == 2 and "rank 0 ran on cpu 0, which the noise run did not probe" in r.output


def test_inject_rejects_burst_longer_than_period():
    r = CliRunner().invoke(main, ["noise", "inject", "--period", "1ms", "--duration", "2ms"])
    assert r.exit_code == 2 and "must be shorter than --period" in r.output
    r = CliRunner().invoke(main, ["noise", "inject", "--period", "10", "--duration", "1ms"])
    assert r.exit_code == 2 and "give a unit" in r.output


def test_time_of_detours_not_kept_is_its_own_category():
    """Two kept detours (one during an irq, one unexplained) and 30 ticks lost in detours
    beyond --max-events, over a span of 1000 ticks: the split adds up to 100 + 30 ticks."""
    per_detour = [[("irq/1", 40)], []]
    lost = np.array([40, 60])
    cat = attribute.noise_by_category(per_detour, lost, 1000, dropped_lost=30)
    assert cat[attribute.NOT_KEPT] == pytest.approx(0.030)
    assert cat["unattributed"] == pytest.approx(0.060)
    assert sum(cat.values()) == pytest.approx(0.130)
    assert attribute.NOT_KEPT not in attribute.noise_by_category(per_detour, lost, 1000)
