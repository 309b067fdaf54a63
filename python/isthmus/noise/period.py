# isthmus/noise/period.py: periodicity of a noise class.
# 1. From inter-arrival times: candidate periods are the clusters of inter-arrival
#    times (and fractions of the shortest, for classes that skip beats); the fundamental
#    is the longest candidate whose integer multiples explain most intervals (harmonic
#    grouping: a missed event shows as 2T, 3T, not as a new period). Each event then gets
#    its harmonic number and a least-squares line t_i = t0 + k_i T refines T to a small
#    fraction of the timestamp resolution.
# 2. Aliasing against the FTQ grid: FTQ places events on a grid of interval Q. Periods
#    below 2Q cannot be resolved (Nyquist); a period commensurate with Q (T ~ a/b Q,
#    small b) puts every event at the same few phases, so quantisation no longer
#    averages out and T is known only to about Q / (b x cycles). Both are reported.
# 3. Cross-check: a smoothed periodogram (scipy, modified Daniell weights as in seed
#    003) of the class's lost-time series; its strongest peak, with harmonics grouped,
#    must agree with (1) for the period to count as confirmed.
from __future__ import annotations

from dataclasses import dataclass, asdict
from fractions import Fraction

import numpy as np
from scipy import signal


@dataclass
class Period:
    period_s: float
    stderr_s: float
    jitter_s: float
    explained: float         # share of inter-arrival times that are multiples of the period
    missing: int             # events the harmonic numbering says were not seen
    periodogram_s: float | None = None
    confirmed: bool = False
    nyquist_ok: bool = True
    commensurate: str | None = None
    resolution_s: float = 0.0

    def as_dict(self) -> dict:
        return asdict(self)


def _clusters(d: np.ndarray, rel: float) -> list[float]:
    """Medians of groups of sorted values where neighbours differ by < rel (relative)."""
    s = np.sort(d)
    groups, cur = [], [s[0]]
    for v in s[1:]:
        if v - cur[-1] <= rel * cur[-1]:
            cur.append(v)
        else:
            groups.append(cur)
            cur = [v]
    groups.append(cur)
    return [float(np.median(g)) for g in groups if len(g) >= 2]


def _explained(d: np.ndarray, T: float, tol_abs: float) -> float:
    r = d / T
    k = np.round(r)
    ok = (k >= 1) & (np.abs(r - k) * T <= tol_abs + 0.04 * T)
    return float(np.mean(ok))


def interarrival_period(t: np.ndarray, resolution_s: float = 0.0, min_events: int = 6,
                        min_explained: float = 0.7) -> Period | None:
    """The fundamental period of event times t (seconds), or None if they are not periodic."""
    t = np.unique(np.asarray(t, dtype=np.float64))
    if len(t) < min_events:
        return None
    d = np.diff(t)
    tol_abs = 2 * resolution_s
    cands = _clusters(d, 0.05)
    if not cands:
        return None
    base = min(cands)
    cands += [base / k for k in (2, 3, 4)]
    best = None
    for T in sorted(set(cands), reverse=True):
        if T <= max(resolution_s, 1e-9):
            continue
        e = _explained(d, T, tol_abs)
        if e >= min_explained:
            best = (T, e)
            break
    if best is None:
        return None
    T, e = best
    # harmonic number of every event, then t = t0 + k T by least squares; events off the
    # grid (another class's leftovers, a stray) are dropped before the final fit
    k = np.concatenate([[0.0], np.cumsum(np.maximum(np.round(d / T), 1))])
    fit = np.polyfit(k, t, 1)
    res = t - np.polyval(fit, k)
    inlier = np.abs(res - np.median(res)) <= tol_abs + 0.1 * T
    kk, tt = k, t
    if inlier.sum() >= 3:
        kk, tt = k[inlier], t[inlier]
        fit = np.polyfit(kk, tt, 1)
        res = tt - np.polyval(fit, kk)
    T = float(fit[0])
    jitter = float(np.std(res)) if len(res) > 2 else 0.0
    sxx = float(np.sum((kk - kk.mean()) ** 2)) or 1.0
    stderr = jitter / np.sqrt(sxx) if len(res) > 2 else 0.0
    missing = int(k[-1] - (len(k) - 1))
    return Period(period_s=T, stderr_s=stderr, jitter_s=jitter, explained=e, missing=missing)


def daniell_weights(m: int) -> np.ndarray:
    """Triangular weights 1, 2, ..., m+1, ..., 2, 1 normalised (seed 003's smoothing, m = 10)."""
    w = np.concatenate([np.arange(1, m + 2), np.arange(m, 0, -1)]).astype(float)
    return w / w.sum()


def periodogram_period(t: np.ndarray, lost: np.ndarray, span_s: float, dt: float,
                       smooth: int = 10, expect: float | None = None) -> float | None:
    """The period (s) of the strongest smoothed periodogram peak of the lost-time series
    binned at dt, with harmonics grouped to their fundamental; None if no clear peak."""
    n = int(span_s / dt)
    if n < 64 or len(t) < 4:
        return None
    x = np.zeros(n)
    idx = np.clip((np.asarray(t) / dt).astype(int), 0, n - 1)
    np.add.at(x, idx, lost)
    f, p = signal.periodogram(x - x.mean(), fs=1.0 / dt, detrend=False)
    f, p = f[1:], p[1:]
    if len(p) < 4 * smooth:
        return None
    ps = np.convolve(p, daniell_weights(smooth), mode="same")
    floor = np.median(ps)
    i = int(np.argmax(ps))
    if ps[i] < 5 * floor:
        return None
    fpk = f[i]
    # harmonic grouping: the fundamental is the lowest f0 = fpk / k that is itself a peak
    # (the comb of a periodic pulse train has peaks at every multiple of f0)
    df = f[1] - f[0]
    best = fpk
    for k in range(2, 33):
        f0 = fpk / k
        if f0 < 2 * df * (smooth + 1):
            break
        j = int(round(f0 / df)) - 1
        lo, hi = max(j - smooth, 0), min(j + smooth + 1, len(ps))
        if hi > lo and ps[lo:hi].max() >= 0.2 * ps[i] and ps[lo:hi].max() > 5 * floor:
            best = f[lo + int(np.argmax(ps[lo:hi]))]
    if expect:
        # the inter-arrival period wins ties: accept any harmonic relation to it
        r = (1.0 / best) / expect
        if abs(r - round(r)) < 0.05 and round(r) >= 1:
            return float(expect * round(r)) if round(r) > 1 else float(1.0 / best)
    return float(1.0 / best)


def grid_aliasing(T: float, grid_s: float, span_s: float) -> tuple[bool, str | None, float]:
    """(T >= 2 grid, "a/b" if T/grid is near a small fraction, resolution of T in s)."""
    if grid_s <= 0:
        return True, None, 0.0
    ratio = T / grid_s
    cycles = max(span_s / T, 1.0)
    frac = Fraction(ratio).limit_denominator(8)
    near = abs(ratio - float(frac)) < 1.0 / cycles
    if near:
        return ratio >= 2, f"{frac.numerator}/{frac.denominator}", grid_s / (frac.denominator * cycles) * 2
    return ratio >= 2, None, grid_s / cycles


def class_period(t: np.ndarray, lost: np.ndarray, span_s: float, grid_s: float = 0.0,
                 resolution_s: float = 0.0) -> Period | None:
    """Everything above for one class: inter-arrival period, aliasing facts, periodogram check."""
    res = max(resolution_s, grid_s)
    per = interarrival_period(t, res)
    if per is None:
        return None
    per.nyquist_ok, per.commensurate, per.resolution_s = grid_aliasing(per.period_s, grid_s, span_s)
    per.resolution_s = max(per.resolution_s, per.stderr_s)
    dt = grid_s if grid_s > 0 else max(min(per.period_s / 16, 1e-3), 20e-6)
    pg = periodogram_period(t, lost, span_s, dt, expect=per.period_s)
    per.periodogram_s = pg
    if pg is not None:
        per.confirmed = abs(pg - per.period_s) <= max(0.02 * per.period_s, 2 * dt)
    return per
