# tests/bench_fakes.py: synthetic isthmus-bench records and launch results, so campaign,
# resume, compare, plot and report logic is tested fast and deterministically.
from __future__ import annotations

import numpy as np

from isthmus.bench.launchers import LaunchResult

def fake_plan(name: str, runs: int, extra: str = "") -> str:
    """A plan of latency and bw (plus `extra` benchmarks), vendor against isthmus."""
    return (f'[campaign]\nname = "{name}"\nruns = {runs}\n[matrix]\nranks = [2]\n'
            'libraries = ["openmpi", "isthmus-openmpi"]\n'
            '[[benchmark]]\nname = "latency"\n[[benchmark]]\nname = "bw"\n' + extra)


BASE = {"latency": 10.0, "bandwidth": 1000.0, "time": 50.0}


def record(benchmark, metric, size, samples, **params):
    s = np.asarray(samples, float)
    return {"isthmus_bench": 1, "benchmark": benchmark, "metric": metric,
            "unit": {"latency": "us", "bandwidth": "MB/s"}.get(metric, "us"), "size": size,
            "status": "ok", "iters": 10, "warmup": 10, "reps": len(samples),
            "min": float(s.min()), "median": float(np.median(s)), "p99": float(np.quantile(s, 0.99)),
            "max": float(s.max()), "samples": list(map(float, s)), **params,
            "config": {"library": "fake", "library_version": "fake 1.0", "ranks": 2, "sites": ["A"]}}


def fake_result(launch, factor=1.0, seed=0, fail=False):
    """Records as isthmus-bench would print them for this launch; `factor` scales time."""
    rng = np.random.default_rng(seed)
    recs = []
    metric = {"bw": "bandwidth", "latency": "latency"}.get(launch.benchmark, "time")
    for size in (8, 1024, 65536):
        base = BASE[metric] * (1 + size / 4096)
        vals = base * (1 / factor if metric == "bandwidth" else factor) * rng.lognormal(0, 0.05, 5)
        params = {"op": "allreduce"} if launch.benchmark == "coll" else {"peer": 1}
        recs.append(record(launch.benchmark, metric, size, vals, **params))
    if fail:
        return LaunchResult(recs[:1], 1, "fake-cmd " + launch.benchmark, 0.1, "boom: rank 1 died\n")
    return LaunchResult(recs, 0, "fake-cmd " + launch.benchmark, 0.1, "")
