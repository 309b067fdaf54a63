#!/usr/bin/env python3
"""local_coll_vendor_ratio_table.py: Markdown tables from bench/local_coll.py records: per vendor, op and size the vendor
alone's median, each isthmus configuration's median and its per-round ratio to the
vendor (median and min-max over rounds), and how many of the issue's 28 points
(allreduce, reduce, reduce_scatter, scan x 7 sizes) have a median ratio <= 1.00.

    python3 bench/local_coll_vendor_ratio_table.py RECORDS.jsonl [--labels b=after,c=before]
"""
import argparse
import collections
import json
import statistics as st

TARGET = ("allreduce", "reduce", "reduce_scatter", "scan")

ap = argparse.ArgumentParser()
ap.add_argument("records")
ap.add_argument("--labels", default="b=isthmus,c=before")
args = ap.parse_args()
labels = dict(kv.split("=", 1) for kv in args.labels.split(","))
t = collections.defaultdict(dict)  # (vendor, op, size) -> config -> {round: median}
loads = []
meta = None
for line in open(args.records):
    r = json.loads(line)
    if "meta" in r:
        meta = r["meta"]
        continue
    if "round" not in r:
        continue
    t[(r["vendor"], r["op"], r["size"])].setdefault(r["config"], {})[r["round"]] = r["median_us"]
    loads.append(r["load"])
cfgs = [c for c in ("b", "c") if any(c in v for v in t.values())]
print(f"rounds: {meta['rounds']}, load average (1 min) over the records: "
      f"{min(loads):.2f}-{max(loads):.2f} (median {st.median(loads):.2f})\n")
for vendor in sorted({k[0] for k in t}):
    head = ["op", "size", "vendor alone (us)"]
    for c in cfgs:
        head += [f"{labels.get(c, c)} (us)", f"{labels.get(c, c)}/vendor, median (min-max)"]
    print(f"**{vendor}**\n")
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join(["---"] * 2 + ["---:"] * (len(head) - 2)) + "|")
    wins = collections.Counter()
    for (v, op, size) in sorted(k for k in t if k[0] == vendor):
        d = t[(v, op, size)]
        a = d["a"]
        row = [op, str(size), f"{st.median(a.values()):.2f}"]
        for c in cfgs:
            rr = [d[c][k] / a[k] for k in a if k in d[c]]
            m = st.median(rr)
            row += [f"{st.median(d[c].values()):.2f}", f"{m:.2f} ({min(rr):.2f}-{max(rr):.2f})"]
            if op in TARGET and m <= 1.0:
                wins[c] += 1
        print("| " + " | ".join(row) + " |")
    n = sum(1 for k in t if k[0] == vendor and k[1] in TARGET)
    print()
    for c in cfgs:
        print(f"- {labels.get(c, c)} at least as fast as the vendor (median ratio <= 1.00): "
              f"{wins[c]} of {n} points of allreduce, reduce, reduce_scatter, scan "
              f"({100 * wins[c] / n:.0f}%)")
    print()
