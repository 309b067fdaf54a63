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
#
# Protocol regimes (fit_regimes; LogGPS, Ino et al. 2001, and LogGOPS, Hoefler et al.
# 2009): an MPI switches protocol with the size (inline eager, eager through a copy
# buffer, rendezvous with a single copy by the receiver), and each protocol has its own
# latency and overheads; one line through all sizes follows none of them. The sizes are
# cut into contiguous ranges by the calibration medians alone (the cut with the least
# BIC over lines of the one-way time and both overheads), and each range gets its own
# parameters, with overheads that grow with the size (O_s, O_r per byte: the copy a
# protocol makes in the sender's or the receiver's CPU time, LogGOPS's O).
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace

import numpy as np

SMALL_BYTES = 1024  # sizes up to this give o_s and o_r (their per-byte part is negligible)
BIG_BYTES = 32768   # sizes from this give G: a protocol switch (eager to rendezvous,
                    # single copy) below it would otherwise bend the slope


@dataclass(frozen=True)
class LogGP:
    """One level's parameters; times in seconds, G, O_s, O_r and gamma in seconds per byte.
    regimes: protocol ranges, ((first size, LogGP), ...) in increasing order; a message
    takes the parameters of the last range that starts at or below its size (at()), and
    the level's own L..G where there are none."""
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
    early: float = 0.0   # of such a message, the first bytes that do not wait (isthmus's
                         # early data, ISTHMUS_EARLY): the rest waits max(0, 2L - early G)
    O_s: float = 0.0     # sender's CPU per byte (a copy into the transport's buffer)
    O_r: float = 0.0     # receiver's CPU per byte (a copy out of it, or a single copy)
    copy0: float = 0.0   # a local memcpy of m bytes: copy0 + m*copy (a schedule's staging)
    copy: float = 0.0
    o_barrier: float = 0.0  # the vendor's barrier on 2 ranks inside a site (0: unknown)
    o_x: float = 0.0     # two-way step: what a receive costs its rank beyond o_r + O_r m
    O_x: float = 0.0     # when the rank sends in the same step (o_x + O_x per byte that
                         # crosses both ways at once; calibrated by an exchange, 0: none)
    regimes: tuple = ()

    def at(self, m: float) -> "LogGP":
        """The parameters for an m-byte message (its protocol range's)."""
        cur = self
        for lo, p in self.regimes:
            if m >= lo:
                cur = p
            else:
                break
        return cur

    def send_cpu(self, m: float) -> float:
        p = self.at(m)
        return p.o_s + m * p.O_s

    def recv_cpu(self, m: float) -> float:
        p = self.at(m)
        return p.o_r + m * p.O_r

    def one_way(self, m: float) -> float:
        p = self.at(m)
        return p.L + self.send_cpu(m) + self.recv_cpu(m) + max(m - 1, 0) * p.G

    @property
    def has_two_way(self) -> bool:
        """Whether any range has a cost of two-way steps."""
        return any(p.o_x > 0 or p.O_x > 0 for p in (self,) + tuple(r for _, r in self.regimes))

    def two_way_cpu(self, m: float, overlap: float) -> float:
        """The extra CPU time of receiving an m-byte message while `overlap` bytes of the
        rank's own sends of the same step go the other way (two copies at once inside a
        node: they share the cores and the memory); m's range gives o_x and O_x."""
        if overlap <= 0:
            return 0.0
        p = self.at(m)
        return p.o_x + overlap * p.O_x

    def gap(self, m: float) -> float:
        p = self.at(m)
        return max(p.g, self.send_cpu(m)) + max(m - 1, 0) * p.G

    def reduce_cost(self, m: float) -> float:
        return self.gamma0 + m * self.gamma if m > 0 else 0.0

    def copy_cost(self, m: float) -> float:
        return self.copy0 + m * self.copy if m > 0 else 0.0

    def as_dict(self) -> dict:
        d = {k: v for k, v in asdict(self).items() if k != "regimes"}
        if self.regimes:
            d["regimes"] = [{"from": int(lo), **{k: getattr(p, k) for k in REGIME_KEYS}}
                            for lo, p in self.regimes]
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "LogGP":
        try:
            top = cls(**{k: float(d[k]) for k in ("L", "o_s", "o_r", "g", "G")},
                      **{k: float(d.get(k, 0.0)) for k in
                         ("gamma0", "gamma", "o_call", "rndv", "early", "O_s", "O_r", "copy0",
                          "copy", "o_barrier", "o_x", "O_x")})
        except KeyError as e:
            raise ValueError(f"LogGP parameters lack {e.args[0]!r}") from None
        except (TypeError, ValueError) as e:
            raise ValueError(f"LogGP parameters are not numbers: {e}") from None
        regs = d.get("regimes") or []
        if not isinstance(regs, list):
            raise ValueError("LogGP \"regimes\" must be a list of {\"from\": bytes, L, o_s, ...}")
        out, prev = [], -1.0
        for i, r in enumerate(regs):
            try:
                lo = float(r["from"])
                vals = {k: float(r.get(k, 0.0)) for k in REGIME_KEYS}
                for k in ("L", "o_s", "o_r", "g", "G"):
                    vals[k] = float(r[k])
            except KeyError as e:
                raise ValueError(f"LogGP regime {i} lacks {e.args[0]!r}") from None
            except (TypeError, ValueError) as e:
                raise ValueError(f"LogGP regime {i}: not a number: {e}") from None
            if not lo > prev or any(v < 0 or not math.isfinite(v) for v in vals.values()):
                raise ValueError(f"LogGP regime {i}: sizes must increase and parameters be "
                                 "finite and non-negative")
            prev = lo
            out.append((lo, replace(top, **vals)))
        return replace(top, regimes=tuple(out)) if out else top


REGIME_KEYS = ("L", "o_s", "o_r", "g", "G", "O_s", "O_r", "o_x", "O_x")


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
    exchange: dict[int, float] = field(default_factory=dict)  # MPI_Sendrecv both ways


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


def fit_loggp(ms: Measurements, rndv: int = 0, early: int = 0) -> Fit:
    """LogGP parameters from one level's measurements (see the top of this file). rndv: a
    rendezvous threshold of the level: G then comes from sizes above it only (the
    handshake is a step in the one-way line) and the parameters carry it, with early (the
    bytes sent ahead of the handshake)."""
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
                     rndv=float(rndv), early=float(early)), lines)


# ---- protocol regimes ------------------------------------------------------------------

REGIME_NOISE = 0.10  # relative error below which a better fit is not believed: medians of
                     # one calibration on a shared 2-CPU machine move by more than 10 %
                     # between runs (bench/results/coll-issue8-reanalysed/README.md on branch bench-results)
TRAIN_PACED = 1.2    # a train this much slower than the busier end's CPU shows a gap g
MAX_REGIMES = 4


@dataclass
class RegimeFit:
    first: int                 # smallest calibrated size of the range
    sizes: list[int]
    params: dict[str, float]   # L, o_s, o_r, g, G, O_s, O_r
    synchronous: bool          # the blocking send lasted as long as the transfer
    lines: dict[str, LineFit]


def _log_rss(x, y, line: LineFit) -> float:
    pred = np.maximum(line(x), 1e-3 * np.min(y))
    return float(np.sum((np.log(y) - np.log(pred)) ** 2))


def _nonneg_line(x, y) -> LineFit:
    """A weighted line with a slope of at least 0 (two noisy points may tilt down)."""
    x = np.asarray(x, dtype=float)
    if x.size >= 2 and np.ptp(x) > 0:
        f = fit_line(x, y)
        if f.b >= 0:
            return f
    return fit_line(x, y, fixed_slope=0.0)


def _segment_rss(ms: Measurements, sizes: list[int]) -> float:
    x = [max(m - 1, 0) for m in sizes]
    rss = 0.0
    for d in (ms.one_way, ms.send_overhead, ms.recv_overhead):
        y = np.array([d[m] for m in sizes])
        rss += _log_rss(x, y, _nonneg_line(x, y))
    return rss


def _partitions(n: int, k: int, least: int):
    """Cuts of range(n) into k contiguous parts of at least `least` points: the starts."""
    def rec(start, left):
        if left == 1:
            if n - start >= least:
                yield [start]
            return
        for nxt in range(start + least, n - least * (left - 1) + 1):
            for rest in rec(nxt, left - 1):
                yield [start] + rest
    yield from rec(0, k)


def find_regimes(ms: Measurements, least: int = 2, max_regimes: int = MAX_REGIMES,
                 noise: float = REGIME_NOISE) -> list[list[int]]:
    """The calibrated sizes cut into protocol ranges: among all cuts into 1..max_regimes
    contiguous ranges of at least `least` sizes, the one with the least Bayesian
    information criterion of per-range lines through the one-way time and both
    overheads (log residuals, floored at `noise`; 6 parameters per range and one per
    cut). A protocol switch is a step or a change of slope in these curves; noise
    below `noise` is not a switch."""
    sizes = sorted(ms.one_way)
    if any(m not in ms.send_overhead or m not in ms.recv_overhead for m in sizes):
        return [sizes]  # a range fitted without its overheads would extrapolate: one range
    n = 3 * len(sizes)
    best, best_bic = [sizes], math.inf
    for k in range(1, max_regimes + 1):
        for starts in _partitions(len(sizes), k, least):
            parts = [sizes[a:b] for a, b in zip(starts, starts[1:] + [len(sizes)])]
            rss = sum(_segment_rss(ms, p) for p in parts)
            bic = n * math.log(max(rss / n, noise ** 2)) + (7 * k - 1) * math.log(n)
            if bic < best_bic - 1e-9:
                best, best_bic = parts, bic
    return best


def fit_regimes(ms: Measurements, least: int = 2,
                max_regimes: int = MAX_REGIMES) -> list[RegimeFit]:
    """Per protocol range (find_regimes), parameters from that range's medians only:
      o_r + O_r m  the receive overhead's line (MPI_Recv of an arrived message is the
                   receiver's CPU: in a single-copy rendezvous it is the copy);
      o_s + O_s m  the send overhead's line, where the blocking send returned before
                   the transfer was through; where it lasted as long (send overhead +
                   receive overhead >= one-way: a synchronous protocol, the sender
                   waits for the receiver), what the one-way time leaves after the
                   receiver's part;
      L, G         the one-way line's intercept and slope less both overheads';
      g            the train's gap line with that slope, where the train is slower
                   than TRAIN_PACED times the busier end's CPU per message (else 0).
    Without both overheads at every size of the one-way time there is one range. One
    range gives []: the level's own fit_loggp is its description."""
    parts = find_regimes(ms, least, max_regimes)
    if len(parts) < 2:
        return []  # one protocol: the level's own LogGP fit (fit_loggp) describes it
    out = []
    for part in parts:
        x = np.array([max(m - 1, 0) for m in part], dtype=float)
        ow = np.array([ms.one_way[m] for m in part])
        so = np.array([ms.send_overhead[m] for m in part])
        ro = np.array([ms.recv_overhead[m] for m in part])
        owl, rol = _nonneg_line(x, ow), _nonneg_line(x, ro)
        sync = bool(np.median((so + ro) / ow) >= 1.0)
        # a synchronous send's own CPU time is not observable from its duration: take
        # the part of the one-way time the receiver does not account for (floored at a
        # nanosecond: the weighted line needs positive times)
        sx = np.maximum(np.minimum(so, ow - ro), 1e-9) if sync else so
        sol = _nonneg_line(x, sx)
        O_r, O_s = rol.b, sol.b
        G = max(owl.b - O_r - O_s, 0.0)
        L = max(owl.a - rol.a - sol.a, 0.0)
        # g: only where a train is clearly slower than both ends' CPU per message (the
        # simulator already makes a train wait for whichever end is busier: a receiver
        # that copies every message of a rendezvous paces it, that is not a gap)
        tg = [m for m in part if m in ms.train_gap]
        g = 0.0
        tl = None
        if tg:
            tl = fit_line([max(m - 1, 0) for m in tg], [ms.train_gap[m] for m in tg],
                          fixed_slope=G + O_s)
            cpu = [max(sol(max(m - 1, 0)), rol(max(m - 1, 0)), 1e-12) for m in tg]
            if np.median([ms.train_gap[m] / c for m, c in zip(tg, cpu)]) > TRAIN_PACED:
                g = max(tl.a, 0.0)
        lines = {"one_way": owl, "send_overhead": sol, "recv_overhead": rol}
        if tl is not None:
            lines["train_gap"] = tl
        out.append(RegimeFit(part[0], part, {"L": L, "o_s": max(sol.a, 0.0),
                                             "o_r": max(rol.a, 0.0), "g": g, "G": G,
                                             "O_s": O_s, "O_r": O_r}, sync, lines))
    return out


def with_regimes(base: LogGP, regs: list[RegimeFit]) -> LogGP:
    """base carrying the ranges (the first one from size 0)."""
    if len(regs) < 2:
        return base
    out = tuple((0 if i == 0 else r.first, replace(base, **r.params, regimes=()))
                for i, r in enumerate(regs))
    return replace(base, regimes=out)
