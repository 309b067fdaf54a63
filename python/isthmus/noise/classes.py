# isthmus/noise/classes.py: noise classes, the "bands" of detour lengths, found
# automatically: a Gaussian kernel density (Silverman's bandwidth, as in seed 003; binned
# and convolved, the way R's density() computes it) over
# log10(detour length), split at the density's minima. Bands with too few detours to be
# told apart are merged into their neighbour.
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import signal


# Narrowest kernel, in decades of detour length (~12%): detours are whole clock ticks,
# so very short ones take few distinct values, and a narrower kernel would make a band
# of every value.
MIN_BW = 0.05


@dataclass
class NoiseClass:
    index: int
    lo: float          # band bounds, seconds (lo inclusive, hi exclusive)
    hi: float
    members: np.ndarray  # indices into the detour arrays


def silverman_bw(x: np.ndarray) -> float:
    """h = 0.9 min(sd, IQR/1.34) n^(-1/5) (the seed's formula; R's bw.nrd0)."""
    n = len(x)
    sd = float(np.std(x, ddof=1)) if n > 1 else 0.0
    q75, q25 = np.percentile(x, [75, 25])
    spread = min(sd, (q75 - q25) / 1.34) or sd or 1.0
    return 0.9 * spread * n ** -0.2


def density(x: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Gaussian KDE of x on an evenly spaced grid, Silverman's bandwidth (floored at
    MIN_BW). Binned: the samples are linearly binned onto the grid and the counts
    convolved with the kernel, so 10^5 detours cost as little as 100 (the grid step is
    far below the bandwidth, so the binning error is negligible)."""
    x = np.asarray(x, dtype=np.float64)
    d = np.zeros_like(grid)
    if len(x) == 0:
        return d
    step = grid[1] - grid[0]
    if len(x) < 2 or np.ptp(x) == 0:
        d[int(np.clip(np.argmin(np.abs(grid - x[0])), 0, len(grid) - 1))] = 1.0 / step
        return d
    h = max(silverman_bw(x), MIN_BW)
    pos = np.clip((x - grid[0]) / step, 0, len(grid) - 1.000001)
    i = pos.astype(int)
    f = pos - i
    counts = np.bincount(i, weights=1 - f, minlength=len(grid)) + np.bincount(i + 1, weights=f, minlength=len(grid) + 1)[:len(grid)]
    half = int(np.ceil(5 * h / step))
    k = np.exp(-0.5 * (np.arange(-half, half + 1) * step / h) ** 2)
    k /= k.sum() * step
    return signal.fftconvolve(counts, k, mode="same")[:len(grid)] / len(x)


def find_classes(lost_s: np.ndarray, min_share: float = 0.01, min_count: int = 3,
                 depth: float = 0.25, levels: int = 3) -> list[NoiseClass]:
    """Bands of detour length (see _split), split again inside each band with the band's
    own bandwidth: Silverman's rule oversmooths mixtures of very different scales, so a
    small band next to a big one only shows at the second level."""
    lost_s = np.asarray(lost_s, dtype=np.float64)
    n = len(lost_s)
    need = max(min_count, int(np.ceil(min_share * n)))
    bands = [np.arange(n)]
    for _ in range(levels):
        nxt = []
        for b in bands:
            parts = _split(lost_s[b], need, depth)
            nxt += [b[p] for p in parts]
        if len(nxt) == len(bands):
            break
        bands = nxt
    bands.sort(key=lambda b: float(np.median(lost_s[b])))
    return [NoiseClass(k, float(lost_s[b].min()), float(np.nextafter(lost_s[b].max(), np.inf)), b)
            for k, b in enumerate(bands)]


def _split(lost_s: np.ndarray, need: int, depth: float) -> list[np.ndarray]:
    """One level of splitting: a minimum of the density splits two bands when it lies
    below `depth` x the lower of the two peaks around it; bands holding fewer than
    `need` detours are merged into the neighbour nearest in log length."""
    n = len(lost_s)
    x = np.log10(np.maximum(lost_s, 1e-12))
    if n < 2 * need or np.ptp(x) < 1e-9:
        return [np.arange(n)]
    grid = np.linspace(x.min() - 0.2, x.max() + 0.2, 1024)
    d = density(x, grid)
    peaks = [i for i in range(1, len(d) - 1) if d[i] >= d[i - 1] and d[i] > d[i + 1]]
    cuts = []
    for a, b in zip(peaks, peaks[1:]):
        m = a + int(np.argmin(d[a:b + 1]))
        if d[m] < depth * min(d[a], d[b]):
            cuts.append(grid[m])
    edges = [-np.inf] + cuts + [np.inf]
    bands = [np.where((x >= lo) & (x < hi))[0] for lo, hi in zip(edges, edges[1:])]
    # merge small bands into the neighbour whose median is nearest (in log length)
    while len(bands) > 1:
        sizes = [len(b) for b in bands]
        i = int(np.argmin(sizes))
        if sizes[i] >= need:
            break
        med = np.median(x[bands[i]]) if sizes[i] else 0.0
        left = abs(med - np.median(x[bands[i - 1]])) if i > 0 and len(bands[i - 1]) else np.inf
        right = abs(med - np.median(x[bands[i + 1]])) if i + 1 < len(bands) and len(bands[i + 1]) else np.inf
        j = i - 1 if left <= right else i + 1
        bands[j] = np.sort(np.concatenate([bands[j], bands[i]]))
        del bands[i]
    return [b for b in bands if len(b)]
