# isthmus/noise/scale.py: what the measured noise costs a bulk-synchronous code at scale.
# Model: every iteration each of P processes computes W, then joins a collective of
# R = ceil(log2 P) rounds of latency L. A process is delayed by every detour of its core
# that falls into its busy time (a detour in progress at the start counts with its
# remainder). The iteration ends when the slowest process is through, so
#     T(P) = W + R L + E[ max over the P processes of D_p(W + R L) ],
# where D_p(x) is the delay a process suffers while doing x of work from a random start
# in its core's measured detour trace. Noise-free, T0 = W + R L; slowdown = T(P) / T0.
# Where the random start lies matters with long detours (the inspection paradox):
#  - "free" (default): the iteration starts while the process runs (it has just left the
#    collective), so starts are uniform over the core's free time; a detour delays at
#    most the iterations it falls into. This is what MPI-Jitter times as t_compute.
#  - "wall": starts uniform in wall time, a detour in progress counts with its
#    remainder: a 50 ms detour covering 5% of the time then delays 5% of iterations by
#    25 ms on average. An upper bound for processes woken by others at random moments.
#  - unsynchronised noise: processes start at independent random phases; P processes
#    are spread evenly over the measured cores, and the maximum's distribution is
#    prod_c F_c(x)^(n_c), evaluated exactly from the empirical delay distributions;
#  - co-scheduled noise: every node's noise happens at the same moments (same phase on
#    all nodes), so the maximum over P is the maximum over the measured cores at one
#    shared random start, whatever P is.
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from ..errors import IsthmusError
from .runs import Core, Run
from .summary import fmt_s


def merged_detours(core: Core) -> tuple[np.ndarray, np.ndarray]:
    """Detours of a core as sorted, non-overlapping (start, end) in seconds from its run start."""
    s = core.seconds(core.start)
    e = s + core.lost / core.hz
    order = np.argsort(s)
    s, e = s[order], e[order]
    ms, me = [], []
    for a, b in zip(s, e):
        if ms and a <= me[-1]:
            me[-1] = max(me[-1], b)
        else:
            ms.append(a)
            me.append(b)
    return np.asarray(ms), np.asarray(me)


def delays(starts: np.ndarray, ends: np.ndarray, t: np.ndarray, work: float) -> np.ndarray:
    """For each start time in t, how much later than t + work the work finishes, given
    sorted non-overlapping detours [starts, ends). Vectorised through the free-time
    function F(x) = x - (detour time before x): the work ends at the first x with
    F(x) = F(t) + work."""
    t = np.asarray(t, dtype=np.float64)
    if len(starts) == 0:
        return np.zeros(len(t))
    dur = ends - starts
    busy_before = np.concatenate([[0.0], np.cumsum(dur)])      # detour time before detour j
    free_at_start = starts - busy_before[:-1]                   # F(starts[j])
    k = np.searchsorted(starts, t, side="right") - 1            # last detour starting at or before t
    inside = (k >= 0) & (t < ends[np.maximum(k, 0)])
    f_t = np.where(inside, free_at_start[np.maximum(k, 0)], t - busy_before[k + 1])
    target = f_t + work
    j = np.searchsorted(free_at_start, target, side="left")    # detours starting before the work is done
    finish = target + busy_before[j]
    return finish - t - work


def starts(s: np.ndarray, e: np.ndarray, hi: float, n: int, rng: np.random.Generator, mode: str) -> np.ndarray:
    """n random start times in [0, hi): uniform in wall time, or uniform over free time
    (never inside a detour)."""
    if mode == "wall" or len(s) == 0:
        return rng.uniform(0, hi, n)
    busy_before = np.concatenate([[0.0], np.cumsum(e - s)])
    free_at_start = s - busy_before[:-1]
    k = int(np.searchsorted(s, hi))
    free_hi = hi - busy_before[k] if k == 0 or hi >= e[k - 1] else free_at_start[k - 1]
    u = rng.uniform(0, max(free_hi, 0.0), n)
    return u + busy_before[np.searchsorted(free_at_start, u, side="right")]


def _samples(core: Core, work: float, n: int, rng: np.random.Generator, mode: str = "free") -> np.ndarray:
    s, e = merged_detours(core)
    span = core.span_s
    if span <= work * 4:
        raise IsthmusError(f"cpu {core.cpu}: the trace ({span:.3f} s) is too short for work of {fmt_s(work)}")
    t = starts(s, e, _latest_start(span, work), n, rng, mode)
    return delays(s, e, t, work)


def _latest_start(span: float, work: float) -> float:
    """Starts are drawn from the trace's first part, so that delayed work still ends
    inside the trace (beyond it nothing is known)."""
    return max(span - 3 * work, span / 2)


def expected_max(samples: list[np.ndarray], counts: list[int]) -> float:
    """E[max] of sum(counts) independent draws, counts[c] of them from samples[c]."""
    allv = np.unique(np.concatenate(samples))
    logF = np.zeros(len(allv))
    for smp, k in zip(samples, counts):
        if k == 0:
            continue
        srt = np.sort(smp)
        F = np.searchsorted(srt, allv, side="right") / len(srt)
        with np.errstate(divide="ignore"):
            logF += k * np.log(F)
    Fmax = np.exp(logF)
    # E[X] = sum over the support of x * P(max == x) for a discrete distribution
    pmf = np.diff(np.concatenate([[0.0], Fmax]))
    return float(np.sum(allv * pmf))


def p_grid(pmax: int) -> list[int]:
    out, p = [], 2
    while p <= pmax:
        out.append(p)
        p *= 2 if p < 16 else 4
    if out[-1] != pmax:
        out.append(pmax)
    return out


def predict(run: Run, work: float, latency: float, pmax: int, n: int, seed: int, mode: str = "free") -> dict:
    cores = [c for c in run.cores]
    if not cores:
        raise IsthmusError(f"{run.path}: no probed cores to model from")
    rng = np.random.default_rng(seed)
    rows = []
    cache: dict[float, list[np.ndarray]] = {}
    cos_cache: dict[float, float] = {}
    for P in p_grid(pmax):
        R = math.ceil(math.log2(P))
        busy = work + R * latency
        if busy not in cache:
            cache[busy] = [_samples(c, busy, n, rng, mode) for c in cores]
            # co-scheduled: one shared start for every core (wall time: the cores' free
            # times differ, so there is no common "free" start)
            s_t = rng.uniform(0, _latest_start(min(c.span_s for c in cores), busy), n)
            per = [delays(*merged_detours(c), s_t, busy) for c in cores]
            cos_cache[busy] = float(np.mean(np.max(np.vstack(per), axis=0)))
        smp = cache[busy]
        k = [P // len(cores) + (1 if i < P % len(cores) else 0) for i in range(len(cores))]
        unsync = busy + expected_max(smp, k)
        cos = busy + cos_cache[busy] if P >= len(cores) else busy + expected_max(smp, k)
        rows.append({"P": P, "rounds": R, "t0_s": busy, "unsync_s": unsync, "cosched_s": cos,
                     "slowdown_unsync": unsync / busy, "slowdown_cosched": cos / busy})
    return {"work_s": work, "latency_s": latency, "start": mode, "cores": [f"{c.node}:cpu{c.cpu}" for c in cores],
            "noise_fraction": [c.noise_fraction for c in cores], "samples": n, "rows": rows}


def validate_mpijitter(run: Run, mj_dir: Path, n: int, seed: int, mode: str = "free") -> dict:
    """The model at P = 2 against a real 2-rank MPI-Jitter run: W = the run's noise-free
    compute time (its minimum), the ranks' cores taken from the trace by cpu number;
    compared on the mean of the per-iteration maximum compute time (collective excluded:
    the probe times the compute phase alone)."""
    f = mj_dir / "mpi-jitter.json" if mj_dir.is_dir() else mj_dir
    try:
        mj = json.loads(f.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise IsthmusError(f"{f}: not an MPI-Jitter result ({e})") from None
    ranks = mj["ranks"]
    if len(ranks) != 2:
        raise IsthmusError(f"{f}: the validation needs a 2-rank run (this one has {len(ranks)})")
    by_cpu = {c.cpu: c for c in run.cores}
    cores = []
    for r in ranks:
        if r["cpu"] not in by_cpu:
            raise IsthmusError(f"{f}: rank {r['rank']} ran on cpu {r['cpu']}, which the noise run did not probe "
                               f"(probed: {sorted(by_cpu)})")
        cores.append(by_cpu[r["cpu"]])
    W = min(r["t_compute_min_s"] for r in ranks)
    measured = float(np.mean(mj["iterations"]["t_compute_max_s"]))
    rng = np.random.default_rng(seed)
    smp = [_samples(c, W, n, rng, mode) for c in cores]
    pred = W + expected_max(smp, [1] * len(smp))
    s_meas, s_pred = measured / W, pred / W
    return {"mpi_jitter": str(f), "work_s": W, "start": mode, "measured_s": measured, "predicted_s": pred,
            "slowdown_measured": s_meas, "slowdown_predicted": s_pred,
            "relative_error": (s_pred - s_meas) / s_meas, "lost_rel": mj["summary"]["lost_rel"]}


def print_scale(res: dict, val: dict | None) -> None:
    print(f"# bulk-synchronous model: W = {fmt_s(res['work_s'])}, L = {fmt_s(res['latency_s'])} per round, "
          f"starts uniform in {res['start']} time, noise from {', '.join(res['cores'])}")
    print(f"{'P':>9} {'rounds':>6} {'noise-free':>12} {'unsync':>12} {'slowdown':>9} {'co-sched':>12} {'slowdown':>9}")
    for r in res["rows"]:
        print(f"{r['P']:>9} {r['rounds']:>6} {fmt_s(r['t0_s']):>12} {fmt_s(r['unsync_s']):>12} "
              f"{r['slowdown_unsync']:>9.3f} {fmt_s(r['cosched_s']):>12} {r['slowdown_cosched']:>9.3f}")
    if val:
        print(f"# validation against {val['mpi_jitter']} (P = 2, W = {fmt_s(val['work_s'])}): measured slowdown "
              f"{val['slowdown_measured']:.3f}, predicted {val['slowdown_predicted']:.3f} "
              f"({100 * val['relative_error']:+.1f}%)")


def plot_scale(res: dict, out: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    P = [r["P"] for r in res["rows"]]
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.semilogx(P, [r["slowdown_unsync"] for r in res["rows"]], "o-", label="unsynchronised noise")
    ax.semilogx(P, [r["slowdown_cosched"] for r in res["rows"]], "s--", label="co-scheduled noise")
    ax.set_xlabel("processes P")
    ax.set_ylabel("slowdown T(P) / noise-free")
    ax.set_title(f"W = {fmt_s(res['work_s'])}, L = {fmt_s(res['latency_s'])} x ceil(log2 P)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
