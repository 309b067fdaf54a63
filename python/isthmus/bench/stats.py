# isthmus/bench/stats.py: statistics of benchmark results. Quantiles use the same linear
# definition as isthmus-bench (numpy's default); ratios get bootstrap confidence
# intervals; averages of ratios are geometric means (an arithmetic mean of ratios
# depends on which side is the numerator; seed 004 averaged them arithmetically).
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

BOOTSTRAP_RESAMPLES = 2000
CONFIDENCE = 0.95


@dataclass(frozen=True)
class Summary:
    n: int
    min: float
    median: float
    p99: float
    max: float
    mean: float
    iqr: float

    @property
    def spread(self) -> float:
        """(max - min) / median: the run-to-run spread as a fraction of the median."""
        return (self.max - self.min) / self.median if self.median else math.nan


def summarize(values: Sequence[float]) -> Summary:
    a = np.asarray(values, dtype=float)
    if a.size == 0:
        raise ValueError("no values to summarise")
    q25, q50, q75, q99 = np.quantile(a, [0.25, 0.5, 0.75, 0.99])
    return Summary(int(a.size), float(a.min()), float(q50), float(q99), float(a.max()),
                   float(a.mean()), float(q75 - q25))


def geomean(values: Sequence[float]) -> float:
    a = np.asarray(values, dtype=float)
    if a.size == 0 or np.any(a <= 0):
        raise ValueError("geometric mean needs positive values")
    return float(np.exp(np.mean(np.log(a))))


def _resample_medians(runs: Sequence[Sequence[float]], rng: np.random.Generator, n: int) -> np.ndarray:
    """Medians of n two-level bootstrap resamples: runs (launches) with replacement, then
    the samples within each chosen run with replacement. One run degenerates to the
    ordinary bootstrap of its samples."""
    runs = [np.asarray(r, dtype=float) for r in runs if len(r)]
    if not runs:
        raise ValueError("no samples")
    k = len(runs)
    sizes = {r.size for r in runs}
    if len(sizes) == 1:  # the usual case: vectorised
        m = np.vstack(runs)
        s = m.shape[1]
        pick = rng.integers(0, k, size=(n, k))
        within = rng.integers(0, s, size=(n, k, s))
        return np.median(m[pick[:, :, None], within].reshape(n, k * s), axis=1)
    out = np.empty(n)
    for i in range(n):
        pick = rng.integers(0, k, size=k)
        pooled = np.concatenate([runs[j][rng.integers(0, runs[j].size, size=runs[j].size)] for j in pick])
        out[i] = np.median(pooled)
    return out


@dataclass(frozen=True)
class Ratio:
    value: float          # median(B) / median(A), all samples pooled
    low: float
    high: float
    boot: np.ndarray      # the bootstrap distribution (for joint geometric means)


def median_ratio(a_runs: Sequence[Sequence[float]], b_runs: Sequence[Sequence[float]],
                 resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 1) -> Ratio:
    """Ratio of medians B/A with a percentile bootstrap confidence interval."""
    rng = np.random.default_rng(seed)
    a_all = np.concatenate([np.asarray(r, float) for r in a_runs])
    b_all = np.concatenate([np.asarray(r, float) for r in b_runs])
    point = float(np.median(b_all) / np.median(a_all))
    boot = _resample_medians(b_runs, rng, resamples) / _resample_medians(a_runs, rng, resamples)
    alpha = (1.0 - CONFIDENCE) / 2
    lo, hi = np.quantile(boot, [alpha, 1 - alpha])
    return Ratio(point, float(lo), float(hi), boot)


def geomean_ratio(ratios: Sequence[Ratio]) -> tuple[float, float, float]:
    """Geometric mean of several ratios, with a confidence interval from their joint
    bootstrap distributions (resample i of every point combined)."""
    if not ratios:
        raise ValueError("no ratios")
    point = geomean([r.value for r in ratios])
    logs = np.mean(np.log(np.vstack([r.boot for r in ratios])), axis=0)
    alpha = (1.0 - CONFIDENCE) / 2
    lo, hi = np.quantile(np.exp(logs), [alpha, 1 - alpha])
    return point, float(lo), float(hi)
