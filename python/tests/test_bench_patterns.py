# tests/test_bench_patterns.py: the pure parts of bench/patterns.py,
# bench/patterns_sweep.py and the pattern speed-ups of bench/whatif_validate.py: the link
# tables load as three-site matrices with the delays and rates their headers promise, the
# sweep's rate parser and points, the plot function writing PNGs from a tiny fake result,
# and the measured and predicted speed-ups computed from fake result rows. The runs
# themselves are benchmarks (root, minutes).
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from isthmus.netemu.matrix import load_matrix

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _load(name: str):
    sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


patterns = _load("patterns")
sweep = _load("patterns_sweep")
validate = _load("whatif_validate")


def _matrix(tmp_path: Path, text: str):
    path = tmp_path / "links.toml"
    path.write_text(text)
    return load_matrix(path)


@pytest.mark.parametrize("name", ["seed", "modern"])
def test_matrix_tables_name_every_pair_of_three_sites(tmp_path, name):
    m = _matrix(tmp_path, patterns.MATRICES[name])
    assert m.count == 3
    for (i, j), spec in m.links.items():
        assert spec == m.get(j, i)  # symmetric: every pair given as "X-Y"
        assert spec.delay > 0 and spec.rate > 0


def test_modern_matrix_is_within_the_issue_ranges_and_below_the_emulator_ceiling(tmp_path):
    m = _matrix(tmp_path, patterns.MODERN_LINKS)
    delays = {s.delay for s in m.links.values()}
    rates = {s.rate * 8 for s in m.links.values()}  # bit/s
    assert all(0.010 <= d <= 0.050 for d in delays)
    # 1-10 Gbit/s scaled by 1/20; the three links together stay under the ~1 Gbit/s that
    # gateways plus emulator carry on this machine (BENCHMARKS.md, "Link emulator")
    assert all(50e6 <= r <= 500e6 for r in rates)
    assert sum(rates) < 1e9


def test_seed_matrix_is_unchanged(tmp_path):
    m = _matrix(tmp_path, patterns.SEED_LINKS)
    assert m.get(0, 2).delay == pytest.approx(0.084)
    assert m.get(0, 2).rate == pytest.approx(100e3)


def test_uniform_matrix_sets_every_direction(tmp_path):
    m = _matrix(tmp_path, sweep.uniform_matrix(25, "10mbit"))
    assert m.count == 3
    assert {(s.delay, s.rate) for s in m.links.values()} == {(0.025, 10e6 / 8)}


def test_rate_mbit():
    assert sweep.rate_mbit("200mbit") == 200
    assert sweep.rate_mbit("1gbit") == 1000
    assert sweep.rate_mbit("340kB/s") == pytest.approx(2.72)
    with pytest.raises(ValueError):
        sweep.rate_mbit("fast")


def test_points_cover_both_axes():
    pts = sweep.points(["5", "50"], "200mbit", ["1mbit", "10mbit"], 25)
    assert pts == [("latency", 5.0, "200mbit"), ("latency", 50.0, "200mbit"),
                   ("bandwidth", 25.0, "1mbit"), ("bandwidth", 25.0, "10mbit")]


def test_plot_writes_two_pngs_from_a_fake_result(tmp_path):
    recs = []
    for axis, delay, rate in sweep.points(["5", "25"], "200mbit", ["1mbit", "10mbit"], 25):
        for version, base in (("naive", 4.0), ("pattern", 1.0)):
            for rep in range(2):
                recs.append({"example": "remote_read", "axis": axis, "delay_ms": delay,
                             "rate": rate, "rate_mbit": sweep.rate_mbit(rate),
                             "version": version, "rep": rep, "value": base * delay + rep,
                             "unit": "us per read", "ranks": "1,2,1"})
    written = sweep.plot(recs, tmp_path / "img", "remote_read")
    assert [p.name for p in written] == ["remote_read-latency.png", "remote_read-bandwidth.png"]
    for p in written:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sweep.plot(recs, tmp_path / "none", "aggregate") == []


def _row(matrix, case, rep, measured, predicted, phase1=None, program=None, skew=3.0):
    """A whatif_validate result row: whole-run seconds after `skew`, phase 1 (measured,
    predicted) seconds, the program's printed seconds."""
    phases = {"0": {"measured_s": 0.5, "predicted_s": 0.4}}
    if phase1:
        phases["1"] = {"measured_s": phase1[0], "predicted_s": phase1[1]}
    return {"case": case, "rep": rep, "matrix": matrix, "links": matrix,
            "measured_s": skew + measured, "predicted_s": skew + predicted, "start_skew_s": skew,
            "ratio": (skew + predicted) / (skew + measured), "ratio_after_start": predicted / measured,
            "ratio_cm02": 1.0, "phases": phases, "program_s": program}


def test_whatif_pairs_name_the_pattern_cases():
    paired = {c for pair in validate.PAIRS.values() for c in pair}
    assert paired <= set(validate.CASES)
    assert paired == {c for c, v in validate.CASES.items() if v[3] == "pattern"}
    for example, (naive, pattern) in validate.PAIRS.items():
        assert validate.CASES[naive][0] == validate.CASES[pattern][0] == example


def test_whatif_speedups_pair_versions_by_matrix_and_repetition():
    rows = [_row("seed", "aggregate-naive", 0, 2.0, 1.5, (1.2, 0.9), 1.2),
            _row("seed", "aggregate-agg", 0, 1.0, 1.0, (0.6, 0.6), 0.6),
            _row("seed", "aggregate-naive", 1, 3.0, 1.5, (1.8, 1.2)),
            _row("seed", "aggregate-agg", 1, 1.5, 0.5, (0.9, 0.4)),
            _row("modern", "aggregate-agg", 0, 0.5, 0.25),
            _row("modern", "aggregate-naive", 0, 1.0, 1.0),
            _row("modern", "decompose-even", 0, 1.0, 1.0)]  # no weighted run: left out
    sp = validate.speedups(rows)
    assert set(sp) == {("seed", "aggregate"), ("modern", "aggregate")}
    seed = sp[("seed", "aggregate")]
    assert seed["after start"]["measured"] == pytest.approx([2.0, 2.0])
    assert seed["after start"]["predicted"] == pytest.approx([1.5, 3.0])
    assert seed["after start"]["ratio"] == pytest.approx([0.75, 1.5])
    assert seed["phase 1"]["measured"] == pytest.approx([2.0, 2.0])
    assert seed["phase 1"]["predicted"] == pytest.approx([1.5, 3.0])
    assert seed["program"]["measured"] == pytest.approx([2.0])  # rep 1 printed nothing
    modern = sp[("modern", "aggregate")]
    assert modern["after start"]["predicted"] == pytest.approx([4.0])
    assert modern["after start"]["ratio"] == pytest.approx([2.0])
    assert "phase 1" not in modern


def test_whatif_speedups_do_not_pair_rows_of_different_files():
    rows = [{**_row("seed", "decompose-even", 0, 2.0, 2.0), "file": 0},
            {**_row("seed", "decompose-weighted", 0, 1.0, 1.0), "file": 1}]
    assert validate.speedups(rows) == {}


def _pattern_rows():
    return [_row("seed", "remote_read-naive", 0, 8.0, 7.0, (7.0, 6.0), 7.0),
            _row("seed", "remote_read-cache", 0, 1.0, 1.0, (1.0, 1.0), 1.0),
            _row("seed", "decompose-even", 0, 2.0, 2.0, (1.5, 1.5), 1.5),
            _row("seed", "decompose-weighted", 0, 1.0, 1.0, (1.0, 1.0), 1.0)]


def test_whatif_table_marks_an_example_replayed_as_measured(capsys, monkeypatch):
    """An example whose calls the replay repeats as measured is marked beside its
    prediction (remote_read was, before the tracer recorded one-sided calls)."""
    monkeypatch.setitem(validate.AS_MEASURED, "remote_read", "RMA: replayed as measured")
    validate.print_tables(_pattern_rows())
    lines = capsys.readouterr().out.splitlines()
    rr = [x for x in lines if x.startswith("| seed | remote_read |")]
    dec = [x for x in lines if x.startswith("| seed | decompose |")]
    assert [x.split(" | ")[2] for x in rr] == ["after start", "phase 1", "program"]
    assert all("RMA: replayed as measured" in x for x in rr[:2])
    assert "8.00 (8.00-8.00) | 7.00 (7.00-7.00) (RMA" in rr[0]
    assert not any("RMA" in x for x in dec)


def test_whatif_table_predicts_remote_read_now(capsys):
    """The replay models one-sided calls (whatif/rma.py): no example is marked."""
    assert "remote_read" not in validate.AS_MEASURED
    validate.print_tables(_pattern_rows())
    lines = capsys.readouterr().out.splitlines()
    rr = [x for x in lines if x.startswith("| seed | remote_read |")]
    assert rr and not any("as measured" in x for x in rr)


@pytest.mark.parametrize("line, seconds", [
    ("aggregate: naive ranks 4 steps 3 msgs 200 bytes 16: 0.680123 s, 226.708 ms per step "
     "(slowest 240.000 ms)", 0.680123),
    ("remote_read: cache ranks 4 reads 128: 1.484800 s, 46.4 us per read", 1.4848),
    ("decompose: even ranks 4 cells 20000 steps 20: 2.500000 s, 125.000 ms per step, last "
     "half 120.000 ms per step", 2.5)])
def test_whatif_reads_the_time_each_example_prints(line, seconds):
    out = f"remote_read: site 0: 3 gets, 24 blocks\n{line}\nexample: ok\n"
    m = validate.PROGRAM_TIME.search(out)
    assert m and float(m.group(1)) == pytest.approx(seconds)


def test_decompose_case_takes_slow_and_cells_and_reads_the_sites():
    naive, pattern, regex, unit = patterns.CASES["decompose"]
    assert patterns.case_args(naive, "8,8,8", 5000) == ["even", "8,8,8", 5000, 40, 10, "wall"]
    assert patterns.case_args(pattern, "1,1,1", 7)[:3] == ["weighted", "1,1,1", 7]
    out = ("decompose: weighted ranks 4 cells 100 steps 40: 8.000000 s, 200.000 ms per step, "
           "last half 150.500 ms per step\ndecompose: compute timed by the wall clock\n"
           "decompose: site 0: slow 8, 1 ranks, 60 cells, 12.5 Mcell/s\n"
           "decompose: site 1: slow 8, 2 ranks, 30 cells, 3.0 Mcell/s\n"
           "decompose: site 2: slow 8, 1 ranks, 10 cells, 1.5 Mcell/s\ndecompose: ok\n")
    assert float(regex.search(out).group(1)) == 200.0 and unit == "ms per step"
    d = patterns.decompose_details(out)
    assert d["last_half"] == 150.5
    assert d["sites"] == [{"ranks": 1, "cells": 60, "mcells_s": 12.5},
                          {"ranks": 2, "cells": 30, "mcells_s": 3.0},
                          {"ranks": 1, "cells": 10, "mcells_s": 1.5}]
    assert "decompose" not in patterns.DEFAULT_ONLY.split(",")  # only when asked for
