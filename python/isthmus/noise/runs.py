# isthmus/noise/runs.py: loading a probe run directory (the JSON files isthmus-noise
# writes, plus the trace and injector log `isthmus noise run` adds) into per-core detour
# lists. A detour is one stretch of time the probe lost: for selfish and FWQ one outlier
# sample; for FTQ a run of adjacent outlier slots merged (a detour longer than an
# interval spans several slots: partial, zero-count ones, partial).
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import IsthmusError


@dataclass
class Core:
    """One probed core: its detours (ticks, absolute) and the probe's own totals."""

    node: str
    cpu: int
    tid: int
    probe: str
    hz: float
    t_begin: int
    t_end: int
    noise_fraction: float
    samples: int
    start: np.ndarray          # detour start, ticks
    lost: np.ndarray           # time lost, ticks
    window: np.ndarray         # end of the interval the detour lies in, ticks (>= start + lost)
    overhead: dict | None = None
    interval: int = 0          # FTQ interval, ticks
    dropped_events: int = 0
    dropped_lost: int = 0      # ticks lost in the detours beyond --max-events (counted, not kept)
    timer: dict | None = None  # the clock's check on this core (back-to-back reads)
    calib: dict | None = None  # baseline and threshold, and which rule set the threshold
    raw: dict = field(default_factory=dict)

    @property
    def span_s(self) -> float:
        return (self.t_end - self.t_begin) / self.hz

    def seconds(self, ticks) -> np.ndarray:
        return (np.asarray(ticks, dtype=np.float64) - self.t_begin) / self.hz


@dataclass
class Run:
    path: Path
    probe: str
    files: list[dict]
    cores: list[Core]
    trace: dict | None = None          # facts from `noise run` about the trace
    inject: dict | None = None         # the injector's log, if one ran
    attribution_note: str = ""

    @property
    def meta(self) -> dict:
        return self.files[0]["meta"] if self.files else {}


def _ftq_detours(events: list, interval: int, best: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    starts, losts, windows = [], [], []
    cur = None
    for t, value, lost, slots in events:
        end = t + slots * interval
        if cur is not None and t == cur[2]:
            cur[1] += lost
            cur[2] = end
            continue
        if cur is not None:
            starts.append(cur[0]); losts.append(cur[1]); windows.append(cur[2])
        # a detour spilling out of a counted slot sits at that slot's end: counting ran first
        first = t + (value * interval // best if best else 0) if value else t
        cur = [first, lost, end]
    if cur is not None:
        starts.append(cur[0]); losts.append(cur[1]); windows.append(cur[2])
    s = np.asarray(starts, dtype=np.int64)
    lo = np.asarray(losts, dtype=np.int64)
    w = np.asarray(windows, dtype=np.int64)
    return s, lo, w


def load_core(node: str, doc: dict, c: dict) -> Core:
    probe = doc["probe"]
    hz = float(doc["meta"]["clock"]["hz"])
    ev = c.get("events", [])
    interval = int(doc["params"].get("interval_ticks", 0))
    if probe == "ftq":
        start, lost, window = _ftq_detours(ev, interval, int(c["baseline"]))
    else:
        arr = np.asarray(ev, dtype=np.int64).reshape(-1, 4)
        start, lost = arr[:, 0].copy(), arr[:, 2].copy()
        window = arr[:, 0] + arr[:, 1]
    return Core(node=node, cpu=int(c["cpu"]), tid=int(c.get("tid", 0)), probe=probe, hz=hz,
                t_begin=int(c["t_begin"]), t_end=int(c["t_end"]), noise_fraction=float(c["noise_fraction"]),
                samples=int(c["samples"]), start=start, lost=lost, window=window, overhead=c.get("overhead"),
                interval=interval, dropped_events=int(c.get("dropped_events", 0)),
                dropped_lost=int(c.get("dropped_lost", 0)), timer=c.get("timer"), calib=c.get("calib"))


def _to_rank0(core: Core, m: dict, hz0: float) -> None:
    """Map a core's ticks onto rank 0's clock (node map t_node = a + b t_rank0)."""
    a, b = float(m["clock_a"]), float(m["clock_b"])
    conv = lambda t: np.rint((np.asarray(t, dtype=np.float64) - a) / b).astype(np.int64)  # noqa: E731
    core.start, core.window = conv(core.start), conv(core.window)
    core.lost = np.rint(core.lost / b).astype(np.int64)
    core.t_begin, core.t_end = int(conv(core.t_begin)), int(conv(core.t_end))
    core.hz = hz0


def load_run(path: str | Path) -> Run:
    """Load every probe JSON file in a run directory (or one file)."""
    p = Path(path)
    files = [p] if p.is_file() else sorted(f for f in p.glob("*.json")
                                           if f.name not in ("run.json", "inject.json", "analysis.json", "mpi-jitter.json",
                                                         "clockmap.json", "scale.json"))
    if not files:
        raise IsthmusError(f"{p}: no probe run files (*.json from isthmus-noise) found")
    d = p if p.is_dir() else p.parent
    clockmap = json.loads((d / "clockmap.json").read_text()) if (d / "clockmap.json").exists() else None
    docs, cores = [], []
    for f in files:
        try:
            doc = json.loads(f.read_text())
        except (OSError, json.JSONDecodeError) as e:
            raise IsthmusError(f"{f}: not a readable isthmus-noise run file ({e})") from None
        if doc.get("format") != "isthmus-noise/1" or "cores" not in doc:
            continue
        docs.append(doc)
        node = doc["meta"].get("hostname", f.stem)
        mpi = doc.get("mpi")
        if mpi:
            node = f"{node} (rank {mpi['rank']})"
        for c in doc["cores"]:
            if c.get("pin_error") or c.get("error"):
                continue
            core = load_core(node, doc, c)
            if mpi and clockmap:
                # every rank's events on rank 0's time base (run with --mpi)
                _to_rank0(core, clockmap["nodes"][mpi["node"]], float(clockmap["hz"]))
            cores.append(core)
    if not docs:
        raise IsthmusError(f"{p}: no isthmus-noise probe results in {', '.join(f.name for f in files)}")
    probes = {d["probe"] for d in docs}
    run = Run(path=p, probe="+".join(sorted(probes)), files=docs, cores=cores)
    if (d / "run.json").exists():
        run.trace = json.loads((d / "run.json").read_text()).get("trace")
    if (d / "inject.json").exists():
        run.inject = json.loads((d / "inject.json").read_text())
    return run
