# isthmus/noise/runner.py: `isthmus noise run`: run a probe from the native build with
# a kernel trace recorded around it (when tracefs is there), and `isthmus noise inject`.
# The probe's own output files are untouched; run.json records how the run was made, the
# clock's timer check, and what the trace holds (or why there is none).
from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

from ..errors import IsthmusError
from ..paths import find_prefix
from .tracefs import TraceSession, find_tracefs

NOISE_BIN = "isthmus-noise"


def noise_binary() -> Path:
    p = find_prefix().root / "bin" / NOISE_BIN
    if not p.is_file():
        raise IsthmusError(f"{p} not found; rebuild the native tree (scripts/bootstrap.sh)")
    return p


def allowed_cpus() -> list[int]:
    return sorted(os.sched_getaffinity(0))


def parse_cpus(spec: str) -> list[int]:
    out: set[int] = set()
    try:
        for part in spec.split(","):
            a, _, b = part.partition("-")
            lo, hi = int(a), int(b) if b else int(a)
            if hi < lo or lo < 0:
                raise ValueError
            out.update(range(lo, hi + 1))
    except ValueError:
        raise IsthmusError(f"--cpus {spec!r}: expected a cpu list like 0-3,6") from None
    return sorted(out)


def run_probe(probe: str, out: Path, cpus: list[int], duration: float, extra: list[str], trace: bool,
              progress=None) -> dict:
    """Run one probe into `out`; returns the run.json facts."""
    out.mkdir(parents=True, exist_ok=True)
    cmd = [str(noise_binary()), probe, "--cpus", ",".join(map(str, cpus)), "--duration", str(duration),
           "--out", str(out), "--tag", "run"] + extra
    facts: dict = {"command": cmd, "trace": None}
    session = None
    if trace:
        root, why = find_tracefs()
        if root is None:
            facts["trace"] = {"error": f"tracefs not available ({why})"}
        else:
            session = TraceSession(root, cpus)
            try:
                session.start()
            except OSError as e:
                session.close()
                session = None
                facts["trace"] = {"error": f"tracefs instance could not be set up ({e})"}
    else:
        facts["trace"] = {"error": "tracing switched off (--no-trace)"}
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        t0 = time.monotonic()
        limit = duration + 60.0
        while proc.poll() is None:
            if progress:
                progress(min(time.monotonic() - t0, duration))
            if time.monotonic() - t0 > limit:
                proc.kill()
                raise IsthmusError(f"{NOISE_BIN} {probe} did not finish {limit:.0f} s after starting; killed")
            time.sleep(0.1)
        stdout, stderr = proc.communicate()
        if session:
            facts["trace"] = session.stop(out / "trace.txt")
    finally:
        if session:
            session.close()
    if proc.returncode != 0:
        raise IsthmusError(f"{NOISE_BIN} {probe} failed (exit {proc.returncode}): {stderr.strip()}")
    facts["stdout"] = stdout
    facts["timer"] = timer_facts(out / f"{probe}-run.json")
    (out / "run.json").write_text(json.dumps(facts, indent=1))
    return facts


def timer_facts(probe_file: Path) -> dict | None:
    """The clock the probe used and its timer check (on the main thread and on each probed
    cpu), with each core's baseline and threshold, from the probe's own run file."""
    try:
        doc = json.loads(probe_file.read_text())
        clock = doc["meta"]["clock"]
    except (OSError, ValueError, KeyError):
        return None
    return {"clock": clock.get("kind"), "hz": clock.get("hz"), "hz_source": clock.get("hz_source"),
            "check": clock.get("check"),
            "cores": [{"cpu": c.get("cpu"), "timer": c.get("timer"), "calib": c.get("calib"), "error": c.get("error")}
                      for c in doc.get("cores", [])]}


def run_inject(period: float, burst: float, cpu: int | None, priority: str, run_for: float | None,
               log: Path | None) -> int:
    cmd = [str(noise_binary()), "inject", "--period-ms", repr(period * 1e3), "--duration-ms", repr(burst * 1e3),
           "--priority", priority]
    if cpu is not None:
        cmd += ["--cpu", str(cpu)]
    if run_for:
        cmd += ["--for", repr(run_for)]
    if log:
        cmd += ["--log", str(log)]
    proc = subprocess.Popen(cmd)
    try:
        return proc.wait()
    except KeyboardInterrupt:
        proc.send_signal(signal.SIGINT)
        return proc.wait()
