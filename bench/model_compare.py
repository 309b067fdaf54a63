#!/usr/bin/env python3
"""Two analyses of the same collective measurements side by side (bench/coll_model_vendor_wan.py
--reanalyze writes each as model_predicted.json): per level and algorithm the median
absolute relative error of each, how many algorithms are within 25%, and at how many
points each model's pick is within 10% of the best measured algorithm.

    python3 bench/model_compare.py BEFORE/model_predicted.json AFTER/model_predicted.json \
        [--names "one LogGP,protocol ranges"]
    python3 bench/model_compare.py RUN1/model_predicted.json RUN2/model_predicted.json --noise

Markdown on stdout.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys


def load(path: str) -> list[dict]:
    return json.load(open(path))["rows"]


def per_alg(rows):
    g: dict[tuple, list[float]] = {}
    for r in rows:
        g.setdefault((r["level"], r["p"], r["coll"], r["alg"]), []).append(r["rel_err"])
    return {k: statistics.median(v) for k, v in g.items()}


def picks(rows):
    pts: dict[tuple, list[dict]] = {}
    for r in rows:
        pts.setdefault((r["level"], r["p"], r["coll"], r["size"]), []).append(r)
    out = {}
    for k, rs in pts.items():
        best = min(rs, key=lambda r: r["measured_s"])
        pick = min(rs, key=lambda r: r["predicted_s"])
        out[k] = (pick["alg"], pick["measured_s"] / best["measured_s"])
    return out


def noise(ra, rb) -> int:
    """Per algorithm, the median over sizes of |b - a| / a of two runs' measured times."""
    key = lambda r: (r["level"], r["p"], r["coll"], r["alg"], r["size"])
    mb = {key(r): r["measured_s"] for r in rb}
    g: dict[tuple, list[float]] = {}
    for r in ra:
        if key(r) in mb:
            g.setdefault(key(r)[:4], []).append(abs(mb[key(r)] - r["measured_s"]) / r["measured_s"])
    out = ["| level | ranks/sites | collective | algorithm | median run-to-run difference | max |",
           "|---|---:|---|---|---:|---:|"]
    for k, v in sorted(g.items()):
        out.append(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | {statistics.median(v) * 100:.0f}% | "
                   f"{max(v) * 100:.0f}% |")
    allm = [statistics.median(v) for v in g.values()]
    out += ["", f"Algorithms whose two runs differ by a median of at most 25%: "
            f"{sum(x <= 0.25 for x in allm)} of {len(allm)}; median over algorithms "
            f"{statistics.median(allm) * 100:.0f}%."]
    print("\n".join(out))
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--names", default="before,after")
    ap.add_argument("--noise", action="store_true",
                    help="compare the two files' measured times instead (two runs of the "
                         "same measurements): how far the measurements move on their own")
    a = ap.parse_args()
    if a.noise:
        return noise(load(a.before), load(a.after))
    nb, na = a.names.split(",")
    rb, ra = load(a.before), load(a.after)
    eb, ea = per_alg(rb), per_alg(ra)
    if set(eb) != set(ea):
        print("the two analyses are not of the same measurements", file=sys.stderr)
        return 1
    out = [f"| level | ranks/sites | collective | algorithm | {nb} | {na} |",
           "|---|---:|---|---|---:|---:|"]
    for k in sorted(eb):
        mark = lambda e: f"{e * 100:.0f}%" + (" ✓" if e <= 0.25 else "")
        out.append(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | {mark(eb[k])} | {mark(ea[k])} |")
    out.append("")
    for lvl in sorted({k[0] for k in eb}):
        ks = [k for k in eb if k[0] == lvl]
        out.append(f"- {lvl}: within 25%: {nb} {sum(eb[k] <= 0.25 for k in ks)} of {len(ks)}, "
                   f"{na} {sum(ea[k] <= 0.25 for k in ks)} of {len(ks)}; median of the "
                   f"algorithms' median errors: {nb} "
                   f"{statistics.median(eb[k] for k in ks) * 100:.0f}%, {na} "
                   f"{statistics.median(ea[k] for k in ks) * 100:.0f}%")
    pb, pa = picks(rb), picks(ra)
    for lvl in sorted({k[0] for k in pb}):
        ks = [k for k in pb if k[0] == lvl]
        out.append(f"- {lvl}: the pick within 10% of the measured best: {nb} "
                   f"{sum(pb[k][1] <= 1.10 for k in ks)} of {len(ks)}, {na} "
                   f"{sum(pa[k][1] <= 1.10 for k in ks)} of {len(ks)}")
    out.append(f"- all points: {nb} {sum(v[1] <= 1.10 for v in pb.values())} of {len(pb)}, "
               f"{na} {sum(v[1] <= 1.10 for v in pa.values())} of {len(pa)}")
    out += ["", f"| level | ranks/sites | collective | size | {nb} picks (× best) | "
            f"{na} picks (× best) |", "|---|---:|---|---:|---|---|"]
    for k in sorted(pb):
        if pb[k] != pa[k] or pa[k][1] > 1.10:
            out.append(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | {pb[k][0]} ({pb[k][1]:.2f}) | "
                       f"{pa[k][0]} ({pa[k][1]:.2f}) |")
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
