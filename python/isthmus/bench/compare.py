# isthmus/bench/compare.py: `isthmus bench compare A B`: match the points of two result
# sets (e.g. the vendor alone and isthmus, from one campaign) and compute, per point, the
# ratio of medians B/A with a bootstrap confidence interval over runs and repetitions.
# Summaries over points are geometric means of speed-ups (B relative to A, > 1 means B
# is better: lower time/latency, or higher bandwidth/rate).
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from ..errors import IsthmusError
from .results import Results, load
from .stats import Ratio, geomean_ratio, median_ratio

# Parameters that identify a point besides benchmark, metric, size and ranks.
PARAM_KEYS = ("op", "peer", "window", "pairs", "partners", "remote_partners", "background", "bg_size",
              "fraction")
FILTER_KEYS = ("library", "profile", "ranks", "sites", "benchmark", "campaign", "link", "run")
HIGHER_IS_BETTER = {"bandwidth", "rate"}


@dataclass(frozen=True)
class Selector:
    paths: tuple[Path, ...]
    where: tuple[tuple[str, str], ...]

    def text(self) -> str:
        w = ",".join(f"{k}={v}" for k, v in self.where)
        return " ".join(str(p) for p in self.paths) + (f" @{w}" if w else "")


def parse_selector(text: str) -> Selector:
    """PATH[@key=value,...]: results folder or file, optionally filtered."""
    path, _, filt = text.partition("@")
    where = []
    if filt:
        for part in filt.split(","):
            k, eq, v = part.partition("=")
            if not eq or k not in FILTER_KEYS or not v:
                raise IsthmusError(f"{text!r}: filter {part!r} must be key=value with key one of "
                                   f"{', '.join(FILTER_KEYS)}")
            where.append((k, v))
    return Selector((Path(path),), tuple(where))


def select(results: Results, where) -> list[dict]:
    return [p for p in results.ok_points if all(str(p.get(k)) == v for k, v in where)]


def point_id(rec: dict, ignore: set[str]) -> tuple:
    ident = [("benchmark", rec.get("benchmark")), ("metric", rec.get("metric")),
             ("size", rec.get("size"))]
    for k in ("ranks", "profile", "library"):
        if k not in ignore:
            ident.append((k, rec.get(k)))
    ident += [(k, rec.get(k)) for k in PARAM_KEYS if k in rec]
    return tuple(ident)


@dataclass
class PointComparison:
    ident: tuple
    metric: str
    unit: str
    a_median: float
    b_median: float
    ratio: Ratio
    a_runs: int
    b_runs: int

    @property
    def higher_is_better(self) -> bool:
        return self.metric in HIGHER_IS_BETTER

    @property
    def speedup(self) -> float:
        return self.ratio.value if self.higher_is_better else 1.0 / self.ratio.value

    @property
    def speedup_ci(self) -> tuple[float, float]:
        if self.higher_is_better:
            return self.ratio.low, self.ratio.high
        return 1.0 / self.ratio.high, 1.0 / self.ratio.low

    def field(self, key: str):
        return dict(self.ident).get(key)

    def label(self) -> str:
        d = dict(self.ident)
        parts = [str(d["benchmark"])]
        for k in ("op", "background", "partners", "fraction", "peer", "ranks"):
            if d.get(k) is not None and not (k == "peer" and d["benchmark"] in ("latency", "bw", "bibw")
                                              and d[k] == 1):
                parts.append(f"{k}={d[k]}" if k not in ("op",) else str(d[k]))
        return " ".join(parts)


@dataclass
class Comparison:
    a: Selector
    b: Selector
    points: list[PointComparison]
    only_a: int
    only_b: int

    def groups(self) -> dict[str, list[PointComparison]]:
        out: dict[str, list[PointComparison]] = defaultdict(list)
        for p in self.points:
            d = dict(p.ident)
            key = d["benchmark"] + (f" {d['op']}" if d.get("op") else "") + f" ({p.metric})"
            out[key].append(p)
        return dict(out)

    def summary(self) -> list[tuple[str, int, float, float, float]]:
        """(group, points, geometric-mean speed-up, CI low, CI high) per group, then all."""
        rows = []
        for name, pts in sorted(self.groups().items()):
            rows.append((name, len(pts), *_geo_speedup(pts)))
        if self.points:
            rows.append(("all points", len(self.points), *_geo_speedup(self.points)))
        return rows


def _geo_speedup(pts: list[PointComparison]) -> tuple[float, float, float]:
    flipped = []
    for p in pts:
        r = p.ratio
        if p.higher_is_better:
            flipped.append(r)
        else:
            flipped.append(Ratio(1 / r.value, 1 / r.high, 1 / r.low, 1 / r.boot))
    return geomean_ratio(flipped)


def _runs_by_point(recs: list[dict], ignore: set[str]) -> dict[tuple, list[dict]]:
    out: dict[tuple, list[dict]] = defaultdict(list)
    for r in recs:
        if r.get("samples"):
            out[point_id(r, ignore)].append(r)
    return out


def compare(a: Selector, b: Selector, a_results: Results | None = None,
            b_results: Results | None = None) -> Comparison:
    a_res = a_results or load(a.paths)
    b_res = b_results or load(b.paths)
    a_recs, b_recs = select(a_res, a.where), select(b_res, b.where)
    if not a_recs:
        raise IsthmusError(f"A ({a.text()}) selects no successful measurements")
    if not b_recs:
        raise IsthmusError(f"B ({b.text()}) selects no successful measurements")
    ignore = {k for k, _ in a.where} | {k for k, _ in b.where}
    if a.paths != b.paths and not ignore:
        ignore = {"library"} if {r.get("library") for r in a_recs} != {r.get("library") for r in b_recs} else set()
    a_pts, b_pts = _runs_by_point(a_recs, ignore), _runs_by_point(b_recs, ignore)
    common = [k for k in a_pts if k in b_pts]
    if not common:
        raise IsthmusError(f"A ({a.text()}) and B ({b.text()}) have no point in common (same "
                           "benchmark, size, ranks, profile and parameters); check the filters")
    points = []
    for i, k in enumerate(common):
        ar, br = a_pts[k], b_pts[k]
        ratio = median_ratio([r["samples"] for r in ar], [r["samples"] for r in br], seed=1 + i)
        import numpy as np

        points.append(PointComparison(k, ar[0]["metric"], ar[0].get("unit", ""),
                                      float(np.median(np.concatenate([r["samples"] for r in ar]))),
                                      float(np.median(np.concatenate([r["samples"] for r in br]))),
                                      ratio, len(ar), len(br)))
    return Comparison(a, b, points, len(set(a_pts) - set(b_pts)), len(set(b_pts) - set(a_pts)))
