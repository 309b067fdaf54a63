#!/usr/bin/env python3
# local_coll_before_after_table.py: a bench/local_coll.py record (a = vendor alone, b = this build, c = the
# build before, --compare) as a Markdown table: per collective and size the median of b
# and c over the rounds with min-max, and the per-round ratio c/b (before/after), median
# and min-max.   python3 bench/local_coll_before_after_table.py RECORDS.jsonl
import json
import statistics
import sys

rows = [r for r in map(json.loads, open(sys.argv[1])) if "round" in r]
loads = [r["load"] for r in rows]
print(f"load {min(loads):.2f}-{max(loads):.2f}")
by = {(r["vendor"], r["config"], r["op"], r["size"], r["round"]): r["median_us"] for r in rows}
rounds = sorted({r["round"] for r in rows})
print("| vendor | op | bytes | vendor alone us | after us | before us | before/after median (min-max) |")
print("|---|---|---:|---:|---:|---:|---:|")
for v, op, sz in sorted({(r["vendor"], r["op"], r["size"]) for r in rows}):
    a, b, c = ([by[(v, k, op, sz, n)] for n in rounds] for k in "abc")
    rat = [y / x for x, y in zip(b, c)]
    print(f"| {v} | {op} | {sz} | {statistics.median(a):.1f} | {statistics.median(b):.1f} "
          f"({min(b):.1f}-{max(b):.1f}) | {statistics.median(c):.1f} ({min(c):.1f}-{max(c):.1f}) | "
          f"{statistics.median(rat):.2f} ({min(rat):.2f}-{max(rat):.2f}) |")
