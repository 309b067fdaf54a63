# isthmus/model/loggp.py: LogGP parameters of one level (intra-site vendor path, or the WAN
# path through the gateways), and their least-squares fit from measurements.
#
# The model (Alexandrov et al. 1995; seed 001 §1.4.6): a message of m bytes costs the
# sender o_s of CPU, leaves over (m-1)*G, crosses in L, costs the receiver o_r. A sender
# starts its next message max(g, o_s) + (m-1)*G after the previous one. The reduction of
# m bytes costs gamma0 + m*gamma (seed 001 §1.4.8), per op and type.
#
# What is measured (isthmus-bench loggp, per size m):
#   one-way time   half a ping-pong round trip:   L + o_s + o_r + (m-1)*G
#   send overhead  time inside MPI_Send of m bytes that the receiver has posted for: o_s(m)
#   recv overhead  time inside MPI_Recv of m bytes that have already arrived: o_r(m)
#   train gap      time per message of a train of n back-to-back sends:  max(g, o_s) + (m-1)*G
# G comes from the one-way line of the large sizes (from 32 KiB: below, protocol switches
# bend the line), the intercept from the small sizes' line with that slope, g from the
# train line's intercept, o_s and o_r from the small sizes, L = intercept - o_s - o_r. Every line reports its fit
# quality (R^2 and the median relative residual) so a poor fit is seen, not hidden.
from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

SMALL_BYTES = 1024  # sizes up to this give o_s and o_r (their per-byte part is negligible)
BIG_BYTES = 32768   # sizes from this give G: a protocol switch (eager to rendezvous,
                    # single copy) below it would otherwise bend the slope


@dataclass(frozen=True)
class LogGP:
    """One level's parameters; times in seconds, G and gamma in seconds per byte."""
    L: float
    o_s: float
    o_r: float
    g: float
    G: float
    gamma0: float = 0.0
    gamma: float = 0.0
    o_call: float = 0.0  # software cost of one collective call of ours (not of LogGP)
    rndv: float = 0.0    # messages larger than this wait for a handshake (2 L) first;
                         # between sites isthmus's rendezvous above ISTHMUS_EAGER (0: none)

    def one_way(self, m: float) -> float:
        return self.L + self.o_s + self.o_r + max(m - 1, 0) * self.G

    def gap(self, m: float) -> float:
        return max(self.g, self.o_s) + max(m - 1, 0) * self.G

    def reduce_cost(self, m: float) -> float:
        return self.gamma0 + m * self.gamma if m > 0 else 0.0

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "LogGP":
        try:
            return cls(**{k: float(d[k]) for k in ("L", "o_s", "o_r", "g", "G")},
                       gamma0=float(d.get("gamma0", 0.0)), gamma=float(d.get("gamma", 0.0)),
                       o_call=float(d.get("o_call", 0.0)), rndv=float(d.get("rndv", 0.0)))
        except KeyError as e:
            raise ValueError(f"LogGP parameters lack {e.args[0]!r}") from None
        except (TypeError, ValueError) as e:
            raise ValueError(f"LogGP parameters are not numbers: {e}") from None


@dataclass
class LineFit:
    """y = a + b*x by least squares weighted by 1/y, with its quality."""
    a: float
    b: float
    r2: float
    median_rel_residual: float
    max_rel_residual: float
    points: int

    def __call__(self, x):
        return self.a + self.b * np.asarray(x, dtype=float)


def fit_line(x, y, *, fixed_slope: float | None = None) -> LineFit:
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if x.shape != y.shape or x.size < (1 if fixed_slope is not None else 2):
        raise ValueError(f"a line needs at least 2 points of (x, y), got {x.size}")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise ValueError("measurements contain NaN or infinite values")
    # timing noise is proportional to the time, so residuals are weighted by 1/y: a
    # microsecond intercept is not drowned by the spread of millisecond transfers
    if np.any(y <= 0):
        raise ValueError("measured times must be positive")
    w = 1.0 / y
    if fixed_slope is not None:
        b = float(fixed_slope)
        a = float(np.sum(w * w * (y - b * x)) / np.sum(w * w))
    else:
        if np.ptp(x) == 0:
            raise ValueError("all measurements are at one size: a slope cannot be fitted")
        b, a = (float(v) for v in np.polyfit(x, y, 1, w=w))
    pred = a + b * x
    ss_res = float(np.sum((y - pred) ** 2))
    ss_tot = float(np.sum((y - np.mean(y)) ** 2))
    r2 = 1.0 - ss_res / ss_tot if ss_tot > 0 else 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.abs(y - pred) / np.where(y != 0, np.abs(y), np.nan)
    finite = np.any(np.isfinite(rel))
    mrr = float(np.nanmedian(rel)) if finite else 0.0
    xrr = float(np.nanmax(rel)) if finite else 0.0
    return LineFit(a, b, r2, mrr, xrr, int(x.size))


@dataclass
class Measurements:
    """Median times (seconds) per message size (bytes) of one level."""
    one_way: dict[int, float] = field(default_factory=dict)
    send_overhead: dict[int, float] = field(default_factory=dict)
    recv_overhead: dict[int, float] = field(default_factory=dict)
    train_gap: dict[int, float] = field(default_factory=dict)
    reduce: dict[int, float] = field(default_factory=dict)  # MPI_Reduce_local, one op/type


@dataclass
class Fit:
    params: LogGP
    lines: dict[str, LineFit]

    def quality(self) -> dict:
        return {k: {"r2": v.r2, "median_rel_residual": v.median_rel_residual,
                    "max_rel_residual": v.max_rel_residual, "points": v.points}
                for k, v in self.lines.items()}


def _small(d: dict[int, float]) -> list[float]:
    vals = [t for m, t in d.items() if m <= SMALL_BYTES]
    if not vals:
        raise ValueError(f"no measurement at a size up to {SMALL_BYTES} bytes")
    return vals


def fit_loggp(ms: Measurements, rndv: int = 0) -> Fit:
    """LogGP parameters from one level's measurements (see the top of this file). rndv: a
    rendezvous threshold of the level: G then comes from sizes above it only (the
    handshake is a step in the one-way line) and the parameters carry it."""
    for name in ("one_way", "send_overhead", "recv_overhead", "train_gap"):
        if not getattr(ms, name):
            raise ValueError(f"no {name.replace('_', ' ')} measurements")
    lines: dict[str, LineFit] = {}
    sizes = sorted(ms.one_way)
    big = [m for m in sizes if m >= BIG_BYTES and m > rndv]
    small = [m for m in sizes if m < BIG_BYTES or (rndv and m <= rndv)]
    if rndv and len(big) < 2:  # too few sizes above it: as without
        big = [m for m in sizes if m >= BIG_BYTES]
        small = [m for m in sizes if m < BIG_BYTES]
    if len(big) >= 2 and small:
        # G from the large sizes, the intercept from the small ones with that slope
        gl = fit_line([m - 1 for m in big], [ms.one_way[m] for m in big])
        G = max(gl.b, 0.0)
        ow = fit_line([max(m - 1, 0) for m in small], [ms.one_way[m] for m in small],
                      fixed_slope=G)
        lines["one_way_large"] = gl
    else:
        ow = fit_line([max(m - 1, 0) for m in sizes], [ms.one_way[m] for m in sizes])
        G = max(ow.b, 0.0)
    lines["one_way"] = ow
    o_s = float(np.median(_small(ms.send_overhead)))
    o_r = float(np.median(_small(ms.recv_overhead)))
    tsz = sorted(ms.train_gap)
    tr = fit_line([max(m - 1, 0) for m in tsz], [ms.train_gap[m] for m in tsz], fixed_slope=G)
    lines["train_gap"] = tr
    g = max(tr.a, 0.0)
    L = max(ow.a - o_s - o_r, 0.0)
    gamma0 = gamma = 0.0
    if ms.reduce:
        rsz = sorted(ms.reduce)
        if len(rsz) >= 2:
            rf = fit_line(rsz, [ms.reduce[m] for m in rsz])
            lines["reduce"] = rf
            gamma0, gamma = max(rf.a, 0.0), max(rf.b, 0.0)
    return Fit(LogGP(L=L, o_s=o_s, o_r=o_r, g=g, G=G, gamma0=gamma0, gamma=gamma,
                     rndv=float(rndv)), lines)
