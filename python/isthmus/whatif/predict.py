# isthmus/whatif/predict.py: `isthmus whatif` without the printing. Reads the trace and the
# link matrix, lays out the simulated platform (extrapolated or not), runs the replay
# twice in SimGrid, once on the links given and once with every WAN link as fast as the
# site-local network, and returns the prediction: run time, what the WAN costs per phase,
# and the communication patterns ranked by the time ranks spend blocked in them.
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import IsthmusError
from ..netemu.matrix import LinkMatrix
from ..netemu.spec import LinkSpec
from ..trace.reader import Trace
from . import scale
from .events import Converted
from .platform import ignored, tcp_ramps, write_platform

ENGINE = "isthmus.whatif.engine"
# the interpreter that has SimGrid's Python module (Debian's python3-simgrid)
PYTHON_ENV = "ISTHMUS_SIMGRID_PYTHON"


@dataclass
class Prediction:
    time: float                        # predicted run time (s), first call to MPI_Finalize
    no_wan: float | None               # the same with the WAN as fast as the site network
    measured: float                    # the traced run's own time (its layout and links)
    sites: list[str]
    counts: list[int]
    phases: list[dict]                 # phase, time, no_wan, wan_cost, traced (its own links)
    patterns: list[dict]               # phase, pattern, calls, blocked (s, mean per rank), cross
    sim_seconds: float                 # how long the simulations took (wall)
    notes: list[str] = field(default_factory=list)
    # per simulated rank, its blocking calls as replayed: (pattern, start s, end s); only
    # when asked for (predict(timeline=True)), to set beside the trace's own calls
    timelines: list | None = None

    def as_json(self) -> dict:
        return {"predicted_s": self.time, "no_wan_s": self.no_wan,
                "wan_cost_s": None if self.no_wan is None else self.time - self.no_wan,
                "traced_s": self.measured, "sites": self.sites, "ranks_per_site": self.counts,
                "ranks": sum(self.counts), "phases": self.phases, "patterns": self.patterns,
                "simulation_wall_s": self.sim_seconds, "notes": self.notes}


def simgrid_python() -> str:
    """An interpreter that can import simgrid: ISTHMUS_SIMGRID_PYTHON, else /usr/bin/python3."""
    exe = os.environ.get(PYTHON_ENV) or shutil.which("python3", path="/usr/bin:/bin") or "python3"
    r = subprocess.run([exe, "-c", "import simgrid"], capture_output=True, text=True)
    if r.returncode:
        raise IsthmusError(f"{exe} cannot import simgrid (SimGrid's Python module); install "
                           "it with `apt install python3-simgrid` or set "
                           f"{PYTHON_ENV} to a Python that has it "
                           f"({(r.stderr.strip().splitlines() or ['?'])[-1]})")
    return exe


def layout(trace: Trace, matrix: LinkMatrix, per_site: int | None) -> tuple[list[int], dict]:
    """The simulated ranks per site, and the trace's layout for the engine."""
    ranks = sorted(trace.ranks)
    t_site = [trace.site_of(r) for r in ranks]
    s0 = max(t_site) + 1
    t_counts = [t_site.count(s) for s in range(s0)]
    first = [sum(t_counts[:s]) for s in range(s0)]
    t_local = [r - first[s] for r, s in zip(ranks, t_site)]
    if any(t_local[r] < 0 or t_local[r] >= t_counts[t_site[r]] for r in ranks):
        raise IsthmusError(f"{trace.dir}: the sites' ranks are not consecutive; the replay "
                           "expects site A's ranks first, then B's, as `isthmus run` numbers them")
    n = matrix.count
    if n == s0 and per_site is None:
        counts = list(t_counts)
    else:
        m = per_site if per_site is not None else t_counts[0]
        try:
            scale.check(t_counts, n, m)
        except ValueError as e:
            raise IsthmusError(f"cannot extrapolate {trace.dir} ({s0} sites: "
                               f"{', '.join(map(str, t_counts))} ranks) to {n} sites x {m} "
                               f"ranks: {e}") from None
        counts = [m] * n
    job = {"site_names": list(matrix.names), "counts": counts, "trace_site": t_site,
           "trace_local": t_local, "trace_counts": t_counts}
    return counts, job


def _run_engine(exe: str, job: dict, work: Path, tag: str) -> dict:
    jp, rp = work / f"job-{tag}.json", work / f"result-{tag}.json"
    jp.write_text(json.dumps(job))
    env = dict(os.environ)
    pkg_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = pkg_root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    r = subprocess.run([exe, "-m", ENGINE, str(jp), str(rp)], capture_output=True, text=True,
                       env=env)
    if r.returncode or not rp.is_file():
        raise IsthmusError(f"the SimGrid replay failed ({tag} links): {_why(r)}")
    return json.loads(rp.read_text())


def _why(r: subprocess.CompletedProcess) -> str:
    """The engine's last error line (SimGrid's own INFO lines and backtraces left out),
    or how it ended."""
    lines = [ln.strip() for ln in r.stderr.splitlines()
             if ln.strip() and not ln.startswith("  ->") and "/INFO]" not in ln]
    err = next((ln for ln in reversed(lines) if "Error" in ln or "error" in ln), None)
    if r.returncode < 0:
        sig = signal.Signals(-r.returncode).name if -r.returncode in signal.valid_signals() else ""
        return f"the simulator was killed by signal {-r.returncode} {sig}".rstrip() + \
            (f" ({err})" if err else "")
    return err or (lines[-1] if lines else f"exit status {r.returncode}, no result written")


def _gateway_writes(writes, wanted: bool, traced_layout: bool) -> tuple[bool, str]:
    """Whether the replay writes cross-site messages when the trace's gateways took them
    (gwwrites.py), and the note that says which way it went."""
    at_send = "each cross-site message is written to its gateway's connection when its rank " \
              "sends it"
    if writes is None:
        return False, (f"{at_send}: the trace has no gateway records of when the gateways "
                       "took them (a trace without gw-*.ismt, or loaded without them)")
    if not writes.lags:
        return False, (f"{at_send}: no cross-site eager point-to-point send of the trace "
                       "has a gateway record (only those are written when the gateway took "
                       "them)")
    if not wanted:
        return False, f"{at_send} (the trace's gateway write times left out)"
    if not traced_layout:
        return False, (f"{at_send}: the gateways' write times in the trace were measured with "
                       "the traced ranks per gateway, and are not replayed on another layout")
    return True, writes.summary()


def predict(trace: Trace, conv: Converted, matrix: LinkMatrix, lan: LinkSpec,
            per_site: int | None, eager: int, early: int, baseline: bool = True,
            tcp: bool = True, timeline: bool = False,
            gateway_writes: bool = True) -> Prediction:
    """tcp: model the WAN connections (gateway frame headers: engine.py; TCP/IP headers and
    slow start after idle: tcp.py); False replays on SimGrid's CM02 links alone.
    gateway_writes: with tcp, write each cross-site eager message to its connection when
    the trace's gateway took it (gwwrites.py), on the traced layout; else when sent."""
    counts, job = layout(trace, matrix, per_site)
    notes = ignored(matrix)
    use, note = _gateway_writes(conv.writes, tcp and gateway_writes,
                                counts == job["trace_counts"])
    if tcp and note:
        notes.append(note)
    if use:
        job["gw_writes"] = True
    exe = simgrid_python()
    job.update(templates={str(r): ops for r, ops in conv.templates.items()},
               comms={str(k): v for k, v in conv.comms.items()}, eager=eager, early=early)
    t = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="isthmus-whatif-") as tmp:
        work = Path(tmp)
        write_platform(work / "wan.xml", matrix, counts, lan, tcp=tcp)
        main = _run_engine(exe, dict(job, platform=str(work / "wan.xml"),
                                     tcp=tcp_ramps(matrix) if tcp else {}, framing=tcp,
                                     timeline=timeline),
                           work, "given")
        base = None
        if baseline:
            write_platform(work / "lan.xml", matrix, counts, lan, wan_as_lan=True)
            base = _run_engine(exe, dict(job, platform=str(work / "lan.xml")), work, "no-WAN")
    wall = time.monotonic() - t
    n = sum(counts)
    phases = []
    bp = base["per_rank"]["phases"] if base else {}
    for ph, tt in sorted(main["per_rank"]["phases"].items(), key=lambda x: int(x[0])):
        b = bp.get(ph)
        phases.append({"phase": int(ph), "time_s": tt, "no_wan_s": b,
                       "wan_cost_s": None if b is None else tt - b,
                       "traced_s": conv.measured_phases.get(int(ph))})
    patterns = []
    for key, (calls, blocked, cross) in main["per_rank"]["patterns"].items():
        ph, name = key.split("\t", 1)
        patterns.append({"phase": int(ph), "pattern": name, "calls": calls,
                         "blocked_s_per_rank": blocked / n, "cross_site_calls": cross})
    patterns.sort(key=lambda p: -p["blocked_s_per_rank"])
    if conv.rma:
        calls = ", ".join(f"{fn} x{k}" for fn, k in sorted(conv.rma.items()))
        notes.append(f"one-sided calls replayed as their measured time, not simulated (the "
                     f"trace has no RMA records for them: a tracer older than issue 32's, or "
                     f"a window it never saw created): {calls}")
    if tcp and main.get("restarts"):
        notes.append(f"TCP slow start after idle: the WAN connections' windows restarted "
                     f"{main['restarts']} times (each restart holds the next messages "
                     "for round trips; --no-tcp leaves TCP out)")
    if conv.unmatched:
        notes.append(f"{conv.unmatched} receives from MPI_ANY_SOURCE never completed in the "
                     "trace and were left out")
    for fn, k in sorted(conv.skipped.items()):
        notes.append(f"{fn}: {k} calls not replayed (a collective on an intercommunicator, or "
                     "one without a model: neighbourhood collectives)")
    if conv.constructors:
        calls = ", ".join(f"{fn} x{k}" for fn, k in sorted(conv.constructors.items()))
        notes.append(f"communicator constructors not replayed (no intracommunicator of "
                     f"theirs in the trace): {calls}")
    return Prediction(main["end"], base["end"] if base else None, conv.measured,
                      list(matrix.names), counts, phases, patterns, wall, notes,
                      main.get("timelines"))
