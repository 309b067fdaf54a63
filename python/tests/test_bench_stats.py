# tests/test_bench_stats.py: the statistics of `isthmus bench` against known answers and
# known distributions: quantiles, the bootstrap confidence interval of a ratio of medians
# (its coverage of the true ratio), and geometric means of ratios.
from __future__ import annotations

import math

import numpy as np
import pytest

from isthmus.bench.stats import geomean, geomean_ratio, median_ratio, summarize


def test_summary_of_known_values():
    s = summarize([5, 1, 4, 2, 3])
    assert (s.min, s.median, s.max) == (1, 3, 5)
    assert s.p99 == pytest.approx(4.96)
    assert s.iqr == pytest.approx(2.0)
    assert s.spread == pytest.approx(4 / 3)


def test_summary_quantiles_converge_for_exponential():
    rng = np.random.default_rng(7)
    x = rng.exponential(scale=2.0, size=200_000)
    s = summarize(x)
    assert s.median == pytest.approx(2 * math.log(2), rel=0.02)
    assert s.p99 == pytest.approx(2 * math.log(100), rel=0.03)
    assert s.mean == pytest.approx(2.0, rel=0.01)


def test_summary_rejects_empty():
    with pytest.raises(ValueError):
        summarize([])


def test_geomean_is_symmetric_in_direction():
    assert geomean([2.0, 0.5]) == pytest.approx(1.0)
    assert geomean([1.0, 4.0]) == pytest.approx(2.0)
    with pytest.raises(ValueError):
        geomean([1.0, 0.0])


def test_ratio_of_scaled_samples_is_exact_with_a_tight_interval():
    rng = np.random.default_rng(3)
    a = [list(rng.normal(10, 0.1, 20)) for _ in range(3)]
    b = [[2 * v for v in run] for run in a]
    r = median_ratio(a, b)
    assert r.value == pytest.approx(2.0)
    assert r.low <= 2.0 <= r.high
    assert r.high - r.low < 0.05


@pytest.mark.parametrize("runs", [1, 4])
def test_bootstrap_interval_covers_the_true_ratio(runs):
    """Log-normal samples with true medians 10 and 13: the 95 % interval must contain
    1.3 in most of 60 independent experiments (a broken bootstrap covers far less)."""
    rng = np.random.default_rng(11)
    hits = 0
    trials = 60
    for t in range(trials):
        a = [list(10 * rng.lognormal(0, 0.2, 15)) for _ in range(runs)]
        b = [list(13 * rng.lognormal(0, 0.2, 15)) for _ in range(runs)]
        r = median_ratio(a, b, resamples=600, seed=t)
        hits += r.low <= 1.3 <= r.high
    assert hits / trials >= 0.85, f"coverage {hits}/{trials}"


def test_geomean_ratio_interval_contains_its_point_estimate():
    rng = np.random.default_rng(5)
    ratios = []
    for true in (0.5, 2.0, 1.0):
        a = [list(rng.normal(100, 2, 10))]
        b = [list(true * np.asarray(a[0]) * rng.normal(1, 0.01, 10))]
        ratios.append(median_ratio(a, b, resamples=500))
    g, lo, hi = geomean_ratio(ratios)
    assert g == pytest.approx(1.0, rel=0.03)
    assert lo <= g <= hi
