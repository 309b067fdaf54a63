#!/usr/bin/env python3
# coll_model_errors_by_staging.py: the intra model section's per-algorithm median errors of
# bench/coll_model_vendor_wan.py runs (folders holding model_predicted.json), split into the
# 11 algorithms that stage data in the executor's temporaries and the 18 others. The runs of
# docs/model.md are on the bench-results branch (bench/results/coll-issue8-tempprof/):
#   python3 bench/coll_model_errors_by_staging.py RUN_DIR [RUN_DIR ...]
import json
import statistics
import sys
from pathlib import Path

STAGING = {("allgather", "bruck"), ("alltoall", "bruck"), ("reduce", "rabenseifner"),
           ("allreduce", "rabenseifner"), ("allreduce", "ring"), ("allreduce", "exchange"),
           ("reduce_scatter", "pairwise"), ("reduce_scatter", "recursive_halving"),
           ("reduce_scatter", "ring"), ("scan", "chain"), ("scan", "recursive_doubling")}
if len(sys.argv) < 2:
    sys.exit("usage: coll_model_errors_by_staging.py RUN_DIR [RUN_DIR ...] (folders holding model_predicted.json)")
for run in sys.argv[1:]:
    errs: dict = {}
    for r in json.load(open(Path(run) / "model_predicted.json"))["rows"]:
        if r["level"] == "intra":
            errs.setdefault((r["coll"], r["alg"]), []).append(abs(r["rel_err"]))
    med = {k: statistics.median(v) for k, v in errs.items()}
    st = [m for k, m in med.items() if k in STAGING]
    ot = [m for k, m in med.items() if k not in STAGING]
    print(f"{run}: within 25%: {sum(m <= 0.25 for m in med.values())} of {len(med)}; "
          f"staging: median {100 * statistics.median(st):.0f}%, within 25% {sum(m <= .25 for m in st)} "
          f"of {len(st)}; others: median {100 * statistics.median(ot):.0f}%, within 25% "
          f"{sum(m <= .25 for m in ot)} of {len(ot)}")
