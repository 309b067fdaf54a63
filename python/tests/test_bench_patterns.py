# tests/test_bench_patterns.py: the pure parts of bench/patterns.py and
# bench/patterns_sweep.py: their link tables load as three-site matrices with the delays
# and rates their headers promise, the sweep's rate parser and points, and the plot function
# writing PNGs from a tiny fake result. The runs themselves are benchmarks (root, minutes).
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
